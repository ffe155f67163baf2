/**
 * Workers, the start page (cli.md §7.2): every connection and built-in worker with namespace,
 * runtime and SDK version, isolation (with a microVM's host RSS, `GET /api/microvms`), pid, address, connected for, function count and in-flight
 * invocations. Reads `engine::workers::list`; refreshed by the `workers` live channel. In a fleet
 * (issue 19 §3) the list holds every engine's workers: an Engine column and a filter by engine
 * (`?engine=`) appear once any worker carries its engine.
 */
import { useCall, useMicrovmRss } from '../../api/hooks.ts'
import type { WorkerSummary } from '../../api/types.ts'
import { formatBytes, formatSince } from '../../format/format.ts'
import { cutText, enginesOf } from '../fleet/fleet.ts'
import { Link, pathOf, setQuery, useLocation } from '../../router/router.tsx'
import { Badge, Empty, ErrorBox, PageHeader, StatusBadge, Updated, useNow } from '../../components/ui.tsx'

/** The workers table. Query `?builtin=0` hides the built-in workers, `?engine=<name>` shows one engine's. */
export function WorkersPage() {
  const { query } = useLocation()
  const showBuiltin = query.get('builtin') !== '0'
  const search = query.get('q') ?? ''
  const engine = query.get('engine') ?? ''
  const { data, error, updatedAt } = useCall<{ workers: WorkerSummary[] }>('engine::workers::list', {}, { live: ['workers', 'functions'] })
  const now = useNow(1000)
  // microVM workers' host RSS (QEMU and its virtiofs daemons), by name: the supervisor's view.
  const vmRss = useMicrovmRss(updatedAt)
  const engines = enginesOf(data?.workers ?? [])
  const fleet = engines.length > 0
  const workers = (data?.workers ?? []).filter(
    (w) =>
      (showBuiltin || w.runtime !== 'builtin') &&
      (!engine || cutText(w.engine) === engine) &&
      (!search || `${w.name ?? ''} ${w.namespace ?? ''} ${w.id}`.toLowerCase().includes(search.toLowerCase())),
  )
  return (
    <>
      <PageHeader
        title="Workers"
        subtitle={<>Connected workers and the engine's built-in workers. <Updated at={updatedAt} /></>}
        actions={
          <>
            <input type="search" placeholder="Filter workers" aria-label="Filter workers" value={search} onChange={(e) => setQuery({ q: e.target.value })} />
            {fleet || engine ? (
              <select aria-label="Engine" value={engine} onChange={(e) => setQuery({ engine: e.target.value })}>
                <option value="">all engines</option>
                {(engine && !engines.includes(engine) ? [...engines, engine] : engines).map((name) => (
                  <option key={name} value={name}>
                    {name}
                  </option>
                ))}
              </select>
            ) : null}
            <label className="check">
              <input type="checkbox" checked={showBuiltin} onChange={(e) => setQuery({ builtin: e.target.checked ? undefined : '0' })} /> built-in
            </label>
          </>
        }
      />
      <ErrorBox error={error} title="Could not list workers" />
      {data && workers.length === 0 ? <Empty>No workers match.</Empty> : null}
      {workers.length > 0 ? (
        <div className="scroll-x">
          <table className="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Namespace</th>
                {fleet ? <th>Engine</th> : null}
                <th>Runtime</th>
                <th>Isolation</th>
                <th>PID</th>
                <th>Address</th>
                <th>Connected for</th>
                <th className="num">Functions</th>
                <th className="num">In flight</th>
                <th>Status</th>
              </tr>
            </thead>
            <tbody>
              {workers.map((w) => (
                <tr key={w.id}>
                  <td>
                    <Link to={pathOf('workers', w.id)}>{w.name ?? <em>unnamed</em>}</Link>
                    {w.description ? <div className="muted small ellipsis">{w.description}</div> : null}
                  </td>
                  <td>{w.namespace ?? '—'}</td>
                  {fleet ? <td className="mono">{cutText(w.engine) ?? '—'}</td> : null}
                  <td>
                    {w.runtime ?? '—'}
                    {w.version ? <span className="muted small"> {w.version}</span> : null}
                  </td>
                  <td>
                    {isolationOf(w, vmRss) ? <Badge tone={isolationOf(w, vmRss) === 'microvm' ? 'accent' : 'muted'}>{isolationOf(w, vmRss)}</Badge> : '—'}
                    {w.name !== null && vmRss.has(w.name) ? (
                      <span className="muted small" title="Host RSS of the worker's microVM (QEMU and its virtiofs daemons)">
                        {' '}
                        {formatBytes(vmRss.get(w.name))} host RSS
                      </span>
                    ) : null}
                  </td>
                  <td className="mono">{w.pid ?? '—'}</td>
                  <td className="mono">{w.ip_address ?? '—'}</td>
                  <td>{w.connected_at_ms ? formatSince(w.connected_at_ms, now) : '—'}</td>
                  <td className="num">{w.function_count}</td>
                  <td className="num">{w.active_invocations}</td>
                  <td>
                    <StatusBadge status={w.status} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      {!data && !error ? <Empty>Loading workers…</Empty> : null}
    </>
  )
}

/** The worker's announced isolation, else `microvm` when the supervisor runs it in one. */
function isolationOf(w: WorkerSummary, vmRss: ReadonlyMap<string, number>): string | null {
  return w.isolation ?? (w.name !== null && vmRss.has(w.name) ? 'microvm' : null)
}

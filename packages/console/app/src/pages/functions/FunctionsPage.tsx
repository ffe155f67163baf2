/**
 * Functions (cli.md §7.2): every function grouped by the prefix before `::`, with a toggle for
 * internal ones. Reads `engine::functions::list`; refreshed by the `functions` live channel. In a
 * fleet (issue 19 §3) an Engines column names the engines each function's replicas are on.
 * Invocations in flight (`engine::invocations::list`, re-read every 2 s while the tab is visible)
 * are counted in the header, which links to the functions running now (`running=1`), and per
 * function; a function's page lists them with a Cancel button (./RunHistory.tsx).
 */
import { useCall } from '../../api/hooks.ts'
import type { FunctionSummary } from '../../api/types.ts'
import { Link, pathOf, setQuery, useLocation, withQuery } from '../../router/router.tsx'
import { Badge, Empty, ErrorBox, PageHeader, Updated } from '../../components/ui.tsx'
import { cutText } from '../fleet/fleet.ts'
import { RUNNING_COUNT_LIMIT, RUNNING_COUNT_POLL_MS, runningByFunction, runningTotal } from './running.ts'

/** The engines of a function as text (`alpha, bravo`), from untrusted names; null outside a fleet. */
export function enginesText(f: Pick<FunctionSummary, 'engines'>): string | null {
  if (!Array.isArray(f.engines)) return null
  const names = f.engines.map((e) => cutText(e)).filter((e): e is string => e !== null)
  return names.length > 8 ? `${names.slice(0, 8).join(', ')} +${names.length - 8} more` : names.join(', ')
}

/** Groups functions by the part of the id before the first `::` (the "service"). */
export function groupByPrefix(functions: FunctionSummary[]): [string, FunctionSummary[]][] {
  const groups = new Map<string, FunctionSummary[]>()
  for (const f of functions) {
    const cut = f.function_id.indexOf('::')
    const prefix = cut === -1 ? f.function_id : f.function_id.slice(0, cut)
    const list = groups.get(prefix) ?? []
    list.push(f)
    groups.set(prefix, list)
  }
  return [...groups.entries()].sort(([a], [b]) => a.localeCompare(b))
}

/** The functions list; query keys `internal=1`, `q`, `running=1` (only functions with invocations in flight). */
export function FunctionsPage() {
  const { query } = useLocation()
  const internal = query.get('internal') === '1'
  const search = query.get('q') ?? ''
  const onlyRunning = query.get('running') === '1'
  const { data, error, updatedAt } = useCall<{ functions: FunctionSummary[] }>('engine::functions::list', { include_internal: internal }, { live: ['functions'] })
  const flights = useCall<unknown>('engine::invocations::list', { limit: RUNNING_COUNT_LIMIT, include_internal: internal }, { pollMs: RUNNING_COUNT_POLL_MS })
  const running = runningByFunction(flights.data)
  const runningNow = runningTotal(flights.data)
  const needle = search.toLowerCase()
  const functions = (data?.functions ?? []).filter(
    (f) => (!needle || f.function_id.toLowerCase().includes(needle) || (f.description ?? '').toLowerCase().includes(needle)) && (!onlyRunning || running.has(`${f.namespace}/${f.function_id}`)),
  )
  const groups = groupByPrefix(functions)
  const fleet = (data?.functions ?? []).some((f) => Array.isArray(f.engines))
  return (
    <>
      <PageHeader
        title="Functions"
        subtitle={
          <>
            {data ? `${functions.length} functions in ${groups.length} groups` : 'Loading…'}.{' '}
            {onlyRunning ? (
              <Link to={withQuery('/functions', { internal: internal ? '1' : undefined, q: search || undefined })} data-testid="running-count">
                {runningNow} running · show all
              </Link>
            ) : runningNow > 0 ? (
              <Link to={withQuery('/functions', { internal: internal ? '1' : undefined, q: search || undefined, running: '1' })} data-testid="running-count">
                {runningNow} running now
              </Link>
            ) : null}{' '}
            <Updated at={updatedAt} />
          </>
        }
        actions={
          <>
            <input type="search" placeholder="Filter by id or description" aria-label="Filter functions" value={search} onChange={(e) => setQuery({ q: e.target.value })} />
            <label className="check">
              <input type="checkbox" checked={internal} onChange={(e) => setQuery({ internal: e.target.checked ? '1' : undefined })} /> internal
            </label>
          </>
        }
      />
      <ErrorBox error={error} title="Could not list functions" />
      {data && functions.length === 0 ? <Empty>{onlyRunning ? 'Nothing is running now.' : 'No functions match.'}</Empty> : null}
      {groups.map(([prefix, list]) => (
        <section key={prefix} className="group">
          <h2>
            {prefix} <span className="muted small">({list.length})</span>
          </h2>
          <table className="table">
            <thead>
              <tr>
                <th>Function</th>
                <th>Namespace</th>
                <th>Worker</th>
                {fleet ? <th>Engines</th> : null}
                <th className="num">Replicas</th>
                <th>Description</th>
              </tr>
            </thead>
            <tbody>
              {list.map((f) => (
                <tr key={`${f.namespace}/${f.function_id}`}>
                  <td>
                    <Link className="mono" to={withQuery(pathOf('functions', f.function_id), { ns: f.namespace === 'default' ? undefined : f.namespace })}>
                      {f.function_id}
                    </Link>
                    {f.metadata?.internal === true ? <span className="muted small"> internal</span> : null}
                    {running.get(`${f.namespace}/${f.function_id}`) ? (
                      <>
                        {' '}
                        <Badge tone="info">{running.get(`${f.namespace}/${f.function_id}`)} running</Badge>
                      </>
                    ) : null}
                  </td>
                  <td>{f.namespace}</td>
                  <td>{f.worker_name ?? '—'}</td>
                  {fleet ? <td className="mono">{enginesText(f) || '—'}</td> : null}
                  <td className="num">{f.replica_count}</td>
                  <td className="muted">{f.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
    </>
  )
}

/**
 * Traces (cli.md §7.2): root name, service, start, duration, span and error counts and status, with
 * filters and sorting kept in the query string. Reads `engine::traces::list` every second while the
 * page is visible (cli.md §7.1) and soon after a `traces` push, so a new trace shows within a second.
 */
import { useEffect, useState } from 'react'
import { useCall } from '../../api/hooks.ts'
import type { TraceSummary } from '../../api/types.ts'
import { formatDuration, formatTime, nanoToMs, serviceHue, shortId } from '../../format/format.ts'
import { Link, pathOf, setQuery, useLocation } from '../../router/router.tsx'
import { Badge, Empty, ErrorBox, PageHeader, StatusBadge, Updated } from '../../components/ui.tsx'

type SortKey = 'start_time' | 'duration_ms' | 'name' | 'service_name'

/** Service name with its waterfall colour. */
export function ServiceTag({ name }: { name: string }) {
  return (
    <span className="nowrap">
      <span className="wf-svc" style={{ background: `hsl(${serviceHue(name)} 65% var(--span-lightness))`, display: 'inline-block', marginRight: 5 }} />
      {name}
    </span>
  )
}

/** The traces list; query keys `name`, `service`, `status`, `min`, `internal=1`, `sort`, `order`. */
export function TracesPage() {
  const { query } = useLocation()
  const name = query.get('name') ?? ''
  const service = query.get('service') ?? ''
  const status = query.get('status') ?? ''
  const min = query.get('min') ?? ''
  const internal = query.get('internal') === '1'
  const sort = (query.get('sort') ?? 'start_time') as SortKey
  const order = query.get('order') === 'asc' ? 'asc' : 'desc'

  const [draft, setDraft] = useState({ name, service, min })
  useEffect(() => setDraft({ name, service, min }), [name, service, min])
  useEffect(() => {
    const id = setTimeout(() => setQuery({ name: draft.name.trim(), service: draft.service.trim(), min: draft.min }), 300)
    return () => clearTimeout(id)
  }, [draft])

  const payload: Record<string, unknown> = { limit: 100, sort_by: sort, sort_order: order, include_internal: internal }
  if (name) payload.name = name
  if (service) payload.service_name = service
  if (status) payload.status = status
  if (min && Number(min) > 0) payload.min_duration_ms = Number(min)
  const { data, error, updatedAt } = useCall<{ traces: TraceSummary[]; total: number }>('engine::traces::list', payload, { pollMs: 1000, live: ['traces'] })

  const sortButton = (key: SortKey, label: string) => {
    const active = sort === key
    const next = active && order === 'desc' ? 'asc' : 'desc'
    return (
      <button type="button" className="sort" aria-sort={active ? (order === 'asc' ? 'ascending' : 'descending') : undefined} onClick={() => setQuery({ sort: key === 'start_time' ? undefined : key, order: next === 'desc' ? undefined : 'asc' })}>
        {label} {active ? (order === 'asc' ? '▲' : '▼') : ''}
      </button>
    )
  }

  return (
    <>
      <PageHeader
        title="Traces"
        subtitle={
          <>
            {data ? `${data.total} traces` : 'Loading…'}, refreshed every second. <Updated at={updatedAt} />
          </>
        }
      />
      <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Trace filters">
        <label className="grow">
          Root name
          <input type="search" value={draft.name} placeholder="any" onChange={(e) => setDraft({ ...draft, name: e.target.value })} />
        </label>
        <label>
          Service
          <input value={draft.service} placeholder="any" onChange={(e) => setDraft({ ...draft, service: e.target.value })} />
        </label>
        <label>
          Status
          <select value={status} onChange={(e) => setQuery({ status: e.target.value })}>
            <option value="">any</option>
            <option value="ok">ok</option>
            <option value="error">error</option>
            <option value="unset">unset</option>
          </select>
        </label>
        <label>
          Min duration (ms)
          <input type="number" min={0} className="w-num" value={draft.min} onChange={(e) => setDraft({ ...draft, min: e.target.value })} />
        </label>
        <label className="check">
          <input type="checkbox" checked={internal} onChange={(e) => setQuery({ internal: e.target.checked ? '1' : undefined })} /> internal
        </label>
      </form>
      <ErrorBox error={error} title="Could not list traces" />
      {data && data.traces.length === 0 ? <Empty>No traces match.</Empty> : null}
      {data && data.traces.length ? (
        <table className="table">
          <thead>
            <tr>
              <th>{sortButton('name', 'Root span')}</th>
              <th>{sortButton('service_name', 'Service')}</th>
              <th>{sortButton('start_time', 'Start')}</th>
              <th className="num">{sortButton('duration_ms', 'Duration')}</th>
              <th className="num">Spans</th>
              <th className="num">Errors</th>
              <th>Status</th>
              <th>Trace</th>
            </tr>
          </thead>
          <tbody>
            {data.traces.map((t) => (
              <tr key={t.trace_id} className={t.status === 'error' || t.error_count > 0 ? 'row-error' : undefined}>
                <td>
                  <Link to={pathOf('traces', t.trace_id)}>{t.name}</Link>
                </td>
                <td>
                  <ServiceTag name={t.service_name} />
                  {t.service_names.length > 1 ? <span className="muted small"> +{t.service_names.length - 1}</span> : null}
                </td>
                <td className="mono small nowrap">{formatTime(nanoToMs(t.start_time_unix_nano))}</td>
                <td className="num">{t.end_time_unix_nano === null ? <Badge tone="warn">running</Badge> : formatDuration(t.duration_ms)}</td>
                <td className="num">{t.span_count}</td>
                <td className="num">{t.error_count ? <span className="text-error">{t.error_count}</span> : 0}</td>
                <td>
                  <StatusBadge status={t.status} />
                </td>
                <td className="mono small">{shortId(t.trace_id)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </>
  )
}

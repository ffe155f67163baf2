/**
 * Logs (cli.md §7.2): newest first, filters for minimum severity, service, trace id, time range and
 * a search of text and `key=value` attribute terms (./search.ts; all kept in the query string), and
 * a live tail that prepends records pushed on the `logs` channel that pass the filters. Reads
 * `engine::logs::list` (builtins.md §12.5).
 */
import { useEffect, useMemo, useState } from 'react'
import { useCall } from '../../api/hooks.ts'
import type { LogPage, LogRecord } from '../../api/types.ts'
import { useLive } from '../../live/hooks.ts'
import { nanoToMs } from '../../format/format.ts'
import { setQuery, useLocation } from '../../router/router.tsx'
import { Empty, ErrorBox, PageHeader, Updated } from '../../components/ui.tsx'
import { LogTable } from './LogTable.tsx'
import { ATTRIBUTE_SCAN, matchesTerms, parseLogSearch } from './search.ts'

const SEVERITIES = [
  { value: '', label: 'All severities' },
  { value: '5', label: 'Debug and above' },
  { value: '9', label: 'Info and above' },
  { value: '13', label: 'Warn and above' },
  { value: '17', label: 'Error and above' },
]

const RANGES = [
  { value: '', label: 'Any time' },
  { value: '5m', label: 'Last 5 minutes', ms: 5 * 60_000 },
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { value: 'custom', label: 'Custom…' },
]

const PAGE = 200

function toLocalInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000)
  return d.toISOString().slice(0, 16)
}

/** The Logs page; query keys: `severity`, `service`, `trace`, `range`, `from`, `to` (local datetime), `q`, `live=0`. */
export function LogsPage() {
  const { query } = useLocation()
  const severity = query.get('severity') ?? ''
  const service = query.get('service') ?? ''
  const trace = query.get('trace') ?? ''
  const range = query.get('range') ?? ''
  const from = query.get('from') ?? ''
  const to = query.get('to') ?? ''
  const text = query.get('q') ?? ''
  const tail = query.get('live') !== '0'
  const [limit, setLimit] = useState(PAGE)

  // Inputs are edited locally and applied to the URL (and so to the query) after a short pause.
  const [draft, setDraft] = useState({ service, trace, text })
  useEffect(() => setDraft({ service, trace, text }), [service, trace, text])
  useEffect(() => {
    const id = setTimeout(() => setQuery({ service: draft.service.trim(), trace: draft.trace.trim(), q: draft.text }), 300)
    return () => clearTimeout(id)
  }, [draft])

  const [rangeAnchor, setRangeAnchor] = useState(() => Date.now())
  // Words search the body on the engine; key=value terms are matched here over a bounded page.
  const search = useMemo(() => parseLogSearch(text), [text])
  const terms = search.terms
  const payload = useMemo(() => {
    const p: Record<string, unknown> = { limit: terms.length ? ATTRIBUTE_SCAN : limit }
    if (severity) p.severity_min = Number(severity)
    if (service) p.service_name = service
    if (trace) p.trace_id = trace
    if (search.text) p.search = search.text
    const preset = RANGES.find((r) => r.value === range)
    if (preset?.ms) p.start_time = rangeAnchor - preset.ms
    if (range === 'custom') {
      if (from) p.start_time = new Date(from).getTime()
      if (to) p.end_time = new Date(to).getTime()
    }
    return p
  }, [limit, severity, service, trace, search, terms.length, range, from, to, rangeAnchor])

  const { data, error, updatedAt, reload } = useCall<LogPage>('engine::logs::list', payload)
  const [tailed, setTailed] = useState<LogRecord[]>([])
  useEffect(() => setTailed([]), [data])

  const endBound = typeof payload.end_time === 'number' ? payload.end_time : undefined
  useLive(
    ['logs'],
    (pushed) => {
      const record = pushed as LogRecord
      if (!record || typeof record !== 'object' || typeof record.timestamp_unix_nano !== 'number') return
      if (severity && record.severity_number < Number(severity)) return
      if (service && record.service_name?.toLowerCase() !== service.toLowerCase()) return
      if (trace && record.trace_id !== trace) return
      if (search.text && !record.body?.toLowerCase().includes(search.text.toLowerCase())) return
      if (terms.length && !matchesTerms(record, terms)) return
      if (endBound !== undefined && nanoToMs(record.timestamp_unix_nano) > endBound) return
      setTailed((prev) => [record, ...prev].slice(0, 1000))
    },
    tail,
  )

  const page = terms.length ? (data?.logs ?? []).filter((record) => matchesTerms(record, terms)) : (data?.logs ?? [])
  const logs = [...tailed, ...page]
  return (
    <>
      <PageHeader
        title="Logs"
        subtitle={
          <>
            {!data ? 'Loading…' : terms.length ? `${page.length} of the newest ${Math.min(data.total, ATTRIBUTE_SCAN)} records${data.total > ATTRIBUTE_SCAN ? ` (of ${data.total})` : ''} have ${terms.map((t) => `${t.key}=${t.value}`).join(' ')}` : `${data.total} matching records`}
            {tail ? ', live' : ''}. <Updated at={updatedAt} />
          </>
        }
        actions={
          <>
            <label className="check">
              <input type="checkbox" checked={tail} onChange={(e) => setQuery({ live: e.target.checked ? undefined : '0' })} /> Live tail
            </label>
            <button
              type="button"
              onClick={() => {
                setRangeAnchor(Date.now())
                reload()
              }}
            >
              Refresh
            </button>
          </>
        }
      />
      <form className="filters" onSubmit={(e) => e.preventDefault()} aria-label="Log filters">
        <label>
          Severity
          <select value={severity} onChange={(e) => setQuery({ severity: e.target.value })}>
            {SEVERITIES.map((s) => (
              <option key={s.value} value={s.value}>
                {s.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Service
          <input value={draft.service} placeholder="any" onChange={(e) => setDraft({ ...draft, service: e.target.value })} />
        </label>
        <label>
          Trace id
          <input className="mono" value={draft.trace} placeholder="any" onChange={(e) => setDraft({ ...draft, trace: e.target.value })} />
        </label>
        <label>
          Time
          <select
            value={range}
            onChange={(e) => {
              setRangeAnchor(Date.now())
              setQuery({ range: e.target.value, from: e.target.value === 'custom' ? toLocalInput(Date.now() - 3_600_000) : undefined, to: undefined })
            }}
          >
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        {range === 'custom' ? (
          <>
            <label>
              From
              <input type="datetime-local" value={from} onChange={(e) => setQuery({ from: e.target.value })} />
            </label>
            <label>
              To
              <input type="datetime-local" value={to} onChange={(e) => setQuery({ to: e.target.value })} />
            </label>
          </>
        ) : null}
        <label className="grow">
          Search
          <input type="search" value={draft.text} placeholder="text in the body; key=value for attributes" onChange={(e) => setDraft({ ...draft, text: e.target.value })} />
        </label>
      </form>
      <ErrorBox error={error} title="Could not read logs" />
      {logs.length ? <LogTable logs={logs} /> : data ? <Empty>No log records match.</Empty> : null}
      {data && !terms.length && data.total > data.logs.length ? (
        <p>
          <button type="button" onClick={() => setLimit((l) => Math.min(l + PAGE, 1000))} disabled={limit >= 1000}>
            Show more ({data.logs.length} of {data.total})
          </button>
        </p>
      ) : null}
    </>
  )
}

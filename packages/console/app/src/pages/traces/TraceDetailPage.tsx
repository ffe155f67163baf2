/**
 * One trace as a waterfall (cli.md §7.2): a row per span indented by depth, a bar at its offset
 * from the trace start sized by its duration, coloured by service, errors red, unfinished spans
 * open-ended; and a panel for the selected span with status, attributes, events, links and its logs.
 * Reads `engine::traces::tree` (again every second while a span is unfinished or the trace is
 * fresh, since worker spans arrive late) and `engine::logs::list {trace_id, span_id}`.
 */
import { useEffect, useState, type ReactNode } from 'react'
import { useCall } from '../../api/hooks.ts'
import type { LogPage, SpanNode } from '../../api/types.ts'
import { formatDuration, formatTime, nanoToMs, serviceHue } from '../../format/format.ts'
import { Link, pathOf, setQuery, useLocation, withQuery } from '../../router/router.tsx'
import { Badge, Crumb, Empty, ErrorBox, Fields, PageHeader, Panel, StatusBadge, useNow } from '../../components/ui.tsx'
import { JsonView } from '../../components/json.tsx'
import { RerunOf, RerunPanel } from '../../components/RerunPanel.tsx'
import { LogTable } from '../logs/LogTable.tsx'
import { ServiceTag } from './TracesPage.tsx'
import { hasUnfinished, layoutWaterfall, withoutInternal } from './waterfall.ts'

const FRESH_MS = 5000

/** Trace detail for `/traces/:traceId?span=`. */
export function TraceDetailPage({ traceId }: { traceId: string }) {
  const { query } = useLocation()
  const now = useNow(1000)
  const selectedId = query.get('span')
  // Re-read every second while the trace may still change; the decision uses the last data read.
  const [settledBefore, setSettledBefore] = useState(false)
  const tree = useCall<{ trace_id: string; roots: SpanNode[] }>('engine::traces::tree', { trace_id: traceId }, { pollMs: settledBefore ? undefined : 1000 })
  const allRoots = tree.data?.roots ?? []
  // Internal spans (the console's own live feeds, engine housekeeping) are hidden unless asked for.
  const showInternal = query.get('internal') === '1'
  const roots = showInternal ? allRoots : withoutInternal(allRoots)
  const hidden = countSpans(allRoots) - countSpans(roots)
  const { rows, startMs, totalMs } = layoutWaterfall(roots, now)
  const unfinished = hasUnfinished(roots)
  const settled = roots.length > 0 && !unfinished && now - (startMs + totalMs) > FRESH_MS
  useEffect(() => setSettledBefore(settled), [settled])
  const selected = rows.find((r) => r.span.span_id === selectedId)?.span ?? rows[0]?.span
  const errors = rows.filter((r) => r.span.status === 'error').length
  const services = [...new Set(rows.map((r) => r.span.service_name))]
  const ticks = [0, 0.25, 0.5, 0.75, 1]

  return (
    <>
      <PageHeader
        title={
          <>
            <Crumb to="/traces">Traces</Crumb>
            {rows[0]?.span.name ?? traceId}
          </>
        }
        subtitle={
          <>
            <span className="mono">{traceId}</span>
            {rows.length ? (
              <>
                {' '}
                · {rows.length} {rows.length === 1 ? 'span' : 'spans'} · {formatDuration(totalMs)} · started {formatTime(startMs)}
                {errors ? <span className="text-error"> · {errors} errors</span> : null}
                {unfinished ? (
                  <>
                    {' '}
                    · <Badge tone="warn">in progress</Badge>
                  </>
                ) : null}
                {!settled ? <span className="muted"> · refreshing every second</span> : null}
              </>
            ) : null}
          </>
        }
        actions={<Link to={withQuery('/logs', { trace: traceId })}>Logs of this trace</Link>}
      />
      <ErrorBox error={tree.error} title="Could not read the trace" />
      {tree.data && rows.length === 0 ? <Empty>No spans stored for this trace (yet). Worker spans arrive within a second or two.</Empty> : null}
      {rows.length ? (
        <div className="trace-layout">
          <div>
            <div className="row small">
              {services.map((s) => (
                <ServiceTag key={s} name={s} />
              ))}
              {hidden > 0 || showInternal ? (
                <label className="muted">
                  <input type="checkbox" checked={showInternal} onChange={(e) => setQuery({ internal: e.target.checked ? '1' : undefined })} /> internal spans
                  {hidden > 0 ? ` (${hidden} hidden)` : ''}
                </label>
              ) : null}
            </div>
            <div className="waterfall" role="list" aria-label="Spans">
              <div className="wf-head" aria-hidden="true">
                <div>Span</div>
                <div className="wf-ticks" style={{ margin: '0 10px' }}>
                  {ticks.map((t) => (
                    <span key={t} style={{ left: `${t * 100}%` }}>
                      {t === 0 ? '0' : formatDuration(t * totalMs)}
                    </span>
                  ))}
                </div>
              </div>
              {rows.map(({ span, depth, offsetMs, lengthMs, unfinished: open }) => {
                const left = (offsetMs / totalMs) * 100
                const width = Math.max((lengthMs / totalMs) * 100, 0.3)
                const isSelected = selected?.span_id === span.span_id
                return (
                  <button
                    key={span.span_id}
                    type="button"
                    role="listitem"
                    className={`wf-row${isSelected ? ' selected' : ''}`}
                    aria-current={isSelected ? 'true' : undefined}
                    onClick={() => setQuery({ span: span.span_id })}
                    title={`${span.name} (${span.service_name}) ${open ? 'unfinished' : formatDuration(span.duration_ms ?? lengthMs)}`}
                  >
                    <span className="wf-name" style={{ paddingLeft: 8 + depth * 16 }}>
                      <span className="wf-svc" style={{ background: `hsl(${serviceHue(span.service_name)} 65% var(--span-lightness))` }} />
                      <span className={span.status === 'error' ? 'text-error' : undefined}>{span.name}</span>
                    </span>
                    <span className="wf-track">
                      <span
                        className={`wf-bar${span.status === 'error' ? ' error' : ''}${open ? ' open' : ''}`}
                        style={{ left: `${left}%`, width: open ? `${100 - left}%` : `${width}%`, background: `hsl(${serviceHue(span.service_name)} 65% var(--span-lightness))` }}
                      />
                      <span className={`wf-label${!open && left + width > 80 ? ' inside' : ''}`} style={open ? { right: 4 } : left + width > 80 ? { right: `calc(${Math.max(100 - left - width, 0)}% + 4px)` } : { left: `calc(${left + width}% + 4px)` }}>
                        {open ? 'running…' : formatDuration(span.duration_ms ?? lengthMs)}
                      </span>
                    </span>
                  </button>
                )
              })}
            </div>
          </div>
          {selected ? <SpanPanel key={selected.span_id} span={selected} parentStored={selected.parent_span_id !== null && hasSpan(allRoots, selected.parent_span_id)} /> : null}
        </div>
      ) : null}
    </>
  )
}

/** Details of one span and the logs recorded under it. */
function SpanPanel({ span, parentStored }: { span: SpanNode; parentStored: boolean }) {
  const logs = useCall<LogPage>('engine::logs::list', { trace_id: span.trace_id, span_id: span.span_id, limit: 100 }, { pollMs: span.end_time_unix_nano === null ? 1000 : undefined })
  const fnId = typeof span.attributes['svc.function.id'] === 'string' ? (span.attributes['svc.function.id'] as string) : undefined
  const rerunOf = typeof span.attributes['svc.rerun_of'] === 'string' ? (span.attributes['svc.rerun_of'] as string) : undefined
  // A handler span with its recorded input can be run again (the function's own span: `execute <id>`).
  const input = span.events?.find((e) => e.name === 'svc.invocation.input')?.attributes['svc.payload.json']
  const [rerunning, setRerunning] = useState(false)
  return (
    <Panel title={span.name} className="span-panel">
      <Fields
        rows={[
          ['Status', <>
            <StatusBadge status={span.status} /> {span.status_message ? <span className={span.status === 'error' ? 'text-error' : undefined}>{span.status_message}</span> : null}
          </>],
          ['Service', <ServiceTag name={span.service_name} />],
          ['Kind', span.kind],
          ['Start', formatTime(nanoToMs(span.start_time_unix_nano))],
          ['Duration', span.end_time_unix_nano === null ? <Badge tone="warn">unfinished</Badge> : formatDuration(span.duration_ms)],
          ['Span id', <span className="mono">{span.span_id}</span>],
          ['Parent', span.parent_span_id === null ? 'root' : parentStored ? <button type="button" className="small" onClick={() => setQuery({ span: span.parent_span_id })}>{span.parent_span_id}</button> : <span className="muted">not recorded (<span className="mono">{span.parent_span_id}</span>){rerunOf ? ': the console started this re-run' : ''}</span>],
          ['Function', fnId ? <Link to={pathOf('functions', fnId)} className="mono">{fnId}</Link> : null],
          ...(rerunOf ? [['Re-run', <RerunOf traceId={rerunOf} />] as [string, ReactNode]] : []),
        ]}
      />
      {fnId && span.name === `execute ${fnId}` && typeof input === 'string' ? (
        rerunning ? (
          <RerunPanel functionId={fnId} payloadJson={input} rerunOf={span.trace_id} />
        ) : (
          <button type="button" className="rerun-open" onClick={() => setRerunning(true)}>
            Re-run {fnId}…
          </button>
        )
      ) : null}
      <h3>Attributes</h3>
      <JsonView value={span.attributes} maxHeight={260} />
      <h3>Events ({span.events?.length ?? 0})</h3>
      {span.events?.length ? (
        <ul className="plain">
          {span.events.map((e, i) => (
            <li key={i}>
              <span className="mono small">{formatTime(nanoToMs(e.timestamp_unix_nano)).slice(11)}</span> <strong>{e.name}</strong>
              {Object.keys(e.attributes ?? {}).length ? <JsonView value={e.attributes} maxHeight={200} /> : null}
            </li>
          ))}
        </ul>
      ) : (
        <Empty>No events.</Empty>
      )}
      <h3>Links ({span.links?.length ?? 0})</h3>
      {span.links?.length ? (
        <ul className="plain">
          {span.links.map((l, i) => (
            <li key={i}>
              <Link to={withQuery(pathOf('traces', l.trace_id), { span: l.span_id })} className="mono small">
                {l.trace_id.slice(0, 16)}… / {l.span_id}
              </Link>
            </li>
          ))}
        </ul>
      ) : (
        <Empty>No links.</Empty>
      )}
      {span.resource && Object.keys(span.resource).length ? (
        <>
          <h3>Resource</h3>
          <JsonView value={span.resource} maxHeight={200} />
        </>
      ) : null}
      <h3>Logs ({logs.data?.total ?? 0})</h3>
      <ErrorBox error={logs.error} />
      {logs.data?.logs.length ? <LogTable logs={logs.data.logs} compact inSpan /> : <Empty>No logs for this span.</Empty>}
    </Panel>
  )
}

/** Whether the forest holds the span `spanId`. */
function hasSpan(nodes: SpanNode[], spanId: string): boolean {
  return nodes.some((n) => n.span_id === spanId || hasSpan(n.children ?? [], spanId))
}

/** Spans in a forest. */
function countSpans(nodes: SpanNode[]): number {
  return nodes.reduce((n, node) => n + 1 + countSpans(node.children ?? []), 0)
}

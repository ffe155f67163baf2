/**
 * A function's run history (issue 21 "In the console"): its recent invocations from
 * `engine::runs::list`, newest first and bounded — status, start, duration, caller, input and
 * result previews — each linked to its trace. A row opens on the full payloads (read from the
 * run's span with `engine::traces::tree`), the error, the run it re-ran, and a re-run form.
 *
 * On top, the function's invocations in flight (`engine::invocations::list {function_id}`, re-read
 * every {@link RUNNING_POLL_MS} ms while the tab is visible): start, elapsed time, caller and a
 * Cancel button (`engine::invocations::cancel {invocation_id}` through `/api/invoke`, a write like
 * any other). The cancelled call's caller gets the error `cancelled`; its run then appears below.
 */
import { Fragment, useState } from 'react'
import { call } from '../../api/client.ts'
import { useAction, useCall } from '../../api/hooks.ts'
import type { Run, RunPage, SpanNode } from '../../api/types.ts'
import { formatDuration, formatSince, formatTime } from '../../format/format.ts'
import { Link, pathOf, withQuery } from '../../router/router.tsx'
import { Badge, Empty, ErrorBox, Panel, StatusBadge, Updated, useNow } from '../../components/ui.tsx'
import { JsonView } from '../../components/json.tsx'
import { RerunOf, RerunPanel } from '../../components/RerunPanel.tsx'
import { readRunning, RUNNING_LIMIT, RUNNING_POLL_MS, wasCancelled, type RunningRow } from './running.ts'

/** Runs shown per page, and the most the "Show more" button goes to. */
const PAGE = 25
const MOST = 500

/** A row of the history: a finished run, or an in-flight invocation shown on top. */
export type RunRow = { kind: 'finished'; run: Run } | { kind: 'running'; invocation: RunningRow }

/** The run history panel of `functionId`. */
export function RunHistory({ functionId, namespace }: { functionId: string; namespace: string }) {
  const [status, setStatus] = useState('')
  const [limit, setLimit] = useState(PAGE)
  const [open, setOpen] = useState<string | null>(null)
  const page = useCall<RunPage>('engine::runs::list', { function_id: functionId, limit, ...(status ? { status } : {}) }, { live: ['traces'] })
  const flights = useCall<unknown>('engine::invocations::list', { function_id: functionId, limit: RUNNING_LIMIT }, { pollMs: RUNNING_POLL_MS })
  // Ids cancelled here leave the list at once, before the next read confirms it.
  const [cancelled, setCancelled] = useState<ReadonlySet<string>>(() => new Set())
  const running = readRunning(flights.data, functionId, namespace, cancelled)
  const onCancelled = (id: string) => {
    setCancelled((ids) => new Set([...ids].slice(-RUNNING_LIMIT).concat(id)))
    flights.reload()
    page.reload()
  }
  const rows: RunRow[] = [
    ...running.rows.map((invocation): RunRow => ({ kind: 'running', invocation })),
    ...(page.data?.runs ?? []).map((run): RunRow => ({ kind: 'finished', run })),
  ]
  return (
    <Panel
      title={`Runs${page.data ? ` (${page.data.total})` : ''}${running.rows.length ? ` · ${running.rows.length + running.more} running` : ''}`}
      className="runs-panel"
      actions={
        <>
          <Updated at={page.updatedAt} />
          <label className="small">
            Status{' '}
            <select value={status} onChange={(e) => setStatus(e.target.value)} aria-label="Run status">
              <option value="">all</option>
              <option value="ok">ok</option>
              <option value="error">error</option>
            </select>
          </label>
        </>
      }
    >
      <ErrorBox error={page.error} title="Could not read the runs" />
      {/* An engine from before cancellation has no listing: the history is shown without running rows. */}
      <ErrorBox error={flights.error?.code === 'function_not_found' ? undefined : flights.error} title="Could not read the running invocations" />
      {page.data && rows.length === 0 ? <Empty>No runs recorded{status ? ` with status ${status}` : ''}. Runs appear here when the function is invoked by a worker with telemetry on (svc-sdk records it by default).</Empty> : null}
      {rows.length ? (
        <div className="scroll-x">
          <table className="table runs" aria-label={`Runs of ${functionId}`}>
            <thead>
              <tr>
                <th>Status</th>
                <th>Started</th>
                <th className="num">Duration</th>
                <th>Caller</th>
                <th>Input</th>
                <th>Result</th>
                <th>Trace</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) =>
                row.kind === 'finished' ? (
                  <FinishedRow key={row.run.span_id} run={row.run} namespace={namespace} open={open === row.run.span_id} onToggle={() => setOpen(open === row.run.span_id ? null : row.run.span_id)} onRerun={() => page.reload()} />
                ) : (
                  <RunningRowView key={row.invocation.invocationId} row={row.invocation} onCancelled={onCancelled} />
                ),
              )}
            </tbody>
          </table>
        </div>
      ) : null}
      {running.more > 0 ? <p className="small muted">{running.more} more running, not shown.</p> : null}
      {page.data && page.data.total > rows.length && limit < MOST ? (
        <button type="button" onClick={() => setLimit((l) => Math.min(l + PAGE * 2, MOST))}>
          Show more
        </button>
      ) : null}
    </Panel>
  )
}

/** An invocation in flight: start, elapsed time, caller, and Cancel. */
function RunningRowView({ row, onCancelled }: { row: RunningRow; onCancelled: (id: string) => void }) {
  const now = useNow(1000)
  const [cancel, state] = useAction(async () => {
    const answer = await call<{ cancelled?: unknown }>('engine::invocations::cancel', { invocation_id: row.invocationId, reason: 'cancelled from the console' }, { trace: false })
    onCancelled(row.invocationId)
    return answer
  })
  return (
    <tr className="run-row running" data-testid="running-row">
      <td className="nowrap">
        <Badge tone="info">running</Badge>
      </td>
      <td className="small nowrap">{formatTime(row.startedAtMs)}</td>
      <td className="num small nowrap" title="elapsed">
        {row.startedAtMs === null ? '—' : formatSince(row.startedAtMs, Math.max(now, row.startedAtMs))}
      </td>
      <td className="small mono">{row.caller}</td>
      <td colSpan={2} className="small">
        {row.worker ? <span className="muted">on {row.worker}</span> : <span className="muted">waiting for a worker</span>}
        {state.error ? <span className="text-error"> · could not cancel: {state.error.message}</span> : null}
      </td>
      <td className="nowrap">
        {row.traceId ? (
          <Link to={pathOf('traces', row.traceId)} className="mono small">
            {row.traceId.slice(0, 8)}
          </Link>
        ) : null}{' '}
        <button type="button" className="danger small" disabled={state.busy} onClick={() => void cancel()} aria-label={`Cancel invocation ${row.invocationId}`}>
          {state.busy ? 'Cancelling…' : 'Cancel'}
        </button>
      </td>
    </tr>
  )
}

function FinishedRow({ run, namespace, open, onToggle, onRerun }: { run: Run; namespace: string; open: boolean; onToggle: () => void; onRerun: () => void }) {
  return (
    <Fragment>
      <tr className={`run-row${open ? ' selected' : ''}`} data-testid="run-row" onClick={onToggle}>
        <td className="nowrap">
          <button type="button" className="icon" aria-expanded={open} aria-label="Show the run" onClick={(e) => (e.stopPropagation(), onToggle())}>
            {open ? '▾' : '▸'}
          </button>
          <StatusBadge status={run.status} />
          {wasCancelled(run) ? (
            <>
              {' '}
              <Badge tone="warn" title="error code cancelled">cancelled</Badge>
            </>
          ) : null}
        </td>
        <td className="small nowrap">{formatTime(run.started_at_ms)}</td>
        <td className="num small">{formatDuration(run.duration_ms)}</td>
        <td className="small mono">{run.caller ? run.caller : run.rerun_of ? 're-run' : '—'}</td>
        <td>
          <Preview payload={run.input} />
        </td>
        <td>{run.status === 'error' ? <span className="small text-error ellipsis block" style={{ maxWidth: 260 }} title={run.status_message}>{run.status_message ?? 'error'}</span> : <Preview payload={run.output} />}</td>
        <td className="nowrap">
          <Link to={withQuery(pathOf('traces', run.trace_id), { span: run.span_id })} className="mono small" onClick={(e) => e.stopPropagation()}>
            {run.trace_id.slice(0, 8)}
          </Link>
        </td>
      </tr>
      {open ? (
        <tr className="expanded">
          <td colSpan={7}>
            <RunDetail run={run} namespace={namespace} onRerun={onRerun} />
          </td>
        </tr>
      ) : null}
    </Fragment>
  )
}

/** A payload preview in one line; the whole preview on hover. */
function Preview({ payload }: { payload: Run['input'] }) {
  if (payload === null) return <span className="muted small">not recorded</span>
  const short = payload.json.length > 80 ? `${payload.json.slice(0, 80)}…` : payload.json
  return (
    <span className="mono small ellipsis block" style={{ maxWidth: 260 }} title={payload.json.slice(0, 1000)}>
      {short}
      {payload.truncated && short === payload.json ? '…' : ''}
    </span>
  )
}

/** The opened run: full payloads from its span, the error, the run it re-ran, a re-run form. */
function RunDetail({ run, namespace, onRerun }: { run: Run; namespace: string; onRerun: () => void }) {
  const cut = run.input?.truncated === true || run.output?.truncated === true
  const tree = useCall<{ roots: SpanNode[] }>('engine::traces::tree', { trace_id: run.trace_id }, { enabled: cut })
  const span = cut ? findSpan(tree.data?.roots ?? [], run.span_id) : undefined
  const full = (name: string, preview: Run['input']): string | undefined => {
    const json = span?.events.find((e) => e.name === name)?.attributes['svc.payload.json']
    return typeof json === 'string' ? json : preview?.json
  }
  const input = full('svc.invocation.input', run.input)
  const output = full('svc.invocation.output', run.output)
  return (
    <div className="run-detail grid-2 align-start">
      <div>
        <p className="small">
          {run.service_name} · {run.caller ? <>called by <span className="mono">{run.caller}</span></> : 'no recorded caller'}
          {run.rerun_of ? (
            <>
              {' '}
              · <RerunOf traceId={run.rerun_of} />
            </>
          ) : null}
        </p>
        {run.status === 'error' ? <ErrorBox error={{ code: run.error_code ?? 'error', message: run.status_message ?? 'the run failed' }} /> : null}
        <h3>Input{run.input?.truncated && !span ? ' (preview, cut)' : ''}</h3>
        <Payload json={input} />
        <h3>{run.status === 'error' ? 'Error' : 'Result'}{run.output?.truncated && !span ? ' (preview, cut)' : ''}</h3>
        <Payload json={output} />
      </div>
      <div>
        <h3>Re-run</h3>
        {input !== undefined ? <RerunPanel functionId={run.function_id} namespace={namespace} payloadJson={input} rerunOf={run.trace_id} onDone={onRerun} /> : <Empty>No input was recorded for this run.</Empty>}
      </div>
    </div>
  )
}

function Payload({ json }: { json: string | undefined }) {
  if (json === undefined) return <Empty>Not recorded.</Empty>
  try {
    return <JsonView value={JSON.parse(json)} maxHeight={280} />
  } catch {
    return <pre className="json" style={{ maxHeight: 280 }}>{json}</pre>
  }
}

function findSpan(nodes: SpanNode[], spanId: string): SpanNode | undefined {
  for (const n of nodes) {
    if (n.span_id === spanId) return n
    const found = findSpan(n.children ?? [], spanId)
    if (found) return found
  }
  return undefined
}

/**
 * Re-run (issue 21 "In the console"): a JSON editor holding a run's payload, as recorded or edited,
 * that invokes the function again through `POST /api/rerun`. The new run is recorded in a new trace
 * marked `svc.rerun_of` (the old trace id); the answer links to it. Used from a run of the
 * function page, a span of a trace, and a dead letter of the queue pages.
 */
import { useState } from 'react'
import { rerun } from '../api/client.ts'
import type { RerunResult } from '../api/types.ts'
import { formatDuration } from '../format/format.ts'
import { Link, pathOf } from '../router/router.tsx'
import { JsonEditor, JsonView, parseJson } from './json.tsx'
import { Badge } from './ui.tsx'

/**
 * A re-run form for `functionId` (in `namespace`) starting from `payloadJson` (JSON text; a cut
 * preview that no longer parses shows its parse error until fixed). `rerunOf`: the old trace id.
 */
export function RerunPanel({ functionId, namespace, payloadJson, rerunOf, onDone }: { functionId: string; namespace?: string; payloadJson: string; rerunOf?: string; onDone?: (result: RerunResult) => void }) {
  const [text, setText] = useState(() => pretty(payloadJson))
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<RerunResult>()
  const parsed = parseJson(text)
  const edited = parsed.ok && JSON.stringify(parsed.value) !== compact(payloadJson)
  const run = async () => {
    if (!parsed.ok || busy) return
    setBusy(true)
    const result = await rerun({ function_id: functionId, payload: parsed.value, ...(namespace && namespace !== 'default' ? { namespace } : {}), ...(rerunOf ? { rerun_of: rerunOf } : {}) })
    setOutcome(result)
    setBusy(false)
    onDone?.(result)
  }
  return (
    <div className="rerun" data-testid="rerun-panel">
      <JsonEditor label={`Payload for ${functionId}`} value={text} onChange={setText} rows={Math.min(12, Math.max(3, text.split('\n').length))} onSubmit={run} />
      <div className="row">
        <button type="button" className="primary" disabled={!parsed.ok || busy} onClick={run}>
          {busy ? 'Running…' : edited ? 'Re-run with this payload' : 'Re-run'}
        </button>
        {edited ? (
          <button type="button" onClick={() => setText(pretty(payloadJson))}>
            Reset payload
          </button>
        ) : null}
      </div>
      {outcome ? (
        <div className="invoke-result" data-testid="rerun-result" aria-live="polite">
          <div className="row">
            {outcome.ok ? <Badge tone="ok">ok</Badge> : <Badge tone="error">error</Badge>}
            <span className="muted">in {formatDuration(outcome.duration_ms)}</span>
            {outcome.trace_id ? (
              <Link to={pathOf('traces', outcome.trace_id)} className="mono small">
                new run’s trace {outcome.trace_id.slice(0, 12)}…
              </Link>
            ) : null}
          </div>
          {outcome.ok ? (
            <JsonView value={outcome.result ?? null} maxHeight={240} />
          ) : (
            <div className="error-box">
              <code>{outcome.error.code}</code> {outcome.error.message}
            </div>
          )}
        </div>
      ) : null}
    </div>
  )
}

/** `json` indented when it parses, else as it is (a cut preview). */
function pretty(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json), null, 2)
  } catch {
    return json
  }
}

function compact(json: string): string {
  try {
    return JSON.stringify(JSON.parse(json))
  } catch {
    return json
  }
}

/** "re-run of 4bf92f35…" linking to the old run's trace. */
export function RerunOf({ traceId }: { traceId: string }) {
  return (
    <span className="small" data-testid="rerun-of">
      re-run of{' '}
      <Link to={pathOf('traces', traceId)} className="mono">
        {traceId.slice(0, 12)}…
      </Link>
    </span>
  )
}

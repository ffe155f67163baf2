/**
 * The invoke panel (cli.md §7.2): a JSON editor pre-filled from the request schema, a namespace and
 * timeout, and the result or error of `POST /api/invoke` with its duration.
 */
import { useEffect, useState } from 'react'
import { invoke } from '../../api/client.ts'
import type { InvokeResult, JsonSchema } from '../../api/types.ts'
import { exampleFromSchema } from '../../schema/example.ts'
import { formatDuration } from '../../format/format.ts'
import { JsonEditor, JsonView, parseJson } from '../../components/json.tsx'
import { Badge, Panel } from '../../components/ui.tsx'

/** Invoke `functionId` in `namespace` with a payload edited by the user. */
export function InvokePanel({ functionId, namespace, requestSchema }: { functionId: string; namespace: string; requestSchema: JsonSchema | undefined }) {
  const [text, setText] = useState(() => JSON.stringify(exampleFromSchema(requestSchema), null, 2))
  const [timeout, setTimeoutMs] = useState('30000')
  const [busy, setBusy] = useState(false)
  const [outcome, setOutcome] = useState<InvokeResult>()
  // A new function (or its schema arriving) resets the editor.
  const schemaKey = JSON.stringify(requestSchema ?? null)
  useEffect(() => {
    setText(JSON.stringify(exampleFromSchema(requestSchema), null, 2))
    setOutcome(undefined)
  }, [functionId, schemaKey])

  const parsed = parseJson(text)
  const run = async () => {
    if (!parsed.ok || busy) return
    setBusy(true)
    const ms = Number(timeout)
    setOutcome(await invoke({ function_id: functionId, payload: parsed.value, namespace, ...(ms > 0 ? { timeout_ms: ms } : {}) }))
    setBusy(false)
  }
  return (
    <Panel title="Invoke" className="invoke-panel">
      <JsonEditor label="Payload" value={text} onChange={setText} rows={8} onSubmit={run} />
      <div className="row">
        <label>
          Timeout (ms){' '}
          <input type="number" min={1} value={timeout} onChange={(e) => setTimeoutMs(e.target.value)} className="w-num" />
        </label>
        <button type="button" className="primary" disabled={!parsed.ok || busy} onClick={run}>
          {busy ? 'Invoking…' : 'Invoke'}
        </button>
        <button type="button" onClick={() => setText(JSON.stringify(exampleFromSchema(requestSchema), null, 2))}>
          Reset payload
        </button>
      </div>
      {outcome ? (
        <div className="invoke-result" data-testid="invoke-result" aria-live="polite">
          <div className="row">
            {outcome.ok ? <Badge tone="ok">ok</Badge> : <Badge tone="error">error</Badge>}
            <span className="muted">in {formatDuration(outcome.duration_ms)}</span>
          </div>
          {outcome.ok ? (
            outcome.result === undefined ? (
              <p className="muted">No result.</p>
            ) : (
              <JsonView value={outcome.result} maxHeight={360} />
            )
          ) : (
            <div className="error-box">
              <code>{outcome.error.code}</code> {outcome.error.message}
              {outcome.error.stacktrace ? <pre className="json small">{outcome.error.stacktrace}</pre> : null}
            </div>
          )}
        </div>
      ) : null}
    </Panel>
  )
}

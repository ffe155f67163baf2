/**
 * Testers of the Triggers page (cli.md §7.2): HTTP (method, path params, query, headers, body,
 * send through `/api/http`), cron (next runs, Run now with a cron payload for the current time),
 * subscribe (`publish`) and durable subscriber (`svc::durable::publish`), and links to the State and
 * Streams pages for state and stream triggers.
 */
import { useMemo, useState } from 'react'
import { call, httpRequest, invoke } from '../../api/client.ts'
import { useAction } from '../../api/hooks.ts'
import type { HttpTestResponse, InvokeResult, RegisteredTrigger } from '../../api/types.ts'
import { formatDuration, formatTime } from '../../format/format.ts'
import { Link, pathOf } from '../../router/router.tsx'
import { Badge, ErrorBox, Fields, Panel, StatusBadge } from '../../components/ui.tsx'
import { JsonEditor, JsonView, parseJson } from '../../components/json.tsx'
import { nextRuns } from './cron.ts'

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined
}

/** The tester that fits `trigger.trigger_type`, with the trigger's config. */
export function TriggerTester({ trigger }: { trigger: RegisteredTrigger }) {
  const config = trigger.config ?? {}
  let tester
  switch (trigger.trigger_type) {
    case 'http':
      tester = <HttpTester trigger={trigger} />
      break
    case 'cron':
      tester = <CronTester trigger={trigger} />
      break
    case 'subscribe':
      tester = <PublishTester functionId="publish" topic={str(config.topic) ?? ''} durable={false} />
      break
    case 'durable:subscriber':
    case 'queue':
      tester = <PublishTester functionId="svc::durable::publish" topic={str(config.topic) ?? str(config.queue) ?? ''} durable />
      break
    case 'state':
      tester = (
        <p>
          Fires on writes to {str(config.scope) ? <Link to={pathOf('state', str(config.scope)!)}>scope {str(config.scope)}</Link> : <Link to="/state">any scope</Link>}
          {str(config.key) ? <> and key <code>{str(config.key)}</code></> : null}. Edit a value on the State page to fire it.
        </p>
      )
      break
    case 'stream':
    case 'stream:join':
    case 'stream:leave':
      tester = (
        <p>
          Fires on {trigger.trigger_type === 'stream' ? 'changes in' : 'subscriptions to'}{' '}
          {str(config.stream_name) ? <Link to={pathOf('streams', str(config.stream_name)!)}>stream {str(config.stream_name)}</Link> : <Link to="/streams">any stream</Link>}. See the Streams page.
        </p>
      )
      break
    default:
      tester = <p className="muted">No tester for trigger type {trigger.trigger_type}; its function can be invoked from the Functions page.</p>
  }
  return (
    <Panel title={`Test ${trigger.trigger_type} trigger`} className="tester">
      <div className="grid-2 align-start">
        <div>{tester}</div>
        <div>
          <Fields
            rows={[
              ['Trigger id', <span className="mono small">{trigger.id}</span>],
              ['Function', <Link className="mono" to={pathOf('functions', trigger.function_id)}>{trigger.function_id}</Link>],
              ['Namespace', trigger.namespace],
              ['Worker', trigger.worker_name],
              ['Status', <StatusBadge status={trigger.status} />],
            ]}
          />
          <h3>Config</h3>
          <JsonView value={trigger.config} maxHeight={220} />
        </div>
      </div>
    </Panel>
  )
}

function pathParams(path: string): string[] {
  return [...path.matchAll(/:([A-Za-z0-9_]+)|\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1] ?? m[2]!)
}

function fillPath(path: string, values: Record<string, string>): string {
  return path.replace(/:([A-Za-z0-9_]+)|\{([A-Za-z0-9_]+)\}/g, (_, a: string | undefined, b: string | undefined) => encodeURIComponent(values[a ?? b!] ?? ''))
}

/** HTTP tester: builds a request for the trigger's route and sends it through `POST /api/http`. */
function HttpTester({ trigger }: { trigger: RegisteredTrigger }) {
  const config = trigger.config ?? {}
  const route = str(config.api_path) ?? '/'
  const routePath = route.startsWith('/') ? route : `/${route}`
  const [method, setMethod] = useState((str(config.http_method) ?? 'GET').toUpperCase())
  const params = useMemo(() => pathParams(routePath), [routePath])
  const [values, setValues] = useState<Record<string, string>>({})
  const [queryText, setQueryText] = useState('{}')
  const [headersText, setHeadersText] = useState('{}')
  const [bodyText, setBodyText] = useState('')
  const [send, state] = useAction(httpRequest)
  const q = parseJson(queryText)
  const h = parseJson(headersText)
  const b = parseJson(bodyText, true)
  const ready = q.ok && h.ok && b.ok
  const submit = () => {
    if (!q.ok || !h.ok || !b.ok) return
    void send({ method, path: fillPath(routePath, values), query: q.value as Record<string, string>, headers: h.value as Record<string, string>, ...(b.value === undefined ? {} : { body: b.value }) })
  }
  const response: HttpTestResponse | undefined = state.result
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        submit()
      }}
    >
      <div className="form-grid">
        <label htmlFor="http-method">Method</label>
        <select id="http-method" value={method} onChange={(e) => setMethod(e.target.value)}>
          {['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'].map((m) => (
            <option key={m}>{m}</option>
          ))}
        </select>
        <span className="muted">Route</span>
        <code>{routePath}</code>
        {params.map((p) => (
          <ParamInput key={p} name={p} value={values[p] ?? ''} onChange={(v) => setValues({ ...values, [p]: v })} />
        ))}
      </div>
      <JsonEditor label='Query (JSON object, e.g. {"page": "2"})' value={queryText} onChange={setQueryText} rows={2} errors={q.ok && (typeof q.value !== 'object' || q.value === null || Array.isArray(q.value)) ? ['Query must be an object'] : undefined} />
      <JsonEditor label="Headers (JSON object)" value={headersText} onChange={setHeadersText} rows={2} />
      {method !== 'GET' && method !== 'HEAD' ? <JsonEditor label="Body (JSON, empty for none)" value={bodyText} onChange={setBodyText} rows={5} allowEmpty onSubmit={submit} /> : null}
      <div className="row">
        <button type="submit" className="primary" disabled={!ready || state.busy}>
          {state.busy ? 'Sending…' : 'Send'}
        </button>
        <span className="muted small mono">
          {method} {fillPath(routePath, values)}
        </span>
      </div>
      <ErrorBox error={state.error} title="Request failed" />
      {response ? (
        <div data-testid="http-result">
          <div className="row">
            <Badge tone={response.status < 300 ? 'ok' : response.status < 500 ? 'warn' : 'error'}>{response.status}</Badge>
            <span className="muted">in {formatDuration(response.duration_ms)}</span>
          </div>
          <h3>Body</h3>
          <ResponseBody body={response.body} />
          <h3>Headers</h3>
          <JsonView value={response.headers} maxHeight={200} />
        </div>
      ) : null}
    </form>
  )
}

/** A response body: JSON text is shown pretty-printed, any other text as it is. */
function ResponseBody({ body }: { body: unknown }) {
  if (typeof body !== 'string') return <JsonView value={body} maxHeight={300} />
  const parsed = parseJson(body)
  return parsed.ok ? <JsonView value={parsed.value} maxHeight={300} /> : <pre className="json">{body}</pre>
}

function ParamInput({ name, value, onChange }: { name: string; value: string; onChange: (v: string) => void }) {
  const id = `param-${name}`
  return (
    <>
      <label htmlFor={id}>:{name}</label>
      <input id={id} value={value} onChange={(e) => onChange(e.target.value)} required />
    </>
  )
}

/** Cron tester: the next runs in the trigger's time zone, and Run now (cli.md §7.2). */
function CronTester({ trigger }: { trigger: RegisteredTrigger }) {
  const config = trigger.config ?? {}
  const expression = str(config.expression) ?? ''
  const timeZone = str(config.timezone) ?? 'UTC'
  const [outcome, setOutcome] = useState<InvokeResult>()
  const [busy, setBusy] = useState(false)
  let runs: number[] | null = null
  let problem: string | undefined
  try {
    runs = nextRuns(expression, timeZone, 5)
  } catch (error) {
    problem = (error as Error).message
  }
  const runNow = async () => {
    setBusy(true)
    const now = new Date().toISOString()
    // The payload a cron slot delivers (builtins.md §9.3), for the current time.
    setOutcome(await invoke({ function_id: trigger.function_id, namespace: trigger.namespace, payload: { trigger: 'cron', job_id: trigger.id, scheduled_time: now, actual_time: now } }))
    setBusy(false)
  }
  return (
    <div>
      <p>
        <code>{expression}</code> <span className="muted">({timeZone})</span>
      </p>
      <h3>Next runs</h3>
      {problem ? <p className="text-error">{problem}</p> : runs === null || runs.length === 0 ? <p className="muted">No future runs.</p> : (
        <ol className="small mono">
          {runs.map((t) => (
            <li key={t}>{formatTime(t)}</li>
          ))}
        </ol>
      )}
      <div className="row">
        <button type="button" className="primary" onClick={runNow} disabled={busy}>
          {busy ? 'Running…' : 'Run now'}
        </button>
        <span className="muted small">invokes {trigger.function_id} with a cron payload for now</span>
      </div>
      <OutcomeView outcome={outcome} />
    </div>
  )
}

/** Publish tester for `subscribe` (`publish`) and `durable:subscriber` (`svc::durable::publish`). */
function PublishTester({ functionId, topic: initialTopic, durable }: { functionId: string; topic: string; durable: boolean }) {
  const [topic, setTopic] = useState(initialTopic)
  const [text, setText] = useState('{}')
  const parsed = parseJson(text)
  // Wrapped so that a publish with no result (`publish`) still reads as done.
  const [publish, state] = useAction(async () => ({ value: parsed.ok ? await call<{ subscriber_count?: number } | undefined>(functionId, { topic, data: parsed.value }) : undefined }))
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        void publish()
      }}
    >
      <div className="form-grid">
        <label htmlFor="publish-topic">Topic</label>
        <input id="publish-topic" value={topic} onChange={(e) => setTopic(e.target.value)} required />
      </div>
      <JsonEditor label="Data" value={text} onChange={setText} rows={6} onSubmit={() => void publish()} />
      <div className="row">
        <button type="submit" className="primary" disabled={!parsed.ok || !topic || state.busy}>
          {durable ? 'Publish durably' : 'Publish'}
        </button>
        <span className="muted small">calls {functionId}</span>
      </div>
      <ErrorBox error={state.error} title="Publish failed" />
      {state.result ? <p className="text-ok">{typeof state.result.value?.subscriber_count === 'number' ? `Published to ${state.result.value.subscriber_count} subscriber queues.` : 'Published.'}</p> : null}
    </form>
  )
}

/** Result or error of an invocation with its duration. */
export function OutcomeView({ outcome }: { outcome: InvokeResult | undefined }) {
  if (!outcome) return null
  return (
    <div className="invoke-result" aria-live="polite">
      <div className="row">
        {outcome.ok ? <Badge tone="ok">ok</Badge> : <Badge tone="error">error</Badge>}
        <span className="muted">in {formatDuration(outcome.duration_ms)}</span>
      </div>
      {outcome.ok ? outcome.result === undefined ? <p className="muted">No result.</p> : <JsonView value={outcome.result} maxHeight={300} /> : <ErrorBox error={outcome.error} />}
    </div>
  )
}

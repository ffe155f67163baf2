/**
 * The Node SDK's conformance worker (test/conformance/README.md): registers the suite's functions
 * under `CONF_PREFIX` with `svc-sdk` and prints its ready line; the channel functions take the
 * refs as the live `ChannelReader`/`ChannelWriter` the SDK hands its handlers (sdk.md §9).
 */
import { InvocationError, registerWorker, TriggerAction, type ChannelReader, type ChannelWriter, type TriggerConfig } from 'svc-sdk'

const P = process.env.CONF_PREFIX ?? 'conf-node'
const WORKER = process.env.CONF_WORKER ?? 'a'
const SDK = 'node'
const maxDelayMs = Number(process.env.CONF_RECONNECT_MAX_MS ?? 1000)

const client = registerWorker(process.env.SVC_URL, {
  workerName: `${P}-${WORKER}`,
  reconnectionConfig: { initialDelayMs: 100, maxDelayMs },
  otel: { enabled: false },
})

const events = { notes: [] as unknown[], state: [] as unknown[], ticks: [] as unknown[] }
const bindings = new Map<string, TriggerConfig<unknown>>()

type CallInput = { function_id: string; payload?: unknown; action?: { type: 'void' } | { type: 'enqueue'; queue: string } | null; timeout_ms?: number; metadata?: unknown }

client.registerFunction(`${P}::echo`, (data: unknown, metadata?: unknown) => ({ data, metadata: metadata ?? null }))
client.registerFunction(`${P}::fail`, (input: { code: string; message: string }) => {
  throw Object.assign(new Error(input.message), { code: input.code })
})
client.registerFunction(`${P}::sleep`, async (input: { ms: number }) => {
  await new Promise((resolve) => setTimeout(resolve, input.ms))
  return { slept: input.ms }
})
client.registerFunction(`${P}::whoami`, () => ({ sdk: SDK, worker: WORKER }))
client.registerFunction(`${P}::call`, async (input: CallInput) => {
  const request: Record<string, unknown> = { function_id: input.function_id, payload: input.payload ?? null }
  if (input.action?.type === 'void') request.action = TriggerAction.Void()
  if (input.action?.type === 'enqueue') request.action = TriggerAction.Enqueue({ queue: input.action.queue })
  if (input.timeout_ms !== undefined) request.timeoutMs = input.timeout_ms
  if (input.metadata !== undefined) request.metadata = input.metadata
  try {
    const result = await client.trigger(request as never)
    return { ok: true, result: result ?? null }
  } catch (err) {
    const e = err as InvocationError
    return { ok: false, code: e.code, message: e instanceof InvocationError ? e.detail : String(e), stacktrace: typeof e.stacktrace === 'string' && e.stacktrace !== '' }
  }
})
client.registerFunction(`${P}::note`, (data: unknown) => {
  events.notes.push(data)
  return null
})
client.registerFunction(`${P}::events`, () => events)
client.registerFunction(`${P}::http`, (req: { method: string; path_params: unknown; query_params: unknown; body: unknown }) => ({
  status_code: 200,
  body: { method: req.method, path_params: req.path_params, query_params: req.query_params, body: req.body, sdk: SDK },
}))
client.registerFunction(`${P}::state-event`, (event: unknown) => {
  events.state.push(event)
  return null
})
client.registerFunction(`${P}::on-tick`, (payload: unknown, metadata?: unknown) => {
  events.ticks.push({ payload, metadata: metadata ?? null })
  return null
})
client.registerFunction(`${P}::bind`, (input: { trigger_type: string; config: unknown; metadata?: Record<string, never> }) => {
  const trigger = client.registerTrigger({ type: input.trigger_type, function_id: `${P}::on-tick`, config: input.config ?? {}, ...(input.metadata ? { metadata: input.metadata } : {}) })
  return { id: trigger.id }
})
client.registerFunction(`${P}::bindings`, () => ({
  bindings: [...bindings.values()].map((b) => ({ id: b.id, function_id: b.function_id, config: b.config, metadata: b.metadata ?? null })),
}))
client.registerFunction(`${P}::fire`, async (input: { payload: unknown }) => {
  for (const b of bindings.values()) {
    await client.trigger({ function_id: b.function_id, payload: input.payload, action: TriggerAction.Void(), ...(b.namespace ? { namespace: b.namespace } : {}), ...(b.metadata ? { metadata: b.metadata } : {}) })
  }
  return { fired: bindings.size }
})
type Item = { text: string } | { binary_hex: string }

client.registerFunction(`${P}::channel-read`, async (input: { reader: ChannelReader }) => {
  // Both kinds by push, so that the items keep their arrival order; next() then only waits for the
  // end (undefined after a normal close, a ChannelError otherwise).
  const items: Item[] = []
  input.reader.onMessage((text) => items.push({ text }))
  input.reader.onBinary((data) => items.push({ binary_hex: Buffer.from(data).toString('hex') }))
  await input.reader.next()
  return { items }
})
client.registerFunction(`${P}::channel-write`, async (input: { writer: ChannelWriter; items: Item[] }) => {
  for (const item of input.items) {
    if ('text' in item) input.writer.sendMessage(item.text)
    else await input.writer.write(Buffer.from(item.binary_hex, 'hex'))
  }
  await input.writer.close()
  return { written: input.items.length }
})
client.registerTriggerType(
  { id: `${P}-ticker`, description: 'conformance ticker' },
  {
    registerTrigger: (t) => {
      bindings.set(t.id, t)
    },
    unregisterTrigger: (t) => {
      bindings.delete(t.id)
    },
  },
)
client.registerTrigger({ type: 'http', function_id: `${P}::http`, config: { api_path: `conf/${SDK}/items/:id`, http_method: 'GET' } })
client.registerTrigger({ type: 'http', function_id: `${P}::http`, config: { api_path: `conf/${SDK}/items/:id`, http_method: 'POST' } })
client.registerTrigger({ type: 'state', function_id: `${P}::state-event`, config: { scope: P } })

let announced = false
client.addConnectionStateListener((state) => {
  if (state === 'connected' && !announced) {
    announced = true
    process.stdout.write(`${JSON.stringify({ ready: true, sdk: SDK, prefix: P, capabilities: ['channels'] })}\n`)
  }
})

const stop = async (): Promise<void> => {
  await client.shutdown()
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.stdin.on('end', () => void stop())
process.stdin.resume()

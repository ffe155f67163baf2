/**
 * The console backend against a real engine (cli.md §7.1): real HTTP requests and WebSockets, no
 * mocks. What a browser tab of the console would see: the info, invocations, HTTP tester, live
 * pushes, the streams relay, a disconnected engine and its return, and hostile input.
 */
import assert from 'node:assert/strict'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { connect } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { WebSocket } from 'ws'
import { startConsole, type RunningConsole } from 'svc-console'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'
import { slowClient } from '../../../test/support/slow-client.ts'

interface Reply {
  status: number
  body: any
}

/** Access tokens of the consoles the tests started, by base URL: API calls send them as a script would. */
const tokens = new Map<string, string>()

/** startConsole, remembering the console's token for the helpers below. */
async function start(options: Parameters<typeof startConsole>[0]): Promise<RunningConsole> {
  const running = await startConsole(options)
  if (running.token !== undefined) tokens.set(running.url, running.token)
  return running
}

function bearer(base: string): Record<string, string> {
  const token = tokens.get(base)
  return token === undefined ? {} : { authorization: `Bearer ${token}` }
}

async function post(base: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(base), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : JSON.parse(text) }
}

async function getJson(base: string, path: string): Promise<Reply> {
  const res = await fetch(base + path, { headers: bearer(base) })
  return { status: res.status, body: await res.json() }
}

/** A browser tab's `/api/live` socket: every frame received, and a way to wait for one. */
class LiveClient {
  readonly frames: any[] = []
  readonly socket: WebSocket
  readonly opened: Promise<void>
  constructor(base: string) {
    this.socket = new WebSocket(base.replace(/^http/, 'ws') + '/api/live', { headers: bearer(base) })
    this.socket.on('message', (data) => this.frames.push(JSON.parse(data.toString())))
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve())
      this.socket.once('error', reject)
    })
  }
  send(frame: unknown): void {
    this.socket.send(typeof frame === 'string' ? frame : JSON.stringify(frame))
  }
  next(match: (frame: any) => boolean, what: string, timeoutMs = 5000): Promise<any> {
    return waitFor(() => this.frames.find(match), () => `a live frame: ${what}; got ${JSON.stringify(this.frames).slice(0, 600)}`, timeoutMs)
  }
  /** Sends a bad frame and waits for its error: the server reads frames in order, so it has read every frame sent before. */
  async read(): Promise<void> {
    const errors = this.frames.filter((f) => f.error).length
    this.send('a barrier, not json')
    await waitFor(() => this.frames.filter((f) => f.error).length > errors, 'the error answering the barrier frame')
  }
  close(): void {
    this.socket.close()
  }
}

describe('svc console backend (cli.md §7.1)', () => {
  let dataDir: string
  let t: TestEngine
  let enginePort: number
  let server: RunningConsole
  let worker: SvcClient
  const live: LiveClient[] = []

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-console-test-'))
    t = await startTestEngine({ dataDir })
    enginePort = Number(new URL(t.url).port)
    worker = registerWorker(t.url, { workerName: 'console-test-worker', otel: { enabled: false }, enableMetricsReporting: false })
    worker.registerFunction('shop::echo', (payload: unknown) => ({ echoed: payload }))
    worker.registerFunction('shop::fail', () => {
      throw Object.assign(new Error('out of stock'), { code: 'OUT_OF_STOCK' })
    })
    worker.registerFunction('shop::order', (req: { path_params: { id: string }; query_params: Record<string, string[]>; headers: Record<string, string>; body: unknown }) => ({
      status_code: 201,
      headers: { 'x-order': req.path_params.id },
      body: { id: req.path_params.id, page: req.query_params.page, tag: req.headers['x-tag'], got: req.body },
    }))
    worker.registerTrigger({ type: 'http', function_id: 'shop::order', config: { api_path: 'orders/:id', http_method: 'POST' } })
    // Runs until cancelled: the handler's only way out is its signal.
    worker.registerFunction('shop::wait', (_payload: unknown, _metadata, context) => new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason), { once: true })))
    await waitFor(() => worker.getConnectionState() === 'connected', "worker.getConnectionState() === 'connected'", 10_000)
    server = await start({ port: 0, engineUrl: t.url, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await waitFor(() => server.connected, 'server.connected', 10_000)
  })

  after(async () => {
    for (const client of live) client.close()
    await server?.close()
    await worker?.shutdown()
    await t?.stop()
    await rm(dataDir, { recursive: true, force: true })
  })

  it('binds 127.0.0.1 and /api/info names the engine, HTTP and stream addresses', async () => {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    const { status, body } = await getJson(server.url, '/api/info')
    assert.equal(status, 200)
    assert.deepEqual(body, { version: body.version, engine_url: t.url, http_url: t.httpUrl, stream_url: t.streamUrl, connected: true })
    assert.match(body.version, /^\d+\.\d+\.\d+/)
  })

  it('the console is the svc-console worker in namespace default, with internal functions only', async () => {
    const info = (await t.engine.inject({ function_id: 'engine::workers::info', data: { name: 'svc-console' } })) as any
    assert.equal(info.worker.namespace, 'default')
    assert.ok(info.functions.length >= 5)
    for (const f of info.functions) {
      assert.match(f.function_id, /^svc-console::/)
      assert.equal(f.metadata?.internal, true, `${f.function_id} is internal`)
    }
    const types = new Set(info.registered_triggers.map((r: { trigger_type: string }) => r.trigger_type))
    assert.deepEqual([...types].sort(), ['configuration', 'engine::functions-available', 'engine::workers-available', 'log', 'state', 'trace'])
    const listed = (await t.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: { function_id: string }[] }
    assert.ok(!listed.functions.some((f) => f.function_id.startsWith('svc-console::')), 'hidden from default listings')
  })

  it('POST /api/invoke returns the result, or the function error, with a duration', async () => {
    const ok = await post(server.url, '/api/invoke', { function_id: 'shop::echo', payload: { sku: 'A1', qty: 2 } })
    assert.equal(ok.status, 200)
    assert.deepEqual(ok.body.result, { echoed: { sku: 'A1', qty: 2 } })
    assert.equal(ok.body.ok, true)
    assert.equal(typeof ok.body.duration_ms, 'number')

    const failed = await post(server.url, '/api/invoke', { function_id: 'shop::fail', payload: {} })
    assert.equal(failed.status, 200)
    assert.equal(failed.body.ok, false)
    assert.equal(failed.body.error.message.includes('out of stock'), true, JSON.stringify(failed.body))

    const missing = await post(server.url, '/api/invoke', { function_id: 'shop::nope', payload: {} })
    assert.equal(missing.body.ok, false)
    assert.equal(missing.body.error.code, 'function_not_found')

    const noResult = await post(server.url, '/api/invoke', { function_id: 'state::get', payload: { scope: 'none', key: 'none' } })
    assert.deepEqual({ ok: noResult.body.ok, result: noResult.body.result }, { ok: true, result: null })
  })

  it('POST /api/invoke with trace: false records no trace; by default it does', async () => {
    const count = async (name: string) => ((await t.engine.inject({ function_id: 'engine::traces::list', data: { name } })) as { traces: unknown[] }).traces.length
    const before = await count('execute state::list_groups')
    const quiet = await post(server.url, '/api/invoke', { function_id: 'state::list_groups', payload: {}, trace: false })
    assert.equal(quiet.body.ok, true)
    assert.equal(await count('execute state::list_groups'), before, 'no trace for an untraced read')
    await post(server.url, '/api/invoke', { function_id: 'state::list_groups', payload: {} })
    assert.equal(await count('execute state::list_groups'), before + 1, 'a trace for a traced call')
    const bad = await post(server.url, '/api/invoke', { function_id: 'state::list_groups', trace: 'no' })
    assert.equal(bad.status, 400)
  })

  it('POST /api/invoke honours namespace and timeout_ms', async () => {
    const slow = registerWorker(t.url, { workerName: 'console-test-slow', namespace: 'slowns', otel: { enabled: false }, enableMetricsReporting: false })
    slow.registerFunction('slow::wait', () => new Promise((r) => setTimeout(() => r('late'), 2000)))
    try {
      await waitFor(async () => (await post(server.url, '/api/invoke', { function_id: 'engine::functions::info', payload: { function_id: 'slow::wait', namespace: 'slowns' } })).body.ok === true, 'the condition')
      const timedOut = await post(server.url, '/api/invoke', { function_id: 'slow::wait', payload: {}, namespace: 'slowns', timeout_ms: 100 })
      assert.equal(timedOut.body.ok, false)
      assert.equal(timedOut.body.error.code, 'TIMEOUT')
      assert.ok(timedOut.body.duration_ms >= 90 && timedOut.body.duration_ms < 1500, `duration ${timedOut.body.duration_ms}`)
    } finally {
      await slow.shutdown()
    }
  })

  it('the Cancel button’s call: engine::invocations::cancel through /api/invoke passes the write checks (token, JSON body, this site) and then cancels', async () => {
    const outcome = worker.trigger({ function_id: 'shop::wait', payload: {} }).then(
      () => 'answered',
      (error: unknown) => error,
    )
    const inFlight = async () => (await post(server.url, '/api/invoke', { function_id: 'engine::invocations::list', payload: { function_id: 'shop::wait' } })).body.result as { invocations: Array<{ invocation_id: string; caller_name: string | null }>; total: number }
    const listed = await waitFor(async () => (await inFlight()).invocations[0], 'shop::wait in flight')
    assert.equal(listed.caller_name, 'console-test-worker')
    const cancel = { function_id: 'engine::invocations::cancel', payload: { invocation_id: listed.invocation_id } }
    const noToken = await fetch(server.url + '/api/invoke', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(cancel) })
    assert.equal(noToken.status, 401)
    assert.equal((await post(server.url, '/api/invoke', JSON.stringify(cancel), { 'content-type': 'text/plain' })).status, 415, 'a form post, which needs no preflight')
    assert.equal((await post(server.url, '/api/invoke', cancel, { origin: 'http://evil.example' })).status, 403, 'another site')
    assert.equal((await inFlight()).total, 1, 'the refused cancels left the call running')
    const done = await post(server.url, '/api/invoke', cancel)
    assert.equal(done.status, 200)
    assert.deepEqual([done.body.ok, done.body.result], [true, { cancelled: true }])
    assert.equal(((await outcome) as { code?: string }).code, 'cancelled')
    assert.equal((await inFlight()).total, 0)
    const again = await post(server.url, '/api/invoke', cancel)
    assert.deepEqual(again.body.result, { cancelled: false }, 'an invocation that ended is not cancelled twice')
  })

  it('POST /api/http sends the request to the HTTP listener and returns status, headers and body', async () => {
    const { status, body } = await post(server.url, '/api/http', {
      method: 'post',
      path: '/orders/42',
      query: { page: ['2', '3'] },
      headers: { 'x-tag': 'blue', host: 'evil.example' },
      body: { qty: 3 },
    })
    assert.equal(status, 200)
    assert.equal(body.status, 201)
    assert.equal(body.headers['x-order'], '42')
    assert.deepEqual(JSON.parse(body.body), { id: '42', page: ['2', '3'], tag: 'blue', got: { qty: 3 } })
    assert.equal(typeof body.duration_ms, 'number')

    const notFound = await post(server.url, '/api/http', { method: 'GET', path: '/nowhere' })
    assert.equal(notFound.body.status, 404)
  })

  it('/api/live pushes logs, state, configuration, functions and workers to subscribed clients', async () => {
    const client = new LiveClient(server.url)
    live.push(client)
    await client.opened
    client.send({ subscribe: ['logs', 'state', 'configuration', 'functions', 'workers', 'connection'] })
    const first = await client.next((f) => f.channel === 'connection', 'the connection state on subscribe')
    assert.equal(first.data.connected, true)

    await post(server.url, '/api/invoke', { function_id: 'state::set', payload: { scope: 'carts', key: 'ada', value: { items: 1 } } })
    const state = await client.next((f) => f.channel === 'state' && f.data.scope === 'carts', 'a state push')
    assert.deepEqual({ event: state.data.event_type, key: state.data.key, value: state.data.new_value }, { event: 'state:created', key: 'ada', value: { items: 1 } })

    await post(server.url, '/api/invoke', { function_id: 'engine::log::warn', payload: { message: 'disk almost full', service_name: 'console-test' } })
    const log = await client.next((f) => f.channel === 'logs' && JSON.stringify(f.data).includes('disk almost full'), 'a log push')
    assert.ok(log.data.severity_number >= 13 || log.data.severity_text === 'WARN', JSON.stringify(log.data))

    await post(server.url, '/api/invoke', {
      function_id: 'configuration::register',
      payload: { id: 'console-test', name: 'Console test', description: 'test entry', schema: { type: 'object' }, initial_value: { a: 1 } },
    })
    const config = await client.next((f) => f.channel === 'configuration' && f.data.id === 'console-test', 'a configuration push')
    assert.equal(config.data.event_type, 'configuration:registered')

    const newcomer = registerWorker(t.url, { workerName: 'console-test-newcomer', otel: { enabled: false }, enableMetricsReporting: false })
    newcomer.registerFunction('newcomer::hello', () => 'hi')
    try {
      await client.next(
        (f) => f.channel === 'functions' && f.data.functions?.some((fn: { function_id: string }) => fn.function_id === 'newcomer::hello'),
        'a functions push naming the new function',
      )
      await client.next((f) => f.channel === 'workers' && f.data.event === 'worker_connected', 'a workers push')
    } finally {
      await newcomer.shutdown()
    }
    await client.next((f) => f.channel === 'workers' && f.data.event === 'worker_disconnected', 'a worker_disconnected push')
  })

  it('/api/live pushes the trace ids of new traces on traces', async () => {
    const client = new LiveClient(server.url)
    live.push(client)
    await client.opened
    client.send({ subscribe: ['traces'] })
    await client.read() // the subscription is read before the request
    const response = await fetch(`${t.httpUrl}/orders/T-1`, { method: 'POST' })
    assert.equal(response.status, 201)
    const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'POST /orders/:id' } })) as { traces: Array<{ trace_id: string }> }
    const traceId = listed.traces[0]!.trace_id
    await client.next((f) => f.channel === 'traces' && f.data.trace_ids?.includes(traceId), 'a traces push naming the request\'s trace')
  })

  it('/api/live sends only subscribed channels and answers bad frames without closing', async () => {
    const client = new LiveClient(server.url)
    live.push(client)
    await client.opened
    client.send('not json at all')
    client.socket.send(Buffer.from([0, 1, 2]), { binary: true })
    client.send({ subscribe: ['logs', 'nonsense'] })
    client.send({ subscribe: 'state' })
    client.send([1, 2, 3])
    await waitFor(() => client.frames.filter((f) => f.error).length === 5, 'client.frames.filter((f) => f.error).length === 5')
    assert.ok(client.frames.every((f) => typeof f.error?.code === 'string' && typeof f.error?.message === 'string'))
    assert.match(client.frames[2].error.message, /unknown channel "nonsense"/)

    client.send({ subscribe: ['state'] })
    await client.read()
    await post(server.url, '/api/invoke', { function_id: 'engine::log::info', payload: { message: 'not for this client' } })
    await post(server.url, '/api/invoke', { function_id: 'state::set', payload: { scope: 'only-state', key: 'k', value: 1 } })
    await client.next((f) => f.channel === 'state' && f.data.scope === 'only-state', 'the state push')
    assert.ok(!client.frames.some((f) => f.channel === 'logs'), 'no logs without a subscription')
    assert.equal(client.socket.readyState, WebSocket.OPEN)
  })

  it('/ws/streams relays a stream client to the stream listener', async () => {
    const socket = new WebSocket(server.url.replace(/^http/, 'ws') + '/ws/streams', { headers: bearer(server.url) })
    const frames: any[] = []
    socket.on('message', (data) => frames.push(JSON.parse(data.toString())))
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
    try {
      socket.send(JSON.stringify({ type: 'join', data: { subscriptionId: 's1', streamName: 'chat', groupId: 'room-1' } }))
      await waitFor(() => frames.some((f) => JSON.stringify(f).includes('sync')), "frames.some((f) => JSON.stringify(f).includes('sync'))")
      await post(server.url, '/api/invoke', { function_id: 'stream::set', payload: { stream_name: 'chat', group_id: 'room-1', item_id: 'm1', data: { text: 'hello' } } })
      await waitFor(() => frames.some((f) => JSON.stringify(f).includes('"hello"')), 'frames.some((f) => JSON.stringify(f).includes(\'"hello"\'))')
    } finally {
      socket.close()
    }
  })

  it('GET /api/stream-groups lists every stream group with its item count', async () => {
    for (const [stream, group, item] of [['orders', 'eu', 'o1'], ['orders', 'eu', 'o2'], ['orders', 'us', 'o3'], ['presence', 'lobby', 'p1']]) {
      await post(server.url, '/api/invoke', { function_id: 'stream::set', payload: { stream_name: stream, group_id: group, item_id: item, data: { item } } })
    }
    const reply = await getJson(server.url, '/api/stream-groups')
    assert.equal(reply.status, 200, JSON.stringify(reply.body))
    const counts = Object.fromEntries(reply.body.streams.flatMap((s: any) => s.groups.map((g: any) => [`${s.stream_name}/${g.group_id}`, g.items])))
    assert.equal(counts['orders/eu'], 2)
    assert.equal(counts['orders/us'], 1)
    assert.equal(counts['presence/lobby'], 1)
    assert.equal(reply.body.truncated, false)
    assert.equal(reply.body.group_count, Object.keys(counts).length)
    assert.equal((await post(server.url, '/api/stream-groups', {})).status, 405)
    const anonymous = await fetch(server.url + '/api/stream-groups')
    assert.equal(anonymous.status, 401, 'the counts need the access token like every API read')
  })

  it('refuses hostile bodies with 413/400/415 and keeps serving', async () => {
    const huge = JSON.stringify({ function_id: 'shop::echo', payload: 'x'.repeat(2 * 1024 * 1024) })
    const tooBig = await post(server.url, '/api/invoke', huge)
    assert.equal(tooBig.status, 413)
    assert.equal(tooBig.body.error.code, 'PAYLOAD_TOO_LARGE')

    const cases: [string, unknown, number, RegExp][] = [
      ['/api/invoke', '{"function_id": "shop::echo", ', 400, /not valid JSON/],
      ['/api/invoke', '', 400, /empty/],
      ['/api/invoke', '[1,2]', 400, /must be a JSON object/],
      ['/api/invoke', { payload: 1 }, 400, /function_id/],
      ['/api/invoke', { function_id: 'a', timeout_ms: -5 }, 400, /timeout_ms/],
      ['/api/invoke', '['.repeat(5000) + ']'.repeat(5000), 400, /not valid JSON/],
      ['/api/http', { method: 'BREW', path: '/' }, 400, /method/],
      ['/api/http', { method: 'GET', path: '//evil.example/x' }, 400, /path/],
      ['/api/http', { method: 'GET', path: 'http://evil.example/' }, 400, /path/],
      ['/api/http', { method: 'GET', path: '/', body: 'x' }, 400, /cannot have a body/],
      ['/api/http', { method: 'GET', path: '/', headers: { 'x-a': 'b\r\nx-injected: 1' } }, 400, /line breaks/],
    ]
    for (const [path, body, status, message] of cases) {
      const reply = await post(server.url, path, body)
      assert.equal(reply.status, status, `${path} ${String(JSON.stringify(body)).slice(0, 60)}`)
      assert.match(reply.body.error.message, message)
      assert.equal(typeof reply.body.error.code, 'string')
    }

    const text = await post(server.url, '/api/invoke', { function_id: 'shop::echo' }, { 'content-type': 'text/plain' })
    assert.equal(text.status, 415, 'a form-like POST from another page cannot invoke')
    const crossSite = await post(server.url, '/api/invoke', { function_id: 'shop::echo' }, { origin: 'https://evil.example' })
    assert.equal(crossSite.status, 403)
    assert.equal((await getJson(server.url, '/api/nothing')).status, 404)
    assert.equal((await getJson(server.url, '/api/invoke')).status, 405)

    const alive = await getJson(server.url, '/api/info')
    assert.equal(alive.body.connected, true)
  })

  it('fuzz: any /api/invoke or /api/http body gets a JSON answer and the server keeps serving', async () => {
    const functionId = fc.oneof(fc.constantFrom('shop::echo', 'shop::fail', 'state::get', 'engine::functions::list', 'engine::workers::list', 'engine::fleet::list', 'nope::x', ''), fc.string(), fc.jsonValue())
    const invokeBody = fc.oneof(
      fc.record({ function_id: functionId, payload: fc.jsonValue(), namespace: fc.option(fc.oneof(fc.string(), fc.constant('default'), fc.integer())), timeout_ms: fc.option(fc.oneof(fc.integer(), fc.double())) }, { requiredKeys: ['function_id'] }),
      // The Cancel button's calls, with hostile ids, reasons and limits.
      fc.record({
        function_id: fc.constantFrom('engine::invocations::cancel', 'engine::invocations::list'),
        payload: fc.oneof(
          fc.record({ invocation_id: fc.oneof(fc.uuid(), fc.string(), fc.string({ minLength: 2000, maxLength: 3000 }), fc.jsonValue()), reason: fc.oneof(fc.string({ maxLength: 1100 }), fc.jsonValue()), function_id: fc.oneof(fc.string(), fc.jsonValue()), limit: fc.oneof(fc.integer(), fc.double(), fc.jsonValue()), include_internal: fc.jsonValue() }, { requiredKeys: [] }),
          fc.jsonValue(),
        ),
      }),
      fc.jsonValue(),
      fc.string(),
    )
    const httpBody = fc.oneof(
      fc.record(
        {
          method: fc.oneof(fc.constantFrom('GET', 'post', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'), fc.string()),
          path: fc.oneof(fc.constantFrom('/orders/7', '/', '/orders/%zz', '/a?b=c#d'), fc.string().map((s) => '/' + s), fc.string()),
          query: fc.option(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.array(fc.string()), fc.jsonValue()))),
          headers: fc.option(fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.jsonValue()))),
          body: fc.option(fc.oneof(fc.string(), fc.jsonValue())),
          timeout_ms: fc.option(fc.integer({ min: -10, max: 5000 })),
        },
        { requiredKeys: ['method', 'path'] },
      ),
      fc.jsonValue(),
    )
    await fc.assert(
      fc.asyncProperty(fc.oneof(invokeBody.map((b) => ['/api/invoke', b] as const), httpBody.map((b) => ['/api/http', b] as const)), async ([path, body]) => {
        const reply = await post(server.url, path, typeof body === 'string' ? body : JSON.stringify(body ?? null))
        assert.ok([200, 400, 502, 504].includes(reply.status), `status ${reply.status}: ${JSON.stringify(reply.body)}`)
        if (reply.status !== 200) assert.equal(typeof reply.body.error.message, 'string')
        else if (path === '/api/invoke') assert.equal(typeof reply.body.ok, 'boolean')
        else assert.equal(typeof reply.body.status, 'number')
      }),
      { numRuns: 150 },
    )
    assert.equal((await getJson(server.url, '/api/info')).body.connected, true)
  })

  it('engine stopped: connected false, invoke answers engine_unreachable, a connection push; engine back: recovers', async () => {
    const client = new LiveClient(server.url)
    live.push(client)
    await client.opened
    client.send({ subscribe: ['connection'] })
    await client.next((f) => f.channel === 'connection' && f.data.connected === true, 'connected on subscribe')

    await worker.shutdown()
    await t.stop()
    await client.next((f) => f.channel === 'connection' && f.data.connected === false, 'a disconnected push')
    const info = await getJson(server.url, '/api/info')
    assert.equal(info.body.connected, false)
    const invoke = await post(server.url, '/api/invoke', { function_id: 'shop::echo', payload: {} })
    assert.equal(invoke.status, 200)
    assert.equal(invoke.body.ok, false)
    assert.equal(invoke.body.error.code, 'engine_unreachable')
    assert.match(invoke.body.error.message, /not connected to the engine at ws:\/\//)
    const http = await post(server.url, '/api/http', { method: 'GET', path: '/' })
    assert.equal(http.status, 503)

    client.frames.length = 0
    t = await startTestEngine({ dataDir, listener: { port: enginePort } })
    await client.next((f) => f.channel === 'connection' && f.data.connected === true, 'a reconnected push', 10_000)
    assert.equal((await getJson(server.url, '/api/info')).body.connected, true)
    const again = await post(server.url, '/api/invoke', { function_id: 'state::get', payload: { scope: 'carts', key: 'ada' } })
    assert.deepEqual(again.body.result, { items: 1 }, 'state written before the restart is read through the console')
    // The triggers were registered again: live pushes resume.
    client.send({ subscribe: ['state'] })
    await post(server.url, '/api/invoke', { function_id: 'state::set', payload: { scope: 'after-restart', key: 'k', value: 2 } })
    await client.next((f) => f.channel === 'state' && f.data.scope === 'after-restart', 'a state push after the restart')
  })
})

describe('svc console without an engine, and the app files', () => {
  let appDir: string
  let server: RunningConsole

  before(async () => {
    appDir = await mkdtemp(join(tmpdir(), 'svc-console-app-'))
    await mkdir(join(appDir, 'assets'))
    await writeFile(join(appDir, 'index.html'), '<!doctype html><title>app</title><div id="root"></div>')
    await writeFile(join(appDir, 'assets', 'main.js'), 'console.log(1)')
    await writeFile(join(tmpdir(), 'svc-console-secret.txt'), 'secret')
    // Port 9 (discard) is closed on test hosts: the engine is unreachable from the start.
    server = await start({ port: 0, engineUrl: 'ws://127.0.0.1:9', appDir, reconnect: { initialDelayMs: 50, maxDelayMs: 100 } })
  })

  after(async () => {
    await server?.close()
    await rm(appDir, { recursive: true, force: true })
    await rm(join(tmpdir(), 'svc-console-secret.txt'), { force: true })
  })

  it('GET /api/microvms lists what its source says (none by default), behind the token like every endpoint', async () => {
    assert.deepEqual((await getJson(server.url, '/api/microvms')).body, { workers: [] })
    let rss = 300 * 1048576
    const vms = await start({ port: 0, engineUrl: 'ws://127.0.0.1:9', appDir, microvms: () => [{ name: 'vm', vm_rss_bytes: rss }] })
    try {
      assert.deepEqual(await getJson(vms.url, '/api/microvms'), { status: 200, body: { workers: [{ name: 'vm', vm_rss_bytes: 300 * 1048576 }] } })
      rss = 310 * 1048576
      assert.equal((await getJson(vms.url, '/api/microvms')).body.workers[0].vm_rss_bytes, 310 * 1048576, 'read when asked')
      const anonymous = await fetch(vms.url + '/api/microvms')
      assert.equal(anonymous.status, 401)
      const post = await fetch(vms.url + '/api/microvms', { method: 'POST', headers: bearer(vms.url) })
      assert.equal(post.status, 405)
    } finally {
      await vms.close()
    }
  })

  it('serves while the engine is unreachable and says so', async () => {
    const info = await getJson(server.url, '/api/info')
    assert.deepEqual(info.body, { version: info.body.version, engine_url: 'ws://127.0.0.1:9', http_url: null, stream_url: null, connected: false })
    const invoke = await post(server.url, '/api/invoke', { function_id: 'math::add', payload: {} })
    assert.equal(invoke.body.error.code, 'engine_unreachable')
    const client = new LiveClient(server.url)
    await client.opened
    client.send({ subscribe: ['connection'] })
    const state = await client.next((f) => f.channel === 'connection', 'the connection state')
    assert.equal(state.data.connected, false)
    client.close()
  })

  it('serves the app: files by path, index.html for other paths, nothing outside the folder', async () => {
    const js = await fetch(server.url + '/assets/main.js')
    assert.equal(js.status, 200)
    assert.match(js.headers.get('content-type') ?? '', /javascript/)
    assert.equal(await js.text(), 'console.log(1)')
    for (const path of ['/', '/workers/abc', '/traces?id=1', '/..%2f..%2fsvc-console-secret.txt', '/%2e%2e/svc-console-secret.txt']) {
      const page = await fetch(server.url + path)
      assert.equal(page.status, 200, path)
      assert.match(await page.text(), /<div id="root">/, path)
    }
    assert.equal((await fetch(server.url + '/', { method: 'DELETE' })).status, 405)
  })

  it('says the app was not built when its folder is missing', async () => {
    const bare = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:9', appDir: join(appDir, 'missing') })
    try {
      const page = await fetch(bare.url + '/workers')
      assert.equal(page.status, 200)
      assert.match(await page.text(), /app was not built/)
    } finally {
      await bare.close()
    }
  })

  it('a port in use fails with the message of cli.md §4.8', async () => {
    await assert.rejects(startConsole({ port: server.port, engineUrl: 'ws://127.0.0.1:9' }), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'EADDRINUSE')
      assert.equal(err.message, `Port ${server.port} is already in use; pass --port`)
      return true
    })
  })
})

/** One raw HTTP/1.1 exchange over TCP with exactly the head lines given; the status and the text received. */
function rawExchange(port: number, head: string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(head.join('\r\n') + '\r\n\r\n', 'latin1'))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      text += chunk
      // An upgrade stays open: its head is the answer.
      if (/^HTTP\/1\.1 101 /.test(text) && text.includes('\r\n\r\n')) socket.destroy()
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text }))
  })
}

const UPGRADE = ['connection: Upgrade', 'upgrade: websocket', 'sec-websocket-version: 13', 'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==']

/** The JSON error envelope of a raw answer. */
function envelopeOf(text: string): { code: string; message: string } {
  return (JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } }).error
}

describe('svc console access: Host, Origin and the access token (issue 16 item 1)', () => {
  let server: RunningConsole
  let appDir: string
  const get = (path: string, headers: Record<string, string> = {}) => fetch(server.url + path, { headers, redirect: 'manual' })

  before(async () => {
    appDir = await mkdtemp(join(tmpdir(), 'svc-console-access-'))
    await writeFile(join(appDir, 'index.html'), '<!doctype html><title>app</title><div id="root"></div>')
    server = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:9', appDir, allowedHosts: ['Console.Test'], reconnect: { initialDelayMs: 50, maxDelayMs: 100 } })
  })

  after(async () => {
    await server?.close()
    await rm(appDir, { recursive: true, force: true })
  })

  it('refuses a DNS-rebinding page (Host and Origin evil.example) with 403 on the API, the app and both WebSockets', async () => {
    const evil = [`host: evil.example:${server.port}`, `origin: http://evil.example:${server.port}`, `authorization: Bearer ${server.token}`]
    const body = JSON.stringify({ function_id: 'configuration::set', payload: { id: 'svc-stream', value: { auth_function: null } } })
    const invoke = await rawExchange(server.port, ['POST /api/invoke HTTP/1.1', ...evil, 'content-type: application/json', `content-length: ${body.length}`, 'connection: close', '', body])
    assert.equal(invoke.status, 403)
    assert.equal(envelopeOf(invoke.text).code, 'CONSOLE_HOST_NOT_ALLOWED')
    assert.match(envelopeOf(invoke.text).message, new RegExp(`Host 'evil.example:${server.port}' is not one this console serves \\(localhost:${server.port}, 127\\.0\\.0\\.1:${server.port}, \\[::1\\]:${server.port}, console\\.test:${server.port}\\)`))
    for (const path of ['/', '/assets/app.js', '/api/info']) {
      assert.equal((await rawExchange(server.port, [`GET ${path} HTTP/1.1`, ...evil, 'connection: close'])).status, 403, path)
    }
    for (const path of ['/api/live', '/ws/streams']) {
      const refused = await rawExchange(server.port, [`GET ${path} HTTP/1.1`, ...evil, ...UPGRADE])
      assert.equal(refused.status, 403, path)
      assert.equal(envelopeOf(refused.text).code, 'CONSOLE_HOST_NOT_ALLOWED')
    }
  })

  it('serves localhost, 127.0.0.1, [::1] and allowed names on its own port only, and an Origin only of the same host', async () => {
    const status = async (host: string, origin?: string) =>
      (await rawExchange(server.port, ['GET /api/info HTTP/1.1', `host: ${host}`, ...(origin ? [`origin: ${origin}`] : []), `authorization: Bearer ${server.token}`, 'connection: close'])).status
    const p = server.port
    for (const host of [`localhost:${p}`, `127.0.0.1:${p}`, `[::1]:${p}`, `LOCALHOST:${p}`, `console.test:${p}`]) assert.equal(await status(host), 200, host)
    for (const host of [`localhost:${p + 1}`, 'localhost', `localhost.:${p}`, `127.0.0.1.nip.io:${p}`, `console.test.evil.example:${p}`, `evil.example:${p}@localhost`]) {
      assert.equal(await status(host), 403, host)
    }
    assert.equal(await status(`localhost:${p}`, `http://localhost:${p}`), 200)
    for (const origin of [`http://evil.example:${p}`, `http://127.0.0.1:${p}`, 'null', `http://localhost:${p + 1}`, `http://user@localhost:${p}`]) {
      assert.equal(await status(`localhost:${p}`, origin), 403, origin)
    }
  })

  it('needs the access token on the API and the WebSockets: 401 without it, a cookie from the token address, bearer for scripts', async () => {
    const missing = await get('/api/info')
    assert.equal(missing.status, 401)
    assert.equal(missing.headers.get('www-authenticate'), 'Bearer realm="svc console"')
    assert.deepEqual(await missing.json(), {
      error: { code: 'CONSOLE_TOKEN_REQUIRED', message: 'This console needs its access token: open the address svc console printed (it ends in /?token=…), or send Authorization: Bearer <token>' },
    })
    const wrong = await get('/api/info', { authorization: 'Bearer not-the-token-at-all' })
    assert.equal(wrong.status, 401)
    assert.match(((await wrong.json()) as { error: { message: string } }).error.message, /^The access token is wrong/)
    assert.equal((await get('/api/info', { authorization: `Bearer ${server.token}` })).status, 200)
    assert.equal((await rawExchange(server.port, ['GET /api/live HTTP/1.1', `host: 127.0.0.1:${server.port}`, ...UPGRADE])).status, 401)

    assert.match(server.openUrl, new RegExp(`^${server.url}/\\?token=[A-Za-z0-9_-]{32}$`))
    const opened = await fetch(`${server.url}/traces?token=${server.token}&id=7`, { redirect: 'manual' })
    assert.equal(opened.status, 302)
    assert.equal(opened.headers.get('location'), '/traces?id=7', 'the token leaves the address')
    const cookie = opened.headers.get('set-cookie')!
    assert.equal(cookie, `svc_console_token_${server.port}=${server.token}; Path=/; HttpOnly; SameSite=Strict`)
    const jar = cookie.split(';')[0]!
    assert.equal((await get('/api/info', { cookie: `other=1; ${jar}` })).status, 200)
    assert.equal((await rawExchange(server.port, ['GET /api/live HTTP/1.1', `host: 127.0.0.1:${server.port}`, `cookie: ${jar}`, ...UPGRADE])).status, 101)
    const offSite = await rawExchange(server.port, [`GET //evil.example/x?token=${server.token} HTTP/1.1`, `host: 127.0.0.1:${server.port}`, 'connection: close'])
    assert.match(offSite.text, /\r\nlocation: \/evil\.example\/x\r\n/i, 'the redirect stays on the console')
    const badLink = await get('/?token=guessed-token-value')
    assert.equal(badLink.status, 401)
    assert.match(await badLink.text(), /access token is wrong/)
    assert.equal((await get('/workers')).status, 200, 'the app itself loads without the token (it then asks for it)')
  })

  it('with the token off (token: false) the API is open to allowed hosts only', async () => {
    const open = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:9', token: false })
    try {
      assert.equal(open.token, undefined)
      assert.equal(open.openUrl, open.url)
      assert.equal((await fetch(`${open.url}/api/info`)).status, 200)
      assert.equal((await rawExchange(open.port, ['GET /api/info HTTP/1.1', `host: evil.example:${open.port}`, 'connection: close'])).status, 403)
    } finally {
      await open.close()
    }
  })

  it('refuses a token or an allowed host it cannot use', async () => {
    await assert.rejects(startConsole({ port: 0, token: 'short' }), /must be 16 to 512 of/)
    await assert.rejects(startConsole({ port: 0, allowedHosts: ['http://devbox:3113/'] }), /--allowed-host 'http:\/\/devbox:3113\/' is not a host name/)
  })

  it('closes a client whose request head or body trickles in (slowloris)', async () => {
    const slow = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:9', timeouts: { headersTimeoutMs: 300, requestTimeoutMs: 600 } })
    try {
      const head = await slowClient(slow.url, { first: `GET / HTTP/1.1\r\nHost: 127.0.0.1:${slow.port}\r\n`, deadlineMs: 10_000 })
      assert.ok(head.text === '' || /^HTTP\/1\.1 408/.test(head.text), head.text)
      const body = await slowClient(slow.url, {
        first: `POST /api/invoke HTTP/1.1\r\nHost: 127.0.0.1:${slow.port}\r\nAuthorization: Bearer ${slow.token}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"function_id":"`,
        next: () => 'x',
        deadlineMs: 10_000,
      })
      assert.ok(body.text === '' || /^HTTP\/1\.1 408/.test(body.text), body.text)
      assert.equal((await fetch(`${slow.url}/api/info`, { headers: { authorization: `Bearer ${slow.token}` } })).status, 200, 'still serving')
    } finally {
      await slow.close()
    }
  })

  it('fuzz: any Host and Origin on the API and on an upgrade passes only when both name this console', async () => {
    const p = () => server.port
    // Names with the canonical form the console compares, or null for names it must refuse.
    const name = fc.oneof(
      fc.constantFrom<[string, string | null]>(
        ['localhost', 'localhost'],
        ['LocalHost', 'localhost'],
        ['127.0.0.1', '127.0.0.1'],
        ['[::1]', '[::1]'],
        ['[0:0:0:0:0:0:0:1]', '[::1]'],
        ['console.test', 'console.test'],
        ['CONSOLE.TEST', 'console.test'],
        ['evil.example', null],
        ['localhost.', null],
        ['localhost.evil.example', null],
        ['127.0.0.1.nip.io', null],
        ['console.test.', null],
        ['[::2]', null],
        ['', null],
        ['evil.example@localhost', null],
      ),
      fc.string({ maxLength: 30 }).filter((s) => !/[\r\n\0]/.test(s)).map((s): [string, string | null] => [s, null]),
    )
    const port = fc.constantFrom('own', 'other', 'none', 'junk')
    const origin = fc.constantFrom('none', 'same', 'same-https', 'evil', 'null', 'other-port', 'loopback-other-name')
    await fc.assert(
      fc.asyncProperty(name, port, origin, fc.boolean(), async ([host, canonical], portKind, originKind, upgrade) => {
        const portText = { own: `:${p()}`, other: `:${p() + 1}`, none: '', junk: ':x1' }[portKind]
        const hostHeader = host + portText
        const originHeader = {
          none: undefined,
          same: `http://${canonical ?? host}${portText}`,
          'same-https': `https://${canonical ?? host}${portText}`,
          evil: `http://evil.example:${p()}`,
          null: 'null',
          'other-port': `http://${canonical ?? host}:${p() + 2}`,
          'loopback-other-name': `http://${canonical === 'localhost' ? '127.0.0.1' : 'localhost'}:${p()}`,
        }[originKind]
        const allowed = canonical !== null && portKind === 'own' && (originKind === 'none' || originKind === 'same' || originKind === 'same-https')
        const path = upgrade ? '/api/live' : '/api/info'
        const head = [`GET ${path} HTTP/1.1`, `host: ${hostHeader}`, ...(originHeader === undefined ? [] : [`origin: ${originHeader}`]), `authorization: Bearer ${server.token}`, ...(upgrade ? UPGRADE : ['connection: close'])]
        const { status, text } = await rawExchange(p(), head)
        const where = `${JSON.stringify(hostHeader)} origin ${JSON.stringify(originHeader)} ${path} → ${text.slice(0, 120)}`
        if (allowed) assert.equal(status, upgrade ? 101 : 200, where)
        else assert.ok(status === 403 || status === 400, where)
      }),
      { numRuns: 300 },
    )
    assert.equal((await get('/api/info', { authorization: `Bearer ${server.token}` })).status, 200, 'still serving')
  })
})

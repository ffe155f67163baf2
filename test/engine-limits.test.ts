/**
 * Listener limits and HTTP-invoked functions (protocol.md §2, §3.3, §3.4, §6.8), each against its
 * own engine so the limits can be small.
 */
import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker } from './support/raw-worker.ts'
import type { BuiltinWorker } from '../runtime/engine/types.ts'
import { waitFor } from './support/wait.ts'

const engines: TestEngine[] = []
const workers: RawWorker[] = []
after(async () => {
  await Promise.all(workers.map((w) => w.close()))
  await Promise.all(engines.map((e) => e.stop()))
})

async function engine(options: Parameters<typeof startTestEngine>[0]): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], ...options })
  engines.push(e)
  return e
}

describe('listener limits', () => {
  it('terminates a connection that stays silent past idle_timeout_ms, and cleans up its functions', async () => {
    const e = await engine({ listener: { ping_interval_ms: 50, idle_timeout_ms: 300 }, config: { registration_namespace_grace_ms: 10 } })
    const silent = new WebSocket(e.url, { autoPong: false })
    await new Promise((resolve) => silent.once('message', resolve))
    silent.send(JSON.stringify({ type: 'registerfunction', id: 'silent::fn' }))
    await waitFor(() => e.engine.functions.get('default', 'silent::fn') !== undefined, "e.engine.functions.get('default', 'silent::fn') !== undefined")
    const closed = await new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)))
    assert.equal(closed, 1006)
    await waitFor(() => e.engine.functions.get('default', 'silent::fn') === undefined, "e.engine.functions.get('default', 'silent::fn') === undefined")

    // A client that answers pings stays connected, well past the idle timeout (eight pings 50 ms apart).
    const lively = new WebSocket(e.url)
    let pings = 0
    lively.on('ping', () => pings++)
    await waitFor(() => pings >= 8 || lively.readyState === WebSocket.CLOSED, 'eight pings')
    assert.equal(lively.readyState, WebSocket.OPEN)
    lively.close()
  })

  it('closes with 1009 a connection that sends a frame over max_message_bytes', async () => {
    const e = await engine({ listener: { max_message_bytes: 1024 } })
    const w = await RawWorker.connect(e.url)
    workers.push(w)
    const closed = w.closed.then(({ code }) => code)
    w.send({ type: 'invokefunction', invocation_id: 'big', function_id: 'x', data: 'y'.repeat(2000) })
    assert.equal(await closed, 1009)
  })

  it('closes with 1009 an in-memory session that sends a frame over max_message_bytes', async () => {
    const e = await engine({ listener: { max_message_bytes: 1024 } })
    const w = await RawWorker.inProcess(e.engine)
    workers.push(w)
    w.send({ type: 'invokefunction', invocation_id: 'big', function_id: 'x', data: 'é'.repeat(600) })
    assert.equal((await w.closed).code, 1009)
  })

  it('resolves the namespace to default as soon as 10000 frames are held', async () => {
    const e = await engine({ config: { registration_namespace_grace_ms: 60000 } })
    const w = await RawWorker.connect(e.url)
    workers.push(w)
    for (let i = 0; i < 10000; i++) w.send({ type: 'registerfunction', id: `bulk::f${i}` })
    await waitFor(() => e.engine.functions.get('default', 'bulk::f9999') !== undefined, "e.engine.functions.get('default', 'bulk::f9999') !== undefined", 10000)
    assert.equal(e.engine.functions.get('default', 'bulk::f0')?.replicas.length, 1)
  })
})

describe('frames waiting to be handled are bounded in bytes (max_inbound_bytes, issue 16 item 5)', () => {
  const LIMIT = 256 * 1024

  it('closes with 1008 a connection that queues more than max_inbound_bytes while its auth function runs; other clients are served', async () => {
    const e = await engine({
      extraListeners: [{ max_inbound_bytes: LIMIT, rbac: { auth_function_id: 'gate::auth', expose_functions: ['health::echo'] } }],
      config: { registration_namespace_grace_ms: 10, internal_invocation_timeout_ms: 600000 },
    })
    const gate = await RawWorker.connect(e.url)
    workers.push(gate)
    let stalled = 0
    // The auth function never answers a connection that asks it to wait.
    gate.serve('gate::auth', (input: { headers: Record<string, string> }) => (input.headers['x-wait'] ? (stalled++, new Promise(() => {})) : {}))
    gate.serve('health::echo', (data: unknown) => data)
    await waitFor(() => e.engine.functions.get('default', 'health::echo') !== undefined && e.engine.functions.get('default', 'gate::auth') !== undefined, 'the condition')

    const flood = new WebSocket(e.urls[1]!, { headers: { 'x-wait': '1' } })
    const closed = new Promise<{ code: number; reason: string }>((resolve) => flood.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
    flood.on('error', () => {})
    await new Promise((resolve) => flood.once('open', resolve))
    await waitFor(() => stalled === 1, 'stalled === 1')
    // 40 calls of 16 KiB: 640 KiB, far below the 10,000-frame cap, well over the byte bound.
    const payload = 'p'.repeat(16 * 1024)
    for (let i = 0; i < 40 && flood.readyState === WebSocket.OPEN; i++) {
      flood.send(JSON.stringify({ type: 'invokefunction', invocation_id: `f${i}`, function_id: 'health::echo', data: payload }))
    }
    assert.deepEqual(await within(closed, 20000), { code: 1008, reason: `more than ${LIMIT} bytes of frames queued (max_inbound_bytes)` })

    // A client on the same listener whose auth answers gets in and is served.
    const polite = await RawWorker.connect(e.urls[1]!)
    workers.push(polite)
    assert.equal((await polite.call('health::echo', { ok: 1 })).result.ok, 1)
    assert.equal((await gate.call('health::echo', 'trusted')).result, 'trusted')
  })

  it('resolves the namespace to default as soon as the held frames exceed max_inbound_bytes', async () => {
    const e = await engine({ listener: { max_inbound_bytes: LIMIT }, config: { registration_namespace_grace_ms: 60000 } })
    const w = await RawWorker.connect(e.url)
    workers.push(w)
    // 8 × 48 KiB: the sixth frame takes the held bytes over 256 KiB.
    for (let i = 0; i < 8; i++) w.send({ type: 'registerfunction', id: `heavy::f${i}`, description: 'd'.repeat(48 * 1024) })
    await waitFor(() => e.engine.functions.get('default', 'heavy::f7') !== undefined, "e.engine.functions.get('default', 'heavy::f7') !== undefined", 10000)
    assert.equal(e.engine.functions.get('default', 'heavy::f0')?.replicas.length, 1)
    assert.equal(w.isOpen, true)
  })
})

/** `promise`, or a rejection once `ms` pass without it settling (a bound on a wait for a condition). */
function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms)
  })
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer))
}

describe('frames the engine would send over max_message_bytes (issue 16 item 7)', () => {
  // Callers on the second listener take frames of at most 4 KiB; workers on the first take 64 MiB.
  const SMALL = 4096
  async function twoListeners(): Promise<{ e: TestEngine; big: string; small: string }> {
    const e = await engine({ extraListeners: [{ max_message_bytes: SMALL }], config: { registration_namespace_grace_ms: 10 } })
    return { e, big: e.urls[0]!, small: e.urls[1]! }
  }
  async function connect(url: string): Promise<RawWorker> {
    const w = await RawWorker.connect(url)
    workers.push(w)
    return w
  }

  it('answers a relayed result over the caller\'s limit with RESULT_TOO_LARGE; the caller stays connected', async () => {
    const { e, big, small } = await twoListeners()
    const callee = await connect(big)
    callee.serve('big::result', (n: number) => 'x'.repeat(n))
    await waitFor(() => e.engine.functions.get('default', 'big::result') !== undefined, "e.engine.functions.get('default', 'big::result') !== undefined")
    const caller = await connect(small)
    const fits = await caller.call('big::result', SMALL - 200)
    assert.equal(fits.result.length, SMALL - 200)
    const over = await caller.call('big::result', SMALL)
    assert.equal(over.error.code, 'RESULT_TOO_LARGE')
    assert.match(over.error.message, new RegExp(`^result of \\d+ bytes exceeds max_message_bytes ${SMALL} of the caller's connection$`))
    assert.equal('result' in over, false)
    assert.equal(caller.isOpen, true)
    assert.equal((await caller.call('big::result', 10)).result, 'x'.repeat(10))
  })

  it('answers a built-in\'s result and an HTTP-invoked function\'s result over the limit with RESULT_TOO_LARGE', async () => {
    const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ text: 'y'.repeat(SMALL) })))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    after(() => new Promise<void>((resolve) => server.close(() => resolve())))
    const e = await engine({
      extraListeners: [{ max_message_bytes: SMALL }],
      config: { registration_namespace_grace_ms: 10, http_functions: { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true } },
    })
    const owner = await connect(e.urls[0]!)
    for (let i = 0; i < 40; i++) owner.send({ type: 'registerfunction', id: `many::f${i}`, description: 'd'.repeat(200) })
    owner.send({ type: 'registerfunction', id: 'remote::large', invocation: { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` } })
    await waitFor(() => e.engine.functions.get('default', 'remote::large') !== undefined && e.engine.functions.get('default', 'many::f39') !== undefined, 'the condition')
    const caller = await connect(e.urls[1]!)
    const listed = await caller.call('engine::functions::list', {})
    assert.equal(listed.error.code, 'RESULT_TOO_LARGE')
    const http = await caller.call('remote::large', {})
    assert.equal(http.error.code, 'RESULT_TOO_LARGE')
    assert.equal((await caller.call('engine::functions::info', { function_id: 'many::f0' })).result.function_id, 'many::f0')
    assert.equal(caller.isOpen, true)
  })

  it('answers a built-in\'s asynchronous result that JSON cannot write with an error instead of failing inside the engine', async () => {
    const odd: BuiltinWorker = {
      name: 'odd',
      async start(context) {
        context.worker.registerFunction('odd::bigint', async () => ({ n: 1n }))
        context.worker.registerFunction('odd::huge', async () => 'h'.repeat(SMALL))
      },
      async applySettings() {},
      async stop() {},
    }
    const e = await engine({ builtins: [odd], extraListeners: [{ max_message_bytes: SMALL }] })
    const caller = await connect(e.urls[1]!)
    const bigint = await caller.call('odd::bigint', {})
    assert.equal(bigint.error.code, 'invocation_failed')
    assert.match(bigint.error.message, /^result is not JSON-serialisable: /)
    assert.equal((await caller.call('odd::huge', {})).error.code, 'RESULT_TOO_LARGE')
    assert.equal(caller.isOpen, true)
  })

  it('cuts an error over the caller\'s limit to its code and the start of its message', async () => {
    const { e, big, small } = await twoListeners()
    const callee = await connect(big)
    callee.serve('big::error', () => {
      throw Object.assign(new Error('e'.repeat(2 * SMALL)), { code: 'ORDER_TOO_BIG', retry_after_ms: 5 })
    })
    await waitFor(() => e.engine.functions.get('default', 'big::error') !== undefined, "e.engine.functions.get('default', 'big::error') !== undefined")
    const caller = await connect(small)
    const answer = await caller.call('big::error', null)
    assert.equal(answer.error.code, 'ORDER_TOO_BIG')
    assert.equal(answer.error.retry_after_ms, 5)
    assert.match(answer.error.message, new RegExp(`^e{1024}… \\(an error of \\d+ bytes, cut to fit max_message_bytes ${SMALL}\\)$`))
    assert.equal(caller.isOpen, true)
  })

  it('fails an invocation whose frame the callee could not take with PAYLOAD_TOO_LARGE; the callee stays connected', async () => {
    const { e, big, small } = await twoListeners()
    const callee = await connect(small)
    callee.serve('small::echo', (data) => data)
    await waitFor(() => e.engine.functions.get('default', 'small::echo') !== undefined, "e.engine.functions.get('default', 'small::echo') !== undefined")
    // From a built-in (engine-originated) and from a worker on a listener with a higher limit.
    await assert.rejects(e.engine.inject({ function_id: 'small::echo', data: 'p'.repeat(SMALL) }), (err: { code: string; message: string }) => {
      assert.equal(err.code, 'PAYLOAD_TOO_LARGE')
      assert.match(err.message, new RegExp(`^invocation of \\d+ bytes exceeds max_message_bytes ${SMALL} of the worker connection it goes to$`))
      return true
    })
    const caller = await connect(big)
    assert.equal((await caller.call('small::echo', 'p'.repeat(SMALL))).error.code, 'PAYLOAD_TOO_LARGE')
    assert.equal(callee.isOpen, true)
    assert.equal((await caller.call('small::echo', 'fits')).result, 'fits')
    assert.equal(e.engine.openSessions().every((s) => s.executing.size === 0), true)
  })

  it('fails a binding whose config the provider could not take', async () => {
    const { e, small } = await twoListeners()
    const provider = await connect(small)
    provider.send({ type: 'registertriggertype', id: 'webhook', description: '' })
    await waitFor(() => [...e.engine.triggers.providers()].some((p) => p.typeId === 'webhook'), "[...e.engine.triggers.providers()].some((p) => p.typeId === 'webhook')")
    await assert.rejects(
      e.engine.inject({ function_id: 'engine::register_trigger', data: { trigger_type: 'webhook', function_id: 'any::fn', config: { blob: 'c'.repeat(SMALL) } } }),
      (err: { code: string; message: string }) => {
        assert.equal(err.code, 'trigger_registration_failed')
        assert.match(err.message, /^PAYLOAD_TOO_LARGE: trigger config of \d+ bytes exceeds max_message_bytes 4096/)
        return true
      },
    )
    assert.equal(provider.isOpen, true)
  })
})

describe('HTTP-invoked functions', () => {
  let server: Server
  let received: IncomingMessage[] = []
  let bodies: string[] = []
  let respond: (req: IncomingMessage) => { status: number; body: string } = () => ({ status: 200, body: '{"ok":true}' })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  async function start(): Promise<string> {
    server = createServer((req, res) => {
      let body = ''
      req.on('data', (c) => (body += c))
      req.on('end', () => {
        received.push(req)
        bodies.push(body)
        const { status, body: out } = respond(req)
        res.writeHead(status, { 'content-type': 'application/json' }).end(out)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  it('calls the URL with the payload, signed headers and trace context, and maps the answer', async () => {
    const base = await start()
    process.env.SVC_TEST_HMAC = 'sekret'
    const e = await engine({ config: { http_functions: { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true } } })
    const owner = await RawWorker.connect(e.url)
    const caller = await RawWorker.connect(e.url)
    workers.push(owner, caller)
    owner.send({
      type: 'registerfunction',
      id: 'remote::charge',
      invocation: { url: `${base}/charge`, method: 'POST', headers: { 'x-team': 'billing' }, auth: { type: 'hmac', secret_key: 'SVC_TEST_HMAC' } },
    })
    await waitFor(() => e.engine.functions.get('default', 'remote::charge') !== undefined, "e.engine.functions.get('default', 'remote::charge') !== undefined")

    const ok = await caller.call('remote::charge', { amount: 5 }, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' })
    assert.deepEqual(ok.result, { ok: true })
    const req = received.at(-1)!
    assert.equal(req.url, '/charge')
    assert.equal(bodies.at(-1), '{"amount":5}')
    assert.equal(req.headers['x-svc-function-id'], 'remote::charge')
    assert.equal(req.headers['x-team'], 'billing')
    assert.equal(req.headers.traceparent, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')
    const expected = createHmac('sha256', 'sekret').update(`${req.headers['x-svc-timestamp']}.{"amount":5}`).digest('hex')
    assert.equal(req.headers['x-svc-signature'], `sha256=${expected}`)

    respond = () => ({ status: 402, body: '{"error":{"code":"card_declined","message":"insufficient funds"}}' })
    assert.deepEqual((await caller.call('remote::charge', {})).error, { code: 'card_declined', message: 'insufficient funds' })
    respond = () => ({ status: 500, body: 'oops' })
    assert.deepEqual((await caller.call('remote::charge', {})).error, { code: 'http_error', message: 'HTTP 500 Internal Server Error' })
    respond = () => ({ status: 200, body: 'not json' })
    assert.equal((await caller.call('remote::charge', {})).error.code, 'invalid_response')
    respond = () => ({ status: 200, body: '' })
    const empty = await caller.call('remote::charge', {})
    assert.equal(empty.error, undefined)
    assert.equal('result' in empty, false)
  })

  it('refuses URLs outside the http_functions policy and unset secrets', async () => {
    const e = await engine({})
    const owner = await RawWorker.connect(e.url)
    const caller = await RawWorker.connect(e.url)
    workers.push(owner, caller)
    owner.send({ type: 'registerfunction', id: 'remote::plain', invocation: { url: 'http://127.0.0.1:9/x' } })
    owner.send({ type: 'registerfunction', id: 'remote::private', invocation: { url: 'https://127.0.0.1:9/x' } })
    await waitFor(() => e.engine.functions.get('default', 'remote::private') !== undefined, "e.engine.functions.get('default', 'remote::private') !== undefined")
    const plain = await caller.call('remote::plain', {})
    assert.equal(plain.error.code, 'url_validation_failed')
    assert.match(plain.error.message, /^URL http:\/\/127\.0\.0\.1:9\/x is not allowed: /)
    assert.equal((await caller.call('remote::private', {})).error.code, 'url_validation_failed')

    const lenient = await engine({ config: { http_functions: { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true } } })
    const o2 = await RawWorker.connect(lenient.url)
    workers.push(o2)
    o2.send({ type: 'registerfunction', id: 'remote::secret', invocation: { url: 'http://127.0.0.1:9/x', auth: { type: 'bearer', token_key: 'SVC_TEST_UNSET_TOKEN' } } })
    o2.send({ type: 'registerfunction', id: 'remote::down', invocation: { url: 'http://127.0.0.1:9/x', timeout_ms: 2000 } })
    await waitFor(() => lenient.engine.functions.get('default', 'remote::down') !== undefined, "lenient.engine.functions.get('default', 'remote::down') !== undefined")
    const c2 = await RawWorker.connect(lenient.url)
    workers.push(c2)
    assert.deepEqual((await c2.call('remote::secret', {})).error, { code: 'secret_not_set', message: 'Environment variable SVC_TEST_UNSET_TOKEN is not set' })
    assert.equal((await c2.call('remote::down', {})).error.code, 'http_request_failed')
  })
})

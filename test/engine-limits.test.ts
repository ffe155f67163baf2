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
import { RawWorker, eventually } from './support/raw-worker.ts'

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
    await eventually(() => e.engine.functions.get('default', 'silent::fn') !== undefined)
    const closed = await new Promise<number>((resolve) => silent.once('close', (code) => resolve(code)))
    assert.equal(closed, 1006)
    await eventually(() => e.engine.functions.get('default', 'silent::fn') === undefined)

    // A client that answers pings stays connected.
    const lively = await RawWorker.connect(e.url)
    workers.push(lively)
    await new Promise((r) => setTimeout(r, 400))
    assert.equal(lively.isOpen, true)
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
    await eventually(() => e.engine.functions.get('default', 'bulk::f9999') !== undefined, 10000)
    assert.equal(e.engine.functions.get('default', 'bulk::f0')?.replicas.length, 1)
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
    await eventually(() => e.engine.functions.get('default', 'remote::charge') !== undefined)

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
    await eventually(() => e.engine.functions.get('default', 'remote::private') !== undefined)
    const plain = await caller.call('remote::plain', {})
    assert.equal(plain.error.code, 'url_validation_failed')
    assert.match(plain.error.message, /^URL http:\/\/127\.0\.0\.1:9\/x is not allowed: /)
    assert.equal((await caller.call('remote::private', {})).error.code, 'url_validation_failed')

    const lenient = await engine({ config: { http_functions: { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true } } })
    const o2 = await RawWorker.connect(lenient.url)
    workers.push(o2)
    o2.send({ type: 'registerfunction', id: 'remote::secret', invocation: { url: 'http://127.0.0.1:9/x', auth: { type: 'bearer', token_key: 'SVC_TEST_UNSET_TOKEN' } } })
    o2.send({ type: 'registerfunction', id: 'remote::down', invocation: { url: 'http://127.0.0.1:9/x', timeout_ms: 2000 } })
    await eventually(() => lenient.engine.functions.get('default', 'remote::down') !== undefined)
    const c2 = await RawWorker.connect(lenient.url)
    workers.push(c2)
    assert.deepEqual((await c2.call('remote::secret', {})).error, { code: 'secret_not_set', message: 'Environment variable SVC_TEST_UNSET_TOKEN is not set' })
    assert.equal((await c2.call('remote::down', {})).error.code, 'http_request_failed')
  })
})

/**
 * The browser transport and facade over a WHATWG `WebSocket` — Node's global one, which follows the
 * same standard as a browser's (no upgrade headers, no ping frames, close codes 1000/3000–4999) —
 * against a real engine and raw `ws` servers: the page-side behaviour that needs no browser
 * (handshake deadline, keepalive by JSON ping frames, close arguments, binary frames, a token kept
 * out of error messages). The same code in Chromium: `browser.test.ts`.
 */
import assert from 'node:assert/strict'
import { createServer, type Server, type Socket } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { WebSocketServer, type WebSocket as WsSocket } from 'ws'
import { registerWorker as registerNodeWorker } from 'svc-sdk'
import type { Transport } from 'svc-protocol/client'
import { startTestEngine } from '../../../test/support/engine.ts'
import { BrowserClient, type ClientInternals } from '../src/client.ts'
import { resolveAddress, resolveOptions } from '../src/options.ts'
import { browserConnector, connectBrowserWebSocket } from '../src/transport.ts'
import type { InitOptions } from '../src/types.ts'
import { SDK_VERSION } from '../src/version.ts'
import { waitFor } from '../../../test/support/wait.ts'

const quiet = { warn: () => {} }

function client(t: TestContext, address: string, options: InitOptions = {}, internals: ClientInternals = {}): BrowserClient {
  const c = new BrowserClient(resolveAddress(address), resolveOptions(options), { log: quiet, ...internals })
  t.after(() => c.shutdown())
  return c
}

/**
 * A raw WebSocket server standing in for the engine: `sockets` are its accepted connections,
 * `texts` the text frames they received; `onText` answers them.
 */
async function rawServer(t: TestContext, onText: (ws: WsSocket, text: string) => void = () => {}): Promise<{ url: string; sockets: WsSocket[]; texts: string[] }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
  await new Promise<void>((resolve) => wss.once('listening', resolve))
  const sockets: WsSocket[] = []
  const texts: string[] = []
  wss.on('connection', (ws) => {
    sockets.push(ws)
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      texts.push(data.toString())
      onText(ws, data.toString())
    })
  })
  t.after(() => new Promise<void>((resolve) => {
    for (const ws of wss.clients) ws.terminate()
    wss.close(() => resolve())
  }))
  return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/`, sockets, texts }
}

/** Opens one transport with the global WebSocket and records what it reports. */
function open(url: string, handshakeTimeoutMs?: number) {
  const events: Array<{ type: string; code?: number; reason?: string; data?: string | Uint8Array; binary?: boolean; error?: Error }> = []
  const transport: Transport = connectBrowserWebSocket(url, handshakeTimeoutMs === undefined ? {} : { handshakeTimeoutMs })
  transport.setHandlers({
    open: () => events.push({ type: 'open' }),
    message: (data, binary) => events.push({ type: 'message', data, binary }),
    error: (error) => events.push({ type: 'error', error }),
    close: (code, reason) => events.push({ type: 'close', code, reason }),
  })
  return { transport, events }
}

describe('svc-browser-sdk over a WHATWG WebSocket, against a real engine', () => {
  it('a page worker registers functions a Node worker invokes, calls Node functions, and announces itself as a browser', async (t) => {
    const e = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 10 } })
    t.after(() => e.stop())
    const node = registerNodeWorker(e.url, { workerName: 'node-side', otel: { enabled: false } })
    t.after(() => node.shutdown())
    node.registerFunction('node::greet', ({ name }: { name: string }) => ({ greeting: `hello ${name}` }))

    const page = client(t, e.url, { workerName: 'page-1', workerDescription: 'a test page' })
    page.registerFunction('browser::double', (n: number) => n * 2)
    page.registerFunction('browser::fails', () => {
      throw Object.assign(new Error('no such thing'), { code: 'NOT_HERE' })
    })
    await waitFor(() => page.getConnectionState() === 'connected', "page.getConnectionState() === 'connected'", 10_000)
    await waitFor(async () => (await node.trigger({ function_id: 'engine::functions::list', payload: {} }) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === 'browser::double'), 'the condition', 10_000)

    assert.equal(await node.trigger({ function_id: 'browser::double', payload: 21 }), 42)
    await assert.rejects(node.trigger({ function_id: 'browser::fails', payload: {} }), (err: Error & { code?: string }) => err.code === 'NOT_HERE' && err.message === 'NOT_HERE: no such thing')
    assert.deepEqual(await page.trigger({ function_id: 'node::greet', payload: { name: 'page' } }), { greeting: 'hello page' })

    const { workers } = (await node.trigger({ function_id: 'engine::workers::list', payload: {} })) as { workers: Array<Record<string, unknown>> }
    const me = workers.find((w) => w.name === 'page-1')!
    assert.equal(me.runtime, 'browser')
    assert.equal(me.version, SDK_VERSION)
    assert.equal(me.description, 'a test page')
    assert.equal(me.pid, null)
    assert.equal(me.os, navigator.userAgent)
  })

  it('keeps a quiet connection alive with JSON ping frames, and reconnects when they go unanswered (protocol.md §3.3)', async (t) => {
    let answering = true
    const server = await rawServer(t, (ws, text) => {
      if (answering && text === '{"type":"ping"}') ws.send('{"type":"pong"}')
    })
    const page = client(t, server.url, {}, { timings: { pingIntervalMs: 50, idleTimeoutMs: 400 }, random: () => 0.5 })
    await waitFor(() => page.getConnectionState() === 'connected', "page.getConnectionState() === 'connected'", 5000)
    await waitFor(() => server.texts.filter((f) => f === '{"type":"ping"}').length >= 16, 'server.texts.filter((f) => f === \'{"type":"ping"}\').length >= 16', 10_000)
    assert.equal(page.getConnectionState(), 'connected', 'pongs kept it up across several idle timeouts')
    assert.equal(server.sockets.length, 1, 'one connection all along')
    answering = false
    await waitFor(() => server.sockets.length === 2, 'server.sockets.length === 2', 5000)
    assert.equal((page.getLastError() as Error & { code?: string })?.code, 'TIMEOUT')
  })
})

describe('the browser transport', () => {
  it('gives up an opening handshake that does not finish by its deadline, naming the address without its query', async (t) => {
    // Accepts TCP connections and never answers the upgrade.
    const held: Socket[] = []
    const silent: Server = createServer((socket) => held.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    t.after(() => {
      for (const s of held) s.destroy()
      silent.close()
    })
    // Credentials in the user part too: neither they nor the query may reach a message.
    const url = `ws://user:hunter2@127.0.0.1:${(silent.address() as { port: number }).port}/page?token=s3cret`
    const { events } = open(url, 100)
    await waitFor(() => events.some((e) => e.type === 'close'), "events.some((e) => e.type === 'close')", 5000)
    assert.deepEqual(events.map((e) => e.type), ['error', 'close'])
    const error = events[0]!.error as Error & { code?: string }
    assert.equal(error.code, 'TIMEOUT')
    assert.equal(error.message, `handshake with ws://127.0.0.1:${(silent.address() as { port: number }).port}/page timed out after 100ms`)
    assert.equal(events[1]!.code, 1006)

    // Through the facade: the client reconnects and keeps the timeout for getLastError().
    const page = client(t, url, { reconnectionConfig: { initialDelayMs: 10, maxDelayMs: 10 } }, { timings: { handshakeTimeoutMs: 100 } })
    await waitFor(() => (page.getLastError() as { code?: string } | undefined)?.code === 'TIMEOUT', "(page.getLastError() as { code?: string } | undefined)?.code === 'TIMEOUT'", 5000)
    assert.doesNotMatch(page.getLastError()!.message, /s3cret|hunter2/)
  })

  it('delivers text and binary frames in order, binary as Uint8Array; sends both; reports bufferedAmount', async (t) => {
    const server = await rawServer(t)
    const received: Array<{ data: Buffer; binary: boolean }> = []
    const { transport, events } = open(server.url)
    await waitFor(() => events.some((e) => e.type === 'open') && server.sockets.length === 1, "events.some((e) => e.type === 'open') && server.sockets.length === 1", 5000)
    const ws = server.sockets[0]!
    ws.on('message', (data, binary) => received.push({ data: data as Buffer, binary }))
    ws.send('{"type":"ping"}')
    ws.send(Buffer.from([0, 1, 2, 255]), { binary: true })
    ws.send('é')
    await waitFor(() => events.filter((e) => e.type === 'message').length === 3, "events.filter((e) => e.type === 'message').length === 3", 5000)
    const messages = events.filter((e) => e.type === 'message')
    assert.deepEqual(messages.map((m) => [m.data, m.binary]), [['{"type":"ping"}', false], [new Uint8Array([0, 1, 2, 255]), true], ['é', false]])
    assert.ok(messages[1]!.data instanceof Uint8Array)

    assert.equal(transport.bufferedAmount, 0)
    assert.equal(transport.isOpen, true)
    transport.send('{"type":"pong"}')
    transport.sendBinary!(new Uint8Array([9, 8]))
    await waitFor(() => received.length === 2, 'received.length === 2', 5000)
    assert.deepEqual(received.map((r) => [r.binary, [...r.data]]), [[false, [...Buffer.from('{"type":"pong"}')]], [true, [9, 8]]])
    assert.throws(() => transport.send(42 as unknown as string), TypeError)
    assert.throws(() => transport.sendBinary!('x' as unknown as Uint8Array), TypeError)
  })

  it('closes with the codes a page may send, refuses others, and drops a connection that is not open yet', async (t) => {
    const server = await rawServer(t)
    const closes: Array<[number, string]> = []
    const { transport, events } = open(server.url)
    await waitFor(() => events.some((e) => e.type === 'open') && server.sockets.length === 1, "events.some((e) => e.type === 'open') && server.sockets.length === 1", 5000)
    server.sockets[0]!.on('close', (code, reason) => closes.push([code, reason.toString()]))
    assert.throws(() => transport.close(1001), /close code 1001 cannot be sent from a browser: use 1000 or 3000–4999/)
    assert.throws(() => transport.close(1000, 'é'.repeat(62)), RangeError)
    assert.equal(transport.isOpen, true, 'a refused close leaves the connection open')
    transport.close(4001, 'bye')
    assert.equal(transport.isOpen, false)
    transport.send('dropped: not open any more')
    await waitFor(() => events.some((e) => e.type === 'close'), "events.some((e) => e.type === 'close')", 5000)
    assert.deepEqual(events.find((e) => e.type === 'close'), { type: 'close', code: 4001, reason: 'bye' })
    await waitFor(() => closes.length === 1, 'closes.length === 1', 5000)
    assert.deepEqual(closes, [[4001, 'bye']])

    const early = open(server.url)
    early.transport.close(1000)
    await waitFor(() => early.events.some((e) => e.type === 'close'), "early.events.some((e) => e.type === 'close')", 5000)
    assert.deepEqual(early.events.map((e) => [e.type, e.code]), [['close', 1006]])
    const other = await rawServer(t)
    const terminated = open(other.url)
    await waitFor(() => terminated.events.some((e) => e.type === 'open') && other.sockets.length === 1, "terminated.events.some((e) => e.type === 'open') && other.sockets.length === 1", 5000)
    let serverSawEnd = false
    other.sockets[0]!.on('close', () => (serverSawEnd = true))
    terminated.transport.terminate()
    terminated.transport.terminate()
    assert.equal(terminated.transport.isOpen, false)
    terminated.transport.send('dropped')
    // Until the connection is gone on both sides: the socket's own close event is detached.
    await waitFor(() => serverSawEnd && terminated.events.some((e) => e.type === 'close'), "serverSawEnd && terminated.events.some((e) => e.type === 'close')", 5000)
    assert.deepEqual(terminated.events.map((e) => [e.type, e.code]), [['open', undefined], ['close', 1006]], 'close (1006), once')
  })

  it('holds events that arrive before the first setHandlers, and says when there is no WebSocket at all', async (t) => {
    const server = await rawServer(t)
    const transport = connectBrowserWebSocket(server.url, {})
    // Open (the socket's open event has fired) before anyone listens.
    await waitFor(() => transport.isOpen && server.sockets.length === 1, 'transport.isOpen && server.sockets.length === 1', 5000)
    const seen: string[] = []
    transport.setHandlers({ open: () => seen.push('open'), message: (data) => seen.push(String(data)), close: () => seen.push('close') })
    assert.deepEqual(seen, ['open'], 'the held open event is delivered to the first handlers')
    server.sockets[0]!.send('later')
    await waitFor(() => seen.length === 2, 'seen.length === 2', 5000)
    assert.deepEqual(seen, ['open', 'later'])
    transport.close(1000)

    const saved = globalThis.WebSocket
    try {
      // @ts-expect-error: a platform without WebSocket
      delete globalThis.WebSocket
      assert.throws(() => browserConnector()('ws://127.0.0.1:1/', {}), /no WebSocket on this platform/)
    } finally {
      globalThis.WebSocket = saved
    }
  })
})

describe('registerWorker options in a browser (sdk.md §13)', () => {
  it('requires a ws:/wss: address; ignores headers with one warning; names the worker browser:<8 hex>', (t) => {
    assert.throws(() => resolveAddress(undefined), /engine address is required in a browser/)
    assert.throws(() => resolveAddress('http://127.0.0.1:49134/'), /must be a ws:\/\/ or wss:\/\/ URL, got http:/)
    assert.throws(() => resolveAddress('/relative'), /not a URL/)
    assert.deepEqual(resolveAddress('wss://svc.example.com/browser?token=a%20b'), ['wss://svc.example.com/browser?token=a%20b'])
    // Several engines of a fleet (issue 19 §3): every entry checked, none shown with its token.
    assert.deepEqual(resolveAddress(['wss://a.example/?token=t', 'wss://b.example/?token=t']), ['wss://a.example/?token=t', 'wss://b.example/?token=t'])
    assert.throws(() => resolveAddress([]), /list is empty/)
    assert.throws(() => resolveAddress(['wss://a.example/?token=t', '']), /engine address 2 of 2 is empty/)
    assert.throws(() => resolveAddress(['wss://a.example/', 'https://b.example/?token=s3cret']), (err: Error) => /2 of 2 must be a ws:\/\/ or wss:\/\/ URL, got https: \(https:\/\/b\.example\/\)/.test(err.message) && !err.message.includes('s3cret'))
    assert.throws(() => resolveAddress('token=s3cret'), (err: Error) => /not a URL/.test(err.message) && !err.message.includes('s3cret'))

    const resolved = resolveOptions({})
    assert.match(resolved.workerName, /^browser:[0-9a-f]{8}$/)
    assert.notEqual(resolveOptions({}).workerName, resolved.workerName)
    assert.equal(resolved.invocationTimeoutMs, 30000)
    assert.deepEqual(resolved.reconnection, { initialDelayMs: 1000, maxDelayMs: 30000, backoffMultiplier: 2, jitterFactor: 0.3, maxRetries: -1 })

    const warnings: string[] = []
    const c = new BrowserClient('ws://127.0.0.1:1/', resolveOptions({ headers: { authorization: 'Bearer x' }, reconnectionConfig: { maxRetries: 0 } }), { log: { warn: (m) => warnings.push(m) } })
    t.after(() => c.shutdown())
    assert.deepEqual(warnings.filter((w) => w.includes('headers')), [
      'the headers option is ignored in browsers: pass credentials as query parameters in the address (wss://…/?token=…) or with cookies',
    ])
    assert.throws(() => c.registerFunction('browser::http', { url: 'https://example.com/' } as never), /takes a handler function in a browser/)
  })
})

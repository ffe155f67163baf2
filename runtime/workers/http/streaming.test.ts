/**
 * Streamed HTTP bodies end to end (builtins.md §3.4, §3.5, §3.7; protocol.md §9 "HTTP bodies"):
 * svc-http runs in a real engine, a raw WebSocket worker serves the routes, and the test holds
 * the handler's side of the `request_body` and `response` channels with raw `ws` sockets on
 * `/ws/channels/…`, while real HTTP clients send and read over sockets.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import type { ChannelRef } from 'svc-protocol'
import { channelUrl, ChannelSocket } from '../../../test/support/channel-client.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import type { Invocation } from '../../engine/pipeline.ts'
import { HttpWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** The worker's own limit is small: streamed routes must get past it, buffered ones must not. */
const SETTINGS = { port: 0, max_body_bytes: 1024 * 1024 }

let t: TestEngine
let w: RawWorker
let http: HttpWorker
const { log, entries } = recordingLogger()
const sockets: Array<{ terminate(): void }> = []
let triggerSeq = 0

const base = () => t.engine.listenUrls('svc-http')[0]!

/** One invocation of a captured handler, answered when the test says so. */
interface Call {
  data: { body: unknown; request_body: ChannelRef; response: ChannelRef; [key: string]: unknown }
  answer(result: unknown): void
  fail(code: string, message: string): void
}

/** Serves `id` from the raw worker; each invocation waits in a queue until the test takes and answers it. */
function capture(id: string): { next(): Promise<Call>; count(): number } {
  const calls: Call[] = []
  const waiters: Array<(call: Call) => void> = []
  let count = 0
  w.serve(
    id,
    (data) =>
      new Promise((resolve, reject) => {
        count++
        const call: Call = { data, answer: resolve, fail: (code, message) => reject(Object.assign(new Error(message), { code })) }
        const waiter = waiters.shift()
        if (waiter) waiter(call)
        else calls.push(call)
      }),
  )
  return {
    next: () => {
      const call = calls.shift()
      return call ? Promise.resolve(call) : new Promise((resolve) => waiters.push(resolve))
    },
    count: () => count,
  }
}

async function route(functionId: string, config: Record<string, unknown>): Promise<void> {
  w.send({ type: 'registertrigger', id: `stream-trigger-${++triggerSeq}`, trigger_type: 'http', function_id: functionId, config })
  await w.call('engine::workers::list', {})
}

/** The handler's end of a channel, as a raw socket on the engine's worker listener. */
async function end(ref: ChannelRef): Promise<ChannelSocket> {
  const socket = await ChannelSocket.open(t.url, ref)
  sockets.push(socket.ws)
  return socket
}

/**
 * An HTTP exchange as the client sees it: the request (written by the test), the response head,
 * and the body bytes as they arrive, with a way to wait for a given amount of them.
 */
class Client {
  readonly req: ClientRequest
  readonly response: Promise<IncomingMessage>
  /** Settles when the response body ended (`complete`) or broke off (`aborted`). */
  readonly ended: Promise<'complete' | 'aborted'>
  private readonly chunks: Buffer[] = []
  private waiters: Array<() => void> = []

  constructor(path: string, options: { method?: string; headers?: OutgoingHttpHeaders } = {}) {
    this.req = httpRequest(new URL(path, base()), { method: options.method ?? 'GET', headers: options.headers, agent: false })
    let settle!: (how: 'complete' | 'aborted') => void
    this.ended = new Promise((resolve) => (settle = resolve))
    this.response = new Promise((resolve, reject) => {
      this.req.on('response', (res) => {
        res.on('data', (chunk: Buffer) => {
          this.chunks.push(chunk)
          for (const waiter of this.waiters.splice(0)) waiter()
        })
        res.on('end', () => settle('complete'))
        res.on('error', () => settle('aborted'))
        res.on('close', () => settle(res.complete ? 'complete' : 'aborted'))
        resolve(res)
      })
      this.req.on('error', (err) => {
        settle('aborted')
        reject(err)
      })
    })
    this.response.catch(() => {})
  }

  get body(): Buffer {
    return Buffer.concat(this.chunks)
  }

  get text(): string {
    return this.body.toString('utf8')
  }

  /** Resolves once `check` holds for the body received so far. */
  async until(check: (text: string) => boolean): Promise<void> {
    while (!check(this.text)) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }
}

/** A request with `body` sent whole; resolves with status, headers and body text. */
async function send(path: string, options: { method?: string; headers?: OutgoingHttpHeaders; body?: Buffer | string } = {}) {
  const client = new Client(path, options)
  client.req.end(options.body)
  const res = await client.response
  await client.ended
  return { status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, text: client.text }
}

/** Header values of `name` as separate lines. */
function lines(rawHeaders: string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) out.push(rawHeaders[i + 1]!)
  return out
}

/** Every channel of the exchanges so far is gone (§9: removed when the exchange ends). */
const noChannelsLeft = () => waitFor(() => t.engine.channels.size === 0, 't.engine.channels.size === 0')

/** A reader that hashes binary items as they come instead of keeping them. */
function hashingReader(ref: ChannelRef): Promise<{ code: number; bytes: number; sha256: string }> {
  const ws = new WebSocket(channelUrl(t.url, ref), { perMessageDeflate: false })
  sockets.push(ws)
  const hash = createHash('sha256')
  let bytes = 0
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    if (!isBinary) return
    bytes += data.length
    hash.update(data)
  })
  ws.on('error', () => {})
  return new Promise((resolve) => ws.once('close', (code: number) => resolve({ code, bytes, sha256: hash.digest('hex') })))
}

/** Deterministic pseudo-random bytes: `size` bytes from seed `seed` (xorshift32). */
function bytesOf(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(Math.ceil(size / 4) * 4)
  let x = seed || 1
  for (let i = 0; i < out.length; i += 4) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out.writeInt32LE(x | 0, i)
  }
  return out.subarray(0, size)
}

before(async () => {
  http = new HttpWorker()
  t = await startTestEngine({ builtins: [http], settings: { 'svc-http': SETTINGS }, log })
  w = await RawWorker.connect(t.url, { announce: { name: 'streaming-test', runtime: 'node' } })
})

after(async () => {
  for (const socket of sockets) socket.terminate()
  await w?.close()
  await t?.stop()
})

describe('streamed responses (builtins.md §3.7)', () => {
  it('server-sent events: each event reaches the client before the handler writes the next', async () => {
    const handler = capture('sse::events')
    await route('sse::events', { api_path: '/events' })
    const client = new Client('/events')
    client.req.end()
    const call = await handler.next()
    call.answer(null) // a handler that hands its response to a stream and returns
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } }))
    let expected = ''
    for (let i = 1; i <= 5; i++) {
      const event = `id: ${i}\ndata: {"n":${i}}\n\n`
      writer.send(Buffer.from(event))
      expected += event
      // Event i is read by the client before event i + 1 is written: nothing is held back.
      await client.until((text) => text.length >= expected.length)
      assert.equal(client.text, expected)
      if (i === 1) {
        const res = await client.response
        assert.equal(res.statusCode, 200)
        assert.equal(res.headers['content-type'], 'text/event-stream')
        assert.equal(res.headers['cache-control'], 'no-cache')
        assert.equal(res.headers['transfer-encoding'], 'chunked')
        assert.equal(res.headers['content-length'], undefined)
      }
    }
    writer.ws.close(1000)
    assert.equal(await client.ended, 'complete')
    assert.equal(client.text, expected)
    assert.equal((await writer.closed).code, 1000)
    await noChannelsLeft()
  })

  it('a chunked binary response: status and merged headers from control items, the bytes as written', async () => {
    const handler = capture('bin::download')
    await route('bin::download', { api_path: '/download' })
    const client = new Client('/download')
    client.req.end()
    const call = await handler.next()
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_status', status_code: 201 }))
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'x-a': 1, 'x-b': 'old', 'content-length': '5', 'content-type': 'application/octet-stream' } }))
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'X-B': 'new', 'set-cookie': ['a=1', 'b=2'] } }))
    const parts = [bytesOf(1, 1), bytesOf(200 * 1024, 2), Buffer.alloc(0), bytesOf(65536, 3), bytesOf(777, 4)]
    for (const part of parts) writer.send(part)
    writer.ws.close(1000)
    await writer.closed
    call.answer(null) // like svc-sdk's http(): the result comes once the response is closed
    const res = await client.response
    assert.equal(await client.ended, 'complete')
    assert.equal(res.statusCode, 201)
    assert.equal(res.headers['x-a'], '1')
    assert.equal(res.headers['x-b'], 'new')
    assert.deepEqual(lines(res.rawHeaders, 'set-cookie'), ['a=1', 'b=2'])
    assert.equal(res.headers['content-type'], 'application/octet-stream')
    assert.equal(res.headers['content-length'], undefined)
    assert.equal(res.headers['transfer-encoding'], 'chunked')
    assert.ok(client.body.equals(Buffer.concat(parts)))
    await noChannelsLeft()
  })

  it('status and headers with no body item: sent at close with an empty body, no content type added', async () => {
    const handler = capture('bin::empty')
    await route('bin::empty', { api_path: '/empty', http_method: 'POST' })
    const client = new Client('/empty', { method: 'POST' })
    client.req.end()
    const call = await handler.next()
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_status', status_code: 202 }))
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'x-job': '7' } }))
    writer.ws.close(1000)
    call.answer(null)
    const res = await client.response
    assert.equal(await client.ended, 'complete')
    assert.equal(res.statusCode, 202)
    assert.equal(res.headers['x-job'], '7')
    assert.equal(res.headers['content-length'], '0')
    assert.equal(res.headers['content-type'], undefined)
    assert.equal(client.text, '')
    await noChannelsLeft()
  })

  it('a non-null result before any body item is the response, and the unused writer is closed', async () => {
    const handler = capture('bin::buffered')
    await route('bin::buffered', { api_path: '/buffered' })
    const client = new Client('/buffered')
    client.req.end()
    const call = await handler.next()
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_status', status_code: 500 }))
    call.answer({ status_code: 200, headers: { 'content-type': 'text/plain' }, body: 'buffered' })
    const res = await client.response
    await client.ended
    assert.equal(res.statusCode, 200)
    assert.equal(client.text, 'buffered')
    // §9: the engine left the channel, so the writer sees "the reader went away".
    assert.equal((await writer.closed).code, 1011)
    await noChannelsLeft()
  })

  it('a writer that ends abnormally: 502 CHANNEL_CLOSED before the body, an aborted response after it', async () => {
    const handler = capture('bin::broken')
    await route('bin::broken', { api_path: '/broken' })

    const early = new Client('/broken')
    early.req.end()
    const first = await handler.next()
    const writer1 = await end(first.data.response)
    writer1.send(JSON.stringify({ type: 'set_status', status_code: 201 }))
    writer1.ws.close(4000, 'handler crashed')
    first.answer(null)
    const res1 = await early.response
    await early.ended
    assert.equal(res1.statusCode, 502)
    const envelope = JSON.parse(early.text)
    assert.equal(envelope.error.code, 'CHANNEL_CLOSED')
    assert.match(envelope.error.message, /ended abnormally before the response started/)
    assert.match(envelope.error.error_id, /^[0-9a-f]{12}$/)

    const late = new Client('/broken')
    late.req.end()
    const second = await handler.next()
    second.answer(null)
    const writer2 = await end(second.data.response)
    writer2.send(Buffer.from('partial'))
    await late.until((text) => text === 'partial')
    writer2.ws.close(4000, 'handler crashed')
    // The head was sent: the only way left to say "failed" is to break the response off.
    assert.equal(await late.ended, 'aborted')
    await noChannelsLeft()
  })

  it("a response outlives default_timeout once started, also the engine's timeout of the handler call", async () => {
    const timedOut: string[] = []
    t.engine.pipeline.interceptors.push({
      name: 'observe-timeouts',
      intercept(invocation: Invocation) {
        if (invocation.functionId !== 'sse::slow') return
        const reply = invocation.reply
        invocation.reply = { result: (value) => reply.result(value), error: (error) => (timedOut.push(error.code), reply.error(error)) }
      },
    })
    await http.applySettings({ ...SETTINGS, default_timeout: 300 })
    try {
      const handler = capture('sse::slow')
      await route('sse::slow', { api_path: '/slow-events' })
      const client = new Client('/slow-events')
      client.req.end()
      const call = await handler.next() // never answered: like http(), which answers after the stream
      const writer = await end(call.data.response)
      writer.send(Buffer.from('data: 1\n\n'))
      await client.until((text) => text === 'data: 1\n\n')
      // The call's budget (default_timeout) runs out in the engine; the stream goes on.
      await waitFor(() => timedOut.includes('TIMEOUT'), "timedOut.includes('TIMEOUT')")
      writer.send(Buffer.from('data: 2\n\n'))
      await client.until((text) => text === 'data: 1\n\ndata: 2\n\n')
      writer.ws.close(1000)
      assert.equal(await client.ended, 'complete')
      assert.equal((await client.response).statusCode, 200)
      await noChannelsLeft()
    } finally {
      await http.applySettings(SETTINGS)
    }
  })

  it('a client that goes away mid-stream closes the handler\'s writer with 1011', async () => {
    const handler = capture('sse::leaving')
    await route('sse::leaving', { api_path: '/leaving' })
    const client = new Client('/leaving')
    client.req.end()
    const call = await handler.next()
    call.answer(null)
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'content-type': 'text/event-stream' } }))
    writer.send(Buffer.from('data: hello\n\n'))
    await client.until((text) => text === 'data: hello\n\n')
    client.req.destroy()
    const closed = await writer.closed
    assert.equal(closed.code, 1011)
    assert.match(closed.reason, /the reader went away/)
    await noChannelsLeft()
  })

  it('text items that are not control items are ignored and logged once per exchange', async () => {
    const handler = capture('bin::noisy')
    await route('bin::noisy', { api_path: '/noisy' })
    const before = entries.length
    const client = new Client('/noisy')
    client.req.end()
    const call = await handler.next()
    call.answer(null)
    const writer = await end(call.data.response)
    for (const text of ['hello', '[1]', '{"type":"set_status","status_code":99}', '{"type":"set_headers","headers":"x"}', '{"type":"reboot"}', '{"status_code":201}']) writer.send(text)
    writer.send(JSON.stringify({ type: 'set_status', status_code: 203 }))
    writer.send(Buffer.from('body'))
    writer.send(JSON.stringify({ type: 'set_status', status_code: 500 })) // after the body: too late
    writer.ws.close(1000)
    const res = await client.response
    assert.equal(await client.ended, 'complete')
    assert.equal(res.statusCode, 203)
    assert.equal(client.text, 'body')
    const warnings = entries.slice(before).filter((e) => e.level === 'warn' && /response channel/.test(e.message))
    assert.equal(warnings.length, 1, JSON.stringify(warnings))
    assert.match(warnings[0]!.message, /not a control item \(not JSON\)/)
    assert.equal(warnings[0]!.data?.function_id, 'bin::noisy')
    await noChannelsLeft()
  })

  it('a HEAD request on a streamed GET route gets the head and no body', async () => {
    const handler = capture('bin::head')
    await route('bin::head', { api_path: '/head-stream' })
    const client = new Client('/head-stream', { method: 'HEAD' })
    client.req.end()
    const call = await handler.next()
    call.answer(null)
    const writer = await end(call.data.response)
    writer.send(JSON.stringify({ type: 'set_headers', headers: { 'x-size': '3' } }))
    writer.send(Buffer.from('abc'))
    writer.ws.close(1000)
    const res = await client.response
    assert.equal(await client.ended, 'complete')
    assert.equal(res.headers['x-size'], '3')
    assert.equal(client.text, '')
    assert.equal((await writer.closed).code, 1000)
    await noChannelsLeft()
  })
})

describe('request bodies (builtins.md §3.4, §3.5)', () => {
  it('a buffered route gets the parsed body and the same raw bytes on request_body', async () => {
    const handler = capture('body::buffered')
    await route('body::buffered', { api_path: '/json', http_method: 'POST' })
    const raw = JSON.stringify({ text: 'x'.repeat(150_000), n: 1 })
    const client = new Client('/json', { method: 'POST', headers: { 'content-type': 'application/json' } })
    client.req.end(raw)
    const call = await handler.next()
    assert.deepEqual(call.data.body, JSON.parse(raw))
    const reader = await end(call.data.request_body)
    assert.equal((await reader.closed).code, 1000)
    // Items of at most 64 KiB, together the request's bytes.
    assert.ok(reader.items.every((item) => Buffer.isBuffer(item) && item.length <= 64 * 1024))
    assert.equal(Buffer.concat(reader.items as Buffer[]).toString('utf8'), raw)
    call.answer({ body: 'ok' })
    assert.equal((await client.response).statusCode, 200)
    await client.ended
    await noChannelsLeft()
  })

  it("a streamed route: 64 MiB reach the handler through request_body, past the worker's max_body_bytes", async () => {
    const handler = capture('body::upload')
    await route('body::upload', { api_path: '/upload', http_method: 'PUT', stream_request_body: true })
    const size = 64 * 1024 * 1024
    const client = new Client('/upload', { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) } })
    const sent = createHash('sha256')
    const call = handler.next()
    // Written with the client's own backpressure: 1 MiB at a time, each once the socket took the last.
    void (async () => {
      for (let i = 0; i < 64; i++) {
        const chunk = bytesOf(1024 * 1024, i + 1)
        sent.update(chunk)
        if (!client.req.write(chunk)) await new Promise((resolve) => client.req.once('drain', resolve))
      }
      client.req.end()
    })()
    const { data, answer } = await call
    assert.equal(data.body, null) // a streamed route's body is read through request_body only
    const received = await hashingReader(data.request_body)
    assert.deepEqual(received, { code: 1000, bytes: size, sha256: sent.digest('hex') })
    answer({ body: { bytes: received.bytes } })
    const res = await client.response
    await client.ended
    assert.equal(res.statusCode, 200)
    assert.deepEqual(JSON.parse(client.text), { bytes: size })
    await noChannelsLeft()
  })

  it('a buffered route still refuses a body over max_body_bytes with 413, without calling its handler', async () => {
    const handler = capture('body::small')
    await route('body::small', { api_path: '/small', http_method: 'POST' })
    // Announced, not sent: the answer comes from Content-Length alone (and a client still writing
    // a megabyte could see the closed connection's reset before the answer).
    const announced = new Client('/small', { method: 'POST', headers: { 'content-length': String(SETTINGS.max_body_bytes + 1) } })
    announced.req.flushHeaders()
    const res = await announced.response
    await announced.ended
    announced.req.destroy()
    assert.equal(res.statusCode, 413)
    assert.equal(res.headers.connection, 'close')
    assert.equal(JSON.parse(announced.text).error.code, 'PAYLOAD_TOO_LARGE')
    // A route's own max_body_bytes lowers the worker's for a buffered route.
    await route('body::small', { api_path: '/smaller', http_method: 'POST', max_body_bytes: 10 })
    const lower = await send('/smaller', { method: 'POST', body: 'x'.repeat(11) })
    assert.equal(lower.status, 413)
    assert.match(JSON.parse(lower.text).error.message, /\(10 bytes\)/)
    assert.equal(handler.count(), 0)
    await noChannelsLeft()
  })

  it("a streamed route refuses a body over its own max_body_bytes: by Content-Length at once, else while the handler reads", async () => {
    const handler = capture('body::capped')
    await route('body::capped', { api_path: '/capped', http_method: 'POST', stream_request_body: true, max_body_bytes: 1000 })
    const declared = await send('/capped', { method: 'POST', body: Buffer.alloc(1001) })
    assert.equal(declared.status, 413)
    assert.equal(handler.count(), 0)

    const client = new Client('/capped', { method: 'POST', headers: { 'transfer-encoding': 'chunked' } })
    client.req.write(Buffer.alloc(600, 1))
    const call = await handler.next()
    const reader = await end(call.data.request_body)
    await waitFor(() => reader.items.length > 0, 'reader.items.length > 0')
    client.req.end(Buffer.alloc(600, 2))
    // The handler's reader sees the body end abnormally; the client gets 413.
    assert.equal((await reader.closed).code, 1011)
    // At most the limit reached the handler (the second part may arrive split in two reads).
    const read = Buffer.concat(reader.items as Buffer[]).length
    assert.ok(read >= 600 && read <= 1000, `read ${read} bytes`)
    const res = await client.response
    await client.ended
    assert.equal(res.statusCode, 413)
    assert.match(JSON.parse(client.text).error.message, /\(1000 bytes\)/)
    call.answer({ body: 'too late' })
    await noChannelsLeft()
  })

  it('a client that goes away mid-upload ends request_body abnormally for the handler', async () => {
    const handler = capture('body::abandoned')
    await route('body::abandoned', { api_path: '/abandoned', http_method: 'POST', stream_request_body: true })
    const client = new Client('/abandoned', { method: 'POST', headers: { 'content-length': '100000' } })
    client.req.write(Buffer.alloc(5000, 7))
    const call = await handler.next()
    const reader = await end(call.data.request_body)
    await waitFor(() => reader.items.length > 0, 'reader.items.length > 0')
    client.req.destroy()
    assert.equal((await reader.closed).code, 1011)
    call.answer(null)
    await noChannelsLeft()
  })

  it('handlers that never touch their channels leave none behind', async () => {
    w.serve('body::plain', (data) => ({ body: { got: data.body } }))
    await route('body::plain', { api_path: '/plain', http_method: 'POST' })
    for (let i = 0; i < 20; i++) {
      const res = await send('/plain', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ i }) })
      assert.deepEqual(JSON.parse(res.text), { got: { i } })
    }
    await noChannelsLeft()
  })
})

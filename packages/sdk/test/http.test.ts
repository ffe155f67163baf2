/**
 * The streaming HTTP helper `http()` of `svc-sdk/http` (sdk.md §11) end to end: svc-http in a real
 * engine, an svc-sdk worker serving routes through `http()`, and real HTTP clients. The response
 * items travel over the handler's `response` channel, the request bytes over `request_body`.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { pipeline } from 'node:stream/promises'
import { Readable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { http } from 'svc-sdk/http'
import { HttpWorker } from '../../../runtime/workers/http/worker.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { WorkerClient } from '../src/client.ts'
import { resolveOptions } from '../src/options.ts'
import { waitFor } from '../../../test/support/wait.ts'

let t: TestEngine
let client: WorkerClient
const base = () => t.engine.listenUrls('svc-http')[0]!

/** `size` bytes where byte i is `(seed + i) % 251`: any reordering or loss shows. */
function pattern(size: number, seed = 0): Buffer {
  const bytes = Buffer.alloc(size)
  for (let i = 0; i < size; i++) bytes[i] = (seed + i) % 251
  return bytes
}

/** Sends one request (an optional body streamed from `body`), reads the whole response. */
function send(method: string, path: string, body?: Readable): Promise<{ status: number; headers: IncomingMessage['headers']; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base()}${path}`, { method }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    if (body === undefined) req.end()
    else pipeline(body, req).catch(reject)
  })
}

async function route(id: string, method: string, path: string, extra: Record<string, unknown> = {}): Promise<void> {
  client.registerTrigger({ type: 'http', function_id: id, config: { api_path: path, http_method: method, ...extra } })
  // The engine handles one connection's frames in order: once a later call is answered, the route is bound.
  await client.trigger({ function_id: 'engine::workers::list', payload: {} })
}

before(async () => {
  t = await startTestEngine({ builtins: [new HttpWorker()], settings: { 'svc-http': { port: 0, max_body_bytes: 1024 * 1024 } } })
  client = new WorkerClient(t.url, resolveOptions({ workerName: 'http-helper', otel: { enabled: false } }, {}), { log: { warn: () => {} } })
  await waitFor(() => client.getConnectionState() === 'connected', "client.getConnectionState() === 'connected'", 10_000)
})

after(async () => {
  await client?.shutdown()
  await t?.stop()
})

describe('http() from svc-sdk/http', () => {
  it('streams status, headers and every byte written without waiting, and closes the response when the handler resolves', async () => {
    client.registerFunction('web::download', http(async (_req, res) => {
      res.status(201).headers({ 'content-type': 'application/octet-stream', 'x-parts': '40' })
      // Writes past the stream's high-water mark wait in the Writable: closing must not cut them off.
      for (let i = 0; i < 40; i++) res.stream.write(pattern(50 * 1024, i))
    }))
    await route('web::download', 'GET', '/download')
    const res = await send('GET', '/download')
    assert.equal(res.status, 201)
    assert.equal(res.headers['content-type'], 'application/octet-stream')
    assert.equal(res.headers['x-parts'], '40')
    const expected = Buffer.concat(Array.from({ length: 40 }, (_, i) => pattern(50 * 1024, i)))
    assert.equal(res.body.length, expected.length)
    assert.ok(res.body.equals(expected), 'the body is the bytes written, in order')
  })

  it("a handler that ends the stream itself (res.stream.end) gets the same response", async () => {
    client.registerFunction('web::hello', http(async (_req, res) => {
      res.status(200).headers({ 'content-type': 'text/plain' })
      res.stream.write('hello ')
      res.stream.end('world')
    }))
    await route('web::hello', 'GET', '/hello')
    const res = await send('GET', '/hello')
    assert.deepEqual([res.status, res.headers['content-type'], res.body.toString()], [200, 'text/plain', 'hello world'])
  })

  it('reads a streamed request body past max_body_bytes through request_body, and returns a buffered response', async () => {
    client.registerFunction('web::upload', http(async (req) => {
      const hash = createHash('sha256')
      let size = 0
      for await (const chunk of req.request_body) {
        size += chunk.byteLength
        hash.update(chunk)
      }
      return { status_code: 200, body: { size, sha256: hash.digest('hex') } }
    }))
    await route('web::upload', 'POST', '/upload', { stream_request_body: true })
    const body = Buffer.concat(Array.from({ length: 48 }, (_, i) => pattern(64 * 1024, i)))
    const res = await send('POST', '/upload', Readable.from([body.subarray(0, 1_000_000), body.subarray(1_000_000)]))
    assert.equal(res.status, 200)
    assert.deepEqual(JSON.parse(res.body.toString()), { size: body.length, sha256: createHash('sha256').update(body).digest('hex') })
  })

  it('server-sent events: the client reads each event while the handler is still running', async () => {
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    client.registerFunction('web::events', http(async (_req, res) => {
      res.headers({ 'content-type': 'text/event-stream' })
      res.stream.write('data: first\n\n')
      await released
      res.stream.write('data: second\n\n')
    }))
    await route('web::events', 'GET', '/events')
    const response = await fetch(`${base()}/events`)
    assert.equal(response.headers.get('content-type'), 'text/event-stream')
    const reader = response.body!.getReader()
    const first = await reader.read()
    assert.equal(Buffer.from(first.value!).toString(), 'data: first\n\n', 'the first event arrives before the handler goes on')
    release()
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += Buffer.from(r.value).toString()
    assert.equal(rest, 'data: second\n\n')
  })

  it('a returned HttpResponse is the response, and the unused response channel is closed by svc-http', async () => {
    client.registerFunction('web::moved', http(async () => ({ status_code: 302, headers: { Location: '/hello' } })))
    await route('web::moved', 'GET', '/moved')
    const res = await send('GET', '/moved')
    assert.deepEqual([res.status, res.headers.location], [302, '/hello'])
  })

  it('invoked without a request (no response channel), only a returned HttpResponse works', async () => {
    client.registerFunction('web::plain', http(async (req, res) => (req.query_params.buffered ? { status_code: 204 } : void res.status(200))))
    await client.trigger({ function_id: 'engine::workers::list', payload: {} })
    assert.deepEqual(await client.trigger({ function_id: 'web::plain', payload: { query_params: { buffered: '1' } } }), { status_code: 204 })
    await assert.rejects(client.trigger({ function_id: 'web::plain', payload: { query_params: {} } }), /this request has no response channel: return an HttpResponse instead/)
  })

  it('status() after the first body byte throws, and the bytes already written still reach the client', async () => {
    let thrown: unknown
    client.registerFunction('web::late-status', http(async (_req, res) => {
      res.stream.write('body first')
      try {
        res.status(500)
      } catch (error) {
        thrown = error
      }
    }))
    await route('web::late-status', 'GET', '/late-status')
    const res = await send('GET', '/late-status')
    assert.deepEqual([res.status, res.body.toString()], [200, 'body first'])
    assert.match(String(thrown), /status\(\) must be called before the first body byte/)
  })
})

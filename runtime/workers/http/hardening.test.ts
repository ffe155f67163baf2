/**
 * svc-http against hostile or broken clients (builtins.md §3.5, §3.9): bodies that are not valid
 * text, JSON nested deep enough to crash a recursive encoder, and clients that are slow to send
 * or keep idle connections open. Real engine, real sockets.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { slowClient } from '../../../test/support/slow-client.ts'
import { HttpWorker } from './worker.ts'

let t: TestEngine
let w: RawWorker
let calls = 0
const base = () => t.engine.listenUrls('svc-http')[0]!

function post(path: string, contentType: string, body: Buffer | string): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base()), { method: 'POST', headers: { 'content-type': contentType }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode!, text: Buffer.concat(chunks).toString(), headers: res.headers }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

function assertInvalidBody(res: { status: number; text: string; headers: Record<string, unknown> }, message: RegExp): void {
  assert.equal(res.status, 400, res.text)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  const body = JSON.parse(res.text)
  assert.equal(body.error.code, 'INVALID_BODY')
  assert.match(body.error.message, message)
}

/** Opens a raw TCP connection to the HTTP listener. */
function rawSocket(): Promise<Socket> {
  const url = new URL(base())
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => resolve(socket))
    socket.on('error', reject)
  })
}

/** Everything the server sends until it closes the connection, and how long that took (ms). */
function untilClosed(socket: Socket): Promise<{ text: string; ms: number }> {
  const start = Date.now()
  return new Promise((resolve) => {
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (c: string) => (text += c))
    socket.on('close', () => resolve({ text, ms: Date.now() - start }))
    socket.on('error', () => {})
  })
}

/** The `error` of the JSON envelope in a raw HTTP answer. */
function envelope(raw: string): { code: string; message: string } {
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4)
  return (JSON.parse(body) as { error: { code: string; message: string } }).error
}

describe('svc-http hardening (builtins.md §3.5, §3.9)', () => {
  before(async () => {
    const http = new HttpWorker({ timeouts: { headersTimeoutMs: 300, requestTimeoutMs: 600, keepAliveTimeoutMs: 200, checkIntervalMs: 50 } })
    t = await startTestEngine({ builtins: [http], settings: { 'svc-http': { port: 0 } } })
    w = await RawWorker.connect(t.url, { announce: { name: 'hardening-test', runtime: 'node' } })
    w.serve('echo', (data) => {
      calls++
      return { body: data.body }
    })
    w.send({ type: 'registertrigger', id: 'r1', trigger_type: 'http', function_id: 'echo', config: { api_path: '/echo', http_method: 'POST' } })
    await w.call('engine::workers::list', {})
  })

  after(async () => {
    await w?.close()
    await t?.stop()
  })

  it('answers 400 INVALID_BODY, not U+FFFD, for a JSON body that is not UTF-8', async () => {
    const before = calls
    const res = await post('/echo', 'application/json', Buffer.from([0x22, 0xff, 0xfe, 0x22]))
    assertInvalidBody(res, /not valid UTF-8/)
    assert.equal(calls, before, 'the handler is not called')
  })

  it('answers 400 INVALID_BODY for text and form bodies that are not valid in their charset', async () => {
    assertInvalidBody(await post('/echo', 'text/plain', Buffer.from([0x61, 0xc3, 0x28])), /not valid UTF-8/)
    assertInvalidBody(await post('/echo', 'text/plain; charset=utf-8', Buffer.from([0xed, 0xa0, 0x80])), /not valid UTF-8/)
    assertInvalidBody(await post('/echo', 'application/x-www-form-urlencoded', Buffer.from([0x61, 0x3d, 0xff])), /not valid UTF-8/)
    const latin1 = await post('/echo', 'text/plain; charset=iso-8859-1', Buffer.from([0x63, 0x61, 0x66, 0xe9]))
    assert.equal(JSON.parse(latin1.text), 'café', 'a body valid in its declared charset is still decoded')
  })

  it('answers 400 INVALID_BODY for JSON nested deeper than 128 levels, and serves the limit itself', async () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    assertInvalidBody(await post('/echo', 'application/json', deep), /nests deeper than 128 levels/)
    const limit = '['.repeat(128) + ']'.repeat(128)
    const ok = await post('/echo', 'application/json', limit)
    assert.equal(ok.status, 200, ok.text)
  })

  it('passes huge numbers and escaped lone surrogates through without failing', async () => {
    const res = await post('/echo', 'application/json', '{"n":1e400,"big":123456789012345678901234567890,"s":"\\ud800x"}')
    assert.equal(res.status, 200, res.text)
    const body = JSON.parse(res.text)
    assert.equal(body.n, null, 'Infinity has no JSON form')
    assert.equal(body.s, '\ud800x')
  })

  it('closes a connection whose request head does not arrive within the headers timeout, also when the client never closes its side', async () => {
    // Slowloris: a header line every 50 ms, and no FIN of its own. Answering 408 and half-closing
    // left the server reading such a client forever.
    const { text, chunks } = await slowClient(base(), { first: 'GET /echo HTTP/1.1\r\nHost: x\r\n' })
    assert.match(text, /^HTTP\/1\.1 408/)
    assert.deepEqual(envelope(text), { code: 'INVALID_REQUEST', message: 'request head did not arrive in time' })
    assert.ok(chunks > 0, 'the client was still sending when it was closed')
  })

  it('answers a request that is not valid HTTP with the JSON error envelope: 400, or 431 for a huge head', async () => {
    const garbage = await rawSocket()
    const answered = untilClosed(garbage)
    garbage.write('THIS IS NOT HTTP\r\n\r\n')
    const { text } = await answered
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/)
    assert.equal(envelope(text).code, 'INVALID_REQUEST')

    const huge = await rawSocket()
    const overflow = untilClosed(huge)
    huge.write(`GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    const { text: big } = await overflow
    assert.match(big, /^HTTP\/1\.1 431 /)
    assert.deepEqual(envelope(big), { code: 'INVALID_REQUEST', message: 'request head is too large' })
  })

  it('closes a connection whose body trickles in slower than the request timeout allows', async () => {
    const before = calls
    const { text } = await slowClient(base(), {
      first: 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 1000000\r\n\r\nabc',
      next: () => 'x',
    })
    assert.match(text, /^HTTP\/1\.1 408/)
    assert.deepEqual(envelope(text), { code: 'INVALID_REQUEST', message: 'request body did not arrive in time' })
    assert.equal(calls, before, 'the handler is not called')
  })

  it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
    const socket = await rawSocket()
    const closed = untilClosed(socket)
    socket.write('GET /missing HTTP/1.1\r\nHost: x\r\n\r\n')
    const { text, ms } = await closed
    assert.match(text, /^HTTP\/1\.1 404/)
    assert.ok(ms >= 150 && ms < 3000, `closed after ${ms} ms`)
  })

  it('keeps serving after all of the above', async () => {
    const res = await post('/echo', 'application/json', '{"ok":true}')
    assert.deepEqual(JSON.parse(res.text), { ok: true })
  })
})

/**
 * Property-based fuzzing of the HTTP surface (builtins.md §3.3–§3.9) with fast-check: random
 * methods, paths (percent-encoding, invalid escapes, dot segments, long segments), query strings,
 * headers, content types and bodies (invalid UTF-8, deep nesting, huge numbers, lone surrogates)
 * go over real sockets to a real engine with real routes. Every answer must be a well-formed
 * response with a status of §3.9 and, for errors, the JSON envelope; the server keeps serving.
 * The same requests cut off anywhere and continued one byte at a time by a client that never
 * closes its side (slowloris) must be closed by the server within its timeouts.
 *
 * Streamed bodies (§3.4, §3.7): the same requests reach a streamed route (`stream_request_body`
 * with its own limit); and handlers write random sequences of items on their `response` channel —
 * control items valid and not (not JSON, wrong types, out-of-range statuses, header names and
 * values that are not HTTP, deep nesting), body items of any size, then a normal or abnormal end —
 * and the client must get exactly the response those items describe, or a broken-off one when the
 * writer failed after the body started; never a hang, and no channel left behind.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { ChannelSocket } from '../../../test/support/channel-client.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { slowClient } from '../../../test/support/slow-client.ts'
import { parseControlItem } from './streaming.ts'
import { HttpWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** Statuses the worker may answer with (§3.6 descriptors chosen by the routes below, §3.9 errors). */
const STATUSES = new Set([200, 204, 400, 404, 405, 413, 422, 500, 503])

let t: TestEngine
let w: RawWorker
const base = () => t.engine.listenUrls('svc-http')[0]!

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: Buffer
}

interface Case {
  method: string
  path: string
  headers: Record<string, string>
  body: Buffer | undefined
}

/**
 * Sends one case. A body always goes with its Content-Length: Node's client sends a GET body
 * unframed otherwise, which the server rightly reads as a second, malformed request.
 */
function send(c: Case): Promise<Answer> {
  const headers = c.body === undefined ? c.headers : { ...c.headers, 'content-length': String(c.body.length) }
  return new Promise((resolve, reject) => {
    const req = request(`${base()}${c.path}`, { method: c.method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(c.body)
  })
}

// ---- generators ---------------------------------------------------------------------------

const pathChars = [...'abcxyzAZ09-._~!$&\'()*+,;=:@']
const tokenChars = [...'abcdefghijklmnopqrstuvwxyz0123456789-_']
const valueChars = [...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~\t'].concat(['é', 'ÿ'])
const text = (chars: string[], max: number) => fc.array(fc.constantFrom(...chars), { maxLength: max }).map((a) => a.join(''))
const percentByte = fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0').toUpperCase()}`)

const segment = fc.oneof(
  fc.constantFrom('echo', 'items', 'files', 'cond', 'fail', 'gone', 'bad', 'x', '', '.', '..', '%2F', '%2e%2e', '%', '%zz', '%ED%A0%80', '%F0%9F%98%80', '%FF%FE'),
  text(pathChars, 12),
  fc.array(percentByte, { minLength: 1, maxLength: 6 }).map((a) => a.join('')),
  fc.integer({ min: 256, max: 2000 }).map((n) => 'a'.repeat(n)),
)

const query = fc.option(
  fc.array(fc.tuple(fc.oneof(text(pathChars, 6), percentByte), fc.option(fc.oneof(text(pathChars, 6), percentByte, fc.constant('+%2B')))), { maxLength: 4 }).map(
    (pairs) => '?' + pairs.map(([k, v]) => (v === null ? k : `${k}=${v}`)).join('&'),
  ),
  { nil: '' },
)

const path = fc
  .tuple(
    fc.oneof(
      fc.constantFrom(['echo'], ['items', 'one'], ['files'], ['cond'], ['fail'], ['gone'], ['bad'], ['upload']),
      fc.array(segment, { minLength: 0, maxLength: 5 }),
    ),
    fc.array(segment, { maxLength: 2 }),
    query,
  )
  .map(([head, tail, q]) => '/' + [...head, ...tail].join('/') + q)

const contentType = fc.option(
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/problem+json',
    'APPLICATION/JSON',
    'text/plain',
    'text/plain; charset=iso-8859-1',
    'text/plain; charset=utf-16le',
    'text/plain; charset="no-such"',
    'text/csv;;charset=',
    'application/x-www-form-urlencoded',
    'application/octet-stream',
    'multipart/form-data; boundary=x',
    ';',
    'json',
  ),
  { nil: undefined },
)

const nested = fc.tuple(fc.integer({ min: 1, max: 3000 }), fc.boolean()).map(([depth, objects]) =>
  objects ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth),
)

const body = fc.option(
  fc.oneof(
    fc.jsonValue().map((v) => Buffer.from(JSON.stringify(v) ?? 'null')),
    fc.uint8Array({ maxLength: 64 }).map((a) => Buffer.from(a)),
    nested.map((s) => Buffer.from(s)),
    fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890', '-0', '0.0000000000000000000001e-400', '[1e999999]').map((s) => Buffer.from(s)),
    fc.constantFrom('"\\ud800"', '"\\udc00x"', '{"\\ud800":"\\udfff"}').map((s) => Buffer.from(s)),
    fc.constantFrom([0x22, 0xed, 0xa0, 0x80, 0x22], [0xc0, 0xaf], [0xef, 0xbb, 0xbf, 0x7b, 0x7d], [0x61, 0x3d, 0x25, 0x46, 0x46]).map((b) => Buffer.from(b)),
    fc.constantFrom('{"a":', '', '   ', 'a=1&a=2&b', 'deny').map((s) => Buffer.from(s)),
    fc.integer({ min: 4000, max: 6000 }).map((n) => Buffer.alloc(n, 0x20)),
  ),
  { nil: undefined },
)

const headerName = text(tokenChars, 12).filter((n) => n.length > 0 && !['content-length', 'transfer-encoding', 'host', 'connection', 'content-type', 'expect', 'upgrade', 'te', 'trailer'].includes(n))
const hex = (n: number) => fc.array(fc.constantFrom(...'0123456789abcdef'), { minLength: n, maxLength: n }).map((a) => a.join(''))
/** Request `traceparent` values: valid (sampled or not) and the malformed kinds a response must never echo (issue 21). */
const traceparent = fc.option(
  fc.oneof(
    fc.tuple(hex(32), hex(16), fc.constantFrom('00', '01')).map(([t, s, f]) => `00-${t}-${s}-${f}`),
    fc.constantFrom(`00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`, `00-${'a'.repeat(32)}-${'0'.repeat(16)}-01`, `ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`, `00-${'A'.repeat(32)}-${'b'.repeat(16)}-01`, `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`, '00-abc-def-01', ''),
    text(valueChars, 60),
  ),
  { nil: undefined },
)
const headers = fc.tuple(fc.dictionary(headerName, text(valueChars, 40), { maxKeys: 5 }), contentType, traceparent).map(([h, ct, tp]) => {
  const out: Record<string, string> = { ...h }
  if (ct !== undefined) out['content-type'] = ct
  if (tp !== undefined) out.traceparent = tp
  return out
})

const method = fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'PURGE', 'MKCOL', 'get')

// ---- properties ----------------------------------------------------------------------------

function checkAnswer(c: Case, a: Answer): void {
  const where = `${c.method} ${c.path.slice(0, 120)} → ${a.status} ${a.body.toString().slice(0, 200)}`
  assert.ok(STATUSES.has(a.status), `unexpected status: ${where}`)
  if (c.method.toUpperCase() === 'HEAD') {
    assert.equal(a.body.length, 0, `HEAD has no body: ${where}`)
    return
  }
  if (a.status >= 400) {
    assert.equal(a.headers['content-type'], 'application/json; charset=utf-8', where)
    const parsed = JSON.parse(a.body.toString('utf8'))
    assert.equal(typeof parsed.error?.code, 'string', where)
    assert.equal(typeof parsed.error?.message, 'string', where)
    if (a.status >= 500) assert.match(parsed.error.error_id, /^[0-9a-f]{12}$/, where)
    if (a.status === 405) assert.ok(a.headers.allow, where)
  } else if (a.status === 200 && a.body.length > 0) {
    assert.doesNotThrow(() => JSON.parse(a.body.toString('utf8')), where)
  }
  assert.equal(Number(a.headers['content-length'] ?? a.body.length), a.body.length, where)
  // One W3C traceparent at most, never a malformed request header echoed; the error body names its trace (issue 21).
  const tp = a.headers.traceparent
  if (tp !== undefined) {
    assert.equal(typeof tp, 'string', where)
    assert.match(tp as string, /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/, where)
  }
  const sent = c.headers.traceparent
  if (sent !== undefined && tp !== undefined) assert.equal((tp as string).slice(3, 35), sent.slice(3, 35), where)
  if (sent === undefined || !/^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/.test(sent)) assert.equal(tp, undefined, where)
  else assert.equal(tp, sent, `no span is recorded here: the client's own traceparent comes back: ${where}`)
  if (a.status >= 400 && c.method.toUpperCase() !== 'HEAD') assert.equal(JSON.parse(a.body.toString('utf8')).error.trace_id, tp === undefined ? undefined : (tp as string).slice(3, 35), where)
}

describe('svc-http fuzzing (builtins.md §3.9)', () => {
  before(async () => {
    t = await startTestEngine({ builtins: [new HttpWorker()], settings: { 'svc-http': { port: 0, max_body_bytes: 4096 } } })
    w = await RawWorker.connect(t.url, { announce: { name: 'fuzz-test', runtime: 'node' } })
    w.serve('echo', (data) => ({ body: data }))
    w.serve('cond', (data) => !(typeof data.body === 'string' && data.body.includes('deny')))
    w.serve('fail', () => {
      throw Object.assign(new Error('handler failed on purpose'), { code: 'E_FAIL' })
    })
    w.serve('bad', () => 'not a descriptor')
    // Never reads its request_body: a body still arriving when it answers closes the connection.
    w.serve('streamed', (data) => ({ body: { streamed: data.body === null } }))
    const routes: Array<[string, string, string, Record<string, unknown>?]> = [
      ['echo', '/echo', 'POST'],
      ['echo', '/echo', 'GET'],
      ['echo', '/items/:id', 'GET'],
      ['echo', '/items/:id', 'PUT'],
      ['echo', '/files/*', 'GET'],
      ['echo', '/cond', 'POST', { condition_function_id: 'cond' }],
      ['fail', '/fail', 'POST'],
      ['gone', '/gone', 'GET'],
      ['bad', '/bad', 'GET'],
      ['echo', '/:a/:b/:c', 'PATCH'],
      ['streamed', '/upload', 'POST', { stream_request_body: true, max_body_bytes: 3000 }],
      ['streamed', '/upload', 'PUT', { stream_request_body: true }],
    ]
    routes.forEach(([fn, api_path, http_method, extra], i) =>
      w.send({ type: 'registertrigger', id: `fuzz-${i}`, trigger_type: 'http', function_id: fn, config: { api_path, http_method, ...extra } }),
    )
    await w.call('engine::workers::list', {})
  })

  after(async () => {
    await w?.close()
    await t?.stop()
  })

  it('answers every request with a status of §3.9 and a well-formed JSON error envelope', async () => {
    const seen = new Map<number, number>()
    await fc.assert(
      fc.asyncProperty(method, path, headers, body, async (m, p, h, b) => {
        const c: Case = { method: m, path: p, headers: h, body: b }
        const answer = await send(c)
        seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1)
        checkAnswer(c, answer)
      }),
      {
        numRuns: 600,
        // One case per interesting answer, so the coverage check below never depends on the seed.
        examples: [
          ['GET', '/echo', {}, undefined],
          ['OPTIONS', '/echo', {}, undefined],
          ['POST', '/echo', { 'content-type': 'application/json' }, Buffer.from('{"a":')],
          ['GET', '/nowhere', {}, undefined],
          ['DELETE', '/echo', {}, undefined],
          ['POST', '/echo', { 'content-type': 'text/plain' }, Buffer.alloc(5000, 0x61)],
          ['POST', '/fail', {}, undefined],
          ['GET', '/gone', {}, undefined],
          ['POST', '/upload', { 'content-type': 'application/json' }, Buffer.alloc(5000, 0x20)],
          ['PUT', '/upload', {}, Buffer.alloc(5000, 0x20)],
          ['POST', '/fail', { traceparent: `00-${'4'.repeat(32)}-${'5'.repeat(16)}-01` }, undefined],
          ['GET', '/nowhere', { traceparent: `00-${'6'.repeat(32)}-${'7'.repeat(16)}-00` }, undefined],
          ['GET', '/echo', { traceparent: `00-${'0'.repeat(32)}-${'7'.repeat(16)}-01` }, undefined],
        ],
      },
    )
    // The generators must reach the interesting answers, or the property proves little.
    for (const status of [200, 204, 400, 404, 405, 413, 500, 503]) assert.ok(seen.has(status), `no ${status} among ${[...seen.keys()].join(', ')}`)
  })

  it('keeps serving afterwards', async () => {
    const a = await send({ method: 'POST', path: '/echo?x=1', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"ok":true}') })
    assert.equal(a.status, 200)
    const echoed = JSON.parse(a.body.toString())
    assert.deepEqual(echoed.body, { ok: true })
    assert.deepEqual(echoed.query_params, { x: '1' })
    await waitFor(() => t.engine.channels.size === 0, 't.engine.channels.size === 0')
  })
})

describe('svc-http fuzzing: requests cut off and trickled (issue 16 item 10)', () => {
  let slow: TestEngine
  before(async () => {
    const http = new HttpWorker({ timeouts: { headersTimeoutMs: 200, requestTimeoutMs: 400 } })
    slow = await startTestEngine({ builtins: [http], settings: { 'svc-http': { port: 0, max_body_bytes: 4096 } } })
  })
  after(() => slow?.stop())

  it('closes every connection whose request stops anywhere and then trickles in', async () => {
    const url = slow.engine.listenUrls('svc-http')[0]!
    await fc.assert(
      fc.asyncProperty(method, path, headers, body, fc.integer({ min: 0, max: 1000 }), async (m, p, h, b, permille) => {
        const head = [`${m} ${p} HTTP/1.1`, 'host: x', ...Object.entries(h).map(([k, v]) => `${k}: ${v}`), ...(b ? [`content-length: ${b.length}`] : [])].join('\r\n') + '\r\n\r\n'
        const raw = Buffer.concat([Buffer.from(head, 'latin1'), b ?? Buffer.alloc(0)])
        const cut = raw.subarray(0, Math.floor((permille / 1000) * raw.length)).toString('latin1')
        const { text } = await slowClient(url, { first: cut, next: () => 'x', everyMs: 40, deadlineMs: 10_000 })
        if (text !== '') assert.match(text, /^HTTP\/1\.1 \d{3} /, text.slice(0, 200))
      }),
      {
        numRuns: 20,
        // Cuts in the path, in a header value and in the body: the trickle keeps each one valid.
        examples: [
          ['GET', '/items/abc', {}, undefined, 400],
          ['GET', '/echo', { 'x-a': 'some value' }, undefined, 900],
          ['POST', '/echo', { 'content-type': 'text/plain' }, Buffer.alloc(2000, 0x61), 500],
        ],
      },
    )
  })
})

// ---- streamed responses (§3.7) -------------------------------------------------------------

/** What a handler sends on its response channel. */
type Item = { text: string } | { binary: Buffer }

const HEADER_NAMES = ['x-a', 'X-A', 'x-b', 'content-type', 'content-length', 'transfer-encoding', 'connection', 'set-cookie', 'bad name', 'x:y', '', 'é', '__proto__']
const headerValue = fc.oneof(
  fc.constantFrom('v1', 'v2', 'text/event-stream', 'a\r\nx-injected: 1', 'nul\u0000', 'é', ''),
  fc.integer({ min: -5, max: 99999 }),
  fc.array(fc.constantFrom('c1', 'c2', 'bad\nline'), { maxLength: 3 }),
  fc.constantFrom(null, true, { nested: 1 }),
)
const headersObject = fc.dictionary(fc.constantFrom(...HEADER_NAMES), headerValue, { maxKeys: 4 })

const textItem: fc.Arbitrary<Item> = fc
  .oneof(
    fc.integer({ min: 95, max: 605 }).map((code) => JSON.stringify({ type: 'set_status', status_code: code })),
    fc.constantFrom(200, 201, 206, 404, 418, 503).map((code) => JSON.stringify({ type: 'set_status', status_code: code })),
    headersObject.map((headers) => JSON.stringify({ type: 'set_headers', headers })),
    fc.array(fc.constantFrom('X-A: line', 'x-b:v2', 'nocolon', ': empty', 'x-a: a\rb'), { maxLength: 3 }).map((headers) => JSON.stringify({ type: 'set_headers', headers })),
    fc.constantFrom(
      '',
      'not json',
      '{',
      '[]',
      'null',
      '42',
      '"set_status"',
      '{"type":"set_status"}',
      '{"type":"set_status","status_code":"200"}',
      '{"type":"set_status","status_code":200.5}',
      '{"type":"set_status","status_code":1e400}',
      '{"type":"set_headers"}',
      '{"type":"set_headers","headers":null}',
      '{"type":"set_headers","headers":"x-a: 1"}',
      '{"type":"SET_STATUS","status_code":201}',
      '{"__proto__":{"type":"set_status"},"status_code":201}',
      '{"type":"set_status","status_code":201,"type":"reboot"}',
      '['.repeat(5000) + ']'.repeat(5000),
    ),
    fc.string({ maxLength: 50 }),
  )
  .map((text) => ({ text }))

const binaryItem: fc.Arbitrary<Item> = fc
  .oneof(
    { weight: 4, arbitrary: fc.uint8Array({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.integer({ min: 60_000, max: 300_000 }).map((n) => new Uint8Array(n).fill(0x61)) },
  )
  .map((data) => {
    const item = { binary: Buffer.from(data) }
    // A counterexample names the size, not every byte.
    Object.defineProperty(item, fc.toStringMethod, { value: () => `{binary: ${item.binary.length} bytes}` })
    return item
  })

/** How the writer ends; then how the handler answers (after the writer ended, like svc-sdk's http()). */
const ending = fc.constantFrom('normal', 'abnormal', 'terminate')
const outcome = fc.constantFrom('null', 'descriptor', 'error')

/** Header lines the items set for `name` before the first body item, by §3.6's value rules and §3.7's merge. */
function expectedLines(items: Item[], name: string): string[] {
  let current: string[] = []
  for (const item of items) {
    if ('binary' in item) break
    let parsed: unknown
    try {
      parsed = JSON.parse(item.text)
    } catch {
      continue
    }
    const control = parseControlItem(item.text)
    if ('ignored' in control || control.type !== 'set_headers') continue
    const headers = (parsed as { headers: unknown }).headers
    if (Array.isArray(headers)) continue // the line form: only x-a/x-b lines, checked through the parser below
    const incoming: string[] = []
    for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
      if (key.toLowerCase() !== name) continue
      const values = Array.isArray(value) ? value : [value]
      for (const v of values) {
        const text = typeof v === 'number' ? String(v) : typeof v === 'string' ? v : undefined
        if (text !== undefined && /^[\t\x20-\x7e\x80-\xff]*$/.test(text)) incoming.push(text)
      }
    }
    if (incoming.length > 0) current = incoming
  }
  return current
}

/** The last valid set_status before the first body item, else 200. */
function expectedStatus(items: Item[]): number {
  let status = 200
  for (const item of items) {
    if ('binary' in item) break
    const control = parseControlItem(item.text)
    if (!('ignored' in control) && control.type === 'set_status') status = control.status
  }
  return status
}

interface Got {
  status: number
  rawHeaders: string[]
  body: Buffer
  complete: boolean
}

/** Checks the response the client got against what the items, the writer's end and the handler's answer describe. */
function checkStreamed(items: Item[], end: string, answer: string, got: Got): void {
  const first = items.findIndex((item) => 'binary' in item)
  const status = expectedStatus(items)
  const where = JSON.stringify({ items: items.map((i) => ('text' in i ? i.text.slice(0, 80) : i.binary.length)), end, answer, got: { status: got.status, complete: got.complete, body: got.body.length } })
  const fallback = answer === 'error' ? 500 : answer === 'descriptor' ? 299 : end === 'normal' ? status : 502
  if (end === 'terminate') {
    // A terminated socket may lose the frames it had not flushed: either the body started (and
    // then broke off) or the answer is the handler's or the writer's failure.
    assert.ok(got.status === 0 || got.status === status || got.status === fallback, where)
    assert.equal(got.complete && first !== -1 && got.status === status && status !== 204 && status !== 304 && status >= 200, false, where)
    return
  }
  if (status < 200 && (first !== -1 || (answer === 'null' && end === 'normal'))) return // an informational status cannot be final: Node ends the connection
  assert.deepEqual(lines(got.rawHeaders, 'x-injected'), [], where)
  if (first !== -1) {
    // The body started: the items are the response; the handler's answer comes too late to matter.
    assert.equal(got.status, status, where)
    const body = Buffer.concat(items.filter((i): i is { binary: Buffer } => 'binary' in i).map((i) => i.binary))
    if (end === 'normal') {
      assert.equal(got.complete, true, where)
      if (status !== 204 && status !== 304) assert.ok(got.body.equals(body), where)
    } else if (status !== 204 && status !== 304) {
      // (A 204 or 304 is complete with its head: breaking off afterwards cannot show.)
      assert.equal(got.complete, false, where)
    }
    assert.deepEqual(lines(got.rawHeaders, 'content-length'), [], where)
    const lineForm = items.slice(0, first).some((i) => 'text' in i && i.text.startsWith('{"type":"set_headers","headers":['))
    // Node writes a head as latin1 or, flushed alone, as UTF-8 (OutgoingMessage#_send): a value
    // beyond ASCII may arrive either way, and HTTP leaves such bytes opaque (RFC 9110 §5.5).
    const asSent = (value: string) => [value, Buffer.from(value, 'utf8').toString('latin1')]
    if (!lineForm) {
      for (const name of ['x-a', 'x-b']) {
        const got_ = lines(got.rawHeaders, name)
        const expected = expectedLines(items, name)
        assert.equal(got_.length, expected.length, `${name}: ${JSON.stringify(got_)} vs ${JSON.stringify(expected)}: ${where}`)
        got_.forEach((value, i) => assert.ok(asSent(expected[i]!).includes(value), `${name}: ${JSON.stringify(got_)} vs ${JSON.stringify(expected)}: ${where}`))
      }
    }
    return
  }
  assert.equal(got.status, fallback, where)
  if (answer === 'error') assert.equal(JSON.parse(got.body.toString()).error.code, 'E_FUZZ', where)
  else if (answer === 'descriptor') assert.equal(got.body.toString(), '"descriptor"', where)
  else if (end === 'normal') assert.equal(got.body.length, 0, where)
  else assert.equal(JSON.parse(got.body.toString()).error.code, 'CHANNEL_CLOSED', where)
}

describe('svc-http fuzzing: response channel items (builtins.md §3.7)', () => {
  let s: TestEngine
  let worker: RawWorker
  const refs: Array<{ response: { channel_id: string; access_key: string; direction: 'write' }; answer: (result: unknown) => void; fail: (error: Error) => void }> = []
  const waiting: Array<() => void> = []

  before(async () => {
    s = await startTestEngine({ builtins: [new HttpWorker()], settings: { 'svc-http': { port: 0 } } })
    worker = await RawWorker.connect(s.url, { announce: { name: 'fuzz-stream', runtime: 'node' } })
    worker.serve(
      'streamer',
      (data) =>
        new Promise((resolve, reject) => {
          refs.push({ response: data.response, answer: resolve, fail: reject })
          for (const wake of waiting.splice(0)) wake()
        }),
    )
    worker.send({ type: 'registertrigger', id: 'fuzz-stream', trigger_type: 'http', function_id: 'streamer', config: { api_path: '/stream', http_method: 'GET' } })
    await worker.call('engine::workers::list', {})
  })

  after(async () => {
    await worker?.close()
    await s?.stop()
  })

  /** The next handler invocation, once it has arrived. */
  async function nextCall() {
    while (refs.length === 0) await new Promise<void>((resolve) => waiting.push(resolve))
    return refs.shift()!
  }

  it('answers every item sequence with the response it describes, or breaks off when the writer failed after the body started', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof({ weight: 3, arbitrary: textItem }, { weight: 2, arbitrary: binaryItem }), { maxLength: 12 }), ending, outcome, async (items, end, answer) => {
        const url = `${s.engine.listenUrls('svc-http')[0]!}/stream`
        const response = new Promise<{ status: number; rawHeaders: string[]; body: Buffer; complete: boolean }>((resolve) => {
          const req = request(url, { agent: false }, (res) => {
            const chunks: Buffer[] = []
            res.on('data', (chunk: Buffer) => chunks.push(chunk))
            const done = () => resolve({ status: res.statusCode!, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks), complete: res.complete })
            res.on('end', done)
            res.on('close', done)
            res.on('error', done)
          })
          req.on('error', () => resolve({ status: 0, rawHeaders: [], body: Buffer.alloc(0), complete: false }))
          req.end()
        })
        const call = await nextCall()
        const writer = await ChannelSocket.open(s.url, call.response)
        for (const item of items) writer.send('text' in item ? item.text : item.binary)
        if (end === 'normal') writer.ws.close(1000)
        else if (end === 'abnormal') writer.ws.close(4000, 'failed')
        else writer.ws.terminate()
        await writer.closed
        if (answer === 'null') call.answer(null)
        else if (answer === 'descriptor') call.answer({ status_code: 299, body: 'descriptor' })
        else call.fail(Object.assign(new Error('handler failed'), { code: 'E_FUZZ' }))
        const got = await response
        await waitFor(() => s.engine.channels.size === 0, 's.engine.channels.size === 0')
        checkStreamed(items, end, answer, got)
      }),
      { numRuns: 150 },
    )
  })

  it('reads any text as a control item or an ignored one, never throwing', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null'), textItem.map((i) => ('text' in i ? i.text : ''))), (text) => {
        const control = parseControlItem(text)
        if ('ignored' in control) assert.equal(typeof control.ignored, 'string')
        else if (control.type === 'set_status') assert.ok(Number.isInteger(control.status) && control.status >= 100 && control.status <= 599)
        else assert.ok(control.headers.length % 2 === 0 && control.headers.every((h) => typeof h === 'string' && !/[\r\n]/.test(h)))
      }),
      { numRuns: 2000 },
    )
  })
})

/** Header values of `name` (lower case) as separate lines. */
function lines(rawHeaders: string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) out.push(rawHeaders[i + 1]!)
  return out
}

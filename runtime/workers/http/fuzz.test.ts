/**
 * Property-based fuzzing of the HTTP surface (builtins.md §3.3–§3.9) with fast-check: random
 * methods, paths (percent-encoding, invalid escapes, dot segments, long segments), query strings,
 * headers, content types and bodies (invalid UTF-8, deep nesting, huge numbers, lone surrogates)
 * go over real sockets to a real engine with real routes. Every answer must be a well-formed
 * response with a status of §3.9 and, for errors, the JSON envelope; the server keeps serving.
 * The same requests cut off anywhere and continued one byte at a time by a client that never
 * closes its side (slowloris) must be closed by the server within its timeouts.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { slowClient } from '../../../test/support/slow-client.ts'
import { HttpWorker } from './worker.ts'

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
      fc.constantFrom(['echo'], ['items', 'one'], ['files'], ['cond'], ['fail'], ['gone'], ['bad']),
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
const headers = fc.tuple(fc.dictionary(headerName, text(valueChars, 40), { maxKeys: 5 }), contentType).map(([h, ct]) => {
  const out: Record<string, string> = { ...h }
  if (ct !== undefined) out['content-type'] = ct
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

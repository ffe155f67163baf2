/**
 * svc-http end to end: the worker runs inside a real engine, a raw WebSocket worker registers
 * functions and `http` triggers, and real HTTP requests go over sockets (builtins.md §3).
 */
import { after, before, describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http'
import { createServer, type Server } from 'node:net'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker, type Frame } from '../../../test/support/raw-worker.ts'
import { HttpWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

const BASE_SETTINGS = { port: 0, max_body_bytes: 1024 }

let t: TestEngine
let http: HttpWorker
let w: RawWorker
let triggerSeq = 0

/** The listener's current base URL (it changes when a test rebinds). */
const base = () => t.engine.listenUrls('svc-http')[0]!

interface RawResponse {
  status: number
  headers: IncomingHttpHeaders
  /** Header lines as received, `[name, value, …]`. */
  rawHeaders: string[]
  text: string
}

/** One HTTP request over a fresh connection. */
function send(
  path: string,
  options: { method?: string; headers?: OutgoingHttpHeaders; body?: string | Buffer; chunked?: boolean; url?: string } = {},
): Promise<RawResponse> {
  const url = new URL(path, options.url ?? base())
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, rawHeaders: res.rawHeaders, text: Buffer.concat(chunks).toString() }),
      )
      res.on('error', reject)
    })
    req.on('error', reject)
    if (options.chunked) {
      req.write(options.body ?? '')
      req.end()
    } else if (options.body !== undefined) req.end(options.body)
    else req.end()
  })
}

const json = (res: RawResponse) => JSON.parse(res.text)
const postJson = (path: string, value: unknown) =>
  send(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) })

/** Header values of a name, as separate lines. */
function lines(res: RawResponse, name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i]!.toLowerCase() === name) out.push(res.rawHeaders[i + 1]!)
  return out
}

function assertError(res: RawResponse, status: number, code: string, message?: string | RegExp) {
  assert.equal(res.status, status, res.text)
  assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  const body = json(res)
  assert.equal(body.error.code, code)
  if (typeof message === 'string') assert.equal(body.error.message, message)
  else if (message) assert.match(body.error.message, message)
  if (status >= 500) assert.match(body.error.error_id, /^[0-9a-f]{12}$/)
  else assert.equal(body.error.error_id, undefined)
  return body
}

/**
 * Registers an `http` trigger from `worker` and waits until the engine applied it: frames of a
 * connection are applied in order, so a round trip after the registration is a barrier.
 */
async function route(worker: RawWorker, functionId: string, config: unknown, extra: Frame = {}): Promise<string> {
  const id = `http-trigger-${++triggerSeq}`
  worker.send({ type: 'registertrigger', id, trigger_type: 'http', function_id: functionId, config, ...extra })
  await worker.call('engine::workers::list', {})
  return id
}

/** Applies settings for the duration of `body`, then restores the suite's settings. */
async function withSettings(settings: Record<string, unknown>, body: () => Promise<void>): Promise<void> {
  await http.applySettings({ ...BASE_SETTINGS, ...settings })
  try {
    await body()
  } finally {
    await http.applySettings(BASE_SETTINGS)
  }
}

/** A promise with its resolver, for handlers a test releases by hand. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void
  const promise = new Promise<T>((resolve) => (open = resolve))
  return { promise, open }
}

describe('svc-http in the engine (builtins.md §3)', () => {
  before(async () => {
    http = new HttpWorker()
    t = await startTestEngine({ builtins: [http], settings: { 'svc-http': BASE_SETTINGS } })
    w = await RawWorker.connect(t.url, { announce: { name: 'http-test', runtime: 'node' } })
    // Echoes what the function received: the request object and the invocation metadata.
    w.serve('echo', (data, frame) => ({ body: { data, metadata: frame.metadata ?? null } }))
    // Returns the response descriptor sent as the request body (or chosen by ?case=).
    w.serve('respond', (data) => data.body)
  })

  after(async () => {
    await w?.close()
    await t?.stop()
  })

  describe('request object (§3.4, §3.5)', () => {
    it('delivers method, raw path, route, decoded params, query arrays, headers, body, trigger and metadata', async () => {
      await route(w, 'echo', { api_path: 'req/:id/*', http_method: 'post' }, { metadata: { team: 'a' } })
      const res = await send('/req/a%20b%2Fc/x/y%20z?tag=1&tag=2&q=a+b%26c&flag', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Multi': ['1', '2'], 'X-Once': 'v' },
        body: '{"k":[1,2]}',
      })
      assert.equal(res.status, 200, res.text)
      const { data, metadata } = json(res)
      assert.deepEqual(metadata, { team: 'a' })
      assert.equal(data.method, 'POST')
      assert.equal(data.path, '/req/a%20b%2Fc/x/y%20z')
      assert.equal(data.route, '/req/:id/*')
      assert.deepEqual(data.path_params, { id: 'a b/c', '*': 'x/y z' })
      assert.deepEqual(data.query_params, { tag: ['1', '2'], q: 'a b&c', flag: '' })
      assert.deepEqual(data.headers['x-multi'], ['1', '2'])
      assert.equal(data.headers['x-once'], 'v')
      assert.equal(data.headers['content-type'], 'application/json')
      assert.deepEqual(data.body, { k: [1, 2] })
      assert.deepEqual(data.trigger, { type: 'http', path: '/req/:id/*', method: 'POST' })
      // Two channels per request (§3.4): the raw body to read, the response to write.
      assert.deepEqual(Object.keys(data.request_body).sort(), ['access_key', 'channel_id', 'direction'])
      assert.equal(data.request_body.direction, 'read')
      assert.equal(data.response.direction, 'write')
      assert.notEqual(data.request_body.channel_id, data.response.channel_id)
    })

    it('omits metadata when the trigger has none and gives empty maps for no query', async () => {
      await route(w, 'echo', { api_path: '/plain' })
      const { data, metadata } = json(await send('/plain'))
      assert.equal(metadata, null)
      assert.deepEqual(data.query_params, {})
      assert.deepEqual(data.path_params, {})
      assert.equal(data.body, null)
    })

    it('parses bodies by content type', async () => {
      await route(w, 'echo', { api_path: '/body', http_method: 'PUT' })
      const put = async (contentType: string | undefined, body: string | Buffer) => {
        const headers: OutgoingHttpHeaders = contentType ? { 'content-type': contentType } : {}
        const res = await send('/body', { method: 'PUT', headers, body })
        assert.equal(res.status, 200, res.text)
        return json(res).data.body
      }
      assert.deepEqual(await put('application/vnd.api+json', '{"data":{"id":"1"}}'), { data: { id: '1' } })
      assert.equal(await put('application/json', ''), null)
      assert.equal(await put('text/plain; charset=iso-8859-1', Buffer.from([0x63, 0x61, 0x66, 0xe9])), 'café')
      assert.equal(await put('text/markdown', '# café'), '# café')
      assert.deepEqual(await put('application/x-www-form-urlencoded', 'a=1&a=2&b=x+y'), { a: ['1', '2'], b: 'x y' })
      assert.equal(await put('application/octet-stream', Buffer.from([1, 2, 3])), null)
      assert.equal(await put(undefined, 'loose'), null)
    })

    it('reads chunked bodies', async () => {
      await route(w, 'echo', { api_path: '/chunked', http_method: 'POST' })
      const res = await send('/chunked', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
        body: 'streamed text',
        chunked: true,
      })
      assert.equal(json(res).data.body, 'streamed text')
    })

    it('answers 400 INVALID_BODY for malformed JSON without calling the handler', async () => {
      let calls = 0
      w.serve('malformed::fn', () => {
        calls++
        return {}
      })
      await route(w, 'malformed::fn', { api_path: '/malformed', http_method: 'POST' })
      const res = await send('/malformed', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":' })
      assertError(res, 400, 'INVALID_BODY')
      assert.equal(calls, 0)
    })

    it('answers 413 PAYLOAD_TOO_LARGE by Content-Length and while reading a chunked body', async () => {
      let calls = 0
      w.serve('big::fn', () => {
        calls++
        return {}
      })
      await route(w, 'big::fn', { api_path: '/big', http_method: 'POST' })
      const body = 'x'.repeat(2048)
      assertError(await send('/big', { method: 'POST', headers: { 'content-type': 'text/plain' }, body }), 413, 'PAYLOAD_TOO_LARGE')
      const chunked = await send('/big', {
        method: 'POST',
        headers: { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' },
        body,
        chunked: true,
      })
      assertError(chunked, 413, 'PAYLOAD_TOO_LARGE')
      assert.equal(calls, 0)
      // Exactly the limit is accepted.
      assert.equal((await send('/big', { method: 'POST', body: 'x'.repeat(1024) })).status, 200)
    })
  })

  describe('routing (§3.3, §3.9)', () => {
    it('answers 404 NOT_FOUND for an unrouted path', async () => {
      assertError(await send('/no/such/route'), 404, 'NOT_FOUND')
    })

    it('answers 405 METHOD_NOT_ALLOWED with Allow when only the method differs', async () => {
      await route(w, 'echo', { api_path: '/items/:id' })
      await route(w, 'echo', { api_path: '/items/:id', http_method: 'DELETE' })
      const res = await send('/items/1', { method: 'PUT' })
      assertError(res, 405, 'METHOD_NOT_ALLOWED')
      assert.equal(res.headers.allow, 'GET, HEAD, DELETE, OPTIONS')
    })

    it('prefers static over parameter over wildcard, with backtracking', async () => {
      w.serve('static::fn', () => ({ body: 'static' }))
      w.serve('param::fn', (d) => ({ body: `param ${d.path_params.x}` }))
      w.serve('wild::fn', (d) => ({ body: `wild ${d.path_params['*']}` }))
      await route(w, 'static::fn', { api_path: '/prec/b/d' })
      await route(w, 'param::fn', { api_path: '/prec/:x/c' })
      await route(w, 'wild::fn', { api_path: '/prec/*' })
      assert.equal(json(await send('/prec/b/d')), 'static')
      assert.equal(json(await send('/prec/b/c')), 'param b')
      assert.equal(json(await send('/prec/b/e')), 'wild b/e')
      assert.equal(json(await send('/prec/')), 'wild ')
    })

    it('serves HEAD from the GET route with the body dropped and the GET headers kept', async () => {
      await route(w, 'echo', { api_path: '/head-me' })
      const get = await send('/head-me')
      const head = await send('/head-me', { method: 'HEAD' })
      assert.equal(head.status, 200)
      assert.equal(head.text, '')
      assert.equal(head.headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(json(get).data.method, 'GET')
      // The handler saw a HEAD request on a GET route; its answer differs only in that word.
      assert.equal(Number(head.headers['content-length']), Number(get.headers['content-length']) + 1)
    })

    it('serves HEAD from an explicit HEAD route when there is one', async () => {
      w.serve('head::fn', () => ({ status_code: 200, headers: { 'x-from': 'head-route' }, body: 'ignored' }))
      await route(w, 'echo', { api_path: '/head-explicit' })
      await route(w, 'head::fn', { api_path: '/head-explicit', http_method: 'head' })
      const head = await send('/head-explicit', { method: 'HEAD' })
      assert.equal(head.headers['x-from'], 'head-route')
      assert.equal(head.text, '')
    })

    it('answers OPTIONS with 204 and Allow, unless an OPTIONS route exists', async () => {
      await route(w, 'echo', { api_path: '/opts', http_method: 'PATCH' })
      const res = await send('/opts', { method: 'OPTIONS' })
      assert.equal(res.status, 204)
      assert.equal(res.headers.allow, 'PATCH, OPTIONS')
      assert.equal(res.text, '')
      w.serve('options::fn', () => ({ status_code: 200, body: 'custom options' }))
      await route(w, 'options::fn', { api_path: '/opts', http_method: 'OPTIONS' })
      assert.equal(json(await send('/opts', { method: 'OPTIONS' })), 'custom options')
      assertError(await send('/opts-unrouted', { method: 'OPTIONS' }), 404, 'NOT_FOUND')
    })

    it('resolves the function in the trigger namespace', async () => {
      const team = await RawWorker.connect(t.url, { announce: { name: 'team-worker', namespace: 'team' } })
      try {
        team.serve('ns::who', () => ({ body: 'team' }))
        await route(team, 'ns::who', { api_path: '/ns/who' }, { namespace: 'team' })
        assert.equal(json(await send('/ns/who')), 'team')
      } finally {
        await team.close()
      }
    })
  })

  describe('trigger registration (§2.6, §3.2, §3.3)', () => {
    async function refused(config: unknown): Promise<Frame> {
      const id = await route(w, 'echo', config)
      return w.next((f) => f.type === 'triggerregistrationresult' && f.id === id)
    }

    it('refuses invalid configs with INVALID_TRIGGER_CONFIG naming the field', async () => {
      const cases: [unknown, string][] = [
        [{}, 'api_path is required for http triggers'],
        [{ api_path: 7 }, 'api_path must be a string'],
        [{ api_path: '/x', http_method: 'TRACE' }, 'http_method must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS, got "TRACE"'],
        [{ api_path: '/a//b' }, "api_path '/a//b' is invalid: empty segments (//) are not allowed"],
        [{ api_path: '/a/*/b' }, "api_path '/a/*/b' is invalid: '*' is only allowed as the last segment"],
        [{ api_path: '/a/:id/:id' }, "api_path '/a/:id/:id' is invalid: parameter ':id' appears twice"],
        [{ api_path: '/x', condition_function_id: '' }, 'condition_function_id must be a non-empty string'],
        [{ api_path: '/x', middleware_function_ids: 'mw' }, 'middleware_function_ids must be an array of non-empty strings'],
        [{ api_path: '/x', stream_request_body: 'yes' }, 'stream_request_body must be a boolean'],
        [{ api_path: '/x', max_body_bytes: 0 }, 'max_body_bytes must be an integer >= 1, got 0'],
        [{ api_path: '/x', max_body_bytes: 1.5 }, 'max_body_bytes must be an integer >= 1, got 1.5'],
        [{ api_path: '/x', max_body_bytes: '10' }, 'max_body_bytes must be an integer >= 1, got "10"'],
      ]
      for (const [config, message] of cases) {
        const frame = await refused(config)
        assert.deepEqual(frame.error, { code: 'INVALID_TRIGGER_CONFIG', message }, JSON.stringify(config))
        assert.equal(frame.trigger_type, 'http')
        assert.equal(frame.function_id, 'echo')
      }
    })

    it('refuses a same-shape route of another function with ROUTE_CONFLICT and promotes it when the owner leaves', async () => {
      const owner = await RawWorker.connect(t.url, { announce: { name: 'owner' } })
      const rival = await RawWorker.connect(t.url, { announce: { name: 'rival' } })
      try {
        owner.serve('owner::fn', (d) => ({ body: `owner ${d.path_params.x}` }))
        rival.serve('rival::fn', (d) => ({ body: `rival ${d.path_params.y}` }))
        await route(owner, 'owner::fn', { api_path: '/conflict/:x' })
        const rivalId = await route(rival, 'rival::fn', { api_path: '/conflict/:y' })
        const result = await rival.next((f) => f.type === 'triggerregistrationresult' && f.id === rivalId)
        assert.deepEqual(result.error, {
          code: 'ROUTE_CONFLICT',
          message: "Route 'GET /conflict/:y' conflicts with 'GET /conflict/:x' bound to function owner::fn",
        })
        assert.equal(json(await send('/conflict/1')), 'owner 1')
        const info = async () => (await rival.call('engine::registered-triggers::info', { id: rivalId })).result
        assert.equal((await info()).status, 'failed')

        await owner.close()
        await waitFor(async () => (await send('/conflict/2')).text === '"rival 2"', '(await send(\'/conflict/2\')).text === \'"rival 2"\'')
        await waitFor(async () => (await info()).status === 'active', "(await info()).status === 'active'")
        assert.ok(await rival.silent((f) => f.type === 'triggerregistrationresult' && f.id === rivalId, 100))
      } finally {
        await owner.close()
        await rival.close()
      }
    })

    it('lets replicas of one function share a route until the last one leaves', async () => {
      const a = await RawWorker.connect(t.url, { announce: { name: 'replica-a' } })
      const b = await RawWorker.connect(t.url, { announce: { name: 'replica-b' } })
      try {
        a.serve('replica::fn', () => ({ body: 'a' }))
        b.serve('replica::fn', () => ({ body: 'b' }))
        await route(a, 'replica::fn', { api_path: '/replica/:id' })
        const bId = await route(b, 'replica::fn', { api_path: '/replica/:id' })
        assert.ok(await b.silent((f) => f.type === 'triggerregistrationresult' && f.id === bId, 100))
        await a.close()
        await waitFor(async () => (await send('/replica/1')).text === '"b"', '(await send(\'/replica/1\')).text === \'"b"\'')
        await b.close()
        await waitFor(async () => (await send('/replica/1')).status === 404, "(await send('/replica/1')).status === 404")
      } finally {
        await a.close()
        await b.close()
      }
    })

    it('stops serving a route once its trigger is unregistered', async () => {
      const id = await route(w, 'echo', { api_path: '/short-lived' })
      assert.equal((await send('/short-lived')).status, 200)
      w.send({ type: 'unregistertrigger', id })
      await w.call('engine::workers::list', {})
      await waitFor(async () => (await send('/short-lived')).status === 404, "(await send('/short-lived')).status === 404")
    })
  })

  describe('conditions and middleware (§2.2, §3.8)', () => {
    it('answers 422 CONDITION_NOT_MET with skipped: true when the condition returns false', async () => {
      const seen: Frame[] = []
      w.serve('cond::gate', (data, frame) => {
        seen.push({ data, metadata: frame.metadata })
        return data.query_params.allow === undefined ? false : data.query_params.allow === 'null' ? null : true
      })
      await route(w, 'echo', { api_path: '/guarded', condition_function_id: 'cond::gate' }, { metadata: { m: 1 } })
      const denied = await send('/guarded?x=1')
      const body = assertError(denied, 422, 'CONDITION_NOT_MET')
      assert.equal(body.skipped, true)
      // The condition saw the handler's payload and the trigger metadata.
      assert.equal(seen[0]!.data.path, '/guarded')
      assert.deepEqual(seen[0]!.data.query_params, { x: '1' })
      assert.deepEqual(seen[0]!.metadata, { m: 1 })
      assert.equal((await send('/guarded?allow=yes')).status, 200)
      assert.equal((await send('/guarded?allow=null')).status, 200, 'only false skips the handler')
    })

    it('answers 500 with the condition error code when the condition fails or is missing', async () => {
      w.serve('cond::broken', () => {
        throw Object.assign(new Error('no database'), { code: 'DB_DOWN' })
      })
      await route(w, 'echo', { api_path: '/cond-broken', condition_function_id: 'cond::broken' })
      assertError(await send('/cond-broken'), 500, 'DB_DOWN', 'no database')
      await route(w, 'echo', { api_path: '/cond-missing', condition_function_id: 'cond::nobody' })
      assertError(await send('/cond-missing'), 500, 'function_not_found')
    })

    it('runs global middleware by priority, then the condition, route middleware and handler', async () => {
      const order: string[] = []
      w.serve('mw::first', (p) => {
        assert.equal(p.phase, 'preHandler')
        assert.deepEqual(p.context, {})
        assert.equal(p.request.route, '/mw/:id')
        assert.deepEqual(p.request.path_params, { id: '7' })
        order.push('global first')
        return { action: 'continue' }
      })
      w.serve('mw::second', (p) => {
        order.push('global second')
        if (p.request.headers['x-block'] === 'yes') {
          return { action: 'respond', response: { status_code: 403, headers: { 'x-by': 'mw' }, body: { error: 'forbidden' } } }
        }
        return undefined
      })
      w.serve('mw::ignored', () => {
        order.push('ignored phase')
      })
      w.serve('mw::cond', () => {
        order.push('condition')
        return true
      })
      w.serve('mw::route', () => {
        order.push('route middleware')
        return { action: 'something-unknown' }
      })
      w.serve('mw::handler', () => {
        order.push('handler')
        return { body: 'done' }
      })
      await route(w, 'mw::handler', { api_path: '/mw/:id', condition_function_id: 'mw::cond', middleware_function_ids: ['mw::route'] })
      const middleware = [
        { function_id: 'mw::second', priority: 2 },
        { function_id: 'mw::ignored', phase: 'onResponse' },
        { function_id: 'mw::first', priority: 1 },
      ]
      await withSettings({ middleware }, async () => {
        assert.equal(json(await send('/mw/7')), 'done')
        assert.deepEqual(order, ['global first', 'global second', 'condition', 'route middleware', 'handler'])
        order.length = 0
        const blocked = await send('/mw/7', { headers: { 'x-block': 'yes' } })
        assert.equal(blocked.status, 403)
        assert.equal(blocked.headers['x-by'], 'mw')
        assert.deepEqual(json(blocked), { error: 'forbidden' })
        assert.deepEqual(order, ['global first', 'global second'])
      })
    })

    it('answers 500 with the middleware error code when a middleware fails', async () => {
      w.serve('mw::failing', () => {
        throw Object.assign(new Error('token expired'), { code: 'AUTH_FAILED' })
      })
      await route(w, 'echo', { api_path: '/mw-failing', middleware_function_ids: ['mw::failing'] })
      assertError(await send('/mw-failing'), 500, 'AUTH_FAILED', 'token expired')
    })
  })

  describe('handler outcomes (§3.6, §3.9)', () => {
    it('answers 500 with the handler error code and an error_id', async () => {
      w.serve('fails::fn', () => {
        throw Object.assign(new Error('card declined'), { code: 'PAYMENT_FAILED' })
      })
      await route(w, 'fails::fn', { api_path: '/fails' })
      assertError(await send('/fails'), 500, 'PAYMENT_FAILED', 'card declined')
    })

    it('answers 503 FUNCTION_UNAVAILABLE when no live worker serves the function', async () => {
      await route(w, 'nobody::fn', { api_path: '/unavailable' })
      assertError(await send('/unavailable'), 503, 'FUNCTION_UNAVAILABLE', 'No live worker serves function nobody::fn')
    })

    it('answers 500 invalid_response for non-object results and bad status codes', async () => {
      w.serve('invalid::fn', (d) => JSON.parse(d.query_params.r))
      await route(w, 'invalid::fn', { api_path: '/invalid' })
      for (const r of ['"text"', '42', 'true', '[1]', '{"status_code":700}', '{"status_code":"200"}']) {
        assertError(await send(`/invalid?r=${encodeURIComponent(r)}`), 500, 'invalid_response', undefined)
      }
    })

    it('answers 504 TIMEOUT when a handler returns nothing and never writes its response channel (§3.7)', async () => {
      w.serve('nothing::fn', () => undefined)
      await route(w, 'nothing::fn', { api_path: '/nothing' })
      await withSettings({ default_timeout: 300 }, async () => {
        assertError(await send('/nothing'), 504, 'TIMEOUT', 'request exceeded 300 ms')
      })
    })

    it('maps status, headers and the five body rules', async () => {
      await route(w, 'respond', { api_path: '/respond', http_method: 'POST' })
      const r302 = await postJson('/respond', { status_code: 302, headers: { location: 'https://example.com' } })
      assert.equal(r302.status, 302)
      assert.equal(r302.headers.location, 'https://example.com')
      assert.equal(r302.text, '')
      assert.equal(r302.headers['content-type'], undefined)

      const headers = await send('/respond', {
        method: 'POST',
        // The client asks to keep the connection; the handler's `connection: close` must not override that.
        headers: { 'content-type': 'application/json', connection: 'keep-alive' },
        body: JSON.stringify({
          headers: { 'x-num': 5, 'set-cookie': ['a=1', 'b=2'], 'x-dropped': { a: 1 }, 'content-length': '999', connection: 'close' },
          body: { ok: true },
        }),
      })
      assert.equal(headers.status, 200)
      assert.equal(headers.headers['x-num'], '5')
      assert.deepEqual(lines(headers, 'set-cookie'), ['a=1', 'b=2'])
      assert.equal(headers.headers['x-dropped'], undefined)
      assert.equal(headers.headers['content-length'], String(Buffer.byteLength('{"ok":true}')))
      assert.equal(headers.headers.connection, 'keep-alive')
      assert.deepEqual(json(headers), { ok: true })

      const lineHeaders = await postJson('/respond', { headers: ['X-A: 1', 'X-A: 2', 'Cache-Control: no-store'], body: null })
      assert.deepEqual(lines(lineHeaders, 'x-a'), ['1', '2'])
      assert.equal(lineHeaders.headers['cache-control'], 'no-store')

      const r204 = await postJson('/respond', { status_code: 204, body: { dropped: true } })
      assert.equal(r204.status, 204)
      assert.equal(r204.text, '')

      const html = await postJson('/respond', { headers: { 'content-type': 'text/html' }, body: '<b>hi</b>' })
      assert.equal(html.headers['content-type'], 'text/html')
      assert.equal(html.text, '<b>hi</b>')

      const csv = await postJson('/respond', { headers: { 'content-type': 'text/csv' }, body: ['a', 1] })
      assert.equal(csv.headers['content-type'], 'text/csv')
      assert.equal(csv.text, '["a",1]')

      const str = await postJson('/respond', { status_code: 201, body: 'created' })
      assert.equal(str.status, 201)
      assert.equal(str.headers['content-type'], 'application/json; charset=utf-8')
      assert.equal(str.text, '"created"')

      const utf8 = await postJson('/respond', { body: { name: 'Zoë' } })
      assert.equal(utf8.headers['content-length'], String(Buffer.byteLength('{"name":"Zoë"}')))
      assert.deepEqual(json(utf8), { name: 'Zoë' })
    })

    it('answers 504 TIMEOUT when default_timeout runs out, and discards the late result', async () => {
      const late = gate<void>()
      const invoked = gate<void>()
      w.serve('slow::fn', async () => {
        invoked.open()
        await late.promise
        return { body: 'too late' }
      })
      await route(w, 'slow::fn', { api_path: '/slow' })
      await withSettings({ default_timeout: 300 }, async () => {
        const res = await send('/slow')
        assertError(res, 504, 'TIMEOUT', 'request exceeded 300 ms')
        await invoked.promise
        late.open()
        // The late answer changes nothing: the worker keeps serving.
        assert.equal((await send('/plain')).status, 200)
      })
    })
  })

  describe('settings (§3.1)', () => {
    it('queues requests beyond concurrency_request_limit instead of rejecting them', async () => {
      const release = gate<void>()
      const started = gate<void>()
      let fastCalls = 0
      w.serve('held::fn', async () => {
        started.open()
        await release.promise
        return { body: 'held' }
      })
      w.serve('fast::fn', () => {
        fastCalls++
        return { body: 'fast' }
      })
      await route(w, 'held::fn', { api_path: '/held' })
      await route(w, 'fast::fn', { api_path: '/fast' })
      await withSettings({ concurrency_request_limit: 1 }, async () => {
        const first = send('/held')
        await started.promise
        const second = send('/fast')
        assert.equal((await send('/nowhere')).status, 404, 'unrouted requests need no slot')
        assert.equal(fastCalls, 0, 'the second request waits for the slot')
        release.open()
        assert.equal((await first).status, 200)
        assert.equal((await second).status, 200)
        assert.equal(fastCalls, 1)
      })
    })

    it('adds CORS headers and answers preflights only when cors is set', async () => {
      await route(w, 'echo', { api_path: '/cors', http_method: 'POST' })
      const preflightHeaders = {
        origin: 'https://app.test',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-custom, content-type',
      }
      const plain = await send('/cors', { method: 'OPTIONS', headers: preflightHeaders })
      assert.equal(plain.status, 204)
      assert.equal(plain.headers['access-control-allow-origin'], undefined)

      await withSettings({ cors: { allowed_origins: ['https://app.test'], allow_credentials: true, max_age_seconds: 60 } }, async () => {
        const preflight = await send('/cors', { method: 'OPTIONS', headers: preflightHeaders })
        assert.equal(preflight.status, 204)
        assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.test')
        assert.equal(preflight.headers['access-control-allow-credentials'], 'true')
        assert.equal(preflight.headers['access-control-allow-methods'], 'POST, OPTIONS')
        assert.equal(preflight.headers['access-control-allow-headers'], 'x-custom, content-type')
        assert.equal(preflight.headers['access-control-max-age'], '60')

        const actual = await send('/cors', { method: 'POST', headers: { origin: 'https://app.test' } })
        assert.equal(actual.status, 200)
        assert.equal(actual.headers['access-control-allow-origin'], 'https://app.test')
        assert.match(String(actual.headers.vary), /Origin/)

        const foreign = await send('/cors', { method: 'POST', headers: { origin: 'https://evil.test' } })
        assert.equal(foreign.headers['access-control-allow-origin'], undefined)
      })
      await withSettings({ cors: { allowed_origins: ['*'], allowed_methods: ['post', 'get'], allowed_headers: ['x-a'] } }, async () => {
        const preflight = await send('/cors', { method: 'OPTIONS', headers: preflightHeaders })
        assert.equal(preflight.headers['access-control-allow-origin'], '*')
        assert.equal(preflight.headers['access-control-allow-methods'], 'POST, GET')
        assert.equal(preflight.headers['access-control-allow-headers'], 'x-a')
        assert.equal(preflight.headers['access-control-max-age'], '600')
      })
    })

    it('refuses invalid settings naming the key and keeps the previous ones', async () => {
      const before = base()
      await assert.rejects(http.applySettings({ port: 'x' }), { code: 'INVALID_ARGUMENTS', message: 'port must be an integer from 0 to 65535, got "x"' })
      await assert.rejects(http.applySettings({ ...BASE_SETTINGS, default_timeout: -5 }), {
        code: 'INVALID_ARGUMENTS',
        message: 'default_timeout must be an integer from 1 to 2147483647, got -5',
      })
      await assert.rejects(http.applySettings({ ...BASE_SETTINGS, middleware: [{}] }), {
        code: 'INVALID_ARGUMENTS',
        message: 'middleware[0].function_id must be a non-empty string',
      })
      assert.equal(base(), before)
      assert.equal(http.settings?.max_body_bytes, 1024)
      assert.equal((await send('/plain')).status, 200)
    })

    it('keeps the old listener when the new port cannot be bound', async () => {
      const blocker: Server = createServer()
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
      try {
        const taken = (blocker.address() as { port: number }).port
        const before = base()
        await assert.rejects(http.applySettings({ ...BASE_SETTINGS, port: taken }), { code: 'EADDRINUSE' })
        assert.equal(base(), before)
        assert.equal(http.settings?.port, 0)
        assert.equal((await send('/plain')).status, 200)
        // builtins.md §2.7: the failure is reported as last_config_error until an apply succeeds.
        const info = async () => ((await t.engine.inject({ function_id: 'engine::workers::info', data: { name: 'svc-http' } })) as { worker: { last_config_error?: string } }).worker
        assert.match((await info()).last_config_error ?? '', /^port: .*EADDRINUSE/)
        await http.applySettings(BASE_SETTINGS)
        assert.equal((await info()).last_config_error, undefined)
      } finally {
        await new Promise((resolve) => blocker.close(resolve))
      }
    })

    it('binds the new address before closing the old one on a port change', async () => {
      const probe: Server = createServer()
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
      const port = (probe.address() as { port: number }).port
      await new Promise((resolve) => probe.close(resolve))

      const release = gate<void>()
      const started = gate<void>()
      w.serve('in-flight::fn', async () => {
        started.open()
        await release.promise
        return { body: 'finished on the old listener' }
      })
      await route(w, 'in-flight::fn', { api_path: '/in-flight' })
      const old = base()
      const inFlight = send('/in-flight', { url: old })
      await started.promise

      await http.applySettings({ ...BASE_SETTINGS, port })
      assert.deepEqual(t.engine.listenUrls('svc-http'), [`http://127.0.0.1:${port}`])
      assert.deepEqual(http.listenUrls, [`http://127.0.0.1:${port}`])
      assert.equal((await send('/plain')).status, 200)
      await assert.rejects(send('/plain', { url: old }), { code: 'ECONNREFUSED' })
      release.open()
      const finished = await inFlight
      assert.equal(finished.status, 200)
      assert.equal(json(finished), 'finished on the old listener')
    })
  })
})

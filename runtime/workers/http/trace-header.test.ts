/**
 * Trace ids on svc-http's responses (issue 21): every answer carries the W3C `traceparent` of the
 * request's trace (its server span's when one is recorded, else the client's own header), error
 * envelopes add `trace_id` beside `code`, `message` and `error_id`, and the id leads to the
 * recorded trace (`engine::traces::list`).
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/

interface Answer {
  status: number
  /** Every `traceparent` line of the response. */
  traceparents: string[]
  body: string
}

describe('svc-http responses carry their trace', () => {
  let t: TestEngine
  let w: RawWorker

  const send = (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = request(`${t.httpUrl}${path}`, { method, headers, agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const traceparents: string[] = []
          for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i]!.toLowerCase() === 'traceparent') traceparents.push(res.rawHeaders[i + 1]!)
          resolve({ status: res.statusCode!, traceparents, body: Buffer.concat(chunks).toString() })
        })
      })
      req.on('error', reject)
      req.end()
    })

  /** The stored trace of `traceId`, by its root span's name, once the engine has it. */
  const rootName = async (traceId: string): Promise<string> => {
    let name = ''
    await waitFor(async () => {
      const { traces } = (await t.engine.inject({ function_id: 'engine::traces::list', data: { trace_id: traceId } })) as { traces: Array<{ name: string }> }
      name = traces[0]?.name ?? ''
      return name !== ''
    }, 'the condition')
    return name
  }

  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } } })
    w = await RawWorker.connect(t.url, { announce: { name: 'trace-header-test', runtime: 'node' } })
    w.serve('ok', () => ({ status_code: 200, body: { ok: true } }))
    w.serve('own', () => ({ status_code: 200, headers: { traceparent: `00-${'9'.repeat(32)}-${'9'.repeat(16)}-01`, 'x-kept': 'yes' }, body: 'mine' }))
    w.serve('fail', () => {
      throw Object.assign(new Error('out of stock'), { code: 'E_STOCK' })
    })
    for (const [i, [fn, api_path]] of [['ok', '/ok'], ['own', '/own'], ['fail', '/fail']].entries()) {
      w.send({ type: 'registertrigger', id: `th-${i}`, trigger_type: 'http', function_id: fn, config: { api_path, http_method: 'GET' } })
    }
    await w.call('engine::workers::list', {})
  })

  after(async () => {
    await w?.close()
    await t?.stop()
  })

  it('a success carries the traceparent of the request span, whose trace is stored', async () => {
    const a = await send('/ok')
    assert.equal(a.status, 200)
    assert.equal(a.traceparents.length, 1, a.traceparents.join(' | '))
    const [, traceId] = W3C.exec(a.traceparents[0]!)!
    assert.equal(await rootName(traceId!), 'GET /ok')
  })

  it("continues the client's trace: same trace id, the server span as parent id", async () => {
    const sent = `00-${'a1'.repeat(16)}-${'b2'.repeat(8)}-01`
    const a = await send('/ok', { traceparent: sent })
    const [, traceId, parentId] = W3C.exec(a.traceparents[0]!)!
    assert.equal(traceId, 'a1'.repeat(16))
    assert.notEqual(parentId, 'b2'.repeat(8))
  })

  it('a failing handler: the error envelope keeps code, message and error_id and adds trace_id, the header trace', async () => {
    const a = await send('/fail')
    assert.equal(a.status, 500)
    const { error } = JSON.parse(a.body) as { error: Record<string, string> }
    assert.deepEqual(Object.keys(error).sort(), ['code', 'error_id', 'message', 'trace_id'])
    assert.equal(error.code, 'E_STOCK')
    assert.equal(error.message, 'out of stock')
    const [, traceId] = W3C.exec(a.traceparents[0]!)!
    assert.equal(error.trace_id, traceId)
    assert.equal(await rootName(traceId!), 'GET /fail')
  })

  it("the server's traceparent replaces one the handler set", async () => {
    const a = await send('/own')
    assert.equal(a.traceparents.length, 1)
    assert.doesNotMatch(a.traceparents[0]!, /^00-9{32}/)
  })

  it("answers without a route echo the client's valid traceparent (and name it in the body), never a malformed one", async () => {
    const sent = `00-${'c3'.repeat(16)}-${'d4'.repeat(8)}-01`
    const missing = await send('/nowhere', { traceparent: sent })
    assert.equal(missing.status, 404)
    assert.deepEqual(missing.traceparents, [sent])
    assert.equal((JSON.parse(missing.body) as { error: { trace_id: string } }).error.trace_id, 'c3'.repeat(16))
    const malformed = await send('/nowhere', { traceparent: `00-${'c3'.repeat(16)}-${'d4'.repeat(8)}-01\tx` })
    assert.deepEqual(malformed.traceparents, [])
    assert.equal((JSON.parse(malformed.body) as { error: { trace_id?: string } }).error.trace_id, undefined)
    const options = await send('/ok', { traceparent: sent }, 'OPTIONS')
    assert.deepEqual(options.traceparents, [sent])
  })
})

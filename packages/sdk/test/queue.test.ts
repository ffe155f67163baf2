/**
 * svc-sdk with the queue worker (sdk.md TriggerAction, builtins.md §7.7): `TriggerAction.Enqueue`
 * with `delayMs` and `idempotencyKey`, and the handler signals `NonRetryableError` and
 * `RetryAfterError` mapping to the wire bodies the queue acts on.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { startTestEngine } from '../../../test/support/engine.ts'
import { toErrorBody } from '../src/errors.ts'
import { NonRetryableError, registerWorker, RetryAfterError, TriggerAction } from '../src/index.ts'
import { until } from './support/peer.ts'

describe('svc-sdk queue signals', () => {
  it('map to the §7.7 error bodies', () => {
    const fatal = toErrorBody(new NonRetryableError('bad order'))
    assert.equal(fatal.code, 'NON_RETRYABLE')
    assert.equal(fatal.message, 'bad order')
    const later = toErrorBody(new RetryAfterError(1500, 'rate limited'))
    assert.deepEqual([later.code, later.message, later.retry_after_ms], ['RETRY_AFTER', 'rate limited', 1500])
    assert.equal(new RetryAfterError(10).retryAfterMs, 10)
    assert.throws(() => new RetryAfterError(-1), RangeError)
    assert.throws(() => new RetryAfterError(Number.NaN), RangeError)
  })

  it('enqueue with an idempotency key and a delay; NonRetryableError dead-letters, RetryAfterError retries', async (t: TestContext) => {
    const engine = await startTestEngine({ settings: { queue: { adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 3, backoff_ms: 3_600_000 } } } } })
    t.after(() => engine.stop())
    const client = registerWorker(engine.url, { workerName: 'sdk-queue-test' })
    t.after(() => client.shutdown())
    let later = 0
    let plain = 0
    client.registerFunction('jobs::fatal', () => {
      throw new NonRetryableError('never valid')
    })
    client.registerFunction('jobs::later', () => {
      if (later++ === 0) throw new RetryAfterError(5)
      return { ok: true }
    })
    client.registerFunction('jobs::plain', () => void plain++)
    const a = await client.trigger({ function_id: 'jobs::plain', payload: { n: 1 }, action: TriggerAction.Enqueue({ queue: 'jobs', idempotencyKey: 'k1' }) })
    const b = await client.trigger({ function_id: 'jobs::plain', payload: { n: 2 }, action: TriggerAction.Enqueue({ queue: 'jobs', idempotencyKey: 'k1' }) })
    assert.equal(b.messageReceiptId, a.messageReceiptId)
    await client.trigger({ function_id: 'jobs::plain', payload: { n: 3 }, action: TriggerAction.Enqueue({ queue: 'jobs', delayMs: 20 }) })
    const fatal = await client.trigger({ function_id: 'jobs::fatal', payload: {}, action: TriggerAction.Enqueue({ queue: 'jobs' }) })
    await client.trigger({ function_id: 'jobs::later', payload: {}, action: TriggerAction.Enqueue({ queue: 'jobs' }) })
    await until(() => plain === 2 && later === 2, 'deliveries and the retry')
    const dlq = (await client.trigger({ function_id: 'engine::queue::dlq_messages', payload: { topic: 'jobs' } })) as Array<{ id: string; attempts: number; error: { code: string } }>
    assert.equal(dlq.length, 1)
    assert.deepEqual([dlq[0]!.id, dlq[0]!.attempts, dlq[0]!.error.code], [fatal.messageReceiptId, 1, 'NON_RETRYABLE'])
    await assert.rejects(client.trigger({ function_id: 'jobs::plain', payload: {}, action: TriggerAction.Enqueue({ queue: 'missing' }) }), { code: 'queue_not_found' })
  })
})

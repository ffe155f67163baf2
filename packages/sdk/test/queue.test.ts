/**
 * svc-sdk with the queue worker (sdk.md TriggerAction, builtins.md §7.7): `TriggerAction.Enqueue`
 * with `delayMs` and `idempotencyKey`, and the handler signals `NonRetryableError` and
 * `RetryAfterError` mapping to the wire bodies the queue acts on.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import { startTestEngine } from '../../../test/support/engine.ts'
import { toErrorBody } from '../src/errors.ts'
import { defineQueue, InvocationError, NonRetryableError, registerWorker, RetryAfterError, TriggerAction, type QueueSettings } from '../src/index.ts'
import { waitFor } from '../../../test/support/wait.ts'

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
    await waitFor(() => plain === 2 && later === 2, 'deliveries and the retry', 5000, 5)
    const dlq = (await client.trigger({ function_id: 'engine::queue::dlq_messages', payload: { topic: 'jobs' } })) as Array<{ id: string; attempts: number; error: { code: string } }>
    assert.equal(dlq.length, 1)
    assert.deepEqual([dlq[0]!.id, dlq[0]!.attempts, dlq[0]!.error.code], [fatal.messageReceiptId, 1, 'NON_RETRYABLE'])
    await assert.rejects(client.trigger({ function_id: 'jobs::plain', payload: {}, action: TriggerAction.Enqueue({ queue: 'missing' }) }), { code: 'queue_not_found' })
  })

  it('defineQueue: a worker declares its queues at start and enqueues to them at once', async (t: TestContext) => {
    const engine = await startTestEngine({ settings: { queue: { adapter: { name: 'memory' } } } })
    t.after(() => engine.stop())
    const client = registerWorker(engine.url, { workerName: 'sdk-define-test' })
    t.after(() => client.shutdown())
    const got: Array<{ account: string; n: number }> = []
    let failures = 0
    client.registerFunction('bank::apply', (op: { account: string; n: number }) => void got.push(op))
    client.registerFunction('mail::flaky', () => {
      failures++
      throw new Error('SMTP refused')
    })
    // Before the queue exists: refused, as a user would first see it.
    await assert.rejects(client.trigger({ function_id: 'bank::apply', payload: {}, action: TriggerAction.Enqueue({ queue: 'ledger' }) }), { code: 'queue_not_found' })

    assert.deepEqual(await defineQueue(client, 'ledger', { type: 'fifo', message_group_field: 'account', max_retries: 1 }), { queue: 'ledger', changed: true })
    assert.deepEqual(await defineQueue(client, 'ledger', { type: 'fifo', message_group_field: 'account', max_retries: 1 }), { queue: 'ledger', changed: false })
    assert.deepEqual(await defineQueue(client, 'mail', { max_retries: 0 }), { queue: 'mail', changed: true })
    for (const n of [1, 2, 3]) await client.trigger({ function_id: 'bank::apply', payload: { account: 'a1', n }, action: TriggerAction.Enqueue({ queue: 'ledger' }) })
    await client.trigger({ function_id: 'mail::flaky', payload: {}, action: TriggerAction.Enqueue({ queue: 'mail' }) })
    await waitFor(() => got.length === 3 && failures === 1, 'deliveries of the defined queues', 5000, 5)
    assert.deepEqual(got.map((op) => op.n), [1, 2, 3])
    // The settings given are the settings in effect: fifo by account, one attempt for mail.
    const ledger = (await client.trigger({ function_id: 'engine::queue::topic_stats', payload: { topic: 'ledger' } })) as { config: Record<string, unknown> }
    assert.deepEqual([ledger.config.type, ledger.config.message_group_field, ledger.config.max_retries], ['fifo', 'account', 1])
    let dead: unknown[] = []
    await waitFor(async () => (dead = (await client.trigger({ function_id: 'engine::queue::dlq_messages', payload: { topic: 'mail' } })) as unknown[]).length === 1, 'the condition')
    assert.equal(dead.length, 1)
    assert.equal(failures, 1)

    // Settings the worker refuses come back as invalid_queue_config naming the key.
    const refused = await defineQueue(client, 'broken', { type: 'fifo' } as unknown as QueueSettings).then(
      () => assert.fail('defined a fifo queue without message_group_field'),
      (e: InvocationError) => e,
    )
    assert.ok(refused instanceof InvocationError)
    assert.deepEqual([refused.code, refused.detail], ['invalid_queue_config', "Queue 'broken' is of type 'fifo' but 'message_group_field' is not set"])
    await assert.rejects(defineQueue(client, 'no spaces', {}), { code: 'invalid_queue_config' })
  })

  it('defineQueue under hostile names and settings: defined, or refused with a queue code, never anything else (fast-check)', async (t: TestContext) => {
    const engine = await startTestEngine({ settings: { queue: { adapter: { name: 'memory' } } } })
    t.after(() => engine.stop())
    const client = registerWorker(engine.url, { workerName: 'sdk-define-fuzz', otel: { enabled: false } })
    t.after(() => client.shutdown())
    const hostile = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('__proto__', 'constructor', '', '\ud800', -1, 1e308, 1025, 'fifo', 'standard'))
    const name = fc.oneof(fc.stringMatching(/^fz[A-Za-z0-9_.:-]{0,20}$/), hostile)
    const settings = fc.oneof(
      hostile,
      fc.record({ type: hostile, message_group_field: hostile, max_retries: hostile, backoff_ms: hostile, max_backoff_ms: hostile, concurrency: hostile, delivery_timeout_ms: hostile, concurrency_key_field: hostile }, { requiredKeys: [] }),
    )
    await fc.assert(
      fc.asyncProperty(name, settings, async (queue, config) => {
        try {
          const result = await defineQueue(client, queue as string, config as QueueSettings)
          assert.equal(result.queue, queue)
          // A queue it defined takes messages at once.
          await client.trigger({ function_id: 'sdk::nothing', payload: {}, action: TriggerAction.Enqueue({ queue: queue as string }) })
        } catch (error) {
          assert.ok(error instanceof InvocationError, String(error))
          assert.ok(['invalid_queue_config', 'queue_not_set', 'INVALID_ARGUMENTS', 'SCHEMA_INVALID'].includes(error.code), `${error.code}: ${error.detail}`)
        }
      }),
      { numRuns: 80 },
    )
  })
})

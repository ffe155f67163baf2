import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { createCondition } from './conditions.ts'
import { fakeWorker } from './test-support/fakes.ts'

describe('createCondition (builtins.md §2.2, protocol.md §8.6)', () => {
  it('is null when the binding names no condition', () => {
    const worker = fakeWorker()
    assert.equal(createCondition(worker, { namespace: 'default' }), null)
    assert.equal(createCondition(worker, { condition_function_id: null, namespace: 'default' }), null)
    assert.equal(createCondition(worker, { condition_function_id: '', namespace: 'default' }), null)
  })

  it('sends the payload, the metadata as second argument, the namespace, budget and trace context', async () => {
    const worker = fakeWorker({ cond: () => true })
    const condition = createCondition(worker, { condition_function_id: 'cond', namespace: 'shop', metadata: { tier: 'gold' } })!
    const outcome = await condition({ order: 1 }, { timeoutMs: 250, traceparent: '00-abc-def-01', baggage: 'k=v' })
    assert.deepEqual(outcome, { run: true })
    assert.deepEqual(worker.calls, [
      { function_id: 'cond', data: { order: 1 }, namespace: 'shop', timeoutMs: 250, metadata: { tier: 'gold' }, traceparent: '00-abc-def-01', baggage: 'k=v' },
    ])
  })

  it('omits metadata when the binding has none (§2.3)', async () => {
    const worker = fakeWorker({ cond: () => true })
    await createCondition(worker, { condition_function_id: 'cond', namespace: 'default', metadata: null })!(1, { timeoutMs: 1 })
    assert.equal('metadata' in worker.calls[0]!, false)
  })

  it('skips only on exactly false; every other result runs the handler', async () => {
    const results: unknown[] = [true, undefined, null, 0, '', {}, [], 'false']
    for (const result of [false, ...results]) {
      const condition = createCondition(fakeWorker({ cond: () => result }), { condition_function_id: 'cond', namespace: 'default' })!
      const outcome = await condition({}, { timeoutMs: 10 })
      assert.deepEqual(outcome, result === false ? { run: false, failed: false } : { run: true }, `result ${JSON.stringify(result)}`)
    }
  })

  it('skips and carries the error when the call fails, times out or finds no function', async () => {
    const thrown = new SvcError('E_RULES', 'rules engine down')
    const worker = fakeWorker({
      cond: () => {
        throw thrown
      },
    })
    const failing = await createCondition(worker, { condition_function_id: 'cond', namespace: 'default' })!({}, { timeoutMs: 10 })
    assert.equal(failing.run, false)
    assert.ok(!failing.run && failing.failed)
    assert.equal(failing.error, thrown)
    assert.deepEqual(failing.body, { code: 'E_RULES', message: 'rules engine down' })

    const missing = await createCondition(worker, { condition_function_id: 'nope', namespace: 'shop' })!({}, { timeoutMs: 10 })
    assert.ok(!missing.run && missing.failed)
    assert.equal(missing.body.code, 'function_not_found')
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { createManualClock } from './clock.ts'
import { MAX_QUEUED_EVENTS, OrderedFanOut, type FanOutOptions } from './fanout.ts'
import { fakeWorker, gate, recordingLogger } from './test-support/fakes.ts'
import { nextTurn, waitFor } from '../../../test/support/wait.ts'

function setup(handlers: Parameters<typeof fakeWorker>[0], options: Partial<FanOutOptions> = {}) {
  const worker = fakeWorker(handlers)
  const { log, entries } = recordingLogger()
  const fanOut = new OrderedFanOut<number>({ worker, log, timeoutMs: 1000, triggerType: 'state', ...options })
  return { worker, entries, fanOut }
}

const target = (id: string, extra: Record<string, unknown> = {}) => ({ id, function_id: `${id}::handler`, namespace: 'default', ...extra })

describe('OrderedFanOut (builtins.md §2.5)', () => {
  it('never delivers inside push: the writer answers first (rule 1)', async () => {
    const seen: number[] = []
    const { fanOut } = setup({ 'a::handler': (n) => void seen.push(n as number) })
    fanOut.register(target('a')).push(1)
    assert.deepEqual(seen, [])
    await waitFor(() => seen.length === 1, 'seen.length === 1')
  })

  it('delivers each binding its events in push order, one at a time (rule 3)', async () => {
    let inFlight = 0
    let maxInFlight = 0
    const seen: number[] = []
    const { fanOut } = setup({
      'a::handler': async (n) => {
        inFlight++
        maxInFlight = Math.max(maxInFlight, inFlight)
        await new Promise((resolve) => setTimeout(resolve, (n as number) % 3))
        seen.push(n as number)
        inFlight--
      },
    })
    const queue = fanOut.register(target('a'))
    for (let i = 0; i < 20; i++) queue.push(i)
    await waitFor(() => seen.length === 20, 'seen.length === 20')
    assert.deepEqual(seen, [...Array(20).keys()])
    assert.equal(maxInFlight, 1)
  })

  it('keeps bindings independent: a stuck handler does not hold back another binding', async () => {
    const stuck = gate()
    const seen: string[] = []
    const { fanOut } = setup({ 'slow::handler': () => stuck.promise, 'fast::handler': (n) => void seen.push(`fast ${n}`) })
    const slow = fanOut.register(target('slow'))
    const fast = fanOut.register(target('fast'))
    for (let i = 0; i < 3; i++) {
      slow.push(i)
      fast.push(i)
    }
    await waitFor(() => seen.length === 3, 'seen.length === 3')
    assert.equal(slow.length, 2, 'the stuck binding still holds its later events')
    stuck.open()
    await waitFor(() => slow.length === 0, 'slow.length === 0')
  })

  it('runs the condition first with payload and metadata; false skips, a failure skips and is logged', async () => {
    const delivered: number[] = []
    const { fanOut, worker, entries } = setup({
      'a::handler': (n) => void delivered.push(n as number),
      'a::cond': (n) => {
        if (n === 2) throw new SvcError('E_COND', 'bad')
        return n !== 1
      },
    })
    const queue = fanOut.register(target('a', { condition_function_id: 'a::cond', metadata: { m: 1 }, namespace: 'shop' }))
    for (const n of [0, 1, 2, 3]) queue.push(n, { traceparent: `tp-${n}` })
    await waitFor(() => delivered.length === 2, 'delivered.length === 2')
    assert.deepEqual(delivered, [0, 3])
    const condCall = worker.calls.find((c) => c.function_id === 'a::cond')!
    assert.deepEqual(condCall, { function_id: 'a::cond', data: 0, namespace: 'shop', timeoutMs: 1000, metadata: { m: 1 }, traceparent: 'tp-0' })
    const handlerCall = worker.calls.find((c) => c.function_id === 'a::handler')!
    assert.equal(handlerCall.traceparent, 'tp-0', 'trace origin is passed through (rule 7)')
    assert.deepEqual(handlerCall.metadata, { m: 1 })
    const errors = entries.filter((e) => e.level === 'error')
    assert.equal(errors.length, 1)
    assert.equal(errors[0]!.message, 'state trigger a: condition failed; event not delivered')
    assert.deepEqual(errors[0]!.data, { trigger_id: 'a', function_id: 'a::cond', code: 'E_COND', message: 'bad' })
  })

  it('gives the handler what the condition left of the budget, and names the whole budget on timeout (rule 4)', async () => {
    const clock = createManualClock()
    const { fanOut, worker, entries } = setup(
      {
        'a::cond': (n) => {
          clock.advance(n === 0 ? 400 : 1000)
          return true
        },
        'a::handler': () => undefined,
      },
      { clock },
    )
    const queue = fanOut.register(target('a', { condition_function_id: 'a::cond' }))
    queue.push(0)
    queue.push(1)
    await waitFor(() => entries.some((e) => e.level === 'error'), "entries.some((e) => e.level === 'error')")
    const handlerCalls = worker.calls.filter((c) => c.function_id === 'a::handler')
    assert.deepEqual(handlerCalls.map((c) => c.timeoutMs), [600])
    assert.deepEqual(entries.find((e) => e.level === 'error')!.data, {
      trigger_id: 'a',
      function_id: 'a::handler',
      code: 'TIMEOUT',
      message: 'invocation timed out after 1000ms',
    })
  })

  it('logs a failing handler and goes on with the next event', async () => {
    const seen: number[] = []
    const { fanOut, entries } = setup({
      'a::handler': (n) => {
        if (n === 0) throw new SvcError('E_H', 'boom')
        seen.push(n as number)
      },
    })
    const queue = fanOut.register(target('a'))
    queue.push(0)
    queue.push(1)
    await waitFor(() => seen.length === 1, 'seen.length === 1')
    assert.deepEqual(entries.filter((e) => e.level === 'error').map((e) => [e.message, e.data?.code]), [['state trigger a: handler failed', 'E_H']])
  })

  it('drops the oldest event beyond maxQueued with a rate-limited warning (rule 5)', async () => {
    const clock = createManualClock()
    const stuck = gate()
    const seen: number[] = []
    const { fanOut, entries } = setup(
      {
        'a::handler': async (n) => {
          if (n === 0) await stuck.promise
          seen.push(n as number)
        },
      },
      { clock, maxQueued: 3, dropWarningIntervalMs: 1000 },
    )
    const queue = fanOut.register(target('a'))
    queue.push(0)
    await waitFor(() => queue.length === 0, 'queue.length === 0') // 0 is being delivered
    for (let i = 1; i <= 6; i++) queue.push(i) // 1, 2, 3 dropped
    const warnings = () => entries.filter((e) => e.level === 'warn')
    assert.equal(warnings().length, 1, 'the first drop warns, the next ones within the interval do not')
    assert.deepEqual(warnings()[0]!.data, { trigger_id: 'a', function_id: 'a::handler', dropped: 1 })
    assert.equal(warnings()[0]!.message, 'state trigger a has 3 undelivered events; dropped the oldest')
    clock.advance(1000)
    queue.push(7) // drops 4
    assert.equal(warnings().length, 2)
    assert.equal(warnings()[1]!.data!.dropped, 4)
    stuck.open()
    await waitFor(() => seen.length === 4, 'seen.length === 4')
    assert.deepEqual(seen, [0, 5, 6, 7])
    assert.equal(MAX_QUEUED_EVENTS, 10_000)
  })

  it('drops the waiting events of an unregistered binding and ignores later pushes', async () => {
    const stuck = gate()
    const seen: number[] = []
    const { fanOut } = setup({
      'a::handler': async (n) => {
        if (n === 0) await stuck.promise
        seen.push(n as number)
      },
    })
    const queue = fanOut.register(target('a'))
    queue.push(0)
    queue.push(1)
    await waitFor(() => queue.length === 1, 'queue.length === 1')
    fanOut.unregister('a')
    assert.equal(fanOut.get('a'), undefined)
    queue.push(2)
    stuck.open()
    await waitFor(() => seen.length > 0, 'the delivery in flight to finish')
    await nextTurn() // the drain goes on by promises alone: a wrong next delivery has run by now
    assert.deepEqual(seen, [0])
  })

  it('keeps the queue of a re-registered id and delivers to the new target', async () => {
    const stuck = gate()
    const seen: string[] = []
    const { fanOut } = setup({
      'a::handler': async (n) => {
        await stuck.promise
        seen.push(`old ${n}`)
      },
      'a::v2': (n) => void seen.push(`new ${n}`),
    })
    const queue = fanOut.register(target('a'))
    queue.push(0)
    queue.push(1)
    await waitFor(() => queue.length === 1, 'queue.length === 1')
    assert.equal(fanOut.register({ ...target('a'), function_id: 'a::v2' }), queue)
    stuck.open()
    await waitFor(() => seen.length === 2, 'seen.length === 2')
    assert.deepEqual(seen, ['old 0', 'new 1'])
  })

  it('clear() drops what waits; stop() also refuses new events and silences in-flight failures', async () => {
    const stuck = gate()
    const thrown = gate()
    const seen: number[] = []
    const { fanOut, entries } = setup({
      'a::handler': async (n) => {
        if (n === 0) {
          await stuck.promise
          thrown.open()
          throw new SvcError('E', 'late')
        }
        seen.push(n as number)
      },
    })
    const queue = fanOut.register(target('a'))
    queue.push(0)
    queue.push(1)
    await waitFor(() => queue.length === 1, 'queue.length === 1')
    fanOut.clear()
    assert.equal(queue.length, 0)
    fanOut.stop()
    queue.push(2)
    assert.equal(queue.length, 0)
    stuck.open()
    await thrown.promise
    await nextTurn() // the failure and any wrong later delivery run by promises alone: done by now
    assert.deepEqual(seen, [])
    assert.equal(entries.filter((e) => e.level === 'error').length, 0)
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { createManualClock, MAX_TIMER_MS, systemClock } from './clock.ts'

describe('manual clock', () => {
  it('fires due timers in due order, ties in set order, and only when advanced far enough', () => {
    const clock = createManualClock(100)
    const fired: string[] = []
    clock.setTimeout(() => fired.push('b@20'), 20)
    clock.setTimeout(() => fired.push('a@10'), 10)
    clock.setTimeout(() => fired.push('c@20'), 20)
    clock.advance(9)
    assert.deepEqual(fired, [])
    assert.equal(clock.now(), 109)
    clock.advance(11)
    assert.deepEqual(fired, ['a@10', 'b@20', 'c@20'])
    assert.equal(clock.pending, 0)
  })

  it('reads the due time inside a callback and fires timers set by callbacks when due', () => {
    const clock = createManualClock()
    const seen: number[] = []
    clock.setTimeout(() => {
      seen.push(clock.now())
      clock.setTimeout(() => seen.push(clock.now()), 5)
    }, 10)
    clock.advance(100)
    assert.deepEqual(seen, [10, 15])
    assert.equal(clock.now(), 100)
  })

  it('cancels timers', () => {
    const clock = createManualClock()
    let fired = false
    const cancel = clock.setTimeout(() => (fired = true), 1)
    assert.equal(clock.pending, 1)
    cancel()
    cancel()
    clock.advance(10)
    assert.equal(fired, false)
  })

  it('refuses to go back in time', () => {
    assert.throws(() => createManualClock().advance(-1), RangeError)
  })
})

describe('manual clock under any delays and steps (property)', () => {
  it('fires each timer once, when time reaches its delay (NaN and negatives: 0; Infinity: never), in due order', () => {
    const delay = fc.oneof(
      fc.integer({ min: -1_000, max: 10_000 }),
      fc.double({ min: -1e6, max: 1e6 }),
      fc.constantFrom(Number.NaN, Infinity, -Infinity, -0, MAX_TIMER_MS + 1),
    )
    fc.assert(
      fc.property(fc.array(delay, { maxLength: 20 }), fc.array(fc.integer({ min: 0, max: 3_000 }), { maxLength: 10 }), (delays, steps) => {
        const clock = createManualClock(50)
        const fired: Array<{ i: number; at: number }> = []
        delays.forEach((ms, i) => clock.setTimeout(() => fired.push({ i, at: clock.now() }), ms))
        const due = delays.map((ms) => 50 + (ms > 0 ? ms : 0))
        let elapsed = 0
        for (const step of steps) {
          clock.advance(step)
          elapsed += step
          const expected = due
            .map((at, i) => ({ i, at }))
            .filter(({ at }) => at <= 50 + elapsed)
            .sort((a, b) => a.at - b.at || a.i - b.i)
          assert.deepEqual(fired, expected)
        }
        assert.equal(clock.pending, delays.length - fired.length)
      }),
    )
  })
})

describe('system clock', () => {
  it('fires after the delay and can be cancelled', async () => {
    const start = systemClock.now()
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 20))
    assert.ok(systemClock.now() - start >= 19)
    let fired = false
    systemClock.setTimeout(() => (fired = true), 5)()
    // A timer of the same delay set after it fires after it: the marker that it would have fired by now.
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 5))
    assert.equal(fired, false)
  })

  it('waits delays past the 2^31 - 1 ms of one Node timer (Node alone would fire them after 1 ms)', async () => {
    const fired: number[] = []
    const cancels = [MAX_TIMER_MS + 1, 30 * 24 * 3600 * 1000, Infinity].map((ms) => systemClock.setTimeout(() => fired.push(ms), ms))
    // A 5 ms marker: a delay Node had cut to 1 ms would have fired before it.
    await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 5))
    assert.deepEqual(fired, [])
    for (const cancel of cancels) cancel()
  })
})

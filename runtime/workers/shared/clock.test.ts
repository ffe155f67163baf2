import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createManualClock, systemClock } from './clock.ts'

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
})

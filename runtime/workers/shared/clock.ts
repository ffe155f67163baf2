/**
 * The clock of the built-in worker kit: a time source and one-shot timers, injectable so that
 * tests can move time by hand instead of sleeping.
 *
 * {@link systemClock} is the real one (monotonic `performance.now()`, `setTimeout` with `unref`, so
 * a pending timer never keeps the engine process alive). {@link createManualClock} is the test
 * double: time stands still until `advance(ms)` moves it and fires the timers that came due.
 */
import { performance } from 'node:perf_hooks'

/** Cancels a timer set with {@link Clock.setTimeout}; calling it again, or after the timer fired, does nothing. */
export type CancelTimer = () => void

/** A time source and one-shot timers. */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences between two readings mean anything. */
  now(): number
  /**
   * Calls `callback` once after `ms` milliseconds (0 or less, or NaN: on a later turn; `Infinity`:
   * never). Any length is kept, past the 2^31 - 1 ms a single Node timer takes. Returns its cancel function.
   */
  setTimeout(callback: () => void, ms: number): CancelTimer
}

/**
 * The longest delay one Node timer takes, ms (2^31 - 1, about 24.8 days). Node runs a longer one
 * after 1 ms; {@link systemClock} chains timers instead.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** The delay a clock waits for `ms`: NaN and negatives are 0 (a later turn), anything else as is. */
function delayOf(ms: number): number {
  return ms > 0 ? ms : 0
}

/**
 * The real clock: `performance.now()` and unref'd `setTimeout` timers; a delay past
 * {@link MAX_TIMER_MS} is a chain of timers (a 30-day subscriber retention waits 30 days, not 1 ms).
 *
 * @example
 * const cancel = systemClock.setTimeout(() => console.log('late'), 10_000)
 * cancel()
 */
export const systemClock: Clock = Object.freeze({
  now: () => performance.now(),
  setTimeout(callback: () => void, ms: number): CancelTimer {
    const delay = delayOf(ms)
    if (delay <= MAX_TIMER_MS) {
      const timer = setTimeout(callback, delay)
      timer.unref()
      return () => clearTimeout(timer)
    }
    // Rare (long retentions and delays): one link of at most MAX_TIMER_MS at a time.
    let left = delay
    let timer: NodeJS.Timeout
    const link = (): void => {
      const step = Math.min(left, MAX_TIMER_MS)
      left -= step
      timer = setTimeout(() => (left > 0 ? link() : callback()), step)
      timer.unref()
    }
    link()
    return () => clearTimeout(timer)
  },
})

/** A {@link Clock} whose time moves only when the test says so. */
export interface ManualClock extends Clock {
  /** Moves time forward by `ms` (≥ 0) and runs every timer that came due, in due order (ties in set order). */
  advance(ms: number): void
  /** Timers set and neither fired nor cancelled. */
  readonly pending: number
}

interface ManualTimer {
  due: number
  seq: number
  callback: () => void
}

/**
 * A manual clock for tests, starting at `start` ms. Timers fire synchronously inside
 * {@link ManualClock.advance}; a timer set by a firing callback fires in the same `advance` when it
 * is due by its end.
 *
 * @example
 * const clock = createManualClock()
 * let fired = false
 * clock.setTimeout(() => (fired = true), 100)
 * clock.advance(99) // fired === false
 * clock.advance(1) // fired === true
 */
export function createManualClock(start = 0): ManualClock {
  let now = start
  let seq = 0
  const timers = new Set<ManualTimer>()
  return {
    now: () => now,
    setTimeout(callback: () => void, ms: number): CancelTimer {
      const timer: ManualTimer = { due: now + delayOf(ms), seq: seq++, callback }
      timers.add(timer)
      return () => void timers.delete(timer)
    },
    advance(ms: number): void {
      if (!(ms >= 0)) throw new RangeError(`advance needs a number of ms >= 0, got ${ms}`)
      const end = now + ms
      for (;;) {
        let next: ManualTimer | undefined
        for (const timer of timers) {
          if (timer.due <= end && (!next || timer.due < next.due || (timer.due === next.due && timer.seq < next.seq))) next = timer
        }
        if (!next) break
        timers.delete(next)
        now = Math.max(now, next.due)
        next.callback()
      }
      now = end
    },
    get pending() {
      return timers.size
    },
  }
}

/**
 * The clock and timers of the client core, injectable (the nats.js heartbeat lesson): tests drive
 * a {@link Heartbeat} or a {@link Deadlines} with a manual clock, hosts choose timers that do not
 * keep a process alive. The defaults are the timers every JavaScript platform has.
 */

/** An opaque timer handle, given back to the matching `clear…`. */
export type TimerHandle = unknown

export interface Timers {
  /** Milliseconds since some fixed point (wall clock or monotonic: only differences are used). */
  now(): number
  setTimeout(callback: () => void, ms: number): TimerHandle
  clearTimeout(handle: TimerHandle): void
  setInterval(callback: () => void, ms: number): TimerHandle
  clearInterval(handle: TimerHandle): void
}

type Handle = ReturnType<typeof setTimeout>

/** `Date.now` and the platform's `setTimeout`/`setInterval` (Node, browsers, workers alike). */
export const systemTimers: Timers = Object.freeze({
  now: () => Date.now(),
  setTimeout: (callback: () => void, ms: number): TimerHandle => setTimeout(callback, ms),
  clearTimeout: (handle: TimerHandle) => clearTimeout(handle as Handle),
  setInterval: (callback: () => void, ms: number): TimerHandle => setInterval(callback, ms),
  clearInterval: (handle: TimerHandle) => clearInterval(handle as Handle),
})

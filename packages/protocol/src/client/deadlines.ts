/**
 * Timeouts of many short-lived calls with few timers: calls whose deadlines fall in the same slot
 * of {@link DEADLINE_SLOT_MS} share one timer, so a call costs a `Set` insert and delete instead
 * of creating and cancelling a Node timer (a measurable share of a caller's CPU under load). A
 * call times out at most one slot after its deadline, never before it.
 *
 * The call table of the client core ({@link CallTable}) keeps its calls' timeouts here.
 */
import { systemTimers, type TimerHandle, type Timers } from './timers.ts'

/** Width of a deadline slot, ms. */
export const DEADLINE_SLOT_MS = 10

/** The calls of one slot; pass it back to {@link Deadlines.cancel}. */
export type DeadlineSlot<T> = Set<T>

export class Deadlines<T> {
  readonly #slots = new Map<number, { items: Set<T>; timer: TimerHandle }>()
  readonly #expire: (item: T) => void
  readonly #timers: Timers

  /**
   * `expire` is called once for each item whose deadline passed without a {@link cancel}.
   * `timers` defaults to the platform's.
   */
  constructor(expire: (item: T) => void, timers: Timers = systemTimers) {
    this.#expire = expire
    this.#timers = timers
  }

  /** Schedules `item` to expire `timeoutMs` from now. */
  add(item: T, timeoutMs: number): DeadlineSlot<T> {
    const now = this.#timers.now()
    const slot = Math.ceil((now + timeoutMs) / DEADLINE_SLOT_MS)
    let entry = this.#slots.get(slot)
    if (entry === undefined) {
      const items = new Set<T>()
      const timer = this.#timers.setTimeout(() => this.#fire(slot), slot * DEADLINE_SLOT_MS - now)
      entry = { items, timer }
      this.#slots.set(slot, entry)
    }
    entry.items.add(item)
    return entry.items
  }

  /** Removes `item` from its slot (it completed in time). */
  cancel(item: T, slot: DeadlineSlot<T> | undefined): void {
    slot?.delete(item)
  }

  /** Drops every scheduled item and timer without expiring them. */
  clear(): void {
    for (const entry of this.#slots.values()) this.#timers.clearTimeout(entry.timer)
    this.#slots.clear()
  }

  #fire(slot: number): void {
    const entry = this.#slots.get(slot)
    if (entry === undefined) return
    this.#slots.delete(slot)
    for (const item of entry.items) this.#expire(item)
  }
}

/**
 * Timeouts of many short-lived calls with few timers: calls whose deadlines fall in the same slot
 * of {@link DEADLINE_SLOT_MS} share one timer, so a call costs a `Set` insert and delete instead
 * of creating and cancelling a Node timer (a measurable share of a caller's CPU under load). A
 * call times out at most one slot after its deadline, never before it.
 */

/** Width of a deadline slot, ms. */
export const DEADLINE_SLOT_MS = 10

/** The calls of one slot; pass it back to {@link Deadlines.cancel}. */
export type DeadlineSlot<T> = Set<T>

export class Deadlines<T> {
  readonly #slots = new Map<number, { items: Set<T>; timer: ReturnType<typeof setTimeout> }>()
  readonly #expire: (item: T) => void

  /** `expire` is called once for each item whose deadline passed without a {@link cancel}. */
  constructor(expire: (item: T) => void) {
    this.#expire = expire
  }

  /** Schedules `item` to expire `timeoutMs` from now. */
  add(item: T, timeoutMs: number): DeadlineSlot<T> {
    const now = Date.now()
    const slot = Math.ceil((now + timeoutMs) / DEADLINE_SLOT_MS)
    let entry = this.#slots.get(slot)
    if (entry === undefined) {
      const items = new Set<T>()
      const timer = setTimeout(() => this.#fire(slot), slot * DEADLINE_SLOT_MS - now)
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
    for (const entry of this.#slots.values()) clearTimeout(entry.timer)
    this.#slots.clear()
  }

  #fire(slot: number): void {
    const entry = this.#slots.get(slot)
    if (entry === undefined) return
    this.#slots.delete(slot)
    for (const item of entry.items) this.#expire(item)
  }
}

/**
 * Timeouts of many short-lived calls with few timers: calls whose deadlines fall in the same slot
 * of {@link DEADLINE_SLOT_MS} share one timer, so a call costs linking and unlinking a list node instead
 * of creating and cancelling a Node timer (a measurable share of a caller's CPU under load). A
 * call times out at most one slot after its deadline, never before it.
 *
 * The call table of the client core ({@link CallTable}) keeps its calls' timeouts here, and the
 * engine its legs' and in-process runs' (`svc-protocol/deadlines`, which loads nothing else of
 * the client core).
 */
import { systemTimers, type TimerHandle, type Timers } from './timers.ts'

export type { TimerHandle, Timers }

/** Width of a deadline slot, ms. */
export const DEADLINE_SLOT_MS = 10

/**
 * An item's place in its slot; pass it back to {@link Deadlines.cancel}. Opaque: a node of the
 * slot's doubly-linked list.
 */
export type DeadlineSlot<T> = DeadlineNode<T>

/**
 * One scheduled item, linked into its slot's list. A removed node is emptied at once (item and
 * links), so a node that reached the old generation keeps nothing young alive.
 */
class DeadlineNode<T> {
  item: T | undefined
  prev: DeadlineNode<T> | undefined = undefined
  next: DeadlineNode<T> | undefined = undefined
  owner: SlotEntry<T> | undefined
  constructor(item: T, owner: SlotEntry<T>) {
    this.item = item
    this.owner = owner
  }
}

/** The items of one slot, newest first, and the timer that expires them. */
interface SlotEntry<T> {
  head: DeadlineNode<T> | undefined
  timer: TimerHandle
}

/**
 * Why a linked list and not a `Set` per slot: a slot lives as long as the timeout (30 s by
 * default), so its `Set` reaches the old generation, and V8 replaces a `Set`'s hash table as it
 * grows and sheds entries while the replaced table still points at the calls it held: the
 * scavenger then keeps every call in flight alive and promotes it (see `CallIndex` in
 * `svc-protocol/call-index`). Unlinking a node clears every pointer it had.
 */
export class Deadlines<T> {
  readonly #slots = new Map<number, SlotEntry<T>>()
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
      const created: SlotEntry<T> = { head: undefined, timer: undefined }
      created.timer = this.#timers.setTimeout(() => this.#fire(slot), slot * DEADLINE_SLOT_MS - now)
      entry = created
      this.#slots.set(slot, entry)
    }
    const node = new DeadlineNode(item, entry)
    const head = entry.head
    if (head !== undefined) {
      node.next = head
      head.prev = node
    }
    entry.head = node
    return node
  }

  /** Removes `item` from its slot (it completed in time). `slot` is what {@link add} returned. */
  cancel(item: T, slot: DeadlineSlot<T> | undefined): void {
    if (slot === undefined || slot.item !== item) return
    const entry = slot.owner
    if (entry === undefined) return
    const { prev, next } = slot
    if (prev === undefined) entry.head = next
    else prev.next = next
    if (next !== undefined) next.prev = prev
    slot.item = undefined
    slot.prev = undefined
    slot.next = undefined
    slot.owner = undefined
  }

  /** Drops every scheduled item and timer without expiring them. */
  clear(): void {
    for (const entry of this.#slots.values()) {
      this.#timers.clearTimeout(entry.timer)
      Deadlines.#empty(entry)
    }
    this.#slots.clear()
  }

  /** Unlinks and empties every node of `entry`; returns the items, oldest first. */
  static #empty<T>(entry: SlotEntry<T>): T[] {
    const items: T[] = []
    let node = entry.head
    entry.head = undefined
    while (node !== undefined) {
      const next = node.next
      items.push(node.item as T)
      node.item = undefined
      node.prev = undefined
      node.next = undefined
      node.owner = undefined
      node = next
    }
    return items.reverse()
  }

  #fire(slot: number): void {
    const entry = this.#slots.get(slot)
    if (entry === undefined) return
    this.#slots.delete(slot)
    const items = Deadlines.#empty(entry)
    for (let i = 0; i < items.length; i++) this.#expire(items[i]!)
  }
}

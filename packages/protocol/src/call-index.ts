/**
 * The string-keyed index the invocation path keeps its per-call entries in — the engine's flights,
 * legs and the ids a caller sent, and a client's pending calls and running handlers — built so
 * that a call's objects die young once the call ends.
 *
 * Why not a `Map`, a `Set` or a null-prototype object: V8 replaces their hash table every few
 * dozen insertions when entries are also deleted, and the table it replaces still points at the
 * entries it held (a `Map`'s also at its successor, for open iterators). Once a replaced table
 * sits in the old generation, the scavenger takes its slots as roots until the next full
 * collection: every call in flight at the time survives and is promoted with everything it
 * points to, and the next table with it. Measured with 64 entries alive, one insert and one
 * delete per call, the container in the old generation (`--max-semi-space-size=4
 * --heap-growing-percent=50`): a `Map` promotes ~330 bytes per call, a null-prototype object
 * ~380, no index ~24, with 15–18× the full collections (docs/benchmarks.md, "Per-call garbage
 * and the old generation"; in the engine a closure stored on every flight promoted even more and
 * hid this, see `WorkStopper`). A svc-sdk caller's `Map` of pending calls did the same: ~400 bytes
 * of every call promoted at 64 in flight.
 *
 * This index is an open-addressing hash table (linear probing) over two arrays it owns: a removed
 * entry's slots are cleared at once, and arrays it outgrows are emptied before they are dropped,
 * so nothing it let go of stays reachable from the old generation. The hash is seeded per index
 * (a caller chooses the keys of its own `requested` index and must not be able to make them
 * collide on purpose) and reads every character of the key. Iteration order is unspecified.
 * Platform-free (no Node API): the client core runs in browsers too.
 *
 * @example
 * const legs = new CallIndex<Leg>()
 * legs.set(leg.id, leg)
 * legs.get(leg.id) // leg
 * legs.delete(leg.id) // true
 * legs.values() // [] — a copy, safe to change the index while going through it
 */
export class CallIndex<V extends object> {
  /** Slot keys: a key, {@link EMPTY} (never used) or {@link REMOVED} (a tombstone: probes go on). */
  #keys: Array<string | typeof EMPTY | typeof REMOVED>
  #values: Array<V | undefined>
  /** Capacity − 1 (the capacity is a power of two). */
  #mask: number
  #size = 0
  /** Slots holding a key or a tombstone. */
  #used = 0
  readonly #seed = (Math.random() * 0x100000000) >>> 0

  constructor() {
    this.#keys = new Array<string | typeof EMPTY | typeof REMOVED>(MIN_CAPACITY).fill(EMPTY)
    this.#values = new Array<V | undefined>(MIN_CAPACITY).fill(undefined)
    this.#mask = MIN_CAPACITY - 1
  }

  /** Entries in the index. */
  get size(): number {
    return this.#size
  }

  get(key: string): V | undefined {
    const slot = this.#find(key)
    return slot < 0 ? undefined : this.#values[slot]
  }

  has(key: string): boolean {
    return this.#find(key) >= 0
  }

  /** Adds or replaces the entry of `key`. */
  set(key: string, value: V): void {
    const keys = this.#keys
    const mask = this.#mask
    let slot = this.#hash(key) & mask
    let free = -1
    for (;;) {
      const k = keys[slot]
      if (k === EMPTY) break
      if (k === key) {
        this.#values[slot] = value
        return
      }
      if (k === REMOVED && free < 0) free = slot
      slot = (slot + 1) & mask
    }
    if (free >= 0) slot = free
    else this.#used++
    keys[slot] = key
    this.#values[slot] = value
    this.#size++
    // At most half the slots taken, tombstones included: probes stay short.
    if (this.#used * 2 > mask + 1) this.#rebuild()
  }

  /** Removes the entry of `key` and returns it (one probe where `get` then `delete` take two), or undefined. */
  take(key: string): V | undefined {
    const slot = this.#find(key)
    if (slot < 0) return undefined
    const value = this.#values[slot]
    this.#keys[slot] = REMOVED
    this.#values[slot] = undefined
    this.#size--
    return value
  }

  /** Removes the entry of `key`; false when there was none. */
  delete(key: string): boolean {
    const slot = this.#find(key)
    if (slot < 0) return false
    this.#keys[slot] = REMOVED
    this.#values[slot] = undefined
    this.#size--
    return true
  }

  /** Removes every entry (the arrays are emptied and kept). */
  clear(): void {
    if (this.#used === 0) return
    this.#keys.fill(EMPTY)
    this.#values.fill(undefined)
    this.#size = 0
    this.#used = 0
  }

  /** A copy of the entries, in no particular order. */
  values(): V[] {
    const out: V[] = []
    if (this.#size === 0) return out
    const values = this.#values
    for (let i = 0; i < values.length; i++) {
      const v = values[i]
      if (v !== undefined) out.push(v)
    }
    return out
  }

  #find(key: string): number {
    const keys = this.#keys
    const mask = this.#mask
    let slot = this.#hash(key) & mask
    for (;;) {
      const k = keys[slot]
      if (k === key) return slot
      if (k === EMPTY) return -1
      slot = (slot + 1) & mask
    }
  }

  /** Seeded FNV-1a over the UTF-16 code units, with a final avalanche. */
  #hash(key: string): number {
    let h = (this.#seed ^ 0x811c9dc5) >>> 0
    for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193)
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    return h >>> 0
  }

  /**
   * Drops the tombstones and sizes the arrays for the entries (a quarter full at most): in place
   * when the size stays, else into new arrays after which the old ones are emptied, so that none
   * of their slots keeps a call alive from the old generation.
   */
  #rebuild(): void {
    let capacity = MIN_CAPACITY
    while (capacity < this.#size * 4) capacity *= 2
    const oldKeys = this.#keys
    const oldValues = this.#values
    const liveKeys: string[] = []
    const liveValues: V[] = []
    for (let i = 0; i < oldKeys.length; i++) {
      const k = oldKeys[i]
      if (typeof k === 'string') {
        liveKeys.push(k)
        liveValues.push(oldValues[i]!)
      }
    }
    oldKeys.fill(EMPTY)
    oldValues.fill(undefined)
    if (capacity !== oldKeys.length) {
      this.#keys = new Array<string | typeof EMPTY | typeof REMOVED>(capacity).fill(EMPTY)
      this.#values = new Array<V | undefined>(capacity).fill(undefined)
      this.#mask = capacity - 1
    }
    const keys = this.#keys
    const values = this.#values
    const mask = this.#mask
    for (let i = 0; i < liveKeys.length; i++) {
      const k = liveKeys[i]!
      let slot = this.#hash(k) & mask
      while (keys[slot] !== EMPTY) slot = (slot + 1) & mask
      keys[slot] = k
      values[slot] = liveValues[i]
    }
    this.#used = liveKeys.length
  }
}

/** Slots in a new index. */
const MIN_CAPACITY = 16
/** A slot never used: a probe stops here. */
const EMPTY = 0
/** A slot whose entry was removed: a probe goes on past it, an insertion may reuse it. */
const REMOVED = 1

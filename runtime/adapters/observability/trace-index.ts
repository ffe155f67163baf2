/**
 * The span window's index of traces (./store.ts): for each trace id, the position (arrival number)
 * of the newest span of that trace in the window; the window links each span to the next older one
 * of its trace, so this index holds one entry per trace and is never told about the others.
 *
 * An open-addressing hash table (linear probing, backward-shift deletion) over typed arrays, at
 * most half full: nothing in it is a V8 heap object. Why not a `Map<string, …>`: with the window
 * full, every span put added an entry and evicted one, and the `Map`'s churn (its large backing
 * store in the old generation, a write barrier per entry, rehashes) cost about as much as the rest
 * of keeping the span (docs/benchmarks.md, issue 20, session 31). Keys are compared through the
 * window (`isTrace`), which holds the ids (as strings or as text in its chunks), and an entry is
 * deleted by its position alone (positions are unique), so eviction reads no id; hashes are seeded
 * per index, so a sender cannot choose trace ids that all land in one cluster.
 */
import { randomBytes } from 'node:crypto'

/** Slots of a new or cleared table. */
const MIN_CAPACITY = 1024
/** An empty slot's position. */
const EMPTY = -1

export class TraceIndex {
  /** Newest position per slot, {@link EMPTY} when free. */
  private positions = new Float64Array(MIN_CAPACITY).fill(EMPTY)
  /** The hash of the slot's trace id. */
  private hashes = new Int32Array(MIN_CAPACITY)
  private mask = MIN_CAPACITY - 1
  private entries = 0
  private readonly seed = randomBytes(4).readInt32LE(0)
  private readonly isTrace: (position: number, traceId: string) => boolean

  /** `isTrace(position, traceId)`: whether the span at a position held by the index (always one in the window) is of trace `traceId`. */
  constructor(isTrace: (position: number, traceId: string) => boolean) {
    this.isTrace = isTrace
  }

  /** Traces indexed. */
  get size(): number {
    return this.entries
  }

  /** The hash of `traceId` this index files it under (the window keeps it beside the span: eviction needs it). */
  hash(traceId: string): number {
    // FNV-1a over the UTF-16 units, seeded, then a finaliser (murmur3's) so the low bits mix.
    let h = this.seed ^ 0x811c9dc5
    for (let i = 0; i < traceId.length; i++) h = Math.imul(h ^ traceId.charCodeAt(i), 0x01000193)
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    h = Math.imul(h, 0xc2b2ae35)
    return (h ^ (h >>> 16)) | 0
  }

  /** Position of the newest span of `traceId` (its hash `hash`); -1 when the trace has none. */
  newest(traceId: string, hash: number): number {
    const slot = this.find(traceId, hash)
    return slot < 0 ? -1 : this.positions[slot]!
  }

  /** `position` becomes the newest span of `traceId`. */
  set(traceId: string, hash: number, position: number): void {
    const slot = this.find(traceId, hash)
    if (slot >= 0) {
      this.positions[slot] = position
      return
    }
    this.positions[~slot] = position
    this.hashes[~slot] = hash
    if (++this.entries * 2 > this.positions.length) this.grow()
  }

  /**
   * The span at `position` (of a trace whose hash is `hash`) left the window: the trace's entry
   * goes when that span was its newest. An entry's position names one span for good, so the entry
   * is found by it, without comparing trace ids.
   */
  delete(hash: number, position: number): void {
    const positions = this.positions
    const hashes = this.hashes
    const mask = this.mask
    let slot = hash & mask
    for (; ; slot = (slot + 1) & mask) {
      const at = positions[slot]!
      if (at === EMPTY) return
      if (at === position) break
    }
    // Backward-shift deletion: move up the entries of the cluster that probed past the hole.
    let hole = slot
    let next = slot
    for (;;) {
      next = (next + 1) & mask
      if (positions[next] === EMPTY) break
      const home = hashes[next]! & mask
      const between = hole <= next ? home > hole && home <= next : home > hole || home <= next
      if (between) continue
      positions[hole] = positions[next]!
      hashes[hole] = hashes[next]!
      hole = next
    }
    positions[hole] = EMPTY
    this.entries--
  }

  clear(): void {
    this.positions = new Float64Array(MIN_CAPACITY).fill(EMPTY)
    this.hashes = new Int32Array(MIN_CAPACITY)
    this.mask = MIN_CAPACITY - 1
    this.entries = 0
  }

  /** The slot of `traceId`, or `~slot` of the free slot where it would go. */
  private find(traceId: string, hash: number): number {
    const positions = this.positions
    const hashes = this.hashes
    const mask = this.mask
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const position = positions[slot]!
      if (position === EMPTY) return ~slot
      if (hashes[slot] === hash && this.isTrace(position, traceId)) return slot
    }
  }

  /** Doubles the table (entries re-filed by their kept hashes). */
  private grow(): void {
    const positions = this.positions
    const hashes = this.hashes
    const capacity = positions.length * 2
    this.positions = new Float64Array(capacity).fill(EMPTY)
    this.hashes = new Int32Array(capacity)
    this.mask = capacity - 1
    for (let i = 0; i < positions.length; i++) {
      const position = positions[i]!
      if (position === EMPTY) continue
      let slot = hashes[i]! & this.mask
      while (this.positions[slot] !== EMPTY) slot = (slot + 1) & this.mask
      this.positions[slot] = position
      this.hashes[slot] = hashes[i]!
    }
  }
}

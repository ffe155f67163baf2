/**
 * Stores of the observability worker (builtins.md §12.3): one interface, three kinds.
 *
 * - `memory`: the in-memory window only, bounded by `memory_max_spans` / `memory_max_logs` and
 *   by bytes, `memory_max_span_bytes` / `memory_max_log_bytes`.
 * - `builtin`: the same window, plus every record written to `<data_dir>/observability.db`
 *   (see `sqlite.ts`); the window is reloaded from the file at start.
 * - `none`: nothing stored; the query functions fail with `STORAGE_DISABLED` (the worker checks
 *   {@link TelemetryStore.kind}).
 *
 * Writes are synchronous and O(1) amortised (they sit on the invocation path); the queries read
 * the window. Every store keeps within its bounds whatever the ingest rate: the window evicts the
 * oldest records, metrics keep one hour of points (and at most {@link MAX_POINTS_PER_SERIES}).
 */
import { jsonParse } from 'svc-protocol/json'
import { TraceIndex } from './trace-index.ts'
import { logSize, spanSize, type LogRecord, type MetricPoint, type MetricSeries, type SpanRecord, type SpanStatus } from './records.ts'

/** Bounds of a store (the §12.1 settings that concern it). */
export interface StoreLimits {
  /** Age limit of spans and logs, seconds (`retention_seconds`). */
  retentionSeconds: number
  /** Window size in spans (`memory_max_spans`). */
  maxSpans: number
  /** Window size in log records (`memory_max_logs`). */
  maxLogs: number
  /** Window size in bytes of spans, as {@link TelemetryStore.windowBytes} counts them (`memory_max_span_bytes`). */
  maxSpanBytes: number
  /** Window size in bytes of log records (`memory_max_log_bytes`). */
  maxLogBytes: number
  /** `builtin` only: size cap of the SQLite file, bytes (`max_disk_bytes`). */
  maxDiskBytes: number
}

/** Default `memory_max_span_bytes`: 16 MiB (about 13,000 svc-sdk handler spans; docs/decisions.md, issue 20). */
export const DEFAULT_MAX_SPAN_BYTES = 16 << 20
/** Default `memory_max_log_bytes`: 32 MiB. */
export const DEFAULT_MAX_LOG_BYTES = 32 << 20
/** Smallest byte budget accepted for either window: 1 MiB. */
export const MIN_WINDOW_BYTES = 1 << 20

/**
 * Bytes a record costs in the window beyond its estimated JSON: the objects' headers, its slot in
 * the ring and its entry in the trace index. The V8 heap the records take was measured at 0.7× (engine
 * spans, whose resource is shared) to 1.35× (svc-sdk spans parsed from `/otel`, many short strings)
 * of what the window counts, and 1× for large records (`bench/window-memory.ts`).
 */
export const RECORD_OVERHEAD_BYTES = 128

/** How long metric points are kept (§12.3: 1 h). */
export const METRIC_RETENTION_MS = 3_600_000
/** Points kept per metric series, whatever their age. */
export const MAX_POINTS_PER_SERIES = 10_000
/** Metric series kept (distinct names); later names are dropped. */
export const MAX_SERIES = 1_000

/**
 * The store seam. A span put again with the same `trace_id`/`span_id` replaces the earlier
 * version (an in-progress span that finished, as OTLP sends it); engine spans finish in place and
 * are passed to {@link TelemetryStore.updateSpan}. Iteration order is arrival order, oldest first.
 *
 * `bytes`, where a write takes it, is the record's estimated JSON size (the size limiter measures
 * it while limiting: `TelemetryLimiter.span`/`log`); without it the store estimates it itself
 * (`spanSize`/`logSize` of ./records.ts, a walk of the record).
 */
export interface TelemetryStore {
  readonly kind: 'memory' | 'builtin' | 'none'
  /**
   * `sealed`: the caller never changes `span` (nor its attributes, events, links) after this call,
   * so the window may keep it as its JSON ({@link PackedSpan}) instead of the object; reads return
   * an equal record, a new object each time. Default false: the window keeps `span` itself (an
   * engine span that finishes in place, {@link TelemetryStore.updateSpan}). `body`, with `sealed`:
   * the span's JSON without its resource as the caller wrote it ({@link spanBody} of the whole
   * record): kept as it is, and `span` need hold only what the window filters on (ids, name,
   * service, status, times, resource, `svc.function.id`/`svc.function.kind`), not its events.
   */
  putSpan(span: SpanRecord, bytes?: number, sealed?: boolean, body?: string): void
  /** `span`, put before, changed in place (an engine span that finished): written out again. */
  updateSpan(span: SpanRecord, bytes?: number): void
  putLog(log: LogRecord, bytes?: number): void
  /** Adds a point to the series `name`, creating it with `type`, `unit`, `description`. */
  putPoint(series: Omit<MetricSeries, 'points'>, point: MetricPoint): void
  /** Log records, oldest first. */
  logs(): LogRecord[]
  /** Spans, oldest first. */
  spans(): IterableIterator<SpanRecord>
  /**
   * The same spans as their {@link SpanHead}s, oldest first: what a scan of the whole window
   * filters on, without parsing the spans kept as text ({@link fullSpan} gives the record). A head
   * is read before the next write to the store: one whose span left the window since may throw
   * (its text's chunk reused, {@link TextChunk}).
   */
  heads(): IterableIterator<SpanHead>
  /** The {@link SpanHead}s of one trace (any order; read them as {@link heads}); empty when unknown. */
  traceHeads(traceId: string): SpanHead[]
  /** The spans of one trace (any order); empty when unknown. */
  trace(traceId: string): SpanRecord[]
  metrics(): MetricSeries[]
  /** Removes every log record; the number removed. */
  clearLogs(): number
  /** Removes every span; the number removed. */
  clearSpans(): number
  /** Drops what is older than the retention (and, `builtin`, what exceeds the size cap). */
  sweep(nowMs: number): void
  /** Numbers of records in the window. */
  counts(): { spans: number; logs: number }
  /**
   * Bytes the window holds, by signal: each record's estimated JSON size plus
   * {@link RECORD_OVERHEAD_BYTES}; at most `maxSpanBytes` / `maxLogBytes` (zero for `none`).
   */
  windowBytes(): { spans: number; logs: number }
  /** Writes what is pending (builtin); no-op otherwise. */
  flush(): void
  close(): void
}

/** Bytes of a {@link SpanTexts} chunk (a larger one is made for a larger text, and not reused). */
export const TEXT_CHUNK_BYTES = 1 << 20
/** Chunks {@link SpanTexts} keeps for reuse once nothing reads them (a window that shrank lets the others go). */
const SPARE_CHUNKS = 4

/**
 * A chunk of {@link SpanTexts}: its bytes, and how many hold it — the packed spans of a window
 * that name it, the batches for the `builtin` store's writer that name it, and the `SpanTexts`
 * while it fills it. At zero it is reused, its {@link generation} bumped: a packed span of an
 * earlier use refuses to read it.
 */
export class TextChunk {
  private static made = 0
  /** Names the chunk to the `builtin` store's writer, which keeps the chunks it was sent. */
  readonly id = ++TextChunk.made
  readonly bytes: Buffer
  users = 1
  generation = 0

  constructor(size: number) {
    this.bytes = Buffer.from(new SharedArrayBuffer(size))
  }
}

/**
 * Where the window keeps the JSON of its packed spans: UTF-8, appended into chunks of
 * {@link TEXT_CHUNK_BYTES} bytes over `SharedArrayBuffer`s, off the V8 heap. A chunk is never
 * written again while anything holds it ({@link TextChunk}), so the `builtin` store's writer
 * thread reads the same bytes (./sqlite.ts) without a copy; as spans are evicted oldest first, a
 * chunk is free again about once per 1 MiB evicted, and the next one filled.
 *
 * Why: kept as strings, the texts were most of what each span made V8 copy out of the young
 * generation and mark at every full collection; and posting them to the writer copied them again
 * (docs/benchmarks.md, issue 20, session 31). Why reused rather than left to the collector: an
 * evicted chunk is freed only when V8 collects the packed spans that named it, which held tens of
 * MiB of dead chunks for a 16 MiB window, and each new chunk cost a page fault per 4 KiB written.
 */
export class SpanTexts {
  /** The chunk being filled. */
  chunk = new TextChunk(0)
  private used = 0
  private readonly spare: TextChunk[] = []
  /** Called with a chunk let go for good (not kept for reuse): the collector frees it. */
  onDrop: ((chunk: TextChunk) => void) | undefined

  /**
   * Appends the {@link SPAN_HEAD_BYTES} of `span`'s times, then `text` as UTF-8; the offset of the
   * times in {@link chunk} (which is a new chunk when they did not fit in the previous one), the
   * text following them. The text's length in bytes is given back by {@link written}.
   */
  append(span: SpanRecord, text: string): number {
    // At most 3 bytes per UTF-16 unit: the test never lets the write truncate.
    const most = SPAN_HEAD_BYTES + text.length * 3
    if (this.used + most > this.chunk.bytes.length) this.next(most)
    const chunk = this.chunk.bytes
    const offset = this.used
    const end = span.end_time_unix_nano
    const duration = span.duration_ms
    chunk.writeDoubleLE(span.start_time_unix_nano, offset)
    chunk.writeDoubleLE(end ?? 0, offset + 8)
    chunk.writeDoubleLE(duration ?? 0, offset + 16)
    chunk[offset + 24] = (end === null ? NO_END : 0) | (duration === null ? NO_DURATION : 0)
    this.written = chunk.write(text, offset + SPAN_HEAD_BYTES, 'utf8')
    this.used = offset + SPAN_HEAD_BYTES + this.written
    return offset
  }

  /** Bytes the last {@link append} wrote. */
  written = 0

  /** One more holder of `chunk`. */
  retain(chunk: TextChunk): void {
    chunk.users++
  }

  /** A holder of `chunk` let it go: at the last, the chunk is kept for reuse (or left to the collector). */
  release(chunk: TextChunk): void {
    if (--chunk.users > 0) return
    chunk.generation++
    if (chunk.bytes.length === TEXT_CHUNK_BYTES && this.spare.length < SPARE_CHUNKS) this.spare.push(chunk)
    else this.onDrop?.(chunk)
  }

  /** Starts a chunk with room for `most` bytes: a spare one when it is large enough. */
  private next(most: number): void {
    const previous = this.chunk
    const spare = most <= TEXT_CHUNK_BYTES ? this.spare.pop() : undefined
    if (spare !== undefined) spare.users = 1
    this.chunk = spare ?? new TextChunk(Math.max(TEXT_CHUNK_BYTES, most))
    this.used = 0
    this.release(previous)
  }
}

/**
 * Bytes before a packed span's text in its chunk: its start, end and duration (float64, little
 * endian) and a byte of flags ({@link NO_END}, {@link NO_DURATION}). Numbers kept in a V8 object
 * are each an object of their own (a heap number) for the collector to copy and mark.
 */
const SPAN_HEAD_BYTES = 25
/** Flags: `end_time_unix_nano` is null; `duration_ms` is null. */
const NO_END = 1
const NO_DURATION = 2

/**
 * A span the window keeps as text: its ids (what the window's index and eviction read), its times
 * (read from its chunk) and the JSON of the record without its resource (the `builtin` file's row body,
 * ./sqlite.ts) as UTF-8 in a {@link SpanTexts} chunk, the resource object shared by the spans of a
 * frame. A few objects per span instead of the record's graph of attribute maps, events and their
 * strings: under traced load that graph was most of what V8 promoted to the old generation and
 * marked again at every full collection (docs/benchmarks.md, issue 20, sessions 29 and 31).
 */
export class PackedSpan {
  readonly trace_id: string
  readonly span_id: string
  /** The chunk holding the span's times at `offset`, then the JSON of the record without `resource`: UTF-8, {@link length} bytes from {@link textOffset}. */
  readonly chunk: TextChunk
  /** The chunk's generation when the span was written (see {@link TextChunk}). */
  private readonly generation: number
  readonly offset: number
  /** Bytes of the JSON. */
  readonly length: number
  readonly resource: Record<string, string>
  // What whole-window scans filter on (engine::traces::list, engine::runs::list, the `trace` trigger's roots).
  readonly parent_span_id: string | null
  readonly name: string
  readonly service_name: string
  readonly status: SpanStatus
  /** The `svc.function.id` attribute when it is a string. */
  readonly function_id: string | undefined
  /** The `svc.function.kind` attribute is `internal` (§12.4). */
  readonly internal: boolean

  /** `body`: the JSON of `span` without its resource ({@link spanBody}), appended to `texts`. */
  constructor(span: SpanRecord, body: string, texts: SpanTexts) {
    this.trace_id = span.trace_id
    this.span_id = span.span_id
    this.offset = texts.append(span, body)
    this.chunk = texts.chunk
    this.generation = this.chunk.generation
    this.length = texts.written
    this.resource = span.resource
    this.parent_span_id = span.parent_span_id
    this.name = span.name
    this.service_name = span.service_name
    this.status = span.status
    const id = span.attributes['svc.function.id']
    this.function_id = typeof id === 'string' ? id : undefined
    this.internal = span.attributes['svc.function.kind'] === 'internal'
  }

  /**
   * The chunk's bytes.
   * @throws Error when the span left its window and the chunk was reused since (a head kept across a write to the store).
   */
  private bytes(): Buffer {
    if (this.chunk.generation !== this.generation) throw new Error(`span ${this.span_id} of trace ${this.trace_id} left the observability window`)
    return this.chunk.bytes
  }

  get start_time_unix_nano(): number {
    return this.bytes().readDoubleLE(this.offset)
  }

  get end_time_unix_nano(): number | null {
    const bytes = this.bytes()
    return (bytes[this.offset + 24]! & NO_END) !== 0 ? null : bytes.readDoubleLE(this.offset + 8)
  }

  get duration_ms(): number | null {
    const bytes = this.bytes()
    return (bytes[this.offset + 24]! & NO_DURATION) !== 0 ? null : bytes.readDoubleLE(this.offset + 16)
  }

  /** Where the JSON starts in {@link chunk}. */
  get textOffset(): number {
    return this.offset + SPAN_HEAD_BYTES
  }

  /** JSON of the record without `resource` (a new string). */
  get body(): string {
    const start = this.offset + SPAN_HEAD_BYTES
    return this.bytes().toString('utf8', start, start + this.length)
  }

  /** The record, a new object: its JSON parsed (`jsonParse`: escaped keys kept), the resource joined. */
  unpack(): SpanRecord {
    const span = jsonParse(this.body) as SpanRecord
    span.resource = this.resource
    return span
  }
}

/**
 * JSON of a span without its resource: the body of its row in the `builtin` file and of a
 * {@link PackedSpan}. Numbers that are not finite become `null` (JSON.stringify).
 */
export function spanBody(span: SpanRecord): string {
  const resource = span.resource
  // Set aside, not deleted: the object keeps its shape.
  ;(span as { resource: unknown }).resource = undefined
  try {
    return JSON.stringify(span)
  } finally {
    span.resource = resource
  }
}

/** A slot of the window: a span object, or a span kept as text. */
type Slot = SpanRecord | PackedSpan

/**
 * A span as a scan of the window sees it: the record (an engine span) or the span kept as text,
 * both with `trace_id`, `span_id`, `parent_span_id`, `name`, `service_name`, `status`,
 * `start_time_unix_nano`, `end_time_unix_nano` and `duration_ms`; {@link headFunctionId}, {@link headInternal} read two attributes,
 * {@link fullSpan} gives the record.
 */
export type SpanHead = Slot

/** The record of a head (a new object for a span kept as text). */
export const fullSpan = (head: SpanHead): SpanRecord => (head instanceof PackedSpan ? head.unpack() : head)
const unpacked = fullSpan

/** The `svc.function.id` attribute of a span when it is a string. */
export function headFunctionId(head: SpanHead): string | undefined {
  if (head instanceof PackedSpan) return head.function_id
  const id = head.attributes['svc.function.id']
  return typeof id === 'string' ? id : undefined
}

/** Whether a span's `svc.function.kind` attribute is `internal`. */
export const headInternal = (head: SpanHead): boolean => (head instanceof PackedSpan ? head.internal : head.attributes['svc.function.kind'] === 'internal')

/**
 * The bounded in-memory window shared by `memory` and `builtin`: at most `maxSpans` spans and
 * `maxSpanBytes` bytes of them, `maxLogs` log records and `maxLogBytes` bytes of them
 * ({@link TelemetryStore.windowBytes}); beyond either bound the oldest records are evicted. A record
 * larger than its whole budget is not kept (the `builtin` file and the export still get it); a
 * span that grows beyond it in place evicts the spans older than it, then itself. An evicted
 * record is released at once.
 * @example const store = new MemoryStore({ retentionSeconds: 3600, maxSpans: 1000, maxLogs: 1000, maxSpanBytes: 64 << 20, maxLogBytes: 32 << 20, maxDiskBytes: 0 })
 */
export class MemoryStore implements TelemetryStore {
  readonly kind: 'memory' | 'builtin' = 'memory'
  protected limits: StoreLimits
  /**
   * Spans in arrival order: a ring, `spanRing[spanHead]` the oldest of `spanCount`, and
   * `spanSizes` the bytes counted for each at the same index. A span's position is its arrival
   * number (`spanFirst` is the oldest's): its slot is `(spanHead + position - spanFirst) % length`.
   * The records carry nothing of the window's. At the same index, `spanOlder` is the position of
   * the next older span of the same trace (below `spanFirst` once that one left the window: the
   * end of the trace's chain), `spanHashes` the hash {@link traces} files its trace id under.
   */
  private spanRing: Array<Slot | undefined> = []
  private spanSizes = new Float64Array(0)
  private spanOlder = new Float64Array(0)
  private spanHashes = new Int32Array(0)
  private spanHead = 0
  private spanCount = 0
  /** Arrival number of the oldest span of the ring. */
  private spanFirst = 0
  /** Bytes counted for the spans in the ring. */
  private spanBytes = 0
  /** The position of the newest span of each trace (the older ones are chained by `spanOlder`). */
  private readonly traces = new TraceIndex((position) => this.spanRing[this.slot(position)]!.trace_id)
  /**
   * Logs: `logBuf[logHead…]` are live, `logSizes` their counted bytes at the same indices; evicted
   * slots are cleared at once, the arrays compacted when the dead prefix grows.
   */
  private logBuf: Array<LogRecord | undefined> = []
  private logSizes: number[] = []
  private logHead = 0
  private logBytes = 0
  private readonly series = new Map<string, MetricSeries>()
  /** The JSON of the packed spans. */
  protected readonly texts = new SpanTexts()

  constructor(limits: StoreLimits) {
    this.limits = limits
  }

  /** New bounds; the window shrinks at once when smaller. */
  setLimits(limits: StoreLimits): void {
    this.limits = limits
    this.trimSpans()
    this.trimLogs()
  }

  putSpan(span: SpanRecord, bytes = spanSize(span), sealed = false, body?: string): void {
    this.putSlot(sealed ? new PackedSpan(span, body ?? spanBody(span), this.texts) : span, bytes)
  }

  /** Puts a span or a packed span (see {@link putSpan}). */
  protected putSlot(span: Slot, bytes: number): void {
    const counted = bytes + RECORD_OVERHEAD_BYTES
    const traces = this.traces
    const hash = traces.hash(span.trace_id)
    const newest = traces.newest(span.trace_id, hash)
    if (newest >= 0) {
      // A span sent again (an in-progress one that finished): it takes the earlier one's place, so
      // the ring needs no search; an object stays the same object (an engine span may still
      // finish in place, updateSpan), taking the new content.
      const slot = this.slotOf(newest, (s) => s.span_id === span.span_id)
      if (slot >= 0) {
        const earlier = this.spanRing[slot]!
        if (earlier instanceof PackedSpan) {
          this.spanRing[slot] = span
          if (span instanceof PackedSpan) this.texts.retain(span.chunk)
          this.texts.release(earlier.chunk)
        } else if (earlier !== span) Object.assign(earlier, span instanceof PackedSpan ? span.unpack() : span)
        this.recount(slot, counted)
        return
      }
    }
    // Larger than the whole budget: kept out, rather than evicting everything else for it.
    if (counted > this.limits.maxSpanBytes) return
    const max = this.limits.maxSpans
    if (this.spanCount >= max) this.trimSpans(max - 1)
    // Its arrival number (evicting the oldest keeps `spanFirst + spanCount`); `newest`, when just
    // evicted, is below `spanFirst` and ends the chain.
    traces.set(span.trace_id, hash, this.spanFirst + this.spanCount)
    this.ringPush(span, counted, newest, hash)
    if (this.spanBytes > this.limits.maxSpanBytes) this.trimSpans()
  }

  /** The ring slot of the span at arrival number `position`. */
  private slot(position: number): number {
    return (this.spanHead + position - this.spanFirst) % this.spanRing.length
  }

  /** The slot of the span of a trace, from its newest at `newest`, that `match` picks; -1 when none does. */
  private slotOf(newest: number, match: (span: Slot) => boolean): number {
    for (let position = newest; position >= this.spanFirst; ) {
      const slot = this.slot(position)
      if (match(this.spanRing[slot]!)) return slot
      position = this.spanOlder[slot]!
    }
    return -1
  }

  /** The slots of the spans of a trace, oldest first. */
  private slotsOf(traceId: string): number[] {
    const slots: number[] = []
    for (let position = this.traces.newest(traceId, this.traces.hash(traceId)); position >= this.spanFirst; ) {
      const slot = this.slot(position)
      slots.push(slot)
      position = this.spanOlder[slot]!
    }
    return slots.reverse()
  }

  /** Appends to the ring, growing it (doubling, up to `maxSpans`) while it is not full yet. */
  private ringPush(span: Slot, counted: number, older: number, hash: number): void {
    let ring = this.spanRing
    if (this.spanCount === ring.length) {
      // Unwrap into larger arrays (amortised O(1)); the window's capacity is reached gradually.
      const length = Math.max(64, Math.min(this.limits.maxSpans, ring.length * 2))
      const next: Array<Slot | undefined> = new Array(length)
      const sizes = new Float64Array(length)
      const olders = new Float64Array(length)
      const hashes = new Int32Array(length)
      for (let i = 0; i < this.spanCount; i++) {
        const from = (this.spanHead + i) % ring.length
        next[i] = ring[from]
        sizes[i] = this.spanSizes[from]!
        olders[i] = this.spanOlder[from]!
        hashes[i] = this.spanHashes[from]!
      }
      this.spanRing = ring = next
      this.spanSizes = sizes
      this.spanOlder = olders
      this.spanHashes = hashes
      this.spanHead = 0
    }
    const slot = (this.spanHead + this.spanCount) % ring.length
    ring[slot] = span
    if (span instanceof PackedSpan) this.texts.retain(span.chunk)
    this.spanSizes[slot] = counted
    this.spanOlder[slot] = older
    this.spanHashes[slot] = hash
    this.spanBytes += counted
    this.spanCount++
  }

  /** The window holds the object itself: only its counted bytes change (evicting when over the budget). Nothing when it is no longer in the window. */
  updateSpan(span: SpanRecord, bytes = spanSize(span)): void {
    const newest = this.traces.newest(span.trace_id, this.traces.hash(span.trace_id))
    if (newest < 0) return
    const slot = this.slotOf(newest, (s) => s === span)
    if (slot >= 0) this.recount(slot, bytes + RECORD_OVERHEAD_BYTES)
  }

  /** The span in `slot` changed: counts it as `counted` bytes. */
  private recount(slot: number, counted: number): void {
    this.spanBytes += counted - this.spanSizes[slot]!
    this.spanSizes[slot] = counted
    if (this.spanBytes > this.limits.maxSpanBytes) this.trimSpans()
  }

  putLog(log: LogRecord, bytes = logSize(log)): void {
    const counted = bytes + RECORD_OVERHEAD_BYTES
    // Larger than the whole budget: kept out, rather than evicting everything else for it.
    if (counted > this.limits.maxLogBytes) return
    this.logBuf.push(log)
    this.logSizes.push(counted)
    this.logBytes += counted
    if (this.logBuf.length - this.logHead > this.limits.maxLogs || this.logBytes > this.limits.maxLogBytes) this.trimLogs()
  }

  putPoint(meta: Omit<MetricSeries, 'points'>, point: MetricPoint): void {
    let s = this.series.get(meta.name)
    if (s === undefined) {
      if (this.series.size >= MAX_SERIES) return
      s = { ...meta, points: [] }
      this.series.set(meta.name, s)
    }
    s.points.push(point)
    if (s.points.length > MAX_POINTS_PER_SERIES) s.points.splice(0, s.points.length - MAX_POINTS_PER_SERIES)
  }

  logs(): LogRecord[] {
    return this.logBuf.slice(this.logHead) as LogRecord[]
  }

  *spans(): IterableIterator<SpanRecord> {
    const ring = this.spanRing
    const head = this.spanHead
    const count = this.spanCount
    for (let i = 0; i < count; i++) yield unpacked(ring[(head + i) % ring.length]!)
  }

  *heads(): IterableIterator<SpanHead> {
    const ring = this.spanRing
    const head = this.spanHead
    const count = this.spanCount
    for (let i = 0; i < count; i++) yield ring[(head + i) % ring.length]!
  }

  traceHeads(traceId: string): SpanHead[] {
    return this.slotsOf(traceId).map((slot) => this.spanRing[slot]!)
  }

  trace(traceId: string): SpanRecord[] {
    return this.slotsOf(traceId).map((slot) => unpacked(this.spanRing[slot]!))
  }

  metrics(): MetricSeries[] {
    return [...this.series.values()]
  }

  clearLogs(): number {
    const n = this.logBuf.length - this.logHead
    this.logBuf = []
    this.logSizes = []
    this.logHead = 0
    this.logBytes = 0
    return n
  }

  clearSpans(): number {
    const n = this.spanCount
    for (const head of this.heads()) if (head instanceof PackedSpan) this.texts.release(head.chunk)
    this.spanRing = []
    this.spanSizes = new Float64Array(0)
    this.spanOlder = new Float64Array(0)
    this.spanHashes = new Int32Array(0)
    this.spanHead = 0
    // Arrival numbers go on: a position of a cleared span never names a later one.
    this.spanFirst += this.spanCount
    this.spanCount = 0
    this.spanBytes = 0
    this.traces.clear()
    return n
  }

  sweep(nowMs: number): void {
    const cutoffNs = (nowMs - this.limits.retentionSeconds * 1000) * 1e6
    while (this.spanCount > 0 && this.spanRing[this.spanHead]!.start_time_unix_nano < cutoffNs) this.dropOldest()
    const buf = this.logBuf
    while (this.logHead < buf.length && buf[this.logHead]!.observed_timestamp_unix_nano < cutoffNs) this.dropOldestLog()
    this.compactLogs()
    const metricCutoff = (nowMs - METRIC_RETENTION_MS) * 1e6
    for (const s of this.series.values()) {
      let i = 0
      while (i < s.points.length && s.points[i]!.time_unix_nano < metricCutoff) i++
      if (i > 0) s.points.splice(0, i)
    }
  }

  counts(): { spans: number; logs: number } {
    return { spans: this.spanCount, logs: this.logBuf.length - this.logHead }
  }

  windowBytes(): { spans: number; logs: number } {
    return { spans: this.spanBytes, logs: this.logBytes }
  }

  flush(): void {}

  close(): void {}

  /** Removes the oldest span of the ring and of its trace (the end of the trace's chain: only the index may name it). */
  private dropOldest(): void {
    const ring = this.spanRing
    const head = this.spanHead
    const span = ring[head]!
    // Before the ring moves: the index compares trace ids through it.
    this.traces.delete(span.trace_id, this.spanHashes[head]!, this.spanFirst)
    if (span instanceof PackedSpan) this.texts.release(span.chunk)
    ring[head] = undefined
    this.spanBytes -= this.spanSizes[head]!
    this.spanHead = (head + 1) % ring.length
    this.spanFirst++
    this.spanCount--
  }

  /** Drops the oldest spans until at most `keep` remain and their bytes are within the budget. */
  private trimSpans(keep = this.limits.maxSpans): void {
    while (this.spanCount > keep || (this.spanCount > 0 && this.spanBytes > this.limits.maxSpanBytes)) this.dropOldest()
  }

  /** Removes the oldest log record, releasing it. */
  private dropOldestLog(): void {
    this.logBytes -= this.logSizes[this.logHead]!
    this.logBuf[this.logHead] = undefined
    this.logHead++
  }

  /** Drops the oldest log records until both bounds hold. */
  private trimLogs(): void {
    const { maxLogs, maxLogBytes } = this.limits
    while (this.logHead < this.logBuf.length && (this.logBuf.length - this.logHead > maxLogs || this.logBytes > maxLogBytes)) this.dropOldestLog()
    this.compactLogs()
  }

  /** Drops the dead prefix once it is as large as the window (amortised O(1) per record). */
  private compactLogs(): void {
    if (this.logHead > 0 && this.logHead >= this.logBuf.length - this.logHead) {
      this.logBuf = this.logBuf.slice(this.logHead)
      this.logSizes = this.logSizes.slice(this.logHead)
      this.logHead = 0
    }
  }
}

/** `store: none`: keeps nothing. */
export class NoStore implements TelemetryStore {
  readonly kind = 'none' as const
  putSpan(): void {}
  updateSpan(): void {}
  putLog(): void {}
  putPoint(): void {}
  logs(): LogRecord[] {
    return []
  }
  spans(): IterableIterator<SpanRecord> {
    return [][Symbol.iterator]()
  }
  heads(): IterableIterator<SpanHead> {
    return [][Symbol.iterator]()
  }
  traceHeads(): SpanHead[] {
    return []
  }
  trace(): SpanRecord[] {
    return []
  }
  metrics(): MetricSeries[] {
    return []
  }
  clearLogs(): number {
    return 0
  }
  clearSpans(): number {
    return 0
  }
  sweep(): void {}
  counts(): { spans: number; logs: number } {
    return { spans: 0, logs: 0 }
  }
  windowBytes(): { spans: number; logs: number } {
    return { spans: 0, logs: 0 }
  }
  flush(): void {}
  close(): void {}
}

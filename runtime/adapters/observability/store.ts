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
import { logSize, spanSize, withPayloadEvents, type LogRecord, type MetricPoint, type MetricSeries, type SpanRecord, type SpanStatus } from './records.ts'

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
  /** The same bytes, for the heads' numbers (`DataView` reads and writes are compiled inline; `Buffer`'s are calls with checks). */
  readonly view: DataView
  users = 1
  generation = 0

  constructor(size: number) {
    const buffer = new SharedArrayBuffer(size)
    this.bytes = Buffer.from(buffer)
    this.view = new DataView(buffer)
  }
}

/**
 * Where the window keeps its packed spans (each its head, {@link SPAN_HEAD_BYTES}, then its JSON as UTF-8), appended into chunks of
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
   * Appends `span`'s head (its times, status and flags, then its ids: {@link SPAN_HEAD_BYTES},
   * then the ids), then `text` as UTF-8; the offset of the head in {@link chunk} (which is a new
   * chunk when they did not fit in the previous one). Where the text starts and its length in
   * bytes are given back by {@link textAt} and {@link written}.
   */
  append(span: SpanRecord, text: string): number {
    const parent = span.parent_span_id
    // At most 2 bytes per UTF-16 unit of the ids, 3 of the text: the test never lets a write truncate.
    const most = SPAN_HEAD_BYTES + (span.trace_id.length + span.span_id.length + (parent?.length ?? 0)) * 2 + text.length * 3
    if (this.used + most > this.chunk.bytes.length) this.next(most)
    const chunk = this.chunk.bytes
    const view = this.chunk.view
    const offset = this.used
    const end = span.end_time_unix_nano
    const duration = span.duration_ms
    view.setFloat64(offset, span.start_time_unix_nano, true)
    view.setFloat64(offset + 8, end ?? 0, true)
    view.setFloat64(offset + 16, duration ?? 0, true)
    chunk[offset + 24] =
      (end === null ? NO_END : 0) |
      (duration === null ? NO_DURATION : 0) |
      (parent === null ? NO_PARENT : 0) |
      (span.attributes['svc.function.kind'] === 'internal' ? INTERNAL : 0)
    chunk[offset + 25] = span.status === 'ok' ? 1 : span.status === 'error' ? 2 : 0
    let at = putField(chunk, view, offset, TRACE_ID, offset + SPAN_HEAD_BYTES, span.trace_id)
    at = putField(chunk, view, offset, SPAN_ID, at, span.span_id)
    at = putField(chunk, view, offset, PARENT_SPAN_ID, at, parent ?? '')
    this.textAt = at
    this.written = chunk.write(text, at, 'utf8')
    view.setUint32(offset + TEXT_LENGTH_AT, this.written, true)
    this.used = at + this.written
    return offset
  }

  /** Where the text of the last {@link append} starts in {@link chunk}. */
  textAt = 0
  /** Bytes of text the last {@link append} wrote. */
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
 * A packed span's head in its chunk, before its text: start, end and duration (float64, little
 * endian), a byte of flags ({@link NO_END}…{@link INTERNAL}), a byte of status (0 unset, 1 ok,
 * 2 error), the lengths of its three ids ({@link TRACE_ID}…{@link PARENT_SPAN_ID}; uint32, UTF-16
 * units, {@link WIDE} set when written as UTF-16LE rather than one byte per unit) and of its text
 * (uint32, bytes); then the ids, then the text. Numbers kept in a V8 object are each an object
 * of their own (a heap number), and strings too, for the collector to copy and mark: here they are
 * none. (The name, service and `svc.function.id`, which few spans differ in, are the window's
 * {@link StringTable} entries.)
 */
const SPAN_HEAD_BYTES = 42
/** Where the ids' lengths start in a head. */
const LENGTHS_AT = 26
/** Where the text's length is in a head. */
const TEXT_LENGTH_AT = 38
/** Flags: `end_time_unix_nano` is null; `duration_ms` is null; `parent_span_id` is null; `svc.function.kind` is `internal`. */
const NO_END = 1
const NO_DURATION = 2
const NO_PARENT = 4
const INTERNAL = 8
/** The head's ids, in this order (then the text). */
const TRACE_ID = 0
const SPAN_ID = 1
const PARENT_SPAN_ID = 2
const TEXT = 3
/** A string's length word: written two bytes per unit (one was above U+00FF). */
const WIDE = 0x80000000
const STATUSES: readonly SpanStatus[] = ['unset', 'ok', 'error']

/**
 * Writes `s` at `at` and its length into the head at `offset` as string `field`; where the next
 * string goes. One byte per unit when every unit fits (ids, names: Latin-1), else UTF-16LE, which
 * keeps any string as it was (a lone surrogate too, which UTF-8 would replace).
 */
function putField(chunk: Buffer, view: DataView, offset: number, field: number, at: number, s: string): number {
  const n = s.length
  for (let i = 0; i < n; i++) {
    const unit = s.charCodeAt(i)
    if (unit > 0xff) {
      view.setUint32(offset + LENGTHS_AT + 4 * field, (n | WIDE) >>> 0, true)
      return at + chunk.write(s, at, 'utf16le')
    }
    chunk[at + i] = unit
  }
  view.setUint32(offset + LENGTHS_AT + 4 * field, n, true)
  return at + n
}

/** Bytes of a head's string whose length word is `word`. */
const fieldBytes = (word: number): number => (word >= WIDE ? (word - WIDE) * 2 : word)

/** Where string `field` (or, at {@link TEXT}, the text) of the head at `offset` starts. */
function fieldAt(chunk: TextChunk, offset: number, field: number): number {
  let at = offset + SPAN_HEAD_BYTES
  for (let i = 0; i < field; i++) at += fieldBytes(chunk.view.getUint32(offset + LENGTHS_AT + 4 * i, true))
  return at
}

/** String `field` of the head at `offset` (a new string). */
function fieldText(chunk: TextChunk, offset: number, field: number): string {
  const word = chunk.view.getUint32(offset + LENGTHS_AT + 4 * field, true)
  const at = fieldAt(chunk, offset, field)
  return chunk.bytes.toString(word >= WIDE ? 'utf16le' : 'latin1', at, at + fieldBytes(word))
}

/** Whether string `field` of the head at `offset` is `s` (no string made). */
function fieldIs(chunk: TextChunk, offset: number, field: number, s: string): boolean {
  const word = chunk.view.getUint32(offset + LENGTHS_AT + 4 * field, true)
  const wide = word >= WIDE
  const n = wide ? word - WIDE : word
  if (n !== s.length) return false
  const at = fieldAt(chunk, offset, field)
  const bytes = chunk.bytes
  if (wide) {
    for (let i = 0; i < n; i++) if ((bytes[at + 2 * i]! | (bytes[at + 2 * i + 1]! << 8)) !== s.charCodeAt(i)) return false
  } else for (let i = 0; i < n; i++) if (bytes[at + i] !== s.charCodeAt(i)) return false
  return true
}

/**
 * Strings the window's spans share (names, services, function ids), each kept once with the number
 * of spans naming it, by a small integer: a span holds three numbers instead of three strings.
 * An entry goes with the last span naming it. Bounded by the window: at most three per span.
 */
class StringTable {
  private readonly ids = new Map<string, number>()
  private readonly values: Array<string | undefined> = []
  private uses = new Int32Array(64)
  private readonly free: number[] = []
  /** The string used last and its id: spans in a row mostly name the same ones. */
  private last: string | undefined
  private lastId = -1

  /** Entries held. */
  get size(): number {
    return this.ids.size
  }

  /** The id of `s`, with one more use. */
  use(s: string): number {
    let id = s === this.last ? this.lastId : this.ids.get(s)
    if (id === undefined) {
      id = this.free.pop() ?? this.values.length
      if (id >= this.uses.length) {
        const uses = new Int32Array(this.uses.length * 2)
        uses.set(this.uses)
        this.uses = uses
      }
      this.values[id] = s
      this.ids.set(s, id)
    }
    this.last = s
    this.lastId = id
    this.uses[id]!++
    return id
  }

  /** The string of `id`. */
  get(id: number): string {
    return this.values[id]!
  }

  /** One use of `id` less: the entry goes at the last. */
  release(id: number): void {
    if (--this.uses[id]! > 0) return
    this.ids.delete(this.values[id]!)
    this.values[id] = undefined
    this.free.push(id)
    if (this.lastId === id) {
      this.last = undefined
      this.lastId = -1
    }
  }

  clear(): void {
    this.ids.clear()
    this.values.length = 0
    this.uses.fill(0)
    this.free.length = 0
    this.last = undefined
    this.lastId = -1
  }
}

/**
 * A span the window keeps as text, as a scan reads it: made from the span's head and text in its
 * chunk when the scan reaches it (the window itself keeps no object per such span: its chunk,
 * offset, resource and the ids of its name, service and `svc.function.id` in its {@link StringTable}s
 * sit in the window's arrays). The head gives the ids, status and `svc.function.kind` (copied out
 * at once) and the times (read on demand);
 * the text is the JSON of the record without its resource (the `builtin` file's row body,
 * ./sqlite.ts); the resource object is shared by the spans of a frame or worker.
 *
 * Why no object per span in the window: kept for as long as the window keeps the span, each was
 * promoted to the old generation and evicted from it, which was the collector's largest cost under
 * traced load (docs/benchmarks.md, issue 20, sessions 29, 31 and 32).
 */
export class PackedSpan {
  readonly trace_id: string
  readonly span_id: string
  /** The chunk holding the span's head at `offset`, then the JSON of the record without `resource`: UTF-8, {@link length} bytes from {@link textOffset}. */
  readonly chunk: TextChunk
  /** The chunk's generation when the head was read (see {@link TextChunk}). */
  private readonly generation: number
  readonly offset: number
  /** Where the JSON starts in {@link chunk}. */
  readonly textOffset: number
  /** Bytes of the JSON. */
  readonly length: number
  readonly resource: Readonly<Record<string, string>>
  // What whole-window scans filter on (engine::traces::list, engine::runs::list, the `trace` trigger's roots).
  readonly parent_span_id: string | null
  readonly name: string
  readonly service_name: string
  readonly status: SpanStatus
  /** The `svc.function.id` attribute when it is a string. */
  readonly function_id: string | undefined
  /** The `svc.function.kind` attribute is `internal` (§12.4). */
  readonly internal: boolean

  /** The span whose head {@link SpanTexts.append} wrote at `offset` of `chunk`, with its resource, name, service and `svc.function.id` attribute. */
  constructor(chunk: TextChunk, offset: number, resource: Readonly<Record<string, string>>, name: string, serviceName: string, functionId: string | undefined) {
    const bytes = chunk.bytes
    const flags = bytes[offset + 24]!
    this.chunk = chunk
    this.generation = chunk.generation
    this.offset = offset
    this.resource = resource
    this.trace_id = fieldText(chunk, offset, TRACE_ID)
    this.span_id = fieldText(chunk, offset, SPAN_ID)
    this.parent_span_id = (flags & NO_PARENT) !== 0 ? null : fieldText(chunk, offset, PARENT_SPAN_ID)
    this.name = name
    this.service_name = serviceName
    this.function_id = functionId
    this.internal = (flags & INTERNAL) !== 0
    this.status = STATUSES[bytes[offset + 25]!]!
    this.textOffset = fieldAt(chunk, offset, TEXT)
    this.length = chunk.view.getUint32(offset + TEXT_LENGTH_AT, true)
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
    this.bytes()
    return this.chunk.view.getFloat64(this.offset, true)
  }

  get end_time_unix_nano(): number | null {
    const bytes = this.bytes()
    return (bytes[this.offset + 24]! & NO_END) !== 0 ? null : this.chunk.view.getFloat64(this.offset + 8, true)
  }

  get duration_ms(): number | null {
    const bytes = this.bytes()
    return (bytes[this.offset + 24]! & NO_DURATION) !== 0 ? null : this.chunk.view.getFloat64(this.offset + 16, true)
  }

  /** JSON of the record without `resource` (a new string). */
  get body(): string {
    return this.bytes().toString('utf8', this.textOffset, this.textOffset + this.length)
  }

  /** The record, a new object: its JSON parsed (`jsonParse`: escaped keys kept), its payload events restored (`withPayloadEvents`), the resource joined. */
  unpack(): SpanRecord {
    const span = withPayloadEvents(jsonParse(this.body) as SpanRecord)
    span.resource = this.resource as Record<string, string>
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

/**
 * A span as a scan of the window sees it: the record (an engine span) or the span kept as text,
 * both with `trace_id`, `span_id`, `parent_span_id`, `name`, `service_name`, `status`,
 * `start_time_unix_nano`, `end_time_unix_nano` and `duration_ms`; {@link headFunctionId}, {@link headInternal} read two attributes,
 * {@link fullSpan} gives the record.
 */
export type SpanHead = SpanRecord | PackedSpan

/** The record of a head (a new object for a span kept as text). */
export const fullSpan = (head: SpanHead): SpanRecord => (head instanceof PackedSpan ? head.unpack() : head)

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
   * The records carry nothing of the window's. A span kept as text has no object in the ring
   * (undefined there): `spanChunks` holds its chunk, `spanOffsets` where its head is in it
   * ({@link SpanTexts.append}), `spanResources` its resource (shared objects), `spanNames`,
   * `spanServices` and `spanFunctions` the ids of its name, service and `svc.function.id` (-1: none)
   * in {@link names}, {@link services} and {@link functions}; for a span object `spanChunks` holds
   * undefined. At the same index, `spanOlder` is the position of
   * the next older span of the same trace (below `spanFirst` once that one left the window: the
   * end of the trace's chain), `spanHashes` the hash {@link traces} files its trace id under.
   */
  private spanRing: Array<SpanRecord | undefined> = []
  private spanChunks: Array<TextChunk | undefined> = []
  private spanResources: Array<Readonly<Record<string, string>> | undefined> = []
  private spanOffsets = new Float64Array(0)
  private spanNames = new Int32Array(0)
  private spanServices = new Int32Array(0)
  private spanFunctions = new Int32Array(0)
  private readonly names = new StringTable()
  private readonly services = new StringTable()
  private readonly functions = new StringTable()
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
  private readonly traces = new TraceIndex((position, traceId) => this.isTrace(this.slot(position), traceId))
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
    if (sealed) this.putPacked(span, body ?? spanBody(span), bytes)
    else this.place(span, span, undefined, 0, bytes)
  }

  /**
   * Puts `span` as text (see {@link putSpan}): its head and `body` appended to {@link texts}
   * (whose `chunk`, `textAt` and `written` then say where the body is), the window keeping the
   * chunk, offset and resource, not `span`.
   */
  protected putPacked(span: SpanRecord, body: string, bytes: number): void {
    const offset = this.texts.append(span, body)
    this.place(span, undefined, this.texts.chunk, offset, bytes)
  }

  /** Puts `span` (ids, resource), kept as `object` or, with `object` undefined, as the text at `offset` of `chunk`. */
  private place(span: SpanRecord, object: SpanRecord | undefined, chunk: TextChunk | undefined, offset: number, bytes: number): void {
    const counted = bytes + RECORD_OVERHEAD_BYTES
    const traces = this.traces
    const traceId = span.trace_id
    const hash = traces.hash(traceId)
    const newest = traces.newest(traceId, hash)
    if (newest >= 0) {
      // A span sent again (an in-progress one that finished): it takes the earlier one's place, so
      // the ring needs no search; an object stays the same object (an engine span may still
      // finish in place, updateSpan), taking the new content.
      const slot = this.slotOfSpan(newest, span.span_id)
      if (slot >= 0) {
        const earlierChunk = this.spanChunks[slot]
        const earlier = this.spanRing[slot]
        if (earlierChunk !== undefined) {
          this.releaseText(slot)
          this.setSlot(slot, object, chunk, offset, span)
        } else if (earlier !== object) Object.assign(earlier!, object ?? new PackedSpan(chunk!, offset, span.resource, span.name, span.service_name, undefined).unpack())
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
    traces.set(traceId, hash, this.spanFirst + this.spanCount)
    this.ringPush(counted, newest, hash)
    this.setSlot((this.spanHead + this.spanCount - 1) % this.spanRing.length, object, chunk, offset, span)
    if (this.spanBytes > this.limits.maxSpanBytes) this.trimSpans()
  }

  /** Fills `slot` with a span object, or (`object` undefined) `span`'s text at `offset` of `chunk`, holding the chunk and its strings. */
  private setSlot(slot: number, object: SpanRecord | undefined, chunk: TextChunk | undefined, offset: number, span: SpanRecord): void {
    this.spanRing[slot] = object
    this.spanChunks[slot] = chunk
    if (object !== undefined) return
    this.texts.retain(chunk!)
    this.spanOffsets[slot] = offset
    this.spanResources[slot] = span.resource
    this.spanNames[slot] = this.names.use(span.name)
    this.spanServices[slot] = this.services.use(span.service_name)
    const id = span.attributes['svc.function.id']
    this.spanFunctions[slot] = typeof id === 'string' ? this.functions.use(id) : -1
  }

  /** Lets go of what the span kept as text in `slot` holds: its chunk, resource and strings. */
  private releaseText(slot: number): void {
    this.texts.release(this.spanChunks[slot]!)
    this.spanChunks[slot] = undefined
    this.spanResources[slot] = undefined
    this.names.release(this.spanNames[slot]!)
    this.services.release(this.spanServices[slot]!)
    const id = this.spanFunctions[slot]!
    if (id >= 0) this.functions.release(id)
  }

  /** The ring slot of the span at arrival number `position`. */
  private slot(position: number): number {
    return (this.spanHead + position - this.spanFirst) % this.spanRing.length
  }

  /** The span in `slot` as a scan reads it (a new {@link PackedSpan} for a span kept as text). */
  private headAt(slot: number): SpanHead {
    const chunk = this.spanChunks[slot]
    if (chunk === undefined) return this.spanRing[slot]!
    const id = this.spanFunctions[slot]!
    return new PackedSpan(chunk, this.spanOffsets[slot]!, this.spanResources[slot]!, this.names.get(this.spanNames[slot]!), this.services.get(this.spanServices[slot]!), id < 0 ? undefined : this.functions.get(id))
  }

  /** Whether the span in `slot` is of trace `traceId`. */
  private isTrace(slot: number, traceId: string): boolean {
    const chunk = this.spanChunks[slot]
    return chunk === undefined ? this.spanRing[slot]!.trace_id === traceId : fieldIs(chunk, this.spanOffsets[slot]!, TRACE_ID, traceId)
  }

  /** The slot of the span `spanId` of a trace, from its newest at `newest`; -1 when none is. */
  private slotOfSpan(newest: number, spanId: string): number {
    for (let position = newest; position >= this.spanFirst; ) {
      const slot = this.slot(position)
      const chunk = this.spanChunks[slot]
      if (chunk === undefined ? this.spanRing[slot]!.span_id === spanId : fieldIs(chunk, this.spanOffsets[slot]!, SPAN_ID, spanId)) return slot
      position = this.spanOlder[slot]!
    }
    return -1
  }

  /** The slot holding the object `span` in the trace whose newest is at `newest`; -1 when none does. */
  private slotOfObject(newest: number, span: SpanRecord): number {
    for (let position = newest; position >= this.spanFirst; ) {
      const slot = this.slot(position)
      if (this.spanRing[slot] === span) return slot
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

  /** Appends a slot to the ring (its span set by {@link setSlot}), growing it (doubling, up to `maxSpans`) while it is not full yet. */
  private ringPush(counted: number, older: number, hash: number): void {
    let ring = this.spanRing
    if (this.spanCount === ring.length) {
      // Unwrap into larger arrays (amortised O(1)); the window's capacity is reached gradually.
      const length = Math.max(64, Math.min(this.limits.maxSpans, ring.length * 2))
      const next: Array<SpanRecord | undefined> = new Array(length).fill(undefined)
      const chunks: Array<TextChunk | undefined> = new Array(length).fill(undefined)
      const resources: Array<Readonly<Record<string, string>> | undefined> = new Array(length).fill(undefined)
      const offsets = new Float64Array(length)
      const names = new Int32Array(length)
      const services = new Int32Array(length)
      const functions = new Int32Array(length)
      const sizes = new Float64Array(length)
      const olders = new Float64Array(length)
      const hashes = new Int32Array(length)
      for (let i = 0; i < this.spanCount; i++) {
        const from = (this.spanHead + i) % ring.length
        next[i] = ring[from]
        chunks[i] = this.spanChunks[from]
        resources[i] = this.spanResources[from]
        offsets[i] = this.spanOffsets[from]!
        names[i] = this.spanNames[from]!
        services[i] = this.spanServices[from]!
        functions[i] = this.spanFunctions[from]!
        sizes[i] = this.spanSizes[from]!
        olders[i] = this.spanOlder[from]!
        hashes[i] = this.spanHashes[from]!
      }
      this.spanRing = ring = next
      this.spanChunks = chunks
      this.spanResources = resources
      this.spanOffsets = offsets
      this.spanNames = names
      this.spanServices = services
      this.spanFunctions = functions
      this.spanSizes = sizes
      this.spanOlder = olders
      this.spanHashes = hashes
      this.spanHead = 0
    }
    const slot = (this.spanHead + this.spanCount) % ring.length
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
    const slot = this.slotOfObject(newest, span)
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
    for (const head of this.heads()) yield fullSpan(head)
  }

  *heads(): IterableIterator<SpanHead> {
    const length = this.spanRing.length
    const head = this.spanHead
    const count = this.spanCount
    for (let i = 0; i < count; i++) yield this.headAt((head + i) % length)
  }

  traceHeads(traceId: string): SpanHead[] {
    return this.slotsOf(traceId).map((slot) => this.headAt(slot))
  }

  trace(traceId: string): SpanRecord[] {
    return this.slotsOf(traceId).map((slot) => fullSpan(this.headAt(slot)))
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
    for (let i = 0; i < n; i++) {
      const chunk = this.spanChunks[(this.spanHead + i) % this.spanRing.length]
      if (chunk !== undefined) this.texts.release(chunk)
    }
    this.spanRing = []
    this.spanChunks = []
    this.spanResources = []
    this.spanOffsets = new Float64Array(0)
    this.spanNames = new Int32Array(0)
    this.spanServices = new Int32Array(0)
    this.spanFunctions = new Int32Array(0)
    this.names.clear()
    this.services.clear()
    this.functions.clear()
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
    while (this.spanCount > 0 && this.startOf(this.spanHead) < cutoffNs) this.dropOldest()
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

  /** `start_time_unix_nano` of the span in `slot`. */
  private startOf(slot: number): number {
    const chunk = this.spanChunks[slot]
    return chunk === undefined ? this.spanRing[slot]!.start_time_unix_nano : chunk.view.getFloat64(this.spanOffsets[slot]!, true)
  }

  /** Removes the oldest span of the ring and of its trace (the end of the trace's chain: only the index may name it). */
  private dropOldest(): void {
    const ring = this.spanRing
    const head = this.spanHead
    this.traces.delete(this.spanHashes[head]!, this.spanFirst)
    if (this.spanChunks[head] !== undefined) this.releaseText(head)
    else ring[head] = undefined
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

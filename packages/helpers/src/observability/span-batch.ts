/**
 * The span side of the telemetry exporter (sdk.md §12.1, protocol.md §10.2): finished spans arrive
 * as OTLP/JSON fragments ({@link readableSpanJson} for SDK spans, the handler spans of
 * `handler-span.ts` write their own), wait at most `spansFlushIntervalMs`, and leave as one `OTLP`
 * frame per batch. Replaces `BatchSpanProcessor` + `JsonTraceSerializer`, which built an OTLP
 * object tree per span and kept every span object alive until the export (docs/decisions.md).
 *
 * Bounds: a batch is sent early (on the next turn of the event loop) once it holds
 * {@link MAX_BATCH_SPANS} spans or {@link MAX_BATCH_BYTES} characters; at most
 * {@link MAX_QUEUED_SPANS} wait at any time, later ones are dropped and counted.
 *
 * Frames stay small on purpose: receiving a frame of 64 spans (about 70 KiB) costs the engine
 * about half the CPU per span of one of 512 (about 600 KiB: 3.5 vs 6.9 µs), and parsing a small
 * frame never holds up its event loop for long (docs/benchmarks.md, SDK telemetry).
 */
import type { Context } from '@opentelemetry/api'
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace'
import { readableSpanJson, scopeJson } from './otlp-json.ts'

/** Spans per `OTLP` frame at most. */
export const MAX_BATCH_SPANS = 64
/** Characters of span JSON per frame at most, unless one span alone is larger (frames of about 60 KiB or less). */
export const MAX_BATCH_BYTES = 60 * 1024
/** Spans waiting to be sent at most; beyond it new spans are dropped (counted in {@link SpanBatchStats}). */
export const MAX_QUEUED_SPANS = 2048

/** Counters of a {@link SpanBatch}. */
export interface SpanBatchStats {
  /** Spans handed to the socket. */
  exported: number
  /** Spans dropped because {@link MAX_QUEUED_SPANS} were already waiting. */
  dropped: number
}

/** Options of a {@link SpanBatch}. */
export interface SpanBatchOptions {
  /** OTLP/JSON `Resource` of every span ({@link resourceJson}). */
  resourceJson: string
  /** Longest wait of a finished span before its batch is sent, ms. */
  flushIntervalMs: number
  /** ASCII text written before each request's JSON, e.g. `OTLP` (a `/otel` frame's prefix, protocol.md §10.2); default none. */
  framePrefix?: string
  /**
   * Receives each frame: {@link SpanBatchOptions.framePrefix} then an `ExportTraceServiceRequest`
   * as UTF-8 JSON. The bytes are the receiver's: the batch never touches them again.
   */
  send(frame: Uint8Array): void
}

/** Closes the `spans` array, the `ScopeSpans`, `scopeSpans`, the `ResourceSpans`, `resourceSpans` and the request. */
const TRAILER = ']}]}]}'

/**
 * One frame being written: the request's head (prefix, resource, scope) and the spans of one
 * instrumentation scope so far, as UTF-8 in a buffer (off the JavaScript heap: a span's text is
 * garbage as soon as it is written, instead of living in the young generation until the frame
 * leaves, which made V8 grow it to 64 MiB under load).
 */
class Frame {
  buffer: Buffer
  length: number
  spans = 0
  /** Characters of span JSON written (the {@link MAX_BATCH_BYTES} bound counts characters). */
  chars = 0

  constructor(head: Buffer, firstSpanChars: number) {
    // Room for MAX_BATCH_BYTES characters of ASCII spans; wider text grows it (append).
    this.buffer = Buffer.allocUnsafe(head.length + Math.max(MAX_BATCH_BYTES, firstSpanChars) + 1024)
    this.length = head.copy(this.buffer, 0)
  }

  append(span: string): void {
    // A UTF-16 unit takes at most 3 bytes in UTF-8; the exact count only when that may not fit.
    let need = this.length + span.length * 3 + 1 + TRAILER.length
    if (need > this.buffer.length) {
      need = this.length + Buffer.byteLength(span) + 1 + TRAILER.length
      if (need > this.buffer.length) {
        const grown = Buffer.allocUnsafe(Math.max(need, this.buffer.length * 2))
        this.buffer.copy(grown, 0, 0, this.length)
        this.buffer = grown
      }
    }
    if (this.spans > 0) this.buffer[this.length++] = 0x2c // ','
    this.length += this.buffer.write(span, this.length)
    this.spans++
    this.chars += span.length
  }

  /** The finished frame's bytes. */
  finish(): Uint8Array {
    this.length += this.buffer.write(TRAILER, this.length, 'latin1')
    return this.buffer.subarray(0, this.length)
  }
}

/**
 * Finished spans waiting for their frame, grouped by instrumentation scope: each scope's spans are
 * written straight into the bytes of its next frame ({@link Frame}), so sending needs no join,
 * no second encoding and no copy.
 */
export class SpanBatch {
  readonly #options: SpanBatchOptions
  /** The frame being written, per scope. */
  #open = new Map<string, Frame>()
  /** Frames that are full, waiting for the next send. */
  #full: Frame[] = []
  /** The request head of each scope's frames, encoded once. */
  readonly #heads = new Map<string, Buffer>()
  #lastScope: string | undefined
  #last: Frame | undefined
  #count = 0
  #chars = 0
  #timer: ReturnType<typeof setTimeout> | undefined
  #immediate: ReturnType<typeof setImmediate> | undefined
  #closed = false
  #exported = 0
  #dropped = 0

  constructor(options: SpanBatchOptions) {
    this.#options = options
  }

  get stats(): SpanBatchStats {
    return { exported: this.#exported, dropped: this.#dropped }
  }

  /**
   * Queues one span. `scope` is its OTLP/JSON `InstrumentationScope` ({@link scopeJson}), `span`
   * its OTLP/JSON `Span`. Never throws; after {@link close} the span is dropped.
   */
  add(scope: string, span: string): void {
    if (this.#closed || this.#count >= MAX_QUEUED_SPANS) {
      this.#dropped++
      return
    }
    let frame = this.#lastScope === scope ? this.#last : this.#open.get(scope)
    if (frame !== undefined && (frame.spans >= MAX_BATCH_SPANS || frame.chars + span.length > MAX_BATCH_BYTES)) {
      this.#full.push(frame)
      frame = undefined
    }
    if (frame === undefined) {
      frame = new Frame(this.#head(scope), span.length)
      this.#open.set(scope, frame)
    }
    this.#lastScope = scope
    this.#last = frame
    frame.append(span)
    this.#count++
    this.#chars += span.length
    if (this.#count >= MAX_BATCH_SPANS || this.#chars >= MAX_BATCH_BYTES || this.#full.length > 0) {
      // Sent after the current turn's I/O, not inside the span's end(): the handler's answer leaves first.
      this.#immediate ??= setImmediate(() => {
        this.#immediate = undefined
        this.flush()
      })
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined
        this.flush()
      }, this.#options.flushIntervalMs)
      this.#timer.unref()
    }
  }

  /** Sends every waiting span now, in frames of at most {@link MAX_BATCH_SPANS} spans of one scope. */
  flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#immediate !== undefined) clearImmediate(this.#immediate)
    this.#immediate = undefined
    if (this.#count === 0) return
    const frames = this.#full
    for (const frame of this.#open.values()) frames.push(frame)
    this.#full = []
    this.#open = new Map()
    this.#lastScope = undefined
    this.#last = undefined
    this.#count = 0
    this.#chars = 0
    for (const frame of frames) {
      this.#exported += frame.spans
      this.#options.send(frame.finish())
    }
  }

  /** Sends what waits and refuses further spans. */
  close(): void {
    this.flush()
    this.#closed = true
  }

  /** The bytes every frame of `scope` starts with: the prefix, the resource and the scope. */
  #head(scope: string): Buffer {
    let head = this.#heads.get(scope)
    if (head === undefined) {
      head = Buffer.from((this.#options.framePrefix ?? '') + '{"resourceSpans":[{"resource":' + this.#options.resourceJson + ',"scopeSpans":[{"scope":' + scope + ',"spans":[', 'utf8')
      if (this.#heads.size < 1024) this.#heads.set(scope, head)
    }
    return head
  }
}

/**
 * The `SpanProcessor` of the SDK tracer provider: each finished, sampled span goes to the
 * {@link SpanBatch} as OTLP/JSON. Keeps no span object once it has ended.
 */
export class BatchingSpanProcessor implements SpanProcessor {
  readonly #batch: SpanBatch
  /** OTLP/JSON scope text by `name@version`, computed once per instrumentation scope. */
  readonly #scopes = new Map<string, string>()

  constructor(batch: SpanBatch) {
    this.#batch = batch
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    if ((span.spanContext().traceFlags & 1) === 0) return // recorded but not sampled: not exported
    const { name, version } = span.instrumentationScope
    const key = version === undefined ? name : `${name}@${version}`
    let scope = this.#scopes.get(key)
    if (scope === undefined) {
      scope = scopeJson(name, version)
      if (this.#scopes.size < 1024) this.#scopes.set(key, scope)
    }
    this.#batch.add(scope, readableSpanJson(span))
  }

  async forceFlush(): Promise<void> {
    this.#batch.flush()
  }

  async shutdown(): Promise<void> {
    this.#batch.flush()
  }
}

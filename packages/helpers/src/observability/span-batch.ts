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
  /** Receives each `ExportTraceServiceRequest` as JSON text (the `OTLP` frame body). */
  send(json: string): void
}

/** Fragments of one instrumentation scope. */
interface ScopeGroup {
  scope: string
  spans: string[]
}

/** Finished spans waiting for their frame, grouped by instrumentation scope. */
export class SpanBatch {
  readonly #options: SpanBatchOptions
  #groups = new Map<string, ScopeGroup>()
  #last: ScopeGroup | undefined
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
    let group = this.#last
    if (group === undefined || group.scope !== scope) {
      group = this.#groups.get(scope)
      if (group === undefined) this.#groups.set(scope, (group = { scope, spans: [] }))
      this.#last = group
    }
    group.spans.push(span)
    this.#count++
    this.#chars += span.length
    if (this.#count >= MAX_BATCH_SPANS || this.#chars >= MAX_BATCH_BYTES) {
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

  /** Sends every waiting span now, in frames of at most {@link MAX_BATCH_SPANS} spans. */
  flush(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#immediate !== undefined) clearImmediate(this.#immediate)
    this.#immediate = undefined
    if (this.#count === 0) return
    const groups = [...this.#groups.values()]
    this.#groups = new Map()
    this.#last = undefined
    this.#count = 0
    this.#chars = 0
    let parts: string[] = []
    let inFrame = 0
    let chars = 0
    const emit = () => {
      if (parts.length === 0) return
      this.#options.send('{"resourceSpans":[{"resource":' + this.#options.resourceJson + ',"scopeSpans":[' + parts.join(',') + ']}]}')
      parts = []
      inFrame = 0
      chars = 0
    }
    for (const group of groups) {
      let start = 0
      for (let i = 0; i < group.spans.length; i++) {
        const len = group.spans[i]!.length
        if (inFrame > 0 && (inFrame >= MAX_BATCH_SPANS || chars + len > MAX_BATCH_BYTES)) {
          if (i > start) parts.push('{"scope":' + group.scope + ',"spans":[' + group.spans.slice(start, i).join(',') + ']}')
          start = i
          emit()
        }
        inFrame++
        chars += len
      }
      if (start < group.spans.length) parts.push('{"scope":' + group.scope + ',"spans":[' + group.spans.slice(start).join(',') + ']}')
      this.#exported += group.spans.length
    }
    emit()
  }

  /** Sends what waits and refuses further spans. */
  close(): void {
    this.flush()
    this.#closed = true
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

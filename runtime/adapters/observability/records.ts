/**
 * The records the observability worker stores (builtins.md §12.4): spans, log records and metric
 * points, in the shapes the query functions return.
 */

/** Span kinds of §12.4 (OTLP `SPAN_KIND_*` lower-cased, `unspecified` read as `internal`). */
export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer'

/** `ok`, `error` or `unset` (§12.4). */
export type SpanStatus = 'ok' | 'error' | 'unset'

/**
 * A span (§12.4). Ids are lower-case hex (trace 32, span 16 characters). Times are Unix
 * nanoseconds as JSON numbers (microsecond precision). `end_time_unix_nano` and `duration_ms`
 * are null while the span is unfinished.
 */
export interface SpanRecord {
  trace_id: string
  span_id: string
  parent_span_id: string | null
  name: string
  kind: SpanKind
  service_name: string
  start_time_unix_nano: number
  end_time_unix_nano: number | null
  duration_ms: number | null
  status: SpanStatus
  status_message?: string
  attributes: Record<string, unknown>
  resource: Record<string, string>
  events: Array<{ name: string; timestamp_unix_nano: number; attributes: Record<string, unknown>; dropped_attributes_count?: number }>
  links: Array<{ trace_id: string; span_id: string; attributes: Record<string, unknown>; dropped_attributes_count?: number }>
  /**
   * Attributes dropped or truncated by the observability worker's size limits (OTLP's field of the
   * same name); absent when none. Likewise on events and links.
   */
  dropped_attributes_count?: number
  /** Events dropped by the size limits; absent when none. */
  dropped_events_count?: number
  /** Links dropped by the size limits; absent when none. */
  dropped_links_count?: number
}

/** A log record (§12.4): payload of the `log` trigger and element of `engine::logs::list`. */
export interface LogRecord {
  timestamp_unix_nano: number
  observed_timestamp_unix_nano: number
  /** 1–4 trace, 5–8 debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal; 0 unspecified. */
  severity_number: number
  severity_text: string
  body: string
  attributes: Record<string, unknown>
  resource: Record<string, string>
  service_name: string
  trace_id: string | null
  span_id: string | null
  instrumentation_scope_name?: string
  instrumentation_scope_version?: string
  /** Attributes dropped or truncated by the observability worker's size limits (OTLP's field); absent when none. */
  dropped_attributes_count?: number
}

/** One point of a metric (§12.5 `engine::metrics::list`). */
export interface MetricPoint {
  time_unix_nano: number
  value: unknown
  attributes: Record<string, unknown>
}

/** A metric with its points (§12.5). */
export interface MetricSeries {
  name: string
  type: 'gauge' | 'sum' | 'histogram'
  unit?: string
  description?: string
  points: MetricPoint[]
}

/**
 * A contributor of metric series to `engine::metrics::list` (§12.5), registered with
 * `TelemetryHub.addMetricSource`: called on every listing with the time of the listing (Unix ns),
 * it returns its current series, typically one point each per attribute set (gauges: the value
 * now; sums: the total since the engine started). Keep it cheap; it runs on the engine's thread.
 */
export type MetricSource = (nowUnixNano: number) => MetricSeries[] | Promise<MetricSeries[]>

/** The current time as Unix nanoseconds (microsecond precision, a JSON-safe number). */
export function nowUnixNano(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000) * 1000
}

/**
 * Estimated JSON bytes of a string (exact for ASCII without escapes): its UTF-16 length up to 1024
 * units (cheap on the hot path), its UTF-8 length beyond, plus the quotes.
 */
export function stringSize(text: string): number {
  return (text.length <= 1024 ? text.length : Buffer.byteLength(text, 'utf8')) + 2
}

/**
 * Estimated JSON bytes of `value` (numbers count 24), or a number above `budget` as soon as it
 * exceeds it (so that a huge value costs no more than the budget to measure); values nested deeper
 * than 64 levels count as over the budget. No JSON is built.
 */
export function valueSize(value: unknown, budget = Number.MAX_SAFE_INTEGER, depth = 0): number {
  switch (typeof value) {
    case 'string':
      return stringSize(value)
    case 'number':
    case 'bigint':
      return 24
    case 'boolean':
      return 5
    case 'object': {
      if (value === null) return 4
      if (depth > 64) return budget + 1
      let size = 2
      if (Array.isArray(value)) {
        for (const item of value) {
          size += valueSize(item, budget - size, depth + 1) + 1
          if (size > budget) return size
        }
        return size
      }
      for (const key in value) {
        size += stringSize(key) + valueSize((value as Record<string, unknown>)[key], budget - size, depth + 1) + 2
        if (size > budget) return size
      }
      return size
    }
    default:
      return 4
  }
}

/**
 * Estimated JSON bytes of a span's or log record's fixed members (keys, numbers, severity, kind,
 * status): what a record costs beyond its strings and attributes. The size limiter
 * (`runtime/workers/observability/limits.ts`) reserves the same amount.
 */
export const RECORD_FIXED_BYTES = 320

/** Estimated JSON bytes of a span, walking it (the limiter's estimate is used where there is one). */
export function spanSize(span: SpanRecord): number {
  let size = RECORD_FIXED_BYTES + stringSize(span.trace_id) + stringSize(span.span_id) + stringSize(span.name) + stringSize(span.service_name)
  if (span.parent_span_id !== null) size += stringSize(span.parent_span_id)
  if (span.status_message !== undefined) size += stringSize(span.status_message)
  size += valueSize(span.resource) + valueSize(span.attributes)
  for (const event of span.events) size += stringSize(event.name) + 64 + valueSize(event.attributes)
  for (const link of span.links) size += stringSize(link.trace_id) + stringSize(link.span_id) + 64 + valueSize(link.attributes)
  return size
}

/** Estimated JSON bytes of a log record, walking it (the limiter's estimate is used where there is one). */
export function logSize(record: LogRecord): number {
  let size = RECORD_FIXED_BYTES + stringSize(record.body) + stringSize(record.service_name) + stringSize(record.severity_text)
  if (record.trace_id !== null) size += stringSize(record.trace_id)
  if (record.span_id !== null) size += stringSize(record.span_id)
  if (record.instrumentation_scope_name !== undefined) size += stringSize(record.instrumentation_scope_name)
  if (record.instrumentation_scope_version !== undefined) size += stringSize(record.instrumentation_scope_version)
  return size + valueSize(record.resource) + valueSize(record.attributes)
}

/** JSON of objects shared between records (frozen resources, empty events/links), made once. */
const sharedJson = new WeakMap<object, string>()

/** `JSON.stringify(value)`, made once per frozen object (the engine's shared resource). */
export function jsonOf(value: object): string {
  if (!Object.isFrozen(value)) return JSON.stringify(value)
  let text = sharedJson.get(value)
  if (text === undefined) sharedJson.set(value, (text = JSON.stringify(value)))
  return text
}

/**
 * The records the observability worker stores (builtins.md §12.4): spans, log records and metric
 * points, in the shapes the query functions return (their types are svc-protocol's), and the
 * size estimates the store and the limiter use.
 */

import type { LogRecord, MetricSeries, SpanRecord } from 'svc-protocol'

// The records as callers receive them are svc-protocol's (payloads/observability.ts): one
// definition for the engine, the console and any other caller.
export type { LogRecord, MetricPoint, MetricSeries, SpanEvent, SpanKind, SpanLink, SpanRecord, SpanStatus } from 'svc-protocol'

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

/**
 * The records the observability worker stores (builtins.md §12.4): spans, log records and metric
 * points, in the shapes the query functions return (their types are svc-protocol's), and the
 * size estimates the store and the limiter use.
 */

import type { LogRecord, MetricSeries, SpanEvent, SpanRecord } from 'svc-protocol'

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

/**
 * The member a handler span's stored text ends with in place of its two payload events
 * (`runtime/engine/handler-spans.ts`, `spanText`): `[input, input truncated, output, output
 * truncated]`, each payload its event's `svc.payload.json` (a string) or null when the span has no
 * such event. Why: the two events' names, times and attribute keys were about a third of each
 * span's row in the `builtin` file and of its text in the window (issue 20); their times are the
 * span's own start and end.
 */
export const PAYLOAD_EVENTS = 'payload_events'

/** How a span's text starts its {@link PAYLOAD_EVENTS} member, up to its first value: the writer's (handler-spans.ts) and the reader's (sqlite.ts) one spelling. */
export const PAYLOAD_EVENTS_HEAD = ',"' + PAYLOAD_EVENTS + '":['

/**
 * Estimated JSON bytes a payload event adds to a span beyond its `svc.payload.json` text (its
 * name, time and the other keys): what a span's size counts for each event {@link PAYLOAD_EVENTS}
 * stands for, so that the window's byte budget and the size limits see the span as before.
 */
export const PAYLOAD_EVENT_BYTES = 145

/**
 * `span` (a span's stored text, parsed) with its {@link PAYLOAD_EVENTS} member, if any, turned
 * back into the events it stands for, in place: `svc.invocation.input` at the span's start, first,
 * and `svc.invocation.output` at its end, last (`svc.payload.ok` false when the span's status is
 * `error`), as the engine records a handler span (docs/reference/protocol.md, "Handler spans
 * recorded by the engine"). A member that is not such an array is dropped. Returns `span`.
 * @example withPayloadEvents(JSON.parse(text)) // → the record with its svc.invocation.input/output events
 */
export function withPayloadEvents(span: SpanRecord): SpanRecord {
  const packed = (span as { [PAYLOAD_EVENTS]?: unknown })[PAYLOAD_EVENTS]
  if (packed === undefined) return span
  delete (span as { [PAYLOAD_EVENTS]?: unknown })[PAYLOAD_EVENTS]
  if (!Array.isArray(packed) || packed.length !== 4 || !Array.isArray(span.events)) return span
  const [input, inputTruncated, output, outputTruncated] = packed as unknown[]
  if (typeof input === 'string') span.events.unshift(payloadEvent('svc.invocation.input', span.start_time_unix_nano, input, inputTruncated === true, true))
  if (typeof output === 'string') span.events.push(payloadEvent('svc.invocation.output', span.end_time_unix_nano ?? span.start_time_unix_nano, output, outputTruncated === true, span.status !== 'error'))
  return span
}

function payloadEvent(name: string, time: number, json: string, truncated: boolean, ok: boolean): SpanEvent {
  return { name, timestamp_unix_nano: time, attributes: { 'svc.payload.json': json, 'svc.payload.truncated': truncated, 'svc.payload.ok': ok } }
}

/**
 * OTLP/JSON text for spans, written directly as strings (protocol.md §10.2: the standard OTLP/JSON
 * mapping — camelCase names, lower-case hex ids, 64-bit nanosecond times as decimal strings, span
 * kind and status code as numbers). Fields that hold their default value (zero counts, empty
 * lists, `UNSET` status without a message) are left out, as the proto3 JSON mapping allows.
 *
 * One span becomes one JSON object text (a *fragment*); {@link SpanBatch} joins fragments into an
 * `ExportTraceServiceRequest`. Building text instead of OTLP objects first halves the work per span
 * and leaves a single string alive until the batch is sent (docs/decisions.md, telemetry cost).
 *
 * @example
 * attributesJson({ 'http.method': 'GET', retries: 2 })
 * // → '[{"key":"http.method","value":{"stringValue":"GET"}},{"key":"retries","value":{"intValue":2}}]'
 */
import type { Attributes, AttributeValue, HrTime, Link, SpanContext } from '@opentelemetry/api'
import type { ReadableSpan } from '@opentelemetry/sdk-trace'

/** OTLP `Span.flags` bit: the `isRemote` bit below is meaningful (OTLP trace.proto `SpanFlags`). */
const FLAG_HAS_IS_REMOTE = 0x100
/** OTLP `Span.flags` bit: the parent (or link target) is remote. */
const FLAG_IS_REMOTE = 0x200

/** OTLP `Span.flags` of a span whose W3C trace flags are `traceFlags` and whose parent is (not) remote. */
export function spanFlags(traceFlags: number, parentIsRemote: boolean | undefined): number {
  return (traceFlags & 0xff) | FLAG_HAS_IS_REMOTE | (parentIsRemote === true ? FLAG_IS_REMOTE : 0)
}

/**
 * The OTLP/JSON `AnyValue` of an attribute value: strings, booleans, integers (`intValue`, as a
 * JSON number), other numbers (`doubleValue`; NaN and ±Infinity as the proto3 JSON strings) and
 * homogeneous arrays of those (`arrayValue`; `null`/`undefined` members become empty values).
 * Anything else gives `undefined` (the attribute is dropped, as the SDK drops invalid values).
 */
export function anyValueJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return '{"stringValue":' + JSON.stringify(value) + '}'
    case 'boolean':
      return value ? '{"boolValue":true}' : '{"boolValue":false}'
    case 'number':
      if (Number.isInteger(value)) return '{"intValue":' + String(value) + '}'
      if (Number.isFinite(value)) return '{"doubleValue":' + String(value) + '}'
      return '{"doubleValue":"' + (Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity') + '"}'
    case 'bigint':
      return '{"intValue":"' + value.toString() + '"}'
    case 'object': {
      if (!Array.isArray(value)) return undefined
      let text = '{"arrayValue":{"values":['
      for (let i = 0; i < value.length; i++) {
        if (i > 0) text += ','
        text += value[i] === null || value[i] === undefined ? '{}' : (anyValueJson(value[i]) ?? '{}')
      }
      return text + ']}}'
    }
    default:
      return undefined
  }
}

/** One OTLP/JSON `KeyValue`, or '' when the value cannot be an attribute. */
export function keyValueJson(key: string, value: unknown): string {
  const v = anyValueJson(value)
  return v === undefined ? '' : '{"key":' + JSON.stringify(key) + ',"value":' + v + '}'
}

/** OTLP/JSON `KeyValue[]` of an attribute map; invalid values are left out. */
export function attributesJson(attributes: Attributes | Record<string, unknown> | undefined): string {
  let text = '['
  let first = true
  if (attributes !== undefined) {
    for (const key in attributes) {
      if (!Object.prototype.hasOwnProperty.call(attributes, key)) continue
      const kv = keyValueJson(key, (attributes as Record<string, unknown>)[key])
      if (kv === '') continue
      text += first ? kv : ',' + kv
      first = false
    }
  }
  return text + ']'
}

/** Nanoseconds since the Unix epoch as a decimal string, from an `HrTime` `[seconds, nanoseconds]`. */
export function hrTimeNanos(time: HrTime): string {
  const [s, ns] = time
  if (s === 0) return String(ns)
  return String(s) + String(ns).padStart(9, '0')
}

/**
 * Nanoseconds since the Unix epoch as a decimal string, from whole milliseconds `ms` plus a
 * fraction `fractionMs` (0 ≤ fraction < 1, sub-millisecond part). Exact: no 64-bit float ever
 * holds the full nanosecond count (it would lose the last three digits).
 */
export function msNanos(ms: number, fractionMs: number): string {
  let whole = ms
  let ns = Math.round(fractionMs * 1e6)
  if (ns >= 1e6) {
    whole += 1
    ns -= 1e6
  }
  return whole === 0 ? String(ns) : String(whole) + String(ns).padStart(6, '0')
}

/** OTLP/JSON `Resource` of a resource's attributes. */
export function resourceJson(attributes: Record<string, unknown>): string {
  return '{"attributes":' + attributesJson(attributes) + '}'
}

/** OTLP/JSON `InstrumentationScope`. */
export function scopeJson(name: string, version?: string): string {
  return '{"name":' + JSON.stringify(name) + (version ? ',"version":' + JSON.stringify(version) : '') + '}'
}

function linkJson(link: Link & { droppedAttributesCount?: number }): string {
  const ctx: SpanContext = link.context
  let text = '{"traceId":"' + ctx.traceId + '","spanId":"' + ctx.spanId + '"'
  const state = ctx.traceState?.serialize()
  if (state) text += ',"traceState":' + JSON.stringify(state)
  if (link.attributes !== undefined) text += ',"attributes":' + attributesJson(link.attributes)
  if (link.droppedAttributesCount) text += ',"droppedAttributesCount":' + link.droppedAttributesCount
  return text + ',"flags":' + spanFlags(ctx.traceFlags, ctx.isRemote) + '}'
}

/**
 * The OTLP/JSON `Span` of a finished SDK span (`@opentelemetry/sdk-trace`'s `ReadableSpan`: spans
 * that applications and instrumentations start with their own tracers).
 */
export function readableSpanJson(span: ReadableSpan): string {
  const ctx = span.spanContext()
  const parent = span.parentSpanContext
  let text = '{"traceId":"' + ctx.traceId + '","spanId":"' + ctx.spanId + '"'
  if (parent?.spanId) text += ',"parentSpanId":"' + parent.spanId + '"'
  const state = ctx.traceState?.serialize()
  if (state) text += ',"traceState":' + JSON.stringify(state)
  text += ',"name":' + JSON.stringify(span.name) + ',"kind":' + (span.kind + 1)
  text += ',"startTimeUnixNano":"' + hrTimeNanos(span.startTime) + '","endTimeUnixNano":"' + hrTimeNanos(span.endTime) + '"'
  text += ',"attributes":' + attributesJson(span.attributes)
  if (span.droppedAttributesCount > 0) text += ',"droppedAttributesCount":' + span.droppedAttributesCount
  if (span.events.length > 0) {
    text += ',"events":['
    for (let i = 0; i < span.events.length; i++) {
      const e = span.events[i]!
      text += (i > 0 ? ',{"name":' : '{"name":') + JSON.stringify(e.name) + ',"timeUnixNano":"' + hrTimeNanos(e.time) + '"'
      if (e.attributes !== undefined) text += ',"attributes":' + attributesJson(e.attributes)
      if (e.droppedAttributesCount) text += ',"droppedAttributesCount":' + e.droppedAttributesCount
      text += '}'
    }
    text += ']'
  }
  if (span.droppedEventsCount > 0) text += ',"droppedEventsCount":' + span.droppedEventsCount
  if (span.links.length > 0) text += ',"links":[' + span.links.map(linkJson).join(',') + ']'
  if (span.droppedLinksCount > 0) text += ',"droppedLinksCount":' + span.droppedLinksCount
  text += ',' + statusJson(span.status.code, span.status.message)
  return text + ',"flags":' + spanFlags(ctx.traceFlags, parent?.isRemote) + '}'
}

/** `"status":{…}` of a span status (code 0 unset, 1 OK, 2 ERROR). */
export function statusJson(code: number, message: string | undefined): string {
  if (message !== undefined && message !== '') return '"status":{"code":' + code + ',"message":' + JSON.stringify(message) + '}'
  return code === 0 ? '"status":{}' : '"status":{"code":' + code + '}'
}

/** True when `value` may be a span attribute value (a primitive, or a homogeneous array of them with nulls). */
export function isAttributeValue(value: unknown): value is AttributeValue {
  const t = typeof value
  if (t === 'string' || t === 'number' || t === 'boolean') return true
  if (!Array.isArray(value)) return false
  let kind: string | undefined
  for (const item of value) {
    if (item === null || item === undefined) continue
    const k = typeof item
    if (k !== 'string' && k !== 'number' && k !== 'boolean') return false
    if (kind === undefined) kind = k
    else if (k !== kind) return false
  }
  return true
}

/**
 * Handler spans recorded by the engine (svc addition to protocol.md §10.1; docs/reference/protocol.md,
 * "Handler spans recorded by the engine"). A worker whose handler left its span untouched sends,
 * instead of the span's OTLP/JSON on `/otel`, only its times: `span_start`/`span_end` on the
 * `invocationresult`, whose `traceparent` already names the span. The engine holds everything
 * else the span is made of — the invocation's `traceparent` (the parent), the `baggage` it sent
 * (the attributes), the payload and the result as JSON text (the payload events), the error — and
 * records `execute <function_id>` here, as the worker's SDK would have written it:
 *
 * - kind INTERNAL, the worker's resource (its announce's `handler_spans.resource`);
 * - attributes: the baggage entries the worker received (`svc.function.id` first, as the engine
 *   sets it), then `error.type` = the error code for a failure;
 * - events: `svc.invocation.input` at the start, for a failure `exception` (`exception.type`,
 *   `exception.message`, `exception.stacktrace`) at the end, `svc.invocation.output` at the end
 *   (`svc.payload.ok` false for a failure), the payloads redacted and capped with the worker's
 *   settings (`handler_spans.payloads`, `handler_spans.payload_max_bytes`: the SDK's
 *   `SVC_DISABLE_TRACE_PAYLOADS`, `SVC_TRACE_PAYLOAD_MAX_BYTES`) by the SDK's rules (`svc-protocol/redact`);
 * - status OK, or ERROR with the error's message.
 *
 * Why: a span the SDK writes as OTLP/JSON costs the worker about 5 µs and the engine about 20 µs
 * to read, pack and store; this one costs the engine the price of its own spans (docs/benchmarks.md,
 * SDK telemetry). A result whose times or `traceparent` are not well-formed, or name another
 * trace than the invocation's, records nothing.
 */
import type { ErrorBody, RawJson } from 'svc-protocol'
import { PAYLOAD_EVENT_BYTES, PAYLOAD_EVENTS_HEAD, RECORD_FIXED_BYTES, valueSize, type SpanEvent, type SpanRecord } from '../adapters/observability/records.ts'
import { redactAndTruncateText, type RedactedPayload } from 'svc-protocol/redact'

/** What a worker's announce says of the handler spans it leaves to the engine (`handler_spans`). */
export interface HandlerSpanSource {
  /** The worker's OpenTelemetry resource attributes (frozen: shared by its spans). */
  resource: Readonly<Record<string, string>>
  /** `service.name` of the resource. */
  serviceName: string
  /** False when the worker records no payload events (`SVC_DISABLE_TRACE_PAYLOADS`). */
  payloads: boolean
  /** Byte cap of a payload event's JSON (`SVC_TRACE_PAYLOAD_MAX_BYTES`); null: uncapped. */
  maxBytes: number | null
}

/** Resource attributes of an announce at most; longer keys or values refuse the field. */
const MAX_RESOURCE_ATTRIBUTES = 32
const MAX_RESOURCE_KEY = 256
const MAX_RESOURCE_VALUE = 4096

/**
 * The announce's `handler_spans` field (`{resource: {string: string}, payloads?: boolean,
 * payload_max_bytes?: integer ≥ 0 | null}`), checked; undefined when absent or malformed (the
 * worker's results then record no span here: the engine ignores their times).
 * @example handlerSpanSource({ resource: { 'service.name': 'orders' } }) // → { serviceName: 'orders', payloads: true, maxBytes: null, … }
 */
export function handlerSpanSource(value: unknown): HandlerSpanSource | undefined {
  if (!isRecord(value) || !isRecord(value.resource)) return undefined
  const resource: Record<string, string> = {}
  let count = 0
  for (const key of Object.keys(value.resource)) {
    const v = value.resource[key]
    if (typeof v !== 'string' || key.length > MAX_RESOURCE_KEY || v.length > MAX_RESOURCE_VALUE || ++count > MAX_RESOURCE_ATTRIBUTES) return undefined
    if (!key.isWellFormed() || !v.isWellFormed()) return undefined
    // An own `__proto__` key stays data.
    Object.defineProperty(resource, key, { value: v, enumerable: true, writable: false, configurable: false })
  }
  const serviceName = resource['service.name']
  if (serviceName === undefined || serviceName === '') return undefined
  const payloads = value.payloads === undefined || value.payloads === true
  if (value.payloads !== undefined && typeof value.payloads !== 'boolean') return undefined
  const max = value.payload_max_bytes
  if (max !== undefined && max !== null && !(typeof max === 'number' && Number.isSafeInteger(max) && max >= 0)) return undefined
  return { resource: Object.freeze(resource), serviceName, payloads, maxBytes: typeof max === 'number' ? max : null }
}

/** The invocation as the worker received it. */
export interface HandledCall {
  /** `function_id` of the `invokefunction` sent. */
  functionId: string
  /** Its `data`, as the JSON text sent. */
  data: string
  /** Its `traceparent`, if any. */
  traceparent: string | undefined
  /** Its `baggage` (W3C header). */
  baggage: string
}

/** The worker's answer: the `invocationresult`'s trace fields and outcome. */
export interface HandledOutcome {
  traceparent?: string
  span_start?: string
  span_end?: string
  result?: RawJson
  error?: ErrorBody
}

/**
 * Whether `s` is `00-<32 hex>-<16 hex>-<2 hex>` (the trace id from 3, the span id from 36, the
 * flags from 53), the hex lower case as svc's SDKs write it or, with `anyCase`, upper case too.
 * Checked without a branch per character (a table's bits and-ed together) rather than by a
 * regular expression, whose match array and captures were a tenth of the engine's cost per
 * handler span (issue 20); about 4× faster than either.
 */
function isTraceparent(s: string, anyCase: boolean): boolean {
  if (s.length !== 55 || s.charCodeAt(0) !== 0x30 || s.charCodeAt(1) !== 0x30 || s.charCodeAt(2) !== 0x2d || s.charCodeAt(35) !== 0x2d || s.charCodeAt(52) !== 0x2d) return false
  let bits = LOWER_HEX | ANY_HEX
  for (let i = 3; i < 35; i++) bits &= HEX[s.charCodeAt(i)]!
  for (let i = 36; i < 52; i++) bits &= HEX[s.charCodeAt(i)]!
  bits &= HEX[s.charCodeAt(53)]! & HEX[s.charCodeAt(54)]!
  return (bits & (anyCase ? ANY_HEX : LOWER_HEX)) !== 0
}

/** {@link HEX} bits: a lower-case hex digit (`0`-`9`, `a`-`f`); a hex digit in either case. */
const LOWER_HEX = 1
const ANY_HEX = 2
/** By UTF-16 unit: its {@link LOWER_HEX} and {@link ANY_HEX} bits (every unit has an entry: no bounds check). */
const HEX = new Uint8Array(0x10000)
for (const c of '0123456789abcdef') HEX[c.charCodeAt(0)] = LOWER_HEX | ANY_HEX
for (const c of 'ABCDEF') HEX[c.charCodeAt(0)] = ANY_HEX

/** Whether `s` from `from` to `to` is all `0`. */
function isZero(s: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (s.charCodeAt(i) !== 0x30) return false
  return true
}

/** Whether the trace ids of two {@link isTraceparent} strings are the same, letters of `other` in either case. */
function sameTrace(own: string, other: string): boolean {
  // Hex letters differ from their upper case in bit 0x20 only; digits and letters never collide with it set.
  for (let i = 3; i < 35; i++) if (own.charCodeAt(i) !== (other.charCodeAt(i) | 0x20)) return false
  return true
}

/** Nanoseconds since the epoch: 1 to 19 digits (they fit 2^63). */
function isNanos(s: string): boolean {
  const n = s.length
  if (n === 0 || n > 19) return false
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x30 || c > 0x39) return false
  }
  return true
}

/** The value of the last {@link nanosJson}: `Number(text)`. */
let nanosValue = 0

/**
 * The double `Number(text)` gives for `text`, decimal nanoseconds since the epoch, left in
 * {@link nanosValue}, and that double's JSON, character for character what `JSON.stringify` writes
 * (the span's `*_time_unix_nano` members); undefined when `text` is not 1 to 19 digits
 * ({@link isNanos}). Exported for its test.
 *
 * Why not `JSON.stringify(Number(text))`: for a time of these years (2^60 to 2^61 ns: 2006 to 2043)
 * the 19 digits round to a multiple of 256, whose shortest digits V8 finds with its general
 * double-to-text search, ~0.18 µs per time and a third of the span's text (issue 20). Here both
 * come from whole numbers: `text` as `hi` (its first 10 digits) × 10^9 + `lo` (its last 9), where
 * 10^9 is a multiple of 2^9, so the rounding to a multiple of 256 (ties to an even multiple of 256, as
 * `Number` rounds) depends on `lo` alone, and `hi` × 10^9 + the rounded `lo` is exact in a double.
 * The text is then `hi`'s digits and, for the rounded `lo`, the number with the fewest significant
 * digits that reads back as the same double (at most 128 away; exactly 128 only from an even multiple
 * of 256), the nearest of them when several are (ECMAScript's Number::toString): the one multiple of
 * 1,000 within reach when there is one (a step of 256 holds at most one, and any multiple of a higher
 * power of ten is it), else the nearest multiple of 100 (always within 50). Other times, and the few
 * whose digits would carry into `hi`'s, take the general path.
 */
export function nanosJson(text: string): string | undefined {
  if (text.length === 19) {
    // The digits are checked as they are read (one pass instead of isNanos's and this one's).
    let hi = 0
    for (let i = 0; i < 10; i++) {
      const digit = text.charCodeAt(i) - 0x30
      if (digit >>> 0 > 9) return undefined
      hi = hi * 10 + digit
    }
    let lo = 0
    for (let i = 10; i < 19; i++) {
      const digit = text.charCodeAt(i) - 0x30
      if (digit >>> 0 > 9) return undefined
      lo = lo * 10 + digit
    }
    // 2^60 < hi × 10^9 and (hi + 1) × 10^9 < 2^61: every value between is 256 from its neighbours.
    if (hi >= 1152921505 && hi <= 2305843008) {
      const rest = lo & 255
      let rounded = lo - rest
      // Half a step rounds to the even multiple of 256 (bit 8 clear: hi × 10^9 adds an even multiple).
      if (rest > 128 || (rest === 128 && (rounded & 256) !== 0)) rounded += 256
      // The multiple of 1,000 that reads back as this double, if one does (a step of 256 holds at
      // most one); else the nearest multiple of 100 (always within 50).
      let near = Math.round(rounded / 1000) * 1000
      const off = Math.abs(near - rounded)
      if (off > 128 || (off === 128 && (rounded & 256) !== 0)) near = Math.round(rounded / 100) * 100
      // 10^9: the digits carry into hi's.
      if (near < 1e9) {
        nanosValue = hi * 1e9 + rounded
        const millions = Math.floor(near / 1e6)
        const thousands = Math.floor(near / 1e3) - millions * 1000
        return text.slice(0, 10) + THREE_DIGITS[millions]! + THREE_DIGITS[thousands]! + THREE_DIGITS[near - millions * 1e6 - thousands * 1000]!
      }
    }
  } else if (!isNanos(text)) return undefined
  nanosValue = Number(text)
  return JSON.stringify(nanosValue)
}

/**
 * `JSON.stringify(nanos / 1e6)`, a span's `duration_ms`, for a whole number of nanoseconds (the
 * difference of two times): below 10^15 the quotient's shortest digits are the exact decimal
 * (at most 15 significant digits, which a double keeps apart from every other such decimal), so
 * they are written from `nanos`' digits, ~4× faster than V8's search (issue 20). Exported for its test.
 */
export function durationJson(nanos: number): string {
  if (!(nanos >= 0 && nanos < 1e15 && Number.isInteger(nanos))) return JSON.stringify(nanos / 1e6)
  const whole = Math.floor(nanos / 1e6)
  const fraction = nanos - whole * 1e6
  const ms = whole < 1000 ? NUMBERS[whole]! : JSON.stringify(whole)
  if (fraction === 0) return ms
  const high = Math.floor(fraction / 1000)
  const low = fraction - high * 1000
  return ms + (low === 0 ? '.' + LEADING_DIGITS[high]! : '.' + THREE_DIGITS[high]! + LEADING_DIGITS[low]!)
}

/** `000` to `999`. */
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'))
/** `0` to `999`. */
const NUMBERS = Array.from({ length: 1000 }, (_, i) => String(i))
/** {@link THREE_DIGITS} without their trailing zeros (`100` → `1`, `120` → `12`; `000` is never asked for). */
const LEADING_DIGITS = THREE_DIGITS.map((d) => d.replace(/0+$/, ''))

/** What a handler span is made of, checked ({@link handlerSpan}): {@link spanRecord} and {@link spanText} write it. */
export interface SpanParts {
  traceId: string
  spanId: string
  parentSpanId: string | null
  functionId: string
  serviceName: string
  resource: Readonly<Record<string, string>>
  start: number
  end: number
  /** {@link start} and {@link end} as their JSON ({@link nanosJson}). */
  startJson: string
  endJson: string
  baggage: BaggageAttributes
  error: ErrorBody | undefined
  /** The exception event's attributes (a failure). */
  exception: Record<string, string> | undefined
  input: RedactedPayload | undefined
  output: RedactedPayload | undefined
}

/**
 * The span a worker asked the engine to record for `call` (see the module), or undefined when
 * `outcome` does not ask (no `span_start`/`span_end`) or asks with malformed or foreign data.
 * `fallbackService` names the service when `source` is undefined (a worker that sent times without
 * announcing `handler_spans`). Written by {@link spanText} or {@link spanRecord}.
 */
export function handlerSpan(call: HandledCall, outcome: HandledOutcome, source: HandlerSpanSource | undefined, fallbackService: string): SpanParts | undefined {
  const startText = outcome.span_start
  const endText = outcome.span_end
  if (startText === undefined || endText === undefined || outcome.traceparent === undefined) return undefined
  const startJson = nanosJson(startText)
  const start = nanosValue
  const endJson = nanosJson(endText)
  const end = nanosValue
  if (startJson === undefined || endJson === undefined) return undefined
  const own = outcome.traceparent
  // Sampled: bit 0 of the flags, that is of their last digit (`0`-`9` keep their parity, `a` is 0x61 and 10).
  const last = own.charCodeAt(54)
  if (!isTraceparent(own, false) || isZero(own, 3, 35) || isZero(own, 36, 52) || ((last ^ (last > 0x39 ? 1 : 0)) & 1) === 0) return undefined
  let parentSpanId: string | null = null
  const parent = call.traceparent
  // The invocation's traceparent in any case (as the worker's SDK reads it).
  if (parent !== undefined && isTraceparent(parent, true)) {
    // The span belongs to the invocation's trace, under the span that made the call.
    if (!sameTrace(own, parent)) return undefined
    parentSpanId = ownString(parent.slice(36, 52).toLowerCase())
  }
  const traceId = ownString(own.slice(3, 35))
  if (end < start) return undefined
  const settings = source ?? DEFAULT_SOURCE
  const error = outcome.error
  let exception: Record<string, string> | undefined
  if (error !== undefined) {
    exception = {}
    if (error.code) exception['exception.type'] = error.code
    if (error.message) exception['exception.message'] = error.message
    exception['exception.stacktrace'] = typeof error.stacktrace === 'string' && error.stacktrace !== '' ? error.stacktrace : `${error.code}: ${error.message}`
  }
  return {
    traceId,
    spanId: ownString(own.slice(36, 52)),
    parentSpanId,
    functionId: call.functionId,
    serviceName: source?.serviceName ?? fallbackService,
    resource: source?.resource ?? { 'service.name': fallbackService },
    start,
    end,
    startJson,
    endJson,
    baggage: cachedBaggage(call.baggage, call.functionId),
    error,
    exception,
    input: settings.payloads ? redactAndTruncateText(call.data, settings.maxBytes) : undefined,
    output: settings.payloads ? redactAndTruncateText(error !== undefined ? JSON.stringify(error) : (outcome.result?.text ?? 'null'), settings.maxBytes) : undefined,
  }
}

/** The span as a record (the size limiter and an OTLP export read records). */
export function spanRecord(p: SpanParts): SpanRecord {
  const attributes = { ...p.baggage.attributes }
  const error = p.error
  const events: SpanEvent[] = []
  if (p.input !== undefined) events.push(payloadEvent('svc.invocation.input', p.start, p.input, true))
  if (error !== undefined) {
    attributes['error.type'] = error.code
    events.push({ name: 'exception', timestamp_unix_nano: p.end, attributes: p.exception! })
  }
  if (p.output !== undefined) events.push(payloadEvent('svc.invocation.output', p.end, p.output, error === undefined))
  return recordWith(p, attributes, events, [])
}

/** The record's members from `p`, with these attributes, events and links (a head: the cached attributes, none). */
function recordWith(p: SpanParts, attributes: Record<string, unknown>, events: SpanEvent[], links: SpanRecord['links']): SpanRecord {
  const record: SpanRecord = {
    trace_id: p.traceId,
    span_id: p.spanId,
    parent_span_id: p.parentSpanId,
    name: nameOf(p.functionId).name,
    kind: 'internal',
    service_name: p.serviceName,
    start_time_unix_nano: p.start,
    end_time_unix_nano: p.end,
    duration_ms: (p.end - p.start) / 1e6,
    status: p.error === undefined ? 'ok' : 'error',
    attributes,
    resource: p.resource,
    events,
    links,
  }
  if (p.error !== undefined && p.error.message) record.status_message = p.error.message
  return record
}

/** {@link handlerSpan} then {@link spanRecord}: the record, or undefined. */
export function handlerSpanRecord(call: HandledCall, outcome: HandledOutcome, source: HandlerSpanSource | undefined, fallbackService: string): SpanRecord | undefined {
  const p = handlerSpan(call, outcome, source, fallbackService)
  return p === undefined ? undefined : spanRecord(p)
}

/**
 * A handler span written as the text the observability store keeps ({@link spanText}):
 * what the store's window needs of it beside the text.
 */
export interface HandlerSpanText {
  /**
   * The span's fields the window filters on (ids, name, service, status, times, resource) and
   * its attributes as far as `svc.function.id`; no events (they are in {@link body}).
   */
  head: SpanRecord
  /**
   * The span's JSON without its resource: what `JSON.stringify` of {@link handlerSpanRecord}'s
   * record without it gives, except that its two payload events are the last member,
   * `payload_events` (`withPayloadEvents` of records.ts turns the parsed text back into the record).
   */
  body: string
  /** Estimated JSON bytes of the span (the text, its fixed members and its resource). */
  bytes: number
  /** The longest string value in it, UTF-16 units (the size limits' check). */
  longest: number
  /** The most attributes it holds in one place (the span's or an event's). */
  attributeCount: number
  /** Events it holds. */
  eventCount: number
}

/**
 * The span written straight as the JSON text the store keeps, without the record's objects or a
 * `JSON.stringify` of them (issue 20: the engine's main thread is what bounds traced calls): the
 * text of {@link spanRecord}'s record, character for character (a property test holds them
 * together), but for its payload events, which are the member `payload_events` at the end
 * (`[input JSON, truncated, output JSON, truncated]`, records.ts `PAYLOAD_EVENTS`): their names,
 * times and keys were about a third of the text the window keeps and the `builtin` file stores
 * per span (issue 20, lead 3 of session 36).
 */
export function spanText(p: SpanParts): HandlerSpanText {
  const error = p.error
  const name = nameOf(p.functionId)
  const startText = p.startJson
  const endText = p.endJson
  // Few pieces: the members no span differs in are joined once (per function and service, per baggage).
  let body =
    '{"trace_id":"' + p.traceId + '","span_id":"' + p.spanId + (p.parentSpanId === null ? '","parent_span_id":null' : '","parent_span_id":"' + p.parentSpanId + '"') +
    namedText(name, p.serviceName) + startText + ',"end_time_unix_nano":' + endText + ',"duration_ms":' + durationJson(p.end - p.start)
  const bag = p.baggage
  let longest = Math.max(name.name.length, p.serviceName.length, bag.longest)
  let events = 0
  if (error === undefined) body += bag.okText
  else {
    const code = JSON.stringify(error.code)
    body += ',"status":"error","attributes":' + (bag.json === '{}' ? '{' : bag.json.slice(0, -1) + ',') + '"error.type":' + code + '},"events":['
    longest = Math.max(longest, error.code.length)
  }
  // The payload events are the member `payload_events` at the end (records.ts: withPayloadEvents).
  if (p.input !== undefined) {
    longest = Math.max(longest, p.input.json.length)
    events++
  }
  if (p.exception !== undefined) {
    body += '{"name":"exception","timestamp_unix_nano":' + endText + ',"attributes":' + JSON.stringify(p.exception) + '}'
    for (const key in p.exception) longest = Math.max(longest, p.exception[key]!.length)
    events++
  }
  if (p.output !== undefined) {
    longest = Math.max(longest, p.output.json.length)
    events++
  }
  body += '],"links":[]'
  if (error !== undefined && error.message) body += ',"status_message":' + JSON.stringify(error.message)
  if (p.input !== undefined || p.output !== undefined) body += PAYLOAD_EVENTS_HEAD + payloadText(p.input) + ',' + payloadText(p.output) + ']}'
  else body += '}'
  const head = recordWith(p, bag.attributes as Record<string, unknown>, NO_EVENTS, NO_EVENTS as never[])
  const resource = resourceFacts(p.resource)
  return {
    head,
    body,
    bytes: RECORD_FIXED_BYTES + body.length + resource.size + (p.input === undefined ? 0 : PAYLOAD_EVENT_BYTES) + (p.output === undefined ? 0 : PAYLOAD_EVENT_BYTES),
    longest: Math.max(longest, resource.longest),
    attributeCount: Math.max(bag.count + (error === undefined ? 0 : 1), 3, resource.count),
    eventCount: events,
  }
}

const NO_EVENTS = Object.freeze([]) as unknown as SpanEvent[]

/** The span name of the function named last, and its JSON. */
let lastName = { name: 'execute ', json: '"execute "', functionId: '' }
function nameOf(functionId: string): { name: string; json: string } {
  if (lastName.functionId !== functionId) {
    const name = 'execute ' + functionId
    lastName = { name, json: JSON.stringify(name), functionId }
  }
  return lastName
}

/** The members from `,"name":` to `"start_time_unix_nano":` of the function and service named last. */
let lastNamed = { name: '', service: '', text: '' }
function namedText(name: { name: string; json: string }, service: string): string {
  if (lastNamed.name !== name.name || lastNamed.service !== service) {
    lastNamed = { name: name.name, service, text: ',"name":' + name.json + ',"kind":"internal","service_name":' + JSON.stringify(service) + ',"start_time_unix_nano":' }
  }
  return lastNamed.text
}

/** Size, longest value and count of a resource's attributes, measured once per resource object. */
const resourceFactsOf = new WeakMap<object, { size: number; longest: number; count: number }>()
function resourceFacts(resource: Readonly<Record<string, string>>): { size: number; longest: number; count: number } {
  let facts = resourceFactsOf.get(resource)
  if (facts === undefined) {
    let longest = 0
    let count = 0
    for (const key in resource) {
      longest = Math.max(longest, key.length, resource[key]!.length)
      count++
    }
    facts = { size: valueSize(resource), longest, count }
    resourceFactsOf.set(resource, facts)
  }
  return facts
}

/** A payload's two values in `payload_events` (records.ts PAYLOAD_EVENTS): its JSON as a string and whether it was cut, or `null,false`. */
function payloadText(payload: RedactedPayload | undefined): string {
  return payload === undefined ? 'null,false' : JSON.stringify(payload.json) + (payload.truncated ? ',true' : ',false')
}

/**
 * `id` as a string of its own. A regular expression's capture of a frame's `traceparent` is a
 * slice of the frame's whole text in V8 (a substring of 13 characters or more shares its parent),
 * and the window keeps a span's ids for as long as it keeps the span: sliced, they would keep each
 * result's (and each invocation's) frame text alive with them, payload and all, outside the
 * window's byte bound. Joined to one character and cut again, the id is copied from a flattened
 * string of its own length plus one.
 */
function ownString(id: string): string {
  return (' ' + id).slice(1)
}

const DEFAULT_SOURCE: HandlerSpanSource = { resource: {}, serviceName: '', payloads: true, maxBytes: null }

function payloadEvent(name: string, time: number, payload: RedactedPayload, ok: boolean): SpanEvent {
  return { name, timestamp_unix_nano: time, attributes: { 'svc.payload.json': payload.json, 'svc.payload.truncated': payload.truncated, 'svc.payload.ok': ok } }
}

// ---- baggage --------------------------------------------------------------------------------

/** W3C baggage limits (W3C Baggage §3.3.2): entries and bytes per header. */
const MAX_BAGGAGE_ENTRIES = 180
const MAX_BAGGAGE_BYTES = 8192

/** A baggage header's span attributes, written once per header and function. */
interface BaggageAttributes {
  /** The attributes (frozen; a record copies them). */
  attributes: Readonly<Record<string, unknown>>
  /** Their JSON (`JSON.stringify` of {@link attributes}). */
  json: string
  /** A span's members from `,"status":` to `"events":[` when it succeeded: status ok, these attributes. */
  okText: string
  count: number
  /** The longest key or value, UTF-16 units. */
  longest: number
}

/** Parsed headers by header and function id: calls to one function carry the same one. Bounded against floods. */
const baggageCache = new Map<string, BaggageAttributes>()
let lastBaggage: { header: string; functionId: string; value: BaggageAttributes } | undefined

/**
 * The member that names one queue message (builtins.md §7.6: every delivery of a queue carries its
 * message id): a header holding it is not seen again with another message, so neither it nor that
 * member is cached (issue 20: caching them cost a cache entry per delivery, kept long enough to
 * reach the old generation, and missed every time).
 */
const MESSAGE_MEMBER = 'svc.queue.message_id='

function cachedBaggage(header: string, functionId: string): BaggageAttributes {
  if (lastBaggage !== undefined && lastBaggage.header === header && lastBaggage.functionId === functionId) return lastBaggage.value
  const once = header.includes(MESSAGE_MEMBER)
  const key = once ? '' : functionId + '\u0000' + header
  let value = once ? undefined : baggageCache.get(key)
  if (value === undefined) {
    const attributes = baggageAttributes(header, functionId)
    let longest = 0
    let count = 0
    for (const k in attributes) {
      longest = Math.max(longest, k.length, String(attributes[k]).length)
      count++
    }
    const json = JSON.stringify(attributes)
    value = { attributes: Object.freeze(attributes), json, okText: ',"status":"ok","attributes":' + json + ',"events":[', count, longest }
    if (once) return value
    if (baggageCache.size >= 256) baggageCache.clear()
    baggageCache.set(key, value)
  }
  lastBaggage = { header, functionId, value }
  return value
}

/**
 * Decoded members by their text (`key=value;props` → `[key, value]`, null when malformed).
 * Headers that differ in one member share the others' decoding: a queue delivery's baggage
 * (builtins.md §7.6) names its message id, so no two deliveries send the same header, and a cache
 * by whole header missed on every one (issue 20: the parse was a third of a delivery's handler
 * span). Bounded against floods; the keys and values are strings of their own (a member split
 * from a header that is a slice of a frame would keep the frame alive, see {@link ownString}).
 */
const memberCache = new Map<string, readonly [string, string] | null>()

/**
 * The span's start attributes: the entries of the `baggage` header the worker received (as svc-sdk
 * copies them: key and percent-decoded value, properties dropped, malformed entries skipped), with
 * `svc.function.id` = `functionId` first when the header has no such entry. A new object per call.
 */
export function baggageAttributes(header: string, functionId: string): Record<string, unknown> {
  const entries = parseBaggage(header)
  const attributes: Record<string, unknown> = {}
  let hasId = false
  for (const [key] of entries) if (key === 'svc.function.id') hasId = true
  if (!hasId) attributes['svc.function.id'] = functionId
  for (const [key, value] of entries) {
    if (key === '__proto__') Object.defineProperty(attributes, key, { value, enumerable: true, writable: true, configurable: true })
    else attributes[key] = value
  }
  return attributes
}

function parseBaggage(header: string): Array<readonly [string, string]> {
  const out: Array<readonly [string, string]> = []
  if (header.length > MAX_BAGGAGE_BYTES) return out
  for (const member of header.split(',')) {
    if (out.length >= MAX_BAGGAGE_ENTRIES) break
    let pair = memberCache.get(member)
    if (pair === undefined) {
      pair = parseMember(member)
      if (!member.includes(MESSAGE_MEMBER)) {
        if (memberCache.size >= 256) memberCache.clear()
        memberCache.set(ownString(member), pair)
      }
    }
    if (pair === null) continue
    const key = pair[0]
    let at = -1
    for (let i = 0; i < out.length; i++) if (out[i]![0] === key) at = i
    if (at >= 0) out[at] = pair
    else out.push(pair)
  }
  return out
}

/** One list member's key and percent-decoded value (properties dropped); null when malformed. */
function parseMember(member: string): readonly [string, string] | null {
  const pair = member.split(';', 1)[0]!
  const eq = pair.indexOf('=')
  if (eq <= 0) return null
  try {
    const key = decodeURIComponent(pair.slice(0, eq).trim())
    const value = decodeURIComponent(pair.slice(eq + 1).trim())
    if (key === '' || !key.isWellFormed() || !value.isWellFormed()) return null
    return [ownString(key), ownString(value)]
  } catch {
    // malformed percent-encoding: the entry is skipped, as the SDK's propagator skips it
    return null
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

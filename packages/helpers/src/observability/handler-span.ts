/**
 * Handler spans without the SDK's span machinery (sdk.md §12.3, protocol.md §10.1): each inbound
 * invocation's `execute <function_id>` span (kind INTERNAL) is a {@link HandlerSpan}, a small
 * implementation of `@opentelemetry/api`'s `Span` that writes its own OTLP/JSON when it ends and
 * hands it to the {@link SpanBatch}. It is set as the active span of the handler's context like any
 * span, so spans the handler starts with any tracer nest under it, and `trace.getActiveSpan()`,
 * `currentTraceId()`, `recordSpanEvent()`… work on it.
 *
 * Why not the SDK's `SpanImpl` (docs/decisions.md, "Handler spans are not SDK spans"): one
 * handler span there cost about 15 µs of CPU (sampler, processors, attribute copies, a `Baggage`
 * parse, an OTLP object tree and its JSON), about as much as routing the call itself. Here the parent `traceparent` is parsed with
 * one regular expression, ids come from a pooled random buffer, the inbound `baggage` header is
 * parsed once per distinct header (cached; a header of plain members without the propagator), payload events are kept as JSON text, and nothing but
 * one string survives the span's end. The handler's context is a small {@link ActiveSpanContext}
 * rather than the API's `BaseContext`; svc-sdk's payload events share the clock reads of the
 * span's start (input) and end (output), so a span costs two clock reads and two time strings.
 *
 * Semantics kept from the SDK defaults: parent-based sampling that always samples a root (an
 * unsampled parent gives a non-recording span that still carries a new span id and propagates the
 * trace), baggage entries copied onto the span as attributes (after the initial attributes, before
 * the handler's own), the default span limits (128 attributes, events, links, attributes per event
 * and per link; extra events replace the oldest), and status rules (UNSET ignored, OK final).
 */
import {
  type Attributes,
  type AttributeValue,
  type Baggage,
  type Context,
  createContextKey,
  defaultTextMapGetter,
  defaultTextMapSetter,
  type Exception,
  type HrTime,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  trace,
} from '@opentelemetry/api'
import type { W3CBaggagePropagator } from '@opentelemetry/core'
import { randomFillSync } from 'node:crypto'
import { isAttributeValue, keyValueJson, scopeJson, spanFlags, statusJson } from './otlp-json.ts'
import type { SpanBatch } from './span-batch.ts'
import { otelCore } from './lazy-sdk.ts'
import { TRACER_NAME } from './trace.ts'

/** The SDK's default span limits (OpenTelemetry specification, "Span Limits"). */
const LIMIT = 128

/** OTLP/JSON scope of every handler span: svc's tracer ({@link TRACER_NAME}, no version). */
const SCOPE = scopeJson(TRACER_NAME)

// ---- ids ------------------------------------------------------------------------------------

/** Random bytes for ids, refilled 4 KiB at a time (one `randomFillSync` per 341 spans). */
const pool = Buffer.allocUnsafe(4096)
let poolOffset = pool.length

function randomHex(bytes: number): string {
  for (;;) {
    if (poolOffset + bytes > pool.length) {
      randomFillSync(pool)
      poolOffset = 0
    }
    const hex = pool.toString('hex', poolOffset, poolOffset + bytes)
    poolOffset += bytes
    // An all-zero id is invalid (W3C trace context); 2^-64 at worst, so one more draw is enough.
    if (hex !== ZERO_IDS[bytes]) return hex
  }
}
const ZERO_IDS: Record<number, string> = { 8: '0'.repeat(16), 16: '0'.repeat(32) }

/** A random span id: 16 lower-case hex digits, never all zero. */
export function newSpanId(): string {
  return randomHex(8)
}

/** A random trace id: 32 lower-case hex digits, never all zero. */
export function newTraceId(): string {
  return randomHex(16)
}

/** Lower-case hex digits as Latin-1 codes. */
const HEX_CODES = Buffer.from('0123456789abcdef', 'latin1')
/** A `traceparent` being written: `00-<trace id>-<span id>-01` (55 Latin-1 bytes). */
const traceparentBytes = Buffer.from('00-' + '0'.repeat(32) + '-' + '0'.repeat(16) + '-01', 'latin1')

/** Writes `count` random bytes of the pool as hex digits at `at`; false when they were all zero. */
function writeRandomHex(at: number, count: number): boolean {
  let nonZero = 0
  for (let i = 0; i < count; i++) {
    const b = pool[poolOffset + i]!
    nonZero |= b
    traceparentBytes[at + 2 * i] = HEX_CODES[b >> 4]!
    traceparentBytes[at + 2 * i + 1] = HEX_CODES[b & 15]!
  }
  poolOffset += count
  return nonZero !== 0
}

/**
 * The sampled `traceparent` of a new span (W3C trace-context §3.2): under `traceId` (32 lower-case
 * hex digits, a parsed parent's), or of a new trace; a random span id; neither id all zero. One
 * flat string: the span's ids are slices of it (`[3, 35)` and `[36, 52)`), which spares the hex
 * string, the two slices and the four concatenations a span's ids and header otherwise cost.
 */
function newTraceparent(traceId: string | undefined): string {
  for (;;) {
    if (poolOffset + 24 > pool.length) {
      randomFillSync(pool)
      poolOffset = 0
    }
    const traceOk = traceId === undefined ? writeRandomHex(3, 16) : traceparentBytes.write(traceId, 3, 32, 'latin1') === 32
    if (writeRandomHex(36, 8) && traceOk) return traceparentBytes.toString('latin1', 0, 55)
  }
}

/** An `IdGenerator` for the SDK's tracer provider that draws from the same pool. */
export const pooledIdGenerator = { generateTraceId: newTraceId, generateSpanId: newSpanId }

// ---- time -----------------------------------------------------------------------------------

// Times are ms since ORIGIN_MS (a whole millisecond), so a double keeps sub-microsecond precision.
const ORIGIN_MS = Math.floor(performance.timeOrigin)
const ORIGIN_FRACTION = performance.timeOrigin - ORIGIN_MS

function now(): number {
  return performance.now() + ORIGIN_FRACTION
}

/** The last whole millisecond written and its decimal digits: most timestamps of a batch share it. */
let lastMs = -1
let lastMsDigits = ''

/**
 * `000` to `999`: the sub-millisecond digits are written from these rather than by `String(ns)`,
 * whose result V8 keeps in its number-to-string cache: two strings per handler span (every span's
 * differ, so the cache never hits) outlived the next scavenge and were most of what a worker with
 * telemetry on promoted per invocation (issue 20).
 */
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'))

/** Nanoseconds since the Unix epoch as a decimal string, from ms since ORIGIN_MS. */
function nanos(t: number): string {
  const whole = Math.floor(t)
  let ns = Math.round((t - whole) * 1e6)
  let ms = ORIGIN_MS + whole
  if (ns >= 1e6) {
    ms += 1
    ns -= 1e6
  }
  if (ms !== lastMs) {
    lastMs = ms
    lastMsDigits = String(ms)
  }
  // A time that is not a number (an invalid Date) is written as before.
  if (!(ns >= 0)) return lastMsDigits + String(ns).padStart(6, '0')
  const thousands = Math.floor(ns / 1000)
  return lastMsDigits + THREE_DIGITS[thousands]! + THREE_DIGITS[ns - thousands * 1000]!
}

function isHrTime(value: unknown): value is HrTime {
  return Array.isArray(value) && value.length === 2 && typeof value[0] === 'number' && typeof value[1] === 'number'
}

function isTimeInput(value: unknown): value is TimeInput {
  return typeof value === 'number' || value instanceof Date || isHrTime(value)
}

/** A `TimeInput` as ms since ORIGIN_MS; numbers not above `performance.now()` count from the time origin, as in the SDK. */
function timeOf(input: TimeInput | undefined): number {
  if (input === undefined) return now()
  if (typeof input === 'number') return input <= performance.now() ? input + ORIGIN_FRACTION : input - ORIGIN_MS
  if (input instanceof Date) return input.getTime() - ORIGIN_MS
  return input[0] * 1000 - ORIGIN_MS + input[1] / 1e6
}

// ---- inbound trace context ------------------------------------------------------------------

/** W3C `traceparent` (trace-context §3.2): version (not ff), trace id, parent id, flags; version 00 has nothing after. */
const TRACEPARENT = /^[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-[^]*)?[ \t]*$/

/** The remote parent of a `traceparent` header, or undefined when absent or invalid. */
export function parseTraceparent(header: string | undefined): SpanContext | undefined {
  if (header === undefined) return undefined
  const m = TRACEPARENT.exec(header)
  if (m === null) return undefined
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string | undefined]
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  if (traceId === ZERO_IDS[16] || spanId === ZERO_IDS[8]) return undefined
  return { traceId, spanId, traceFlags: parseInt(flags, 16), isRemote: true }
}

/** What one distinct inbound `baggage` header gives: parsed once, kept in {@link baggageCache}. */
interface ParsedBaggage {
  baggage: Baggage | undefined
  /** The header as the W3C propagator writes it (undefined for no entries), for outgoing calls. */
  header: string | undefined
  /** Entries as OTLP/JSON `KeyValue`s, in header order, with their keys. */
  attributes: Array<[string, string]>
  /** The root context with this baggage: every handler with the header starts from it (contexts are immutable). */
  ctx: Context
  /** The start attributes of the spans last started with this header ({@link startAttributes}). */
  start?: StartAttributes
}

/**
 * The attributes a handler span starts with, written once per baggage header and initial
 * attribute: the initial one unless a baggage entry has its key, then the baggage entries.
 */
interface StartAttributes {
  initialKey: string | undefined
  initialJson: string
  /** True when the initial attribute is written (no baggage entry has its key). */
  hasInitial: boolean
  /** Their OTLP/JSON `KeyValue`s, comma-separated, at most {@link LIMIT}. */
  text: string
  /** How many there are (may exceed {@link LIMIT}). */
  count: number
}

/** The start attributes of the spans last started without baggage. */
let startWithoutBaggage: StartAttributes | undefined

function startAttributes(baggage: ParsedBaggage | undefined, initialKey: string | undefined, initialJson: string): StartAttributes {
  const known = baggage === undefined ? startWithoutBaggage : baggage.start
  if (known !== undefined && known.initialKey === initialKey && known.initialJson === initialJson) return known
  const bag = baggage === undefined ? [] : baggage.attributes
  let hasInitial = initialKey !== undefined
  for (let i = 0; i < bag.length && hasInitial; i++) if (bag[i]![0] === initialKey) hasInitial = false
  let text = hasInitial ? initialJson : ''
  let n = hasInitial ? 1 : 0
  for (let i = 0; i < bag.length && n < LIMIT; i++) text += n++ === 0 ? bag[i]![1] : ',' + bag[i]![1]
  const start: StartAttributes = { initialKey, initialJson, hasInitial, text, count: bag.length + (hasInitial ? 1 : 0) }
  if (baggage === undefined) startWithoutBaggage = start
  else baggage.start = start
  return start
}

// Made for the first baggage header: @opentelemetry/core loads then, not at import (issue 20).
let baggageTextPropagator: W3CBaggagePropagator | undefined
const baggagePropagator = (): W3CBaggagePropagator => (baggageTextPropagator ??= new (otelCore().W3CBaggagePropagator)())
/** Inbound headers are few (the engine sets `svc.function.id` per target); bounded against floods. */
const baggageCache = new Map<string, ParsedBaggage>()
/** The normalized header of each cached `Baggage` object, so outgoing calls need not re-encode it. */
const baggageHeaders = new WeakMap<Baggage, string>()

/** The header parsed last: routed calls to one function carry the same one (checked before the cache, which hashes). */
let lastBaggage: { header: string; parsed: ParsedBaggage } | undefined

function parseBaggage(header: string): ParsedBaggage {
  if (lastBaggage !== undefined && lastBaggage.header === header) return lastBaggage.parsed
  let parsed = baggageCache.get(header)
  if (parsed !== undefined) {
    lastBaggage = { header, parsed }
    return parsed
  }
  newMembers = false
  parsed = parsePlainBaggage(header) ?? parseBaggageWithPropagator(header)
  lastBaggage = { header, parsed }
  // A plain header with a member not seen before is most likely one of a kind (a queue delivery's
  // svc.queue.message_id): not cached, so it neither churns the cache nor outlives its handler.
  // A header that does recur is cached the next time, its members known by then.
  if (newMembers) return parsed
  if (baggageCache.size >= 256) baggageCache.clear()
  baggageCache.set(header, parsed)
  return parsed
}

/** Any header: what the W3C propagator extracts (well-formed entries only) and writes back. */
function parseBaggageWithPropagator(header: string): ParsedBaggage {
  const baggage = wellFormedEntries(propagation.getBaggage(baggagePropagator().extract(ROOT_CONTEXT, { baggage: header }, defaultTextMapGetter)))
  const attributes: Array<[string, string]> = []
  let normalized: string | undefined
  if (baggage !== undefined) {
    for (const [key, entry] of baggage.getAllEntries()) attributes.push([key, keyValueJson(key, entry.value)])
    const carrier: Record<string, string> = {}
    baggagePropagator().inject(propagation.setBaggage(ROOT_CONTEXT, baggage), carrier, defaultTextMapSetter)
    normalized = carrier['baggage']
    if (normalized !== undefined) baggageHeaders.set(baggage, normalized)
  }
  return { baggage, header: normalized, attributes, ctx: baggage === undefined ? ROOT_CONTEXT : propagation.setBaggage(ROOT_CONTEXT, baggage) }
}

/**
 * One plain list member, `key=value` with optional spaces or tabs around either: printable ASCII
 * without `,` or `;` (no properties), and no `=` in the key; percent-encoded (the engine's
 * `svc.function.id=a%3A%3Ab`).
 */
const PLAIN_MEMBER = /^[ \t]*([!-+\--:<>-~]+)[ \t]*=[ \t]*([!-+\--:<-~]+)[ \t]*$/

/** `decodeURIComponent` of a plain member's key or value, or undefined where the propagator would drop the member or the entry would not be well-formed text. */
function percentDecoded(text: string): string | undefined {
  if (!text.includes('%')) return text
  try {
    const decoded = decodeURIComponent(text)
    return decoded.isWellFormed() ? decoded : undefined
  } catch {
    return undefined
  }
}

/** A plain member as the propagator reads and writes it (key, value, `encodeURIComponent` pair) and its OTLP/JSON `KeyValue`. */
interface PlainMember {
  key: string
  value: string
  pair: string
  json: string
}

/**
 * Plain members seen lately: a worker's inbound headers share most of theirs (`svc.function.id`,
 * `svc.queue.name`…) and differ in one or two (`svc.queue.message_id`), so a header seen for the
 * first time costs a lookup per member and a parse of the new ones. Bounded against floods.
 */
const plainMembers = new Map<string, PlainMember>()
/** Set when {@link plainMember} parsed a member it had not cached. */
let newMembers = false

function plainMember(text: string): PlainMember | undefined {
  let member = plainMembers.get(text)
  if (member !== undefined) return member
  // The propagator skips a member over 4096 characters.
  const m = text.length > 4096 ? null : PLAIN_MEMBER.exec(text)
  if (m === null) return undefined
  const key = percentDecoded(m[1]!)
  const value = percentDecoded(m[2]!)
  if (key === undefined || value === undefined) return undefined
  member = { key, value, pair: `${encodeURIComponent(key)}=${encodeURIComponent(value)}`, json: keyValueJson(key, value) }
  if (plainMembers.size >= 1024) plainMembers.clear()
  plainMembers.set(text, member)
  newMembers = true
  return member
}

/**
 * A header whose every member is plain ({@link PLAIN_MEMBER}), within the propagator's limits
 * (180 members, 8192 characters): parsed here to what {@link parseBaggageWithPropagator} gives
 * (the same entries in the same order, a later duplicate key winning, and the same header written
 * back) without the propagator's extract, inject and their intermediate objects. Undefined for any
 * other header. Each queue delivery carries a header of its own (`svc.queue.message_id`, issue 20).
 */
function parsePlainBaggage(header: string): ParsedBaggage | undefined {
  if (header.length > 8192) return undefined
  // Keyed as the propagator's record is, so the entries keep its order (integer-like keys first).
  const byKey: Record<string, PlainMember> = Object.create(null)
  let count = 0
  for (let start = 0; ; ) {
    const end = header.indexOf(',', start)
    const member = plainMember(end === -1 ? header.substring(start) : header.substring(start, end))
    if (member === undefined || ++count > 180) return undefined
    byKey[member.key] = member
    if (end === -1) break
    start = end + 1
  }
  const record: Record<string, { value: string }> = {}
  for (const key in byKey) record[key] = { value: byKey[key]!.value }
  const baggage = propagation.createBaggage(record)
  const attributes: Array<[string, string]> = []
  let normalized = ''
  let pairs = 0
  // As the propagator writes it: pairs of at most 4096 characters, the first 180, the header at most 8192.
  for (const [key] of baggage.getAllEntries()) {
    const member = byKey[key]!
    attributes.push([key, member.json])
    if (member.pair.length > 4096 || pairs++ >= 180) continue
    const next = normalized === '' ? member.pair : `${normalized},${member.pair}`
    if (next.length <= 8192) normalized = next
  }
  const text = normalized === '' ? undefined : normalized
  if (text !== undefined) baggageHeaders.set(baggage, text)
  return { baggage, header: text, attributes, ctx: propagation.setBaggage(ROOT_CONTEXT, baggage) }
}

/**
 * `baggage` without the entries whose key or value is not well-formed text (a lone UTF-16
 * surrogate: frames are JSON, which carries one as `\ud800`): W3C baggage values are
 * percent-encoded UTF-8, which such text has none of, so the propagator could not write them on
 * (`encodeURIComponent` throws) and the handler span's start threw inside the socket's message
 * handler. They are dropped as the propagator drops malformed entries. Undefined when none is left.
 */
function wellFormedEntries(baggage: Baggage | undefined): Baggage | undefined {
  if (baggage === undefined) return undefined
  const entries = baggage.getAllEntries()
  if (entries.every(([key, entry]) => key.isWellFormed() && entry.value.isWellFormed())) return baggage
  const kept = entries.filter(([key, entry]) => key.isWellFormed() && entry.value.isWellFormed())
  return kept.length === 0 ? undefined : propagation.createBaggage(Object.fromEntries(kept))
}

/**
 * The W3C `baggage` header of a `Baggage` that came from an inbound header unchanged (cached when
 * it was parsed), else undefined: the caller encodes it with the propagator.
 */
export function knownBaggageHeader(baggage: Baggage): string | undefined {
  return baggageHeaders.get(baggage)
}

// ---- the span -------------------------------------------------------------------------------

/** Where ended handler spans go; set by `initOtel`, cleared by `shutdownOtel`. */
let sink: SpanBatch | undefined

/** Connects handler spans to the exporter (`initOtel`) or disconnects them (`undefined`). @internal */
export function setHandlerSpanSink(batch: SpanBatch | undefined): void {
  sink = batch
}

/**
 * The context a handler runs in: `parent` (the root context, or one with the inbound baggage) with
 * `span` as its active span. Reading it costs what reading the API's context costs; making one
 * costs one small object instead of the API's `BaseContext` (three closures and a copy of the
 * parent's `Map` per handler). Setting or deleting a value gives an API context as usual.
 */
class ActiveSpanContext implements Context {
  readonly #parent: Context
  readonly #span: Span

  constructor(parent: Context, span: Span) {
    this.#parent = parent
    this.#span = span
  }

  getValue(key: symbol): unknown {
    return key === SPAN_KEY ? this.#span : this.#parent.getValue(key)
  }

  setValue(key: symbol, value: unknown): Context {
    return trace.setSpan(this.#parent, this.#span).setValue(key, value)
  }

  deleteValue(key: symbol): Context {
    return trace.setSpan(this.#parent, this.#span).deleteValue(key)
  }
}

/** The key `trace.setSpan` stores the active span under (`@opentelemetry/api` makes it with `createContextKey`). */
const SPAN_KEY = createContextKey('OpenTelemetry Context Key SPAN')
/** True when the API in use stores spans under {@link SPAN_KEY}, checked once: otherwise handler contexts are the API's own. */
const LIGHT_CONTEXTS = ((): boolean => {
  const probe = trace.wrapSpanContext({ traceId: '1'.repeat(32), spanId: '1'.repeat(16), traceFlags: 0 })
  return trace.setSpan(ROOT_CONTEXT, probe).getValue(SPAN_KEY) === probe && trace.getSpan(new ActiveSpanContext(ROOT_CONTEXT, probe)) === probe
})()

/** `trace.setSpan(parent, span)`, as an {@link ActiveSpanContext} when the API allows. */
function withSpanContext(parent: Context, span: Span): Context {
  return LIGHT_CONTEXTS ? new ActiveSpanContext(parent, span) : trace.setSpan(parent, span)
}

/** The last span name written and its JSON: a worker's spans are named after a few functions. */
let lastName = ''
let lastNameJson = '""'
/** The last initial attribute written (key, value) and its OTLP/JSON `KeyValue`. */
let lastInitial: [string, string, string] | undefined

function nameJson(name: string): string {
  if (name !== lastName) {
    lastName = name
    lastNameJson = JSON.stringify(name)
  }
  return lastNameJson
}

function initialJson(key: string, value: string): string {
  const last = lastInitial
  if (last !== undefined && last[0] === key && last[1] === value) return last[2]
  const json = keyValueJson(key, value)
  lastInitial = [key, value, json]
  return json
}

/** The end of a payload event by `svc.payload.truncated` (2) and `svc.payload.ok` (1). */
const PAYLOAD_TAILS = [false, true].flatMap((truncated) =>
  [false, true].map((ok) => '}},{"key":"svc.payload.truncated","value":{"boolValue":' + truncated + '}},{"key":"svc.payload.ok","value":{"boolValue":' + ok + '}}]}'),
)

/** A payload event's OTLP/JSON `Event` (protocol.md §10.1): `name` (a constant JSON needs no escape in) at `time` (nanoseconds since the epoch, decimal). */
function payloadEventJson(name: string, time: string, json: string, truncated: boolean, ok: boolean): string {
  return '{"name":"' + name + '","timeUnixNano":"' + time + '","attributes":[{"key":"svc.payload.json","value":{"stringValue":' + JSON.stringify(json) + PAYLOAD_TAILS[(truncated ? 2 : 0) + (ok ? 1 : 0)]!
}

function cleanEventAttributes(attributes: Attributes | undefined): { json: string; dropped: number } {
  if (attributes === undefined) return { json: '', dropped: 0 }
  let json = ''
  let count = 0
  let dropped = 0
  for (const key in attributes) {
    if (!Object.prototype.hasOwnProperty.call(attributes, key) || key === '') continue
    const value = attributes[key]
    if (!isAttributeValue(value)) continue
    if (count >= LIMIT) {
      dropped++
      continue
    }
    const kv = keyValueJson(key, value)
    if (kv === '') continue
    json += count === 0 ? kv : ',' + kv
    count++
  }
  return { json, dropped }
}

/** Every span's status until one is set: shared (never mutated; `setStatus` replaces it), one object less per span. */
const UNSET_STATUS: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET })

/**
 * A recording span of one handler invocation, exported as OTLP/JSON when it ends. Implements the
 * whole `Span` interface of `@opentelemetry/api`; `status` is readable like the SDK span's.
 */
export class HandlerSpan implements Span {
  readonly traceId: string
  readonly spanId: string
  /** Parent span id (16 hex), undefined for a root span. */
  readonly parentSpanId: string | undefined
  /** `00-<trace id>-<span id>-01`: this span as the parent of outgoing calls (protocol.md §10.1). */
  readonly traceparent: string
  readonly #parentIsRemote: boolean
  #name: string
  readonly #kind: SpanKind
  readonly #start: number
  /** {@link nanos} of `#start`, written once (the start and the input payload event share it). */
  #startNanos: string | undefined
  /** The initial attribute (`svc.function.id`) and the baggage entries, as written. */
  readonly #startAttributes: StartAttributes
  readonly #baggage: ParsedBaggage | undefined
  #attributes: Record<string, AttributeValue> | undefined
  #attributeCount = 0
  #droppedAttributes = 0
  #events: string[] | undefined
  #droppedEvents = 0
  #links: string[] | undefined
  #droppedLinks = 0
  #status: SpanStatus = UNSET_STATUS
  #ended = false
  #context: SpanContext | undefined
  /** True once anything but svc-sdk's own bookkeeping changed the span: it is then sent in full. */
  #touched = false
  /** The input payload waiting to be recorded ({@link deferInput}), and who records it. */
  #deferredData: unknown
  #deferredRecorder: ((span: HandlerSpan, data: unknown) => void) | undefined

  /** Use {@link startHandlerSpan}. */
  constructor(name: string, kind: SpanKind, parent: SpanContext | undefined, initial: [string, string] | undefined, baggage: ParsedBaggage | undefined) {
    this.#start = now()
    this.#name = name
    this.#kind = kind
    const traceparent = newTraceparent(parent?.traceId)
    this.traceparent = traceparent
    this.traceId = parent === undefined ? traceparent.slice(3, 35) : parent.traceId
    this.spanId = traceparent.slice(36, 52)
    this.parentSpanId = parent?.spanId
    this.#parentIsRemote = parent?.isRemote === true
    this.#baggage = baggage
    this.#startAttributes = startAttributes(baggage, initial?.[0], initial === undefined ? '' : initialJson(initial[0], initial[1]))
    const count = this.#startAttributes.count
    this.#attributeCount = Math.min(count, LIMIT)
    this.#droppedAttributes = Math.max(0, count - LIMIT)
  }

  spanContext(): SpanContext {
    return (this.#context ??= { traceId: this.traceId, spanId: this.spanId, traceFlags: 1, isRemote: false })
  }

  /** The status set so far (read by `setOkUnlessError`). */
  get status(): SpanStatus {
    return this.#status
  }

  get name(): string {
    return this.#name
  }

  setAttribute(key: string, value: AttributeValue): this {
    if (this.#ended || typeof key !== 'string' || key === '' || !isAttributeValue(value)) return this
    this.#touch()
    // No prototype: `in` must see only attributes (a baggage key `constructor` is not one of ours).
    const attributes = (this.#attributes ??= Object.create(null) as Record<string, AttributeValue>)
    if (!(key in attributes) && !this.#hasStartKey(key)) {
      if (this.#attributeCount >= LIMIT) {
        this.#droppedAttributes++
        return this
      }
      this.#attributeCount++
    }
    attributes[key] = Array.isArray(value) ? value.slice() : value
    return this
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]!)
    return this
  }

  addEvent(name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
    if (this.#ended) return this
    this.#touch()
    let attributes: Attributes | undefined
    if (isTimeInput(attributesOrStartTime)) {
      if (!isTimeInput(startTime)) startTime = attributesOrStartTime
    } else attributes = attributesOrStartTime
    const { json, dropped } = cleanEventAttributes(attributes)
    let text = '{"name":' + JSON.stringify(String(name)) + ',"timeUnixNano":"' + nanos(timeOf(startTime)) + '"'
    if (json !== '') text += ',"attributes":[' + json + ']'
    if (dropped > 0) text += ',"droppedAttributesCount":' + dropped
    this.#pushEvent(text + '}')
    return this
  }

  /**
   * Adds a payload event (`svc.invocation.input`/`svc.invocation.output`, protocol.md §10.1) whose
   * attributes are `svc.payload.json` = `json`, `svc.payload.truncated`, `svc.payload.ok`. The same
   * event as `addEvent` would record, without building an attribute object.
   */
  addPayloadEvent(name: string, json: string, truncated: boolean, ok: boolean): void {
    if (this.#ended) return
    this.#pushEvent(payloadEventJson(name, nanos(now()), json, truncated, ok))
  }

  /**
   * Adds the `svc.invocation.input` payload event (protocol.md §10.1; `svc.payload.ok` true) at
   * the span's start time: the payload the invocation started with, without a clock read of its own.
   */
  addInputPayloadEvent(json: string, truncated: boolean): void {
    if (this.#ended) return
    this.#pushEvent(payloadEventJson('svc.invocation.input', this.#startText(), json, truncated, true))
  }

  /**
   * Adds the payload event `name` (as {@link addPayloadEvent}) and ends the span at the same
   * instant, one clock read for both: the outcome recorded as the span ends. A second end does nothing.
   */
  endWithPayloadEvent(name: string, json: string, truncated: boolean, ok: boolean): void {
    if (this.#ended) return
    this.recordDeferredInput()
    const end = Math.max(this.#start, now())
    const time = nanos(end)
    this.#pushEvent(payloadEventJson(name, time, json, truncated, ok))
    this.#ended = true
    sink?.add(SCOPE, this.#json(time))
  }

  addLink(link: Link): this {
    if (this.#ended) return this
    this.#touch()
    const ctx = link.context
    const { json, dropped } = cleanEventAttributes(link.attributes)
    let text = '{"traceId":"' + ctx.traceId + '","spanId":"' + ctx.spanId + '"'
    const state = ctx.traceState?.serialize()
    if (state) text += ',"traceState":' + JSON.stringify(state)
    if (json !== '') text += ',"attributes":[' + json + ']'
    if (dropped > 0) text += ',"droppedAttributesCount":' + dropped
    text += ',"flags":' + spanFlags(ctx.traceFlags, ctx.isRemote) + '}'
    const links = (this.#links ??= [])
    if (links.length >= LIMIT) {
      links.shift()
      this.#droppedLinks++
    }
    links.push(text)
    return this
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link)
    return this
  }

  setStatus(status: SpanStatus): this {
    if (this.#ended || status.code === SpanStatusCode.UNSET || this.#status.code === SpanStatusCode.OK) return this
    this.#touch()
    this.#status = status.code === SpanStatusCode.ERROR && typeof status.message === 'string' ? { code: status.code, message: status.message } : { code: status.code }
    return this
  }

  updateName(name: string): this {
    if (!this.#ended) {
      this.#touch()
      this.#name = name
    }
    return this
  }

  isRecording(): boolean {
    return !this.#ended
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {}
    if (typeof exception === 'string') attributes['exception.message'] = exception
    else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString()
      else if (exception.name) attributes['exception.type'] = exception.name
      if (exception.message) attributes['exception.message'] = exception.message
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time)
  }

  /** Ends the span and queues its OTLP/JSON for export. A second call does nothing. */
  end(endTime?: TimeInput): void {
    if (this.#ended) return
    this.recordDeferredInput()
    this.#ended = true
    const end = Math.max(this.#start, timeOf(endTime))
    sink?.add(SCOPE, this.#json(nanos(end)))
  }

  /**
   * Leaves the input payload event to be recorded later: `record(this, data)` runs when the span is
   * first changed or is ended here, or never when the engine records the span ({@link handOver}).
   * svc-sdk defers it on a connection whose engine may record handler spans.
   */
  deferInput(data: unknown, record: (span: HandlerSpan, data: unknown) => void): void {
    this.#deferredData = data
    this.#deferredRecorder = record
  }

  /** Records the deferred input payload event now, if one waits ({@link deferInput}). */
  recordDeferredInput(): void {
    const record = this.#deferredRecorder
    if (record === undefined) return
    const data = this.#deferredData
    this.#deferredRecorder = undefined
    this.#deferredData = undefined
    record(this, data)
  }

  /**
   * Hands the span to the engine (svc addition, docs/reference/protocol.md "Handler spans recorded
   * by the engine"): when nothing but svc-sdk changed it, ends it without exporting anything and
   * returns its start and end (nanoseconds since the epoch, decimal) for the `invocationresult`;
   * the engine records the same span from them and the data it holds. Undefined when the handler
   * changed the span (attributes, events, links, status, name) or it ended: it is sent in full.
   */
  handOver(): { start: string; end: string } | undefined {
    if (this.#ended || this.#touched) return undefined
    this.#ended = true
    this.#deferredRecorder = undefined
    this.#deferredData = undefined
    return { start: this.#startText(), end: nanos(Math.max(this.#start, now())) }
  }

  #touch(): void {
    if (this.#touched) return
    this.#touched = true
    // The input event comes first, at the span's start, as when it was recorded then.
    this.recordDeferredInput()
  }

  #startText(): string {
    return (this.#startNanos ??= nanos(this.#start))
  }

  #hasStartKey(key: string): boolean {
    if (key === this.#startAttributes.initialKey) return true
    const bag = this.#baggage?.attributes
    if (bag !== undefined) for (let i = 0; i < bag.length; i++) if (bag[i]![0] === key) return true
    return false
  }

  #pushEvent(text: string): void {
    const events = (this.#events ??= [])
    if (events.length >= LIMIT) {
      events.shift()
      this.#droppedEvents++
    }
    events.push(text)
  }

  /** The OTLP/JSON `Span`. Attribute order: the initial one, baggage entries, then the handler's own (each later one wins). */
  #json(endNanos: string): string {
    let text = '{"traceId":"' + this.traceId + '","spanId":"' + this.spanId + '"'
    if (this.parentSpanId !== undefined) text += ',"parentSpanId":"' + this.parentSpanId + '"'
    text += ',"name":' + nameJson(this.#name) + ',"kind":' + (this.#kind + 1)
    text += ',"startTimeUnixNano":"' + this.#startText() + '","endTimeUnixNano":"' + endNanos + '","attributes":['
    const own = this.#attributes
    const start = this.#startAttributes
    if (own === undefined) text += start.text
    else {
      // The handler set attributes: its own win over the initial one and baggage entries of the same key.
      const bag = this.#baggage?.attributes
      let n = 0
      if (start.hasInitial && !(start.initialKey! in own)) {
        text += start.initialJson
        n++
      }
      if (bag !== undefined) {
        for (let i = 0; i < bag.length && n < LIMIT; i++) {
          const [key, kv] = bag[i]!
          if (key in own) continue
          text += n++ === 0 ? kv : ',' + kv
        }
      }
      for (const key in own) {
        const kv = keyValueJson(key, own[key])
        if (kv !== '') text += n++ === 0 ? kv : ',' + kv
      }
    }
    text += ']'
    if (this.#droppedAttributes > 0) text += ',"droppedAttributesCount":' + this.#droppedAttributes
    const events = this.#events
    if (events !== undefined) {
      // Appended one by one: the span's text is flattened once, when the batch writes it (a join made a copy of its own).
      text += ',"events":[' + events[0]
      for (let i = 1; i < events.length; i++) text += ',' + events[i]
      text += ']'
    }
    if (this.#droppedEvents > 0) text += ',"droppedEventsCount":' + this.#droppedEvents
    if (this.#links !== undefined) text += ',"links":[' + this.#links.join(',') + ']'
    if (this.#droppedLinks > 0) text += ',"droppedLinksCount":' + this.#droppedLinks
    text += ',' + statusJson(this.#status.code, this.#status.message)
    return text + ',"flags":' + spanFlags(1, this.#parentIsRemote) + '}'
  }
}

/** A started handler span and the context to run the handler in. */
export interface StartedHandlerSpan {
  /** A {@link HandlerSpan}, or the API's non-recording span when the parent is not sampled. */
  span: Span
  /** Root context + the span + the inbound baggage. */
  ctx: Context
  /** The `traceparent` to return with the result: this span's context (protocol.md §10.1). */
  traceparent: string
}

/**
 * Starts the span of one inbound invocation, parented on the inbound W3C `traceparent` (ignored
 * when invalid) with the entries of the inbound W3C `baggage` in its context and on its attributes.
 * `attribute` is its initial attribute (`['svc.function.id', id]`). Returns undefined when telemetry
 * is not initialised (no exporter): the caller runs the handler without a span.
 */
export function startHandlerSpan(name: string, attribute: [string, string] | undefined, traceparent?: string, baggage?: string): StartedHandlerSpan | undefined {
  if (sink === undefined) return undefined
  const parent = parseTraceparent(traceparent)
  const parsed = baggage === undefined || baggage === '' ? undefined : parseBaggage(baggage)
  const ctx: Context = parsed?.ctx ?? ROOT_CONTEXT
  if (parent !== undefined && (parent.traceFlags & 1) === 0) {
    // Parent-based sampling: an unsampled parent gives a span that records nothing but passes the trace on.
    const spanId = newSpanId()
    const span = trace.wrapSpanContext({ traceId: parent.traceId, spanId, traceFlags: parent.traceFlags & ~1 & 0xff })
    const flags = (parent.traceFlags & ~1 & 0xff).toString(16).padStart(2, '0')
    return { span, ctx: withSpanContext(ctx, span), traceparent: '00-' + parent.traceId + '-' + spanId + '-' + flags }
  }
  const span = new HandlerSpan(name, SpanKind.INTERNAL, parent, attribute, parsed)
  return { span, ctx: withSpanContext(ctx, span), traceparent: span.traceparent }
}

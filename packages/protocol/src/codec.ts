/**
 * Frame decoding and encoding, both directions (protocol.md §3.5, §4–§5): the one codec of the
 * engine and of every client (`svc-protocol/client`, the SDKs built on it).
 *
 * | Direction | Decode | Encode |
 * |---|---|---|
 * | worker → engine | {@link decodeFrame} (the engine; payloads kept as {@link RawJson}) | {@link encodeInvokeFunction}, {@link encodeResultJson}, {@link encodeTriggerResult}, {@link encodeFrame} (clients) |
 * | engine → worker | {@link decodeEngineFrame} (clients; payloads decoded) | {@link encodeInvoke}, {@link encodeResult}, {@link encodeRegisterTrigger}, {@link encodeTriggerResult}, {@link encodeFrame} (the engine) |
 *
 * Decoding W→E is lenient as §3.5 requires (missing optional fields take their defaults, `null` in an
 * optional field counts as omitted, unknown fields and types are ignored) and strict at the edge:
 * every frame is scanned as JSON once, refused when it nests deeper than {@link MAX_FRAME_DEPTH} or
 * carries an id that is not a well-formed string, and reported as malformed with enough of its
 * content for the engine to owe the right reply.
 *
 * The routed call's frames as svc's encoders write them (`invokefunction`, `invocationresult`: `type`
 * first, plain text, the encoders' fields only) are read in one pass without the member map; any
 * other frame goes through the member map, which decodes those the same way.
 *
 * Payloads and results are not decoded: `invokefunction.data` / `.metadata` and
 * `invocationresult.result` arrive as {@link RawJson}, the exact text received, so the engine
 * forwards them without a decode and a re-encode (each costs a full pass over the payload).
 *
 * Never throws.
 */
import { Codes, isErrorBody, wireErrorBody, type ErrorBody } from './errors.ts'
import { idProblem } from './ids.ts'
import { isPlainText, jsonParse, JsonSyntaxError, MAX_FRAME_DEPTH, scanObjectMembers, scanPlainValue } from './json.ts'
import { MAX_CANCEL_REASON, MessageType } from './messages.ts'
import type {
  CancelInvocationMessage,
  ErrorMessage,
  InvocationResultMessage,
  InvokeFunctionMessage,
  Message,
  PingMessage,
  PongMessage,
  RegisterTriggerMessage,
  TriggerActionValue,
  TriggerRegistrationResultMessage,
  UnregisterTriggerMessage,
  WorkerRegisteredMessage,
} from './messages.ts'

/**
 * A JSON value kept as the text it arrived as. `value` decodes it on first use; {@link encodeJson}
 * writes the text back unchanged.
 */
export class RawJson {
  readonly text: string
  #value: unknown
  #decoded = false

  constructor(text: string) {
    this.text = text
  }

  /** The decoded value (decoded once, then cached; treat it as read-only). */
  get value(): unknown {
    if (!this.#decoded) {
      this.#value = jsonParse(this.text)
      this.#decoded = true
    }
    return this.#value
  }

  /**
   * What `JSON.stringify` writes for it when it sits inside another value: its decoded value (the
   * same JSON, though a number beyond 2^53 is rounded), not the object. Splice {@link text} where a
   * frame is built by hand ({@link encodeJson}); this is for the rest, e.g. an enqueue's payload
   * object with its `data` as received, handed to a worker that serves `engine::queue::enqueue`.
   */
  toJSON(): unknown {
    return this.value
  }

  /** True for the JSON text `null`. */
  get isNull(): boolean {
    return this.text === 'null'
  }

  /** A RawJson holding `value` (encoded now). @throws TypeError for values JSON cannot encode. */
  static of(value: unknown): RawJson {
    const text = JSON.stringify(value)
    if (text === undefined) throw new TypeError(`${typeof value} is not a JSON value`)
    const raw = new RawJson(text)
    raw.#value = value
    raw.#decoded = true
    return raw
  }
}

export const RAW_NULL = new RawJson('null')

/** A value to put in a frame: already-encoded text, or a value to encode. */
export type JsonInput = RawJson | unknown

/** The JSON text of `value`: a {@link RawJson}'s text as it is, anything else `JSON.stringify`d (`null` for undefined). */
export function encodeJson(value: JsonInput): string {
  if (value instanceof RawJson) return value.text
  return JSON.stringify(value) ?? 'null'
}

/** The decoded value of `value`, whichever form it is in. */
export function decodeJson(value: JsonInput): unknown {
  return value instanceof RawJson ? value.value : value
}

/** An `invokefunction` as the engine receives it: payload and metadata undecoded. */
export interface InboundInvoke extends Omit<InvokeFunctionMessage, 'data' | 'metadata'> {
  data: RawJson
  metadata?: RawJson
}

/** An `invocationresult` as the engine receives it: result undecoded, error read as an ErrorBody. */
export interface InboundResult extends Omit<InvocationResultMessage, 'result' | 'error' | 'function_id'> {
  function_id?: string
  result?: RawJson
  error?: ErrorBody
}

export type InboundMessage = Exclude<Message, InvokeFunctionMessage | InvocationResultMessage> | InboundInvoke | InboundResult

export type TelemetryPrefix = 'OTLP' | 'MTRC' | 'LOGS'

export type Decoded =
  | { kind: 'message'; message: InboundMessage }
  /** Empty or whitespace-only text, or an unknown type (§3.5). */
  | { kind: 'ignored'; reason?: string }
  /** An `OTLP`, `MTRC` or `LOGS` binary frame (§10.2); `json` is the text after the prefix. */
  | { kind: 'telemetry'; prefix: TelemetryPrefix; json: string }
  /**
   * `raw` holds the frame's top-level fields when it was JSON at all, to owe the right reply;
   * `code` is the code of that reply: `INVALID_ID` for an id, `INVALID_NAMESPACE` for a namespace
   * that is not well-formed text ({@link idProblem}), `invalid_message` for anything else.
   */
  | { kind: 'malformed'; reason: string; raw: Record<string, unknown> | undefined; code: MalformedCode }

/** The code a reply to a malformed frame carries (protocol.md §3.5, §7.2). */
export type MalformedCode = typeof Codes.InvalidMessage | typeof Codes.InvalidId | typeof Codes.InvalidNamespace

/** Why a frame is malformed, and the code of the reply it is owed. */
interface Problem {
  reason: string
  code: MalformedCode
}

const problem = (reason: string, code: MalformedCode = Codes.InvalidMessage): Problem => ({ reason, code })

function malformed(reason: string, raw: Record<string, unknown> | undefined, code: MalformedCode = Codes.InvalidMessage): Decoded {
  return { kind: 'malformed', reason, raw, code }
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(Object.values(MessageType))

const utf8 = new TextDecoder('utf-8', { fatal: true })

/** Decodes one WebSocket frame from a worker (text, or binary: telemetry or UTF-8 JSON). */
export function decodeFrame(data: string | Uint8Array, isBinary: boolean): Decoded {
  if (typeof data === 'string') return decodeText(data)
  if (isBinary && data.length >= 4) {
    const prefix = String.fromCharCode(data[0]!, data[1]!, data[2]!, data[3]!)
    if (prefix === 'OTLP' || prefix === 'MTRC' || prefix === 'LOGS') {
      try {
        return { kind: 'telemetry', prefix, json: utf8.decode(data.subarray(4)) }
      } catch {
        return { kind: 'ignored', reason: `${prefix} frame is not valid UTF-8` }
      }
    }
  }
  let text: string
  try {
    text = utf8.decode(data)
  } catch {
    return malformed('frame is not valid UTF-8', undefined)
  }
  return decodeText(text)
}

/** Decodes one text frame. */
export function decodeText(text: string): Decoded {
  if (text.startsWith('{"type":"invo')) {
    const call = decodeCall(text)
    if (call !== undefined) return call
  }
  let members: Map<string, [number, number]> | undefined
  try {
    members = scanObjectMembers(text, MAX_FRAME_DEPTH)
  } catch (err) {
    if (text.trim() === '') return { kind: 'ignored' }
    const reason = err instanceof JsonSyntaxError ? err.message : String(err)
    if (err instanceof JsonSyntaxError && reason.startsWith('nesting deeper')) {
      // Well-formed but too deep: read the top-level fields (JSON.parse itself is not recursive)
      // so a call still gets its invalid_message answer.
      return malformed(reason, topLevelFields(text))
    }
    return malformed(`not JSON (${reason})`, undefined)
  }
  if (members === undefined) return malformed('frame is not a JSON object', undefined)
  const typeSpan = members.get('type')
  const type = typeSpan === undefined ? undefined : JSON.parse(text.slice(typeSpan[0], typeSpan[1]))
  if (typeof type !== 'string') return malformed('type must be a string', parseObject(text))
  if (!KNOWN_TYPES.has(type)) return { kind: 'ignored', reason: `unknown type '${type.slice(0, 64)}'` }
  if (type === 'invokefunction') return decodeInvoke(text, members)
  if (type === 'invocationresult') return decodeResult(text, members)
  const raw = parseObject(text)!
  const found = normalize(type, raw)
  if (found !== undefined) return malformed(found.reason, raw, found.code)
  return { kind: 'message', message: raw as unknown as InboundMessage }
}

// ---- the routed call's two frames, as svc's encoders write them ------------------------------
// An `invokefunction` or `invocationresult` whose `type` comes first, in a text without
// backslashes or control characters (isPlainText), with no other fields than svc's encoders
// write, each of the type they give it: read in one pass without the member map, the string
// fields sliced between their quotes, `data`/`metadata`/`result` checked by scanPlainValue and
// kept as RawJson, an invocation's `action` (an enqueue or a void call: every queued message's
// frame) checked the same way and decoded when actionProblem finds nothing wrong with it, and an
// invocation's `namespace` taken when idProblem finds nothing wrong with it (a worker of a named
// namespace names it in every call). Anything else — another order, an `error`, a `null`, a field
// of another type, an action that is not well-formed, a namespace that is not a valid id, a
// repeated field, a malformed frame — returns undefined and
// goes through the member map (decodeInvoke, decodeResult), which gives the same message for
// every frame this path accepts and the verdict for every other.

const INVOKE_HEAD = '{"type":"invokefunction"'
const RESULT_HEAD = '{"type":"invocationresult"'
/** Fields of {@link decodeCall}: bit per name. */
const F_INVOCATION_ID = 1
const F_FUNCTION_ID = 2
const F_DATA = 4
const F_METADATA = 8
const F_TRACEPARENT = 16
const F_BAGGAGE = 32
const F_RESULT = 64
const F_SPAN_START = 128
const F_SPAN_END = 256
const F_ACTION = 512
const F_NAMESPACE = 1024

/** The field bit of the key `s[start, end)`, 0 for any other key. */
function callField(s: string, start: number, end: number): number {
  switch (end - start) {
    case 4:
      return s.startsWith('data', start) ? F_DATA : 0
    case 6:
      return s.startsWith('result', start) ? F_RESULT : s.startsWith('action', start) ? F_ACTION : 0
    case 7:
      return s.startsWith('baggage', start) ? F_BAGGAGE : 0
    case 9:
      return s.startsWith('namespace', start) ? F_NAMESPACE : 0
    case 8:
      return s.startsWith('metadata', start) ? F_METADATA : s.startsWith('span_end', start) ? F_SPAN_END : 0
    case 10:
      return s.startsWith('span_start', start) ? F_SPAN_START : 0
    case 11:
      return s.startsWith('function_id', start) ? F_FUNCTION_ID : s.startsWith('traceparent', start) ? F_TRACEPARENT : 0
    case 13:
      return s.startsWith('invocation_id', start) ? F_INVOCATION_ID : 0
    default:
      return 0
  }
}

function decodeCall(s: string): Decoded | undefined {
  let allowed: number
  let i: number
  if (s.startsWith(INVOKE_HEAD)) {
    allowed = F_INVOCATION_ID | F_FUNCTION_ID | F_DATA | F_METADATA | F_ACTION | F_NAMESPACE | F_TRACEPARENT | F_BAGGAGE
    i = INVOKE_HEAD.length
  } else if (s.startsWith(RESULT_HEAD)) {
    allowed = F_INVOCATION_ID | F_FUNCTION_ID | F_RESULT | F_TRACEPARENT | F_BAGGAGE | F_SPAN_START | F_SPAN_END
    i = RESULT_HEAD.length
  } else return undefined
  if (!isPlainText(s)) return undefined
  let seen = 0
  let invocationId: string | undefined
  let functionId: string | undefined
  let traceparent: string | undefined
  let baggage: string | undefined
  let spanStart: string | undefined
  let spanEnd: string | undefined
  let payload: RawJson | undefined
  let metadata: RawJson | undefined
  let action: TriggerActionValue | undefined
  let namespace: string | undefined
  for (;;) {
    const c = s.charCodeAt(i)
    if (c === 125) break
    if (c !== 44 || s.charCodeAt(i + 1) !== 34) return undefined
    const keyEnd = s.indexOf('"', i + 2)
    if (keyEnd === -1 || s.charCodeAt(keyEnd + 1) !== 58) return undefined
    const bit = callField(s, i + 2, keyEnd)
    if (bit === 0 || (allowed & bit) === 0 || (seen & bit) !== 0) return undefined
    seen |= bit
    const start = keyEnd + 2
    if (bit === F_DATA || bit === F_METADATA || bit === F_RESULT) {
      // `null` is "omitted" for these fields: left to the member map, like every rarity (spaces too).
      if (s.charCodeAt(start) === 32 || s.startsWith('null', start)) return undefined
      const end = scanPlainValue(s, start, MAX_FRAME_DEPTH)
      if (end === -1) return undefined
      const raw = new RawJson(s.slice(start, end))
      if (bit === F_METADATA) metadata = raw
      else payload = raw
      i = end
    } else if (bit === F_ACTION) {
      // An object only (`null` and any other value: the member map's verdict); plain text, so no escaped key.
      if (s.charCodeAt(start) !== 123) return undefined
      const end = scanPlainValue(s, start, MAX_FRAME_DEPTH)
      if (end === -1) return undefined
      const value = JSON.parse(s.slice(start, end)) as unknown
      if (actionProblem(value) !== undefined) return undefined
      action = value as TriggerActionValue
      i = end
    } else {
      if (s.charCodeAt(start) !== 34) return undefined
      const close = s.indexOf('"', start + 1)
      if (close === -1) return undefined
      const value = s.slice(start + 1, close)
      if (bit === F_INVOCATION_ID) invocationId = value
      else if (bit === F_FUNCTION_ID) functionId = value
      else if (bit === F_TRACEPARENT) traceparent = value
      else if (bit === F_BAGGAGE) baggage = value
      else if (bit === F_SPAN_START) spanStart = value
      else if (bit === F_NAMESPACE) namespace = value
      else spanEnd = value
      i = close + 1
    }
  }
  if (i + 1 !== s.length) return undefined
  if (allowed & F_DATA) {
    if (functionId === undefined || idProblem(functionId) !== undefined) return undefined
    const message = { type: 'invokefunction' } as InboundInvoke
    if (invocationId !== undefined) message.invocation_id = invocationId
    message.function_id = functionId
    message.data = payload ?? RAW_NULL
    if (metadata !== undefined) message.metadata = metadata
    if (action !== undefined) message.action = action
    if (namespace !== undefined) {
      if (idProblem(namespace) !== undefined) return undefined
      message.namespace = namespace
    }
    if (traceparent !== undefined) message.traceparent = traceparent
    if (baggage !== undefined) message.baggage = baggage
    return { kind: 'message', message }
  }
  if (invocationId === undefined) return undefined
  const message = { type: 'invocationresult', invocation_id: invocationId } as InboundResult
  if (functionId !== undefined) message.function_id = functionId
  if (payload !== undefined) message.result = payload
  if (traceparent !== undefined) message.traceparent = traceparent
  if (baggage !== undefined) message.baggage = baggage
  if (spanStart !== undefined) message.span_start = spanStart
  if (spanEnd !== undefined) message.span_end = spanEnd
  return { kind: 'message', message }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  const value = jsonParse(text) as unknown
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
}

function topLevelFields(text: string): Record<string, unknown> | undefined {
  try {
    return parseObject(text)
  } catch {
    return undefined
  }
}

type Spans = Map<string, [number, number]>

/** The value of a small field (null counts as omitted). */
function field(text: string, spans: Spans, name: string): unknown {
  const span = spans.get(name)
  if (span === undefined) return undefined
  // Ids are plain strings almost always: the scanner already checked them, so without an escape
  // the text between the quotes is the value.
  if (text.charCodeAt(span[0]) === 34) {
    const inner = text.slice(span[0] + 1, span[1] - 1)
    if (!inner.includes('\\')) return inner
  }
  const value = jsonParse(text.slice(span[0], span[1])) as unknown
  return value === null ? undefined : value
}

/** A field kept as text (null counts as omitted). */
function rawField(text: string, spans: Spans, name: string): RawJson | undefined {
  const span = spans.get(name)
  if (span === undefined) return undefined
  const slice = text.slice(span[0], span[1])
  return slice === 'null' ? undefined : new RawJson(slice)
}

function malformedWith(text: string, reason: string, code: MalformedCode = Codes.InvalidMessage): Decoded {
  return malformed(reason, parseObject(text), code)
}

function decodeInvoke(text: string, spans: Spans): Decoded {
  const message = { type: 'invokefunction' } as InboundInvoke
  const invocationId = field(text, spans, 'invocation_id')
  if (invocationId !== undefined) {
    if (typeof invocationId !== 'string') return malformedWith(text, 'invocation_id must be a string')
    message.invocation_id = invocationId
  }
  const functionId = field(text, spans, 'function_id')
  if (functionId === undefined) return malformedWith(text, 'function_id is required')
  if (typeof functionId !== 'string') return malformedWith(text, 'function_id must be a string')
  const idIssue = idProblem(functionId)
  if (idIssue !== undefined) return malformedWith(text, `function_id ${idIssue}`, Codes.InvalidId)
  message.function_id = functionId
  message.data = rawField(text, spans, 'data') ?? RAW_NULL
  const metadata = rawField(text, spans, 'metadata')
  if (metadata !== undefined) message.metadata = metadata
  const action = field(text, spans, 'action')
  if (action !== undefined) {
    const problem = actionProblem(action)
    if (problem !== undefined) return malformedWith(text, problem)
    message.action = action as TriggerActionValue
  }
  for (const name of ['namespace', 'traceparent', 'baggage'] as const) {
    const value = field(text, spans, name)
    if (value === undefined) continue
    if (typeof value !== 'string') return malformedWith(text, `${name} must be a string`)
    message[name] = value
  }
  if (message.namespace !== undefined) {
    const issue = idProblem(message.namespace)
    if (issue !== undefined) return malformedWith(text, `namespace ${issue}`, Codes.InvalidNamespace)
  }
  return { kind: 'message', message }
}

function actionProblem(action: unknown): string | undefined {
  if (typeof action !== 'object' || action === null || Array.isArray(action)) return 'action must be an object'
  const a = action as Record<string, unknown>
  if (a.type !== 'void' && a.type !== 'enqueue') return "action.type must be 'void' or 'enqueue'"
  if (a.type === 'enqueue') {
    if (typeof a.queue !== 'string') return 'action.queue must be a string'
    if (a.delay_ms !== undefined && a.delay_ms !== null && (typeof a.delay_ms !== 'number' || !Number.isFinite(a.delay_ms))) {
      return 'action.delay_ms must be a number'
    }
    if (a.idempotency_key !== undefined && a.idempotency_key !== null && typeof a.idempotency_key !== 'string') {
      return 'action.idempotency_key must be a string'
    }
  }
  return undefined
}

function decodeResult(text: string, spans: Spans): Decoded {
  const invocationId = field(text, spans, 'invocation_id')
  if (invocationId === undefined) return malformedWith(text, 'invocation_id is required')
  if (typeof invocationId !== 'string') return malformedWith(text, 'invocation_id must be a string')
  const message = { type: 'invocationresult', invocation_id: invocationId } as InboundResult
  const functionId = field(text, spans, 'function_id')
  if (functionId !== undefined) {
    if (typeof functionId !== 'string') return malformedWith(text, 'function_id must be a string')
    message.function_id = functionId
  }
  const error = field(text, spans, 'error')
  if (error !== undefined) message.error = wireErrorBody(error)
  else {
    const result = rawField(text, spans, 'result')
    if (result !== undefined) message.result = result
  }
  for (const name of ['traceparent', 'baggage', 'span_start', 'span_end'] as const) {
    const value = field(text, spans, name)
    if (typeof value === 'string') message[name] = value
  }
  return { kind: 'message', message }
}

/** Optional fields per message type; `null` in them counts as omitted (§1 conventions). */
const OPTIONAL: Record<string, readonly string[]> = {
  registerfunction: ['description', 'request_format', 'response_format', 'metadata', 'invocation'],
  registertriggertype: ['description', 'trigger_request_format', 'call_request_format', 'namespace'],
  unregistertriggertype: ['namespace'],
  registertrigger: ['metadata', 'namespace', 'trigger_namespace'],
  unregistertrigger: ['trigger_type', 'function_id'],
  triggerregistrationresult: ['error'],
  cancelinvocation: ['reason'],
  registerservice: ['name', 'description', 'parent_service_id'],
}

function requireString(raw: Record<string, unknown>, field: string): Problem | undefined {
  const v = raw[field]
  if (v === undefined) return problem(`${field} is required`)
  if (typeof v !== 'string') return problem(`${field} must be a string`)
  return undefined
}

/** A required id: a string that is well-formed text ({@link idProblem}), else `INVALID_ID`. */
function requireId(raw: Record<string, unknown>, field: string): Problem | undefined {
  const missing = requireString(raw, field)
  if (missing !== undefined) return missing
  const issue = idProblem(raw[field] as string)
  return issue === undefined ? undefined : problem(`${field} ${issue}`, Codes.InvalidId)
}

function optionalString(raw: Record<string, unknown>, field: string): Problem | undefined {
  const v = raw[field]
  if (v !== undefined && typeof v !== 'string') return problem(`${field} must be a string`)
  return undefined
}

/**
 * An optional namespace: a string that is well-formed text, else `INVALID_NAMESPACE` (blank ones
 * are the engine's to refuse, with their own message).
 */
function optionalNamespace(raw: Record<string, unknown>, field: string): Problem | undefined {
  const wrongType = optionalString(raw, field)
  if (wrongType !== undefined || raw[field] === undefined) return wrongType
  const issue = idProblem(raw[field] as string)
  return issue === undefined ? undefined : problem(`${field} ${issue}`, Codes.InvalidNamespace)
}

function optionalObject(raw: Record<string, unknown>, field: string): Problem | undefined {
  const v = raw[field]
  if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) return problem(`${field} must be an object`)
  return undefined
}

/** Applies defaults in place; returns the problem when the frame is still malformed. */
function normalize(type: string, raw: Record<string, unknown>): Problem | undefined {
  for (const f of OPTIONAL[type] ?? []) if (raw[f] === null) delete raw[f]
  switch (type) {
    case 'registerfunction': {
      const invalid = invocationProblem(raw.invocation)
      return (
        requireId(raw, 'id') ??
        optionalString(raw, 'description') ??
        optionalObject(raw, 'metadata') ??
        optionalObject(raw, 'request_format') ??
        optionalObject(raw, 'response_format') ??
        (invalid === undefined ? undefined : problem(invalid))
      )
    }
    case 'unregisterfunction':
      return requireString(raw, 'id')
    case 'registertriggertype':
      if (raw.description === undefined) raw.description = ''
      return requireId(raw, 'id') ?? optionalString(raw, 'description') ?? optionalNamespace(raw, 'namespace')
    case 'unregistertriggertype':
      return requireString(raw, 'id') ?? optionalString(raw, 'namespace')
    case 'registertrigger':
      if (raw.config === undefined || raw.config === null) raw.config = {}
      return (
        requireId(raw, 'id') ??
        requireId(raw, 'trigger_type') ??
        requireId(raw, 'function_id') ??
        optionalNamespace(raw, 'namespace') ??
        optionalNamespace(raw, 'trigger_namespace')
      )
    case 'unregistertrigger':
      return requireString(raw, 'id')
    case 'triggerregistrationresult':
      if (raw.error !== undefined) raw.error = wireErrorBody(raw.error)
      return requireString(raw, 'id')
    case 'reattach':
      return requireString(raw, 'previous_worker_id') ?? requireString(raw, 'reattach_token')
    case 'cancelinvocation': {
      const found = requireString(raw, 'invocation_id') ?? optionalString(raw, 'reason')
      if (found === undefined && typeof raw.reason === 'string' && raw.reason.length > MAX_CANCEL_REASON) raw.reason = raw.reason.slice(0, MAX_CANCEL_REASON)
      return found
    }
    case 'registerservice':
      return requireString(raw, 'id')
    default:
      return undefined
  }
}

function invocationProblem(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'invocation must be an object'
  const v = value as Record<string, unknown>
  if (typeof v.url !== 'string') return 'invocation.url must be a string'
  if (v.method !== undefined && !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(v.method as string)) {
    return 'invocation.method must be one of GET, POST, PUT, PATCH, DELETE'
  }
  return undefined
}

// ---- encoding --------------------------------------------------------------------------------
// Frames the engine sends on the hot path are built by concatenation: no intermediate object, and
// payloads that arrived as RawJson are written back as the text they were.

/** The JSON text of an id, cached for the few ids a process calls and serves (bounded: cleared at 1024). */
export function idJson(id: string): string {
  let json = ID_JSON.get(id)
  if (json === undefined) {
    json = JSON.stringify(id)
    if (ID_JSON.size >= 1024) ID_JSON.clear()
    ID_JSON.set(id, json)
  }
  return json
}
const ID_JSON = new Map<string, string>()

/**
 * A W→E `invokefunction` (§5.8): a call from a worker. Built by concatenation (the hot path of every
 * call); `data` and `metadata` may be {@link RawJson}; fields left undefined are omitted, `data`
 * is written as `null` then. `invocationIdJson`, when given, is the JSON text of
 * `message.invocation_id` (a client that makes ids needing no escape writes them as they are).
 * @throws TypeError when `data` or `metadata` holds a value JSON cannot encode (a BigInt, a cycle).
 */
export function encodeInvokeFunction(message: InvokeFunctionMessage, invocationIdJson?: string): string {
  let frame =
    message.invocation_id === undefined
      ? '{"type":"invokefunction","function_id":'
      : '{"type":"invokefunction","invocation_id":' + (invocationIdJson ?? JSON.stringify(message.invocation_id)) + ',"function_id":'
  frame += idJson(message.function_id) + ',"data":' + encodeJson(message.data)
  if (message.metadata !== undefined) frame += ',"metadata":' + encodeJson(message.metadata)
  if (message.action !== undefined) frame += ',"action":' + JSON.stringify(message.action)
  if (message.namespace !== undefined) frame += ',"namespace":' + JSON.stringify(message.namespace)
  if (message.traceparent !== undefined) frame += ',"traceparent":' + JSON.stringify(message.traceparent)
  if (message.baggage !== undefined) frame += ',"baggage":' + JSON.stringify(message.baggage)
  return frame + '}'
}

/** An E→W `invokefunction` (§5.8): never `action` or `namespace`. Ids and baggage come as JSON text. */
export function encodeInvoke(
  invocationId: string,
  functionIdJson: string,
  data: JsonInput,
  metadata: JsonInput | undefined,
  traceparent: string | undefined,
  baggageJson: string | undefined,
): string {
  let frame = '{"type":"invokefunction","invocation_id":"' + invocationId + '","function_id":' + functionIdJson + ',"data":' + encodeJson(data)
  if (metadata !== undefined) frame += ',"metadata":' + encodeJson(metadata)
  if (traceparent !== undefined) frame += ',"traceparent":' + JSON.stringify(traceparent)
  if (baggageJson !== undefined) frame += ',"baggage":' + baggageJson
  return frame + '}'
}

/**
 * An `invocationresult` (§5.9), either direction: `error` wins over `result`; an undefined or null
 * result is omitted. `traceparent` and `baggage` (§10.1) are the answering span's, from a worker.
 * @throws TypeError when `result` is a value JSON cannot encode (a BigInt, a cycle).
 */
export function encodeResult(
  invocationId: string,
  functionIdJson: string,
  result: JsonInput | undefined,
  error: ErrorBody | undefined,
  traceparent?: string,
  baggage?: string,
): string {
  const json = error !== undefined || result === undefined || result === null ? undefined : encodeJson(result)
  return encodeResultJson(invocationId, functionIdJson, json, error, traceparent, baggage)
}

/**
 * The times of a handler's span the engine records (`span_start`/`span_end` of an
 * `invocationresult`, svc addition): nanoseconds since the Unix epoch, decimal digits only.
 */
export interface HandlerSpanTimes {
  start: string
  end: string
}

/**
 * {@link encodeResult} with the result already encoded: `resultJson` is its JSON text (undefined
 * or `null` omits it), written as it is — a handler's result is encoded once, for the frame and
 * its span alike. `span` asks the engine to record the handler's span (`traceparent` is its
 * context); only for an engine that lists `handler_spans` in `workerregistered.features`.
 */
export function encodeResultJson(
  invocationId: string,
  functionIdJson: string,
  resultJson: string | undefined,
  error: ErrorBody | undefined,
  traceparent?: string,
  baggage?: string,
  span?: HandlerSpanTimes,
): string {
  let frame = '{"type":"invocationresult","invocation_id":' + JSON.stringify(invocationId) + ',"function_id":' + functionIdJson
  if (traceparent !== undefined) frame += ',"traceparent":' + JSON.stringify(traceparent)
  if (baggage !== undefined) frame += ',"baggage":' + JSON.stringify(baggage)
  // Decimal digits only (HandlerSpanTimes): written as they are.
  if (span !== undefined) frame += ',"span_start":"' + span.start + '","span_end":"' + span.end + '"'
  if (error !== undefined) frame += ',"error":' + JSON.stringify(error)
  else if (resultJson !== undefined && resultJson !== 'null') frame += ',"result":' + resultJson
  return frame + '}'
}

/**
 * A `cancelinvocation` (either direction): `invocationId` is the id the receiver knows the call by
 * (the caller's own id W→E, the leg's id E→W); `reason` is omitted when undefined and cut to
 * {@link MAX_CANCEL_REASON} characters.
 */
export function encodeCancel(invocationId: string, reason?: string): string {
  const frame: CancelInvocationMessage = { type: 'cancelinvocation', invocation_id: invocationId }
  if (reason !== undefined) frame.reason = reason.length > MAX_CANCEL_REASON ? reason.slice(0, MAX_CANCEL_REASON) : reason
  return JSON.stringify(frame)
}

/** E→W `registertrigger` delivering a binding to a worker provider (§5.5). */
export function encodeRegisterTrigger(binding: Omit<RegisterTriggerMessage, 'type' | 'namespace'> & { namespace: string }): string {
  const frame: RegisterTriggerMessage = {
    type: 'registertrigger',
    id: binding.id,
    trigger_type: binding.trigger_type,
    function_id: binding.function_id,
    config: binding.config,
  }
  if (binding.metadata !== undefined) frame.metadata = binding.metadata
  if (binding.namespace !== 'default') frame.namespace = binding.namespace
  if (binding.trigger_namespace !== undefined && binding.trigger_namespace !== 'default') frame.trigger_namespace = binding.trigger_namespace
  return JSON.stringify(frame)
}

/** A `triggerregistrationresult` (§5.7); `error` only on failure. */
export function encodeTriggerResult(id: string, triggerType: string, functionId: string, error?: ErrorBody): string {
  const frame: TriggerRegistrationResultMessage = { type: 'triggerregistrationresult', id, trigger_type: triggerType, function_id: functionId }
  if (error !== undefined) frame.error = error
  return JSON.stringify(frame)
}

/** Any other frame: optional fields left undefined are omitted. */
export function encodeFrame(message: Message): string {
  return JSON.stringify(message)
}

// ---- decoding engine → worker frames -----------------------------------------------------------
// What a client reads. The engine is trusted to speak the protocol but not to be right: every field
// is checked for its type, a frame missing what its handling needs is ignored, `null` in an
// optional field counts as omitted (§1 conventions), and payloads are decoded (the handler needs
// the value). One `jsonParse` per frame, as before the codec did this.

/** An `invocationresult` as a worker receives it: `result` decoded, `error` read as an ErrorBody. */
export interface WorkerInboundResult {
  type: 'invocationresult'
  invocation_id: string
  function_id?: string
  result?: unknown
  error?: ErrorBody
  traceparent?: string
  baggage?: string
}

/**
 * A `registrationrejected` as a worker receives it (§5.11), fields defaulted: `code` `UNKNOWN`
 * when not a string, `message` `registration rejected: <code>`, `owner_worker_id` `""`.
 */
export interface WorkerInboundRejection {
  type: 'registrationrejected'
  code: string
  message: string
  owner_worker_id: string
  reason?: string
  namespace?: string
  function_id?: string
  trigger_type_id?: string
  worker_name?: string
}

/** Every engine → worker frame (§4) a worker acts on, as {@link decodeEngineFrame} returns it. */
export type WorkerInboundMessage =
  | WorkerRegisteredMessage
  /** A call to execute: `data` decoded (`null` when absent), never `action` or `namespace`. */
  | InvokeFunctionMessage
  | WorkerInboundResult
  /** The engine asks this worker to stop running a call it sent (by that call's `invocation_id`). */
  | CancelInvocationMessage
  /** A binding delivered to this worker as its provider (`config` `{}` when absent). */
  | RegisterTriggerMessage
  | UnregisterTriggerMessage
  /** A failure notice for a binding this worker registered (`trigger_type`/`function_id` `""` when absent). */
  | TriggerRegistrationResultMessage
  | WorkerInboundRejection
  | PingMessage
  | PongMessage
  | ErrorMessage

const utf8Lenient = new TextDecoder()
const PING: PingMessage = Object.freeze({ type: 'ping' }) as PingMessage
const PONG: PongMessage = Object.freeze({ type: 'pong' }) as PongMessage

/** A string field, else undefined (`null` and other types count as omitted). */
function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

/**
 * Decodes one frame a worker received from the engine (protocol.md §4, E→W). A binary frame is
 * read as UTF-8 JSON (§3.5).
 *
 * @returns the typed message, or undefined for what carries nothing to act on: empty, broken or
 *   non-object frames, unknown types, W→E-only types, and frames missing a field their handling
 *   needs (an `invocationresult` or a `cancelinvocation` without a string `invocation_id`, an `invokefunction` without a
 *   string `function_id`, a `registertrigger`, `unregistertrigger` or `triggerregistrationresult`
 *   without a string `id`, a `workerregistered` without string ids, an `error` without an ErrorBody).
 *   Never throws.
 */
export function decodeEngineFrame(data: string | Uint8Array): WorkerInboundMessage | undefined {
  let raw: unknown
  try {
    raw = jsonParse(typeof data === 'string' ? data : utf8Lenient.decode(data))
  } catch {
    return undefined
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return undefined
  const f = raw as Record<string, unknown>
  switch (f.type) {
    case 'invocationresult':
      return decodeInboundResult(f)
    case 'invokefunction':
      return decodeInboundInvoke(f)
    case 'cancelinvocation': {
      const id = str(f.invocation_id)
      if (id === undefined) return undefined
      const reason = str(f.reason)
      return reason === undefined
        ? { type: 'cancelinvocation', invocation_id: id }
        : { type: 'cancelinvocation', invocation_id: id, reason: reason.length > MAX_CANCEL_REASON ? reason.slice(0, MAX_CANCEL_REASON) : reason }
    }
    case 'workerregistered': {
      const workerId = str(f.worker_id)
      const token = str(f.reattach_token)
      if (workerId === undefined || token === undefined) return undefined
      const features = Array.isArray(f.features) ? f.features.filter((x): x is string => typeof x === 'string') : undefined
      return features === undefined || features.length === 0
        ? { type: 'workerregistered', worker_id: workerId, reattach_token: token }
        : { type: 'workerregistered', worker_id: workerId, reattach_token: token, features }
    }
    case 'registertrigger':
      return decodeInboundBinding(f)
    case 'unregistertrigger': {
      const id = str(f.id)
      if (id === undefined) return undefined
      const message: UnregisterTriggerMessage = { type: 'unregistertrigger', id }
      const triggerType = str(f.trigger_type)
      if (triggerType !== undefined) message.trigger_type = triggerType
      const functionId = str(f.function_id)
      if (functionId !== undefined) message.function_id = functionId
      return message
    }
    case 'triggerregistrationresult': {
      const id = str(f.id)
      if (id === undefined) return undefined
      const message: TriggerRegistrationResultMessage = {
        type: 'triggerregistrationresult',
        id,
        trigger_type: str(f.trigger_type) ?? '',
        function_id: str(f.function_id) ?? '',
      }
      if (f.error !== undefined && f.error !== null) message.error = wireErrorBody(f.error)
      return message
    }
    case 'registrationrejected':
      return decodeInboundRejection(f)
    case 'ping':
      return PING
    case 'pong':
      return PONG
    case 'error':
      return isErrorBody(f.error) ? { type: 'error', error: wireErrorBody(f.error) } : undefined
    default:
      return undefined // unknown types, and W→E-only ones, are ignored (§3.5)
  }
}

/** True when `value` is absent or a string. */
function optStr(value: unknown): boolean {
  return value === undefined || typeof value === 'string'
}

function decodeInboundResult(f: Record<string, unknown>): WorkerInboundResult | undefined {
  const invocationId = str(f.invocation_id)
  if (invocationId === undefined) return undefined
  // The hot path: a well-formed result is the parsed object itself, checked field by field.
  if (f.error === undefined && f.result !== null && optStr(f.function_id) && optStr(f.traceparent) && optStr(f.baggage)) {
    return f as unknown as WorkerInboundResult
  }
  const message: WorkerInboundResult = {
    type: 'invocationresult',
    invocation_id: invocationId,
    function_id: str(f.function_id),
    result: undefined,
    error: undefined,
    traceparent: str(f.traceparent),
    baggage: str(f.baggage),
  }
  if (f.error !== undefined && f.error !== null) message.error = wireErrorBody(f.error)
  else if (f.result !== null) message.result = f.result
  return message
}

function decodeInboundInvoke(f: Record<string, unknown>): InvokeFunctionMessage | undefined {
  const functionId = str(f.function_id)
  if (functionId === undefined) return undefined
  // The hot path: a well-formed call is the parsed object itself, checked field by field (with
  // an `action` or a `namespace`, which the engine never sends, it is copied without them).
  if (
    f.data !== undefined &&
    f.metadata !== null &&
    f.action === undefined &&
    f.namespace === undefined &&
    optStr(f.invocation_id) &&
    optStr(f.traceparent) &&
    optStr(f.baggage)
  ) {
    return f as unknown as InvokeFunctionMessage
  }
  return {
    type: 'invokefunction',
    invocation_id: str(f.invocation_id),
    function_id: functionId,
    data: f.data === undefined ? null : f.data,
    metadata: f.metadata === null ? undefined : f.metadata,
    traceparent: str(f.traceparent),
    baggage: str(f.baggage),
  }
}

function decodeInboundBinding(f: Record<string, unknown>): RegisterTriggerMessage | undefined {
  const id = str(f.id)
  const triggerType = str(f.trigger_type)
  const functionId = str(f.function_id)
  if (id === undefined || triggerType === undefined || functionId === undefined) return undefined
  const message: RegisterTriggerMessage = {
    type: 'registertrigger',
    id,
    trigger_type: triggerType,
    function_id: functionId,
    config: f.config === undefined || f.config === null ? {} : f.config,
  }
  if (f.metadata !== undefined && f.metadata !== null) message.metadata = f.metadata
  const namespace = str(f.namespace)
  if (namespace !== undefined) message.namespace = namespace
  const triggerNamespace = str(f.trigger_namespace)
  if (triggerNamespace !== undefined) message.trigger_namespace = triggerNamespace
  return message
}

function decodeInboundRejection(f: Record<string, unknown>): WorkerInboundRejection {
  const code = str(f.code) ?? Codes.Unknown
  const message: WorkerInboundRejection = {
    type: 'registrationrejected',
    code,
    message: str(f.message) ?? `registration rejected: ${code}`,
    owner_worker_id: str(f.owner_worker_id) ?? '',
  }
  for (const name of ['reason', 'namespace', 'function_id', 'trigger_type_id', 'worker_name'] as const) {
    const value = str(f[name])
    if (value !== undefined) message[name] = value
  }
  return message
}

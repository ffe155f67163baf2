/**
 * Redaction and safe serialization of payloads recorded in telemetry (sdk.md §12.2, protocol.md
 * §10.1). Pure functions: no telemetry needs to be running. Here, under svc-helpers (which
 * re-exports it), because the engine applies the same rules to the handler spans it records for
 * workers (docs/reference/protocol.md, "Handler spans recorded by the engine").
 *
 * @example
 * redact({ user: 'ann', password: 'x', nested: { api_key: 'k' } })
 * // → { user: 'ann', password: '[REDACTED]', nested: { api_key: '[REDACTED]' } }
 * redactAndTruncate({ big: 'x'.repeat(100) }, 20)
 * // → { json: '{"big":"xxxxxxxxxx..."[TRUNCATED]"', truncated: true }
 */

import { jsonParse } from './json.ts'

/** What a redacted value is replaced with. */
export const REDACTED_PLACEHOLDER = '[REDACTED]'
/** What {@link safeStringify} returns when a value cannot be serialized at all. */
export const UNSERIALIZABLE = '[unserializable]'
/** Marker of a reference back to an object still being serialized. */
export const CIRCULAR = '[Circular]'
/** Appended by {@link redactAndTruncate} after a cut. */
export const TRUNCATION_SUFFIX = '..."[TRUNCATED]"'
/**
 * Nesting depth past which {@link redact} stops descending and writes `[MaxDepth]` (decision: the
 * spec is silent; a bound keeps hostile payloads from exhausting the stack).
 */
export const MAX_REDACT_DEPTH = 64
/**
 * Objects and arrays {@link redact} copies at most; later ones become `[Truncated]` (decision:
 * a value reusing one object on many paths would otherwise expand exponentially).
 */
export const MAX_REDACT_NODES = 100_000

const SENSITIVE_SUBSTRINGS = [
  'api_key', 'apikey', 'api-key', 'password', 'secret', 'credential', 'authorization', 'auth_token',
  'access_token', 'refresh_token', 'bearer', 'private_key', 'client_secret', 'access_key',
]

/**
 * True when a key names a secret (sdk.md §12.2): it contains one of api_key, apikey, api-key,
 * password, secret, credential, authorization, auth_token, access_token, refresh_token, bearer,
 * private_key, client_secret, and access_key (svc's addition: a channel ref's key opens its channel,
 * protocol.md §9); or is exactly `token`; or ends in `_token`/`-token`. Case-insensitive.
 */
export function isSensitiveKey(key: string): boolean {
  let known = sensitiveCache.get(key)
  if (known === undefined) {
    known = computeSensitive(key)
    // Payloads reuse a small set of keys; the bound keeps hostile key floods from growing it.
    if (sensitiveCache.size >= 4096) sensitiveCache.clear()
    sensitiveCache.set(key, known)
  }
  return known
}

const sensitiveCache = new Map<string, boolean>()

function computeSensitive(key: string): boolean {
  const k = key.toLowerCase()
  if (k === 'token' || k.endsWith('_token') || k.endsWith('-token')) return true
  return SENSITIVE_SUBSTRINGS.some((s) => k.includes(s))
}

/**
 * A copy of `value` with the value of every sensitive key (see {@link isSensitiveKey}) replaced by
 * {@link REDACTED_PLACEHOLDER}, at any depth, in plain objects, arrays, `Map`s (string keys) and
 * objects with a `toJSON` (applied first, as `JSON.stringify` would). Cycles become `[Circular]`, objects past
 * {@link MAX_REDACT_NODES} `[Truncated]`, nesting past {@link MAX_REDACT_DEPTH} becomes `[MaxDepth]`. Primitives are returned unchanged.
 * Never throws: a getter or `toJSON` that throws gives {@link UNSERIALIZABLE} in its place.
 */
export function redact<T>(value: T): T {
  return redactValue(value, new Set(), 0, { left: MAX_REDACT_NODES }) as T
}

function redactValue(value: unknown, seen: Set<object>, depth: number, budget: { left: number }): unknown {
  if (value === null || typeof value !== 'object') return value
  if (seen.has(value)) return CIRCULAR
  if (depth >= MAX_REDACT_DEPTH) return '[MaxDepth]'
  if (budget.left <= 0) return '[Truncated]'
  budget.left--
  try {
    const withJson = value as { toJSON?: unknown }
    if (typeof withJson.toJSON === 'function' && !(value instanceof Map)) {
      const converted: unknown = (withJson.toJSON as () => unknown).call(value)
      if (converted !== value) return redactValue(converted, seen, depth + 1, budget)
    }
    seen.add(value)
    try {
      if (Array.isArray(value)) return value.map((item) => redactValue(item, seen, depth + 1, budget))
      const out: Record<string, unknown> = {}
      const entries: Iterable<[unknown, unknown]> = value instanceof Map ? value.entries() : Object.entries(value)
      for (const [key, item] of entries) {
        const name = String(key)
        const copied = isSensitiveKey(name) ? REDACTED_PLACEHOLDER : redactValue(item, seen, depth + 1, budget)
        // An own `__proto__` key (JSON.parse makes them) stays data; assigning it would set the prototype.
        if (name === '__proto__') Object.defineProperty(out, name, { value: copied, enumerable: true, writable: true, configurable: true })
        else out[name] = copied
      }
      return out
    } finally {
      seen.delete(value)
    }
  } catch {
    return UNSERIALIZABLE
  }
}

/**
 * JSON text of `value` that never throws (sdk.md §12.2): BigInt as its decimal string, cycles as
 * `"[Circular]"`, `undefined` at the top as `null`, and the literal `[unserializable]` when
 * serialization still fails (a throwing getter or `toJSON`).
 */
export function safeStringify(value: unknown): string {
  const stack: object[] = []
  try {
    const json = JSON.stringify(value, function (this: unknown, _key: string, item: unknown) {
      if (typeof item === 'bigint') return item.toString()
      if (item === null || typeof item !== 'object') return item
      // `this` is the holder: unwind the ancestor stack to it, then check for a cycle.
      while (stack.length > 0 && stack[stack.length - 1] !== this) stack.pop()
      if (stack.includes(item)) return CIRCULAR
      stack.push(item)
      return item
    })
    return json === undefined ? 'null' : json
  } catch {
    return UNSERIALIZABLE
  }
}

/**
 * `safeStringify(redact(value))` in one pass (the hot path of payload span events): a
 * `JSON.stringify` replacer redacts sensitive keys, writes BigInt as strings, `Map`s as objects,
 * cycles as `[Circular]`, nesting past {@link MAX_REDACT_DEPTH} as `[MaxDepth]` and objects past
 * {@link MAX_REDACT_NODES} as `[Truncated]`. {@link UNSERIALIZABLE} when a getter or `toJSON` throws.
 */
export function redactedJson(value: unknown): string {
  // Most payloads have no secret, Map, BigInt, cycle or deep nesting: then plain JSON.stringify
  // gives the same text without calling a replacer on every key (about 4× faster).
  try {
    if (!needsReplacer(value, 0, { left: MAX_REDACT_NODES })) {
      const json = JSON.stringify(value)
      return json === undefined ? 'null' : json
    }
  } catch {
    // a getter or toJSON threw: the replacer pass below reports it
  }
  return replacerJson(value)
}

/**
 * True when `JSON.stringify(value)` could differ from {@link replacerJson}: a sensitive key
 * anywhere (whatever its value), a BigInt, a `Map`, a `toJSON` other than `Date`'s, an object at
 * depth {@link MAX_REDACT_DEPTH} (which a cycle always reaches) or more than
 * {@link MAX_REDACT_NODES} objects. May throw (a getter): the caller then takes the replacer pass.
 */
function needsReplacer(value: unknown, depth: number, budget: { left: number }): boolean {
  if (typeof value === 'bigint') return true
  if (value === null || typeof value !== 'object') return false
  if (depth >= MAX_REDACT_DEPTH || --budget.left < 0 || value instanceof Map) return true
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return !(value instanceof Date)
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (needsReplacer(value[i], depth + 1, budget)) return true
    return false
  }
  const keys = Object.keys(value)
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!
    if (isSensitiveKey(key) || needsReplacer((value as Record<string, unknown>)[key], depth + 1, budget)) return true
  }
  return false
}

/** {@link redactedJson} with the redacting replacer on every value. */
function replacerJson(value: unknown): string {
  const stack: object[] = []
  let budget = MAX_REDACT_NODES
  try {
    const json = JSON.stringify(value, function (this: unknown, key: string, item: unknown) {
      if (key !== '' && isSensitiveKey(key) && !Array.isArray(this)) return REDACTED_PLACEHOLDER
      if (typeof item === 'bigint') return item.toString()
      if (item === null || typeof item !== 'object') return item
      // `this` is the holder: unwind the ancestor stack to it, then check for a cycle.
      while (stack.length > 0 && stack[stack.length - 1] !== this) stack.pop()
      if (stack.includes(item)) return CIRCULAR
      if (stack.length >= MAX_REDACT_DEPTH) return '[MaxDepth]'
      if (--budget < 0) return '[Truncated]'
      const out: object = item instanceof Map ? Object.fromEntries([...item].map(([k, v]) => [String(k), v])) : item
      stack.push(out)
      return out
    })
    return json === undefined ? 'null' : json
  } catch {
    return UNSERIALIZABLE
  }
}

/** Result of {@link redactAndTruncate}. */
export interface RedactedPayload {
  /** Redacted JSON text, at most `maxBytes` UTF-8 bytes plus {@link TRUNCATION_SUFFIX} when cut. */
  json: string
  /** True when the text was cut. */
  truncated: boolean
}

/**
 * Redacts `value`, serializes it with {@link safeStringify} and, when its UTF-8 form exceeds
 * `maxBytes`, cuts it at the last whole character within `maxBytes` bytes and appends
 * {@link TRUNCATION_SUFFIX} (sdk.md §12.2). `null` means uncapped.
 * @throws RangeError when `maxBytes` is negative or not an integer.
 */
export function redactAndTruncate(value: unknown, maxBytes: number | null): RedactedPayload {
  checkMaxBytes(maxBytes)
  return truncateJson(redactedJson(value), maxBytes)
}

function checkMaxBytes(maxBytes: number | null): void {
  if (maxBytes !== null && (!Number.isInteger(maxBytes) || maxBytes < 0)) {
    throw new RangeError(`maxBytes must be a non-negative integer or null, got ${String(maxBytes)}`)
  }
}

/**
 * Matches JSON text that may hold a sensitive key (see {@link isSensitiveKey}): one of the key
 * fragments anywhere (keys or values, any case, Unicode case folding so `K` U+212A counts as `k`),
 * or a `\u` escape (which could spell a key's letters). No match means no key is sensitive. Each
 * name of {@link SENSITIVE_SUBSTRINGS} contains one of these fragments (`access_key` was missing,
 * so a channel ref's key in a result went unredacted; the redaction test checks every name). The
 * fragments sharing a first letter are one alternative (`a(?:pi…|ccess…|uthorization)`): the
 * same language, ~20% less time per payload (the engine scans two per handler span, issue 20).
 */
const MAYBE_SENSITIVE = /a(?:pi[_-]?key|ccess_key|uthorization)|p(?:assword|rivate_key)|secret|credential|token|bearer|\\u/iu

/**
 * True when JSON text certainly has no sensitive key, so redacting it would not change it. A
 * `false` only means "maybe": run {@link redactedJson} on the value.
 * @example noSensitiveKeys('{"user":"ann"}') // true
 */
export function noSensitiveKeys(json: string): boolean {
  return !MAYBE_SENSITIVE.test(json)
}

/**
 * {@link redactAndTruncate} for a value whose JSON text is already at hand (a result about to be
 * sent): `json` itself when it has no sensitive key (no second serialization), else the redacted
 * serialization of `value`. The payload recorded is then exactly the JSON that was sent, also for
 * nesting deeper than {@link MAX_REDACT_DEPTH} (no copy is made, so the bound is not needed).
 * @throws RangeError when `maxBytes` is negative or not an integer.
 */
export function redactAndTruncateJson(json: string, value: unknown, maxBytes: number | null): RedactedPayload {
  checkMaxBytes(maxBytes)
  return truncateJson(noSensitiveKeys(json) ? json : redactedJson(value), maxBytes)
}

const utf8Encoder = new TextEncoder()
const utf8Decoder = new TextDecoder()

/**
 * {@link redactAndTruncateJson} for JSON text that came from elsewhere, its value not at hand (the
 * engine's handler spans, of the payloads it relayed): the text itself when it has no sensitive
 * key, else its value parsed and redacted; text that is not JSON is only cut.
 * @throws RangeError when `maxBytes` is negative or not an integer.
 */
export function redactAndTruncateText(text: string, maxBytes: number | null): RedactedPayload {
  checkMaxBytes(maxBytes)
  if (noSensitiveKeys(text)) return truncateJson(text, maxBytes)
  let value: unknown
  try {
    value = jsonParse(text)
  } catch {
    return truncateJson(text, maxBytes)
  }
  return truncateJson(redactedJson(value), maxBytes)
}

/** `json` cut to at most `maxBytes` UTF-8 bytes (on a character boundary) plus {@link TRUNCATION_SUFFIX}, or whole. */
function truncateJson(json: string, maxBytes: number | null): RedactedPayload {
  if (maxBytes === null || json.length <= maxBytes / 3) return { json, truncated: false }
  const bytes = utf8Encoder.encode(json)
  if (bytes.length <= maxBytes) return { json, truncated: false }
  let end = maxBytes
  // Step back over continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--
  return { json: utf8Decoder.decode(bytes.subarray(0, end)) + TRUNCATION_SUFFIX, truncated: true }
}

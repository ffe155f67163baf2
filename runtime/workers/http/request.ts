/**
 * Turning an HTTP request into the request object handlers receive (builtins.md §3.4, §3.5):
 * query string, headers and body parsing. Pure functions over strings and buffers, so they run
 * without sockets in unit tests.
 */
import { TextDecoder } from 'node:util'
import { JsonSyntaxError, MAX_JSON_DEPTH, parseJson } from 'svc-protocol/json'
import type { MultiValueMap } from 'svc-protocol/payloads/http'
import { setOwn } from './router.ts'

/** A parsed query string, form body or header set: a value seen once is a string, repeated an array. */
export type { MultiValueMap }

function addValue(target: MultiValueMap, key: string, value: string): void {
  if (!Object.hasOwn(target, key)) {
    setOwn(target, key, value)
    return
  }
  const existing = target[key]!
  if (typeof existing === 'string') setOwn(target, key, [existing, value])
  else existing.push(value)
}

/** Decodes one query component: `+` is a space; invalid escapes are kept as received. */
function decodeComponent(text: string): string {
  let out = text
  if (out.indexOf('+') !== -1) out = out.replaceAll('+', ' ')
  if (out.indexOf('%') === -1) return out
  try {
    return decodeURIComponent(out)
  } catch {
    return out
  }
}

/**
 * Parses `application/x-www-form-urlencoded` text: a query string without its `?`, or a form body
 * (builtins.md §3.4, §3.5). `+` is a space; a key seen once gives a string, a repeated key an array
 * of strings in order; a key without `=` gives `""`; empty pairs (`a=1&&b=2`) are skipped.
 *
 * @example parseUrlEncoded('tag=a&tag=b&q=x+y&flag') // { tag: ['a', 'b'], q: 'x y', flag: '' }
 */
export function parseUrlEncoded(text: string): MultiValueMap {
  const out: MultiValueMap = {}
  const length = text.length
  let start = 0
  while (start < length) {
    let end = text.indexOf('&', start)
    if (end === -1) end = length
    if (end > start) {
      const eq = text.indexOf('=', start)
      if (eq !== -1 && eq < end) {
        addValue(out, decodeComponent(text.slice(start, eq)), decodeComponent(text.slice(eq + 1, end)))
      } else {
        addValue(out, decodeComponent(text.slice(start, end)), '')
      }
    }
    start = end + 1
  }
  return out
}

/**
 * Builds the `headers` field from Node's flat `rawHeaders` list (`[name, value, name, value, …]`):
 * names lower case, a header received once gives a string, a repeated header an array in order
 * (builtins.md §3.4). Unlike `IncomingMessage.headers`, nothing is joined or dropped.
 */
export function collectHeaders(rawHeaders: readonly string[]): MultiValueMap {
  const out: MultiValueMap = {}
  for (let i = 0; i < rawHeaders.length; i += 2) {
    addValue(out, rawHeaders[i]!.toLowerCase(), rawHeaders[i + 1]!)
  }
  return out
}

/**
 * Returned by {@link parseBody} for a body that cannot be read as its content type says; the
 * worker answers 400 `INVALID_BODY` with {@link InvalidBody.message} without calling the handler
 * (builtins.md §3.5, §3.9).
 */
export class InvalidBody {
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

/** The {@link InvalidBody} of a malformed JSON body. */
export const INVALID_JSON: InvalidBody = new InvalidBody('request body is not valid JSON')

/** Strict decoders by charset label: invalid byte sequences fail instead of becoming U+FFFD. */
const decoders = new Map<string, TextDecoder>()
const utf8 = new TextDecoder('utf-8', { fatal: true })
decoders.set('utf-8', utf8)

/** A reusable strict decoder for a charset label; unknown labels fall back to UTF-8. */
function decoderFor(charset: string | undefined): TextDecoder {
  if (charset === undefined) return utf8
  let decoder = decoders.get(charset)
  if (decoder) return decoder
  try {
    decoder = new TextDecoder(charset, { fatal: true })
  } catch {
    decoder = utf8
  }
  // Labels come from clients; keep the cache bounded.
  if (decoders.size < 64) decoders.set(charset, decoder)
  return decoder
}

/** The text of `raw` in `decoder`'s encoding, or the {@link InvalidBody} naming it. */
function decode(raw: Buffer, decoder: TextDecoder): string | InvalidBody {
  try {
    return decoder.decode(raw)
  } catch {
    return new InvalidBody(`request body is not valid ${decoder.encoding === 'utf-8' ? 'UTF-8' : decoder.encoding} text`)
  }
}

/** Media type (lower case, no parameters) and the `charset` parameter of a Content-Type value. */
export function parseContentType(value: string | undefined): { type: string; charset: string | undefined } {
  if (value === undefined) return { type: '', charset: undefined }
  const semi = value.indexOf(';')
  if (semi === -1) return { type: value.trim().toLowerCase(), charset: undefined }
  const type = value.slice(0, semi).trim().toLowerCase()
  let charset: string | undefined
  for (const param of value.slice(semi + 1).split(';')) {
    const eq = param.indexOf('=')
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue
    charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase()
  }
  return { type, charset }
}

/** True for `application/json` and `application/*+json` (builtins.md §3.5, §3.6). */
export function isJsonType(type: string): boolean {
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/**
 * Parses a request body by its Content-Type (builtins.md §3.5):
 *
 * | Content type | Result |
 * |---|---|
 * | `application/json`, `application/*+json` | parsed JSON; empty (or only whitespace) gives `null`; malformed JSON gives {@link INVALID_JSON} |
 * | `text/*` | the text, decoded with the `charset` parameter (default and fallback UTF-8) |
 * | `application/x-www-form-urlencoded` | {@link parseUrlEncoded} of the UTF-8 text |
 * | anything else, or none | `null` |
 *
 * Where text is expected, bytes that are not valid in the charset give an {@link InvalidBody}
 * rather than U+FFFD replacements; JSON nesting deeper than `MAX_JSON_DEPTH` (128) levels gives one
 * too, so a hostile body cannot overflow a recursive encoder further down the line.
 *
 * @example parseBody(Buffer.from('{"a":1}'), 'application/json') // { a: 1 }
 * @example parseBody(Buffer.from([0xff]), 'text/plain') instanceof InvalidBody // true
 */
export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (contentType === undefined) return null
  const { type, charset } = parseContentType(contentType)
  if (isJsonType(type)) {
    if (raw.length === 0) return null
    const text = decode(raw, utf8)
    if (text instanceof InvalidBody) return text
    try {
      return parseJson(text)
    } catch (error) {
      // Checked only after a failed parse, so valid bodies are never scanned twice.
      if (/^\s*$/.test(text)) return null
      if (error instanceof JsonSyntaxError && error.message.startsWith('nesting deeper')) {
        return new InvalidBody(`request body nests deeper than ${MAX_JSON_DEPTH} levels`)
      }
      return INVALID_JSON
    }
  }
  if (type.startsWith('text/')) return decode(raw, decoderFor(charset))
  if (type === 'application/x-www-form-urlencoded') {
    const text = decode(raw, utf8)
    return text instanceof InvalidBody ? text : parseUrlEncoded(text)
  }
  return null
}

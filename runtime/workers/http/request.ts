/**
 * Turning an HTTP request into the request object handlers receive (builtins.md §3.4, §3.5):
 * query string, headers and body parsing. Pure functions over strings and buffers, so they run
 * without sockets in unit tests.
 */
import { TextDecoder } from 'node:util'
import { setOwn } from './router.ts'

/** A parsed query string, form body or header set: a value seen once is a string, repeated an array. */
export type MultiValueMap = Record<string, string | string[]>

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

/** Returned by {@link parseBody} for a JSON body that does not parse (answered with 400 `INVALID_BODY`). */
export const INVALID_JSON: unique symbol = Symbol('INVALID_JSON')

const decoders = new Map<string, TextDecoder>()
const utf8 = new TextDecoder('utf-8')
decoders.set('utf-8', utf8)

/** A reusable decoder for a charset label; unknown labels fall back to UTF-8. */
function decoderFor(charset: string | undefined): TextDecoder {
  if (charset === undefined) return utf8
  let decoder = decoders.get(charset)
  if (decoder) return decoder
  try {
    decoder = new TextDecoder(charset)
  } catch {
    decoder = utf8
  }
  // Labels come from clients; keep the cache bounded.
  if (decoders.size < 64) decoders.set(charset, decoder)
  return decoder
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
 * | `application/json`, `application/*+json` | parsed JSON; empty (or only whitespace) gives `null`; malformed gives {@link INVALID_JSON} |
 * | `text/*` | the text, decoded with the `charset` parameter (default and fallback UTF-8) |
 * | `application/x-www-form-urlencoded` | {@link parseUrlEncoded} of the UTF-8 text |
 * | anything else, or none | `null` |
 */
export function parseBody(raw: Buffer, contentType: string | undefined): unknown {
  if (contentType === undefined) return null
  const { type, charset } = parseContentType(contentType)
  if (isJsonType(type)) {
    if (raw.length === 0) return null
    const text = utf8.decode(raw)
    try {
      return JSON.parse(text)
    } catch {
      // Checked only after a failed parse, so valid bodies are never scanned twice.
      return /^\s*$/.test(text) ? null : INVALID_JSON
    }
  }
  if (type.startsWith('text/')) return decoderFor(charset).decode(raw)
  if (type === 'application/x-www-form-urlencoded') return parseUrlEncoded(utf8.decode(raw))
  return null
}

/**
 * JSON at the edge: a validating scanner that finds where each top-level field of a frame starts
 * and ends without building the values, so the engine can forward payloads and results it does
 * not read as the exact text it received (no decode, no re-encode), and the guards every value
 * from outside passes: a nesting limit and well-formed identifiers.
 *
 * The scanner accepts exactly what `JSON.parse` accepts (RFC 8259), and additionally refuses
 * nesting deeper than the limit it is given, because deep values crash recursive encoders
 * (`JSON.stringify` overflows the stack at a few thousand levels) on every side of a call.
 */

/** Deepest nesting of arrays and objects accepted in a value from outside (an HTTP body, a payload), levels. */
export const MAX_JSON_DEPTH = 128

/**
 * Deepest nesting accepted in a protocol frame: {@link MAX_JSON_DEPTH} plus room for the objects
 * the engine and the built-ins wrap values in (the frame itself, an HTTP request object around a
 * body, a response descriptor, a middleware input), so a value accepted at one edge is never
 * refused at the next hop.
 */
export const MAX_FRAME_DEPTH = MAX_JSON_DEPTH + 16

/** A JSON text that is not well formed, or nests too deeply; `index` is where scanning stopped. */
export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError'
  readonly index: number
  constructor(message: string, index: number) {
    super(message)
    this.index = index
  }
}

const OBJECT = 1
const ARRAY = 2
const SHARED_STACK = new Uint8Array(1024)

function fail(s: string, i: number, what: string): never {
  if (i >= s.length) throw new JsonSyntaxError(`unexpected end of JSON (${what})`, i)
  throw new JsonSyntaxError(`unexpected character ${JSON.stringify(s[i])} at position ${i} (${what})`, i)
}

function skipWhitespace(s: string, i: number): number {
  for (;;) {
    const c = s.charCodeAt(i)
    if (c === 32 || c === 10 || c === 13 || c === 9) i++
    else return i
  }
}

function isHex(c: number): boolean {
  return (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70)
}

/** `s[i]` is `"`; returns the index after the closing quote. */
function scanString(s: string, i: number): number {
  const n = s.length
  i++
  for (;;) {
    if (i >= n) fail(s, i, 'unterminated string')
    const c = s.charCodeAt(i)
    if (c === 34) return i + 1
    if (c === 92) {
      const e = s.charCodeAt(i + 1)
      if (e === 117) {
        if (!(isHex(s.charCodeAt(i + 2)) && isHex(s.charCodeAt(i + 3)) && isHex(s.charCodeAt(i + 4)) && isHex(s.charCodeAt(i + 5)))) {
          fail(s, i, 'bad \\u escape')
        }
        i += 6
      } else if (e === 34 || e === 92 || e === 47 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116) {
        i += 2
      } else {
        fail(s, i + 1, 'bad escape')
      }
    } else if (c < 32) {
      fail(s, i, 'control character in string')
    } else {
      i++
    }
  }
}

function scanDigits(s: string, i: number): number {
  const start = i
  for (;;) {
    const c = s.charCodeAt(i)
    if (c >= 48 && c <= 57) i++
    else break
  }
  if (i === start) fail(s, i, 'digit expected')
  return i
}

function scanNumber(s: string, i: number): number {
  if (s.charCodeAt(i) === 45) i++
  const c = s.charCodeAt(i)
  if (c === 48) i++
  else if (c >= 49 && c <= 57) i = scanDigits(s, i)
  else fail(s, i, 'digit expected')
  if (s.charCodeAt(i) === 46) i = scanDigits(s, i + 1)
  const e = s.charCodeAt(i)
  if (e === 101 || e === 69) {
    i++
    const sign = s.charCodeAt(i)
    if (sign === 43 || sign === 45) i++
    i = scanDigits(s, i)
  }
  return i
}

function scanLiteral(s: string, i: number, word: string): number {
  if (s.startsWith(word, i)) return i + word.length
  return fail(s, i, 'value expected')
}

/** After `{` or `,` in an object: scans `"key"` and `:`, returns the index of the value. */
function scanKey(s: string, i: number): number {
  if (s.charCodeAt(i) !== 34) fail(s, i, 'property name expected')
  i = skipWhitespace(s, scanString(s, i))
  if (s.charCodeAt(i) !== 58) fail(s, i, "':' expected")
  return i + 1
}

/**
 * Scans one JSON value that starts at `start` (leading whitespace allowed) and returns the index
 * just after it. Iterative, so any depth up to `maxDepth` costs no stack. `outerDepth` is the
 * nesting the value already sits in (its containers count towards `maxDepth`).
 *
 * @throws JsonSyntaxError when the text is not a well-formed value or nests deeper than `maxDepth`.
 */
export function scanValue(s: string, start: number, maxDepth: number = MAX_JSON_DEPTH, outerDepth = 0): number {
  // Not re-entrant, so one buffer serves every call that fits in it.
  const stack = maxDepth < SHARED_STACK.length ? SHARED_STACK : new Uint8Array(maxDepth + 1)
  let depth = outerDepth
  const base = outerDepth
  let i = start
  for (;;) {
    // A value.
    i = skipWhitespace(s, i)
    const c = s.charCodeAt(i)
    if (c === 123 || c === 91) {
      if (depth === maxDepth) throw new JsonSyntaxError(`nesting deeper than ${maxDepth} levels`, i)
      i = skipWhitespace(s, i + 1)
      if (c === 123) {
        stack[depth++] = OBJECT
        if (s.charCodeAt(i) === 125) {
          i++
          depth--
        } else {
          i = scanKey(s, i)
          continue
        }
      } else {
        stack[depth++] = ARRAY
        if (s.charCodeAt(i) === 93) {
          i++
          depth--
        } else {
          continue
        }
      }
    } else if (c === 34) i = scanString(s, i)
    else if (c === 45 || (c >= 48 && c <= 57)) i = scanNumber(s, i)
    else if (c === 116) i = scanLiteral(s, i, 'true')
    else if (c === 102) i = scanLiteral(s, i, 'false')
    else if (c === 110) i = scanLiteral(s, i, 'null')
    else fail(s, i, 'value expected')
    // After a value: close containers until one continues with a comma.
    for (;;) {
      if (depth === base) return i
      i = skipWhitespace(s, i)
      const d = s.charCodeAt(i)
      const kind = stack[depth - 1]
      if (d === 44) {
        i = skipWhitespace(s, i + 1)
        if (kind === OBJECT) i = scanKey(s, i)
        break
      }
      if ((d === 125 && kind === OBJECT) || (d === 93 && kind === ARRAY)) {
        i++
        depth--
        continue
      }
      fail(s, i, kind === OBJECT ? "',' or '}' expected" : "',' or ']' expected")
    }
  }
}

/**
 * Checks that `text` is one well-formed JSON value nesting at most `maxDepth` levels.
 * @throws JsonSyntaxError
 */
export function assertJson(text: string, maxDepth: number = MAX_JSON_DEPTH): void {
  const end = skipWhitespace(text, scanValue(text, 0, maxDepth))
  if (end !== text.length) fail(text, end, 'end of JSON expected')
}

/** {@link jsonParse} with the nesting limit of {@link scanValue} checked first. @throws JsonSyntaxError */
export function parseJson(text: string, maxDepth: number = MAX_JSON_DEPTH): unknown {
  assertJson(text, maxDepth)
  return jsonParse(text)
}

/**
 * `JSON.parse(text)`, with escaped object keys decoded right on every V8.
 *
 * V8 12.8 and later (Node 24 to 26 at least; Chrome) can read an escaped key such as `"caf\u00e9"`,
 * `"a\"b"` or `"\ude00"` as another key of the same length once some object, in this text or an
 * earlier one, has a key holding a character JSON escapes (nodejs/node#63785): the value silently
 * lands under the wrong name. A text without a backslash in any key cannot meet the bug and goes
 * to `JSON.parse` as it is (one native `indexOf` for most texts). Any other text is checked by
 * `JSON.parse`, then built again here from its tokens, each key decoded on its own.
 *
 * Use it for every JSON text that did not come from this process's own `JSON.stringify` of a
 * value it still holds: frames, payloads, stored values, request bodies.
 *
 * @throws SyntaxError exactly as `JSON.parse` does.
 */
export function jsonParse(text: string): unknown {
  const value = JSON.parse(text) as unknown
  if (typeof value !== 'object' || value === null || text.indexOf('\\') === -1 || !hasEscapedKey(text)) return value
  return buildJson(text)
}

/**
 * True when some string in `s` that is followed by `:` holds a backslash, that is, when a
 * well-formed JSON text has an escaped object key. Linear: both cursors only move forward.
 */
function hasEscapedKey(s: string): boolean {
  let open = s.indexOf('"')
  let back = open === -1 ? -1 : s.indexOf('\\', open)
  while (open !== -1) {
    let j = open + 1
    let escaped = false
    let close = s.indexOf('"', j)
    for (;;) {
      if (close === -1) return false
      if (back !== -1 && back < j) back = s.indexOf('\\', j)
      if (back === -1 || back > close) break
      escaped = true
      j = back + 2
      if (close < j) close = s.indexOf('"', j)
    }
    if (escaped && s.charCodeAt(skipWhitespace(s, close + 1)) === 58) return true
    open = s.indexOf('"', close + 1)
  }
  return false
}

/** A container {@link buildJson} is filling, and the key its next value goes under. */
interface Building {
  container: Record<string, unknown> | unknown[]
  key: string
}

/** The string token `s[start, end)` decoded: the text between the quotes when it has no escape. */
function decodeString(s: string, start: number, end: number): string {
  const inner = s.slice(start + 1, end - 1)
  // A string alone is not an object key, so JSON.parse decodes it right.
  return inner.indexOf('\\') === -1 ? inner : (JSON.parse(s.slice(start, end)) as string)
}

/** After `{` or `,` in an object: the key and the index of its value. */
function readKey(s: string, i: number, into: Building): number {
  const end = scanString(s, i)
  into.key = decodeString(s, i, end)
  return skipWhitespace(s, skipWhitespace(s, end) + 1)
}

function put(into: Building, value: unknown): void {
  const { container, key } = into
  if (Array.isArray(container)) container.push(value)
  // JSON.parse makes `__proto__` an own property; assigning it would set the prototype instead.
  else if (key === '__proto__') Object.defineProperty(container, key, { value, writable: true, enumerable: true, configurable: true })
  else container[key] = value
}

/** The value of a text `JSON.parse` accepted, built without V8's key lookup. Iterative: any depth. */
function buildJson(s: string): unknown {
  const stack: Building[] = []
  let i = 0
  for (;;) {
    i = skipWhitespace(s, i)
    const c = s.charCodeAt(i)
    let value: unknown
    if (c === 123 || c === 91) {
      const container: Building = { container: c === 123 ? {} : [], key: '' }
      i = skipWhitespace(s, i + 1)
      if (s.charCodeAt(i) === (c === 123 ? 125 : 93)) {
        value = container.container
        i++
      } else {
        stack.push(container)
        if (c === 123) i = readKey(s, i, container)
        continue
      }
    } else if (c === 34) {
      const end = scanString(s, i)
      value = decodeString(s, i, end)
      i = end
    } else if (c === 116) {
      value = true
      i += 4
    } else if (c === 102) {
      value = false
      i += 5
    } else if (c === 110) {
      value = null
      i += 4
    } else {
      const end = scanNumber(s, i)
      value = Number(s.slice(i, end))
      i = end
    }
    // Put the value in its container; close containers until one continues after a comma.
    for (;;) {
      const top = stack[stack.length - 1]
      if (top === undefined) return value
      put(top, value)
      i = skipWhitespace(s, i)
      if (s.charCodeAt(i) === 44) {
        i = skipWhitespace(s, i + 1)
        if (!Array.isArray(top.container)) i = readKey(s, i, top)
        break
      }
      i++
      stack.pop()
      value = top.container
    }
  }
}

/**
 * The top-level members of a JSON object text: for each, the decoded key and the `[start, end)`
 * span of its value in `text`. A repeated key keeps its last value, as `JSON.parse` does.
 *
 * @throws JsonSyntaxError when `text` is not one well-formed object nesting at most `maxDepth`
 *   levels (the object itself counts as one).
 * @returns undefined when `text` is well-formed JSON but not an object.
 */
export function scanObjectMembers(text: string, maxDepth: number = MAX_JSON_DEPTH): Map<string, [number, number]> | undefined {
  if (!SLOW_CHARACTER.test(text)) {
    const members = plainObjectMembers(text, maxDepth)
    if (members !== undefined) return members
  }
  return fullObjectMembers(text, maxDepth)
}

/**
 * What only the full scanner reads right: a backslash (an escape, anywhere) or a control character
 * (tab, newline and carriage return are whitespace outside strings and refused inside them).
 */
const SLOW_CHARACTER = /[\u0000-\u001f\\]/

/**
 * True when `text` holds no backslash and no control character (U+0000–U+001F): a text the plain
 * scanners ({@link scanPlainValue}) read, strings ending at the next `"`. Compact JSON written by
 * `JSON.stringify` is plain unless one of its strings needs an escape.
 */
export function isPlainText(text: string): boolean {
  return !SLOW_CHARACTER.test(text)
}

/**
 * {@link scanObjectMembers} for a text without a backslash or a control character (every frame
 * svc's own encoders write: compact, escapes only where a string needs one): a string then ends at
 * the next `"`, found by the native `indexOf` instead of a character at a time, and the text holds
 * no escaped key. Everything else — structure, numbers, literals, the nesting limit — is checked as
 * the full scanner checks it. Returns undefined for any text it does not accept, so the full
 * scanner gives the verdict and the error.
 */
function plainObjectMembers(s: string, maxDepth: number): Map<string, [number, number]> | undefined {
  const n = s.length
  let i = skipWhitespace(s, 0)
  if (s.charCodeAt(i) !== 123 || maxDepth < 1) return undefined
  const members = new Map<string, [number, number]>()
  i = skipWhitespace(s, i + 1)
  if (s.charCodeAt(i) === 125) return skipWhitespace(s, i + 1) === n ? members : undefined
  for (;;) {
    if (s.charCodeAt(i) !== 34) return undefined
    const keyEnd = s.indexOf('"', i + 1)
    if (keyEnd === -1) return undefined
    const key = s.slice(i + 1, keyEnd)
    i = skipWhitespace(s, keyEnd + 1)
    if (s.charCodeAt(i) !== 58) return undefined
    const start = skipWhitespace(s, i + 1)
    const end = scanPlainValue(s, start, maxDepth)
    if (end === -1) return undefined
    members.set(key, [start, end])
    i = skipWhitespace(s, end)
    const c = s.charCodeAt(i)
    if (c === 44) {
      i = skipWhitespace(s, i + 1)
      continue
    }
    if (c === 125) break
    return undefined
  }
  return skipWhitespace(s, i + 1) === n ? members : undefined
}

/**
 * The end of the JSON value at `s[start]` (spaces before it skipped) in a text
 * {@link isPlainText} accepted, or -1 when it is not one well-formed value or nests deeper than
 * `maxDepth` counting the one level of the object it is a member of — the verdict of
 * {@link scanValue}`(s, start, maxDepth, 1)`, without its error. Iterative: any depth costs no stack.
 * Only for plain texts: a string ends at its next `"` here.
 */
export function scanPlainValue(s: string, start: number, maxDepth: number): number {
  const stack = maxDepth < SHARED_STACK.length ? SHARED_STACK : new Uint8Array(maxDepth + 1)
  let depth = 1
  let i = start
  for (;;) {
    // A value.
    i = skipWhitespace(s, i)
    const c = s.charCodeAt(i)
    if (c === 34) {
      const close = s.indexOf('"', i + 1)
      if (close === -1) return -1
      i = close + 1
    } else if (c === 123 || c === 91) {
      if (depth === maxDepth) return -1
      i = skipWhitespace(s, i + 1)
      const d = s.charCodeAt(i)
      if (c === 123) {
        if (d === 125) i++
        else {
          stack[depth++] = OBJECT
          i = plainKey(s, i)
          if (i === -1) return -1
          continue
        }
      } else if (d === 93) i++
      else {
        stack[depth++] = ARRAY
        continue
      }
    } else if (c === 45 || (c >= 48 && c <= 57)) {
      i = plainNumberEnd(s, i)
      if (i === -1) return -1
    } else if (c === 116) {
      if (!s.startsWith('true', i)) return -1
      i += 4
    } else if (c === 102) {
      if (!s.startsWith('false', i)) return -1
      i += 5
    } else if (c === 110) {
      if (!s.startsWith('null', i)) return -1
      i += 4
    } else return -1
    // After a value: close containers until one continues with a comma.
    for (;;) {
      if (depth === 1) return i
      i = skipWhitespace(s, i)
      const d = s.charCodeAt(i)
      const kind = stack[depth - 1]
      if (d === 44) {
        i = skipWhitespace(s, i + 1)
        if (kind === OBJECT) {
          i = plainKey(s, i)
          if (i === -1) return -1
        }
        break
      }
      if ((d === 125 && kind === OBJECT) || (d === 93 && kind === ARRAY)) {
        i++
        depth--
        continue
      }
      return -1
    }
  }
}

/** `"key"` and `:` of a plain text at `s[i]`: the index after the colon, or -1. */
function plainKey(s: string, i: number): number {
  if (s.charCodeAt(i) !== 34) return -1
  const close = s.indexOf('"', i + 1)
  if (close === -1) return -1
  i = skipWhitespace(s, close + 1)
  return s.charCodeAt(i) === 58 ? i + 1 : -1
}

/** The end of the number at `s[i]` (RFC 8259 grammar), or -1. */
function plainNumberEnd(s: string, i: number): number {
  if (s.charCodeAt(i) === 45) i++
  let c = s.charCodeAt(i)
  if (c === 48) c = s.charCodeAt(++i)
  else if (c >= 49 && c <= 57) {
    do c = s.charCodeAt(++i)
    while (c >= 48 && c <= 57)
  } else return -1
  if (c === 46) {
    c = s.charCodeAt(++i)
    if (!(c >= 48 && c <= 57)) return -1
    do c = s.charCodeAt(++i)
    while (c >= 48 && c <= 57)
  }
  if (c === 101 || c === 69) {
    c = s.charCodeAt(++i)
    if (c === 43 || c === 45) c = s.charCodeAt(++i)
    if (!(c >= 48 && c <= 57)) return -1
    do c = s.charCodeAt(++i)
    while (c >= 48 && c <= 57)
  }
  return i
}

/** {@link scanObjectMembers} a character at a time: any text, with the error where it fails. */
function fullObjectMembers(text: string, maxDepth: number): Map<string, [number, number]> | undefined {
  let i = skipWhitespace(text, 0)
  if (text.charCodeAt(i) !== 123) {
    assertJson(text, maxDepth)
    return undefined
  }
  const members = new Map<string, [number, number]>()
  i = skipWhitespace(text, i + 1)
  if (text.charCodeAt(i) === 125) {
    i = skipWhitespace(text, i + 1)
    if (i !== text.length) fail(text, i, 'end of JSON expected')
    return members
  }
  for (;;) {
    if (text.charCodeAt(i) !== 34) fail(text, i, 'property name expected')
    const keyEnd = scanString(text, i)
    const raw = text.slice(i + 1, keyEnd - 1)
    const key = raw.includes('\\') ? (JSON.parse(text.slice(i, keyEnd)) as string) : raw
    i = skipWhitespace(text, keyEnd)
    if (text.charCodeAt(i) !== 58) fail(text, i, "':' expected")
    const start = skipWhitespace(text, i + 1)
    const end = scanValue(text, start, maxDepth, 1)
    members.set(key, [start, end])
    i = skipWhitespace(text, end)
    const c = text.charCodeAt(i)
    if (c === 44) {
      i = skipWhitespace(text, i + 1)
      continue
    }
    if (c === 125) break
    fail(text, i, "',' or '}' expected")
  }
  i = skipWhitespace(text, i + 1)
  if (i !== text.length) fail(text, i, 'end of JSON expected')
  return members
}

/**
 * JSON text with object keys sorted at every level, so that two values equal as JSON give the
 * same text whatever their key order (metadata rules, seed hashes).
 * @example canonicalJson({ b: 1, a: [true] }) // '{"a":[true],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

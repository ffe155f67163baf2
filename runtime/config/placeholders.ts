/**
 * Placeholder expansion in configuration values (builtins.md §2.8, protocol.md §12.1).
 *
 * | Form | Result |
 * |---|---|
 * | `${NAME}` | value of `NAME`; unset or empty fails with `EXPAND_FAILED` |
 * | `${NAME:default}`, `${NAME:-default}` | value of `NAME`, or `default` when unset or empty |
 * | `$${` | a literal `${` |
 */
import { isSinglePlaceholder } from 'svc-protocol/settings-schema'

/** The environment placeholders read from: `process.env` or a test's own map. */
export type Env = Readonly<Record<string, string | undefined>>

/**
 * The part of a JSON Schema that expansion looks at: where the schema expects an integer, number
 * or boolean, a string made of exactly one placeholder is converted to that type after expansion.
 */
export interface SchemaHint {
  type?: string | readonly string[]
  properties?: Readonly<Record<string, SchemaHint>>
  additionalProperties?: SchemaHint | boolean
  items?: SchemaHint
  anyOf?: readonly SchemaHint[]
  oneOf?: readonly SchemaHint[]
}

/** Where inside a value a failure happened: object keys and array indexes from the root. */
export type ValuePath = ReadonlyArray<string | number>

/**
 * Expansion failed: a variable without default is unset or empty, or a `${` does not start a valid
 * placeholder. `code` is `EXPAND_FAILED` (builtins.md §2.8).
 */
export class ExpandError extends Error {
  override readonly name = 'ExpandError'
  readonly code = 'EXPAND_FAILED'
  /** The variable that is not set, when that is the failure. */
  readonly variable: string | undefined
  /** Path of the failing string inside the expanded value (empty for a bare string). */
  readonly path: ValuePath

  constructor(message: string, variable: string | undefined, path: ValuePath = []) {
    super(message)
    this.variable = variable
    this.path = path
  }
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Expands the placeholders of one string.
 *
 * @throws {ExpandError} `environment variable NAME is not set`, or `invalid placeholder '${…'`.
 * @example expandString('http://${HOST:localhost}:${PORT:-3111}', { PORT: '8080' }) // 'http://localhost:8080'
 */
export function expandString(text: string, env: Env): string {
  if (!text.includes('$')) return text
  let out = ''
  let i = 0
  while (i < text.length) {
    if (text.startsWith('$${', i)) {
      out += '${'
      i += 3
      continue
    }
    if (text.startsWith('${', i)) {
      const close = text.indexOf('}', i + 2)
      if (close < 0) throw invalidPlaceholder(text.slice(i))
      const body = text.slice(i + 2, close)
      const colon = body.indexOf(':')
      const name = colon < 0 ? body : body.slice(0, colon)
      if (!NAME.test(name)) throw invalidPlaceholder(text.slice(i, close + 1))
      let fallback: string | undefined
      if (colon >= 0) {
        fallback = body.slice(colon + 1)
        if (fallback.startsWith('-')) fallback = fallback.slice(1)
      }
      const value = env[name]
      if (value === undefined || value === '') {
        if (fallback === undefined) throw new ExpandError(`environment variable ${name} is not set`, name)
        out += fallback
      } else {
        out += value
      }
      i = close + 1
      continue
    }
    out += text[i]
    i += 1
  }
  return out
}

function invalidPlaceholder(fragment: string): ExpandError {
  return new ExpandError(
    `invalid placeholder '${fragment}': expected \${NAME}, \${NAME:default} or \${NAME:-default} (write $\${ for a literal \${)`,
    undefined,
  )
}

/** True when `text` is exactly one placeholder, the only case that may change type (§2.8): the settings-schema contract's check, shared with the console. */
export { isSinglePlaceholder }

/** The scalar types a schema hint accepts at one position, `anyOf`/`oneOf` branches included. */
function typesOf(hint: SchemaHint | undefined): Set<string> {
  const types = new Set<string>()
  if (!hint) return types
  if (typeof hint.type === 'string') types.add(hint.type)
  else if (Array.isArray(hint.type)) for (const t of hint.type) types.add(t)
  for (const branch of [...(hint.anyOf ?? []), ...(hint.oneOf ?? [])]) for (const t of typesOf(branch)) types.add(t)
  return types
}

function childHint(hint: SchemaHint | undefined, key: string | number): SchemaHint | undefined {
  if (!hint) return undefined
  if (typeof key === 'number') {
    if (hint.items) return hint.items
  } else {
    const own = hint.properties?.[key]
    if (own) return own
    if (typeof hint.additionalProperties === 'object') return hint.additionalProperties
  }
  for (const branch of [...(hint.anyOf ?? []), ...(hint.oneOf ?? [])]) {
    const found = childHint(branch, key)
    if (found) return found
  }
  return undefined
}

/**
 * Converts the expansion of a single placeholder to the scalar type the hint expects. A position
 * that also accepts strings keeps the string; text that does not parse is left as it is, so that
 * validation reports it.
 */
export function convertScalar(text: string, hint: SchemaHint | undefined): unknown {
  const types = typesOf(hint)
  if (types.size === 0 || types.has('string')) return text
  if (types.has('integer') && /^[+-]?\d+$/.test(text)) {
    const n = Number(text)
    if (Number.isSafeInteger(n)) return n
  }
  if (types.has('number') && text.trim() !== '') {
    const n = Number(text)
    if (Number.isFinite(n)) return n
  }
  if (types.has('boolean')) {
    const lower = text.toLowerCase()
    if (lower === 'true') return true
    if (lower === 'false') return false
  }
  if (types.has('null') && (text === '' || text === 'null')) return null
  return text
}

/**
 * Expands every string inside a JSON-like value (objects and arrays are copied, never mutated).
 * With a schema hint, a string that is exactly one placeholder in a position where the schema
 * expects an integer, number or boolean is converted to that type (`port: ${HTTP_PORT:3111}`
 * yields the integer 3111). Built-in workers call this on their settings each time they read them
 * (builtins.md §2.7, §2.8).
 *
 * @throws {ExpandError} with `path` set to the failing string's place inside `value`.
 * @example
 * expandPlaceholders({ port: '${HTTP_PORT:3111}' }, {}, { type: 'object', properties: { port: { type: 'integer' } } })
 * // { port: 3111 }
 */
export function expandPlaceholders(value: unknown, env: Env, schemaHint?: SchemaHint): unknown {
  return expandAt(value, env, schemaHint, [])
}

function expandAt(value: unknown, env: Env, hint: SchemaHint | undefined, path: Array<string | number>): unknown {
  if (typeof value === 'string') {
    let expanded: string
    try {
      expanded = expandString(value, env)
    } catch (err) {
      if (err instanceof ExpandError) throw new ExpandError(err.message, err.variable, [...path])
      throw err
    }
    return isSinglePlaceholder(value) ? convertScalar(expanded, hint) : expanded
  }
  if (Array.isArray(value)) {
    return value.map((item, index) => expandAt(item, env, childHint(hint, index), [...path, index]))
  }
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) {
      const expanded = expandAt(item, env, childHint(hint, key), [...path, key])
      // An own `__proto__` key (JSON.parse makes them) stays a key for the schema to judge; assigning it would set the prototype and drop it.
      if (key === '__proto__') Object.defineProperty(out, key, { value: expanded, enumerable: true, writable: true, configurable: true })
      else out[key] = expanded
    }
    return out
  }
  return value
}

/**
 * Value mapping of the database worker (builtins.md §10.3), shared by every driver.
 */
import type { Parameter, Row } from './types.ts'

/** How a driver binds booleans and integers. */
export interface ParameterDialect {
  /** SQLite has no boolean type: true → 1, false → 0. */
  booleansAsIntegers: boolean
}

/**
 * Maps one JSON parameter (§10.3): null → NULL; boolean → boolean (or 1/0); integral number →
 * integer (a bigint, so that drivers bind it as an integer, not a double); other number → double;
 * string → text; array or object → its JSON text.
 * @throws RangeError when an array or object nests too deeply to be written as JSON.
 */
export function toParameter(value: unknown, dialect: ParameterDialect): Parameter {
  if (value === null || value === undefined) return null
  switch (typeof value) {
    case 'boolean':
      return dialect.booleansAsIntegers ? (value ? 1 : 0) : value
    case 'number':
      return Number.isSafeInteger(value) ? BigInt(value) : value
    case 'string':
      return value
    case 'object':
      return JSON.stringify(value)
    default:
      return String(value)
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * Maps one column value (§10.3): integers within ±(2^53 − 1) → number, larger → string; bytes →
 * base64; a Date → ISO 8601; arrays element by element; numbers, strings, booleans and parsed JSON as they are; NULL → null.
 * Drivers turn decimals, dates and times into strings before this (they know the column type).
 */
export function fromColumn(value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (Array.isArray(value)) return value.map(fromColumn)
  if (typeof value === 'bigint') return value <= MAX_SAFE && value >= -MAX_SAFE ? Number(value) : value.toString()
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value)
  return value
}

/**
 * A row with every value mapped by {@link fromColumn}. Column names are the statement's own (`AS
 * "__proto__"` included): each becomes an own data property, never the prototype.
 */
export function mapRow(row: Record<string, unknown>): Row {
  const out: Row = {}
  for (const key of Object.keys(row)) setColumn(out, key, fromColumn(row[key]))
  return out
}

/**
 * A row read as an array of values (`rowMode: 'array'`), named by `names`, each value mapped by
 * {@link fromColumn}; a name seen twice keeps its last value.
 */
export function rowOf(names: readonly string[], values: readonly unknown[]): Row {
  const out: Row = {}
  for (let i = 0; i < names.length; i++) setColumn(out, names[i]!, fromColumn(values[i]))
  return out
}

function setColumn(row: Row, name: string, value: unknown): void {
  // Assigning `__proto__` would set the row's prototype and lose the column.
  if (name === '__proto__') Object.defineProperty(row, name, { value, enumerable: true, writable: true, configurable: true })
  else row[name] = value
}

/**
 * A SQL date-time text (`2024-01-02 03:04:05.5+02`, `2024-01-02 03:04:05`) as ISO 8601 / RFC 3339:
 * `T` between date and time, a `±hh` offset widened to `±hh:mm`. Other texts (infinity, BC dates)
 * are returned unchanged.
 */
export function isoDateTime(text: string): string {
  const match = /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-]\d\d)?(?::?(\d\d))?(?::?(\d\d))?$/.exec(text)
  if (!match) return text
  const [, date, time, offsetHours, offsetMinutes] = match
  if (offsetHours === undefined) return `${date}T${time}`
  const offset = `${offsetHours}:${offsetMinutes ?? '00'}`
  return `${date}T${time}${offset === '+00:00' ? 'Z' : offset}`
}

/** The first word of a statement, upper-cased, after whitespace and comments (`--`, `/* *\/`, `#`). */
export function firstKeyword(sql: string): string {
  let i = 0
  for (;;) {
    while (i < sql.length && /\s/.test(sql[i]!)) i++
    if (sql.startsWith('--', i) || sql[i] === '#') {
      const end = sql.indexOf('\n', i)
      if (end < 0) return ''
      i = end + 1
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2)
      if (end < 0) return ''
      i = end + 2
    } else break
  }
  const match = /^[A-Za-z_]+/.exec(sql.slice(i, i + 64))
  return match ? match[0].toUpperCase() : ''
}

/** True for INSERT and REPLACE statements, the ones `last_insert_id` reports on (SQLite, MySQL). */
export function isInsert(sql: string): boolean {
  const keyword = firstKeyword(sql)
  return keyword === 'INSERT' || keyword === 'REPLACE'
}

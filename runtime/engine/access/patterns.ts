/**
 * Id patterns of access control (protocol.md §13.3): a pattern matches a whole id and `*` matches
 * any run of characters (`api::*`, `*::public`, `api::*::read`, `*`). Patterns are compiled once,
 * when the configuration or an auth result is read, never per invocation.
 */

/** A compiled pattern: `test(id)` is true when the pattern matches the whole id. */
export interface IdPattern {
  readonly source: string
  test(id: string): boolean
}

/**
 * Compiles `pattern`. Literal patterns compare by equality; `*` becomes "any run of characters".
 *
 * @example compilePattern('api::*').test('api::orders::list') // true
 */
export function compilePattern(pattern: string): IdPattern {
  if (!pattern.includes('*')) return { source: pattern, test: (id) => id === pattern }
  const parts = pattern.split('*')
  // prefix*suffix and friends without a regular expression: check the fixed parts in order.
  const first = parts[0]!
  const last = parts[parts.length - 1]!
  const middle = parts.slice(1, -1)
  const fixed = first.length + last.length
  return {
    source: pattern,
    test(id: string): boolean {
      if (id.length < fixed || !id.startsWith(first) || !id.endsWith(last)) return false
      let at = first.length
      const end = id.length - last.length
      for (const part of middle) {
        if (part === '') continue
        const found = id.indexOf(part, at)
        if (found < 0 || found + part.length > end) return false
        at = found + part.length
      }
      return true
    },
  }
}

/**
 * The pattern a string rule of `expose_functions` holds: bare (`engine::functions::list`) or
 * wrapped as `match("api::*")` / `match('api::*')` (protocol.md §13.3). Undefined for a wrapper
 * that is not closed properly, which the configuration loader reports.
 */
export function unwrapMatch(rule: string): string | undefined {
  const m = /^match\((["'])(.*)\1\)$/.exec(rule.trim())
  if (m) return m[2]
  if (/^match\(/.test(rule.trim())) return undefined
  return rule.trim()
}

/**
 * The Logs page's search box (issue 21 "In the console"): words search the body (server-side, the
 * `search` of `engine::logs::list`), `key=value` terms match attributes (in the page, over the newest
 * {@link ATTRIBUTE_SCAN} records the other filters let through: `engine::logs::list` has no attribute
 * filter). A key matches an attribute of that name or one ending in `.<key>` (`cart=c-7` finds
 * `log.data.cart`), in the record's attributes or its resource; values compare as text, ignoring case.
 */
import type { LogRecord } from '../../api/types.ts'

/** Records read when attribute terms are given (the most `engine::logs::list` answers at once). */
export const ATTRIBUTE_SCAN = 1000
/** Longest search text used; the rest is ignored. */
export const MAX_SEARCH_CHARS = 1000
/** Most attribute terms used. */
export const MAX_TERMS = 16

/** A parsed search: the body text and the attribute terms. */
export interface LogSearch {
  text: string
  terms: { key: string; value: string }[]
}

/**
 * Splits a search into body text and `key=value` terms (a term is one word holding `=` with a key
 * before it; `"…"` quotes a value with spaces).
 * @example parseLogSearch('timeout cart=c-7') // {text: 'timeout', terms: [{key: 'cart', value: 'c-7'}]}
 */
export function parseLogSearch(input: string): LogSearch {
  const source = input.slice(0, MAX_SEARCH_CHARS)
  const words: string[] = []
  const terms: LogSearch['terms'] = []
  const token = /([^\s="]+)="([^"]*)"?|(\S+)/g
  for (let m = token.exec(source); m !== null; m = token.exec(source)) {
    if (m[1] !== undefined) {
      if (terms.length < MAX_TERMS) terms.push({ key: m[1], value: m[2] ?? '' })
      continue
    }
    const word = m[3]!
    const eq = word.indexOf('=')
    if (eq > 0 && terms.length < MAX_TERMS) terms.push({ key: word.slice(0, eq), value: word.slice(eq + 1) })
    else words.push(word)
  }
  return { text: words.join(' '), terms }
}

/** True when `record` has every term (see the module comment for the rules). */
export function matchesTerms(record: LogRecord, terms: LogSearch['terms']): boolean {
  return terms.every((term) => hasTerm(record.attributes, term) || hasTerm(record.resource, term))
}

function hasTerm(bag: Record<string, unknown> | undefined, term: { key: string; value: string }): boolean {
  if (bag === undefined || bag === null || typeof bag !== 'object') return false
  const want = term.value.toLowerCase()
  const suffix = `.${term.key}`
  for (const key of Object.keys(bag)) {
    if (key !== term.key && !key.endsWith(suffix)) continue
    const value = bag[key]
    const text = typeof value === 'string' ? value : JSON.stringify(value) ?? ''
    if (text.toLowerCase() === want) return true
  }
  return false
}

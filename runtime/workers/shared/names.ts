/**
 * Names a user chooses that become keys of plain objects: queue names (`queue_configs`), database
 * names (`databases`), and whatever a settings entry, YAML file or JSON value keys by them. Three
 * names reach `Object.prototype` instead of an own property when assigned or read back by most
 * JavaScript code — the `__proto__` setter, and `constructor` / `prototype` on the way to it — so
 * they are refused as such names (issue 16). Inside the built-ins, user-chosen keys live in Maps
 * or are read with `Object.hasOwn`, so any other name (`toString`, `valueOf`) is an ordinary one.
 */

/** `__proto__`, `constructor` and `prototype`. */
export const RESERVED_KEY_NAMES: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype'])

/** True for a name in {@link RESERVED_KEY_NAMES}. */
export function isReservedKeyName(name: string): boolean {
  return RESERVED_KEY_NAMES.has(name)
}

/**
 * A JSON Schema `pattern` that accepts what `pattern` (anchored with `^…$`) accepts except the
 * reserved names, for `propertyNames` of settings schemas.
 * @example notReservedPattern('^[A-Za-z0-9_-]{1,64}$') // '^(?!(?:__proto__|constructor|prototype)$)[A-Za-z0-9_-]{1,64}$'
 */
export function notReservedPattern(pattern: string): string {
  if (!pattern.startsWith('^')) throw new Error(`pattern must start with ^: ${pattern}`)
  return `^(?!(?:${[...RESERVED_KEY_NAMES].join('|')})$)${pattern.slice(1)}`
}

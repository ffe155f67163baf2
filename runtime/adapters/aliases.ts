/**
 * Accepted spellings of adapter names, the same for every worker (builtins.md §13.1): `kv`,
 * `file_based` and `local` mean `builtin`; `in_memory` means `memory`.
 */
export type AdapterName = 'builtin' | 'memory' | 'redis'

export const ADAPTER_ALIASES: Readonly<Record<string, AdapterName>> = Object.freeze({
  builtin: 'builtin',
  kv: 'builtin',
  file_based: 'builtin',
  local: 'builtin',
  memory: 'memory',
  in_memory: 'memory',
  redis: 'redis',
})

/**
 * The canonical name of an adapter spelling, or undefined when it is unknown.
 * @example canonicalAdapterName('kv') // 'builtin'
 */
export function canonicalAdapterName(name: string): AdapterName | undefined {
  return Object.hasOwn(ADAPTER_ALIASES, name) ? ADAPTER_ALIASES[name] : undefined
}

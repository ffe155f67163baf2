/**
 * Parsing of an `adapter: {name, config?}` settings entry (builtins.md §2.9), shared by every
 * worker with pluggable storage: shape checks, the aliases of §13.1, then the named adapter's own
 * config parser.
 */

import { canonicalAdapterName } from './aliases.ts'

const ALIAS_HINT: Readonly<Record<string, string>> = {
  builtin: 'builtin (aliases kv, file_based, local)',
  memory: 'memory (alias in_memory)',
  redis: 'redis',
}

/** One config parser per adapter name a worker accepts; each throws naming `adapter.config.<field>`. */
export type AdapterConfigParsers<S> = { readonly [name: string]: (config: Record<string, unknown>) => S }

/**
 * Validates an `adapter` entry and hands its `config` (default `{}`) to the parser of its
 * canonical name. Undefined or null gives `parsers.builtin({})`.
 *
 * @throws Error naming the field: keys other than `name` and `config`, unknown names, a non-object `config`,
 *   and whatever the adapter's parser throws.
 * @example parseAdapterEntry({ name: 'in_memory' }, { builtin: () => 'b', memory: () => 'm' }) // 'm'
 */
export function parseAdapterEntry<S>(entry: unknown, parsers: AdapterConfigParsers<S>): S {
  if (entry === undefined || entry === null) return parsers.builtin!({})
  if (!isRecord(entry)) throw new Error('adapter must be an object like {name: "builtin"}')
  for (const field of Object.keys(entry)) {
    if (field !== 'name' && field !== 'config') throw new Error(`adapter.${field} is not allowed (only name and config)`)
  }
  if (entry.name === undefined || entry.name === null) throw new Error('adapter.name is required')
  if (typeof entry.name !== 'string') throw new Error('adapter.name must be a string')
  const name = canonicalAdapterName(entry.name)
  const parse = name === undefined ? undefined : parsers[name]
  if (parse === undefined) {
    const known = Object.keys(parsers).map((n) => ALIAS_HINT[n] ?? n)
    throw new Error(`adapter.name '${entry.name}' is unknown; use ${known.slice(0, -1).join(', ')} or ${known.at(-1)}`)
  }
  const config = entry.config ?? {}
  if (!isRecord(config)) throw new Error('adapter.config must be an object')
  return parse(config)
}

/** Refuses every key of an adapter `config` that takes no options (`memory`, in-process `builtin`). */
export function parseNoAdapterConfig(name: string): (config: Record<string, unknown>) => Record<string, never> {
  return (config) => {
    const field = Object.keys(config)[0]
    if (field !== undefined) throw new Error(`adapter.config.${field} is not a ${name} adapter option (it takes none)`)
    return {}
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

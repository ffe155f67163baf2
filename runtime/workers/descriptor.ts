/**
 * What the engine, config.yaml validation, the CLI and the reference docs know about each built-in
 * worker, declared once per worker in `runtime/workers/<name>/descriptor.ts` and collected in
 * `runtime/workers/catalogue.ts` (builtins.md §1, cli.md §4.3).
 *
 * Descriptors are plain data with no imports of worker code, so the CLI can read them without
 * loading storage adapters.
 */

/**
 * The subset of JSON Schema (draft 2020-12) the settings schemas use. Structurally a superset of
 * the placeholder expansion's `SchemaHint`, so a settings schema drives seed conversion directly
 * (builtins.md §2.8).
 */
export interface JsonSchema {
  readonly type?: string | readonly string[]
  readonly description?: string
  readonly default?: unknown
  readonly enum?: readonly unknown[]
  readonly const?: unknown
  readonly minimum?: number
  readonly maximum?: number
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly properties?: Readonly<Record<string, JsonSchema>>
  readonly required?: readonly string[]
  readonly additionalProperties?: JsonSchema | boolean
  readonly propertyNames?: JsonSchema
  readonly items?: JsonSchema
  readonly anyOf?: readonly JsonSchema[]
  readonly oneOf?: readonly JsonSchema[]
}

/**
 * `default`: runs unless its config.yaml entry has `enabled: false`; `optional`: runs only when
 * declared (`console`); `mandatory`: always runs, cannot be added, removed or disabled.
 */
export type RunMode = 'default' | 'optional' | 'mandatory'

/** One built-in worker (builtins.md §1, cli.md §4.3). */
export interface BuiltinDescriptor {
  /** Canonical name, as written in config.yaml and shown by `svc worker list`. */
  readonly name: string
  /** Other accepted spellings (cli.md §4.3). */
  readonly aliases: readonly string[]
  readonly mode: RunMode
  /** Worker name under which the engine lists it (`engine::workers::list`). */
  readonly engineName: string
  /** Display name of its configuration entry (`configuration::register` `name`), e.g. `HTTP`. */
  readonly title: string
  /** One line: what it does. */
  readonly description: string
  /** Spec section that defines it, e.g. `builtins.md §3`. */
  readonly spec: string
  /**
   * What stops working while it is disabled, completing `<name> disabled; …` (cli.md §4.4).
   * Absent for workers that cannot be disabled or are removed instead.
   */
  readonly disabledEffect?: string
  /** Refusal when config.yaml declares it at all (`svc-observability`, builtins.md §1). */
  readonly declarationRefused?: string
  /** Id of its configuration entry (builtins.md §1); null when it has none. */
  readonly configurationId: string | null
  /**
   * Where its settings come from: `seed` — the config.yaml `config` block seeds the entry
   * (§2.7); `own-block` — read directly from config.yaml (`configuration`, §11.1); `settings-file`
   * — only the settings file (`svc-observability`, §12.1); `flags` — a separate process's own
   * options (`console`).
   */
  readonly settingsSource: 'seed' | 'own-block' | 'settings-file' | 'flags'
  /** JSON Schema of its settings, every default in `default`; null when it has none. */
  readonly settings: JsonSchema | null
  /** Adapter names its `adapter` entry accepts (builtins.md §13.1), canonical first. */
  readonly adapters?: readonly string[]
  /** Function ids or patterns it registers (builtins.md §1). */
  readonly functions: readonly string[]
  /** Trigger types it provides. */
  readonly triggerTypes: readonly string[]
  /** Runs inside the engine (`engine`) or as a process of its own (`process`, the console). */
  readonly runsIn: 'engine' | 'process'
  /** False while the spec describes it but this release does not ship it yet. */
  readonly implemented: boolean
  /** Position in `svc worker list` and `svc worker add` messages (cli.md §4.3 order). */
  readonly listOrder: number
}

/** Adapter aliases of builtins.md §13.1, accepted wherever an adapter name is. */
export const ADAPTER_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  kv: 'builtin',
  file_based: 'builtin',
  local: 'builtin',
  in_memory: 'memory',
})

/**
 * The schema of an `adapter: {name, config?}` entry (builtins.md §2.9) accepting `names` and their
 * aliases; `config` takes the keys of the adapters listed (`path` for builtin, `url`/`key_prefix`
 * for redis) and nothing else.
 *
 * @example adapterEntrySchema(['builtin', 'memory', 'redis']).default // { name: 'builtin' }
 */
export function adapterEntrySchema(names: readonly string[], description?: string): JsonSchema {
  const aliases = Object.entries(ADAPTER_ALIASES)
    .filter(([, canonical]) => names.includes(canonical))
    .map(([alias]) => alias)
  const config: Record<string, JsonSchema> = {}
  if (names.includes('builtin')) config.path = { type: 'string', minLength: 1, description: 'builtin: SQLite file, relative to the data directory' }
  if (names.includes('redis')) {
    config.url = { type: 'string', pattern: '^rediss?://', default: 'redis://127.0.0.1:6379', description: 'redis: redis:// or rediss:// URL (alias redis_url)' }
    config.redis_url = { type: 'string', pattern: '^rediss?://', description: 'alias of url' }
    config.key_prefix = { type: 'string', description: 'redis: key prefix', default: 'svc:' }
  }
  return {
    type: 'object',
    description: description ?? `storage adapter: ${names.join(', ')} (builtins.md §13)`,
    additionalProperties: false,
    required: ['name'],
    default: { name: 'builtin' },
    properties: {
      name: { type: 'string', enum: [...names, ...aliases] },
      config: { type: 'object', additionalProperties: false, properties: config },
    },
  }
}

/**
 * Names of the built-in workers as config.yaml may spell them (builtins.md §1, cli.md §4.3), and
 * the "did you mean" helper used for misspelt names and keys.
 */
import type { SchemaHint } from './placeholders.ts'

/** Name of a listener entry in config.yaml (protocol.md §12.3). */
export const LISTENER_NAME = 'svc-worker-manager'

/** Canonical built-in names, in catalogue order. `console` is off unless declared (cli.md §4.3). */
export const BUILTIN_NAMES = [
  'svc-http',
  'svc-state',
  'svc-stream',
  'queue',
  'svc-pubsub',
  'svc-cron',
  'database',
  'configuration',
  'svc-observability',
  'console',
] as const
export type BuiltinName = (typeof BUILTIN_NAMES)[number]

/** Accepted aliases → canonical name (cli.md §4.3). */
export const BUILTIN_ALIASES: Readonly<Record<string, BuiltinName>> = {
  http: 'svc-http',
  state: 'svc-state',
  stream: 'svc-stream',
  pubsub: 'svc-pubsub',
  cron: 'svc-cron',
  db: 'database',
  'svc-console': 'console',
}

/** The refusal of builtins.md §1 for a declared `svc-observability` (exit code 2). */
export const OBSERVABILITY_DECLARED_MESSAGE =
  'svc-observability is injected by the engine and must not be declared in config.yaml; change its settings in config/svc-observability.yaml'

/** The canonical built-in name for a name or alias, or undefined when it names no built-in. */
export function canonicalBuiltinName(name: string): BuiltinName | undefined {
  if ((BUILTIN_NAMES as readonly string[]).includes(name)) return name as BuiltinName
  return BUILTIN_ALIASES[name]
}

/**
 * Edit distance between two strings (Levenshtein, with a swap of two neighbouring characters
 * counted as one edit, so `prot` is one edit from `port`).
 */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0
  const rows: number[][] = []
  for (let i = 0; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row[j] = j
        continue
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1)
      row[j] = d
    }
    rows.push(row)
  }
  return rows[a.length]![b.length]!
}

/**
 * The candidate closest to `input`, when close enough to be a plausible typo: at most 2 edits, and
 * fewer edits than half the input's length (so short words do not match everything).
 *
 * @example closestMatch('databse', ['database', 'queue']) // 'database'
 */
export function closestMatch(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined
  let bestDistance = Infinity
  for (const candidate of candidates) {
    const d = editDistance(input.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  if (best === undefined || bestDistance > 2 || bestDistance * 2 >= Math.max(input.length, 1)) return undefined
  return best
}

/** ` (did you mean 'x'?)` or an empty string. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const match = closestMatch(input, candidates)
  return match === undefined ? '' : ` (did you mean '${match}'?)`
}

const integer: SchemaHint = { type: 'integer' }
const integerOrNull: SchemaHint = { type: ['integer', 'null'] }
const boolean: SchemaHint = { type: 'boolean' }
const queueSettings: SchemaHint = {
  type: 'object',
  properties: {
    max_retries: integer,
    backoff_ms: integer,
    max_backoff_ms: integer,
    concurrency: integer,
    delivery_timeout_ms: integer,
  },
}

/**
 * Where each built-in's settings expect integers and booleans (from the configuration tables of
 * builtins.md), so that a seed such as `port: ${HTTP_PORT:3111}` expands to a number. A stand-in
 * until the built-ins register their JSON Schemas with the configuration worker, which then expands
 * with the real schema.
 */
export const BUILTIN_SEED_HINTS: Readonly<Partial<Record<BuiltinName, SchemaHint>>> = {
  'svc-http': {
    type: 'object',
    properties: {
      port: integer,
      default_timeout: integer,
      concurrency_request_limit: integer,
      max_body_bytes: integer,
      cors: {
        type: ['object', 'null'],
        properties: { allow_credentials: boolean, max_age_seconds: integer },
      },
    },
  },
  'svc-state': {
    type: 'object',
    properties: { triggers_enabled: boolean, max_value_bytes: integerOrNull },
  },
  'svc-stream': {
    type: 'object',
    properties: {
      port: integer,
      auth_timeout_ms: integer,
      client_buffer_messages: integer,
      max_item_bytes: integerOrNull,
    },
  },
  queue: {
    type: 'object',
    properties: {
      queue_configs: { type: 'object', additionalProperties: queueSettings },
      subscriber_defaults: queueSettings,
      subscriber_retention_ms: integer,
    },
  },
  database: {
    type: 'object',
    properties: {
      databases: {
        type: 'object',
        additionalProperties: {
          type: 'object',
          properties: {
            pool: {
              type: 'object',
              properties: { max: integer, acquire_timeout_ms: integer, idle_timeout_ms: integer },
            },
            statement_timeout_ms: integer,
          },
        },
      },
    },
  },
  console: { type: 'object', properties: { port: integer } },
}

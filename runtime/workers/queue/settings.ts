/**
 * Settings of the queue worker (builtins.md §7.1, §7.6): defaults, validation with the spec's
 * messages, and the trigger-config spellings of §7.6 (camelCase aliases, shortcuts, `concurrent`).
 */
import { Document, type YAMLMap } from 'yaml'
import { isReservedKeyName } from '../shared/names.ts'
import { parseQueueAdapterEntry, type QueueAdapterSpec } from '../../adapters/queue/index.ts'
import { Errors, SvcError } from 'svc-protocol/errors'

/** Effective settings of one queue, every default applied (§7.1). */
export interface QueueSettings {
  type: 'standard' | 'fifo'
  /** fifo: top-level field of the message data holding the group. */
  message_group_field?: string
  /** Retries after the first attempt (0–1000); total attempts = max_retries + 1. */
  max_retries: number
  /** Delay before retry n is backoff_ms × 2^(n−1), ms (0–3 600 000). */
  backoff_ms: number
  /** Cap of one retry delay, ms. */
  max_backoff_ms: number
  /** Attempts in flight at once per engine (1–1024). */
  concurrency: number
  /** An attempt not finished in this many ms fails with `TIMEOUT` (1 000–86 400 000). */
  delivery_timeout_ms: number
  /** standard only: at most one attempt in flight per distinct value of this top-level data field. */
  concurrency_key_field?: string
}

/** Effective settings of the worker (§7.1 and the §7.4 extension window). */
export interface QueueWorkerSettings {
  adapter: QueueAdapterSpec
  queue_configs: Map<string, QueueSettings>
  subscriber_defaults: QueueSettings
  /** ms a subscriber without a live trigger is remembered; 0 forever. */
  subscriber_retention_ms: number
  /** ms an idempotency key is remembered (§7.4; default 24 h). */
  idempotency_window_ms: number
}

export const QUEUE_DEFAULTS: QueueSettings = Object.freeze({
  type: 'standard',
  max_retries: 3,
  backoff_ms: 1000,
  max_backoff_ms: 3_600_000,
  concurrency: 10,
  delivery_timeout_ms: 900_000,
})

/** Longest delay a message may ask for (`delay_ms`, `retry_after_ms`): 7 days. */
export const MAX_DELAY_MS = 604_800_000
export const DEFAULT_RETENTION_MS = 604_800_000
export const DEFAULT_IDEMPOTENCY_WINDOW_MS = 86_400_000
/** Queue names (§7.1). */
export const QUEUE_NAME = /^[A-Za-z0-9_.:-]{1,128}$/

/**
 * Why `name` cannot name a queue, or undefined: it must match {@link QUEUE_NAME} (§7.1) and not be
 * `__proto__`, `constructor` or `prototype` (a queue name is a key of `queue_configs`).
 * @example queueNameProblem('__proto__') // "Queue name '__proto__' is reserved: …"
 */
export function queueNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || !QUEUE_NAME.test(name)) return `Queue name ${shown(name)} must match [A-Za-z0-9_.:-]{1,128}`
  if (isReservedKeyName(name)) return `Queue name '${name}' is reserved: __proto__, constructor and prototype cannot name a queue`
  return undefined
}

/**
 * A value as an error message quotes it: a string in quotes, anything else as its JSON (an object
 * whose `toString` is not a function cannot be turned into text by `String`), cut to 80 characters.
 */
function shown(value: unknown): string {
  let text: string
  try {
    text = typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? typeof value)
  } catch {
    text = typeof value
  }
  return text.length > 80 ? `${text.slice(0, 79)}…` : text
}

const INTEGER_KEYS: Record<string, [number, number]> = {
  max_retries: [0, 1000],
  backoff_ms: [0, 3_600_000],
  max_backoff_ms: [0, Number.MAX_SAFE_INTEGER],
  concurrency: [1, 1024],
  delivery_timeout_ms: [1000, 86_400_000],
}

/** §7.6 trigger spellings → canonical keys. */
const TRIGGER_ALIASES: Record<string, string> = {
  maxRetries: 'max_retries',
  backoffDelayMs: 'backoff_ms',
  maxBackoffMs: 'max_backoff_ms',
  deliveryTimeoutMs: 'delivery_timeout_ms',
  messageGroupField: 'message_group_field',
  concurrencyKeyField: 'concurrency_key_field',
}

function invalid(message: string): SvcError {
  return Errors.invalidQueueConfig(message)
}

/**
 * Validates the settings of queue `name` over `base` (keys missing from `raw` keep `base`'s value).
 * With `aliases` the §7.6 trigger spellings are accepted too.
 *
 * @throws SvcError `invalid_queue_config` with the §7.1 messages, e.g. `Queue 'x' has invalid type
 *   'y'. Must be 'standard' or 'fifo'`, `Queue 'x' is of type 'fifo' but 'message_group_field' is
 *   not set`, or `Queue 'x': max_retries must be an integer from 0 to 1000`.
 * @example parseQueueSettings('emails', { max_retries: 5 }).max_retries // 5
 */
export function parseQueueSettings(name: string, raw: unknown, base: QueueSettings = QUEUE_DEFAULTS, options: { aliases?: boolean; requireGroup?: boolean } = {}): QueueSettings {
  if (raw === undefined || raw === null) raw = {}
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid(`Queue '${name}' settings must be an object`)
  const out: QueueSettings = { ...base }
  for (let [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (options.aliases && Object.hasOwn(TRIGGER_ALIASES, key)) key = TRIGGER_ALIASES[key]!
    if (value === undefined || value === null) continue
    if (key === 'type') {
      const type = options.aliases && value === 'concurrent' ? 'standard' : value
      if (type !== 'standard' && type !== 'fifo') throw invalid(`Queue '${name}' has invalid type ${shown(value)}. Must be 'standard' or 'fifo'`)
      out.type = type
    } else if (key === 'message_group_field' || key === 'concurrency_key_field') {
      if (typeof value !== 'string' || value === '') throw invalid(`Queue '${name}': ${key} must be a non-empty string`)
      out[key] = value
    } else if (Object.hasOwn(INTEGER_KEYS, key)) {
      const [min, max] = INTEGER_KEYS[key]!
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
        throw invalid(`Queue '${name}': ${key} must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`}, got ${JSON.stringify(value)}`)
      }
      ;(out as unknown as Record<string, number>)[key] = value
    }
    // Unknown keys are ignored (§2.1), as the schema allows.
  }
  if (out.type === 'fifo' && options.requireGroup !== false && out.message_group_field === undefined) {
    throw invalid(`Queue '${name}' is of type 'fifo' but 'message_group_field' is not set`)
  }
  if (out.type === 'fifo') delete out.concurrency_key_field
  return out
}

/**
 * The queue settings of a `durable:subscriber` / `queue` trigger config (§7.6): `queue_config`
 * plus the `max_retries` / `backoff_ms` shortcuts (and their camelCase spellings), raw.
 */
export function triggerQueueConfig(config: Record<string, unknown>): Record<string, unknown> | undefined {
  const raw: Record<string, unknown> = {}
  const nested = config.queue_config ?? config.queueConfig
  if (nested !== undefined && nested !== null) {
    if (typeof nested !== 'object' || Array.isArray(nested)) throw invalid('queue_config must be an object')
    Object.assign(raw, nested)
  }
  for (const key of ['max_retries', 'maxRetries', 'backoff_ms', 'backoffDelayMs']) if (config[key] !== undefined) raw[key] = config[key]
  return Object.keys(raw).length > 0 ? raw : undefined
}

/**
 * Validates the whole `queue` settings value and applies the defaults.
 * @throws SvcError (`INVALID_ARGUMENTS` for the adapter and top-level keys, `invalid_queue_config`
 *   for a queue) whose message names the key.
 */
export function parseQueueWorkerSettings(value: unknown): QueueWorkerSettings {
  if (value === undefined || value === null) value = {}
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments('queue settings must be an object')
  const source = value as Record<string, unknown>
  let adapter: QueueAdapterSpec
  try {
    adapter = parseQueueAdapterEntry(source.adapter)
  } catch (error) {
    throw Errors.invalidArguments((error as Error).message)
  }
  const queue_configs = new Map<string, QueueSettings>()
  const configs = source.queue_configs ?? {}
  if (typeof configs !== 'object' || configs === null || Array.isArray(configs)) throw Errors.invalidArguments('queue_configs must be a map of queue name to settings')
  for (const [name, raw] of Object.entries(configs)) {
    const problem = queueNameProblem(name)
    if (problem !== undefined) throw invalid(`queue_configs: ${problem.charAt(0).toLowerCase()}${problem.slice(1)}`)
    queue_configs.set(name, parseQueueSettings(name, raw))
  }
  const subscriber_defaults = parseQueueSettings('subscriber_defaults', source.subscriber_defaults, QUEUE_DEFAULTS, { requireGroup: false })
  return {
    adapter,
    queue_configs,
    subscriber_defaults,
    subscriber_retention_ms: nonNegative(source, 'subscriber_retention_ms', DEFAULT_RETENTION_MS),
    idempotency_window_ms: nonNegative(source, 'idempotency_window_ms', DEFAULT_IDEMPOTENCY_WINDOW_MS),
  }
}

function nonNegative(source: Record<string, unknown>, key: string, fallback: number): number {
  const value = source[key]
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw Errors.invalidArguments(`${key} must be an integer >= 0, got ${JSON.stringify(value)}`)
  return value
}

/** Retry delay after attempt `attempts` failed (§7.1): min(backoff_ms × 2^(attempts−1), max_backoff_ms). */
export function backoffDelay(settings: QueueSettings, attempts: number): number {
  return Math.min(settings.backoff_ms * 2 ** Math.max(0, attempts - 1), settings.max_backoff_ms)
}

/**
 * The config.yaml lines that declare queue `name` (§7.1): the queue worker's entry of the
 * `workers:` list with `name` under `queue_configs`, indented two spaces to sit under `workers:`.
 * Written by the `yaml` library, so any valid queue name is quoted where YAML needs it (`"123"`,
 * `"true"`, `"~"`). Undefined for a name no queue may have ({@link queueNameProblem}).
 *
 * @example
 * queueDeclarationYaml('emails')
 * // '  - name: queue\n    config:\n      queue_configs:\n        emails: { max_retries: 3, concurrency: 10 }'
 */
export function queueDeclarationYaml(name: string): string | undefined {
  if (queueNameProblem(name) !== undefined) return undefined
  const settings = { max_retries: QUEUE_DEFAULTS.max_retries, concurrency: QUEUE_DEFAULTS.concurrency }
  const doc = new Document([{ name: 'queue', config: { queue_configs: { [name]: settings } } }])
  ;(doc.getIn([0, 'config', 'queue_configs', name], true) as YAMLMap).flow = true
  return doc
    .toString({ indent: 2 })
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n')
}

/**
 * `queue_not_found` for an enqueue to a queue that is not declared (§7.4 step 3): the §7.3 message,
 * then how to declare it, ending with the config.yaml lines of {@link queueDeclarationYaml} (from
 * the first line break on, the text is that YAML).
 * @example undeclaredQueue('emails').message.split('\n')[0] // "Queue 'emails' is not declared in queue_configs. Declare it from code (queue::define; svc-sdk: defineQueue) or in config.yaml under workers: (merged into the queue entry if there is one):"
 */
export function undeclaredQueue(name: string): SvcError {
  const error = Errors.queueNotFound(name)
  const yaml = queueDeclarationYaml(name)
  if (yaml === undefined) return error
  return new SvcError(error.code, `${error.message}. Declare it from code (queue::define; svc-sdk: defineQueue) or in config.yaml under workers: (merged into the queue entry if there is one):\n${yaml}`)
}

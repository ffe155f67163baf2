/**
 * Serialised application of a built-in worker's settings (builtins.md §2.7).
 *
 * - Applies of one worker run one after another, in call order, whatever each one awaits.
 * - Validate, then apply: `parse` checks the whole value and applies the defaults before anything
 *   changes; `apply` then makes the new settings effective and throws if it cannot (for example a
 *   port that cannot be bound), leaving the previous effective settings in place.
 * - A failed apply logs an error naming the key and is kept as {@link SettingsApplier.lastConfigError}
 *   (shown as `last_config_error` by `engine::workers::info`, protocol.md §11.1) until the next
 *   successful apply clears it. `onConfigError` hears every change of it.
 */
import { errorBodyOf } from 'svc-protocol/errors'
import type { Logger } from '../../engine/types.ts'

/** What a worker supplies to {@link createSettingsApplier}. */
export interface SettingsApplierOptions<S> {
  /** Worker name, for log lines (`svc-http`). */
  worker: string
  log: Logger
  /**
   * Validates a settings value and applies the defaults. Throws on invalid input with a message
   * that starts with the offending key (`port must be an integer from 0 to 65535, got 70000`).
   */
  parse(value: unknown): S
  /** Makes `next` effective; `previous` is undefined on the first apply. Throws to keep `previous`. */
  apply(next: S, previous: S | undefined): void | Promise<void>
  /** Called with the new `last_config_error` after a failed apply, and with undefined once it clears. */
  onConfigError?(message: string | undefined): void
}

/** The serialised applier of one worker. */
export interface SettingsApplier<S> {
  /**
   * Validates and applies `value` after every earlier apply has finished. Resolves with the new
   * effective settings; rejects with the error of `parse` or `apply` (the previous settings stay).
   */
  apply(value: unknown): Promise<S>
  /** The effective settings; undefined until an apply succeeded. */
  readonly current: S | undefined
  /** `<key>: <problem>` of the last failed apply, undefined after a successful one. */
  readonly lastConfigError: string | undefined
}

const KEY_PROPERTY = 'settingsKey'

/**
 * Marks `error` as caused by settings key `key` (a dotted path such as `port` or `cors.max_age_seconds`)
 * without changing its class, code or message, and returns it. Use it for failures of `apply`
 * whose message does not start with the key (a bind error says `listen EADDRINUSE …`).
 *
 * @example throw withSettingsKey(bindError, 'port')
 */
export function withSettingsKey<T>(error: T, key: string): T {
  if (typeof error === 'object' && error !== null) {
    Object.defineProperty(error, KEY_PROPERTY, { value: key, enumerable: false, configurable: true })
  }
  return error
}

/** A leading key path of a validation message: `port`, `cors.max_age_seconds`, `middleware[0].function_id`. */
const LEADING_KEY = /^([A-Za-z_][A-Za-z0-9_]*(?:\[\d+\]|\.[A-Za-z_][A-Za-z0-9_]*)*)(?=[ :])/

/**
 * The settings key an apply failure is about: the key set with {@link withSettingsKey}, else the
 * key path the message starts with, else undefined.
 *
 * @example settingsKeyOf(new Error('port must be an integer from 0 to 65535, got 70000')) // 'port'
 */
export function settingsKeyOf(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null) {
    const tagged = (error as Record<string, unknown>)[KEY_PROPERTY]
    if (typeof tagged === 'string') return tagged
  }
  const match = LEADING_KEY.exec(errorBodyOf(error).message)
  return match?.[1]
}

/**
 * Creates the serialised applier of one worker. Create it in `start()` and route both the seed
 * and every later change through {@link SettingsApplier.apply}.
 *
 * @example
 * const settings = createSettingsApplier({
 *   worker: 'svc-http', log, parse: parseHttpSettings,
 *   apply: async (next, previous) => { if (next.port !== previous?.port) await listener.listen(next.host, next.port) },
 *   onConfigError: (message) => worker.setLastConfigError?.(message),
 * })
 * await settings.apply({ port: 0 })
 */
export function createSettingsApplier<S>(options: SettingsApplierOptions<S>): SettingsApplier<S> {
  let current: S | undefined
  let lastConfigError: string | undefined
  let tail: Promise<unknown> = Promise.resolve()

  const setError = (message: string | undefined) => {
    if (message === lastConfigError) return
    lastConfigError = message
    options.onConfigError?.(message)
  }

  const run = async (value: unknown): Promise<S> => {
    try {
      const next = options.parse(value)
      await options.apply(next, current)
      current = next
      setError(undefined)
      return next
    } catch (error) {
      const key = settingsKeyOf(error)
      const { code, message } = errorBodyOf(error)
      const text = key === undefined || message.startsWith(key) ? message : `${key}: ${message}`
      setError(text)
      options.log.error(`${options.worker} settings not applied (${text}); the previous settings stay in effect`, {
        worker: options.worker,
        ...(key !== undefined ? { key } : {}),
        code,
        message,
      })
      throw error
    }
  }

  return {
    apply(value: unknown): Promise<S> {
      const result = tail.then(() => run(value))
      tail = result.catch(() => {})
      return result
    },
    get current() {
      return current
    },
    get lastConfigError() {
      return lastConfigError
    },
  }
}

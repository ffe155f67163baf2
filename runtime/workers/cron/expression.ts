/**
 * Cron expressions and `cron` trigger configs (builtins.md §9.1, §9.2), parsed by `croner`.
 *
 * croner is configured to the grammar of §9.2: six fields (seconds first) or seven (with a year),
 * POSIX weekdays (0 and 7 are Sunday), day-of-month OR day-of-week when both are restricted
 * (`domAndDow: false`), and `a/n` steps (`sloppyRanges`). Field counts are checked here first so
 * that a five-field crontab expression gets the hint of §9.2.
 */
import { Cron } from 'croner'
import type { CronTriggerConfig as CronTriggerInput } from 'svc-protocol'
import { Errors, type SvcError } from 'svc-protocol/errors'

/** Bound of one run when `timeout_ms` is omitted (§9.1), ms. */
export const DEFAULT_CRON_TIMEOUT_MS = 3_600_000

/** The hint of §9.2 for a five-field expression. */
export const FIVE_FIELD_HINT =
  "expected 6 fields (second minute hour day-of-month month day-of-week); prefix a 5-field crontab expression with '0 '"

/**
 * A validated `cron` trigger config (§9.1): svc-protocol's `CronTriggerConfig` with the
 * expression's whitespace normalised (fields separated by single spaces), `timeout_ms` defaulted,
 * and `timezone` undefined when the worker's `default_timezone` applies.
 */
export interface CronTriggerConfig extends CronTriggerInput {
  /** Bound of one run, ms. */
  timeout_ms: number
}

/** A parsed expression: the next slot strictly after a time, in a zone. */
export interface CronExpression {
  readonly expression: string
  readonly timezone: string
  /** The first slot after `afterMs` (epoch ms), undefined when there is none (a past year). */
  next(afterMs: number): number | undefined
}

function invalidExpression(expression: string, reason: string): SvcError {
  return Errors.invalidTriggerConfig(`Invalid cron expression '${expression}': ${reason}`)
}

/** True when `zone` is an IANA zone name this runtime knows. */
export function isKnownTimezone(zone: string): boolean {
  if (zone === '') return false
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone })
    return true
  } catch {
    return false
  }
}

/**
 * Parses an expression for a zone.
 * @throws SvcError `INVALID_TRIGGER_CONFIG`: `Cron expression is required`, `Invalid cron expression
 *   '<expr>': <reason>` (five fields: the §9.2 hint; no slot in the future), `Unknown timezone '<tz>'`.
 * @example compileCronExpression('0 0 2 * * *', 'UTC').next(Date.parse('2025-01-01T00:00:00Z')) // 2025-01-01T02:00:00Z
 */
export function compileCronExpression(raw: unknown, timezone: string, nowMs = Date.now()): CronExpression {
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) {
    throw Errors.invalidTriggerConfig('Cron expression is required')
  }
  if (typeof raw !== 'string') throw invalidExpression(JSON.stringify(raw), 'must be a string')
  if (!isKnownTimezone(timezone)) throw Errors.invalidTriggerConfig(`Unknown timezone '${timezone}'`)
  const fields = raw.trim().split(/\s+/)
  if (fields.length === 5) throw invalidExpression(raw, FIVE_FIELD_HINT)
  if (fields.length !== 6 && fields.length !== 7) {
    throw invalidExpression(raw, `expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got ${fields.length}`)
  }
  const expression = fields.join(' ')
  let cron: Cron
  try {
    cron = new Cron(expression, { paused: true, timezone, mode: '6-or-7-parts', domAndDow: false, sloppyRanges: true })
  } catch (error) {
    throw invalidExpression(raw, String((error as Error).message).replace(/^Cron(Pattern|Date)?:\s*/, ''))
  }
  const next = (afterMs: number): number | undefined => cron.nextRun(new Date(afterMs))?.getTime()
  if (next(nowMs) === undefined) throw invalidExpression(raw, 'it has no slot in the future')
  return { expression, timezone, next }
}

/**
 * Validates a `cron` trigger config (§9.1): the expression against `timezone ?? defaultTimezone`,
 * with a slot after `nowMs` (epoch ms).
 * @throws SvcError `INVALID_TRIGGER_CONFIG` with the §9.1 messages, or naming the field
 *   (`timeout_ms must be a positive integer (ms)`, `timezone must be a string`, …).
 */
export function parseCronTriggerConfig(
  config: unknown,
  defaultTimezone: string,
  nowMs = Date.now(),
): { config: CronTriggerConfig; compiled: CronExpression } {
  if (config !== undefined && config !== null && (typeof config !== 'object' || Array.isArray(config))) {
    throw Errors.invalidTriggerConfig('config must be an object for cron triggers')
  }
  const source = (config ?? {}) as Record<string, unknown>
  const timezone = source.timezone
  if (timezone !== undefined && timezone !== null && typeof timezone !== 'string') {
    throw Errors.invalidTriggerConfig('timezone must be a string for cron triggers')
  }
  const timeout = source.timeout_ms ?? DEFAULT_CRON_TIMEOUT_MS
  if (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout < 1) {
    throw Errors.invalidTriggerConfig('timeout_ms must be a positive integer (ms) for cron triggers')
  }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null && (typeof condition !== 'string' || condition === '')) {
    throw Errors.invalidTriggerConfig('condition_function_id must be a non-empty string for cron triggers')
  }
  const compiled = compileCronExpression(source.expression, (timezone as string | null | undefined) ?? defaultTimezone, nowMs)
  const result: CronTriggerConfig = { expression: compiled.expression, timeout_ms: timeout }
  if (typeof timezone === 'string') result.timezone = timezone
  if (typeof condition === 'string') result.condition_function_id = condition
  return { config: result, compiled }
}

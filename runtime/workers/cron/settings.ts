/** Settings of the cron worker (builtins.md §9): defaults and validation. */
import { parseCronAdapterEntry, type CronAdapterSpec } from '../../adapters/cron/index.ts'
import { Errors } from 'svc-protocol/errors'
import { isKnownTimezone } from './expression.ts'

/** The effective settings of `svc-cron`, every default applied. */
export interface CronSettings {
  /** Canonical adapter entry (aliases resolved). Default `{name: "builtin"}`. */
  adapter: CronAdapterSpec
  /** IANA zone of triggers without `timezone`. Default `UTC`. */
  default_timezone: string
}

/**
 * Validates a settings value and applies the defaults; undefined or null give the defaults, a key
 * set to null takes its default, unknown top-level keys are ignored.
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key, e.g.
 *   `default_timezone 'Mars/Base' is not a known IANA time zone`.
 * @example parseCronSettings({ default_timezone: 'Europe/Berlin' }).adapter // { name: 'builtin', config: {} }
 */
export function parseCronSettings(value: unknown): CronSettings {
  if (value === undefined || value === null) value = {}
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments('svc-cron settings must be an object')
  const source = value as Record<string, unknown>
  let adapter: CronAdapterSpec
  try {
    adapter = parseCronAdapterEntry(source.adapter)
  } catch (error) {
    throw Errors.invalidArguments((error as Error).message)
  }
  const zone = source.default_timezone ?? 'UTC'
  if (typeof zone !== 'string') throw Errors.invalidArguments(`default_timezone must be a string, got ${JSON.stringify(zone)}`)
  if (!isKnownTimezone(zone)) throw Errors.invalidArguments(`default_timezone '${zone}' is not a known IANA time zone`)
  return { adapter, default_timezone: zone }
}

/** Settings of the pub/sub worker (builtins.md §8): defaults and validation. */
import { parsePubSubAdapterEntry, type PubSubAdapterSpec } from '../../adapters/pubsub/index.ts'
import { Errors } from 'svc-protocol/errors'

/** The effective settings of `svc-pubsub`, every default applied. */
export interface PubSubSettings {
  /** Canonical adapter entry (aliases resolved). Default `{name: "builtin"}`. */
  adapter: PubSubAdapterSpec
}

/**
 * Validates a settings value and applies the defaults; undefined or null give the defaults, unknown
 * top-level keys are ignored, unknown keys of the adapter entry are refused (§2.9).
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key.
 * @example parsePubSubSettings({}).adapter // { name: 'builtin', config: {} }
 */
export function parsePubSubSettings(value: unknown): PubSubSettings {
  if (value === undefined || value === null) value = {}
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments('svc-pubsub settings must be an object')
  try {
    return { adapter: parsePubSubAdapterEntry((value as Record<string, unknown>).adapter) }
  } catch (error) {
    throw Errors.invalidArguments((error as Error).message)
  }
}

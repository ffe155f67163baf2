/**
 * Settings of the state worker (builtins.md §4.1): defaults, validation and the JSON Schema the
 * worker will register with the configuration worker.
 */
import { parseStateAdapterEntry, type StateAdapterSpec } from '../../adapters/state/index.ts'
import { Errors, type SvcError } from 'svc-protocol/errors'
import { STATE_DESCRIPTOR } from './descriptor.ts'

/** The effective settings of `svc-state`, every default applied (§4.1). */
export interface StateSettings {
  /** Canonical adapter entry (aliases resolved). Default `{name: "builtin"}`. */
  adapter: StateAdapterSpec
  /** `false` stops all `state` trigger delivery. Default `true`. */
  triggers_enabled: boolean
  /** Largest accepted JSON encoding of a value, in UTF-8 bytes; `null` (default) means no limit. */
  max_value_bytes: number | null
}

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

/**
 * Validates a settings value and applies the defaults of §4.1. `undefined` and `null` give the
 * defaults; a key set to `null` takes its default; unknown top-level keys are ignored, unknown keys
 * of the adapter entry are refused (§2.9).
 *
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key, e.g.
 *   `max_value_bytes must be an integer >= 1 or null, got 0` or
 *   `adapter.config.url must be a redis:// or rediss:// URL`.
 * @example parseStateSettings({ adapter: { name: 'in_memory' } }).adapter // { name: 'memory', config: {} }
 */
export function parseStateSettings(value: unknown): StateSettings {
  if (value === undefined || value === null) value = {}
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('svc-state settings must be an object')
  const source = value as Record<string, unknown>

  let adapter: StateAdapterSpec
  try {
    adapter = parseStateAdapterEntry(source.adapter)
  } catch (error) {
    throw invalid((error as Error).message)
  }

  const triggers = source.triggers_enabled
  if (triggers !== undefined && triggers !== null && typeof triggers !== 'boolean') {
    throw invalid(`triggers_enabled must be a boolean, got ${JSON.stringify(triggers)}`)
  }

  const max = source.max_value_bytes
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)) {
    throw invalid(`max_value_bytes must be an integer >= 1 or null, got ${JSON.stringify(max)}`)
  }

  return {
    adapter,
    triggers_enabled: triggers !== false,
    max_value_bytes: (max as number | null | undefined) ?? null,
  }
}

/**
 * JSON Schema of the `svc-state` configuration entry (§2.7, §4.1), for `configuration::register`;
 * the worker's descriptor holds it. {@link parseStateSettings} enforces the same rules.
 */
export const STATE_SETTINGS_SCHEMA = STATE_DESCRIPTOR.settings

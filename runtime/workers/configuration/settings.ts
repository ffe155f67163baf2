/**
 * Settings of the configuration worker (builtins.md §11.1): its own block of config.yaml
 * (`directory`, `watch`, `debounce_ms`), read at start; defaults and validation.
 */
import { Errors } from 'svc-protocol/errors'

/** The `configuration` entry's own keys (§11.1), read from config.yaml. */
export interface ConfigurationOptions {
  /** Settings directory; relative paths resolve against the project root. Default `config`. */
  directory: string
  /** Watch the directory for hand edits. Default true. */
  watch: boolean
  /** Quiet time after a hand edit before it is read, ms. Default 500. */
  debounce_ms: number
}

export const CONFIGURATION_DEFAULTS: Readonly<ConfigurationOptions> = Object.freeze({ directory: 'config', watch: true, debounce_ms: 500 })

/**
 * The `configuration` entry's own keys with defaults (§11.1).
 * @throws SvcError `INVALID_ARGUMENTS` naming the key.
 */
export function parseConfigurationOptions(value: unknown): ConfigurationOptions {
  if (value === undefined || value === null) return { ...CONFIGURATION_DEFAULTS }
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments('configuration config must be a mapping')
  const source = value as Record<string, unknown>
  const options = { ...CONFIGURATION_DEFAULTS }
  if (source.directory !== undefined) {
    if (typeof source.directory !== 'string' || source.directory === '') throw Errors.invalidArguments('directory must be a non-empty string')
    options.directory = source.directory
  }
  if (source.watch !== undefined) {
    if (typeof source.watch !== 'boolean') throw Errors.invalidArguments('watch must be a boolean')
    options.watch = source.watch
  }
  if (source.debounce_ms !== undefined) {
    if (typeof source.debounce_ms !== 'number' || !Number.isSafeInteger(source.debounce_ms) || source.debounce_ms < 0) {
      throw Errors.invalidArguments('debounce_ms must be a non-negative integer')
    }
    options.debounce_ms = source.debounce_ms
  }
  return options
}

/**
 * config.yaml loading (protocol.md §12, cli.md §2.1) and placeholder expansion (builtins.md §2.8).
 */
export { loadConfig, parseConfig, CONFIG_DEFAULTS } from './loader.ts'
export type {
  ConfigOverrides,
  ExposeRule,
  HttpFunctionsConfig,
  LoadConfigOptions,
  LoadedBuiltinEntry,
  LoadedConfig,
  LoadedListenerConfig,
  LoadedLocalWorkerEntry,
  RbacConfig,
} from './loader.ts'
export { ConfigError } from './errors.ts'
export { CONFIG_BLOCKS, integerRules, keysOf } from './keys.ts'
export type { ConfigBlock, ConfigKey } from './keys.ts'
export type { ConfigErrorCode, ConfigErrorInit } from './errors.ts'
export { expandPlaceholders, expandString, ExpandError } from './placeholders.ts'
export type { Env, SchemaHint, ValuePath } from './placeholders.ts'
export {
  BUILTIN_ALIASES,
  BUILTIN_NAMES,
  BUILTIN_SEED_HINTS,
  canonicalBuiltinName,
  closestMatch,
  didYouMean,
  editDistance,
  LISTENER_NAME,
  OBSERVABILITY_DECLARED_MESSAGE,
} from './catalogue.ts'
export type { BuiltinName } from './catalogue.ts'

/**
 * The runtime's light entry: everything the CLI (`src/`) takes from the runtime except the engine
 * itself — terminal escaping (`terminal.ts`), logging (`logger.ts`), the one YAML reader
 * (`runtime/yaml/`), config.yaml loading and placeholders (`runtime/config/`, protocol.md §12,
 * builtins.md §2.8), the built-ins' catalogue, the listener defaults and the optional packages.
 *
 * `src/` imports the runtime only here and through `runtime/start.ts` (the engine, for `svc`
 * itself); `test/layering.test.ts` fails on any other import. Node ESM loads every module an entry
 * re-exports, so this entry re-exports no module that starts an engine, a built-in or a driver:
 * `svc trigger`, `svc functions` and the other one-shot commands load it and stay light (issue 20).
 * Types are re-exported with `export type`, which loads nothing.
 */
export { terminalJson, terminalLines, terminalText } from './engine/terminal.ts'
export { colourEnabled, consoleLogger, formatLogLine, setLogColour, silentLogger } from './engine/logger.ts'
export type { LogLevel, LogRecord } from './engine/logger.ts'
export { FLEET_DEFAULTS, LISTENER_DEFAULTS } from './engine/config.ts'
export type { Logger } from './engine/config.ts'
export type { EngineConfig, ListenerConfig } from './engine/types.ts'
export type { Interceptor } from './engine/pipeline.ts'
export type { Session } from './engine/session.ts'
export type { FunctionEntry } from './engine/functions.ts'
export * from './config/index.ts'
export * from './yaml/index.ts'
export { builtinDescriptor, builtinsInListOrder } from './workers/catalogue.ts'
export type { BuiltinDescriptor, RunMode } from './workers/catalogue.ts'
export { OPTIONAL_PACKAGES } from './adapters/optional-package.ts'

/**
 * The compose daemon (cli.md §2.3, §4.7): compose files, the project runner and the daemon.
 */
export { ComposeDaemon, COMPOSE_FUNCTIONS, DAEMON_WORKER_NAME, ENGINE_CONNECT_TIMEOUT_MS } from './daemon.ts'
export type { DaemonOptions } from './daemon.ts'
export { ComposeError, exitCodeFor, toComposeCliError } from './errors.ts'
export type { ComposeErrorCode, ErrorBody } from './errors.ts'
export {
  COMPOSE_FILE_NAME,
  CONTAINER_KEY_PATTERN,
  loadComposeFile,
  parseComposeFile,
  parseDuration,
  startOrder,
} from './file.ts'
export type { BuiltinContainer, ComposeFile, ContainerSpec, PathContainer } from './file.ts'
export { addContainerText, removeContainerText } from './edit.ts'
export { generateNamespace } from './names.ts'
export { ProjectRunner } from './runner.ts'
export type { EngineAccess, Supervise } from './runner.ts'
export { formatDaemonBanner, serveCompose } from './serve.ts'
export type { ServeOptions } from './serve.ts'
export type * from './types.ts'

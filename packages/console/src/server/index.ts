/**
 * `svc-console`: the backend of the svc web console (cli.md §7). `startConsole` serves the API,
 * the live WebSocket and the built app, and connects to the engine as the `svc-console` worker.
 *
 * @example
 * import { startConsole } from 'svc-console'
 * const { url, close } = await startConsole({ port: 3113, engineUrl: 'ws://127.0.0.1:49134' })
 */
export { ConsoleListenError, CONSOLE_SERVER_TIMEOUTS, DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT, MAX_PROXY_RESPONSE_BYTES, startConsole } from './server.ts'
export { canonicalHost, checkAllowedHost, checkToken, CONSOLE_TOKEN_ENV, LOOPBACK_HOSTS, newToken } from './access.ts'
export { CONSOLE_NAMESPACE, CONSOLE_WORKER_NAME } from './engine-link.ts'
export { LIVE_MAX_BUFFERED_BYTES, LIVE_MAX_INBOUND_BYTES } from './live.ts'
export { MAX_BODY_BYTES, MAX_TIMEOUT_MS } from './requests.ts'
export { DEFAULT_APP_DIR, NOT_BUILT_PAGE } from './static.ts'
export { LIVE_CHANNELS } from './types.ts'
export type { ConnectionData, ConsoleInfo, ConsoleMicrovm, ConsoleLog, ConsoleOptions, ConsoleTimeouts, LiveChannel, LiveFrame, RunningConsole } from './types.ts'

/**
 * `svc-sdk/internal`: the pieces behind `registerWorker`, for svc's own tests and for hosts that
 * run workers in the engine's process (NATS.js `internal_mod` style). **Not public API**: no
 * semver promise, may change in any release. Applications use `svc-sdk`.
 *
 * @example
 * import { memoryConnector } from 'svc-protocol/transport/memory'
 * import { WorkerClient, resolveAddress, resolveOptions } from 'svc-sdk/internal'
 *
 * // An SDK client talking to an engine in the same process, without a socket.
 * const connector = memoryConnector((server, info) => engine.accept(server, info))
 * const client = new WorkerClient(resolveAddress('ws://engine.local'), resolveOptions({ workerName: 'w' }), { connector })
 */
export { ConnectionError, DEFAULT_TIMINGS, WorkerClient } from './client.ts'
export type { ClientInternals, ClientLog, ClientTimings } from './client.ts'
export { resolveAddress, resolveOptions } from './options.ts'
export { runUnsampled, runWithTraceContext } from './tracing.ts'
export type { ResolvedOptions } from './options.ts'

/**
 * `svc-protocol`: what the engine, the SDKs and the CLI share about the worker protocol
 * (protocol.md): wire message types, the frame codec, the error catalogue, reserved ids, the
 * payload shapes of the built-in workers, and the transport seam. Transports themselves are
 * imported from their subpaths (`svc-protocol/transport/ws`, `svc-protocol/transport/memory`) so
 * a browser bundle never pulls in Node's `ws`.
 */
export * from './messages.ts'
export * from './errors.ts'
export * from './ids.ts'
export * from './json.ts'
export * from './codec.ts'
export type * from './payloads/engine.ts'
export type * from './payloads/http.ts'
export type * from './payloads/rbac.ts'
export type * from './payloads/state.ts'
export type * from './payloads/configuration.ts'
export type * from './payloads/stream.ts'
export type * from './payloads/observability.ts'
export type * from './payloads/queue.ts'
export type * from './payloads/pubsub.ts'
export type * from './payloads/cron.ts'
export type * from './payloads/database.ts'
export type * from './transport/types.ts'

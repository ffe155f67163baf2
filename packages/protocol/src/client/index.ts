/**
 * `svc-protocol/client`: the platform-free client core every svc SDK is a thin facade over
 * (sdk.md §2–§8, §13). {@link ClientSession} speaks the protocol over any {@link Transport}; the
 * facade brings the transport (Node `ws`, a browser `WebSocket`, in-memory), the announce, and the
 * platform's hooks (telemetry, materialisation of channel refs, gauges).
 *
 * No Node built-in, no OpenTelemetry, no package outside `svc-protocol` is imported from here
 * (a test bundles this entry for a neutral platform and runs it without Node's globals).
 *
 * @example
 * import { ClientSession, TriggerAction } from 'svc-protocol/client'
 * import { memoryConnector } from 'svc-protocol/transport/memory'
 *
 * const session = new ClientSession({ address: 'ws://engine.local/', connector: memoryConnector(engine.accept), announce: { runtime: 'test' } })
 * session.registerFunction('demo::echo', (data) => data)
 * await session.trigger({ function_id: 'audit::log', payload: { at: Date.now() }, action: TriggerAction.Void() })
 */
export { ClientSession, DEFAULT_INVOCATION_TIMEOUT_MS, DEFAULT_TIMINGS } from './session.ts'
export type { ClientSessionOptions, ClientTimings } from './session.ts'
export type { ClientHooks, ClientLog, ClientTelemetry, HandlerScope, MaterializeKind, Materializer, TraceContext } from './hooks.ts'
export { Heartbeat } from './heartbeat.ts'
export type { HeartbeatOptions, HeartbeatPeer } from './heartbeat.ts'
export { backoffDelay, DEFAULT_RECONNECTION_CONFIG } from './backoff.ts'
export { AddressRotation, displayAddress, engineAddresses, MAX_ENGINE_ADDRESSES, splitAddressList } from './addresses.ts'
export { CallIds, CALL_ID_FORMAT, CALL_ID_PREFIX_LENGTH } from './call-ids.ts'
export { CallTable, PendingCall } from './calls.ts'
export { DEADLINE_SLOT_MS, Deadlines } from './deadlines.ts'
export type { DeadlineSlot } from './deadlines.ts'
export { RegistrationStore, requestProblem, requireNamespace, requireWellFormedId, triggerTypeKey } from './registrations.ts'
export type { LocalFunction, LocalTrigger, LocalTriggerType } from './registrations.ts'
export { ProviderBindings } from './bindings.ts'
export { systemTimers } from './timers.ts'
export type { TimerHandle, Timers } from './timers.ts'
export { TriggerAction } from './trigger-action.ts'
export { createStream } from './streams.ts'
export type { FunctionRegistrar, IStream } from './streams.ts'
export {
  ChannelError,
  ConnectionError,
  ErrorCode,
  errorMessage,
  InvocationError,
  invocationError,
  isErrorBody,
  NonRetryableError,
  RegistrationRejectedError,
  RetryAfterError,
  toErrorBody,
} from './errors.ts'
export type { ChannelErrorInit, ErrorBody, ErrorCodeValue, InvocationErrorInit } from './errors.ts'
export { Channels, createChannel, DEFAULT_CHANNEL_BUFFER_SIZE } from './channels/channels.ts'
export type { Channel, ChannelsOptions } from './channels/channels.ts'
export { ChannelReader } from './channels/reader.ts'
export type { ReadAllOptions } from './channels/reader.ts'
export { ChannelWriter } from './channels/writer.ts'
export { ChannelCloseCodes, ChannelEnd, DEFAULT_CHANNEL_LIMITS } from './channels/end.ts'
export type { ChannelLimits, ChannelLink } from './channels/end.ts'
export { channelBase, ChannelDirection, ChannelItem, channelUrl, extractChannelRefs, isChannelRef, MAX_REF_FIELD_LENGTH } from './channels/refs.ts'
export type { StreamChannelRef } from './channels/refs.ts'
export { webSocketChannels } from './channels/socket.ts'
export type { ChannelSocket, ChannelSocketEvents, ChannelSocketFactory, WebSocketConstructorLike, WebSocketLike } from './channels/socket.ts'
export type * from './types.ts'
export type { WorkerAnnounce } from '../messages.ts'
export type { ConnectOptions, Connector, Transport, TransportHandlers } from '../transport/types.ts'

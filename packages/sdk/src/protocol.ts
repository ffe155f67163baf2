/**
 * Wire messages of the svc worker protocol (protocol.md §4–§5), re-exported from `svc-protocol`.
 *
 * @example
 * import { MessageType, type InvokeFunctionMessage } from 'svc-sdk/protocol'
 */
export * from 'svc-protocol/messages'

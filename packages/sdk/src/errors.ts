/**
 * Error classes and the stable error codes shared by the engine, the SDK and the CLI
 * (protocol.md §7.2, sdk.md §7). The classes are the client core's (`svc-protocol/client`), so
 * errors raised by any SDK built on it pass `instanceof` checks against these.
 */
export {
  ChannelError,
  ErrorCode,
  InvocationError,
  isErrorBody,
  NonRetryableError,
  RegistrationRejectedError,
  RetryAfterError,
  toErrorBody,
} from 'svc-protocol/client'
export type { ChannelErrorInit, ErrorBody, ErrorCodeValue, InvocationErrorInit } from 'svc-protocol/client'

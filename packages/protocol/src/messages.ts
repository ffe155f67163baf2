/**
 * Wire messages of the svc worker protocol (protocol.md §4–§5).
 *
 * Every frame is one JSON object with a lower-case string `type`; field names are snake_case.
 * Engine-to-worker frames omit optional fields rather than sending `null`.
 */
import type { ErrorBody } from './errors.ts'

export type { ErrorBody }

/** The wire `type` values (protocol.md §4). */
export const MessageType = {
  RegisterFunction: 'registerfunction',
  UnregisterFunction: 'unregisterfunction',
  RegisterTriggerType: 'registertriggertype',
  UnregisterTriggerType: 'unregistertriggertype',
  RegisterTrigger: 'registertrigger',
  UnregisterTrigger: 'unregistertrigger',
  TriggerRegistrationResult: 'triggerregistrationresult',
  InvokeFunction: 'invokefunction',
  InvocationResult: 'invocationresult',
  CancelInvocation: 'cancelinvocation',
  WorkerRegistered: 'workerregistered',
  RegistrationRejected: 'registrationrejected',
  Reattach: 'reattach',
  RegisterService: 'registerservice',
  Ping: 'ping',
  Pong: 'pong',
  Error: 'error',
} as const
export type MessageTypeValue = (typeof MessageType)[keyof typeof MessageType]

/** Any JSON value. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }

/** Routing action of an invocation (protocol.md §4, §6.3–§6.4). Absent means synchronous. */
export type TriggerActionValue =
  | { type: 'void' }
  | { type: 'enqueue'; queue: string; delay_ms?: number; idempotency_key?: string }

/** Describes a value; JSON Schema documents are valid FormatSchemas (protocol.md §4). */
export interface FormatSchema {
  description?: string
  name?: string
  type?: 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null' | 'map'
  properties?: Record<string, unknown>
  items?: unknown
  required?: string[]
  [key: string]: unknown
}

export type HttpAuth =
  | { type: 'hmac'; secret_key: string }
  | { type: 'bearer'; token_key: string }
  | { type: 'api_key'; header: string; value_key: string }

/** Config of a function the engine executes by HTTP (protocol.md §6.8). */
export interface HttpInvocationConfig {
  url: string
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  headers?: Record<string, string>
  timeout_ms?: number
  auth?: HttpAuth
}

/** §5.1 */
export interface RegisterFunctionMessage {
  type: 'registerfunction'
  id: string
  description?: string
  request_format?: FormatSchema
  response_format?: FormatSchema
  metadata?: Record<string, unknown>
  invocation?: HttpInvocationConfig
}

/** §5.2 */
export interface UnregisterFunctionMessage {
  type: 'unregisterfunction'
  id: string
}

/** §5.3 */
export interface RegisterTriggerTypeMessage {
  type: 'registertriggertype'
  id: string
  description: string
  trigger_request_format?: FormatSchema
  call_request_format?: FormatSchema
  namespace?: string
}

/** §5.4 */
export interface UnregisterTriggerTypeMessage {
  type: 'unregistertriggertype'
  id: string
  namespace?: string
}

/** §5.5 — sent by consumers (W→E) and by the engine to providers (E→W). */
export interface RegisterTriggerMessage {
  type: 'registertrigger'
  id: string
  trigger_type: string
  function_id: string
  config: unknown
  metadata?: unknown
  namespace?: string
  trigger_namespace?: string
}

/** §5.6 */
export interface UnregisterTriggerMessage {
  type: 'unregistertrigger'
  id: string
  trigger_type?: string
  function_id?: string
}

/** §5.7 */
export interface TriggerRegistrationResultMessage {
  type: 'triggerregistrationresult'
  id: string
  trigger_type: string
  function_id: string
  error?: ErrorBody
}

/** §5.8 */
export interface InvokeFunctionMessage {
  type: 'invokefunction'
  invocation_id?: string
  function_id: string
  data: unknown
  metadata?: unknown
  action?: TriggerActionValue
  namespace?: string
  traceparent?: string
  baggage?: string
}

/** §5.9 */
export interface InvocationResultMessage {
  type: 'invocationresult'
  invocation_id: string
  function_id: string
  result?: unknown
  error?: ErrorBody
  traceparent?: string
  baggage?: string
  /**
   * Start of the handler's span `execute <function_id>` whose context is `traceparent`, in
   * nanoseconds since the Unix epoch as a decimal string (svc addition, docs/reference/protocol.md
   * "Handler spans recorded by the engine"): with {@link span_end}, asks the engine to record that
   * span. Sent only to an engine whose `workerregistered` lists {@link HANDLER_SPANS_FEATURE}.
   */
  span_start?: string
  /** End of that span, as {@link span_start}. */
  span_end?: string
}

/**
 * The feature an engine lists in `workerregistered.features` when it records a handler's span
 * from the `span_start`/`span_end` of its `invocationresult` (svc addition).
 */
export const HANDLER_SPANS_FEATURE = 'handler_spans'

/**
 * Cancels an invocation (svc addition, docs/reference/protocol.md "cancelinvocation"), both
 * directions. W→E: a caller cancels a call it made, naming the `invocation_id` it sent; the
 * engine answers that call at once with the error `cancelled` and passes the cancel on. E→W: the
 * engine tells the worker running a call (by the leg's `invocation_id`, §5.8) to stop; no answer is
 * owed. Workers that do not know the type ignore it (§3.5), so old SDKs keep working.
 */
export interface CancelInvocationMessage {
  type: 'cancelinvocation'
  invocation_id: string
  /** Why, for the handler and the logs; at most {@link MAX_CANCEL_REASON} characters are kept. */
  reason?: string
}

/** Characters of a `cancelinvocation` reason the engine keeps (longer ones are cut). */
export const MAX_CANCEL_REASON = 1024

/** §5.10 */
export interface WorkerRegisteredMessage {
  type: 'workerregistered'
  worker_id: string
  reattach_token: string
  /** What this engine does beyond §5 (svc addition): e.g. {@link HANDLER_SPANS_FEATURE}. Absent: nothing. */
  features?: string[]
}

/** §5.11 */
export interface RegistrationRejectedMessage {
  type: 'registrationrejected'
  code: string
  reason: 'reserved_id' | 'forbidden' | 'hook_denied' | 'invalid'
  message: string
  namespace: string
  function_id?: string
  trigger_type_id?: string
  worker_name?: string
  owner_worker_id: string
}

/** §5.12 */
export interface ReattachMessage {
  type: 'reattach'
  previous_worker_id: string
  reattach_token: string
}

/** §5.13 */
export interface RegisterServiceMessage {
  type: 'registerservice'
  id: string
  name?: string
  description?: string
  parent_service_id?: string
}

export interface PingMessage {
  type: 'ping'
}
export interface PongMessage {
  type: 'pong'
}

/** §5.15 */
export interface ErrorMessage {
  type: 'error'
  error: ErrorBody
}

export type Message =
  | RegisterFunctionMessage
  | UnregisterFunctionMessage
  | RegisterTriggerTypeMessage
  | UnregisterTriggerTypeMessage
  | RegisterTriggerMessage
  | UnregisterTriggerMessage
  | TriggerRegistrationResultMessage
  | InvokeFunctionMessage
  | InvocationResultMessage
  | CancelInvocationMessage
  | WorkerRegisteredMessage
  | RegistrationRejectedMessage
  | ReattachMessage
  | RegisterServiceMessage
  | PingMessage
  | PongMessage
  | ErrorMessage

/** Payload of the announce, `engine::workers::register` (protocol.md §3.2). */
export interface WorkerAnnounce {
  runtime?: string
  version?: string
  name?: string
  description?: string
  os?: string
  pid?: number
  isolation?: string | null
  namespace?: string
  telemetry?: {
    language?: string
    project_name?: string
    framework?: string
    amplitude_api_key?: string
  }
  /**
   * Sent by a worker that leaves its handler spans to the engine (svc addition,
   * docs/reference/protocol.md "Handler spans recorded by the engine"): its OpenTelemetry resource
   * and payload event settings. `payloads` false: no payload events; `payload_max_bytes`: their cap
   * in UTF-8 bytes (null or absent: uncapped).
   */
  handler_spans?: {
    resource: Record<string, string>
    payloads?: boolean
    payload_max_bytes?: number | null
  }
}

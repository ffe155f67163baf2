/**
 * Public types of `svc-sdk` (sdk.md §1–§8). The implementation is in `client.ts`.
 */
import type { OtelConfig } from 'svc-helpers/observability'
import type {
  FormatSchema,
  HttpAuth,
  HttpInvocationConfig as WireHttpInvocationConfig,
  JsonValue,
  TriggerActionValue,
} from 'svc-protocol/messages'

export type { JsonValue, TriggerActionValue }
export type { HttpRequest, HttpResponse, HttpTriggerInfo } from 'svc-protocol/payloads/http'

/**
 * Reconnection backoff (sdk.md §2). Delay before reconnect attempt `n` (0-based, reset on every
 * successful open): `d = min(initialDelayMs × backoffMultiplier^n, maxDelayMs)`, then
 * `floor(d + d × jitterFactor × (2·random − 1))`.
 */
export interface ReconnectionConfig {
  /** Delay before the first reconnect attempt, ms. Default 1000. */
  initialDelayMs: number
  /** Upper bound of the delay before jitter, ms. Default 30000. */
  maxDelayMs: number
  /** Growth factor per attempt. Default 2. */
  backoffMultiplier: number
  /** Relative jitter, 0–1. Default 0.3. */
  jitterFactor: number
  /** Reconnect attempts allowed after a connection is lost before the client enters `failed`; -1 = unlimited (default). */
  maxRetries: number
}

/** Worker metadata sent in the announce's `telemetry` field (sdk.md §2). All optional. */
export interface TelemetryOptions {
  /** Default: `typescript` when the entry script ends in `.ts`/`.mts`/`.cts`, else `javascript`. */
  language?: string
  /** Default: `name` of the nearest `package.json` above the working directory, else its base name. */
  project_name?: string
  /** Default `svc-node`. */
  framework?: string
  /** Accepted for compatibility; the engine discards it. */
  amplitude_api_key?: string
}

/**
 * Options of {@link registerWorker} (sdk.md §2).
 */
export interface InitOptions {
  /** Name reported in the announce; a label, need not be unique. Default env `SVC_WORKER_NAME`, else `<hostname>:<pid>`. */
  workerName?: string
  /** One-line summary shown by `engine::workers::list`. */
  workerDescription?: string
  /** Namespace of the worker. Default env `SVC_NAMESPACE` (empty counts as unset), else none (`default`). Blank throws. */
  namespace?: string
  /** Default timeout of synchronous and enqueue `trigger` calls, ms. Default 30000. */
  invocationTimeoutMs?: number
  /** Merged over the defaults of {@link ReconnectionConfig}. */
  reconnectionConfig?: Partial<ReconnectionConfig>
  /** Extra HTTP headers on the WebSocket upgrade (input of the listener's auth function, protocol.md §13.2). */
  headers?: Record<string, string>
  /** Worker metadata for the announce. */
  telemetry?: TelemetryOptions
  /** Worker resource gauges (sdk.md §12.3). Default true. */
  enableMetricsReporting?: boolean
  /** Telemetry (sdk.md §12.1), on by default; `engineWsUrl` is always the worker address. */
  otel?: Omit<OtelConfig, 'engineWsUrl'>
}

/** Connection states (sdk.md §8). `failed` and a `disconnected` reached through `shutdown()` are terminal. */
export type ConnectionState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'failed'

/**
 * A function handler (sdk.md §4). Receives the payload and the invocation `metadata` (undefined when
 * the caller sent none). The resolved value becomes the result (`undefined`: no result); a thrown
 * error becomes the error body (its own `code` when valid, else `invocation_failed`).
 */
export type FunctionHandler<TIn = any, TOut = any> = (data: TIn, metadata?: JsonValue) => TOut | Promise<TOut>

/** Describes a value; JSON Schema documents are valid formats (protocol.md §4 FormatSchema). */
export type RegisterFunctionFormat = FormatSchema

/** Options of `registerFunction` (sdk.md §4). */
export interface RegisterFunctionOptions {
  description?: string
  /** Free JSON; `internal: true` hides the function from default listings. */
  metadata?: Record<string, JsonValue>
  request_format?: RegisterFunctionFormat
  response_format?: RegisterFunctionFormat
}

/** Authentication of an HTTP-invoked function: names of engine-side environment variables, never secrets. */
export type HttpAuthConfig = HttpAuth

/**
 * A function the engine executes by calling a URL (protocol.md §6.8): method default POST,
 * `timeout_ms` default 30000.
 */
export type HttpInvocationConfig = WireHttpInvocationConfig

/** A registered function. `unregister()` sends `unregisterfunction` and forgets the handler; idempotent. */
export interface FunctionRef {
  readonly id: string
  unregister(): void
}

/** Input of `registerTrigger` (sdk.md §5). */
export interface RegisterTriggerInput<TConfig = unknown> {
  /** Trigger type id; sent as `trigger_type`. */
  type: string
  function_id: string
  config: TConfig
  /** Delivered to the target as the invocation `metadata` each time the trigger fires. */
  metadata?: Record<string, JsonValue>
  /** Namespace of the target function; default the worker's (omitted for ids beginning `engine::`). Blank throws. */
  namespace?: string
  /** Namespace of the provider; default: engine rules (protocol.md §8.2). Blank throws. */
  trigger_namespace?: string
}

/**
 * `config` of a `subscribe` trigger of the built-in `svc-pubsub` (builtins.md §8). The handler
 * receives the published `data` unchanged as its payload.
 *
 * @example
 * client.registerTrigger<SubscribeTriggerConfig>({ type: 'subscribe', function_id: 'mail::on-order', config: { topic: 'orders' } })
 */
export interface SubscribeTriggerConfig {
  /** Exact, case-sensitive topic; non-empty (an empty one is refused with `INVALID_TRIGGER_CONFIG`). */
  topic: string
  /** Function deciding per message; only a `false` result skips it (builtins.md §2.2). */
  condition_function_id?: string
}

/**
 * `config` of a `cron` trigger of the built-in `svc-cron` (builtins.md §9.1). Refusals come back
 * as `INVALID_TRIGGER_CONFIG` (`Cron expression is required`, `Invalid cron expression '<expr>':
 * <reason>`, `Unknown timezone '<tz>'`).
 *
 * @example
 * client.registerTrigger<CronTriggerConfig>({
 *   type: 'cron', function_id: 'reports::daily', config: { expression: '0 0 2 * * *', timezone: 'Europe/Berlin' },
 * })
 */
export interface CronTriggerConfig {
  /** `second minute hour day-of-month month day-of-week [year]` (six or seven fields, §9.2). */
  expression: string
  /** IANA zone name; default the worker's `default_timezone` (`UTC`). */
  timezone?: string
  /** Bound of one run in ms; default 3 600 000. A timed-out run counts as finished and is logged. */
  timeout_ms?: number
  /** Function deciding per slot; `false` or a failure skips the slot (builtins.md §2.2). */
  condition_function_id?: string
}

/** Payload a `cron` trigger delivers (builtins.md §9.3); times are RFC 3339 UTC with milliseconds. */
export interface CronTriggerPayload {
  trigger: 'cron'
  /** Id of the trigger the run is made for (the oldest of identical replicas). */
  job_id: string
  scheduled_time: string
  actual_time: string
}

/** A binding registered by this client. `unregister()` sends `unregistertrigger`; idempotent. */
export interface Trigger {
  /** Generated trigger id (UUID v4), stable across reconnects. */
  readonly id: string
  unregister(): void
}

/** Input of `registerTriggerType` (sdk.md §5). */
export interface RegisterTriggerTypeInput {
  id: string
  description: string
  /** Shape of a binding's config. */
  trigger_request_format?: RegisterFunctionFormat
  /** Shape of the payload the type delivers. */
  call_request_format?: RegisterFunctionFormat
  /** Namespace the provider serves; omitted means the worker's. */
  namespace?: string
}

/** A binding as delivered to a provider (protocol.md §8.3). */
export interface TriggerConfig<TConfig = unknown> {
  /** Trigger id; key your tables by it. */
  id: string
  function_id: string
  config: TConfig
  metadata?: Record<string, JsonValue>
  /** Namespace to invoke `function_id` in (`default` when the binding named none). */
  namespace?: string
}

/**
 * The provider side of a trigger type. `registerTrigger` throwing refuses the binding
 * (`trigger_registration_failed` with the thrown message); errors of `unregisterTrigger` are logged.
 */
export interface TriggerHandler<TConfig = unknown> {
  registerTrigger(trigger: TriggerConfig<TConfig>): void | Promise<void>
  unregisterTrigger(trigger: TriggerConfig<TConfig>): void | Promise<void>
}

/** A trigger type this client provides (sdk.md §5). */
export interface TriggerTypeRef<TConfig = unknown> {
  readonly id: string
  /** Binds `functionId` to this type; the target namespace defaults to the worker's. */
  registerTrigger(functionId: string, config: TConfig, metadata?: Record<string, JsonValue>): Trigger
  /** Registers a function and binds it to this type; the ref's `unregister()` removes both. */
  registerFunction(
    functionId: string,
    handler: FunctionHandler,
    config: TConfig,
    metadata?: Record<string, JsonValue>,
  ): FunctionRef
  /** Sends `unregistertriggertype`. */
  unregister(): void
}

/** A call of `trigger` (sdk.md §6). */
export interface TriggerRequest<TIn = unknown> {
  function_id: string
  /** `undefined` is sent as `null`. */
  payload: TIn
  /** Absent: synchronous. See {@link TriggerAction}. */
  action?: TriggerActionValue
  /** Timeout of synchronous and enqueue calls, ms; default `invocationTimeoutMs`. */
  timeoutMs?: number
  /** Delivered to the handler as its second argument. */
  metadata?: JsonValue
  /** Namespace of the target; default the worker's, omitted for ids beginning `engine::`. */
  namespace?: string
}

/** Result of an enqueue call: the queue worker persisted the message. */
export interface EnqueueResult {
  messageReceiptId: string
}

/** A non-fatal registration refusal (sdk.md §7.3), reported to registration error listeners. */
export interface RegistrationError {
  kind: 'function' | 'trigger_type' | 'trigger'
  /** Function id, trigger type id or trigger id. */
  id: string
  /** E.g. FUNCTION_NAMESPACE_CONFLICT, FORBIDDEN, trigger_registration_failed, ROUTE_CONFLICT. */
  code: string
  /** `registrationrejected.reason`. */
  reason?: string
  message: string
  namespace?: string
  trigger_type?: string
  function_id?: string
}

/**
 * A connection to the engine (sdk.md §3). Registrations work in any state: they are stored and
 * (re)sent on every open, never queued as frames, and never wait for the engine.
 */
export interface SvcClient {
  /**
   * Registers a function served by `handler`, or by the engine calling a URL when given an
   * {@link HttpInvocationConfig}.
   * @throws Error `function id is required` for an empty id; `function id already registered: <id>`
   *   when this client already holds the id. InvocationError `INVALID_ID` for an id the engine
   *   would refuse (a lone UTF-16 surrogate, a control character, more than 1024 characters;
   *   protocol.md §3.5), before anything is sent: `Invalid id: function id contains a lone UTF-16
   *   surrogate at index 5`.
   */
  registerFunction<TIn = any, TOut = any>(
    id: string,
    handler: FunctionHandler<TIn, TOut>,
    options?: RegisterFunctionOptions,
  ): FunctionRef
  registerFunction(id: string, invocation: HttpInvocationConfig, options?: RegisterFunctionOptions): FunctionRef
  /**
   * Binds a function to a trigger type.
   * @throws TypeError for a blank `type`, `function_id`, `namespace` or `trigger_namespace`;
   *   InvocationError `INVALID_ID` for a `type` or `function_id`, `INVALID_NAMESPACE` for a
   *   namespace, that is not well-formed text (protocol.md §3.5), before anything is sent.
   */
  registerTrigger<TConfig = unknown>(input: RegisterTriggerInput<TConfig>): Trigger
  /**
   * Provides a trigger type; the engine delivers bindings to `handler`.
   * @throws TypeError for a blank `id` or `namespace`, or a handler without both methods;
   *   InvocationError `INVALID_ID` / `INVALID_NAMESPACE` for an `id` / `namespace` that is not
   *   well-formed text (protocol.md §3.5), before anything is sent.
   */
  registerTriggerType<TConfig = unknown>(
    input: RegisterTriggerTypeInput,
    handler: TriggerHandler<TConfig>,
  ): TriggerTypeRef<TConfig>
  unregisterTriggerType(input: { id: string; namespace?: string }): void

  /**
   * Invokes a function (sdk.md §6). Rejects with an `InvocationError` (`TIMEOUT`,
   * `invocation_stopped`, `NOT_CONNECTED`, `SHUTDOWN`, or the remote code); at once, without
   * sending, with `INVALID_ID` / `INVALID_NAMESPACE` for a `function_id` / `namespace` the
   * engine would refuse (protocol.md §3.5), whatever the action.
   */
  trigger<TIn = unknown, TOut = unknown>(request: TriggerRequest<TIn> & { action?: undefined }): Promise<TOut>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'void' } }): Promise<void>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'enqueue' } }): Promise<EnqueueResult>

  getConnectionState(): ConnectionState
  /** Calls `listener` synchronously with the current state, then on every change. Returns the remover. */
  addConnectionStateListener(listener: (state: ConnectionState) => void): () => void
  /** Returns the remover. */
  addRegistrationErrorListener(listener: (error: RegistrationError) => void): () => void
  /** From the latest `workerregistered`. */
  getWorkerId(): string | undefined
  getAddress(): string
  getNamespace(): string | undefined
  /** The fatal error in `failed`, else the last connection-level error. */
  getLastError(): Error | undefined
  /** Rejects pending calls with `SHUTDOWN`, closes with code 1000. Idempotent. */
  shutdown(): Promise<void>
}

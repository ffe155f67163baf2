/**
 * The public API of an svc client (sdk.md §3–§8), shared by every SDK built on the client core:
 * `svc-sdk` (Node) and `svc-browser-sdk` re-export these types; {@link ClientSession} implements
 * {@link SvcClient}. Platform-free: no Node or OpenTelemetry type appears here.
 */
import type {
  FormatSchema,
  HttpAuth,
  HttpInvocationConfig as WireHttpInvocationConfig,
  JsonValue,
  TriggerActionValue,
} from '../messages.ts'
import type { Channel } from './channels/channels.ts'

export type { JsonValue, TriggerActionValue }

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

/** Connection states (sdk.md §8). `failed` and a `disconnected` reached through `shutdown()` are terminal. */
export type ConnectionState = 'disconnected' | 'connecting' | 'connected' | 'reconnecting' | 'failed'

/**
 * What a handler learns about the invocation it runs, its third argument (svc addition: the
 * second stays the invocation `metadata`, as iii handlers have it).
 */
export interface HandlerContext {
  /** The id the engine gave this invocation (the leg's `invocation_id`, protocol.md §5.8). */
  readonly invocationId: string
  readonly functionId: string
  /**
   * Aborts when the invocation is cancelled: its caller cancelled it, its caller's or the engine's
   * timeout passed, its caller or HTTP client went away, or `engine::invocations::cancel` named it
   * (`cancelinvocation` from the engine). `signal.reason` is an `InvocationError` with code
   * `cancelled` whose message carries the canceller's reason. Nobody waits for the answer any
   * more: stop the work, and return or throw as you like (the SDK sends nothing back). Calls the
   * handler makes with `trigger` while it runs are cancelled with it (svc-sdk; in a browser pass
   * `signal` to them). Made on first use.
   *
   * @example
   * client.registerFunction('report::build', async (input, _metadata, { signal }) => {
   *   for (const page of input.pages) {
   *     signal.throwIfAborted()
   *     await render(page, { signal })
   *   }
   * })
   */
  readonly signal: AbortSignal
}

/**
 * A function handler (sdk.md §4). Receives the payload, the invocation `metadata` (undefined when
 * the caller sent none) and a {@link HandlerContext} (its `signal` aborts when the invocation is
 * cancelled). The resolved value becomes the result (`undefined`: no result); a thrown error
 * becomes the error body (its own `code` when valid, else `invocation_failed`).
 */
export type FunctionHandler<TIn = any, TOut = any> = (data: TIn, metadata: JsonValue | undefined, context: HandlerContext) => TOut | Promise<TOut>

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
  /**
   * Cancels the call when it aborts (synchronous and enqueue calls): the call rejects at once with
   * an `InvocationError` `cancelled` (the signal's reason, when a string or an `Error`, in its
   * message), and the engine is sent `cancelinvocation` so the worker running it is told to stop
   * (a call still queued while disconnected is dropped unsent). Already aborted: rejects without
   * sending. Inside a handler, calls default to the handler's own `signal` (svc-sdk).
   *
   * @example
   * const controller = new AbortController()
   * const report = client.trigger({ function_id: 'report::build', payload: { pages }, signal: controller.signal })
   * cancelButton.onclick = () => controller.abort('the user closed the page')
   */
  signal?: AbortSignal
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
  /**
   * Calls `listener` synchronously with the current state, then on every change, with the engine
   * address of that moment ({@link getAddress}). Returns the remover.
   */
  addConnectionStateListener(listener: (state: ConnectionState, address: string) => void): () => void
  /** Returns the remover. */
  addRegistrationErrorListener(listener: (error: RegistrationError) => void): () => void
  /** From the latest `workerregistered`. */
  getWorkerId(): string | undefined
  /**
   * The engine address the client is connected to; while it is not, the one it tries next
   * (issue 19 §3: one of several addresses). As given, credentials included.
   */
  getAddress(): string
  /** Every engine address of the client, in the order they are tried. */
  getAddresses(): readonly string[]
  getNamespace(): string | undefined
  /** The fatal error in `failed`, else the last connection-level error. */
  getLastError(): Error | undefined
  /** Rejects pending calls with `SHUTDOWN`, closes with code 1000. Idempotent. */
  shutdown(): Promise<void>
  /**
   * Creates a channel (`engine::channels::create`, sdk.md §9): its live writer and reader, and
   * the refs to pass in a payload or result. `bufferSize`: items the engine holds, 1–1024,
   * default 64.
   * @throws (rejects) InvocationError `INVALID_ARGUMENTS`, `TOO_MANY_CHANNELS` or the call's own
   *   failures; TypeError when the client has no channel support (a bare session without a
   *   `Channels` materializer).
   */
  createChannel(bufferSize?: number): Promise<Channel>
}

/**
 * The error catalogue of svc (protocol.md §7, builtins.md §2.1 and the error tables of each
 * built-in worker): every code the engine, its built-in workers and the SDKs produce, with its
 * message template, the HTTP status it takes where it surfaces over HTTP, and the exit class the
 * CLI gives it. Engine, SDK and CLI all build their errors from here, so a code means the same
 * thing everywhere and `docs/reference/errors.md` can list them all.
 *
 * Codes are the stable contract; messages are normative only where protocol.md marks them "exact".
 *
 * @example
 * throw Errors.functionNotFound('math::add', 'shop', ['default'])
 * // SvcError: Function math::add not found in namespace shop. It is registered in namespace(s): default
 */

/** `{code, message, stacktrace?}`: every failure on the wire (protocol.md §7.1). */
export interface ErrorBody {
  code: string
  message: string
  stacktrace?: string
  /** A handler asking a queue to retry after this many ms instead of the backoff (builtins.md §7.7). */
  retry_after_ms?: number
}

/**
 * How the CLI exits when an operation fails with a code (cli.md §1.1): `failure` 1, `usage` 2,
 * `unreachable` 3, `timeout` 4. A function's own error is a `failure` whatever its code.
 */
export type ExitClass = 'failure' | 'usage' | 'unreachable' | 'timeout'

export const EXIT_CODES: Readonly<Record<ExitClass, number>> = { failure: 1, usage: 2, unreachable: 3, timeout: 4 }

/** Who produces a code (protocol.md §7.2 "Produced by"). */
export type ErrorSource = 'engine' | 'sdk' | 'provider' | 'http' | 'state' | 'queue' | 'pubsub' | 'configuration' | 'database' | 'console' | 'cli'

/** One code of the catalogue. */
export interface CatalogueEntry {
  readonly code: string
  /** HTTP status where the error itself is the answer (HTTP worker, console backend). */
  readonly status: number
  readonly exit: ExitClass
  readonly source: readonly ErrorSource[]
  /** When the code is produced, one sentence: its cause (reference docs). */
  readonly when: string
  /** What to do about it, one or two sentences (the Fix column of docs/reference/errors.md). */
  readonly fix: string
  /**
   * A one-line hint the CLI prints as `Hint: <hint>` after an error with this code (cli.md §1);
   * only where a generic hint fits every occurrence. The CLI reads hints from here and nowhere else.
   */
  readonly hint?: string
  /** False for codes that never travel on the wire (client-side only, protocol.md §7.2). */
  readonly wire: boolean
}

/**
 * An error with a stable `code`: thrown by engine code, built-in handlers and the CLI, and turned
 * into the wire ErrorBody `{code, message, stacktrace?}` (the SDK's public error class is
 * `InvocationError`, sdk.md §7.1, built from the same codes).
 */
export class SvcError extends Error {
  override name = 'SvcError'
  readonly code: string
  /** A remote stack, kept when an ErrorBody carried one. */
  stacktrace?: string
  /** `retry_after_ms` of the body (builtins.md §7.7), kept so that a queue delivery sees it. */
  retry_after_ms?: number

  constructor(code: string, message: string, options?: { cause?: unknown; stacktrace?: string; retry_after_ms?: number }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    if (options?.stacktrace !== undefined) this.stacktrace = options.stacktrace
    if (options?.retry_after_ms !== undefined) this.retry_after_ms = options.retry_after_ms
  }

  toErrorBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.message }
    if (this.stacktrace !== undefined) body.stacktrace = this.stacktrace
    if (this.retry_after_ms !== undefined) body.retry_after_ms = this.retry_after_ms
    return body
  }

  /** The error an ErrorBody describes (stack and `retry_after_ms` kept). */
  static fromBody(body: ErrorBody): SvcError {
    const options: { stacktrace?: string; retry_after_ms?: number } = {}
    if (body.stacktrace !== undefined) options.stacktrace = body.stacktrace
    if (body.retry_after_ms !== undefined) options.retry_after_ms = body.retry_after_ms
    return new SvcError(body.code, body.message, options)
  }
}

/** True when `value` has the ErrorBody shape `{code: string, message: string, stacktrace?: string}`. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v.code === 'string' && typeof v.message === 'string' && (v.stacktrace === undefined || typeof v.stacktrace === 'string')
}

/** Codes an error may carry of its own: 1–64 characters of `[A-Za-z0-9_.:-]` (sdk.md §4). */
export const OWN_CODE_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/

/**
 * Turns anything thrown into an ErrorBody: an {@link SvcError} or any object with a valid string
 * `code` and a string `message` keeps them; another `Error` becomes `invocation_failed` with its
 * message and stack; anything else `invocation_failed` with its text.
 */
export function errorBodyOf(thrown: unknown): ErrorBody {
  if (thrown instanceof SvcError) return thrown.toErrorBody()
  if (typeof thrown === 'object' && thrown !== null) {
    const t = thrown as { code?: unknown; message?: unknown; stacktrace?: unknown; stack?: unknown }
    if (typeof t.code === 'string' && OWN_CODE_PATTERN.test(t.code) && typeof t.message === 'string') {
      const body: ErrorBody = { code: t.code, message: t.message }
      if (typeof t.stacktrace === 'string') body.stacktrace = t.stacktrace
      else if (thrown instanceof Error && typeof t.stack === 'string') body.stacktrace = t.stack
      const retryAfter = (thrown as { retry_after_ms?: unknown }).retry_after_ms
      if (isRetryAfter(retryAfter)) body.retry_after_ms = retryAfter
      return body
    }
    if (thrown instanceof Error) {
      const body: ErrorBody = { code: Codes.InvocationFailed, message: thrown.message }
      if (thrown.stack) body.stacktrace = thrown.stack
      return body
    }
  }
  return { code: Codes.InvocationFailed, message: typeof thrown === 'string' ? thrown : safeText(thrown) }
}

/**
 * Reads a wire `error` value: an ErrorBody as it is, anything else `UNKNOWN` with its JSON text
 * (sdk.md §7.1: no error ever reads `[object Object]`).
 */
export function wireErrorBody(value: unknown): ErrorBody {
  if (isErrorBody(value)) {
    const body: ErrorBody = { code: value.code, message: value.message }
    if (value.stacktrace !== undefined) body.stacktrace = value.stacktrace
    const retryAfter = (value as { retry_after_ms?: unknown }).retry_after_ms
    if (isRetryAfter(retryAfter)) body.retry_after_ms = retryAfter
    return body
  }
  return { code: Codes.Unknown, message: safeText(value) }
}

/** A usable `retry_after_ms`: a finite number ≥ 0. */
function isRetryAfter(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
}

function safeText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** Every code of the catalogue by name; the names are those `svc-sdk` exports as `ErrorCode`. */
export const Codes = {
  // protocol.md §7.2
  FunctionNotFound: 'function_not_found',
  FunctionNotInvokable: 'function_not_invokable',
  InvocationFailed: 'invocation_failed',
  InvocationStopped: 'invocation_stopped',
  // svc addition: cancellation (docs/reference/protocol.md "cancelinvocation")
  Cancelled: 'cancelled',
  Timeout: 'TIMEOUT',
  InvalidMessage: 'invalid_message',
  InvalidNamespace: 'INVALID_NAMESPACE',
  InvalidArguments: 'INVALID_ARGUMENTS',
  StorageDisabled: 'STORAGE_DISABLED',
  NotFound: 'NOT_FOUND',
  Forbidden: 'FORBIDDEN',
  EnqueueError: 'enqueue_error',
  QueueNotFound: 'queue_not_found',
  // builtins.md §7.3, §7.7 (queue worker)
  QueueNotSet: 'queue_not_set',
  TopicNotSet: 'topic_not_set',
  MessageIdNotSet: 'message_id_not_set',
  InvalidQueueConfig: 'invalid_queue_config',
  NonRetryable: 'NON_RETRYABLE',
  RetryAfter: 'RETRY_AFTER',
  NoSubscribers: 'no_subscribers',
  SubscriberExpired: 'subscriber_expired',
  DeliveryInterrupted: 'delivery_interrupted',
  TriggerRegistrationFailed: 'trigger_registration_failed',
  TriggerTypeNotFound: 'trigger_type_not_found',
  InvalidTriggerConfig: 'INVALID_TRIGGER_CONFIG',
  RouteConflict: 'ROUTE_CONFLICT',
  HttpError: 'http_error',
  HttpRequestFailed: 'http_request_failed',
  InvalidResponse: 'invalid_response',
  UrlValidationFailed: 'url_validation_failed',
  SecretNotSet: 'secret_not_set',
  InternalError: 'internal_error',
  AuthError: 'AUTH_ERROR',
  FunctionNamespaceConflict: 'FUNCTION_NAMESPACE_CONFLICT',
  NotConnected: 'NOT_CONNECTED',
  Shutdown: 'SHUTDOWN',
  Unknown: 'UNKNOWN',
  // engine limits (svc additions, docs/decisions.md)
  TooManyInvocations: 'TOO_MANY_INVOCATIONS',
  // protocol.md §9: channels
  ChannelClosed: 'CHANNEL_CLOSED',
  TooManyChannels: 'TOO_MANY_CHANNELS',
  ChannelDataTooLarge: 'CHANNEL_DATA_TOO_LARGE',
  ResultTooLarge: 'RESULT_TOO_LARGE',
  // builtins.md §3.9 (HTTP worker)
  InvalidBody: 'INVALID_BODY',
  InvalidRequest: 'INVALID_REQUEST',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  ConditionNotMet: 'CONDITION_NOT_MET',
  FunctionUnavailable: 'FUNCTION_UNAVAILABLE',
  // builtins.md §4.2, §13.4 (state and other stores)
  ValueTooLarge: 'VALUE_TOO_LARGE',
  StorageError: 'STORAGE_ERROR',
  AdapterUnavailable: 'ADAPTER_UNAVAILABLE',
  // builtins.md §2.8
  ExpandFailed: 'EXPAND_FAILED',
  // builtins.md §7 (queue, through the enqueue action)
  InvalidMessageGroup: 'invalid_message_group',
  // builtins.md §11.2 (configuration)
  InvalidId: 'INVALID_ID',
  NotRegistered: 'NOT_REGISTERED',
  SchemaUnavailable: 'SCHEMA_UNAVAILABLE',
  SchemaInvalid: 'SCHEMA_INVALID',
  // builtins.md §10.4 (database)
  MissingDb: 'MISSING_DB',
  UnknownDb: 'UNKNOWN_DB',
  PoolTimeout: 'POOL_TIMEOUT',
  QueryTimeout: 'QUERY_TIMEOUT',
  ConnectionFailed: 'CONNECTION_FAILED',
  DriverError: 'DRIVER_ERROR',
  ConfigError: 'CONFIG_ERROR',
  // database result limits (svc addition, issue 16)
  QueryResultTooLarge: 'QUERY_RESULT_TOO_LARGE',
  // console backend (cli.md §7.1)
  ConsoleHostNotAllowed: 'CONSOLE_HOST_NOT_ALLOWED',
  ConsoleTokenRequired: 'CONSOLE_TOKEN_REQUIRED',
  // cli.md §1.1, §4.6: failures the CLI detects before or instead of an invocation (never on the wire)
  EngineUnreachable: 'ENGINE_UNREACHABLE',
  MessageTooLarge: 'MESSAGE_TOO_LARGE',
  TraceNotFound: 'TRACE_NOT_FOUND',
  // issue 20: an optional package (database driver, Redis/NATS client, OTLP exporter) not installed
  DependencyMissing: 'DEPENDENCY_MISSING',
  // issue 22, cli.md §5.7: the registry proxy of microVM installs refused a CONNECT
  RegistryNotAllowed: 'REGISTRY_NOT_ALLOWED',
} as const
export type Code = (typeof Codes)[keyof typeof Codes]

const entries = new Map<string, CatalogueEntry>()

function entry(code: Code, status: number, exit: ExitClass, source: ErrorSource[], when: string, fix: string, options: { wire?: boolean; hint?: string } = {}): void {
  const value: CatalogueEntry = { code, status, exit, source, when, fix, wire: options.wire ?? true }
  entries.set(code, options.hint === undefined ? value : { ...value, hint: options.hint })
}

entry(Codes.FunctionNotFound, 404, 'failure', ['engine', 'sdk'], 'No live replica for the id after namespace fallback.', 'Check the id and namespace with `svc functions`; if the worker that registers it is still installing or starting, check `svc worker list` and retry; if it crashed, `svc worker list` and `svc logs <worker>` show why.', {
  hint: 'the worker may still be installing or starting, or it crashed; svc worker list shows its state and last error',
})
entry(Codes.FunctionNotInvokable, 500, 'failure', ['sdk'], 'A worker was asked to run a function it registered as HTTP-invoked.', 'Invoke it through the engine (`svc trigger`), which calls its URL; do not route it to a worker.')
entry(Codes.InvocationFailed, 500, 'failure', ['sdk'], 'A handler threw an error without a code of its own.', 'Read the handler\'s message; run the CLI again with `--debug` for its stack trace, or throw an error with a code of your own.')
entry(Codes.InvocationStopped, 502, 'failure', ['engine', 'sdk'], 'The executing replica or the caller disconnected mid-call.', 'Check why the worker exited or the connection dropped (`svc logs`, `svc worker list`), then retry the call.')
entry(Codes.Cancelled, 499, 'failure', ['engine', 'sdk'], 'The invocation was cancelled before it finished: its caller sent `cancelinvocation` (svc-sdk: an aborted `signal`), `engine::invocations::cancel` named it, the HTTP client of its route disconnected, or its caller\'s timeout passed; a late result from the worker is dropped.', 'Intended by whoever cancelled it; if not, check what cancels the call (a caller\'s `signal` or timeout, `engine::invocations::cancel` from a script or the console) and retry.')
entry(Codes.Timeout, 504, 'timeout', ['engine', 'sdk'], 'An engine-originated call, or a caller waiting for a result, exceeded its timeout.', 'Make the function answer sooner, or raise the timeout (`svc trigger --timeout-ms`, `internal_invocation_timeout_ms` in config.yaml).')
entry(Codes.InvalidMessage, 400, 'failure', ['engine'], 'A malformed frame that owes a reply.', 'Use an SDK of the same protocol version; a hand-written client must send frames as protocol.md §5 describes.')
entry(Codes.InvalidNamespace, 400, 'usage', ['engine', 'sdk'], 'A namespace field is present but blank, or is not well-formed text (a control character, a lone UTF-16 surrogate, more than 1024 characters); svc-sdk refuses such a namespace before sending anything.', 'Give the namespace a name of well-formed text, or leave the field out to use `default`.')
entry(Codes.InvalidArguments, 400, 'failure', ['engine', 'http', 'state', 'queue', 'database'], 'The input of a built-in function has the wrong shape.', 'Send the payload the function\'s `request_format` describes (`svc trigger <id> --describe`, or functions.md).')
entry(Codes.StorageDisabled, 503, 'failure', ['engine'], 'An observability query while the observability store is `none` (builtins.md §12.5).', 'Set `store` of the observability settings entry to `builtin` or `memory`.')
entry(Codes.NotFound, 404, 'failure', ['engine', 'http'], 'An engine::*::info lookup found nothing; no HTTP route matches.', 'Check the id or the route path; `svc functions` and the HTTP worker\'s route list show what exists.')
entry(Codes.Forbidden, 403, 'failure', ['engine'], 'Access control denied an invocation, a trigger target, a trigger type or a namespace.', 'Allow it for the session: add it to `rbac.expose_functions` of the listener, or change what the auth function or registration hook returns (`allowed_functions`, `forbidden_functions`).')
entry(Codes.EnqueueError, 503, 'failure', ['engine'], 'The enqueue provider is missing or failed.', 'Enable the queue worker (`svc worker add queue`), or read the provider\'s message that follows the code.')
entry(Codes.QueueNotFound, 404, 'failure', ['queue'], 'The queue is not declared in queue_configs.', 'Declare the queue under `queue_configs` of the queue worker in config.yaml (an enqueue\'s message ends with the lines to add), or call `queue::define` (svc-sdk: `defineQueue`) first.')
entry(Codes.QueueNotSet, 400, 'failure', ['queue'], 'A queue function was called without `queue`.', 'Pass `queue` in the payload.')
entry(Codes.TopicNotSet, 400, 'failure', ['queue', 'pubsub'], 'publish, svc::durable::publish or a queue function was called without a topic.', 'Pass `topic` in the payload or the trigger config.')
entry(Codes.MessageIdNotSet, 400, 'failure', ['queue'], 'A by-id DLQ operation was called without `message_id`.', 'Pass `message_id` (from `engine::queue::dlq_messages`).')
entry(Codes.InvalidQueueConfig, 400, 'failure', ['queue'], 'queue::define got queue settings that fail the rules of builtins.md §7.1.', 'Fix the setting the message names; the rules are in builtins.md §7.1.')
entry(Codes.NonRetryable, 500, 'failure', ['sdk'], 'A queue handler asked not to be retried (NonRetryableError); the message goes to the DLQ at once.', 'Intended by the handler; inspect the message in the dead letter queue and redrive it once the cause is fixed.')
entry(Codes.RetryAfter, 503, 'failure', ['sdk'], 'A queue handler asked for its next attempt after retry_after_ms (RetryAfterError).', 'Intended by the handler; the message is delivered again after `retry_after_ms`.')
entry(Codes.NoSubscribers, 404, 'failure', ['queue'], 'DLQ code: a durable publish found no subscriber for its topic.', 'Register a `durable:subscriber` trigger for the topic, then redrive the dead letter queue.')
entry(Codes.SubscriberExpired, 410, 'failure', ['queue'], 'DLQ code: a durable subscriber was forgotten after subscriber_retention_ms with messages left.', 'Keep the subscriber\'s worker running, or raise `subscriber_retention_ms`; then redrive the dead letter queue.')
entry(Codes.DeliveryInterrupted, 500, 'failure', ['queue'], 'DLQ code: the engine stopped during the last allowed attempt of a message.', 'Redrive the message from the dead letter queue after the engine is back.')
entry(Codes.TriggerRegistrationFailed, 400, 'failure', ['sdk', 'engine'], "A provider refused a binding; engine::register_trigger failed.", 'Read the provider\'s reason that follows; usually the trigger config is wrong (see the trigger type in functions.md).')
entry(Codes.TriggerTypeNotFound, 404, 'failure', ['sdk'], 'A worker received a binding for a type it does not provide.', 'Register the trigger type in the worker before bindings of it arrive, or bind to a type the worker provides.')
entry(Codes.InvalidTriggerConfig, 400, 'failure', ['provider'], "A binding's config is invalid for its type.", 'Give the trigger the `config` its type describes (`trigger_request_format` in functions.md).')
entry(Codes.RouteConflict, 409, 'failure', ['http'], 'Another function already binds the same method and path shape.', 'Change the path or method of one of the two `http` triggers, or unregister the other one.')
entry(Codes.HttpError, 502, 'failure', ['engine'], 'An HTTP-invoked function answered non-2xx without an error body.', 'Make the HTTP-invoked function answer 2xx, or a JSON error body `{code, message}`.')
entry(Codes.HttpRequestFailed, 502, 'failure', ['engine'], 'An HTTP-invoked function was unreachable or timed out.', 'Check that the function\'s URL is reachable from the engine and answers within its timeout.')
entry(Codes.InvalidResponse, 500, 'failure', ['engine', 'http'], 'A response could not be read: a non-JSON body, or no valid response descriptor.', 'Answer with JSON (HTTP-invoked functions) or a valid response descriptor `{status_code, headers?, body?}` (http triggers).')
entry(Codes.UrlValidationFailed, 400, 'failure', ['engine'], 'The URL of an HTTP-invoked function violates the http_functions policy.', 'Add the host to `http_functions.url_allowlist`, use https, or relax `block_private_ips`/`require_https` in config.yaml.')
entry(Codes.SecretNotSet, 500, 'failure', ['engine'], 'An auth *_key names an unset environment variable.', 'Set the environment variable the auth `*_key` names before starting the engine.')
entry(Codes.InternalError, 500, 'failure', ['engine', 'http'], 'Unexpected engine failure.', 'A bug in svc: report it with the error id from the message and the engine log (`svc logs`).')
entry(Codes.AuthError, 401, 'failure', ['engine'], 'Authentication of a connection failed (error frame, close 1008).', 'Send the credentials the listener\'s `auth_function_id` expects, or fix that function\'s result.')
entry(Codes.FunctionNamespaceConflict, 409, 'failure', ['engine'], 'Code of every registrationrejected: one registration was refused.', 'Read the reason in the message: rename a reserved id, register `engine::` ids in `default`, allow registration for the session, or fix the id or namespace a message beginning `INVALID_ID`/`INVALID_NAMESPACE` names.')
entry(Codes.NotConnected, 503, 'unreachable', ['sdk'], 'A call was made while the client is failed or shut down.', 'Start the engine (`svc`), or connect the client before calling; check the engine URL.', { wire: false })
entry(Codes.Shutdown, 503, 'failure', ['sdk'], 'Pending calls rejected by shutdown().', 'Expected while a worker stops; retry the call on a running replica.', { wire: false })
entry(Codes.Unknown, 500, 'failure', ['sdk'], 'A remote error value was not an ErrorBody.', 'Make the remote side fail with an ErrorBody `{code, message}`.', { wire: false })
entry(Codes.TooManyInvocations, 429, 'failure', ['engine'], 'The engine holds the maximum number of open invocations for this connection or in all.', 'Wait for open invocations to finish, or send fewer at once.')
entry(Codes.ChannelClosed, 502, 'failure', ['engine', 'http', 'sdk'], "An end of a channel (protocol.md §9) was used after the channel ended — its reader went away, its writer ended abnormally, or it was removed (an end unclaimed 5 minutes after creation, by the built-in that created it, at engine shutdown) — or an end was claimed a second time; in an SDK also when an end's WebSocket could not be opened or was lost. svc-http answers it (502) when a handler that returned no result ended its `response` channel abnormally before any body item.", 'Claim each end once and keep reading until the writer closes; create a new channel (`engine::channels::create`) for a new stream, and claim both ends within 5 minutes. An HTTP handler closes its `response` writer normally (svc-sdk: `res.close()`), or returns a response descriptor.')
entry(Codes.TooManyChannels, 429, 'failure', ['engine'], 'engine::channels::create while the engine holds its maximum of open channels (100,000).', 'Close channels when done (both ends), or wait for unclaimed ones to be swept (5 minutes after creation), then retry.')
entry(Codes.ChannelDataTooLarge, 413, 'failure', ['sdk'], 'A channel reader\'s `readAll()` received more bytes than its `maxBytes` (64 MiB by default); the reader stopped reading, so its writer sees CHANNEL_CLOSED.', 'Read the channel item by item (`next()`, `for await`, `stream`) instead of all at once, or pass a larger `maxBytes` to `readAll()`.')
entry(Codes.ResultTooLarge, 413, 'failure', ['engine'], "A result would make a frame larger than the caller's connection takes (max_message_bytes, 64 MiB by default); the engine answers this error instead and the connection stays open.", 'Return less at once (page through rows, traces or logs with a `limit`), or raise `max_message_bytes` of the listener in config.yaml (in a fleet, between engines, the NATS server\'s `max_payload`).')
entry(Codes.InvalidBody, 400, 'failure', ['http'], 'The request body is not valid JSON or UTF-8, or nests too deeply.', 'Send a JSON body in UTF-8 with `content-type: application/json`.')
entry(Codes.InvalidRequest, 400, 'failure', ['http'], 'The request is not valid HTTP (its head is malformed, too large (431) or too slow (408)).', 'Send a well-formed HTTP request with a smaller head, without stalling.')
entry(Codes.PayloadTooLarge, 413, 'failure', ['http', 'engine'], "The request body exceeds max_body_bytes (svc-http's, or the route's own); or an invocation or trigger config would make a frame larger than the receiving worker's connection takes (max_message_bytes).", 'Send a smaller body or payload, or raise the limit the message names (`max_body_bytes` in the HTTP worker\'s settings or on the `http` trigger, `max_message_bytes` of the listener); for large uploads, bind the route with `stream_request_body: true` and read `request_body`.')
entry(Codes.MethodNotAllowed, 405, 'failure', ['http'], 'The path matches a route but the method does not.', 'Use a method the route is bound to (see the `Allow` header).')
entry(Codes.ConditionNotMet, 422, 'failure', ['http'], "The route's condition returned false.", 'Send a request that meets the route\'s condition, or change the condition function.')
entry(Codes.FunctionUnavailable, 503, 'failure', ['http'], 'The route exists but no live worker serves its function.', 'Start the worker that registers the route\'s function (`svc worker list`).')
entry(Codes.ValueTooLarge, 413, 'failure', ['state', 'configuration'], 'A value is larger than max_value_bytes (state) or max_item_bytes (stream), or a settings value would make a settings file over 1 MiB of YAML or nest deeper than 128 levels (configuration).', 'Store a smaller value, or raise `max_value_bytes` (state) or `max_item_bytes` (stream) in the worker\'s settings; split a large settings value over several entries.')
entry(Codes.StorageError, 500, 'failure', ['state', 'configuration'], 'The storage adapter failed, or a settings file cannot be written or read (configuration).', 'Read the message; check the data directory\'s disk space and permissions; fix a settings file at the line it names, or replace its value with `configuration::set`.')
entry(Codes.AdapterUnavailable, 503, 'failure', ['state', 'pubsub', 'engine'], 'A remote storage adapter (Redis) is not reachable; or, in a fleet, the function is served by another engine and this one has lost its NATS connection.', 'Start the Redis or NATS server, or fix the adapter URL in the worker\'s settings or `fleet.nats` in config.yaml; engines reconnect by themselves.')
entry(Codes.ExpandFailed, 400, 'usage', ['engine'], 'A settings placeholder names an unset environment variable.', 'Set the environment variable, or give the placeholder a default (`${NAME:-value}`).')
entry(Codes.InvalidMessageGroup, 400, 'failure', ['queue'], 'A fifo queue message lacks its message_group_field.', 'Include the queue\'s `message_group_field` in the data of every message.')
entry(Codes.InvalidId, 400, 'failure', ['engine', 'sdk', 'configuration'], 'An id is not valid: a function, trigger or trigger type id holds a control character or a lone UTF-16 surrogate, or is longer than 1024 characters (svc-sdk refuses it before sending anything; the engine answers a frame carrying one, and names it in a registrationrejected message); a settings entry id does not match [a-z0-9_-]{1,64}.', 'Use ids of well-formed text without control characters; for settings entries 1 to 64 of `a-z`, `0-9`, `_` and `-`.')
entry(Codes.NotRegistered, 404, 'failure', ['configuration'], 'A settings entry was set before its owner registered it.', 'Call `configuration::register` with the entry\'s schema first (its owner worker does this when it starts).')
entry(Codes.SchemaUnavailable, 503, 'failure', ['configuration'], 'The owner of a settings entry has not registered its schema since the engine started.', 'Start the worker that owns the entry, so it registers the schema, then retry.')
entry(Codes.SchemaInvalid, 400, 'failure', ['configuration'], 'A settings value (after placeholder expansion) violates its JSON Schema.', 'Fix the values at the JSON pointers the message lists (`configuration::schema` shows the schema).')
entry(Codes.MissingDb, 400, 'failure', ['database'], 'db was omitted and there is neither a single database nor one named primary.', 'Pass `db`, or name one database `primary`.')
entry(Codes.UnknownDb, 404, 'failure', ['database'], 'db names no configured database.', 'Use one of the configured names the message lists, or add the database to the worker\'s settings.')
entry(Codes.PoolTimeout, 503, 'failure', ['database'], 'No database connection became free within acquire_timeout_ms.', 'Release connections sooner (short transactions), or raise `pool.max` or `acquire_timeout_ms`.')
entry(Codes.QueryTimeout, 504, 'timeout', ['database'], 'A database call exceeded its timeout; the statement was cancelled where the driver allows.', 'Make the statement faster, or raise the call\'s timeout.')
entry(Codes.ConnectionFailed, 503, 'unreachable', ['database'], 'The database cannot be reached, or authentication or TLS failed.', 'Check that the database runs and is reachable, and the URL\'s user, password and TLS options.')
entry(Codes.DriverError, 400, 'failure', ['database'], 'The database rejected the statement.', 'Fix the statement; the driver\'s code and message follow the error code.')
entry(Codes.ConfigError, 400, 'usage', ['database'], 'A database URL is invalid or its scheme is not supported.', 'Fix the database URL in the worker\'s settings: `sqlite:`, `postgres://`, `postgresql://` or `mysql://`.')
entry(Codes.QueryResultTooLarge, 413, 'failure', ['database'], 'A database::query, execute or transaction result holds more rows than max_rows or more JSON bytes than max_result_bytes; reading stopped there.', 'Select fewer rows (LIMIT, WHERE, paging with a key), fewer or smaller columns, or raise `max_rows` / `max_result_bytes` of the database in the worker\'s settings (results must stay under the engine\'s frame limit).')
entry(Codes.ConsoleHostNotAllowed, 403, 'failure', ['console'], 'A request or WebSocket upgrade reached the console under a Host or Origin it does not serve (another site, or a DNS-rebinding page).', 'Open the console at the address `svc console` printed (localhost, 127.0.0.1 or [::1] and its port); to reach it under another name, pass `--allowed-host <name>` (or list it in `allowed_hosts` of the console entry).')
entry(Codes.ConsoleTokenRequired, 401, 'failure', ['console'], 'A console API call or WebSocket upgrade came without the console\'s access token (cookie or `Authorization: Bearer`), or with a wrong one.', 'Open the address `svc console` printed, which ends in `/?token=…`; scripts send `Authorization: Bearer <token>`. The token changes with every start unless `SVC_CONSOLE_TOKEN` sets it.')
entry(Codes.EngineUnreachable, 503, 'unreachable', ['cli'], 'A command could not connect to the engine at its address (nothing listens there, or no answer in time), or the project\'s own engine is not running while another project\'s engine holds its address.', 'Start the engine with `svc` in the project directory, or point the command at a running engine with `--engine <url>` or `SVC_URL`.', {
  wire: false,
  hint: 'start the engine with svc in the project directory, or pass --engine <url> of a running engine',
})
entry(Codes.TraceNotFound, 404, 'failure', ['cli'], 'svc traces <trace_id> found no span of that trace in the observability store: the id is mistyped, the trace was not sampled or is older than the store keeps, or its spans have not arrived yet.', 'List recent traces with `svc traces` and copy an id from there (or the `traceparent` header of an HTTP response); worker spans arrive a second or two after the call; raise the retention or the sampling ratio in the observability settings to keep more.', {
  wire: false,
  hint: 'svc traces lists the recent ones; a new trace may take a second or two to arrive',
})
entry(Codes.MessageTooLarge, 413, 'usage', ['cli'], 'svc trigger was given a payload larger than the engine accepts in one message (`max_message_bytes`, 64 MiB by default, protocol.md §2); nothing was sent.', 'Send a reference to the data (a file path, a URL, a state key) instead of the data, or raise `max_message_bytes` of the svc-worker-manager entry in config.yaml.', {
  wire: false,
  hint: 'send a reference to the data (a path, a URL, a state key) instead, or raise max_message_bytes of the svc-worker-manager entry in config.yaml',
})

entry(Codes.RegistryNotAllowed, 403, 'failure', ['cli'], 'An install step inside a microVM (`isolation: microvm` with guest installs on) asked the registry proxy for a host or port that is not one of the package registries it allows (npm, PyPI, crates.io, and the npm registry of your npmrc), or sent a CONNECT request it cannot read.', 'Install from the allowed registries only (port 443), or name your own registry in the npmrc (`registry=`) or in `SVC_MICROVM_REGISTRIES` (comma-separated host names); or run installs on the host (the default).', {
  wire: false,
  hint: 'name the registry in SVC_MICROVM_REGISTRIES (comma-separated host names), or install on the host',
})

entry(Codes.DependencyMissing, 503, 'failure', ['engine', 'database', 'state', 'queue', 'pubsub'], 'A feature needs an optional package that is not installed: a PostgreSQL or MySQL database (pg, mysql2), a Redis adapter (ioredis), a fleet (nats) or an OTLP export (the OpenTelemetry exporters); the packed svc leaves them out to install small and fast.', 'Install the packages the message names where svc is installed: `npm i -g <packages>` for a global svc (the message gives the exact command), `npm i <packages>` in the project of a local one; then start svc again.', {
  hint: 'install the package(s) the message names with the npm command it gives, then start svc again',
})

/** Every catalogue entry, in catalogue order. */
export function catalogue(): CatalogueEntry[] {
  return [...entries.values()]
}

/** The entry of a code, undefined for codes outside the catalogue (a handler's own codes). */
export function catalogueEntry(code: string): CatalogueEntry | undefined {
  return entries.get(code)
}

/** HTTP status of a code; 500 for codes outside the catalogue. */
export function httpStatusOf(code: string): number {
  return entries.get(code)?.status ?? 500
}

/** CLI exit code for an operation that failed with `code` (cli.md §1.1); 1 outside the catalogue. */
export function exitCodeOf(code: string): number {
  return EXIT_CODES[entries.get(code)?.exit ?? 'failure']
}

const make = (code: Code, message: string) => new SvcError(code, message)

/** The size of a frame in a message; undefined: past the longest string JavaScript can build. */
const frameSize = (bytes: number | undefined) => (bytes === undefined ? 'more than 512 MiB' : `${bytes} bytes`)

/**
 * The message templates of the catalogue, one factory per template (protocol.md §7.2; a code with
 * several templates has several factories).
 */
export const Errors = {
  functionNotFound(id: string, namespace = 'default', elsewhere: readonly string[] = []): SvcError {
    let message = namespace === 'default' ? `Function ${id} not found` : `Function ${id} not found in namespace ${namespace}`
    if (elsewhere.length > 0) message += `. It is registered in namespace(s): ${elsewhere.join(', ')}`
    return make(Codes.FunctionNotFound, message)
  },
  /** SDK side: the engine asked for an id this worker does not hold. */
  functionNotHeld: (id: string) => make(Codes.FunctionNotFound, `Function ${id} not found`),
  functionNotInvokable: (id: string) => make(Codes.FunctionNotInvokable, `Function ${id} is HTTP-invoked and cannot be invoked locally`),
  invocationStopped: () => make(Codes.InvocationStopped, 'Invocation stopped'),
  /** SDK side: the caller's own connection dropped after the call was sent. */
  connectionLost: () => make(Codes.InvocationStopped, 'Invocation stopped: connection to the engine was lost'),
  timeout: (ms: number) => make(Codes.Timeout, `invocation timed out after ${ms}ms`),
  /** The invocation was cancelled; `reason` as the canceller gave it (cut to 1024 characters), if any. */
  cancelled: (reason?: string) => make(Codes.Cancelled, reason === undefined || reason === '' ? 'Invocation cancelled' : `Invocation cancelled: ${reason}`),
  invalidMessage: (reason: string) => make(Codes.InvalidMessage, `Invalid message: ${reason}`),
  invalidNamespace: () => make(Codes.InvalidNamespace, 'namespace is empty: give it a name, or omit it to use `default`'),
  /** A namespace that is not well-formed text; `detail` names the field and the problem (`namespace contains a lone UTF-16 surrogate at index 3`). */
  namespaceNotText: (detail: string) => make(Codes.InvalidNamespace, `Invalid namespace: ${detail}`),
  /** An id in a frame that is not well-formed text; `detail` names the field and the problem (`function_id contains a control character (U+0007) at index 3`). */
  idNotText: (detail: string) => make(Codes.InvalidId, `Invalid id: ${detail}`),
  /** Input of an engine function (§6.7): `Invalid input for <id>: <detail>`. */
  invalidInput: (functionId: string, detail: string) => make(Codes.InvalidArguments, `Invalid input for ${functionId}: ${detail}`),
  /** Payload of a built-in worker's function (builtins.md §2.1): `<field> is required`, `<field> must be <type>`. */
  invalidArguments: (detail: string) => make(Codes.InvalidArguments, detail),
  storageDisabled: () => make(Codes.StorageDisabled, 'local telemetry storage is disabled (store: none)'),
  traceNotFound: (traceId: string) => make(Codes.TraceNotFound, `Trace ${traceId} not found`),
  /** The microVM registry proxy's refusal (cli.md §5.7): `target` as the CONNECT line named it (escaped by the caller). */
  registryNotAllowed: (target: string, allowed: readonly string[]) =>
    make(Codes.RegistryNotAllowed, `svc registry proxy: ${target} is not an allowed package registry (allowed, port 443: ${allowed.join(', ')})`),
  notFound: (message: string) => make(Codes.NotFound, message),
  /** `engine::functions::info` of a function the caller's session may not invoke (protocol.md §11.1). */
  notVisible: (id: string) => make(Codes.Forbidden, `Function '${id}' is not visible to this session.`),
  forbiddenNotExposed: (id: string) => make(Codes.Forbidden, `function '${id}' not allowed (add to rbac.expose_functions)`),
  forbiddenListed: (id: string) => make(Codes.Forbidden, `function '${id}' not allowed (remove from forbidden_functions)`),
  forbiddenInNamespace: (id: string, namespace: string) => make(Codes.Forbidden, `function '${id}' not allowed in namespace '${namespace}'`),
  forbiddenNamespace: (namespace: string, permitted: readonly string[]) =>
    make(Codes.Forbidden, `namespace '${namespace}' not allowed for this session (permitted: ${permitted.join(', ')})`),
  forbiddenTriggerType: (type: string) => make(Codes.Forbidden, `trigger type '${type}' not allowed for this session`),
  /** A registration hook refused a binding (§13.5). */
  forbiddenByHook: (hook: string, detail: string) => make(Codes.Forbidden, `registration denied by ${hook}: ${detail}`),
  enqueueNoProvider: () => make(Codes.EnqueueError, 'No queue provider is installed; enable the queue worker (svc worker add queue)'),
  enqueueFailed: (providerCode: string, providerMessage: string) => make(Codes.EnqueueError, `${providerCode}: ${providerMessage}`),
  queueNotFound: (name: string) => make(Codes.QueueNotFound, `Queue '${name}' is not declared in queue_configs`),
  queueNotSet: () => make(Codes.QueueNotSet, 'Queue name is required'),
  topicNotSet: () => make(Codes.TopicNotSet, 'Topic is not set'),
  messageIdNotSet: () => make(Codes.MessageIdNotSet, 'Message ID is required'),
  invalidMessageGroup: (queue: string, field: string) => make(Codes.InvalidMessageGroup, `FIFO queue '${queue}' requires field '${field}' in data`),
  /** `message` is the validation message of builtins.md §7.1. */
  invalidQueueConfig: (message: string) => make(Codes.InvalidQueueConfig, message),
  triggerRegistrationFailed: (message: string) => make(Codes.TriggerRegistrationFailed, message),
  triggerTypeNotFound: () => make(Codes.TriggerTypeNotFound, 'Trigger type not found'),
  invalidTriggerConfig: (message: string) => make(Codes.InvalidTriggerConfig, message),
  routeConflict: (route: string, other: string, functionId: string) =>
    make(Codes.RouteConflict, `Route '${route}' conflicts with '${other}' bound to function ${functionId}`),
  httpError: (status: number, reason: string) => make(Codes.HttpError, `HTTP ${status} ${reason}`),
  httpRequestFailed: (url: string, detail: string) => make(Codes.HttpRequestFailed, `HTTP request to ${url} failed: ${detail}`),
  responseNotJson: (url: string) => make(Codes.InvalidResponse, `Response of ${url} is not JSON`),
  urlNotAllowed: (url: string, rule: string) => make(Codes.UrlValidationFailed, `URL ${url} is not allowed: ${rule}`),
  secretNotSet: (name: string) => make(Codes.SecretNotSet, `Environment variable ${name} is not set`),
  internal: (errorId: string) => make(Codes.InternalError, `Internal engine error (${errorId})`),
  authFailed: (message: string) => make(Codes.AuthError, message),
  consoleHostNotAllowed: (host: string | undefined, allowed: readonly string[]) =>
    make(
      Codes.ConsoleHostNotAllowed,
      `${host === undefined ? 'A request without a Host header' : `Host '${host}'`} is not one this console serves (${allowed.join(', ')}); pass --allowed-host <name> to serve another name`,
    ),
  consoleOriginNotAllowed: (origin: string) => make(Codes.ConsoleHostNotAllowed, `Origin '${origin}' is not this console; requests from other sites are refused`),
  consoleTokenRequired: (given: boolean) =>
    make(
      Codes.ConsoleTokenRequired,
      `${given ? 'The access token is wrong' : 'This console needs its access token'}: open the address svc console printed (it ends in /?token=…), or send Authorization: Bearer <token>`,
    ),
  authNoResult: () => make(Codes.AuthError, 'auth function returned no result'),
  authInvalidResult: (detail: string) => make(Codes.AuthError, `invalid auth result: ${detail}`),
  notConnected: () => make(Codes.NotConnected, 'not connected to the engine'),
  shutdown: () => make(Codes.Shutdown, 'worker is shutting down'),
  tooManyInvocations: (scope: 'connection' | 'engine', limit: number) =>
    make(
      Codes.TooManyInvocations,
      scope === 'connection'
        ? `this connection already has ${limit} invocations open; wait for some to finish`
        : `the engine already holds ${limit} open invocations; retry later`,
    ),
  invalidBody: (detail: string) => make(Codes.InvalidBody, detail),
  invalidRequest: (detail: string) => make(Codes.InvalidRequest, detail),
  payloadTooLarge: (limit: number) => make(Codes.PayloadTooLarge, `request body exceeds max_body_bytes (${limit} bytes)`),
  /**
   * A frame the engine would send a worker is over that connection's `max_message_bytes`
   * (protocol.md §2: the engine never sends larger ones). `what`: `invocation`, `trigger config`.
   */
  channelNotFound: () => make(Codes.NotFound, 'Channel not found'),
  /** `why`: `the reader went away`, `the writer ended abnormally`, `it was removed`, … */
  channelClosed: (channelId: string, why: string) => make(Codes.ChannelClosed, `channel ${channelId} is closed: ${why}`),
  channelClaimed: (channelId: string, direction: string) => make(Codes.ChannelClosed, `the ${direction} end of channel ${channelId} is claimed already`),
  /** A reader's `readAll()` got more than `limit` bytes (sdk.md §9). */
  channelDataTooLarge: (channelId: string, limit: number) =>
    make(Codes.ChannelDataTooLarge, `channel ${channelId} carried more than ${limit} bytes, the maxBytes of readAll(); read it item by item or raise maxBytes`),
  tooManyChannels: (limit: number) => make(Codes.TooManyChannels, `the engine already holds ${limit} channels; close or let unclaimed ones expire, then retry`),
  frameTooLarge: (what: string, bytes: number | undefined, limit: number) =>
    make(Codes.PayloadTooLarge, `${what} of ${frameSize(bytes)} exceeds max_message_bytes ${limit} of the worker connection it goes to`),
  /**
   * A result (or an error) over the caller's `max_message_bytes` (protocol.md §2); `bytes` is the
   * size of its frame, undefined when it is too large to encode at all.
   */
  resultTooLarge: (bytes: number | undefined, limit: number) =>
    make(Codes.ResultTooLarge, `result of ${frameSize(bytes)} exceeds max_message_bytes ${limit} of the caller's connection`),
  /** `setting` names the limit: `max_value_bytes` (state, builtins.md §4.1) or `max_item_bytes` (stream, §6.1). */
  valueTooLarge: (bytes: number, limit: number, setting = 'max_value_bytes') =>
    make(Codes.ValueTooLarge, `value of ${bytes} bytes exceeds ${setting} ${limit}`),
  /** A settings value whose file would not read back (builtins.md §11.1); `reason` names the limit. */
  configurationTooLarge: (id: string, reason: string) => make(Codes.ValueTooLarge, `configuration '${id}' cannot be stored: ${reason}`),
  storageError: (message: string, cause?: unknown) => new SvcError(Codes.StorageError, message, { cause }),
  adapterUnavailable: (message: string, cause?: unknown) => new SvcError(Codes.AdapterUnavailable, message, { cause }),
  /** A call to a function served by another engine of the fleet while NATS is unreachable (issue 19). */
  fleetUnavailable: (message: string) => make(Codes.AdapterUnavailable, message),
  /** A call to another engine of the fleet larger than NATS carries (its `max_payload`). */
  fleetPayloadTooLarge: (bytes: number, limit: number) =>
    make(Codes.PayloadTooLarge, `invocation of ${bytes} bytes exceeds the NATS server's max_payload ${limit}, the largest call between engines of the fleet`),
  /** A result for another engine of the fleet larger than NATS carries. */
  fleetResultTooLarge: (bytes: number, limit: number) =>
    make(Codes.ResultTooLarge, `result of ${bytes} bytes exceeds the NATS server's max_payload ${limit}, the largest answer between engines of the fleet`),
  invalidId: (id: string) => make(Codes.InvalidId, `invalid configuration id '${id}': use 1 to 64 of a-z, 0-9, _ and -`),
  configurationNotFound: (id: string) => make(Codes.NotFound, `configuration '${id}' not found`),
  notRegistered: (id: string) => make(Codes.NotRegistered, `configuration '${id}' is not registered; call configuration::register first`),
  schemaUnavailable: (id: string) =>
    make(Codes.SchemaUnavailable, `the schema of configuration '${id}' is not registered since the engine started; its owner registers it when it starts`),
  /** `violations` as `<json pointer>: <problem>` (builtins.md §11.2). */
  schemaInvalid: (id: string, violations: readonly string[]) =>
    make(Codes.SchemaInvalid, `configuration '${id}' is invalid: ${violations.join('; ')}`),
  expandFailed: (message: string) => make(Codes.ExpandFailed, message),
  missingDb: (names: readonly string[]) =>
    make(Codes.MissingDb, `db is required: ${names.length === 0 ? 'no database is configured' : `${names.length} databases are configured and none is named primary (${names.join(', ')})`}`),
  unknownDb: (name: string, names: readonly string[]) =>
    make(Codes.UnknownDb, `database '${name}' is not configured (configured: ${names.length === 0 ? 'none' : names.join(', ')})`),
  poolTimeout: (db: string, ms: number) => make(Codes.PoolTimeout, `no connection to database '${db}' became free within ${ms} ms`),
  queryTimeout: (db: string, ms: number) => make(Codes.QueryTimeout, `the call to database '${db}' exceeded ${ms} ms and was cancelled`),
  /** `cause`: `network`, `auth` or `tls` (builtins.md §10.4). */
  connectionFailed: (db: string, cause: 'network' | 'auth' | 'tls', detail: string, error?: unknown) =>
    new SvcError(Codes.ConnectionFailed, `cannot connect to database '${db}' (${cause}): ${detail}`, { cause: error }),
  /** `<driver code>: <driver message>` (builtins.md §10.4). */
  driverError: (driverCode: string, message: string) => make(Codes.DriverError, `${driverCode}: ${message}`),
  configError: (message: string) => make(Codes.ConfigError, message),
  /**
   * An optional package `name` that `feature` needs is not installed (issue 20); `install`: the
   * `name@range` specs that add the feature (svc's optionalDependencies), joined into the command.
   */
  dependencyMissing: (name: string, feature: string, install: readonly string[]) =>
    make(Codes.DependencyMissing, `the package ${name}, needed for ${feature}, is not installed; add it where svc is installed: npm i -g ${install.join(' ')}`),
  /**
   * A query result over a limit of its database (`max_rows` rows, or `max_result_bytes` bytes of
   * row JSON); reading stopped at the first row beyond it.
   */
  queryResultTooLarge: (db: string, setting: 'max_rows' | 'max_result_bytes', limit: number) =>
    make(
      Codes.QueryResultTooLarge,
      setting === 'max_rows'
        ? `the result of the call to database '${db}' has more than max_rows ${limit} rows; select fewer rows (LIMIT, WHERE) or raise databases.${db}.max_rows`
        : `the result of the call to database '${db}' is larger than max_result_bytes ${limit} bytes; select fewer or smaller rows or raise databases.${db}.max_result_bytes`,
    ),
} as const

/**
 * The ErrorBody of a catalogue error, built without capturing a stack trace: for errors that are
 * answers on a hot path and never thrown (a flood of calls to a missing function, past a limit).
 * An `Error` costs microseconds to build, nearly all of it the stack, which a body never carries.
 *
 * @example
 * reply.error(errorBody(Errors.functionNotFound, 'math::add', 'default', []))
 */
export function errorBody<A extends unknown[]>(factory: (...args: A) => SvcError, ...args: A): ErrorBody {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return factory(...args).toErrorBody()
  } finally {
    Error.stackTraceLimit = limit
  }
}

/** Why a `registrationrejected` was sent (protocol.md §5.11). */
export type RejectionReason = 'reserved_id' | 'forbidden' | 'hook_denied' | 'invalid'

/** `registrationrejected` messages by reason (protocol.md §7.2, FUNCTION_NAMESPACE_CONFLICT). */
export const RejectionMessages = {
  reservedId: (id: string) => `function id '${id}' is reserved by the engine`,
  engineIdOutsideDefault: () => "'engine::' ids may only be registered in namespace `default`",
  reservedTriggerType: (id: string) => `trigger type id '${id}' is reserved by the engine`,
  functionsForbidden: () => 'function registration is not allowed for this session',
  triggerTypesForbidden: () => 'trigger type registration is not allowed for this session',
  hookDenied: (hook: string, detail: string) => `registration denied by ${hook}: ${detail}`,
  invalid: () => 'registration has no id',
  /**
   * An id that is not well-formed text: the message names the code a call would get for it and
   * the problem (`INVALID_ID: function id contains a lone UTF-16 surrogate at index 5`), as the
   * frame's own code stays FUNCTION_NAMESPACE_CONFLICT (protocol.md §5.11). `kind`: `function`,
   * `trigger type`.
   */
  invalidId: (kind: string, detail: string) => `${Codes.InvalidId}: ${kind} id ${detail}`,
  /** A namespace that is not well-formed text: `INVALID_NAMESPACE: namespace contains a control character (U+0007) at index 2`. */
  invalidNamespace: (detail: string) => `${Codes.InvalidNamespace}: ${detail}`,
  invalidFrame: (reason: string) => `registration is invalid: ${reason}`,
} as const

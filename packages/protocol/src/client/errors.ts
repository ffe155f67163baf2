/**
 * The error classes a client raises and its handlers may throw (sdk.md §7), and the stable error
 * codes shared by the engine, the SDKs and the CLI (protocol.md §7.2). One set for every SDK on the
 * client core, so `instanceof InvocationError` holds whichever facade made the client.
 */
import { Codes, isErrorBody, OWN_CODE_PATTERN, type Code, type ErrorBody, type SvcError } from '../errors.ts'

export type { ErrorBody }

/**
 * Stable error codes (protocol.md §7.2 and the built-in workers' codes), from the catalogue the
 * engine, the SDK and the CLI share (`svc-protocol/errors`). Codes are the contract; messages may
 * change. `NOT_CONNECTED`, `SHUTDOWN`, `UNKNOWN` and the client-side `TIMEOUT` never travel on the
 * wire.
 */
export const ErrorCode = Codes
export type ErrorCodeValue = Code

export { isErrorBody }

export interface InvocationErrorInit {
  code: string
  message: string
  function_id?: string
  stacktrace?: string
}

/**
 * A failed invocation, local or remote (sdk.md §7.1). `message` is `<code>: <detail>`; `detail`
 * is the message as the remote side sent it.
 *
 * @example
 * try { await client.trigger({ function_id: 'math::add', payload: {} }) }
 * catch (err) { if (err instanceof InvocationError && err.code === 'function_not_found') retry() }
 */
export class InvocationError extends Error {
  override readonly name = 'InvocationError'
  readonly code: string
  readonly detail: string
  readonly function_id?: string
  readonly stacktrace?: string

  constructor(init: InvocationErrorInit) {
    super(`${init.code}: ${init.message}`)
    this.code = init.code
    this.detail = init.message
    if (init.function_id !== undefined) this.function_id = init.function_id
    if (init.stacktrace !== undefined) this.stacktrace = init.stacktrace
  }

  /** Builds the error from a wire `error` value; a value that is not an ErrorBody becomes `UNKNOWN`. */
  static fromWire(error: unknown, functionId?: string): InvocationError {
    if (isErrorBody(error)) {
      const init: InvocationErrorInit = { code: error.code, message: error.message }
      if (functionId !== undefined) init.function_id = functionId
      if (error.stacktrace !== undefined) init.stacktrace = error.stacktrace
      return new InvocationError(init)
    }
    let text: string
    try {
      text = JSON.stringify(error) ?? String(error)
    } catch {
      text = String(error)
    }
    const init: InvocationErrorInit = { code: ErrorCode.Unknown, message: text }
    if (functionId !== undefined) init.function_id = functionId
    return new InvocationError(init)
  }

  /** The wire form of this error. */
  toErrorBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: this.detail }
    if (this.stacktrace !== undefined) body.stacktrace = this.stacktrace
    return body
  }
}

/** A fatal `registrationrejected` (any code but FUNCTION_NAMESPACE_CONFLICT; sdk.md §7.3). */
export class RegistrationRejectedError extends Error {
  override readonly name = 'RegistrationRejectedError'
  readonly code: string
  readonly namespace: string
  readonly worker_name?: string
  readonly function_id?: string
  readonly owner_worker_id: string

  constructor(init: {
    code: string
    message: string
    namespace: string
    worker_name?: string
    function_id?: string
    owner_worker_id: string
  }) {
    super(init.message)
    this.code = init.code
    this.namespace = init.namespace
    if (init.worker_name !== undefined) this.worker_name = init.worker_name
    if (init.function_id !== undefined) this.function_id = init.function_id
    this.owner_worker_id = init.owner_worker_id
  }
}

/**
 * Turns anything a handler threw into a wire ErrorBody (sdk.md §4): the error's own `code` when it
 * is 1–64 characters of `[A-Za-z0-9_.:-]`, else `invocation_failed`.
 */
export function toErrorBody(thrown: unknown): ErrorBody {
  if (thrown instanceof InvocationError) return thrown.toErrorBody()
  if (thrown instanceof Error) {
    const own = (thrown as { code?: unknown }).code
    const body: ErrorBody = {
      code: typeof own === 'string' && OWN_CODE_PATTERN.test(own) ? own : ErrorCode.InvocationFailed,
      message: thrown.message,
    }
    if (thrown.stack) body.stacktrace = thrown.stack
    const retryAfter = (thrown as { retry_after_ms?: unknown }).retry_after_ms
    if (typeof retryAfter === 'number' && Number.isFinite(retryAfter) && retryAfter >= 0) body.retry_after_ms = retryAfter
    return body
  }
  if (isErrorBody(thrown)) return { code: thrown.code, message: thrown.message }
  return { code: ErrorCode.InvocationFailed, message: typeof thrown === 'string' ? thrown : String(thrown) }
}

/** The public error of a catalogue error (sdk.md §7.1), naming `functionId` when given. */
export function invocationError(error: SvcError, functionId?: string): InvocationError {
  const init: InvocationErrorInit = { code: error.code, message: error.message }
  if (functionId !== undefined) init.function_id = functionId
  return new InvocationError(init)
}

/** The message of anything thrown: an Error's or an ErrorBody's `message`, else its string form. */
export function errorMessage(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message
  if (isErrorBody(thrown)) return thrown.message
  return String(thrown)
}

/**
 * A connection-level failure kept for `getLastError()`: `AUTH_ERROR` from the engine (protocol.md
 * §3.1), or `TIMEOUT` for a handshake or keepalive deadline. Transport errors (`ECONNREFUSED`, …)
 * are kept as they are.
 */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError'
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/**
 * Thrown by a queue or durable-subscriber handler: do not retry this message, dead-letter it at once
 * whatever attempts remain (builtins.md §7.7). Travels as the error body `{code: "NON_RETRYABLE", message}`.
 *
 * @example
 * client.registerFunction('billing::charge', (order) => {
 *   if (!order.amount) throw new NonRetryableError('order has no amount')
 * })
 */
export class NonRetryableError extends Error {
  override readonly name = 'NonRetryableError'
  readonly code = ErrorCode.NonRetryable

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}

/**
 * Thrown by a queue or durable-subscriber handler: retry after `retryAfterMs` instead of the queue's
 * backoff; the attempt still counts (builtins.md §7.7). Travels as the error body
 * `{code: "RETRY_AFTER", message, retry_after_ms}`.
 *
 * @throws RangeError when `retryAfterMs` is not a finite number ≥ 0.
 * @example throw new RetryAfterError(30_000, 'rate limited by the payment provider')
 */
export class RetryAfterError extends Error {
  override readonly name = 'RetryAfterError'
  readonly code = ErrorCode.RetryAfter
  /** Delay before the next attempt, ms. */
  readonly retry_after_ms: number

  constructor(retryAfterMs: number, message = `retry after ${retryAfterMs} ms`, options?: { cause?: unknown }) {
    super(message, options)
    if (typeof retryAfterMs !== 'number' || !Number.isFinite(retryAfterMs) || retryAfterMs < 0) {
      throw new RangeError(`retryAfterMs must be a finite number >= 0, got ${String(retryAfterMs)}`)
    }
    this.retry_after_ms = retryAfterMs
  }

  /** Same as `retry_after_ms`. */
  get retryAfterMs(): number {
    return this.retry_after_ms
  }
}

/** What a {@link ChannelError} is built from. */
export interface ChannelErrorInit {
  code: string
  message: string
  channel_id: string
  direction: 'read' | 'write'
  /** The WebSocket close code that ended the end, when a close ended it. */
  close_code?: number
}

/**
 * A channel end failed (sdk.md §9, protocol.md §9): `CHANNEL_CLOSED` when the channel ended under
 * it (the writer ended abnormally, the reader went away, a second claim, removal by the engine, a
 * lost or refused connection), `NOT_FOUND` when the engine does not know the channel or the key,
 * `CHANNEL_DATA_TOO_LARGE` when `readAll()` passed its `maxBytes`. Thrown in a handler, it travels
 * as its code.
 *
 * @example
 * try { await reader.readAll() }
 * catch (err) { if (err instanceof ChannelError && err.code === 'CHANNEL_CLOSED') retryUpload() }
 */
export class ChannelError extends Error {
  override readonly name = 'ChannelError'
  readonly code: string
  readonly channel_id: string
  readonly direction: 'read' | 'write'
  readonly close_code?: number

  constructor(init: ChannelErrorInit, options?: { cause?: unknown }) {
    super(init.message, options)
    this.code = init.code
    this.channel_id = init.channel_id
    this.direction = init.direction
    if (init.close_code !== undefined) this.close_code = init.close_code
  }
}

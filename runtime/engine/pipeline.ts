/**
 * The invocation pipeline (protocol.md §6): every invocation — from a remote worker, a built-in
 * worker, an HTTP trigger, the CLI or `engine.inject()` — runs through the same stages:
 *
 *   resolve → authorize → intercept → dispatch → deliver
 *
 * - **resolve**: blank namespace refused, `iii::` alias, namespace fallback to `default` (§6.1);
 *   enqueue calls are handed to the queue provider instead (§6.4).
 * - **authorize**: the caller's {@link AccessPolicy} (§13.3); listeners with a middleware divert
 *   the call to it here (§13.4).
 * - **intercept**: the {@link Interceptor} list (tracing, metrics and the console's live view plug
 *   in here), given the replica dispatch will use (picked just before); empty by default, so it
 *   costs nothing.
 * - **dispatch**: that replica (one, round-robin) to its {@link Callee}: a remote session (a leg
 *   awaiting `invocationresult`), an in-process handler, an HTTP-invoked function, or another
 *   engine of the fleet.
 * - **deliver**: the outcome goes to the invocation's {@link Reply}: relayed to a remote caller,
 *   resolved as a promise for in-process callers, or discarded for void calls.
 *
 * Each stage runs inside one error boundary: an unexpected failure answers `internal_error` and is
 * logged with an error id; it never escapes to the socket that carried the call.
 */
import { randomBytes } from 'node:crypto'
import { uuid4 } from './uuid.ts'
import {
  Codes,
  decodeJson,
  encodeResult,
  ENGINE_PREFIX,
  errorBody,
  errorBodyOf,
  Errors,
  type ErrorBody,
  type JsonInput,
  SvcError,
  type MiddlewareInput,
  OWN_CODE_PATTERN,
  type TriggerActionValue,
} from 'svc-protocol'
import { PERMISSIVE, type AccessPolicy } from './access/policy.ts'
import type { FunctionEntry, FunctionRegistry, Replica } from './functions.ts'
import type { Invocation, Reply } from './invocation.ts'
import type { Logger } from './config.ts'

export type { Invocation, Reply } from './invocation.ts'
export type { Callee } from './functions.ts'

/**
 * A step between authorization and dispatch. It may rewrite the invocation, wrap `reply` to
 * observe the outcome (spans, metrics, live view), or throw an `SvcError` to fail the call.
 */
export interface Interceptor {
  readonly name: string
  /**
   * Runs for every invocation that has a live replica. `replica`: the one the call is dispatched
   * to, already picked (round-robin, §6.1); `replica.callee.remote` is true when it is served by
   * another engine of the fleet (issue 19).
   */
  intercept(invocation: Invocation, target: FunctionEntry, replica: Replica): void
}

/**
 * Delivers to a promise (in-process callers): the callee's value as it is. A remote `null` result
 * never gets here as `null`, since the codec reads it as no result (§5.9).
 */
export class PromiseReply implements Reply {
  readonly promise: Promise<unknown>
  private resolve!: (value: unknown) => void
  private reject!: (error: SvcError) => void

  constructor() {
    this.promise = new Promise((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  result(value: JsonInput | undefined): void {
    this.resolve(value === undefined ? undefined : decodeJson(value))
  }

  error(error: ErrorBody): void {
    this.reject(SvcError.fromBody(error))
  }
}

/** Void calls: nothing goes back to the caller (§6.3); failures are logged at debug level. */
export class DiscardReply implements Reply {
  private readonly functionId: string
  private readonly log: Logger

  constructor(functionId: string, log: Logger) {
    this.functionId = functionId
    this.log = log
  }

  result(): void {}

  error(error: ErrorBody): void {
    this.log.debug(`void invocation of ${this.functionId} failed: ${error.code}: ${error.message}`)
  }
}

/**
 * Thrown by {@link FrameSink.send} for a frame the peer could not take: its UTF-8 size is over the
 * connection's `max_message_bytes`, the limit both ends enforce (protocol.md §2: the engine never
 * sends larger ones). Nothing was sent and the connection stays open; the sender answers with an
 * error instead.
 */
export class FrameTooLarge extends Error {
  override name = 'FrameTooLarge'
  /** UTF-8 size of the frame, bytes. */
  readonly bytes: number
  /** The connection's `max_message_bytes`. */
  readonly limit: number

  constructor(bytes: number, limit: number) {
    super(`frame of ${bytes} bytes exceeds max_message_bytes ${limit}`)
    this.bytes = bytes
    this.limit = limit
  }
}

/** True for the error V8 throws when a string (a frame being encoded) would pass its longest. */
export function isStringTooLong(err: unknown): boolean {
  return err instanceof RangeError && err.message.includes('Invalid string length')
}

/** Something that can receive frames: a remote session. */
export interface FrameSink {
  readonly alive: boolean
  /** The largest frame the peer takes, bytes (`max_message_bytes`, protocol.md §2). */
  readonly maxMessageBytes: number
  /** @throws FrameTooLarge for a frame over {@link maxMessageBytes}; it is not sent. */
  send(text: string): void
}

/** Characters of an error message kept when the whole error would not fit in a frame. */
const KEPT_MESSAGE_CHARS = 1024

/**
 * Relays the outcome to a remote caller as `invocationresult` with its own invocation id (§6.2).
 * A result whose frame the caller's connection could not take (over `max_message_bytes`, or too
 * large to encode at all) is answered with `RESULT_TOO_LARGE` instead; an error that large keeps
 * its code with its message cut. The connection stays open either way.
 */
export class RelayReply implements Reply {
  private readonly caller: FrameSink
  private readonly invocationId: string
  private readonly requestedIdJson: string

  constructor(caller: FrameSink, invocationId: string, requestedIdJson: string) {
    this.caller = caller
    this.invocationId = invocationId
    this.requestedIdJson = requestedIdJson
  }

  result(value: JsonInput | undefined): void {
    if (!this.caller.alive) return
    let frame: string
    try {
      frame = encodeResult(this.invocationId, this.requestedIdJson, value, undefined)
    } catch (err) {
      // Only a value from an in-process callee can fail here (remote results stay text): a string
      // past V8's limit, or a value JSON cannot write (a BigInt, a cycle).
      return this.error(
        isStringTooLong(err)
          ? errorBody(Errors.resultTooLarge, undefined, this.caller.maxMessageBytes)
          : { code: Codes.InvocationFailed, message: `result is not JSON-serialisable: ${(err as Error).message}` },
      )
    }
    try {
      this.caller.send(frame)
    } catch (err) {
      if (!(err instanceof FrameTooLarge)) throw err
      this.error(errorBody(Errors.resultTooLarge, err.bytes, err.limit))
    }
  }

  error(error: ErrorBody): void {
    if (this.caller.alive) sendErrorFrame(this.caller, (body) => encodeResult(this.invocationId, this.requestedIdJson, undefined, body), error)
  }
}

/**
 * Sends the frame `encode` makes of `error` to `sink`; when it is too large for the connection
 * (a worker's error of many megabytes), a smaller error each time: `error`'s code with the start of
 * its message, then `RESULT_TOO_LARGE`. A connection that takes not even that (a
 * `max_message_bytes` of a few hundred bytes) gets nothing.
 */
export function sendErrorFrame(sink: FrameSink, encode: (error: ErrorBody) => string, error: ErrorBody): void {
  let body: ErrorBody | undefined = error
  while (body !== undefined) {
    try {
      return sink.send(encode(body))
    } catch (err) {
      if (!(err instanceof FrameTooLarge)) throw err
      body = smallerError(error, body, err)
    }
  }
}

/**
 * The next, smaller, error to try after `tried` was too large for its frame: first `original`
 * with its code (a queue's retry decision may depend on it) and the start of its message, no
 * stack; then `RESULT_TOO_LARGE`; then nothing.
 */
function smallerError(original: ErrorBody, tried: ErrorBody, tooLarge: FrameTooLarge): ErrorBody | undefined {
  const { bytes, limit } = tooLarge
  if (tried === original && OWN_CODE_PATTERN.test(original.code)) {
    const cut: ErrorBody = {
      code: original.code,
      message: `${original.message.slice(0, KEPT_MESSAGE_CHARS)}… (an error of ${bytes} bytes, cut to fit max_message_bytes ${limit})`,
    }
    if (original.retry_after_ms !== undefined) cut.retry_after_ms = original.retry_after_ms
    return cut
  }
  return tried.code === Codes.ResultTooLarge ? undefined : errorBody(Errors.resultTooLarge, bytes, limit)
}

/** What the pipeline needs from the engine. */
export interface PipelineHost {
  readonly functions: FunctionRegistry
  readonly log: Logger
  /** `internal_invocation_timeout_ms` (§6.5): auth, hooks, middleware, enqueue provider. */
  readonly internalTimeoutMs: number
  /** Lowest `backpressure_bytes` of the listeners (§3.5). */
  readonly backpressureBytes: number
}

/** The queue provider of the enqueue action (§6.4). */
const ENQUEUE_PROVIDER = 'engine::queue::enqueue'

export class InvocationPipeline {
  private readonly host: PipelineHost
  /** Interceptors, run in order for every invocation that reaches dispatch. */
  readonly interceptors: Interceptor[] = []

  constructor(host: PipelineHost) {
    this.host = host
  }

  /** Runs one invocation through every stage. Never throws: failures reach `invocation.reply`. */
  run(invocation: Invocation): void {
    try {
      const { namespace } = invocation
      if (namespace !== 'default' && namespace.trim() === '') return invocation.reply.error(errorBody(Errors.invalidNamespace))
      if (invocation.action?.type === 'enqueue') return this.enqueue(invocation)
      // resolve
      const target = this.host.functions.resolve(namespace, invocation.functionId)
      if (target === undefined) return invocation.reply.error(this.notFound(invocation))
      // authorize
      const access = invocation.access
      if (access.restricted) {
        const denial = access.checkInvoke(target.id, target.namespace, target.latest.metadata)
        if (denial !== undefined) return invocation.reply.error(denial.toErrorBody())
        const middleware = access.middlewareFunctionId
        if (middleware !== undefined && !target.id.startsWith(ENGINE_PREFIX)) {
          return this.divert(invocation, middleware, target.id, target.namespace)
        }
      }
      // The replica is picked before the interceptors, so they see where the call goes (the
      // observability worker counts a call sent to another engine apart from one it runs).
      const replica = target.pick(this.host.backpressureBytes, invocation.localOnly)
      if (replica === undefined) return invocation.reply.error(this.notFound(invocation))
      // intercept
      const interceptors = this.interceptors
      for (let i = 0; i < interceptors.length; i++) interceptors[i]!.intercept(invocation, target, replica)
      // dispatch
      invocation.flight?.dispatched(replica.peer, invocation.reply, invocation.traceparent)
      replica.callee.dispatch(invocation, target, replica)
    } catch (err) {
      this.fail(invocation, err)
    }
  }

  /**
   * Answers an unexpected failure: an `SvcError` thrown on purpose (by an interceptor) keeps its
   * code; anything else is `internal_error` with an error id that is logged with the cause.
   */
  fail(invocation: Invocation, err: unknown): void {
    if (err instanceof SvcError) return invocation.reply.error(err.toErrorBody())
    const errorId = randomBytes(6).toString('hex')
    this.host.log.error(`invocation of ${invocation.requestedId} failed inside the engine`, {
      error_id: errorId,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    })
    try {
      invocation.reply.error(Errors.internal(errorId).toErrorBody())
    } catch (replyError) {
      this.host.log.error('could not deliver an internal error', { error_id: errorId, error: String(replyError) })
    }
  }

  private notFound(invocation: Invocation): ErrorBody {
    const { functionId, namespace } = invocation
    return errorBody(Errors.functionNotFound, functionId, namespace, this.host.functions.namespacesOf(functionId, namespace))
  }

  /**
   * Hands the call to the listener's middleware (§13.4): its result or error becomes the caller's.
   * The middleware runs as an engine-originated call, so its own calls are never diverted again.
   */
  private divert(invocation: Invocation, middleware: string, functionId: string, namespace: string): void {
    const input: MiddlewareInput = {
      function_id: functionId,
      payload: decodeJson(invocation.data),
      namespace,
      action: invocation.action ?? null,
      context: invocation.access.context,
    }
    if (invocation.metadata !== undefined) input.metadata = decodeJson(invocation.metadata)
    const call: Invocation = {
      requestedId: middleware,
      functionId: middleware,
      namespace: 'default',
      data: input,
      caller: null,
      access: PERMISSIVE,
      timeoutMs: this.host.internalTimeoutMs,
      reply: invocation.reply,
    }
    if (invocation.flight !== undefined) call.flight = invocation.flight
    if (invocation.traceparent !== undefined) call.traceparent = invocation.traceparent
    if (invocation.baggage !== undefined) call.baggage = invocation.baggage
    this.run(call)
  }

  /**
   * The enqueue action (§6.4): checks namespace, alias and access (the target need not be
   * registered), diverts to the middleware where configured, then invokes the queue provider
   * `engine::queue::enqueue` and answers with the provider's receipt.
   */
  private enqueue(invocation: Invocation): void {
    const action = invocation.action as Extract<TriggerActionValue, { type: 'enqueue' }>
    const functions = this.host.functions
    const resolved = functions.resolve(invocation.namespace, invocation.functionId)
    const functionId = resolved?.id ?? functions.aliasTarget(invocation.functionId)
    const access = invocation.access
    if (access.restricted) {
      const namespace = resolved?.namespace ?? invocation.namespace
      const denial = access.checkInvoke(functionId, namespace, resolved?.latest.metadata)
      if (denial !== undefined) return invocation.reply.error(denial.toErrorBody())
      const middleware = access.middlewareFunctionId
      if (middleware !== undefined && !functionId.startsWith(ENGINE_PREFIX)) return this.divert(invocation, middleware, functionId, namespace)
    }
    if (functions.get('default', ENQUEUE_PROVIDER) === undefined) return invocation.reply.error(Errors.enqueueNoProvider().toErrorBody())
    const receipt = uuid4()
    const payload: Record<string, unknown> = {
      queue: action.queue,
      function_id: invocation.functionId,
      // As the caller sent it (a RawJson from a worker's frame): the queue stores and delivers the text.
      data: invocation.data,
      messageReceiptId: receipt,
    }
    if (invocation.namespace !== 'default') payload.namespace = invocation.namespace
    if (invocation.metadata !== undefined) payload.metadata = decodeJson(invocation.metadata)
    if (invocation.traceparent !== undefined) payload.traceparent = invocation.traceparent
    if (invocation.baggage !== undefined) payload.baggage = invocation.baggage
    if (action.delay_ms !== undefined) payload.delay_ms = action.delay_ms
    if (action.idempotency_key !== undefined) payload.idempotency_key = action.idempotency_key
    this.run({
      requestedId: ENQUEUE_PROVIDER,
      functionId: ENQUEUE_PROVIDER,
      namespace: 'default',
      data: payload,
      caller: null,
      access: PERMISSIVE,
      timeoutMs: this.host.internalTimeoutMs,
      reply: new EnqueueReply(invocation.reply, receipt),
    })
  }
}

/**
 * The queue provider's answer to an Enqueue action, passed on to the action's caller (§6.4
 * steps 3–4): the provider's receipt (a repeated idempotency_key answers the first message's),
 * else the engine's; a failure as `enqueue_failed`, `QUEUE_NOT_FOUND` and `INVALID_MESSAGE_GROUP`
 * as they are. A reply object rather than a promise awaited: one object per enqueue, and the
 * answer leaves when the provider's does.
 */
class EnqueueReply implements Reply {
  private readonly caller: Reply
  private readonly receipt: string

  constructor(caller: Reply, receipt: string) {
    this.caller = caller
    this.receipt = receipt
  }

  result(value: JsonInput | undefined): void {
    const answer = value === undefined ? undefined : decodeJson(value)
    const providerReceipt = (answer as { messageReceiptId?: unknown } | undefined)?.messageReceiptId
    this.caller.result({ messageReceiptId: typeof providerReceipt === 'string' ? providerReceipt : this.receipt })
  }

  error(body: ErrorBody): void {
    if (body.code === Codes.QueueNotFound || body.code === Codes.InvalidMessageGroup) return this.caller.error({ code: body.code, message: body.message })
    this.caller.error(Errors.enqueueFailed(body.code, body.message).toErrorBody())
  }
}

/** Sets `svc.function.id` (and `iii.function.id`) in W3C baggage, keeping other entries (§10.1). */
export function mergeBaggage(baggage: string | undefined, target: FunctionEntry): string {
  if (baggage === undefined || baggage === '') return target.baggage
  if (!baggage.includes('function.id')) return `${baggage},${target.baggage}`
  const kept = baggage
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && !/^(svc|iii)\.function\.id\s*=/.test(s))
  kept.push(target.baggage)
  return kept.join(',')
}


/**
 * Where a platform plugs into the client core: everything {@link ClientSession} does not do itself
 * because it depends on where it runs. `svc-sdk` passes OpenTelemetry spans, worker gauges and
 * Node's UUIDs; a browser SDK may pass nothing. Every hook is optional and costs nothing when absent.
 */
import type { HandlerSpanTimes } from '../codec.ts'
import type { ErrorBody } from '../errors.ts'
import type { WorkerAnnounce } from '../messages.ts'
import type { HandlerContext } from './types.ts'

/** Where the client reports what the application should hear about but cannot catch. */
export interface ClientLog {
  warn(message: string): void
}

/** W3C trace context on an invocation (protocol.md §10.1). */
export interface TraceContext {
  traceparent?: string
  baggage?: string
}

/**
 * Tracing around the calls a client makes and the invocations it handles (sdk.md §12.3,
 * protocol.md §10.1). `Scope` is the hook's own record of one handler run (its span).
 */
export interface ClientTelemetry<Scope = unknown> {
  /**
   * The trace context an outgoing `invokefunction` carries, read from whatever is active in the
   * caller (the handler's span, an unsampled parent); undefined for none. Called once per call.
   */
  outgoing(): TraceContext | undefined
  /**
   * Starts recording one inbound invocation, before its payload is materialised; undefined records
   * nothing (telemetry off, or not sampled). `data` is the payload as it arrived. `engineRecords`:
   * this connection's engine may record the span from the result's times ({@link resultContext}),
   * so work only a span sent in full needs (its input payload event) may wait.
   */
  startHandler(functionId: string, data: unknown, traceparent: string | undefined, baggage: string | undefined, engineRecords: boolean): Scope | undefined
  /**
   * Runs `handler(data, metadata)` once, synchronously, and returns what it returns: inside
   * `scope` when there is one, else under the inbound context (an unsampled `traceparent` is
   * carried to the calls the handler makes), else plainly. Called only with a scope or an inbound
   * `traceparent` (otherwise the handler is called directly); arguments rather than a closure, so
   * it costs no allocation.
   */
  runHandler<T>(
    scope: Scope | undefined,
    traceparent: string | undefined,
    handler: (data: any, metadata: any, context: HandlerContext) => T,
    data: unknown,
    metadata: unknown,
    context: HandlerContext,
  ): T
  /**
   * True when {@link runHandler} also makes its `context` argument the current handler context of
   * the client's {@link ClientHooks.handlerScope} (both in one step, e.g. one `AsyncLocalStorage`
   * holding both): the session then calls it without wrapping it in `handlerScope.run`.
   */
  readonly runsHandlerScope?: boolean
  /**
   * The trace context of the `invocationresult` answering a scope's invocation. With
   * `engineRecords` (the engine lists `handler_spans` in `workerregistered.features` and this
   * connection's announce carried {@link handlerSpans}) it may hand the span to the engine: it ends
   * it here and returns its times in `span`, and {@link endHandler} then sends nothing.
   */
  resultContext(scope: Scope, engineRecords: boolean): TraceContext & { span?: HandlerSpanTimes }
  /**
   * Ends the scope with the outcome, after the answer was sent. `resultJson` is the result's JSON
   * when it was encoded (reuse it rather than encoding again).
   */
  endHandler(scope: Scope, result: unknown, error: ErrorBody | undefined, resultJson: string | undefined): void
  /**
   * The announce's `handler_spans` (the resource and payload settings of handler spans the engine
   * may record), read on every open; undefined while this process sends no spans (telemetry not started).
   */
  handlerSpans?(): NonNullable<WorkerAnnounce['handler_spans']> | undefined
}

/** What is being materialised: an inbound invocation's payload, or a call's result. */
export type MaterializeKind = 'payload' | 'result'

/**
 * Turns a decoded payload or result into what the application receives, e.g. channel refs into
 * live reader and writer objects (sdk.md §9). Runs before a handler (kind `payload`) and before a
 * `trigger` call resolves (kind `result`). May return a promise; a throw or a rejection fails the
 * invocation (`invocation_failed` answered to the engine) or the call (its rejection).
 */
export type Materializer = (value: unknown, kind: MaterializeKind, functionId: string) => unknown

export interface ClientHooks<Scope = unknown> {
  /** Tracing; absent: no spans, no trace context sent. */
  telemetry?: ClientTelemetry<Scope>
  /** Payload and result materialisation; absent: values are handed over as decoded. */
  materialize?: Materializer
  /** Called on every `workerregistered` with the worker id (e.g. to start worker gauges once). */
  onWorkerRegistered?(workerId: string): void
  /**
   * Ids of bindings (UUID v4) and, when given, of calls too. Default: bindings get
   * `crypto.randomUUID` (else a UUID from `crypto.getRandomValues`), calls a per-client random
   * prefix and a counter (`CallIds`, call-ids.ts).
   */
  newId?(): string
  /**
   * Where a handler's context is found again by the calls it makes (svc-sdk: an
   * `AsyncLocalStorage`), so they are cancelled with it. Absent (browsers): calls follow only the
   * `signal` they are given.
   */
  handlerScope?: HandlerScope
}

/** Carries the running handler's context through its asynchronous work. */
export interface HandlerScope {
  /** Calls `fn(...args)` with `context` current for everything it starts, and returns what it returns. */
  run<A extends unknown[], T>(context: HandlerContext, fn: (...args: A) => T, ...args: A): T
  /** The context of the handler whose work is running now, if any. */
  current(): HandlerContext | undefined
}

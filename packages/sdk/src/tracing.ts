/**
 * Handler spans (sdk.md §12.3, protocol.md §10.1): each inbound invocation runs in an INTERNAL span
 * `execute <function_id>` parented on the inbound `traceparent` (with its `baggage`), with the
 * span events `svc.invocation.input`/`svc.invocation.output` holding the redacted, capped
 * payloads. Only when telemetry is initialised: otherwise {@link startInvocationSpan} returns
 * undefined and the invocation path does no tracing work at all.
 *
 * The span is svc-helpers' light `HandlerSpan` (docs/decisions.md, telemetry cost); spans the
 * handler starts itself still nest under it through the active context.
 *
 * The client core (`svc-protocol/client`) knows none of this: {@link handlerTelemetry} and
 * {@link callTelemetry} are the `ClientTelemetry` hooks through which it runs.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { type Context, context, propagation, type Span, trace } from '@opentelemetry/api'
import {
  injectBaggage,
  injectTraceparent,
  isOtelInitialized,
  markSpanError,
  redactAndTruncate,
  type RedactedPayload,
  resolveMaxBytesFromEnv,
  setOkUnlessError,
  tracePayloadsDisabled,
} from 'svc-helpers/observability'
import { canRunInContext, HandlerSpan, knownBaggageHeader, otelResource, redactAndTruncateJson, runInHandler, startHandlerSpan } from 'svc-helpers/observability/internal'
import type { HandlerSpanTimes, WorkerAnnounce } from 'svc-protocol'
import type { ClientTelemetry, HandlerContext, TraceContext } from 'svc-protocol/client'

/** A handler's span and the context to run it in. */
export interface InvocationSpan {
  span: Span
  ctx: Context
  /** The span's `traceparent`, returned with the result. */
  traceparent: string
  /** The inbound `baggage`, returned unchanged: the span's context cannot change it. */
  baggage: string | undefined
  /** True once the span was handed to the engine ({@link resultHeaders}): nothing is left to end here. */
  handedOver: boolean
}

/** Payload settings, read from the environment once per process. */
let payloadSettings: { disabled: boolean; maxBytes: number | null } | undefined

function currentPayloadSettings(): { disabled: boolean; maxBytes: number | null } {
  return (payloadSettings ??= { disabled: tracePayloadsDisabled(), maxBytes: resolveMaxBytesFromEnv() })
}

/**
 * The redacted, capped payload of an event, or undefined when payload events are off or the span
 * does not record. `json` is the value's JSON when the caller has it (the result about to be
 * sent): then the text is reused unless it may hold a secret.
 */
function payloadOf(span: Span, value: unknown, json: string | undefined): RedactedPayload | undefined {
  const settings = currentPayloadSettings()
  if (settings.disabled || !span.isRecording()) return undefined
  return json !== undefined ? redactAndTruncateJson(json, value, settings.maxBytes) : redactAndTruncate(value, settings.maxBytes)
}

/** Records the input payload event; a handler span puts it at its start time. */
function recordInput(span: Span, value: unknown, json: string | undefined): void {
  const payload = payloadOf(span, value, json)
  if (payload === undefined) return
  if (span instanceof HandlerSpan) span.addInputPayloadEvent(payload.json, payload.truncated)
  else span.addEvent('svc.invocation.input', { 'svc.payload.json': payload.json, 'svc.payload.truncated': payload.truncated, 'svc.payload.ok': true })
}

/** Records a deferred input payload event ({@link HandlerSpan.deferInput}): the payload's JSON made now. */
function recordDeferredInput(span: HandlerSpan, data: unknown): void {
  recordInput(span, data, dataJson(data))
}

/** Records the output payload event and ends the span; a handler span does both at one instant. */
function endWithOutput(span: Span, value: unknown, ok: boolean, json: string | undefined): void {
  const payload = payloadOf(span, value, json)
  if (payload === undefined) span.end()
  else if (span instanceof HandlerSpan) span.endWithPayloadEvent('svc.invocation.output', payload.json, payload.truncated, ok)
  else {
    span.addEvent('svc.invocation.output', { 'svc.payload.json': payload.json, 'svc.payload.truncated': payload.truncated, 'svc.payload.ok': ok })
    span.end()
  }
}

/** JSON of inbound data (parsed from a frame, so plain JSON values), or undefined when it cannot be written. */
function dataJson(data: unknown): string | undefined {
  try {
    return JSON.stringify(data) ?? 'null'
  } catch {
    return undefined
  }
}

/** The span name and initial attribute of the function invoked last: the same strings for its next calls (cheaper to compare, nothing to rebuild). */
let lastFunction: { id: string; name: string; attribute: [string, string] } = { id: '', name: 'execute ', attribute: ['svc.function.id', ''] }

/**
 * Starts the span of one inbound invocation, or undefined when telemetry is off. `traceparent`
 * and `baggage` are the inbound W3C headers (ignored unless strings). With `engineRecords` (the
 * engine may record the span, see {@link resultHeaders}) the input payload event waits until the
 * span is changed or sent in full, and is never made when the engine records it.
 */
export function startInvocationSpan(functionId: string, data: unknown, traceparent?: string, baggage?: string, engineRecords = false): InvocationSpan | undefined {
  const tp = typeof traceparent === 'string' ? traceparent : undefined
  const bg = typeof baggage === 'string' && baggage !== '' ? baggage : undefined
  if (functionId !== lastFunction.id) lastFunction = { id: functionId, name: `execute ${functionId}`, attribute: ['svc.function.id', functionId] }
  const started = startHandlerSpan(lastFunction.name, lastFunction.attribute, tp, bg)
  if (started === undefined) return undefined
  const span = started.span
  if (engineRecords && span instanceof HandlerSpan) span.deferInput(data, recordDeferredInput)
  else recordInput(span, data, span.isRecording() ? dataJson(data) : undefined)
  return { span, ctx: started.ctx, traceparent: started.traceparent, baggage: bg, handedOver: false }
}

/** Runs `fn` with the span's context active (or plainly without a span). */
export function runInSpan<T>(s: InvocationSpan | undefined, fn: () => T): T {
  return s === undefined ? fn() : context.with(s.ctx, fn)
}

/**
 * The exception a failed handler span records (`exception.type` = the code): the handler's own
 * stack as `toErrorBody` kept it, so the span shows the user's frames; a failure that had no
 * stack (an error body, a thrown string) gets none rather than the SDK's frames of this point.
 */
function spanException(error: { code: string; message: string; stacktrace?: string }): Error {
  const exception = Object.assign(new Error(error.message), { name: error.code })
  exception.stack = typeof error.stacktrace === 'string' && error.stacktrace !== '' ? error.stacktrace : `${error.code}: ${error.message}`
  return exception
}

/**
 * Ends the span with the outcome and returns the W3C headers to put on the `invocationresult`
 * (protocol.md §10.1). `error` is the wire error body (`{code, message, stacktrace?}`, protocol.md
 * §7.1); its `stacktrace` becomes the span's `exception.stacktrace`. `resultJson` is
 * `JSON.stringify(result)` when the caller already made it.
 */
export function endInvocationSpan(
  s: InvocationSpan,
  result: unknown,
  error: { code: string; message: string; stacktrace?: string } | undefined,
  resultJson?: string,
): { traceparent?: string; baggage?: string } {
  if (s.handedOver) return invocationHeaders(s)
  if (error !== undefined) {
    markSpanError(s.span, spanException(error))
    endWithOutput(s.span, error, false, undefined)
  } else {
    setOkUnlessError(s.span)
    endWithOutput(s.span, result ?? null, true, result === undefined ? 'null' : resultJson)
  }
  return invocationHeaders(s)
}

/**
 * The W3C headers of an `invocationresult` (protocol.md §10.1): the span's `traceparent` and the
 * inbound `baggage`, unchanged. Known from the span's start, so the answer need not wait for its end.
 */
export function invocationHeaders(s: InvocationSpan): { traceparent?: string; baggage?: string } {
  const out: { traceparent?: string; baggage?: string } = { traceparent: s.traceparent }
  if (s.baggage !== undefined) out.baggage = s.baggage
  return out
}

/**
 * The W3C headers of an `invocationresult` and, with `engineRecords` (this connection's engine
 * records handler spans: svc addition, docs/reference/protocol.md "Handler spans recorded by the
 * engine"), the span handed to the engine: a {@link HandlerSpan} the handler left as svc-sdk made
 * it ends here, exports nothing, and its times go in the result (`span_start`/`span_end`); the
 * engine records the same span (payload events, status, baggage attributes) from what it holds.
 * A span the handler changed is sent in full as before.
 */
export function resultHeaders(s: InvocationSpan, engineRecords: boolean): TraceContext & { span?: HandlerSpanTimes } {
  let span: HandlerSpanTimes | undefined
  if (engineRecords && s.span instanceof HandlerSpan) {
    span = s.span.handOver()
    if (span !== undefined) s.handedOver = true
  }
  // One object of one shape (fields left undefined are not written): no property added later.
  return { traceparent: s.traceparent, baggage: s.baggage, span }
}

/**
 * The announce's `handler_spans` (protocol.md §3.2, svc addition): this process's span resource
 * and payload settings, so the engine records handler spans as this SDK would; undefined while
 * telemetry is off.
 */
export function handlerSpansAnnounce(): NonNullable<WorkerAnnounce['handler_spans']> | undefined {
  const resource = otelResource()
  if (resource === undefined) return undefined
  const settings = currentPayloadSettings()
  const out: NonNullable<WorkerAnnounce['handler_spans']> = { resource: { ...resource } }
  if (settings.disabled) out.payloads = false
  if (settings.maxBytes !== null) out.payload_max_bytes = settings.maxBytes
  return out
}

/**
 * The inbound `traceparent` of the handler running when it is unsampled and telemetry is off
 * (see {@link runUnsampled}).
 */
const unsampledParent = new AsyncLocalStorage<TraceContext & { traceparent: string }>()

/** True for a W3C `traceparent` whose sampled flag (bit 0 of the last field) is off. */
export function isUnsampled(traceparent: string | undefined): traceparent is string {
  return traceparent !== undefined && traceparent.length === 55 && (Number.parseInt(traceparent.slice(53), 16) & 1) === 0
}

/**
 * Runs a handler with telemetry off so that the calls it makes carry its unsampled inbound
 * `traceparent` (protocol.md §10.1). The engine delivers `trace` triggers that way so their
 * handlers make no traces; without it, each call of such a handler started a new sampled trace,
 * which fired the trigger again, forever. Sampled parents are not carried (telemetry off records
 * and propagates nothing, at no cost per call).
 */
export function runUnsampled<T>(traceparent: string, fn: () => T): T {
  return unsampledParent.run({ traceparent }, fn)
}

/**
 * Runs `fn` so that the calls it makes carry exactly `trace` (protocol.md §10.1), whatever the
 * client's telemetry: the console's re-run sends a `traceparent` of a trace it names and a
 * `baggage` with `svc.rerun_of`, which the callee's handler span copies into its attributes.
 * @example await runWithTraceContext({ traceparent, baggage: 'svc.rerun_of=4bf9…' }, () => client.trigger(request))
 */
export function runWithTraceContext<T>(trace: { traceparent: string; baggage?: string }, fn: () => T): T {
  return unsampledParent.run(trace.baggage === undefined ? { traceparent: trace.traceparent } : { traceparent: trace.traceparent, baggage: trace.baggage }, fn)
}

/**
 * The trace context of an outgoing call (protocol.md §10.1) from the active context: the handler
 * span's `traceparent` and the active baggage; undefined outside a span and without baggage.
 */
export function outgoingTraceContext(): TraceContext | undefined {
  // An unsampled parent set by runUnsampled wins even when another client of the process has
  // telemetry on: only a telemetry-off client (or host) sets one.
  const parent = unsampledParent.getStore()
  if (parent !== undefined) return parent
  if (!isOtelInitialized()) return undefined
  const ctx = context.active()
  let out: TraceContext | undefined
  const span = trace.getSpan(ctx)
  if (span instanceof HandlerSpan) out = { traceparent: span.traceparent }
  else if (span !== undefined) {
    const tp = injectTraceparent(ctx)
    if (tp !== undefined) out = { traceparent: tp }
  }
  const baggage = propagation.getBaggage(ctx)
  if (baggage !== undefined) {
    const bg = knownBaggageHeader(baggage) ?? injectBaggage(ctx)
    if (bg !== undefined) (out ??= {}).baggage = bg
  }
  return out
}

/**
 * Runs a handler with `handlerContext` as the current handler (svc-sdk's handler scope, so the calls
 * it makes are cancelled with it) and in its span, or under an unsampled inbound parent, or plainly
 * (no closure: arguments are passed on). With a span and svc-helpers' context manager registered,
 * handler and span context are entered in one `AsyncLocalStorage.run` (docs/decisions.md, telemetry cost).
 */
function runHandler<T>(
  s: InvocationSpan | undefined,
  traceparent: string | undefined,
  handler: (data: any, metadata: any, handlerContext: HandlerContext) => T,
  data: unknown,
  metadata: unknown,
  handlerContext: HandlerContext,
): T {
  if (s !== undefined) {
    if (canRunInContext()) return runInHandler(handlerContext, s.ctx, handler, data, metadata, handlerContext)
    // Another context manager is the global one: it holds the span's context.
    return runInHandler(handlerContext, undefined, withContext, s.ctx, handler, data, metadata, handlerContext)
  }
  if (isUnsampled(traceparent)) return runInHandler(handlerContext, undefined, runUnsampledHandler, traceparent, handler, data, metadata, handlerContext)
  return runInHandler(handlerContext, undefined, handler, data, metadata, handlerContext)
}

function withContext<T>(ctx: Context, handler: (data: any, metadata: any, handlerContext: HandlerContext) => T, data: unknown, metadata: unknown, handlerContext: HandlerContext): T {
  return context.with(ctx, handler, undefined, data, metadata, handlerContext)
}

function runUnsampledHandler<T>(traceparent: string, handler: (data: any, metadata: any, handlerContext: HandlerContext) => T, data: unknown, metadata: unknown, handlerContext: HandlerContext): T {
  return unsampledParent.run({ traceparent }, handler, data, metadata, handlerContext)
}

/**
 * The telemetry hooks of a client with telemetry on (sdk.md §12.3): a handler span around every
 * inbound invocation, the caller's trace context on every call.
 */
export const handlerTelemetry: ClientTelemetry<InvocationSpan> = Object.freeze({
  outgoing: outgoingTraceContext,
  startHandler: startInvocationSpan,
  runHandler,
  resultContext: resultHeaders,
  endHandler: (s: InvocationSpan, result: unknown, error: { code: string; message: string; stacktrace?: string } | undefined, resultJson: string | undefined) => {
    // A span handed to the engine is over: no headers to make again.
    if (!s.handedOver) endInvocationSpan(s, result, error, resultJson)
  },
  handlerSpans: handlerSpansAnnounce,
  runsHandlerScope: true,
})

/**
 * The telemetry hooks of a client with telemetry off: no handler spans; calls still carry the
 * active context (another client of the process may record it) and an unsampled inbound parent
 * is still handed on (see {@link runUnsampled}).
 */
export const callTelemetry: ClientTelemetry<InvocationSpan> = Object.freeze({ ...handlerTelemetry, startHandler: () => undefined, handlerSpans: () => undefined })

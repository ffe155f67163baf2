/**
 * Span and context helpers on `@opentelemetry/api` (sdk.md §12.2, protocol.md §10.1). They work
 * with whatever tracer provider is installed: before {@link initOtel} (or with telemetry disabled)
 * the API's no-op provider gives non-recording spans, so every helper is safe to call anyway.
 * Propagation uses W3C trace context (`traceparent`) and W3C baggage directly, not the global
 * propagator, so it works without `initOtel` too.
 *
 * @example
 * const total = await withSpan('price order', { kind: SpanKind.INTERNAL }, async (span) => {
 *   span.setAttribute('order.items', 3)
 *   return 42
 * })
 * const tp = injectTraceparent() // '00-<trace id>-<span id>-01' inside a span, else undefined
 */
import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from '@opentelemetry/api'
import type { W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core'
import { otelCore } from './lazy-sdk.ts'

/** Instrumentation scope name of the spans svc's packages create. */
export const TRACER_NAME = 'svc-node'

// Made on first use: @opentelemetry/core loads then, not when svc-sdk is imported (issue 20).
let traceContextPropagator: W3CTraceContextPropagator | undefined
let baggageTextPropagator: W3CBaggagePropagator | undefined
const traceContext = (): W3CTraceContextPropagator => (traceContextPropagator ??= new (otelCore().W3CTraceContextPropagator)())
const baggagePropagator = (): W3CBaggagePropagator => (baggageTextPropagator ??= new (otelCore().W3CBaggagePropagator)())

/** The tracer of svc's packages, from the global provider (no-op until {@link initOtel}). */
export function getTracer(): Tracer {
  return trace.getTracer(TRACER_NAME)
}

function activeSpanContext() {
  const span = trace.getActiveSpan()
  const ctx = span?.spanContext()
  return ctx !== undefined && trace.isSpanContextValid(ctx) ? ctx : undefined
}

/** The active span's trace id (32 lower-case hex), or undefined outside a valid span. */
export function currentTraceId(): string | undefined {
  return activeSpanContext()?.traceId
}

/** The active span's span id (16 lower-case hex), or undefined outside a valid span. */
export function currentSpanId(): string | undefined {
  return activeSpanContext()?.spanId
}

/** True when there is an active span and it records (telemetry on, sampled). */
export function currentSpanIsRecording(): boolean {
  return trace.getActiveSpan()?.isRecording() ?? false
}

/** Options of {@link withSpan}. */
export interface WithSpanOptions {
  /** Span kind; INTERNAL when omitted. */
  kind?: SpanKind
  /** W3C `traceparent` to parent the span on instead of the active context. */
  traceparent?: string
  /** Initial attributes. */
  attributes?: Attributes
}

/**
 * Runs `fn` inside a new active span `name` and ends it (sdk.md §12.2). Status OK when `fn`
 * returns or resolves (unless the work set ERROR itself); ERROR with the message, plus a recorded exception, when it throws or
 * rejects — the error is rethrown unchanged. A no-op span when telemetry is off.
 */
export async function withSpan<T>(name: string, opts: WithSpanOptions, fn: (span: Span) => T | Promise<T>): Promise<T> {
  const parent = opts.traceparent !== undefined ? extractTraceparent(opts.traceparent) : context.active()
  const span = getTracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes ?? {} }, parent)
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      const result = await fn(span)
      setOkUnlessError(span)
      return result
    } catch (error) {
      markSpanError(span, error)
      throw error
    } finally {
      span.end()
    }
  })
}

/**
 * Sets status OK unless the span already has ERROR (set by `setCurrentSpanError` inside the work):
 * OK would otherwise overwrite it. Reads the SDK span's `status`; API-only spans just get OK.
 */
export function setOkUnlessError(span: Span): void {
  const status = (span as unknown as { status?: { code?: SpanStatusCode } }).status
  if (status?.code !== SpanStatusCode.ERROR) span.setStatus({ code: SpanStatusCode.OK })
}

/** Sets ERROR status on `span` with the error's message, records it as an exception, and sets `error.type`. */
export function markSpanError(span: Span, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error)
  if (error instanceof Error) span.recordException(error)
  else span.recordException({ name: 'Error', message })
  span.setAttribute('error.type', error instanceof Error ? error.name : typeof error)
  span.setStatus({ code: SpanStatusCode.ERROR, message })
}

/** Adds an event to the active span; nothing outside a span. */
export function recordSpanEvent(name: string, attributes?: Attributes): void {
  trace.getActiveSpan()?.addEvent(name, attributes)
}

/** Sets an attribute on the active span; nothing outside a span. */
export function setCurrentSpanAttribute(key: string, value: AttributeValue): void {
  trace.getActiveSpan()?.setAttribute(key, value)
}

/** Sets ERROR status with `message` on the active span; nothing outside a span. */
export function setCurrentSpanError(message: string): void {
  trace.getActiveSpan()?.setStatus({ code: SpanStatusCode.ERROR, message })
}

/** The `traceparent` of the active span context (`00-<32 hex>-<16 hex>-<2 hex>`), or undefined. */
export function injectTraceparent(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {}
  traceContext().inject(ctx, carrier, defaultTextMapSetter)
  return carrier['traceparent']
}

/**
 * A context whose remote parent is `traceparent` (W3C, version 00 or later). An invalid header
 * (wrong length, non-hex, all-zero ids) gives a context without a span. Never throws.
 */
export function extractTraceparent(traceparent: string, base: Context = ROOT_CONTEXT): Context {
  if (typeof traceparent !== 'string') return base
  return traceContext().extract(base, { traceparent }, defaultTextMapGetter)
}

/** The W3C `baggage` header of the active context's baggage, or undefined when it has none. */
export function injectBaggage(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {}
  baggagePropagator().inject(ctx, carrier, defaultTextMapSetter)
  return carrier['baggage']
}

/** A context carrying the entries of a W3C `baggage` header; malformed members are skipped. */
export function extractBaggage(baggage: string, base: Context = context.active()): Context {
  if (typeof baggage !== 'string') return base
  return baggagePropagator().extract(base, { baggage }, defaultTextMapGetter)
}

/** A context from an optional `traceparent` and an optional `baggage` header (root context plus both). */
export function extractContext(traceparent?: string, baggage?: string): Context {
  let ctx = ROOT_CONTEXT
  if (traceparent !== undefined) ctx = extractTraceparent(traceparent, ctx)
  if (baggage !== undefined) ctx = extractBaggage(baggage, ctx)
  return ctx
}

/** The value of baggage entry `key` in the active context, or undefined. */
export function getBaggageEntry(key: string): string | undefined {
  return propagation.getBaggage(context.active())?.getEntry(key)?.value
}

/**
 * A copy of the active context with baggage entry `key` set to `value`. Run code in it with
 * `context.with(ctx, fn)`: contexts are immutable.
 */
export function setBaggageEntry(key: string, value: string): Context {
  const ctx = context.active()
  const bag = propagation.getBaggage(ctx) ?? propagation.createBaggage()
  return propagation.setBaggage(ctx, bag.setEntry(key, { value }))
}

/** A copy of the active context without baggage entry `key`. */
export function removeBaggageEntry(key: string): Context {
  const ctx = context.active()
  const bag = propagation.getBaggage(ctx)
  return bag === undefined ? ctx : propagation.setBaggage(ctx, bag.removeEntry(key))
}

/** Every baggage entry of the active context, key → value. */
export function getAllBaggage(): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, entry] of propagation.getBaggage(context.active())?.getAllEntries() ?? []) out[key] = entry.value
  return out
}

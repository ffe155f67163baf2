/**
 * Traced HTTP client calls (sdk.md §12.2): {@link executeTracedRequest} wraps one `fetch` in a
 * CLIENT span and {@link patchGlobalFetch} makes every `globalThis.fetch` call do so.
 *
 * @example
 * const res = await executeTracedRequest('https://api.example.com/v1/users?id=3', { method: 'POST' })
 * // span "POST /v1/users", header traceparent injected; status ≥ 400 → span ERROR, error.type = "404"
 */
import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import { getTracer, injectBaggage, injectTraceparent, markSpanError } from './trace.ts'

/** `RequestInit` plus the tracer to use (default: svc's tracer). */
export type TracedRequestInit = RequestInit & { tracer?: Tracer }

type Fetch = typeof globalThis.fetch
/** What `fetch` accepts as its first argument. */
type FetchInput = Parameters<Fetch>[0]

let originalFetch: Fetch | undefined

function describe(input: FetchInput, init?: RequestInit): { method: string; url: URL | undefined } {
  const request = typeof Request !== 'undefined' && input instanceof Request ? input : undefined
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase()
  const raw = request !== undefined ? request.url : String(input)
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  return { method, url }
}

/**
 * Performs `fetch(input, init)` in a CLIENT span named `<METHOD> <path>` with `http.request.method`,
 * `url.full`, `server.address` and `http.response.status_code`, injecting `traceparent` (and
 * `baggage`) into the request headers. A status ≥ 400 sets ERROR status and `error.type` to the
 * status code; a network error sets ERROR, records the exception, sets `error.type` to its name
 * and is rethrown. Uses the unpatched `fetch` when {@link patchGlobalFetch} is active.
 */
export async function executeTracedRequest(input: FetchInput, init?: TracedRequestInit): Promise<Response> {
  const { tracer = getTracer(), ...requestInit } = init ?? {}
  const { method, url } = describe(input, requestInit)
  const doFetch = originalFetch ?? globalThis.fetch
  const span = tracer.startSpan(`${method} ${url?.pathname ?? '/'}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      ...(url !== undefined ? { 'url.full': url.href, 'server.address': url.hostname } : {}),
    },
  })
  const ctx = trace.setSpan(context.active(), span)
  const headers = new Headers(requestInit.headers ?? (input instanceof Request ? input.headers : undefined))
  const traceparent = injectTraceparent(ctx)
  if (traceparent !== undefined) headers.set('traceparent', traceparent)
  const baggage = injectBaggage(ctx)
  if (baggage !== undefined) headers.set('baggage', baggage)
  try {
    const response = await context.with(ctx, () => doFetch(input, { ...requestInit, headers }))
    span.setAttribute('http.response.status_code', response.status)
    if (response.status >= 400) {
      span.setAttribute('error.type', String(response.status))
      span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${response.status}` })
    }
    return response
  } catch (error) {
    markSpanError(span, error)
    throw error
  } finally {
    span.end()
  }
}

/**
 * Replaces `globalThis.fetch` with a traced version using `tracer` (see
 * {@link executeTracedRequest}). Idempotent: a second call only swaps the tracer.
 */
export function patchGlobalFetch(tracer?: Tracer): void {
  if (originalFetch === undefined) originalFetch = globalThis.fetch
  const patched = (input: FetchInput, init?: RequestInit): Promise<Response> =>
    executeTracedRequest(input, tracer !== undefined ? { ...init, tracer } : init)
  globalThis.fetch = patched as Fetch
}

/** Restores the `fetch` that {@link patchGlobalFetch} replaced; nothing when not patched. */
export function unpatchGlobalFetch(): void {
  if (originalFetch === undefined) return
  globalThis.fetch = originalFetch
  originalFetch = undefined
}

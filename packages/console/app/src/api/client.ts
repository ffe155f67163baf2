/**
 * Typed client of the console backend (cli.md §7.1). The browser never talks to the engine: every
 * read and write goes through `POST /api/invoke`, which the backend performs as the `svc-console`
 * worker.
 */
import { jsonParse } from 'svc-protocol/json'
import type { ConsoleInfo, ConsoleMicrovm, StreamGroups, HttpTestRequest, HttpTestResponse, InvocationErrorBody, InvokeRequest, InvokeResult, RerunRequest, RerunResult } from './types.ts'

/** A failed call: an invocation error body from the engine, or a transport failure (`code: 'NETWORK'`). */
export class ApiError extends Error {
  override name = 'ApiError'
  readonly code: string
  readonly body: InvocationErrorBody
  constructor(body: InvocationErrorBody, options?: { cause?: unknown }) {
    super(body.message, options)
    this.code = body.code
    this.body = body
  }
}

// Texts from the backend go through jsonParse: Chrome shares V8's escaped-key bug (docs/decisions.md).
async function request<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  let response: Response
  try {
    const init: RequestInit = { method, headers: { accept: 'application/json' } }
    if (body !== undefined) {
      init.body = JSON.stringify(body)
      init.headers = { accept: 'application/json', 'content-type': 'application/json' }
    }
    response = await fetch(path, init)
  } catch (cause) {
    throw new ApiError({ code: 'NETWORK', message: 'The console backend is not reachable' }, { cause })
  }
  const text = await response.text()
  let parsed: unknown
  try {
    parsed = text === '' ? undefined : jsonParse(text)
  } catch (cause) {
    throw new ApiError({ code: 'BAD_RESPONSE', message: `${path} answered ${response.status} with a body that is not JSON` }, { cause })
  }
  if (!response.ok && !(parsed && typeof parsed === 'object' && 'ok' in parsed)) {
    const error = (parsed as { error?: InvocationErrorBody } | undefined)?.error
    throw new ApiError(error && typeof error === 'object' ? error : { code: `HTTP_${response.status}`, message: `${path} answered ${response.status}` })
  }
  return parsed as T
}

/**
 * `GET /api/info` → `{version, engine_url, http_url, stream_url, connected}`.
 * @throws ApiError `NETWORK` when the backend is unreachable.
 */
export function getInfo(): Promise<ConsoleInfo> {
  return request<ConsoleInfo>('GET', '/api/info')
}

/**
 * Invokes a function through the backend and returns the envelope as it came:
 * `{ok: true, result, duration_ms}` or `{ok: false, error: {code, message}, duration_ms}`.
 * Transport failures are folded into `{ok: false}` with code `NETWORK` and `duration_ms` measured
 * in the browser, so an invoke panel can always show something.
 *
 * @example const r = await invoke({ function_id: 'math::add', payload: { a: 1, b: 2 } })
 */
export async function invoke<T = unknown>(req: InvokeRequest): Promise<InvokeResult<T>> {
  const started = performance.now()
  try {
    return await request<InvokeResult<T>>('POST', '/api/invoke', req)
  } catch (error) {
    const body = error instanceof ApiError ? error.body : { code: 'NETWORK', message: String(error) }
    return { ok: false, error: body, duration_ms: Math.round(performance.now() - started) }
  }
}

/**
 * `POST /api/rerun`: invokes a function again in a new trace marked `svc.rerun_of` (the old run's
 * trace id), and returns the invoke envelope with the new `trace_id`. Transport failures are folded
 * into `{ok: false}` as for {@link invoke}.
 * @example const r = await rerun({ function_id: 'math::add', payload: { a: 2, b: 2 }, rerun_of: run.trace_id })
 */
export async function rerun<T = unknown>(req: RerunRequest): Promise<RerunResult<T>> {
  const started = performance.now()
  try {
    return await request<RerunResult<T>>('POST', '/api/rerun', req)
  } catch (error) {
    const body = error instanceof ApiError ? error.body : { code: 'NETWORK', message: String(error) }
    return { ok: false, error: body, duration_ms: Math.round(performance.now() - started) }
  }
}

/**
 * Invokes a function and returns only its result (`undefined` for "no result").
 * @throws ApiError with the invocation's error code and message.
 */
export async function call<T = unknown>(functionId: string, payload: unknown = {}, options: { namespace?: string; timeout_ms?: number; trace?: boolean } = {}): Promise<T> {
  const outcome = await invoke<T>({ function_id: functionId, payload, ...options })
  if (!outcome.ok) throw new ApiError(outcome.error)
  return outcome.result
}

/**
 * `GET /api/microvms` → the workers that run in a microVM with their VM's host RSS in bytes
 * (cli.md §5.7; from the supervisor's state files, as `svc worker list` shows them).
 * @throws ApiError `NETWORK` when the backend is unreachable.
 */
export function getMicrovms(): Promise<{ workers: ConsoleMicrovm[] }> {
  return request<{ workers: ConsoleMicrovm[] }>('GET', '/api/microvms')
}

/**
 * `GET /api/stream-groups` → every stream group with its item count (at most 500 counted).
 * @throws ApiError `engine_unreachable` (503) when the streams cannot be listed.
 */
export function getStreamGroups(): Promise<StreamGroups> {
  return request<StreamGroups>('GET', '/api/stream-groups')
}

/**
 * `POST /api/http`: the backend performs the request against the engine's HTTP listener (no CORS).
 * @returns `{status, headers, body, duration_ms}`.
 * @throws ApiError when the backend cannot perform it.
 */
export function httpRequest(req: HttpTestRequest): Promise<HttpTestResponse> {
  return request<HttpTestResponse>('POST', '/api/http', req)
}

/**
 * Reading and checking request bodies of the console API (cli.md §7.1). Every body is hostile:
 * bounded in size, parsed with a nesting limit, and checked field by field, so a bad request is a
 * 4xx with `{error: {code, message}}`, never a crash.
 */
import type { IncomingMessage } from 'node:http'
import { parseJson } from 'svc-protocol/json'

/** Largest request body the API reads, bytes; more is refused with 413. */
export const MAX_BODY_BYTES = 1024 * 1024
/** Longest `timeout_ms` of `/api/invoke` and `/api/http`, ms (10 minutes). */
export const MAX_TIMEOUT_MS = 600_000

/** A request the API refuses: HTTP `status` and the `{error: {code, message}}` body. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  constructor(status: number, code: string, message: string) {
    super(message)
    this.status = status
    this.code = code
  }
}

const badRequest = (message: string) => new ApiError(400, 'INVALID_REQUEST', message)

/**
 * Reads and parses a JSON body of at most {@link MAX_BODY_BYTES}.
 * @throws {ApiError} 413 `PAYLOAD_TOO_LARGE`, 400 `INVALID_BODY` (not JSON, or nested deeper than 128)
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const declared = Number(req.headers['content-length'])
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
    req.resume()
    throw tooLarge()
  }
  // Events rather than `for await`: leaving an async iterator destroys the socket, and the 413
  // must still reach the client. The rest of an oversized body is read and discarded.
  const chunks = await new Promise<Buffer[]>((resolve, reject) => {
    const received: Buffer[] = []
    let size = 0
    let over = false
    req.on('data', (chunk: Buffer) => {
      if (over) return
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        over = true
        received.length = 0
        reject(tooLarge())
        return
      }
      received.push(chunk)
    })
    req.on('end', () => resolve(received))
    req.on('error', (err) => reject(new ApiError(400, 'INVALID_BODY', `request body could not be read (${err.message})`)))
  })
  const text = Buffer.concat(chunks).toString('utf8')
  if (text.trim() === '') throw new ApiError(400, 'INVALID_BODY', 'request body is empty; send a JSON object')
  try {
    return parseJson(text)
  } catch (err) {
    throw new ApiError(400, 'INVALID_BODY', `request body is not valid JSON (${(err as Error).message.slice(0, 200)})`)
  }
}

function tooLarge(): ApiError {
  return new ApiError(413, 'PAYLOAD_TOO_LARGE', `request body exceeds ${MAX_BODY_BYTES} bytes`)
}

/** Body of `POST /api/invoke`. */
export interface InvokeRequest {
  function_id: string
  payload: unknown
  namespace?: string
  timeout_ms?: number
  /** false: the call records no trace (the app's own reads); default true. */
  trace?: boolean
}

/**
 * Checks a `POST /api/invoke` body: `function_id` a non-empty string (≤ 1024 chars), `payload`
 * any JSON value (default `{}`), `namespace` a non-empty string, `timeout_ms` an integer
 * 1–{@link MAX_TIMEOUT_MS}, `trace` a boolean.
 * @throws {ApiError} 400 `INVALID_REQUEST` naming the field
 */
export function parseInvokeRequest(body: unknown): InvokeRequest {
  const o = object(body, '{"function_id": "math::add", "payload": {...}}')
  const functionId = o.function_id
  if (typeof functionId !== 'string' || functionId === '' || functionId.length > 1024) {
    throw badRequest('function_id must be a non-empty string of at most 1024 characters')
  }
  const request: InvokeRequest = { function_id: functionId, payload: o.payload === undefined ? {} : o.payload }
  if (o.namespace !== undefined && o.namespace !== null) {
    if (typeof o.namespace !== 'string' || o.namespace.trim() === '' || o.namespace.length > 256) {
      throw badRequest('namespace must be a non-empty string of at most 256 characters')
    }
    request.namespace = o.namespace
  }
  const timeout = timeoutOf(o.timeout_ms)
  if (timeout !== undefined) request.timeout_ms = timeout
  if (o.trace !== undefined && o.trace !== null) {
    if (typeof o.trace !== 'boolean') throw badRequest('trace must be true or false')
    request.trace = o.trace
  }
  return request
}

/** Body of `POST /api/rerun`: an {@link InvokeRequest} (always traced) plus the run it repeats. */
export interface RerunRequest extends Omit<InvokeRequest, 'trace'> {
  /** Trace id of the run re-run: 32 lower-case hex digits, not all zero; absent for a payload with no trace (a dead letter). */
  rerun_of?: string
}

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/

/**
 * Checks a `POST /api/rerun` body: the fields of {@link parseInvokeRequest} (`trace` is not
 * accepted: a re-run is always traced) and `rerun_of`, the old run's trace id (32 hex digits, any
 * case, not all zero; returned in lower case), optional: a dead letter names no trace.
 * @throws {ApiError} 400 `INVALID_REQUEST` naming the field
 */
export function parseRerunRequest(body: unknown): RerunRequest {
  const o = object(body, '{"function_id": "math::add", "payload": {...}, "rerun_of": "4bf92f3577b34da6a3ce929d0e0e4736"}')
  if (o.trace !== undefined) throw badRequest('a re-run is always traced; remove trace')
  const { trace: _trace, ...call } = parseInvokeRequest(o)
  if (o.rerun_of === undefined || o.rerun_of === null) return call
  const rerunOf = typeof o.rerun_of === 'string' ? o.rerun_of.toLowerCase() : undefined
  if (rerunOf === undefined || !TRACE_ID.test(rerunOf)) throw badRequest('rerun_of must be the trace id of the run re-run: 32 hex digits, not all zero')
  return { ...call, rerun_of: rerunOf }
}

/** Body of `POST /api/http`. */
export interface HttpProxyRequest {
  method: string
  /** Starts with `/`; may carry its own `?query`. */
  path: string
  query: [string, string][]
  headers: [string, string][]
  /** Sent as is; a non-string JSON value is sent as JSON. */
  body: string | undefined
  timeout_ms: number
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
/** Headers the proxy sets itself or that would confuse the hop to svc-http. */
const HOP_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection', 'expect'])
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// Field values: visible ASCII and Latin-1, spaces and tabs; no CR/LF/NUL.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/

/**
 * Checks a `POST /api/http` body: `method` one of GET HEAD POST PUT PATCH DELETE OPTIONS (any
 * case), `path` starting with a single `/`, `query` an object of string/number/boolean values or
 * lists of them, `headers` an object of strings (hop-by-hop headers are dropped), `body` a string
 * or any JSON value (not with GET/HEAD), `timeout_ms` as for invoke (default 30000).
 * @throws {ApiError} 400 `INVALID_REQUEST` naming the field
 */
export function parseHttpRequest(body: unknown): HttpProxyRequest {
  const o = object(body, '{"method": "GET", "path": "/hello"}')
  if (typeof o.method !== 'string' || !METHODS.has(o.method.toUpperCase())) {
    throw badRequest(`method must be one of ${[...METHODS].join(', ')}`)
  }
  const method = o.method.toUpperCase()
  if (typeof o.path !== 'string' || !o.path.startsWith('/') || o.path.startsWith('//') || o.path.length > 8192 || /[\s\\]/.test(o.path)) {
    throw badRequest('path must start with a single / and hold no spaces or backslashes, e.g. /users/42')
  }
  const query: [string, string][] = []
  if (o.query !== undefined && o.query !== null) {
    for (const [key, value] of Object.entries(object(o.query, '{"page": "2"}', 'query'))) {
      for (const item of Array.isArray(value) ? value : [value]) {
        if (typeof item !== 'string' && typeof item !== 'number' && typeof item !== 'boolean') {
          throw badRequest(`query.${key} must be a string, number or boolean, or a list of them`)
        }
        query.push([key, String(item)])
      }
    }
  }
  const headers: [string, string][] = []
  if (o.headers !== undefined && o.headers !== null) {
    for (const [name, value] of Object.entries(object(o.headers, '{"content-type": "application/json"}', 'headers'))) {
      if (!TOKEN.test(name)) throw badRequest(`headers: ${JSON.stringify(name.slice(0, 80))} is not a valid header name`)
      if (typeof value !== 'string' || !FIELD_VALUE.test(value)) {
        throw badRequest(`headers.${name} must be a string without line breaks`)
      }
      if (!HOP_HEADERS.has(name.toLowerCase())) headers.push([name, value])
    }
  }
  let text: string | undefined
  if (o.body !== undefined && o.body !== null) {
    if (method === 'GET' || method === 'HEAD') throw badRequest(`a ${method} request cannot have a body`)
    if (typeof o.body === 'string') text = o.body
    else {
      text = JSON.stringify(o.body)
      if (!headers.some(([n]) => n.toLowerCase() === 'content-type')) headers.push(['content-type', 'application/json'])
    }
  }
  return { method, path: o.path, query, headers, body: text, timeout_ms: timeoutOf(o.timeout_ms) ?? 30_000 }
}

function object(value: unknown, example: string, field?: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badRequest(`${field ?? 'request body'} must be a JSON object, e.g. ${example}`)
  }
  return value as Record<string, unknown>
}

function timeoutOf(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw badRequest(`timeout_ms must be an integer from 1 to ${MAX_TIMEOUT_MS}`)
  }
  return value
}

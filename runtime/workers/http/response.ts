/**
 * Response mapping (builtins.md §3.6) and the worker's error envelope (§3.9). Pure functions: they
 * turn a handler's response descriptor into a status, a flat header list and body bytes, and
 * never touch a socket.
 */
import { randomBytes } from 'node:crypto'
import { validateHeaderName, validateHeaderValue } from 'node:http'

/**
 * A response ready to be written: `headers` is a flat `[name, value, name, value, …]` list (the
 * form `ServerResponse.writeHead` accepts, which keeps repeated names as separate lines).
 */
export interface PreparedResponse {
  status: number
  headers: string[]
  /** Null means no body bytes at all. */
  body: string | null
}

/** Why a descriptor was refused; answered with 500 `invalid_response`. */
export interface InvalidResponse {
  invalid: string
}

/** Content type of JSON bodies the worker serialises: error envelopes and rule 5 of §3.6. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** Headers a handler may not set: the server owns framing and connection management (§3.6). */
const IGNORED_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive'])

function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return `a ${typeof value}`
}

/** Appends one header line unless the server owns it or it is not valid HTTP. */
function pushHeader(out: string[], name: string, value: string): void {
  if (IGNORED_HEADERS.has(name.toLowerCase())) return
  try {
    validateHeaderName(name)
    validateHeaderValue(name, value)
  } catch {
    return // not representable on the wire (bad token, CR/LF in the value): dropped like other bad values
  }
  out.push(name, value)
}

/**
 * Collects the `headers` field of a descriptor (§3.6), or of a `set_headers` control item (§3.7),
 * into the flat list `out`: an object whose string values are kept, numbers converted, arrays of
 * strings (or numbers) repeated as separate lines and other values dropped; or an array of
 * `"Name: value"` lines. Anything else sets no headers. Names the server owns
 * (`content-length`, `transfer-encoding`, `connection`, `keep-alive`) and lines that are not valid
 * HTTP are dropped.
 */
export function collectResponseHeaders(headers: unknown, out: string[]): void {
  if (headers === null || typeof headers !== 'object') return
  if (Array.isArray(headers)) {
    for (const line of headers) {
      if (typeof line !== 'string') continue
      const colon = line.indexOf(':')
      if (colon <= 0) continue
      const name = line.slice(0, colon).trim()
      if (name !== '') pushHeader(out, name, line.slice(colon + 1).trim())
    }
    return
  }
  for (const name of Object.keys(headers)) {
    const value = (headers as Record<string, unknown>)[name]
    if (typeof value === 'string') pushHeader(out, name, value)
    else if (typeof value === 'number') pushHeader(out, name, String(value))
    else if (Array.isArray(value)) {
      for (const item of value) {
        if (typeof item === 'string') pushHeader(out, name, item)
        else if (typeof item === 'number') pushHeader(out, name, String(item))
      }
    }
  }
}

/** The first Content-Type among collected headers, if the handler set one. */
function findContentType(headers: string[]): string | undefined {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i]!.length === 12 && headers[i]!.toLowerCase() === 'content-type') return headers[i + 1]
  }
  return undefined
}

/**
 * Maps a response descriptor `{status_code?, headers?, body?}` to a response (builtins.md §3.6).
 *
 * Body serialisation, first matching rule wins: (1) status 204 or 304: no body (HEAD is the
 * writer's business); (2) `body` absent or null: empty, no content type added; (3) the handler set
 * a content type and `body` is a string: the string unchanged; (4) a non-JSON content type and a
 * non-string body: the JSON text under that type; (5) otherwise the JSON text, with
 * `content-type: application/json; charset=utf-8` unless the handler set one.
 *
 * @returns the response, or `{invalid}` when `result` is not an object (a string, number, boolean
 *   or array) or `status_code` is not an integer from 200 to 599 (a 1xx status is interim: written as
 *   the answer, the client would wait for a final one; docs/decisions.md). `undefined`/`null`
 *   results are the caller's business (streamed responses, §3.7).
 */
export function mapResponse(result: object): PreparedResponse | InvalidResponse {
  if (Array.isArray(result)) return { invalid: 'the handler returned an array, expected a response object' }
  const descriptor = result as { status_code?: unknown; headers?: unknown; body?: unknown }
  let status = 200
  const code = descriptor.status_code
  if (code !== undefined && code !== null) {
    if (typeof code !== 'number' || !Number.isInteger(code) || code < 200 || code > 599) {
      return { invalid: `status_code must be an integer from 200 to 599, got ${JSON.stringify(code) ?? kindOf(code)}` }
    }
    status = code
  }
  const headers: string[] = []
  if (descriptor.headers !== undefined) collectResponseHeaders(descriptor.headers, headers)
  const body = descriptor.body
  if (status === 204 || status === 304 || body === undefined || body === null) {
    return { status, headers, body: null }
  }
  const contentType = findContentType(headers)
  if (contentType !== undefined && typeof body === 'string') return { status, headers, body }
  let text: string | undefined
  try {
    text = JSON.stringify(body)
  } catch (err) {
    return { invalid: `body cannot be serialised as JSON: ${(err as Error).message}` }
  }
  if (text === undefined) return { invalid: `body must be a JSON value, got ${kindOf(body)}` }
  // Rules 4 and 5 send the same JSON text; they differ only in who names the content type.
  if (contentType === undefined) headers.push('content-type', JSON_CONTENT_TYPE)
  return { status, headers, body: text }
}

/** Describes a non-object handler result for the `invalid_response` message. */
export function describeInvalidResult(result: unknown): string {
  return `the handler returned ${kindOf(result)}, expected a response object`
}

/** A W3C `traceparent` (version 00–fe, trace and parent ids not all zero). */
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/

/**
 * The `traceparent` a response carries (issue 21): `traceparent` when it is a valid W3C value
 * (the request's server span, or the request's own header when no span was recorded), else
 * undefined — a malformed request header is never echoed.
 */
export function responseTraceparent(traceparent: string | undefined): string | undefined {
  return traceparent !== undefined && traceparent.length === 55 && TRACEPARENT.test(traceparent) ? traceparent : undefined
}

/**
 * `headers` with `traceparent` set to `traceparent` (issue 21): a handler's own `traceparent`
 * lines are dropped first, since the server's names the trace the request ran in. Unchanged when
 * `traceparent` is undefined.
 */
export function withTraceparent(headers: string[], traceparent: string | undefined): string[] {
  if (traceparent === undefined) return headers
  for (let i = headers.length - 2; i >= 0; i -= 2) if (headers[i]!.length === 11 && headers[i]!.toLowerCase() === 'traceparent') headers.splice(i, 2)
  headers.push('traceparent', traceparent)
  return headers
}

/** A fresh `error_id`: 12 lower-case hex digits (§3.9). */
export function newErrorId(): string {
  return randomBytes(6).toString('hex')
}

/**
 * The error envelope `{"error":{"code","message","error_id"?,"trace_id"?}}` (§3.9) as JSON text;
 * `trace_id` (32 hex) names the request's trace, which `svc traces <trace_id>` draws (issue 21);
 * `extra` adds top-level fields (`skipped: true` for 422 `CONDITION_NOT_MET`).
 */
export function errorEnvelope(code: string, message: string, errorId?: string, extra?: Record<string, unknown>, traceId?: string): string {
  const error: Record<string, string> = { code, message }
  if (errorId !== undefined) error.error_id = errorId
  if (traceId !== undefined) error.trace_id = traceId
  return JSON.stringify(extra ? { error, ...extra } : { error })
}

/**
 * What the HTTP worker delivers to the functions of `http` triggers and what they answer
 * (builtins.md §3.4–§3.8, sdk.md §11).
 */

/** Methods a route may bind (builtins.md §3.2). */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS'

/** Repeated keys give arrays. */
export type MultiValueMap = Record<string, string | string[]>

/** The `trigger` field of a request object (builtins.md §3.4). */
export interface HttpTriggerInfo {
  type: 'http'
  /** The route pattern. */
  path: string
  /** The route's method (GET for a HEAD request served by a GET route). */
  method: HttpMethod
}

/**
 * The payload a route's handler and condition receive (builtins.md §3.4). On the wire a handler's
 * payload also carries `request_body` (read) and `response` (write) channel refs
 * (`{channel_id, access_key, direction}`, protocol.md §9); they are not typed here because each
 * SDK hands them to the handler as its own live channel ends (sdk.md §11). A condition gets no refs.
 */
export interface HttpRequest<TBody = unknown> {
  /** Request method, upper case. */
  method: string
  /** The concrete request path as received, without the query string. */
  path: string
  /** The pattern that matched, e.g. `/s/:code`. */
  route: string
  /** Percent-decoded parameter values; the wildcard remainder under `*`. */
  path_params: Record<string, string>
  /** Decoded, `+` as space; repeated keys give arrays; a key without `=` gives `""`. */
  query_params: MultiValueMap
  /** Lower-case names; repeated headers give arrays. */
  headers: MultiValueMap
  /** Parsed JSON, text, form object, or null (builtins.md §3.5). */
  body: TBody
  trigger: HttpTriggerInfo
}

/** What a function bound to an `http` trigger returns (builtins.md §3.6). */
export interface HttpResponse<TBody = unknown> {
  status_code: number
  headers?: Record<string, string>
  body?: TBody
}

/**
 * `svc-helpers/http` (sdk.md §11, §15): the HTTP request/response shapes of functions bound to
 * `http` triggers. (The streaming `http()` helper is not built yet.)
 */
export type { HttpRequest, HttpResponse } from 'svc-protocol/payloads/http'
/** The methods an `http` trigger accepts (sdk.md §15). */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

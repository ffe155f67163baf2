/**
 * HTTP-invoked functions (protocol.md §6.8): the engine executes the call as an HTTP request to the
 * registered URL, signs it as configured, and maps the response back to a result or an error.
 *
 * The host is resolved once. The `http_functions` policy (§12.4) checks those addresses and the
 * request connects to exactly them, so a host whose DNS answer changes between the check and the
 * connection (DNS rebinding) cannot steer the request to a private address. When the policy needs
 * the addresses and the lookup fails, the call fails closed with `url_validation_failed`.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP, type LookupFunction } from 'node:net'
import type { HttpInvocationConfig } from 'svc-protocol'
import { Errors, SvcError } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { HTTP_FUNCTIONS_DEFAULTS, type HttpFunctionsPolicy, type InvocationContext } from './types.ts'

/** One address of a host, as `dns.lookup(host, { all: true })` gives it. */
export interface ResolvedAddress {
  address: string
  family: 4 | 6
}

/**
 * Resolves a host name to its addresses; rejects (an `Error` with a `code` such as `ENOTFOUND`)
 * when the name cannot be resolved. Default: `dns.lookup(host, { all: true })`, the resolver
 * Node's own `http.request` uses.
 */
export type HostResolver = (host: string) => Promise<ResolvedAddress[]>

/** Seams of {@link invokeOverHttp}; the engine passes none. */
export interface HttpInvokeOptions {
  /** Default: the system resolver (`dns.lookup`). Tests give one that answers differently per call. */
  resolve?: HostResolver
}

const DEFAULT_TIMEOUT_MS = 30000

const systemResolver: HostResolver = async (host) =>
  (await lookup(host, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))

/**
 * Addresses `block_private_ips` refuses: loopback, private, link-local and unique-local (§12.4),
 * plus the ranges that are never a public unicast destination (unspecified, shared CGNAT space,
 * multicast, reserved, IPv6 site-local). BlockList also matches IPv4-mapped IPv6 forms
 * (`::ffff:127.0.0.1`, `::ffff:7f00:1`) against the IPv4 rules.
 */
const PRIVATE_ADDRESSES = (() => {
  const list = new BlockList()
  for (const [network, prefix] of [
    ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
    ['172.16.0.0', 12], ['192.168.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4],
  ] as const) list.addSubnet(network, prefix, 'ipv4')
  for (const [network, prefix] of [
    ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
  ] as const) list.addSubnet(network, prefix, 'ipv6')
  return list
})()

/** True when `address` (an IPv4 or IPv6 literal) is one `block_private_ips` refuses. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 0) return true // not an address at all: never a safe destination
  return PRIVATE_ADDRESSES.check(address, family === 6 ? 'ipv6' : 'ipv4')
}

function allowlisted(host: string, allowlist: readonly string[]): boolean {
  return allowlist.some((entry) => {
    const pattern = entry.toLowerCase().replace(/^\[|\]$/g, '')
    return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern
  })
}

/** Where a checked request goes: the URL, its bare host name, and the addresses to connect to. */
interface Target {
  url: URL
  /** `url.hostname` without IPv6 brackets. */
  host: string
  /** The addresses the request may connect to; undefined for an IP literal. */
  addresses?: ResolvedAddress[]
}

/**
 * Applies the `http_functions` policy (§12.4) and resolves the host once.
 * @throws SvcError `url_validation_failed` for a URL the policy refuses, including a host that
 *   cannot be resolved while `block_private_ips` applies; `http_request_failed` for a host that
 *   cannot be resolved otherwise (a connection failure, as before the check existed).
 */
async function checkUrl(url: string, policy: HttpFunctionsPolicy, resolve: HostResolver): Promise<Target> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw Errors.urlNotAllowed(url, 'not a valid URL')
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw Errors.urlNotAllowed(url, 'only http and https URLs can be invoked')
  if (parsed.username !== '' || parsed.password !== '') throw Errors.urlNotAllowed(url, 'credentials in the URL are not supported; use auth')
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  const exempt = allowlisted(host, policy.url_allowlist)
  if (!exempt && policy.require_https && parsed.protocol !== 'https:') {
    throw Errors.urlNotAllowed(url, 'https is required (http_functions.require_https)')
  }
  const checked = !exempt && policy.block_private_ips
  if (isIP(host)) {
    if (checked && isPrivateAddress(host)) throw Errors.urlNotAllowed(url, 'private address (http_functions.block_private_ips)')
    return { url: parsed, host }
  }
  let addresses: ResolvedAddress[]
  try {
    addresses = await resolve(host)
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err)
    if (checked) throw Errors.urlNotAllowed(url, `cannot resolve ${host} (${detail}) (http_functions.block_private_ips)`)
    throw Errors.httpRequestFailed(url, detail)
  }
  if (addresses.length === 0) {
    if (checked) throw Errors.urlNotAllowed(url, `${host} resolves to no address (http_functions.block_private_ips)`)
    throw Errors.httpRequestFailed(url, `${host} resolves to no address`)
  }
  if (checked && addresses.some((a) => isPrivateAddress(a.address))) {
    throw Errors.urlNotAllowed(url, 'private address (http_functions.block_private_ips)')
  }
  return { url: parsed, host, addresses }
}

/** A `lookup` for `http.request` that answers with the checked addresses and never asks DNS again. */
function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return (_hostname, options, callback) => {
    const family = typeof options.family === 'number' ? options.family : 0
    const matching = family === 4 || family === 6 ? addresses.filter((a) => a.family === family) : addresses
    if (matching.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`no IPv${family} address among the checked addresses`)
      err.code = 'ENOTFOUND'
      callback(err, '', 0)
    } else if (options.all) {
      callback(null, matching)
    } else {
      callback(null, matching[0]!.address, matching[0]!.family)
    }
  }
}

interface HttpAnswer {
  status: number
  statusText: string
  text: string
}

/**
 * Sends one request to `target` and reads the whole response as UTF-8. Redirects are not followed;
 * `timeoutMs` bounds everything from connecting to the last byte.
 * @throws SvcError `http_request_failed` on a connection failure or timeout.
 */
function send(target: Target, method: string, headers: Record<string, string>, body: string | null, timeoutMs: number, signal?: AbortSignal): Promise<HttpAnswer> {
  const href = target.url.href
  return new Promise((resolve, reject) => {
    let settled = false
    const fail = (detail: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      request.destroy()
      reject(Errors.httpRequestFailed(href, detail))
    }
    // The invocation was cancelled: the request is abandoned (its connection closed).
    const onAbort = (): void => fail('the invocation was cancelled')
    const https = target.url.protocol === 'https:'
    const options: RequestOptions & { servername?: string } = {
      method,
      hostname: target.host,
      port: target.url.port === '' ? (https ? 443 : 80) : Number(target.url.port),
      path: `${target.url.pathname}${target.url.search}`,
      headers: body === null ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      // A fresh connection per call: a pooled socket may have been opened by other code without the check.
      agent: false,
    }
    if (target.addresses) options.lookup = pinnedLookup(target.addresses)
    // Certificates are verified against the host name, not the pinned address.
    if (https && !isIP(target.host)) options.servername = target.host
    const request: ClientRequest = (https ? httpsRequest : httpRequest)(options)
    const timer = setTimeout(() => fail(`timed out after ${timeoutMs}ms`), timeoutMs)
    if (signal !== undefined) {
      if (signal.aborted) queueMicrotask(onAbort)
      else signal.addEventListener('abort', onAbort, { once: true })
    }
    request.on('error', (err) => fail(err.message))
    request.on('response', (response: IncomingMessage) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('error', (err) => fail(err.message))
      response.on('close', () => {
        if (!response.complete) fail('the connection closed before the response ended')
      })
      response.on('end', () => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve({ status: response.statusCode ?? 0, statusText: response.statusMessage ?? '', text: Buffer.concat(chunks).toString('utf8') })
      })
    })
    request.end(body ?? undefined)
  })
}

function secret(name: string): string {
  const value = process.env[name]
  if (value === undefined) throw Errors.secretNotSet(name)
  return value
}

/**
 * Executes one call of an HTTP-invoked function (protocol.md §6.8) under the `http_functions`
 * policy (§12.4): the host is resolved once, checked, and the request connects to the checked
 * addresses (TLS still verifies the certificate against the host name).
 *
 * @param config the replica's `invocation` (§5.1); `timeout_ms` (default 30000 ms) bounds the whole request.
 * @param context `signal`, when given, abandons the request once aborted (the invocation was
 *   cancelled or timed out in the engine): its connection is closed.
 * @param policy default {@link HTTP_FUNCTIONS_DEFAULTS}: https only, no private addresses.
 * @param options seams for tests ({@link HttpInvokeOptions}); the engine passes none.
 * @returns the parsed JSON body, or undefined for an empty 2xx body.
 * @throws SvcError `url_validation_failed` (the policy refuses the URL, or a lookup it needs failed),
 *   `secret_not_set`, `http_request_failed` (connection failure or timeout), `invalid_response`
 *   (2xx with a non-JSON body), the code of an `{"error":{code,message}}` body, else `http_error`.
 * @example
 * const result = await invokeOverHttp({ url: 'https://fn.example.com/add' }, 'math::add', { a: 1 }, { function_id: 'math::add' })
 */
export async function invokeOverHttp(
  config: HttpInvocationConfig,
  functionId: string,
  data: unknown,
  context: Pick<InvocationContext, 'function_id' | 'traceparent' | 'baggage'> & { signal?: AbortSignal },
  policy: HttpFunctionsPolicy = HTTP_FUNCTIONS_DEFAULTS,
  options: HttpInvokeOptions = {},
): Promise<unknown> {
  const target = await checkUrl(config.url, policy, options.resolve ?? systemResolver)
  const method = config.method ?? 'POST'
  const body = JSON.stringify(data ?? null)
  const timestamp = String(Math.floor(Date.now() / 1000))
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-svc-function-id': functionId,
    'x-svc-invocation-id': randomUUID(),
    'x-svc-timestamp': timestamp,
  }
  const caller = /(?:^|,)\s*svc\.function\.id=([^,;]*)/.exec(context.baggage ?? '')
  if (caller && caller[1] && decodeURIComponent(caller[1]) !== functionId) headers['x-svc-caller-function-id'] = decodeURIComponent(caller[1])
  if (context.traceparent) headers.traceparent = context.traceparent
  if (context.baggage) headers.baggage = context.baggage
  for (const [name, value] of Object.entries(config.headers ?? {})) headers[name.toLowerCase()] = value
  const auth = config.auth
  if (auth?.type === 'hmac') headers['x-svc-signature'] = `sha256=${createHmac('sha256', secret(auth.secret_key)).update(`${timestamp}.${body}`).digest('hex')}`
  else if (auth?.type === 'bearer') headers.authorization = `Bearer ${secret(auth.token_key)}`
  else if (auth?.type === 'api_key') headers[auth.header.toLowerCase()] = secret(auth.value_key)

  const answer = await send(target, method, headers, method === 'GET' ? null : body, config.timeout_ms ?? DEFAULT_TIMEOUT_MS, context.signal)
  if (answer.status >= 200 && answer.status < 300) {
    if (answer.text.trim() === '') return undefined
    try {
      return jsonParse(answer.text)
    } catch {
      throw Errors.responseNotJson(config.url)
    }
  }
  let errorBody: { code?: unknown; message?: unknown } | undefined
  try {
    errorBody = (jsonParse(answer.text) as { error?: { code?: unknown; message?: unknown } } | null)?.error
  } catch {
    // not JSON: http_error below
  }
  if (typeof errorBody?.code === 'string' && typeof errorBody.message === 'string') throw SvcError.fromBody({ code: errorBody.code, message: errorBody.message })
  throw Errors.httpError(answer.status, answer.statusText)
}

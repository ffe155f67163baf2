/**
 * HTTP-invoked functions (protocol.md §6.8): the engine executes the call as an HTTP request to the
 * registered URL, signs it as configured, and maps the response back to a result or an error.
 */
import { createHmac, randomUUID } from 'node:crypto'
import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import type { HttpInvocationConfig } from 'svc-protocol'
import { SvcError } from 'svc-protocol/errors'
import { HTTP_FUNCTIONS_DEFAULTS, type HttpFunctionsPolicy, type InvocationContext } from './types.ts'

function allowlisted(host: string, allowlist: string[]): boolean {
  return allowlist.some((pattern) => (pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern))
}

function isPrivateAddress(address: string): boolean {
  if (isIP(address) === 4) {
    const [a, b] = address.split('.').map(Number) as [number, number]
    return a === 10 || a === 127 || a === 0 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 169 && b === 254)
  }
  const lower = address.toLowerCase()
  return lower === '::1' || lower === '::' || lower.startsWith('fc') || lower.startsWith('fd') || lower.startsWith('fe80') || lower.startsWith('::ffff:127.')
}

async function checkUrl(url: string, policy: HttpFunctionsPolicy): Promise<void> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new SvcError('url_validation_failed', `URL ${url} is not allowed: not a valid URL`)
  }
  const host = parsed.hostname.replace(/^\[|\]$/g, '')
  if (allowlisted(host, policy.url_allowlist)) return
  if (policy.require_https && parsed.protocol !== 'https:') {
    throw new SvcError('url_validation_failed', `URL ${url} is not allowed: https is required (http_functions.require_https)`)
  }
  if (policy.block_private_ips) {
    const addresses = isIP(host) ? [host] : (await lookup(host, { all: true }).catch(() => [])).map((a) => a.address)
    if (addresses.some(isPrivateAddress)) {
      throw new SvcError('url_validation_failed', `URL ${url} is not allowed: private address (http_functions.block_private_ips)`)
    }
  }
}

function secret(name: string): string {
  const value = process.env[name]
  if (value === undefined) throw new SvcError('secret_not_set', `Environment variable ${name} is not set`)
  return value
}

/**
 * Executes one call of an HTTP-invoked function.
 * @returns the parsed JSON body, or undefined for an empty 2xx body.
 * @throws SvcError `url_validation_failed`, `secret_not_set`, `http_error`, `http_request_failed`,
 *   `invalid_response`, or the code of an `{"error":{code,message}}` body.
 */
export async function invokeOverHttp(
  config: HttpInvocationConfig,
  functionId: string,
  data: unknown,
  context: InvocationContext,
  policy: HttpFunctionsPolicy = HTTP_FUNCTIONS_DEFAULTS,
): Promise<unknown> {
  await checkUrl(config.url, policy)
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
  Object.assign(headers, config.headers ?? {})
  const auth = config.auth
  if (auth?.type === 'hmac') headers['x-svc-signature'] = `sha256=${createHmac('sha256', secret(auth.secret_key)).update(`${timestamp}.${body}`).digest('hex')}`
  else if (auth?.type === 'bearer') headers.authorization = `Bearer ${secret(auth.token_key)}`
  else if (auth?.type === 'api_key') headers[auth.header.toLowerCase()] = secret(auth.value_key)

  let response: Response
  try {
    response = await fetch(config.url, {
      method: config.method ?? 'POST',
      headers,
      body: (config.method ?? 'POST') === 'GET' ? null : body,
      redirect: 'manual',
      signal: AbortSignal.timeout(config.timeout_ms ?? 30000),
    })
  } catch (err) {
    const detail = (err as Error).name === 'TimeoutError' ? `timed out after ${config.timeout_ms ?? 30000}ms` : (err as Error).message
    throw new SvcError('http_request_failed', `HTTP request to ${config.url} failed: ${detail}`)
  }
  const text = await response.text()
  if (response.status >= 200 && response.status < 300) {
    if (text.trim() === '') return undefined
    try {
      return JSON.parse(text)
    } catch {
      throw new SvcError('invalid_response', `Response of ${config.url} is not JSON`)
    }
  }
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }
    if (typeof parsed.error?.code === 'string' && typeof parsed.error.message === 'string') {
      throw new SvcError(parsed.error.code, parsed.error.message)
    }
  } catch (err) {
    if (err instanceof SvcError) throw err
  }
  throw new SvcError('http_error', `HTTP ${response.status} ${response.statusText}`)
}

/**
 * What every transport checks and computes the same way, so that a frame or close the in-memory
 * transport accepts is one a real WebSocket (RFC 6455) would accept too, and both read URLs alike.
 * Internal to the transports; not a subpath export.
 */
import { displayAddress } from '../client/addresses.ts'

/** Status codes an endpoint may send in a close frame (RFC 6455 §7.4; the set `ws` accepts). */
export function isSendableCloseCode(code: number): boolean {
  return (
    Number.isInteger(code) &&
    ((code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999))
  )
}

/** A close reason is at most 123 bytes of UTF-8 (RFC 6455 §5.5: control frame payload ≤ 125). */
export const MAX_CLOSE_REASON_BYTES = 123

/**
 * @throws TypeError when `text` is not a string (a transport sends text frames only).
 */
export function assertText(text: unknown): asserts text is string {
  if (typeof text !== 'string') {
    throw new TypeError(`Transport.send takes a string (one text frame), got ${text === null ? 'null' : typeof text}`)
  }
}

/**
 * @throws TypeError for a code that may not be sent in a close frame (1005 and 1006 are reported,
 *   never sent); RangeError for a reason longer than {@link MAX_CLOSE_REASON_BYTES} bytes.
 */
export function assertCloseArgs(code: number | undefined, reason: string | undefined): void {
  if (code !== undefined && (typeof code !== 'number' || !isSendableCloseCode(code))) {
    throw new TypeError(`close code ${String(code)} cannot be sent: use 1000–1003, 1007–1014 or 3000–4999`)
  }
  if (reason !== undefined && typeof reason !== 'string') throw new TypeError('close reason must be a string')
  if (reason !== undefined && Buffer.byteLength(reason) > MAX_CLOSE_REASON_BYTES) {
    throw new RangeError(`close reason is longer than ${MAX_CLOSE_REASON_BYTES} bytes of UTF-8`)
  }
}

/** Text as a WebSocket peer receives it: UTF-8 encoding turns each lone surrogate into U+FFFD. */
export function asSentText(text: string): string {
  return text.isWellFormed() ? text : text.toWellFormed()
}

/**
 * @throws TypeError when `url` is not a `ws:` or `wss:` URL. The message names the address only
 *   through `displayAddress` (scheme, host, port, path): user, password, query and fragment are
 *   where credentials travel (protocol.md §13.2), and text that does not parse is not shown at all.
 */
export function parseWebSocketUrl(url: string): URL {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new TypeError('not a URL (expected ws://host:port/ or wss://host/)')
  }
  if (parsed.protocol !== 'ws:' && parsed.protocol !== 'wss:') {
    throw new TypeError(`not a ws:// or wss:// URL, got ${parsed.protocol} (${displayAddress(url)})`)
  }
  return parsed
}

/** Query parameters by name, values in order. */
export function queryOf(params: URLSearchParams): Record<string, string[]> {
  const query = new Map<string, string[]>()
  for (const [key, value] of params) {
    const values = query.get(key)
    if (values === undefined) query.set(key, [value])
    else values.push(value)
  }
  // fromEntries defines own properties: a `__proto__` parameter stays a parameter.
  return Object.fromEntries(query)
}

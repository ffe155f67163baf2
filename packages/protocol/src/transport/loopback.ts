/**
 * Which engine addresses are loopback addresses, for the WebSocket client's masking policy
 * (protocol.md §2: the client masks its frames, RFC 6455 §5.3). Masking keeps a browser's script
 * from choosing the bytes an intermediary (a proxy or cache between client and server) sees; on
 * the loopback interface there is no intermediary, so the `ws` client there sends with a zero
 * masking key, which `ws` skips XOR-ing on both ends. Internal to the transports; not a subpath
 * export.
 */
import { BlockList, isIP } from 'node:net'

/** 127.0.0.0/8 and ::1; `BlockList` also matches IPv4-mapped IPv6 (`::ffff:127.0.0.1`) against the IPv4 rule. */
const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')

/**
 * Whether `address` is a literal loopback IP address: IPv4 in 127.0.0.0/8, IPv6 `::1` (any
 * spelling `net.isIP` accepts), or an IPv4-mapped IPv6 address of 127.0.0.0/8. Names (`localhost`)
 * and non-canonical IPv4 forms (`127.1`, `0x7f000001`) are not addresses: false. Never throws.
 *
 * @example isLoopbackAddress('127.0.0.1') // true
 * @example isLoopbackAddress('::ffff:127.0.0.1') // true
 * @example isLoopbackAddress('192.0.2.2') // false
 */
export function isLoopbackAddress(address: unknown): boolean {
  if (typeof address !== 'string') return false
  const family = isIP(address)
  if (family === 0) return false
  return LOOPBACK.check(address, family === 4 ? 'ipv4' : 'ipv6')
}

/**
 * Whether the host of a `ws:`/`wss:` URL names the loopback interface: `localhost` (any case), a
 * loopback IPv4 address in any form the WHATWG URL parser reads as one (`127.1`, `0x7f000001`),
 * or a loopback IPv6 address in brackets (`[::1]`, `[::ffff:127.0.0.1]`). Anything else — other
 * names such as `localhost.evil.com` or `localhost.`, text that is not a URL — is false. Never
 * throws.
 *
 * @example isLoopbackUrl('ws://127.0.0.1:49134') // true
 * @example isLoopbackUrl('ws://LOCALHOST:49134/') // true
 * @example isLoopbackUrl('ws://localhost.evil.com:49134') // false
 */
export function isLoopbackUrl(url: unknown): boolean {
  if (typeof url !== 'string') return false
  let hostname: string
  try {
    hostname = new URL(url).hostname
  } catch {
    return false
  }
  if (hostname === 'localhost') return true
  // The parser has already lower-cased names and canonicalised IPv4 (127.1 → 127.0.0.1).
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return isLoopbackAddress(bare)
}

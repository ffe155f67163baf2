/**
 * Channel refs (protocol.md §9, sdk.md §9): the plain JSON that names one end of a channel, how an
 * SDK recognises one anywhere in a payload or result, and the URL an end connects to.
 *
 * A ref's `access_key` is the end's credential; its URL is always built from the session's own
 * engine address, never from anything in a payload.
 */
import type { ChannelRef } from '../../payloads/engine.ts'

/**
 * One end of a channel as plain JSON (protocol.md §9): `channel_id` shared by both ends,
 * `access_key` the credential of this end, `direction` which end it is.
 */
export type StreamChannelRef = ChannelRef

/** The two ends (sdk.md §9 `ChannelDirection`); a const object, as enums are not erasable syntax. */
export const ChannelDirection = Object.freeze({ Read: 'read', Write: 'write' } as const)
export type ChannelDirection = (typeof ChannelDirection)[keyof typeof ChannelDirection]

/** One item of a channel (sdk.md §9): a Text item or a Binary item. */
export type ChannelItem = { type: 'text'; text: string } | { type: 'binary'; data: Uint8Array }

/** Builders of {@link ChannelItem}s (sdk.md §9). */
export const ChannelItem = Object.freeze({
  Text: (text: string): ChannelItem => ({ type: 'text', text }),
  Binary: (data: Uint8Array): ChannelItem => ({ type: 'binary', data }),
})

/**
 * Longest `channel_id` and `access_key` a ref may have, characters. Engines mint UUIDs (36); the
 * bound keeps a hostile payload from making an SDK build huge URLs.
 */
export const MAX_REF_FIELD_LENGTH = 256

/** `channel_id`: a URL path segment as it is, never a dot segment (`.`/`..` would leave `/ws/channels/`). */
const CHANNEL_ID = /^[A-Za-z0-9_~-][A-Za-z0-9._~-]*$/
/** `access_key`: printable ASCII without space (the key is percent-encoded into the query anyway). */
const ACCESS_KEY = /^[\x21-\x7e]+$/

function wellFormedField(value: unknown, pattern: RegExp): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_REF_FIELD_LENGTH && pattern.test(value)
}

/**
 * True when `value` is a channel ref an SDK turns into a live end (sdk.md §9): a non-array object
 * whose `channel_id` (1–256 of `A–Z a–z 0–9 . _ ~ -`, not starting with `.`) and `access_key`
 * (1–256 printable ASCII characters, no space) are strings and whose `direction` is `read` or
 * `write`. Other keys of the object are allowed (and dropped by materialisation). Stricter than
 * "any string" so that no ref can steer the URL an end connects to; every engine-made ref passes.
 *
 * @example
 * isChannelRef({ channel_id: '7c1e…', access_key: 'a4f0…', direction: 'read' }) // true
 * isChannelRef({ channel_id: '../x', access_key: 'k', direction: 'read' })       // false
 */
export function isChannelRef(value: unknown): value is StreamChannelRef {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const v = value as Record<string, unknown>
  const direction = v.direction
  return (direction === 'read' || direction === 'write') && wellFormedField(v.channel_id, CHANNEL_ID) && wellFormedField(v.access_key, ACCESS_KEY)
}

/** The three fields of a ref, nothing else (what a live end serialises back to). */
export function refOf(value: StreamChannelRef): StreamChannelRef {
  return { channel_id: value.channel_id, access_key: value.access_key, direction: value.direction }
}

/**
 * Every channel ref in `data` with its path (sdk.md §9): keys joined with `.`, array indexes as
 * numbers, `''` for `data` itself; depth first, in key order. Refs inside refs are not looked for.
 *
 * @example
 * extractChannelRefs({ body: readerRef, parts: [writerRef] }) // [['body', readerRef], ['parts.0', writerRef]]
 */
export function extractChannelRefs(data: unknown): Array<[path: string, ref: StreamChannelRef]> {
  const found: Array<[string, StreamChannelRef]> = []
  const walk = (value: unknown, path: string): void => {
    if (typeof value !== 'object' || value === null) return
    if (isChannelRef(value)) {
      found.push([path, refOf(value)])
      return
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) walk(value[i], path === '' ? String(i) : `${path}.${i}`)
      return
    }
    for (const key of Object.keys(value)) walk((value as Record<string, unknown>)[key], path === '' ? key : `${path}.${key}`)
  }
  walk(data, '')
  return found
}

/**
 * The channel endpoint of an engine address (protocol.md §9): the worker URL without query or
 * fragment, trailing slashes removed. `ws://h:1/?token=t` → `ws://h:1`.
 * @throws TypeError when `address` is not a `ws:`/`wss:` URL.
 */
export function channelBase(address: string): string {
  const url = new URL(address)
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`channel ends need a ws: or wss: engine address, got ${url.protocol}`)
  url.search = ''
  url.hash = ''
  return url.href.replace(/\/+$/, '')
}

/**
 * The URL one end opens (protocol.md §9): `<base>/ws/channels/<channel_id>?key=<access_key,
 * percent-encoded>&dir=<direction>`. `ref` must pass {@link isChannelRef}.
 */
export function channelUrl(base: string, ref: StreamChannelRef): string {
  return `${base}/ws/channels/${encodeURIComponent(ref.channel_id)}?key=${encodeURIComponent(ref.access_key)}&dir=${ref.direction}`
}

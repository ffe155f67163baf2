/**
 * The engine's UUID v4 source (protocol.md §1: ids the engine assigns are lower-case UUID v4
 * strings): invocation ids, queue receipts and message ids, drawn on every call and every
 * delivery.
 *
 * Why not `crypto.randomUUID()`: Node builds its text by concatenating 20 pieces, so each id is a
 * chain of ~20 cons strings (~700 bytes of young garbage, ~0.4 KB per call in an allocation
 * profile) that is flattened again the first time the id is hashed. Here the same kind of
 * randomness (`crypto.randomFillSync`, one draw per 256 ids, as Node buffers its own) is written as
 * ASCII hex into one scratch buffer and read out as one flat 36-character string: the id is the
 * only allocation. Not for secrets (reattach tokens, channel keys keep `crypto.randomUUID`): the
 * pool of drawn bytes stays in memory until it is used.
 */
import { randomFillSync } from 'node:crypto'

/** Ids per draw of random bytes (16 bytes each). */
const IDS_PER_DRAW = 256
const pool = Buffer.allocUnsafeSlow(16 * IDS_PER_DRAW)
let used = pool.length
/** The ASCII codes of each byte's two hex digits, high digit first. */
const HEX_CODES = new Uint8Array(512)
for (let i = 0; i < 256; i++) {
  const hex = i.toString(16).padStart(2, '0')
  HEX_CODES[2 * i] = hex.charCodeAt(0)
  HEX_CODES[2 * i + 1] = hex.charCodeAt(1)
}
/** Where each of the 16 bytes' two digits go in `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`. */
const PLACES = Uint8Array.of(0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34)
const text = Buffer.alloc(36, '-')

/**
 * A new random UUID v4 (RFC 9562 §5.4), lower-case, e.g. `3f0e…-…-4…-[89ab]…-…`: 122 random bits
 * from `crypto.randomFillSync`.
 */
export function uuid4(): string {
  if (used === pool.length) {
    randomFillSync(pool)
    used = 0
  }
  const at = used
  used += 16
  pool[at + 6] = (pool[at + 6]! & 0x0f) | 0x40 // version 4
  pool[at + 8] = (pool[at + 8]! & 0x3f) | 0x80 // variant 10
  for (let i = 0; i < 16; i++) {
    const byte = pool[at + i]!
    const place = PLACES[i]!
    text[place] = HEX_CODES[2 * byte]!
    text[place + 1] = HEX_CODES[2 * byte + 1]!
  }
  return text.toString('latin1', 0, 36)
}

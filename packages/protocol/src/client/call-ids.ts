/**
 * Invocation ids of the calls a client makes (protocol.md §5.8 `invocation_id`): a random prefix
 * drawn once per client and a counter, `<16 hex digits>-<counter in base 36>` (e.g.
 * `9f1c2e7a5b3d4c61-2s`). The engine reads a caller's ids as opaque strings (protocol.md §3.5) and
 * keys them per connection, so what an id must be is unique among the calls of its session:
 * the counter never repeats in a client, and the 64-bit prefix makes ids of different clients
 * distinct too (so logs and `engine::invocations::list` never mix two calls up).
 *
 * Why not a UUID per call: a v4 UUID cost the caller ~0.3 µs to draw and format plus its
 * `JSON.stringify` for the frame, and every index that holds the call (the client's call table,
 * the engine's ids a caller sent) hashes all of its 36 characters; this id is ~18 characters of
 * `[0-9a-f-]` and `[0-9a-z]`, written into the frame between quotes as it is (no character of it
 * needs escaping). Bindings keep UUID ids (sdk.md §5: the trigger id is a UUID).
 */

/** Digits of the prefix: 64 random bits in hex. */
export const CALL_ID_PREFIX_LENGTH = 16

/** What every id of {@link CallIds} looks like. */
export const CALL_ID_FORMAT = /^[0-9a-f]{16}-[0-9a-z]{1,11}$/

/** One client's source of invocation ids. */
export class CallIds {
  readonly #prefix: string
  #next = 0

  /**
   * @param uuid a source of v4 UUIDs (the platform's `crypto.randomUUID`), drawn once for the
   *   prefix: its 32 hex digits less the version digit (index 14 of the UUID's text).
   * @throws TypeError when `uuid()` does not return a UUID's text.
   */
  constructor(uuid: () => string) {
    const hex = uuid().replace(/-/g, '')
    if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new TypeError('CallIds needs a UUID source')
    this.#prefix = (hex.slice(0, 12) + hex.slice(13, 17)).toLowerCase() + '-'
  }

  /** The next id: never one this object returned before (up to 2^53 ids). */
  next(): string {
    return this.#prefix + (this.#next++).toString(36)
  }
}

/**
 * Engine addresses of a client (sdk.md §2, issue 19 §3): one `ws:`/`wss:` URL or several, the
 * engines of one fleet, tried in order and in rotation (as nats.js `servers: [...]`). Every SDK
 * checks its addresses here, so the rules and the errors are the same everywhere, and no error or
 * log line names an address's credentials: {@link displayAddress} keeps scheme, host, port and
 * path only.
 *
 * @example
 * engineAddresses(['ws://10.0.0.1:49134', 'ws://10.0.0.2:49134']) // both, checked
 * engineAddresses(splitAddressList('ws://a:1, ws://b:1'), 'SVC_URL') // from the environment
 */

/**
 * Most addresses one client takes. A fleet is a handful of engines; the bound keeps a hostile or
 * mistaken list (an environment variable of megabytes) from costing more than its check.
 */
export const MAX_ENGINE_ADDRESSES = 64

/**
 * An address as errors and logs may show it: `scheme://host:port/path`, without user, password,
 * query or fragment (where credentials travel, protocol.md §13.2). `'(not a URL)'` for text that
 * does not parse: its parts cannot be told apart, so none of it is shown.
 *
 * @example displayAddress('wss://u:p@svc.example/ws?token=t') // 'wss://svc.example/ws'
 */
export function displayAddress(address: string): string {
  let url: URL
  try {
    url = new URL(address)
  } catch {
    return '(not a URL)'
  }
  return `${url.protocol}//${url.host}${url.pathname}`
}

/**
 * The entries of a comma-separated list of addresses (an environment variable such as `SVC_URL`),
 * each trimmed of spaces. Empty entries are kept (as `''`) so {@link engineAddresses} refuses them
 * by position; a comma inside an address must be written `%2C`.
 *
 * @example splitAddressList('ws://a:1, ws://b:1') // ['ws://a:1', 'ws://b:1']
 */
export function splitAddressList(text: string): string[] {
  return text.split(',').map((entry) => entry.trim())
}

/**
 * Checks the engine address option of a client: one address, or a non-empty list of them, each a
 * `ws:` or `wss:` URL. Returns the addresses as given (in order, not rewritten: the first is tried
 * first), as a frozen array.
 *
 * @param input a string (one address, used as given: no splitting) or an array of strings.
 * @param source what to call the option in errors, e.g. `'SVC_URL'`; default `'engine address'`.
 * @throws TypeError naming the entry (`engine address 2 of 3 …`) when `input` is neither a string
 *   nor an array, is an empty list or a list of more than {@link MAX_ENGINE_ADDRESSES}, or an entry
 *   is not a string, is empty, is not a URL, or is not a `ws:`/`wss:` URL. The message shows an
 *   entry only through {@link displayAddress}.
 */
export function engineAddresses(input: unknown, source = 'engine address'): readonly string[] {
  if (typeof input !== 'string' && !Array.isArray(input)) throw new TypeError(`${source} must be a ws:// or wss:// URL or a list of them`)
  const list: readonly unknown[] = typeof input === 'string' ? [input] : input
  if (list.length === 0) throw new TypeError(`${source} list is empty: give at least one ws:// or wss:// URL`)
  if (list.length > MAX_ENGINE_ADDRESSES) throw new TypeError(`${source} list has ${list.length} entries, at most ${MAX_ENGINE_ADDRESSES} are allowed`)
  const out: string[] = []
  for (let i = 0; i < list.length; i++) {
    const entry = list[i]
    const name = list.length === 1 ? source : `${source} ${i + 1} of ${list.length}`
    if (typeof entry !== 'string') throw new TypeError(`${name} is not a string`)
    if (entry.trim() === '') throw new TypeError(`${name} is empty: give a ws:// or wss:// URL`)
    let url: URL
    try {
      url = new URL(entry)
    } catch {
      throw new TypeError(`${name} is not a URL (expected ws://host:port/ or wss://host/)`)
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      throw new TypeError(`${name} must be a ws:// or wss:// URL, got ${url.protocol} (${displayAddress(entry)})`)
    }
    out.push(entry)
  }
  return Object.freeze(out)
}

/**
 * Where a client connects next (issue 19 §3): the addresses in order and in rotation, one step on
 * each failed attempt or dropped connection; a full round of steps without an engine that took
 * the worker (its `workerregistered`) ends in a backoff wait. With one address every step is a
 * full round, which is the single-engine behaviour of sdk.md §8.
 */
export class AddressRotation {
  readonly addresses: readonly string[]
  #index = 0
  /** Attempts that ended (failed, or dropped after opening) since the round began. */
  #ended = 0

  /** @param addresses checked by {@link engineAddresses}. */
  constructor(addresses: readonly string[]) {
    this.addresses = addresses
  }

  /** The address of the current (or next) attempt. */
  get current(): string {
    return this.addresses[this.#index]!
  }

  /** Position of {@link current} in the list, 0-based. */
  get index(): number {
    return this.#index
  }

  /**
   * The current attempt ended (failed or dropped): moves to the next address. True when that
   * completed a round (every address had its turn), so a backoff wait is due before the next.
   */
  advance(): boolean {
    this.#index = (this.#index + 1) % this.addresses.length
    this.#ended++
    if (this.#ended < this.addresses.length) return false
    this.#ended = 0
    return true
  }

  /** An engine took the worker: the next failure starts a new round from here. */
  settle(): void {
    this.#ended = 0
  }
}

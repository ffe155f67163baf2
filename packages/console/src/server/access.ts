/**
 * Who may use the console backend (cli.md §7.1; issue 16 item 1). Two checks, in this order:
 *
 * 1. **Host and Origin**: a request must name the console by one of the names it serves —
 *    `localhost`, `127.0.0.1`, `[::1]`, the address it binds to (with a wildcard bind, the machine's
 *    interface addresses), and names the user allows — with the console's own port; an `Origin`,
 *    when present, must be that same host. This refuses DNS-rebinding pages (`Host: evil.example`)
 *    and other sites. Refused: 403 `CONSOLE_HOST_NOT_ALLOWED`.
 * 2. **Access token** (as Jupyter does): a random token per run, unless turned off. The address
 *    `svc console` prints carries it (`/?token=…`); opening it sets an HttpOnly, SameSite=Strict
 *    cookie and redirects to the clean address. The API and the WebSockets need the cookie or
 *    `Authorization: Bearer <token>`. Refused: 401 `CONSOLE_TOKEN_REQUIRED`. Tokens are compared
 *    in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { Errors, type SvcError } from 'svc-protocol/errors'

/** Names every console serves, whatever it binds to. */
export const LOOPBACK_HOSTS: readonly string[] = ['localhost', '127.0.0.1', '[::1]']

/** Environment variable a supervisor sets to give the console its token (a flag would show in `ps`). */
export const CONSOLE_TOKEN_ENV = 'SVC_CONSOLE_TOKEN'

/** What a token may be: 16 to 512 URL- and cookie-safe characters. */
const TOKEN_PATTERN = /^[A-Za-z0-9._~-]{16,512}$/
/** A host name or IPv4 address, or a bracketed IPv6 address. */
const HOST_NAME = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)$/
/** A Host header: a {@link HOST_NAME}, then an optional port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/
const WILDCARDS = new Set(['0.0.0.0', '::', '[::]', ''])

/**
 * A fresh access token: 24 random bytes as base64url (32 characters, 192 bits).
 * @example newToken() // 'kq3R0yFf2n9wX1bT5cLh7uZsP4eVaMdG'
 */
export function newToken(): string {
  return randomBytes(24).toString('base64url')
}

/**
 * Checks a token chosen by the user (`SVC_CONSOLE_TOKEN`).
 * @throws TypeError naming the rule when it is not 16 to 512 of `A-Z a-z 0-9 . _ ~ -`
 */
export function checkToken(token: string): string {
  if (!TOKEN_PATTERN.test(token)) {
    throw new TypeError(`the console access token must be 16 to 512 of A-Z a-z 0-9 . _ ~ - (got ${token.length} characters)`)
  }
  return token
}

/**
 * The canonical form of a host name or address as a Host header names it: lower case, IPv4 in
 * dotted form, IPv6 compressed in brackets; undefined when it is not a valid name.
 *
 * @example canonicalHost('LOCALHOST') // 'localhost'
 * @example canonicalHost('0:0:0:0:0:0:0:1') // '[::1]'
 */
export function canonicalHost(name: string): string | undefined {
  const bracketed = isIP(name) === 6 ? `[${name}]` : name
  if (!HOST_NAME.test(bracketed)) return undefined
  try {
    // The pattern leaves only host characters, so the URL parser cannot read a user or path in.
    return new URL(`http://${bracketed}`).hostname
  } catch {
    return undefined
  }
}

/**
 * Checks a name the user allows (`--allowed-host`): a host name or address, without port.
 * @throws TypeError when it is not one
 */
export function checkAllowedHost(name: string): string {
  const canonical = canonicalHost(name.trim())
  if (canonical === undefined) throw new TypeError(`--allowed-host '${name}' is not a host name or address (give it without scheme, port or path)`)
  return canonical
}

export interface ConsoleAccessOptions {
  /** The interface the console binds (`127.0.0.1`, `::1`, `0.0.0.0`, a name…). */
  bindHost: string
  /** The port it listens on; a Host header must name it. */
  port: number
  /** Further names to serve (`--allowed-host`), any case, without port. */
  allowedHosts?: readonly string[]
  /** The access token; undefined turns the token check off (`--no-token`). */
  token?: string | undefined
}

/** The checks of one console server; see the module comment. */
export class ConsoleAccess {
  readonly token: string | undefined
  /** Name of the cookie that carries the token; per port, as cookies are shared by every port of a host. */
  readonly cookieName: string
  readonly #port: number
  readonly #names: Set<string>
  readonly #wildcard: boolean
  readonly #digest: Buffer | undefined

  /** @throws TypeError for an allowed host that is not a host name, or a token that breaks {@link checkToken}'s rule */
  constructor(options: ConsoleAccessOptions) {
    this.#port = options.port
    this.#wildcard = WILDCARDS.has(options.bindHost)
    this.#names = new Set(LOOPBACK_HOSTS)
    const bound = this.#wildcard ? undefined : canonicalHost(options.bindHost)
    if (bound !== undefined) this.#names.add(bound)
    for (const name of options.allowedHosts ?? []) this.#names.add(checkAllowedHost(name))
    this.token = options.token === undefined ? undefined : checkToken(options.token)
    this.#digest = this.token === undefined ? undefined : digest(this.token)
    this.cookieName = `svc_console_token_${options.port}`
  }

  /** The `host:port` names a request may use, for messages. */
  get allowedHosts(): string[] {
    return [...this.#names].map((name) => `${name}:${this.#port}`)
  }

  /**
   * The refusal of a request whose Host or Origin is not this console, else undefined (step 1).
   * Applies to every request and upgrade, app files included.
   */
  refusal(req: IncomingMessage): SvcError | undefined {
    const host = req.headers.host
    if (host === undefined || !this.#servesHost(host)) return Errors.consoleHostNotAllowed(host?.slice(0, 200), this.allowedHosts)
    const origin = req.headers.origin
    if (origin !== undefined && !this.#sameOrigin(origin, host)) return Errors.consoleOriginNotAllowed(origin.slice(0, 200))
    return undefined
  }

  /** True when the token is off, or the request carries it as cookie or bearer token (step 2). */
  authorized(req: IncomingMessage): boolean {
    if (this.#digest === undefined) return true
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1]
    if (bearer !== undefined && this.matches(bearer)) return true
    const cookie = cookieValue(req.headers.cookie, this.cookieName)
    return cookie !== undefined && this.matches(cookie)
  }

  /** True when the request tried a token (bearer or cookie), for the message of a 401. */
  triedToken(req: IncomingMessage): boolean {
    return req.headers.authorization !== undefined || cookieValue(req.headers.cookie, this.cookieName) !== undefined
  }

  /** Compares `candidate` with the token in constant time (digests of equal length). */
  matches(candidate: string): boolean {
    if (this.#digest === undefined) return false
    return timingSafeEqual(digest(candidate), this.#digest)
  }

  /** `Set-Cookie` value that stores the token in the browser: HttpOnly, SameSite=Strict, this session only. */
  cookie(): string {
    return `${this.cookieName}=${this.token ?? ''}; Path=/; HttpOnly; SameSite=Strict`
  }

  #servesHost(header: string): boolean {
    const match = HOST_HEADER.exec(header)
    if (match === null) return false
    const port = match[2] === undefined ? 80 : Number(match[2])
    if (port !== this.#port) return false
    const name = canonicalHost(match[1]!)
    if (name === undefined) return false
    return this.#names.has(name) || (this.#wildcard && interfaceAddresses().has(name))
  }

  #sameOrigin(origin: string, host: string): boolean {
    let url: URL
    try {
      url = new URL(origin)
    } catch {
      return false
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
    // Only a bare origin, as browsers send it: no user, path or default port.
    if (url.origin !== origin.toLowerCase()) return false
    const match = HOST_HEADER.exec(host)!
    const port = match[2] === undefined ? 80 : Number(match[2])
    const originPort = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port)
    return url.hostname === canonicalHost(match[1]!) && originPort === port
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** The value of cookie `name` in a `Cookie` header, undefined when absent. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** This machine's interface addresses in Host-header form (`192.168.1.5`, `[fe80::1]`), read on demand. */
function interfaceAddresses(): Set<string> {
  const found = new Set<string>()
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) {
      const name = canonicalHost(entry.address.split('%')[0]!)
      if (name !== undefined) found.add(name)
    }
  }
  return found
}

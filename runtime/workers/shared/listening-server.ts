/**
 * The listening-server lifecycle of built-in workers that accept connections of their own (the
 * HTTP worker on 3111, the stream worker's WebSocket on 3112, the console): bind, rebind on a
 * `host`/`port` change, report `listen_urls`, stop.
 *
 * Rebind (builtins.md §3.1, §6.1): the new address is bound first; if that fails the old server
 * keeps serving and the error is thrown. After a successful rebind the old server stops accepting,
 * idle keep-alive connections are closed at once, in-flight requests get `retireGraceMs` (10 s)
 * to finish, then every remaining connection is closed.
 *
 * Timeouts: every server gets Node's header, request and keep-alive timeouts from one place
 * ({@link serverOptions}), with a connection check frequent enough for them to take effect.
 */
import type { Server, ServerOptions } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Logger } from '../../engine/types.ts'
import { systemClock, type CancelTimer, type Clock } from './clock.ts'

/** How long a replaced server may finish in-flight requests after a rebind, ms (builtins.md §3.1). */
export const RETIRE_GRACE_MS = 10_000

/**
 * Transport timeouts of a listening server, ms. A client that has not sent a complete request head
 * within `headersTimeoutMs`, or a complete request within `requestTimeoutMs`, gets 408 and its
 * connection is closed (slow-header and slow-body clients); an upgraded WebSocket is no longer a
 * request and is not affected.
 */
export interface ServerTimeouts {
  /** Time to receive the complete request head. */
  headersTimeoutMs: number
  /** Time to receive the complete request, head and body; at least `headersTimeoutMs`. */
  requestTimeoutMs: number
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: number
  /**
   * How often Node checks open requests against the two timeouts (it checks nowhere else, and its
   * default is 30 s); default a fifth of `headersTimeoutMs`, within 10–1000 ms.
   */
  checkIntervalMs?: number
}

/** Defaults of {@link ServerTimeouts} (docs/decisions.md): 10 s for the head, 120 s for the request, 5 s keep-alive. */
export const SERVER_TIMEOUTS: Readonly<Required<Omit<ServerTimeouts, 'checkIntervalMs'>>> = Object.freeze({
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
  keepAliveTimeoutMs: 5_000,
})

/**
 * Node `http.createServer` options that enforce `timeouts` (defaults {@link SERVER_TIMEOUTS}).
 *
 * @throws RangeError when a timeout is not a positive integer or `headersTimeoutMs` exceeds `requestTimeoutMs`
 * @example createServer(serverOptions({ headersTimeoutMs: 300 }), handler)
 */
export function serverOptions(timeouts: Partial<ServerTimeouts> = {}): ServerOptions {
  const t = { ...SERVER_TIMEOUTS, ...timeouts }
  for (const [key, value] of Object.entries(t)) {
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) throw new RangeError(`${key} must be a positive integer (ms), got ${value}`)
  }
  if (t.headersTimeoutMs > t.requestTimeoutMs) throw new RangeError(`headersTimeoutMs (${t.headersTimeoutMs}) must not exceed requestTimeoutMs (${t.requestTimeoutMs})`)
  return {
    headersTimeout: t.headersTimeoutMs,
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    connectionsCheckingInterval: t.checkIntervalMs ?? Math.min(1000, Math.max(10, Math.floor(t.headersTimeoutMs / 5))),
  }
}

export interface ListeningServerOptions {
  /** Worker name, for log lines (`svc-http listening on http://127.0.0.1:3111`). */
  name: string
  /**
   * A fresh, not yet listening server with its handlers attached; called once per bind with the
   * options to create it with (the timeouts).
   */
  createServer(options: ServerOptions): Server
  /** Default {@link SERVER_TIMEOUTS}. */
  timeouts?: Partial<ServerTimeouts>
  log: Logger
  /** Scheme of the reported URLs; default `http` (`ws` for a WebSocket-only listener). */
  scheme?: string
  /** Told the bound addresses after every successful bind (LocalWorker.setListenUrls). */
  onListenUrls?(urls: string[]): void
  /** Default {@link RETIRE_GRACE_MS}. */
  retireGraceMs?: number
  /** Default {@link systemClock}; runs the grace timer. */
  clock?: Clock
}

/**
 * A URL clients can use to reach a server bound to `host`:`port`: the wildcard addresses are shown
 * as loopback, IPv6 hosts in brackets.
 *
 * @example listenUrl('0.0.0.0', 3111) // 'http://127.0.0.1:3111'
 */
export function listenUrl(host: string, port: number, scheme = 'http'): string {
  let shown = host
  if (host === '0.0.0.0') shown = '127.0.0.1'
  else if (host === '::') shown = '[::1]'
  else if (host.includes(':')) shown = `[${host}]`
  return `${scheme}://${shown}:${port}`
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err)
    server.once('error', onError)
    server.listen({ host, port }, () => {
      server.off('error', onError)
      resolve()
    })
  })
}

/**
 * One worker's listening server across rebinds.
 *
 * @example
 * const listener = new ListeningServer({ name: 'svc-http', log, createServer: (options) => createServer(options, onRequest),
 *   onListenUrls: (urls) => worker.setListenUrls(urls) })
 * await listener.listen('127.0.0.1', 0) // true: bound
 * listener.urls // ['http://127.0.0.1:40123']
 * await listener.stop()
 */
export class ListeningServer {
  private readonly options: ListeningServerOptions
  private readonly clock: Clock
  private current: Server | null = null
  private bound: { host: string; port: number } | null = null
  private currentUrls: string[] = []
  private readonly retiring = new Map<Server, CancelTimer>()

  constructor(options: ListeningServerOptions) {
    this.options = options
    this.clock = options.clock ?? systemClock
  }

  /** The bound addresses as URLs, e.g. `['http://127.0.0.1:3111']`; empty when not listening. */
  get urls(): string[] {
    return [...this.currentUrls]
  }

  /** The server accepting new connections, or null. */
  get server(): Server | null {
    return this.current
  }

  /** Servers replaced by a rebind that are still finishing in-flight requests. */
  get retiringCount(): number {
    return this.retiring.size
  }

  /**
   * Listens on `host`:`port` (0: an ephemeral port). Does nothing when already listening on the
   * same requested address; otherwise binds a new server first and retires the old one.
   *
   * @returns true when a new server was bound.
   * @throws the bind error (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`, `ENOTFOUND`, …); the old server keeps serving.
   */
  async listen(host: string, port: number): Promise<boolean> {
    if (this.current && this.bound && this.bound.host === host && this.bound.port === port) return false
    const server = this.options.createServer(serverOptions(this.options.timeouts))
    await listen(server, host, port)
    const old = this.current
    this.current = server
    this.bound = { host, port }
    this.currentUrls = [listenUrl(host, (server.address() as AddressInfo).port, this.options.scheme)]
    this.options.onListenUrls?.(this.urls)
    this.options.log.info(`${this.options.name} listening on ${this.currentUrls[0]}`, { urls: this.urls })
    if (old) this.retire(old)
    return true
  }

  /** Stops accepting on `server`, closes idle connections, and closes the rest after the grace period. */
  private retire(server: Server): void {
    server.close()
    server.closeIdleConnections()
    const cancel = this.clock.setTimeout(() => {
      this.retiring.delete(server)
      server.closeAllConnections()
    }, this.options.retireGraceMs ?? RETIRE_GRACE_MS)
    this.retiring.set(server, cancel)
    server.once('close', () => {
      cancel()
      this.retiring.delete(server)
    })
  }

  /** Closes the current and every retiring server and all their connections. Idempotent. */
  async stop(): Promise<void> {
    const servers = [...this.retiring.keys()]
    for (const cancel of this.retiring.values()) cancel()
    this.retiring.clear()
    if (this.current) servers.push(this.current)
    this.current = null
    this.bound = null
    this.currentUrls = []
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve())
            server.closeAllConnections()
          }),
      ),
    )
  }
}

/**
 * The registry proxy of microVM installs (cli.md §5.7, issue 22: "install steps reach the package
 * registries only through a host-side proxy limited to them"): an HTTP CONNECT proxy on the host's
 * loopback that opens a TCP tunnel only to an allowed registry host on port 443, forwarded into the
 * guest like the engine's port (`10.0.2.100:<port>`) and named by `HTTPS_PROXY` there.
 *
 * It never sees the registries' traffic (TLS runs end to end through the tunnel); it decides by the
 * host name of the CONNECT line alone. Everything else gets an answer and a closed socket: a plain
 * request 405, a CONNECT to another host or port 403 with `REGISTRY_NOT_ALLOWED`, a line it cannot
 * read 400. Limits: {@link PROXY_LIMITS}.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, Server } from 'node:http'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { Errors } from 'svc-protocol/errors'

/** The registries an install may reach: npm, PyPI (index and files) and crates.io (API, index, downloads). */
export const DEFAULT_REGISTRIES = ['registry.npmjs.org', 'pypi.org', 'files.pythonhosted.org', 'crates.io', 'static.crates.io', 'index.crates.io'] as const

/** The one port a tunnel may reach (HTTPS). */
export const REGISTRY_PORT = 443

/** Bounds of the proxy; each can be lowered per proxy (tests do). */
export const PROXY_LIMITS = {
  /** Open client connections (tunnels and requests in their head); more are refused at accept. */
  maxConnections: 64,
  /** A tunnel with no byte either way for this long is closed (ms). */
  idleTimeoutMs: 120_000,
  /** Time to reach the registry before the CONNECT fails with 502 (ms). */
  connectTimeoutMs: 15_000,
  /** Time to send the CONNECT request head (ms): a slow client cannot hold a slot. */
  headersTimeoutMs: 10_000,
  /** Largest request head (bytes); a CONNECT line with its headers is far smaller. */
  maxHeaderBytes: 8192,
} as const

export interface RegistryProxyOptions {
  /** Allowed host names (case-insensitive, no port). Default {@link registryAllowList} of the environment. */
  allow?: readonly string[]
  /**
   * Where a tunnel to an allowed `host:443` connects. Default the host itself; tests map it to a
   * local server.
   */
  resolve?: (host: string, port: number) => { host: string; port: number }
  /** Interface to listen on; default `127.0.0.1`. */
  host?: string
  /** Default 0 (a free port). */
  port?: number
  limits?: Partial<Record<keyof typeof PROXY_LIMITS, number>>
  /** Each refusal, for the worker's log. */
  onDenied?: (target: string) => void
  /**
   * Asked at every CONNECT: false refuses even an allowed registry (403), so the proxy can stay
   * listening (its port forwarded into the guest) while only install steps may use it. Default open.
   */
  isOpen?: () => boolean
}

export interface RunningRegistryProxy {
  port: number
  /** The allow list in use. */
  allow: readonly string[]
  /** Open client connections now (tunnels, and requests still sending their head). */
  connections(): number
  /** Stops listening and destroys every tunnel. */
  close(): Promise<void>
}

/** Host names as DNS has them: labels of letters, digits and hyphens, at most 253 characters. */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/

/**
 * The target of a CONNECT request line's authority (`host:port`): the host lowercased, without a
 * trailing dot, and the port; undefined for anything else (no port, a port out of 1–65535, an
 * IP literal in brackets, a user part, spaces, control characters, a host that is not a DNS name).
 */
export function parseConnectTarget(authority: string): { host: string; port: number } | undefined {
  const m = /^([^:@/\s[\]]+):(\d{1,5})$/.exec(authority)
  if (!m) return undefined
  const port = Number(m[2])
  if (port < 1 || port > 65535) return undefined
  const host = m[1]!.toLowerCase().replace(/\.$/, '')
  return HOST_NAME.test(host) ? { host, port } : undefined
}

/**
 * The allow list: {@link DEFAULT_REGISTRIES}, the host of the npm registry the user's npmrc names
 * (`registry=` in `$NPM_CONFIG_USERCONFIG` or `~/.npmrc`, or `npm_config_registry`), and the
 * comma-separated host names of `SVC_MICROVM_REGISTRIES`.
 */
export function registryAllowList(env: NodeJS.ProcessEnv = process.env): string[] {
  const hosts = new Set<string>(DEFAULT_REGISTRIES)
  const add = (value: string | undefined) => {
    if (!value) return
    let host = value.trim()
    try {
      if (/^[a-z]+:\/\//i.test(host)) host = new URL(host).hostname
    } catch {
      return
    }
    const target = parseConnectTarget(`${host}:${REGISTRY_PORT}`)
    if (target) hosts.add(target.host)
  }
  add(env.npm_config_registry ?? env.NPM_CONFIG_REGISTRY)
  try {
    const npmrc = readFileSync(env.NPM_CONFIG_USERCONFIG ?? env.npm_config_userconfig ?? join(env.HOME ?? homedir(), '.npmrc'), 'utf8')
    for (const line of npmrc.split(/\r?\n/)) {
      const m = /^\s*registry\s*=\s*(\S+)\s*$/.exec(line)
      if (m) add(m[1])
    }
  } catch {}
  for (const host of (env.SVC_MICROVM_REGISTRIES ?? '').split(',')) add(host)
  return [...hosts]
}

/**
 * Starts the proxy on `127.0.0.1` (Node's HTTP server parses the request; its `connect` event hands
 * over the socket).
 *
 * @example
 * const proxy = await startRegistryProxy({})
 * // in the guest: HTTPS_PROXY=http://10.0.2.100:<guest port> npm install
 */
export async function startRegistryProxy(options: RegistryProxyOptions = {}): Promise<RunningRegistryProxy> {
  const limits: Record<keyof typeof PROXY_LIMITS, number> = { ...PROXY_LIMITS, ...options.limits }
  const allow = [...new Set((options.allow ?? registryAllowList()).map((h) => h.toLowerCase().replace(/\.$/, '')))]
  const allowed = new Set(allow)
  const resolve = options.resolve ?? ((host, port) => ({ host, port }))
  const clients = new Set<Socket>()
  const upstreams = new Set<Socket>()
  const server: Server = createServer({ maxHeaderSize: limits.maxHeaderBytes, requestTimeout: limits.headersTimeoutMs, headersTimeout: limits.headersTimeoutMs }, (req, res) => {
    // Only tunnels: a plain (http://) request would be the proxy fetching for the guest.
    res.writeHead(405, { 'content-type': 'text/plain', connection: 'close', allow: 'CONNECT' })
    res.end('svc registry proxy: only CONNECT to a package registry on port 443\n')
    req.resume()
  })
  server.maxConnections = limits.maxConnections
  server.on('connection', (socket: Socket) => {
    clients.add(socket)
    socket.once('close', () => clients.delete(socket))
  })
  server.on('clientError', (_err, socket: Socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n')
    socket.destroy()
  })
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    client.on('error', () => {})
    const target = parseConnectTarget(req.url ?? '')
    if (!target || !allowed.has(target.host) || target.port !== REGISTRY_PORT || options.isOpen?.() === false) {
      const shown = JSON.stringify(String(req.url ?? '').slice(0, 300))
      options.onDenied?.(shown)
      const error = Errors.registryNotAllowed(shown, allow)
      const body = `${error.code}: ${error.message}\n`
      client.end(`HTTP/1.1 ${target ? 403 : 400} ${target ? 'Forbidden' : 'Bad Request'}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`)
      return
    }
    const to = resolve(target.host, target.port)
    const upstream = connect({ host: to.host, port: to.port })
    upstreams.add(upstream)
    upstream.once('close', () => upstreams.delete(upstream))
    let established = false
    const connectTimer = setTimeout(() => upstream.destroy(new Error('connect timeout')), limits.connectTimeoutMs)
    upstream.once('error', () => {
      clearTimeout(connectTimer)
      if (!established && client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n')
      else client.destroy()
    })
    // The guest gave up before the registry answered.
    client.once('close', () => upstream.destroy())
    upstream.once('connect', () => {
      established = true
      clearTimeout(connectTimer)
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length > 0) upstream.write(head)
      for (const socket of [client, upstream]) {
        socket.setTimeout(limits.idleTimeoutMs, () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream)
      upstream.pipe(client)
      upstream.once('close', () => client.destroy())
    })
  })
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolveListen())
  })
  return {
    port: (server.address() as { port: number }).port,
    allow,
    connections: () => clients.size,
    close: () =>
      new Promise<void>((resolveClose) => {
        for (const socket of [...clients, ...upstreams]) socket.destroy()
        server.close(() => resolveClose())
      }),
  }
}

/**
 * The console backend (cli.md §7.1): an HTTP server with the JSON API, the `/api/live` and
 * `/ws/streams` WebSockets and the single-page app, fed by one `svc-console` worker connection.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Duplex } from 'node:stream'
import { Errors, httpStatusOf, type SvcError } from 'svc-protocol/errors'
import { WebSocketServer } from 'ws'
import { checkAllowedHost, checkToken, ConsoleAccess, newToken } from './access.ts'
import { EngineLink, rerunContext } from './engine-link.ts'
import { LIVE_MAX_INBOUND_BYTES, LiveHub } from './live.ts'
import { ApiError, parseHttpRequest, parseInvokeRequest, parseRerunRequest, readJsonBody, type HttpProxyRequest } from './requests.ts'
import { DEFAULT_APP_DIR, serveApp } from './static.ts'
import { streamGroups } from './stream-groups.ts'
import { relayStream, STREAM_PROXY_MAX_FRAME_BYTES } from './streams-proxy.ts'
import type { ConsoleInfo, ConsoleLog, ConsoleOptions, ConsoleTimeouts, RunningConsole } from './types.ts'

/** Default port and host (cli.md §4.8). */
export const DEFAULT_CONSOLE_PORT = 3113
export const DEFAULT_CONSOLE_HOST = '127.0.0.1'
const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'
/** Largest response body `/api/http` relays, bytes; the rest is cut and `truncated: true` set. */
export const MAX_PROXY_RESPONSE_BYTES = 5 * 1024 * 1024
/**
 * Transport timeouts of the console's HTTP server, ms (docs/decisions.md): a request head must
 * arrive within 10 s and a whole request (bodies are at most 1 MiB) within 60 s, or the client
 * gets 408 and its connection is closed; idle keep-alive connections close after 5 s.
 */
export const CONSOLE_SERVER_TIMEOUTS: Readonly<ConsoleTimeouts> = Object.freeze({ headersTimeoutMs: 10_000, requestTimeoutMs: 60_000, keepAliveTimeoutMs: 5_000 })

const PACKAGE_VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version
const SILENT: ConsoleLog = { info() {}, warn() {}, error() {} }

/** The port could not be bound; `code` is `EADDRINUSE`, `EACCES`, … */
export class ConsoleListenError extends Error {
  readonly code: string
  readonly port: number
  constructor(code: string, port: number, message: string, cause: unknown) {
    super(message, { cause })
    this.code = code
    this.port = port
  }
}

/**
 * Starts the console backend (cli.md §7): binds `host:port`, then connects to the engine as worker
 * `svc-console` (namespace `default`), retrying forever (1 s doubling to 30 s) while the engine is
 * unreachable; the server serves either way and `/api/info` says `connected: false`.
 *
 * Endpoints: `GET /api/info`, `POST /api/invoke`, `POST /api/rerun` (an invoke in a new trace
 * marked `svc.rerun_of`; answers the invoke envelope plus `trace_id` and `rerun_of`), `POST /api/http`,
 * `GET /api/stream-groups` (every stream group with its item count, ./stream-groups.ts), WebSockets `GET /api/live` and
 * `GET /ws/streams`; any other GET is the app (SPA fallback to `index.html`). Bad input answers
 * 400/404/405/413 with `{error: {code, message}}`.
 *
 * Access (./access.ts): every request and upgrade must name an allowed Host (and Origin), else 403
 * `CONSOLE_HOST_NOT_ALLOWED`; the API and the WebSockets need the access token (cookie set by
 * opening {@link RunningConsole.openUrl}, or `Authorization: Bearer`), else 401
 * `CONSOLE_TOKEN_REQUIRED`. A page address with a valid `?token=` sets the cookie and redirects
 * (302) to the address without it.
 *
 * @throws {ConsoleListenError} when the port cannot be bound (`EADDRINUSE`: `Port 3113 is already in use; pass --port`)
 * @throws TypeError when `engineUrl` is not a `ws:`/`wss:` URL, `token` is not 16 to 512 of
 *   `A-Z a-z 0-9 . _ ~ -`, or an allowed host is not a host name
 *
 * @example
 * const console = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:49134' })
 * console.openUrl // http://127.0.0.1:40211/?token=kq3R0yFf2n9wX1bT5cLh7uZsP4eVaMdG
 * await console.close()
 */
export async function startConsole(options: ConsoleOptions = {}): Promise<RunningConsole> {
  const log = options.log ?? SILENT
  const host = options.host ?? DEFAULT_CONSOLE_HOST
  const requestedPort = options.port ?? DEFAULT_CONSOLE_PORT
  const appDir = options.appDir ?? DEFAULT_APP_DIR
  const version = options.version ?? PACKAGE_VERSION
  const engineUrl = options.engineUrl ?? DEFAULT_ENGINE_URL
  // Checked before anything binds, so a bad URL fails fast.
  const parsedEngine = new URL(engineUrl)
  if (parsedEngine.protocol !== 'ws:' && parsedEngine.protocol !== 'wss:') {
    throw new TypeError(`engine URL must be ws:// or wss://, got ${engineUrl}`)
  }
  // Checked before anything binds too; the access checks are made once the port is known.
  const token = options.token === false ? undefined : options.token === undefined ? newToken() : checkToken(options.token)
  const allowedHosts = (options.allowedHosts ?? []).map(checkAllowedHost)
  let access: ConsoleAccess | undefined
  const timeouts = { ...CONSOLE_SERVER_TIMEOUTS, ...options.timeouts }

  let link: EngineLink | undefined
  const live = new LiveHub((channel) => (channel === 'connection' ? link?.connection() : undefined))
  const liveServer = new WebSocketServer({ noServer: true, maxPayload: LIVE_MAX_INBOUND_BYTES })
  const streamServer = new WebSocketServer({ noServer: true, maxPayload: STREAM_PROXY_MAX_FRAME_BYTES })

  const info = async (): Promise<ConsoleInfo> => {
    const addresses = link ? await link.addresses() : { http_url: null, stream_url: null }
    return { version, engine_url: engineUrl, ...addresses, connected: link?.connected ?? false }
  }

  // A slow client gets Node's own 408 and a destroyed socket (its default clientError handling).
  const serverOptions = {
    headersTimeout: timeouts.headersTimeoutMs,
    requestTimeout: timeouts.requestTimeoutMs,
    keepAliveTimeout: timeouts.keepAliveTimeoutMs,
    // Node checks the two request timeouts only on this interval (30 s by default).
    connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(timeouts.headersTimeoutMs / 5))),
  }
  const server = createServer(serverOptions, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof ApiError) return sendJson(res, err.status, { error: { code: err.code, message: err.message } })
      log.error(`console: ${req.method} ${req.url?.slice(0, 200)} failed: ${(err as Error)?.message ?? String(err)}`)
      sendJson(res, 500, { error: { code: 'internal_error', message: 'the console failed to answer; see its log' } })
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = pathOf(req.url)
    const refused = access!.refusal(req)
    if (refused !== undefined) {
      req.resume()
      throw apiError(refused)
    }
    if (pathname === '/api' || pathname.startsWith('/api/')) {
      if (!access!.authorized(req)) {
        req.resume()
        res.setHeader('www-authenticate', 'Bearer realm="svc console"')
        throw apiError(Errors.consoleTokenRequired(access!.triedToken(req)))
      }
      const route = API_ROUTES[pathname]
      if (route === undefined) throw new ApiError(404, 'NOT_FOUND', `no API endpoint ${pathname}; endpoints: ${Object.keys(API_ROUTES).join(', ')}`)
      if (req.method !== route) {
        res.setHeader('allow', route)
        throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${pathname} accepts ${route} only`)
      }
      if (pathname === '/api/info') return sendJson(res, 200, await info())
      if (pathname === '/api/microvms') return sendJson(res, 200, { workers: options.microvms?.() ?? [] })
      if (pathname === '/api/stream-groups') {
        if (!link!.connected) throw new ApiError(503, 'engine_unreachable', 'the console is not connected to the engine')
        return sendJson(res, 200, await streamGroups(link!))
      }
      if (pathname === '/api/live') throw new ApiError(426, 'INVALID_REQUEST', '/api/live is a WebSocket endpoint')
      // A JSON content type makes a browser send a CORS preflight, which this server never
      // grants: other sites cannot invoke functions through a user's console.
      if (!isJsonContentType(req.headers['content-type'])) {
        req.resume()
        throw new ApiError(415, 'INVALID_REQUEST', 'send the body with content-type: application/json')
      }
      const body = await readJsonBody(req)
      if (pathname === '/api/invoke') {
        const call = parseInvokeRequest(body)
        const outcome = await link!.invoke(call.function_id, call.payload, call.namespace, call.timeout_ms, call.trace ?? true)
        return sendJson(res, 200, outcome)
      }
      if (pathname === '/api/rerun') {
        const call = parseRerunRequest(body)
        const trace = rerunContext(call.rerun_of)
        const outcome = await link!.invoke(call.function_id, call.payload, call.namespace, call.timeout_ms, trace)
        return sendJson(res, 200, { ...outcome, trace_id: trace.trace_id, rerun_of: call.rerun_of ?? null })
      }
      return sendJson(res, 200, await proxyHttp(parseHttpRequest(body), link!))
    }
    if (pathname.startsWith('/ws/')) throw new ApiError(426, 'INVALID_REQUEST', `${pathname} is a WebSocket endpoint`)
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', 'the app accepts GET and HEAD only')
    }
    const query = new URLSearchParams(queryOf(req.url))
    const given = query.get('token')
    if (given !== null && access!.token !== undefined) {
      if (!access!.matches(given)) return sendText(res, 401, `${Errors.consoleTokenRequired(true).message}\n`)
      // The token becomes a cookie, and leaves the address bar and the history. One leading slash:
      // `//host/…` would send the browser to another site.
      query.delete('token')
      const rest = query.toString()
      const location = '/' + pathname.replace(/^[/\\]+/, '') + (rest === '' ? '' : `?${rest}`)
      res.writeHead(302, { location, 'set-cookie': access!.cookie(), 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-length': 0 })
      res.end()
      return
    }
    await serveApp(appDir, req, res, pathname)
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    const url = req.url ?? '/'
    const pathname = pathOf(url)
    const refused = access!.refusal(req)
    if (refused !== undefined) return refuseUpgrade(socket, refused)
    if (!access!.authorized(req)) return refuseUpgrade(socket, Errors.consoleTokenRequired(access!.triedToken(req)))
    if (pathname === '/api/live') {
      liveServer.handleUpgrade(req, socket, head, (ws) => live.add(ws))
      return
    }
    if (pathname === '/ws/streams' || pathname.startsWith('/ws/streams/')) {
      void link?.addresses().then(
        ({ stream_url }) => {
          if (socket.destroyed) return
          if (stream_url === null) return refuseUpgrade(socket, 503)
          const query = url.includes('?') ? url.slice(url.indexOf('?')) : ''
          const target = stream_url.replace(/\/$/, '') + (pathname.slice('/ws/streams'.length) || '/') + query
          streamServer.handleUpgrade(req, socket, head, (ws) => relayStream(ws, target))
        },
        () => refuseUpgrade(socket, 503),
      )
      return
    }
    refuseUpgrade(socket, 404)
  })

  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening)
      const code = err.code ?? 'UNKNOWN'
      const message =
        code === 'EADDRINUSE'
          ? `Port ${requestedPort} is already in use; pass --port`
          : code === 'EACCES'
            ? `Port ${requestedPort} needs privileges to bind; pass --port with a port above 1023`
            : `Cannot listen on ${host}:${requestedPort} (${code}); check --host and --port`
      reject(new ConsoleListenError(code, requestedPort, message, err))
    }
    const onListening = () => {
      server.off('error', onError)
      resolve()
    }
    server.once('error', onError)
    server.once('listening', onListening)
    server.listen(requestedPort, host)
  })
  server.on('error', (err) => log.error(`console server: ${err.message}`))

  const address = server.address()
  const port = typeof address === 'object' && address !== null ? address.port : requestedPort
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  access = new ConsoleAccess({ bindHost: host, port, allowedHosts, token })

  try {
    link = new EngineLink({
      engineUrl,
      log,
      initialDelayMs: options.reconnect?.initialDelayMs ?? 1000,
      maxDelayMs: options.reconnect?.maxDelayMs ?? 30_000,
      publish: (channel, data) => live.publish(channel, data),
    })
  } catch (err) {
    server.close()
    throw err
  }

  let closing: Promise<void> | undefined
  return {
    url,
    port,
    token,
    openUrl: token === undefined ? url : `${url}/?token=${token}`,
    get connected() {
      return link?.connected ?? false
    },
    close() {
      closing ??= (async () => {
        live.closeAll()
        for (const ws of streamServer.clients) ws.close(1001, 'console shutting down')
        await link?.close()
        await new Promise<void>((resolve) => {
          server.close(() => resolve())
          server.closeAllConnections()
        })
      })()
      return closing
    },
  }
}

/** API endpoints and the one method each accepts (cli.md §7.1). */
const API_ROUTES: Record<string, string> = {
  '/api/info': 'GET',
  '/api/invoke': 'POST',
  '/api/http': 'POST',
  '/api/rerun': 'POST',
  '/api/stream-groups': 'GET',
  '/api/microvms': 'GET',
  '/api/live': 'GET',
}

/**
 * `POST /api/http`: the request against svc-http's listener. The target is always that listener's
 * origin (the path cannot name another host). Failures to reach it are 502/503 API errors.
 */
async function proxyHttp(request: HttpProxyRequest, link: EngineLink): Promise<Record<string, unknown>> {
  const { http_url } = await link.addresses()
  if (http_url === null || !link.connected) {
    const why = link.connected ? 'svc-http is not running' : 'the console is not connected to the engine'
    throw new ApiError(503, 'engine_unreachable', `No HTTP listener to send to: ${why}`)
  }
  const base = new URL(http_url)
  const target = new URL(request.path, base)
  if (target.origin !== base.origin) throw new ApiError(400, 'INVALID_REQUEST', 'path must stay on the HTTP listener')
  for (const [key, value] of request.query) target.searchParams.append(key, value)
  const started = performance.now()
  let response: Response
  try {
    response = await fetch(target, {
      method: request.method,
      headers: request.headers,
      body: request.body ?? null,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeout_ms),
    })
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause
    if ((err as Error).name === 'TimeoutError') {
      throw new ApiError(504, 'TIMEOUT', `${request.method} ${request.path}: no response within ${request.timeout_ms} ms`)
    }
    throw new ApiError(502, 'http_request_failed', `${request.method} ${target.pathname}: ${cause?.code ?? cause?.message ?? (err as Error).message}`)
  }
  const { text, truncated } = await readText(response)
  const result: Record<string, unknown> = {
    status: response.status,
    headers: Object.fromEntries(response.headers),
    body: text,
    duration_ms: Math.round(performance.now() - started),
  }
  if (truncated) result.truncated = true
  return result
}

/** The response body as UTF-8 text, at most {@link MAX_PROXY_RESPONSE_BYTES}. */
async function readText(response: Response): Promise<{ text: string; truncated: boolean }> {
  if (response.body === null) return { text: '', truncated: false }
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = response.body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      if (size + value.length > MAX_PROXY_RESPONSE_BYTES) {
        chunks.push(value.subarray(0, MAX_PROXY_RESPONSE_BYTES - size))
        await reader.cancel()
        return { text: Buffer.concat(chunks).toString('utf8'), truncated: true }
      }
      chunks.push(value)
      size += value.length
    }
  } catch {
    return { text: Buffer.concat(chunks).toString('utf8'), truncated: true }
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  })
  res.end(text)
}

function pathOf(url: string | undefined): string {
  const raw = url ?? '/'
  const q = raw.indexOf('?')
  return q < 0 ? raw : raw.slice(0, q)
}

function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && /^application\/json\s*(;|$)/i.test(value.trim())
}

/** The query string of a request target, without `?`. */
function queryOf(url: string | undefined): string {
  const raw = url ?? '/'
  const q = raw.indexOf('?')
  return q < 0 ? '' : raw.slice(q + 1)
}

function apiError(error: SvcError): ApiError {
  return new ApiError(httpStatusOf(error.code), error.code, error.message)
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' })
  res.end(text)
}

/**
 * Answers an upgrade request with `status` and closes the socket: the error envelope of `error`
 * (its catalogue status), or an empty body with `status`.
 */
function refuseUpgrade(socket: Duplex, refusal: SvcError | number): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const status = typeof refusal === 'number' ? refusal : httpStatusOf(refusal.code)
  const body = typeof refusal === 'number' ? '' : JSON.stringify({ error: { code: refusal.code, message: refusal.message } })
  const type = body === '' ? '' : 'content-type: application/json; charset=utf-8\r\n'
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\nconnection: close\r\n${type}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => socket.destroy())
}

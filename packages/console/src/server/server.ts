/**
 * The console backend (cli.md §7.1): an HTTP server with the JSON API, the `/api/live` and
 * `/ws/streams` WebSockets and the single-page app, fed by one `svc-console` worker connection.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createRequire } from 'node:module'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import { EngineLink } from './engine-link.ts'
import { LIVE_MAX_INBOUND_BYTES, LiveHub } from './live.ts'
import { ApiError, parseHttpRequest, parseInvokeRequest, readJsonBody, type HttpProxyRequest } from './requests.ts'
import { DEFAULT_APP_DIR, serveApp } from './static.ts'
import { relayStream, STREAM_PROXY_MAX_FRAME_BYTES } from './streams-proxy.ts'
import type { ConsoleInfo, ConsoleLog, ConsoleOptions, RunningConsole } from './types.ts'

/** Default port and host (cli.md §4.8). */
export const DEFAULT_CONSOLE_PORT = 3113
export const DEFAULT_CONSOLE_HOST = '127.0.0.1'
const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'
/** Largest response body `/api/http` relays, bytes; the rest is cut and `truncated: true` set. */
export const MAX_PROXY_RESPONSE_BYTES = 5 * 1024 * 1024

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
 * Endpoints: `GET /api/info`, `POST /api/invoke`, `POST /api/http`, WebSockets `GET /api/live` and
 * `GET /ws/streams`; any other GET is the app (SPA fallback to `index.html`). Bad input answers
 * 400/404/405/413 with `{error: {code, message}}`.
 *
 * @throws {ConsoleListenError} when the port cannot be bound (`EADDRINUSE`: `Port 3113 is already in use; pass --port`)
 * @throws TypeError when `engineUrl` is not a `ws:`/`wss:` URL
 *
 * @example
 * const console = await startConsole({ port: 0, engineUrl: 'ws://127.0.0.1:49134' })
 * console.log(console.url) // http://127.0.0.1:40211
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

  let link: EngineLink | undefined
  const live = new LiveHub((channel) => (channel === 'connection' ? link?.connection() : undefined))
  const liveServer = new WebSocketServer({ noServer: true, maxPayload: LIVE_MAX_INBOUND_BYTES })
  const streamServer = new WebSocketServer({ noServer: true, maxPayload: STREAM_PROXY_MAX_FRAME_BYTES })

  const info = async (): Promise<ConsoleInfo> => {
    const addresses = link ? await link.addresses() : { http_url: null, stream_url: null }
    return { version, engine_url: engineUrl, ...addresses, connected: link?.connected ?? false }
  }

  const server = createServer({ requestTimeout: 120_000, headersTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof ApiError) return sendJson(res, err.status, { error: { code: err.code, message: err.message } })
      log.error(`console: ${req.method} ${req.url?.slice(0, 200)} failed: ${(err as Error)?.message ?? String(err)}`)
      sendJson(res, 500, { error: { code: 'internal_error', message: 'the console failed to answer; see its log' } })
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const pathname = pathOf(req.url)
    if (pathname === '/api' || pathname.startsWith('/api/')) {
      if (!sameOrigin(req)) throw new ApiError(403, 'FORBIDDEN', 'cross-origin requests to the console API are refused')
      const route = API_ROUTES[pathname]
      if (route === undefined) throw new ApiError(404, 'NOT_FOUND', `no API endpoint ${pathname}; endpoints: ${Object.keys(API_ROUTES).join(', ')}`)
      if (req.method !== route) {
        res.setHeader('allow', route)
        throw new ApiError(405, 'METHOD_NOT_ALLOWED', `${pathname} accepts ${route} only`)
      }
      if (pathname === '/api/info') return sendJson(res, 200, await info())
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
      return sendJson(res, 200, await proxyHttp(parseHttpRequest(body), link!))
    }
    if (pathname.startsWith('/ws/')) throw new ApiError(426, 'INVALID_REQUEST', `${pathname} is a WebSocket endpoint`)
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('allow', 'GET, HEAD')
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', 'the app accepts GET and HEAD only')
    }
    await serveApp(appDir, req, res, pathname)
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy())
    const url = req.url ?? '/'
    const pathname = pathOf(url)
    if (!sameOrigin(req)) return refuseUpgrade(socket, 403, 'Forbidden')
    if (pathname === '/api/live') {
      liveServer.handleUpgrade(req, socket, head, (ws) => live.add(ws))
      return
    }
    if (pathname === '/ws/streams' || pathname.startsWith('/ws/streams/')) {
      void link?.addresses().then(
        ({ stream_url }) => {
          if (socket.destroyed) return
          if (stream_url === null) return refuseUpgrade(socket, 503, 'Service Unavailable')
          const query = url.includes('?') ? url.slice(url.indexOf('?')) : ''
          const target = stream_url.replace(/\/$/, '') + (pathname.slice('/ws/streams'.length) || '/') + query
          streamServer.handleUpgrade(req, socket, head, (ws) => relayStream(ws, target))
        },
        () => refuseUpgrade(socket, 503, 'Service Unavailable'),
      )
      return
    }
    refuseUpgrade(socket, 404, 'Not Found')
  })
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n')
    else socket.destroy()
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

/**
 * True unless a browser says the request comes from another site: an `Origin` header, when
 * present, must name the host the request was sent to.
 */
function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin
  if (origin === undefined) return true
  try {
    return new URL(origin).host === req.headers.host
  } catch {
    return false
  }
}

function refuseUpgrade(socket: Duplex, status: number, text: string): void {
  if (socket.writable) socket.end(`HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`)
  else socket.destroy()
}

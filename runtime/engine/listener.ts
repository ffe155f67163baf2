/**
 * One worker listener (`svc-worker-manager` entry, protocol.md §2, §3.3, §12.3): an HTTP server
 * whose upgrades on `/` become worker connections and on `/otel` telemetry sockets; every other
 * path answers 404. The listener owns keepalive: it pings every socket every `ping_interval_ms`
 * and terminates one that has been silent for `idle_timeout_ms`.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type WebSocket } from 'ws'
import type { ListenerConfig, Logger } from './types.ts'

export type AcceptWorker = (socket: WebSocket, request: IncomingMessage) => void

export class Listener {
  readonly config: ListenerConfig
  private readonly server: Server
  private readonly wss: WebSocketServer
  private readonly lastSeen = new WeakMap<WebSocket, number>()
  private keepalive: NodeJS.Timeout | undefined
  private readonly log: Logger
  private readonly accept: AcceptWorker

  constructor(config: ListenerConfig, log: Logger, accept: AcceptWorker) {
    this.config = config
    this.log = log
    this.accept = accept
    this.server = createServer((_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found')
    })
    // A TCP connection that has not completed the upgrade in time is closed (§2).
    this.server.headersTimeout = config.handshake_timeout_ms
    this.server.requestTimeout = config.handshake_timeout_ms
    this.wss = new WebSocketServer({ noServer: true, maxPayload: config.max_message_bytes, perMessageDeflate: false })
    this.server.on('upgrade', (request, socket, head) => this.onUpgrade(request, socket, head))
  }

  /** `ws://host:port` with the port actually bound. */
  get url(): string {
    const address = this.server.address() as AddressInfo
    const host = this.config.host === '0.0.0.0' || this.config.host === '::' ? '127.0.0.1' : this.config.host
    return `ws://${host.includes(':') ? `[${host}]` : host}:${address.port}`
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException) => {
        this.server.off('listening', onListening)
        reject(err)
      }
      const onListening = () => {
        this.server.off('error', onError)
        this.server.on('error', (err) => this.log.error('worker listener error', { error: err.message }))
        this.keepalive = setInterval(() => this.sweep(), this.config.ping_interval_ms)
        this.keepalive.unref()
        resolve()
      }
      this.server.once('error', onError)
      this.server.once('listening', onListening)
      this.server.listen(this.config.port, this.config.host)
    })
  }

  async stop(): Promise<void> {
    if (this.keepalive) clearInterval(this.keepalive)
    for (const socket of this.wss.clients) socket.terminate()
    await new Promise<void>((resolve) => this.wss.close(() => resolve()))
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (request.url ?? '/').split('?', 1)[0]
    const kind = path === '/' ? 'worker' : path === '/otel' || path === '/otel/' ? 'telemetry' : undefined
    if (!kind) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      this.lastSeen.set(ws, Date.now())
      const touch = () => this.lastSeen.set(ws, Date.now())
      ws.on('message', touch)
      ws.on('ping', touch)
      ws.on('pong', touch)
      if (kind === 'worker') this.accept(ws, request)
      else this.acceptTelemetry(ws)
    })
  }

  /**
   * `/otel`: telemetry frames are accepted and dropped until the observability worker lands
   * (builtins.md §12); a JSON ping is answered so SDK keepalives work.
   */
  private acceptTelemetry(ws: WebSocket): void {
    ws.on('error', () => {})
    ws.on('message', (data, isBinary) => {
      if (isBinary) return
      const text = data.toString()
      if (text.length < 64 && /"type"\s*:\s*"ping"/.test(text)) ws.send('{"type":"pong"}')
    })
  }

  private sweep(): void {
    const now = Date.now()
    for (const ws of this.wss.clients) {
      if (now - (this.lastSeen.get(ws) ?? now) > this.config.idle_timeout_ms) {
        this.log.warn('closing a silent worker connection', { idle_timeout_ms: this.config.idle_timeout_ms })
        ws.terminate()
      } else {
        ws.ping()
      }
    }
  }
}

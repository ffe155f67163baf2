/**
 * One worker listener (`svc-worker-manager` entry, protocol.md §2, §12.3): an HTTP server whose
 * WebSocket upgrades on `/` become worker sessions and on `/otel` telemetry links; every other path
 * answers 404. It only turns sockets into {@link Transport}s: sessions, authentication and
 * keepalive belong to the engine, which handles in-memory transports the same way.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { WebSocketServer } from 'ws'
import type { PeerInfo, Transport } from 'svc-protocol'
import { peerInfoOf, wsServerTransport } from 'svc-protocol/transport/ws'
import type { ListenerConfig, Logger } from './types.ts'

/** What an accepted upgrade is for (§2). */
export type LinkKind = 'worker' | 'telemetry'

export type AcceptTransport = (transport: Transport, kind: LinkKind, info: PeerInfo) => void

export class Listener {
  readonly config: ListenerConfig
  private readonly server: Server
  private readonly wss: WebSocketServer
  private readonly log: Logger
  private readonly accept: AcceptTransport
  private readonly open = new Set<Transport>()

  constructor(config: ListenerConfig, log: Logger, accept: AcceptTransport) {
    this.config = config
    this.log = log
    this.accept = accept
    // A TCP connection that has not completed the upgrade in time is closed (§2). Node checks the
    // two timeouts only every connectionsCheckingInterval (default 30 s), so that is kept short.
    const handshake = config.handshake_timeout_ms
    const options = { headersTimeout: handshake, requestTimeout: handshake, connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(handshake / 5))) }
    this.server = createServer(options, (_req, res) => {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not Found')
    })
    this.wss = new WebSocketServer({ noServer: true, maxPayload: config.max_message_bytes, perMessageDeflate: false })
    this.server.on('upgrade', (request, socket, head) => this.onUpgrade(request, socket, head))
  }

  /** `ws://host:port` with the port actually bound. */
  get url(): string {
    const address = this.server.address() as AddressInfo
    const host = this.config.host === '0.0.0.0' || this.config.host === '::' ? '127.0.0.1' : this.config.host
    return `ws://${host.includes(':') ? `[${host}]` : host}:${address.port}`
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
        resolve()
      }
      this.server.once('error', onError)
      this.server.once('listening', onListening)
      this.server.listen(this.config.port, this.config.host)
    })
  }

  async stop(): Promise<void> {
    for (const transport of this.open) transport.terminate()
    await new Promise<void>((resolve) => this.wss.close(() => resolve()))
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {})
    const path = (request.url ?? '/').split('?', 1)[0]
    const kind: LinkKind | undefined = path === '/' ? 'worker' : path === '/otel' || path === '/otel/' ? 'telemetry' : undefined
    if (!kind) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    let info: PeerInfo
    try {
      info = peerInfoOf(request)
    } catch {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    this.wss.handleUpgrade(request, socket, head, (ws) => {
      const transport = wsServerTransport(ws, socket)
      this.open.add(transport)
      ws.once('close', () => this.open.delete(transport))
      this.accept(transport, kind, info)
    })
  }
}

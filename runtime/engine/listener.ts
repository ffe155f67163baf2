/**
 * One worker listener (`svc-worker-manager` entry, protocol.md §2, §12.3): an HTTP server whose
 * WebSocket upgrades on `/` become worker sessions, on `/otel` telemetry links and on
 * `/ws/channels/<channel_id>?key=…&dir=…` channel ends (§9: no session and no auth function, on
 * every listener, RBAC or not: the access key is the credential); every other path answers 404.
 * It only turns sockets into {@link Transport}s (and channel sockets over to the
 * {@link ChannelEndpoint}): sessions, authentication and keepalive belong to the engine, which
 * handles in-memory transports the same way.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'
import { WebSocketServer } from 'ws'
import type { PeerInfo, Transport } from 'svc-protocol'
import { peerInfoOf, wsServerTransport } from 'svc-protocol/transport/ws'
import type { ChannelTicket } from './channels/index.ts'
import type { ListenerConfig, Logger } from './config.ts'

/** What an accepted upgrade is for (§2). */
export type LinkKind = 'worker' | 'telemetry'

export type AcceptTransport = (transport: Transport, kind: LinkKind, info: PeerInfo) => void

/** The channel route of a listener (protocol.md §9). */
export interface ChannelEndpoint {
  /** The end an upgrade asks for; undefined answers 404 `Channel not found` without upgrading. */
  find(channelId: string, key: string, direction: string): ChannelTicket | undefined
  /** Takes the WebSocket of a found end once upgraded (a second claim is closed there with 1008). */
  attach(ticket: ChannelTicket, ws: WebSocket, tcp: Duplex): void
}

const CHANNEL_PATH = '/ws/channels/'
const CHANNEL_NOT_FOUND = 'HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 17\r\n\r\nChannel not found'

export class Listener {
  readonly config: ListenerConfig
  private readonly server: Server
  private readonly wss: WebSocketServer
  private readonly log: Logger
  private readonly accept: AcceptTransport
  private readonly channels: ChannelEndpoint | undefined
  private readonly open = new Set<Transport>()

  constructor(config: ListenerConfig, log: Logger, accept: AcceptTransport, channels?: ChannelEndpoint) {
    this.config = config
    this.log = log
    this.accept = accept
    this.channels = channels
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
    // Channel sockets are not transports; every socket this server upgraded is among its clients.
    for (const ws of this.wss.clients) ws.terminate()
    await new Promise<void>((resolve) => this.wss.close(() => resolve()))
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      this.server.closeAllConnections()
    })
  }

  private onUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => {})
    const path = (request.url ?? '/').split('?', 1)[0]!
    if (path.startsWith(CHANNEL_PATH)) return this.onChannelUpgrade(request, socket, head, path.slice(CHANNEL_PATH.length))
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

  /** `/ws/channels/<channel_id>?key=…&dir=…` (§9): 404 unless the key opens that end. */
  private onChannelUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer, rawId: string): void {
    const ticket = this.channels === undefined ? undefined : this.findChannel(request.url!, rawId)
    if (ticket === undefined) {
      socket.end(CHANNEL_NOT_FOUND)
      return
    }
    const channels = this.channels!
    this.wss.handleUpgrade(request, socket, head, (ws) => channels.attach(ticket, ws, socket))
  }

  private findChannel(url: string, rawId: string): ChannelTicket | undefined {
    let channelId: string
    let query: URLSearchParams
    try {
      channelId = decodeURIComponent(rawId)
      query = new URL(url, 'http://upgrade.invalid').searchParams
    } catch {
      return undefined
    }
    const key = query.get('key')
    const direction = query.get('dir')
    if (channelId === '' || channelId.includes('/') || key === null || direction === null) return undefined
    return this.channels!.find(channelId, key, direction)
  }
}

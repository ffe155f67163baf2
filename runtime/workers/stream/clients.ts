/**
 * The client WebSocket of the stream worker (builtins.md §6.6): authentication before the
 * upgrade, join/leave of subscriptions, `sync` after a join, delivery of change events, keepalive,
 * and a bound on every client's unsent messages.
 *
 * Hostile input: client frames are capped at {@link MAX_CLIENT_FRAME_BYTES} (ws closes larger ones
 * with 1009), text frames must be valid UTF-8 (ws closes with 1007), undecodable or malformed
 * messages are logged (the first few per client) and ignored, and a client with more than
 * {@link MAX_PENDING_CLIENT_MESSAGES} messages waiting to be handled, or a join beyond
 * {@link MAX_SUBSCRIPTIONS_PER_CLIENT} open subscriptions, is closed with 1008.
 */
import { createServer, type IncomingMessage, type Server, type ServerOptions } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type RawData, type WebSocket } from 'ws'
import type { StreamAuthInput, StreamChangeEvent, StreamJoinLeaveEvent } from 'svc-protocol'
import { jsonParse } from 'svc-protocol/json'
import type { Logger } from '../../engine/types.ts'

/** Largest client frame accepted, bytes; client messages are small join/leave requests. */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024
/** Client messages waiting to be handled (joins wait for hooks) before the client is closed with 1008. */
export const MAX_PENDING_CLIENT_MESSAGES = 256
/** Open subscriptions per client; a join beyond it closes the client with 1008. */
export const MAX_SUBSCRIPTIONS_PER_CLIENT = 4096
/** Server pings every 30 s and closes a client silent for 60 s (§6.6). */
export const PING_INTERVAL_MS = 30_000
export const IDLE_TIMEOUT_MS = 60_000
/** Malformed messages logged per client; the rest are ignored silently. */
const LOGGED_BAD_FRAMES = 5

/** Close code for a client that fell behind (RFC 6455 §7.4.1 "Try Again Later"). */
export const CLOSE_TRY_AGAIN_LATER = 1013
const CLOSE_POLICY_VIOLATION = 1008

/** What the hub needs from the stream worker. */
export interface StreamClientHost {
  /** `auth_function` of the current settings, or null. */
  readonly authFunction: string | null
  /** Max unsent messages per client (`client_buffer_messages`). */
  readonly clientBufferMessages: number
  /** Calls the auth function; resolves with the connection context, rejects to refuse (401). */
  authenticate(input: StreamAuthInput): Promise<unknown>
  /** Runs the join hooks; false refuses the join (§6.5). */
  join(payload: StreamJoinLeaveEvent<unknown>): Promise<boolean>
  /** Runs the leave hooks; results ignored. */
  leave(payload: StreamJoinLeaveEvent<unknown>): void
  /** The `sync` data: the item (or null) when `id` is given, else the group's list (§6.6), read from `source`. */
  sync(streamName: string, groupId: string, id: string | null, source: object | null): Promise<unknown>
  /**
   * The event source (adapter) a new connection stays on until it closes (§6.1), or null; the host
   * hears when a connection takes and releases it.
   */
  attach(): object | null
  detach(source: object | null): void
}

interface Subscription {
  readonly client: Client
  readonly subscriptionId: string
  readonly streamName: string
  readonly groupId: string
  readonly id: string | null
  /** `{"subscriptionId":<id>,` — the start of every frame of this subscription. */
  readonly framePrefix: string
  /** Frames held back until `sync` has been sent; null once it has. */
  pending: string[] | null
}

interface Client {
  readonly socket: WebSocket
  readonly context: unknown
  /** The adapter this connection stays on (§6.1); its events only reach this connection. */
  readonly source: object | null
  readonly subscriptions: Map<string, Subscription>
  /** Messages handed to ws whose write has not completed. */
  unsent: number
  /** Client messages received and not yet handled. */
  waiting: number
  chain: Promise<void>
  lastSeen: number
  closed: boolean
  badFrames: number
}

/** The sent frame of an event: the event's JSON with `subscriptionId` first. */
function frameOf(prefix: string, eventJson: string): string {
  return prefix + eventJson.slice(1)
}

/**
 * Every client of the stream WebSocket, across listener rebinds, and the index of their
 * subscriptions by stream and group.
 *
 * @example
 * const hub = new StreamClients(host, log)
 * listening = new ListeningServer({ name: 'svc-stream', scheme: 'ws', createServer: (options) => hub.createServer(options), log })
 * hub.publish(event)
 */
export class StreamClients {
  private readonly host: StreamClientHost
  private readonly log: Logger
  private readonly wss: WebSocketServer
  private readonly clients = new Set<Client>()
  /** stream name → group id → subscriptions. */
  private readonly index = new Map<string, Map<string, Set<Subscription>>>()
  private readonly keepalive: NodeJS.Timeout
  private readonly idleTimeoutMs: number
  private stopped = false

  constructor(host: StreamClientHost, log: Logger, timing: { pingIntervalMs?: number; idleTimeoutMs?: number } = {}) {
    this.host = host
    this.log = log
    this.idleTimeoutMs = timing.idleTimeoutMs ?? IDLE_TIMEOUT_MS
    this.wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_FRAME_BYTES, clientTracking: false })
    this.keepalive = setInterval(() => this.ping(), timing.pingIntervalMs ?? PING_INTERVAL_MS)
    this.keepalive.unref()
  }

  /** Connected clients. */
  get size(): number {
    return this.clients.size
  }

  /**
   * A fresh HTTP server that upgrades every path (§6.6) and answers plain requests with 426;
   * `options` carry the listener's timeouts (an upgrade request is bound by them until it upgrades).
   */
  createServer(options: ServerOptions = {}): Server {
    const server = createServer(options, (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain', connection: 'close' }).end('this port serves WebSocket clients of svc-stream\n')
    })
    server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head))
    server.on('clientError', (_error, socket) => socket.destroy())
    return server
  }

  /**
   * Delivers a change event to every matching subscription (§6.6): those of its stream and group
   * without an id, and those whose id equals the event's. One JSON encoding per event. With a
   * `source`, only connections on that adapter receive it; without, every connection does (events
   * of custom streams).
   */
  publish(event: StreamChangeEvent<unknown>, source?: object): void {
    const subscriptions = this.index.get(event.streamName)?.get(event.groupId)
    if (!subscriptions || subscriptions.size === 0) return
    const json = JSON.stringify(event)
    const id = event.id ?? null
    for (const subscription of subscriptions) {
      if (subscription.id !== null && subscription.id !== id) continue
      if (source !== undefined && subscription.client.source !== source) continue
      const frame = frameOf(subscription.framePrefix, json)
      if (!subscription.pending) this.send(subscription.client, frame)
      else if (subscription.pending.length < this.host.clientBufferMessages) subscription.pending.push(frame)
      // Held frames count against the same bound as unsent ones.
      else this.close(subscription.client, CLOSE_TRY_AGAIN_LATER, `more than ${this.host.clientBufferMessages} messages waiting for sync (client_buffer_messages); reconnect`)
    }
  }

  /** Closes every client (1001) and stops the keepalive. Leave hooks still run. */
  stop(): void {
    this.stopped = true
    clearInterval(this.keepalive)
    for (const client of [...this.clients]) {
      client.socket.close(1001, 'svc-stream is stopping')
      client.socket.terminate()
    }
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy())
    if (this.stopped) return void socket.destroy()
    let context: unknown = undefined
    if (this.host.authFunction !== null) {
      try {
        context = await this.host.authenticate(authInput(req))
      } catch (error) {
        this.log.info('svc-stream refused a client: auth failed', { addr: addressOf(req), message: String((error as Error)?.message ?? error) })
        if (!socket.destroyed) socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
        return
      }
    }
    if (socket.destroyed || this.stopped) return void socket.destroy()
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, context))
  }

  private accept(socket: WebSocket, context: unknown): void {
    const client: Client = {
      socket,
      context,
      source: this.host.attach(),
      subscriptions: new Map(),
      unsent: 0,
      waiting: 0,
      chain: Promise.resolve(),
      lastSeen: Date.now(),
      closed: false,
      badFrames: 0,
    }
    this.clients.add(client)
    const seen = () => {
      client.lastSeen = Date.now()
    }
    socket.on('pong', seen)
    socket.on('ping', seen)
    socket.on('message', (data, isBinary) => {
      seen()
      this.receive(client, data, isBinary)
    })
    socket.on('error', (error) => this.log.debug('svc-stream client socket error', { message: error.message }))
    socket.on('close', () => this.closed(client))
  }

  private receive(client: Client, data: RawData, isBinary: boolean): void {
    if (client.closed) return
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
    if (bytes.length === 0) return
    let message: unknown
    try {
      // Binary frames are decoded leniently (invalid sequences become U+FFFD); ws checked text frames.
      message = jsonParse(bytes.toString('utf8'))
    } catch {
      return this.badFrame(client, isBinary ? 'binary frame is not JSON' : 'text frame is not JSON')
    }
    const request = parseClientMessage(message)
    if (typeof request === 'string') return this.badFrame(client, request)
    if (client.waiting >= MAX_PENDING_CLIENT_MESSAGES) {
      this.close(client, CLOSE_POLICY_VIOLATION, `more than ${MAX_PENDING_CLIENT_MESSAGES} messages waiting`)
      return
    }
    client.waiting++
    client.chain = client.chain.then(async () => {
      try {
        if (request.type === 'join') await this.join(client, request)
        else this.leave(client, request.subscriptionId)
      } catch (error) {
        this.log.error('svc-stream: handling a client message failed', { message: String((error as Error)?.message ?? error) })
      } finally {
        client.waiting--
      }
    })
  }

  private badFrame(client: Client, reason: string): void {
    if (++client.badFrames <= LOGGED_BAD_FRAMES) this.log.warn(`svc-stream ignored a client message: ${reason}`)
  }

  private async join(client: Client, request: JoinRequest): Promise<void> {
    if (client.closed) return
    this.leave(client, request.subscriptionId)
    if (client.subscriptions.size >= MAX_SUBSCRIPTIONS_PER_CLIENT) {
      this.close(client, CLOSE_POLICY_VIOLATION, `more than ${MAX_SUBSCRIPTIONS_PER_CLIENT} subscriptions`)
      return
    }
    const payload: StreamJoinLeaveEvent<unknown> = {
      subscription_id: request.subscriptionId,
      stream_name: request.streamName,
      group_id: request.groupId,
      id: request.id,
      context: client.context ?? null,
    }
    const allowed = await this.host.join(payload)
    if (client.closed) return
    const framePrefix = `{"subscriptionId":${JSON.stringify(request.subscriptionId)},`
    const base = { type: 'stream', timestamp: 0, streamName: request.streamName, groupId: request.groupId, id: request.id }
    if (!allowed) {
      this.send(client, frameOf(framePrefix, JSON.stringify({ ...base, timestamp: Date.now(), event: { type: 'unauthorized' } })))
      return
    }
    const subscription: Subscription = { client, framePrefix, pending: [], ...request }
    client.subscriptions.set(request.subscriptionId, subscription)
    this.indexOf(request.streamName, request.groupId, true)!.add(subscription)
    let data: unknown = null
    try {
      data = (await this.host.sync(request.streamName, request.groupId, request.id, client.source)) ?? null
    } catch (error) {
      this.log.error('svc-stream: reading the sync data failed', { stream_name: request.streamName, group_id: request.groupId, message: String((error as Error)?.message ?? error) })
    }
    const pending = subscription.pending ?? []
    subscription.pending = null
    if (client.closed || client.subscriptions.get(request.subscriptionId) !== subscription) return
    this.send(client, frameOf(framePrefix, JSON.stringify({ ...base, timestamp: Date.now(), event: { type: 'sync', data } })))
    for (const frame of pending) this.send(client, frame)
  }

  /** Ends a subscription (if open) and runs the leave hooks. */
  private leave(client: Client, subscriptionId: string): void {
    const subscription = client.subscriptions.get(subscriptionId)
    if (!subscription) return
    client.subscriptions.delete(subscriptionId)
    this.unindex(subscription)
    this.host.leave(leavePayload(subscription))
  }

  private closed(client: Client): void {
    if (this.clients.delete(client)) this.host.detach(client.source)
    client.closed = true
    for (const subscription of client.subscriptions.values()) {
      this.unindex(subscription)
      this.host.leave(leavePayload(subscription))
    }
    client.subscriptions.clear()
  }

  /**
   * Hands a frame to ws unless the client already has `client_buffer_messages` unsent; then the
   * client is closed with 1013 and nothing more is queued for it.
   */
  private send(client: Client, frame: string): void {
    if (client.closed) return
    if (client.unsent >= this.host.clientBufferMessages) {
      this.close(client, CLOSE_TRY_AGAIN_LATER, `more than ${this.host.clientBufferMessages} unsent messages (client_buffer_messages); reconnect`)
      return
    }
    client.unsent++
    client.socket.send(frame, () => {
      client.unsent--
    })
  }

  /** Stops all delivery to a client and starts the close handshake (ws destroys the socket after 30 s without an answer). */
  private close(client: Client, code: number, reason: string): void {
    if (client.closed) return
    this.log.warn(`svc-stream closed a client (${code}): ${reason}`)
    this.closed(client)
    client.socket.close(code, reason)
  }

  private ping(): void {
    const now = Date.now()
    for (const client of this.clients) {
      if (now - client.lastSeen > this.idleTimeoutMs) {
        this.closed(client)
        client.socket.terminate()
      } else if (!client.closed) {
        client.socket.ping()
      }
    }
  }

  private indexOf(stream: string, group: string, create: boolean): Set<Subscription> | undefined {
    let groups = this.index.get(stream)
    if (!groups) {
      if (!create) return undefined
      this.index.set(stream, (groups = new Map()))
    }
    let set = groups.get(group)
    if (!set && create) groups.set(group, (set = new Set()))
    return set
  }

  private unindex(subscription: Subscription): void {
    const groups = this.index.get(subscription.streamName)
    const set = groups?.get(subscription.groupId)
    if (!set) return
    set.delete(subscription)
    if (set.size === 0) {
      groups!.delete(subscription.groupId)
      if (groups!.size === 0) this.index.delete(subscription.streamName)
    }
  }
}

function leavePayload(subscription: Subscription): StreamJoinLeaveEvent<unknown> {
  return {
    subscription_id: subscription.subscriptionId,
    stream_name: subscription.streamName,
    group_id: subscription.groupId,
    id: subscription.id,
    context: subscription.client.context ?? null,
  }
}

interface JoinRequest {
  type: 'join'
  subscriptionId: string
  streamName: string
  groupId: string
  id: string | null
}

interface LeaveRequest {
  type: 'leave'
  subscriptionId: string
}

function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed()
}

/** A join or leave request, or the reason the message is malformed. */
export function parseClientMessage(message: unknown): JoinRequest | LeaveRequest | string {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return 'message must be an object'
  const { type, data } = message as Record<string, unknown>
  if (type !== 'join' && type !== 'leave') return 'type must be "join" or "leave"'
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return 'data must be an object'
  const fields = data as Record<string, unknown>
  const subscriptionId = fields.subscriptionId
  if (typeof subscriptionId !== 'string' || subscriptionId === '') return 'data.subscriptionId must be a non-empty string'
  if (type === 'leave') return { type, subscriptionId }
  const { streamName, groupId, id } = fields
  if (typeof streamName !== 'string' || streamName === '') return 'data.streamName must be a non-empty string'
  if (typeof groupId !== 'string' || groupId === '') return 'data.groupId must be a non-empty string'
  if (id !== undefined && id !== null && (typeof id !== 'string' || id === '')) return 'data.id must be a non-empty string'
  return {
    type,
    subscriptionId,
    streamName: wellFormed(streamName),
    groupId: wellFormed(groupId),
    id: typeof id === 'string' ? wellFormed(id) : null,
  }
}

function addressOf(req: IncomingMessage): string {
  const { remoteAddress, remotePort } = req.socket
  return remoteAddress === undefined ? '' : `${remoteAddress.includes(':') ? `[${remoteAddress}]` : remoteAddress}:${remotePort ?? 0}`
}

/** The auth function's input (§6.6): query values always arrays. */
export function authInput(req: IncomingMessage): StreamAuthInput {
  const url = new URL(req.url ?? '/', 'http://localhost')
  const query_params: Record<string, string[]> = {}
  for (const [key, value] of url.searchParams) (query_params[key] ??= []).push(value)
  return { addr: addressOf(req), headers: { ...req.headers }, path: url.pathname, query_params }
}

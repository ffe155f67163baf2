/**
 * The client WebSocket of the stream worker (builtins.md §6.6): authentication before the
 * upgrade, join/leave of subscriptions, `sync` after a join, delivery of change events, keepalive,
 * and a bound on what every client has unsent, in messages and in bytes.
 *
 * Slow clients (§6.1): frames go to ws while its buffer (`bufferedAmount`) is below
 * {@link SOCKET_HIGH_WATER_BYTES}; beyond that they wait in the client's own queue, which drains as
 * ws's writes complete. A client whose unsent frames (ws's buffer, its queue and the frames held
 * until a `sync` is sent) exceed `client_buffer_messages` messages or `client_buffer_bytes` bytes
 * gets a 1013 close frame, and everything the hub held for it is released at once: its queue,
 * held frames, subscriptions (leave hooks run), their entries in the group index and its adapter
 * hold. Frames of a subscription that ended (left, or replaced by a join with the same
 * `subscriptionId`) leave the queue too, so a client re-joining a group it does not read holds one
 * queued `sync` at most.
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
import { Fifo } from '../shared/fifo.ts'
import type { MetricSeries } from '../../adapters/observability/records.ts'

/** Largest client frame accepted, bytes; client messages are small join/leave requests. */
export const MAX_CLIENT_FRAME_BYTES = 64 * 1024
/** Client messages waiting to be handled (joins wait for hooks) before the client is closed with 1008. */
export const MAX_PENDING_CLIENT_MESSAGES = 256
/** Open subscriptions per client; a join beyond it closes the client with 1008. */
export const MAX_SUBSCRIPTIONS_PER_CLIENT = 4096
/**
 * Bytes ws may hold for a client before further frames wait in the client's own queue: enough to
 * keep a reading client's socket busy, small enough that a closed slow client leaves little in ws
 * (whose close handshake may take 30 s).
 */
export const SOCKET_HIGH_WATER_BYTES = 256 * 1024
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
  /** Max unsent bytes per client (`client_buffer_bytes`): UTF-8 bytes of frames not yet taken by the socket. */
  readonly clientBufferBytes: number
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
  /** UTF-8 bytes of {@link framePrefix} less one (the `{` it replaces in the event's JSON). */
  readonly prefixBytes: number
  /** Frames held back until `sync` has been sent; null once it has (or the subscription ended). */
  pending: Outgoing[] | null
  /** Frames of this subscription in the client's queue. */
  queued: number
}

/** A frame not yet handed to ws, with its UTF-8 size. */
interface Outgoing {
  readonly frame: string
  readonly bytes: number
  /** The subscription it belongs to (null: the `unauthorized` answer of a refused join). */
  readonly subscription: Subscription | null
}

interface Client {
  readonly socket: WebSocket
  readonly context: unknown
  /** The adapter this connection stays on (§6.1); its events only reach this connection. */
  readonly source: object | null
  readonly subscriptions: Map<string, Subscription>
  /** Messages handed to ws whose write has not completed. */
  inFlight: number
  /** Frames waiting for ws's buffer to drain below {@link SOCKET_HIGH_WATER_BYTES}, oldest first. */
  queue: Fifo<Outgoing>
  queuedBytes: number
  /** Frames held in subscriptions' `pending` (all subscriptions) and their bytes. */
  held: number
  heldBytes: number
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

/** What the hub holds now (builtins.md §6.6; `svc.stream.*` metrics, tests). */
export interface StreamClientStats {
  /** Connected clients (a client closed for being slow no longer counts). */
  clients: number
  /** Open subscriptions of all clients. */
  subscriptions: number
  /** Stream groups with at least one subscription in the delivery index. */
  groups: number
  /** Frames not yet taken by the clients' sockets (in ws, queued, held until sync). */
  unsent_messages: number
  /** Their UTF-8 bytes. */
  unsent_bytes: number
  /** Clients closed with 1013 since the hub started. */
  slow_clients_closed: number
}

/**
 * `engine::metrics::list` series of the client listener: `svc.stream.clients`,
 * `svc.stream.subscriptions` (gauges), `svc.stream.unsent_bytes` (gauge, bytes not yet taken by
 * the clients' sockets) and `svc.stream.slow_clients_closed` (sum since start: clients closed
 * with 1013 for exceeding `client_buffer_messages` or `client_buffer_bytes`). `now`: ns since the epoch.
 */
export function clientMetricSeries(stats: StreamClientStats, now: number): MetricSeries[] {
  const point = (value: number) => [{ time_unix_nano: now, value, attributes: {} }]
  return [
    { name: 'svc.stream.clients', type: 'gauge', unit: '{client}', description: 'connected stream WebSocket clients', points: point(stats.clients) },
    { name: 'svc.stream.subscriptions', type: 'gauge', unit: '{subscription}', description: 'open subscriptions of stream clients', points: point(stats.subscriptions) },
    { name: 'svc.stream.unsent_bytes', type: 'gauge', unit: 'By', description: 'bytes of frames not yet taken by the clients\' sockets', points: point(stats.unsent_bytes) },
    { name: 'svc.stream.slow_clients_closed', type: 'sum', unit: '{client}', description: 'clients closed with 1013 (client_buffer_messages, client_buffer_bytes)', points: point(stats.slow_clients_closed) },
  ]
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
  private slowClosed = 0

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

  /** What the hub holds for its clients now. O(clients). */
  stats(): StreamClientStats {
    let subscriptions = 0
    let messages = 0
    let bytes = 0
    for (const client of this.clients) {
      subscriptions += client.subscriptions.size
      messages += client.inFlight + client.queue.length + client.held
      bytes += client.socket.bufferedAmount + client.queuedBytes + client.heldBytes
    }
    let groups = 0
    for (const byGroup of this.index.values()) groups += byGroup.size
    return { clients: this.clients.size, subscriptions, groups, unsent_messages: messages, unsent_bytes: bytes, slow_clients_closed: this.slowClosed }
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
    let jsonBytes = -1
    const id = event.id ?? null
    for (const subscription of subscriptions) {
      if (subscription.id !== null && subscription.id !== id) continue
      if (source !== undefined && subscription.client.source !== source) continue
      if (jsonBytes < 0) jsonBytes = Buffer.byteLength(json)
      const out: Outgoing = { frame: frameOf(subscription.framePrefix, json), bytes: subscription.prefixBytes + jsonBytes, subscription }
      if (!subscription.pending) this.send(subscription.client, out)
      else if (this.admit(subscription.client, out.bytes)) {
        // Held frames count against the same bounds as unsent ones.
        subscription.pending.push(out)
        subscription.client.held++
        subscription.client.heldBytes += out.bytes
      }
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
      inFlight: 0,
      queue: new Fifo(),
      queuedBytes: 0,
      held: 0,
      heldBytes: 0,
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
    const prefixBytes = Buffer.byteLength(framePrefix) - 1
    const base = { type: 'stream', timestamp: 0, streamName: request.streamName, groupId: request.groupId, id: request.id }
    const outgoing = (event: unknown, subscription: Subscription | null): Outgoing => {
      const json = JSON.stringify({ ...base, timestamp: Date.now(), event })
      return { frame: frameOf(framePrefix, json), bytes: prefixBytes + Buffer.byteLength(json), subscription }
    }
    if (!allowed) {
      this.send(client, outgoing({ type: 'unauthorized' }, null))
      return
    }
    const subscription: Subscription = { client, framePrefix, prefixBytes, pending: [], queued: 0, ...request }
    client.subscriptions.set(request.subscriptionId, subscription)
    this.indexOf(request.streamName, request.groupId, true)!.add(subscription)
    let data: unknown = null
    try {
      data = (await this.host.sync(request.streamName, request.groupId, request.id, client.source)) ?? null
    } catch (error) {
      this.log.error('svc-stream: reading the sync data failed', { stream_name: request.streamName, group_id: request.groupId, message: String((error as Error)?.message ?? error) })
    }
    if (client.closed || client.subscriptions.get(request.subscriptionId) !== subscription) return
    const pending = this.unhold(subscription)
    this.send(client, outgoing({ type: 'sync', data }, subscription))
    for (const out of pending) this.send(client, out)
  }

  /** Takes a subscription's held frames out of the client's count (the subscription sends or drops them). */
  private unhold(subscription: Subscription): Outgoing[] {
    const pending = subscription.pending
    subscription.pending = null
    if (pending === null) return []
    const client = subscription.client
    client.held -= pending.length
    for (const out of pending) client.heldBytes -= out.bytes
    return pending
  }

  /** Drops the frames of an ended subscription that the client has not been sent yet. */
  private release(subscription: Subscription): void {
    this.unhold(subscription)
    if (subscription.queued === 0) return
    const client = subscription.client
    const kept = new Fifo<Outgoing>()
    for (let out = client.queue.shift(); out !== undefined; out = client.queue.shift()) {
      if (out.subscription === subscription) client.queuedBytes -= out.bytes
      else kept.push(out)
    }
    client.queue = kept
    subscription.queued = 0
  }

  /** Ends a subscription (if open) and runs the leave hooks. */
  private leave(client: Client, subscriptionId: string): void {
    const subscription = client.subscriptions.get(subscriptionId)
    if (!subscription) return
    client.subscriptions.delete(subscriptionId)
    this.unindex(subscription)
    this.release(subscription)
    this.host.leave(leavePayload(subscription))
  }

  /** Forgets a client: its subscriptions (leave hooks run), what it had unsent on this side, its adapter hold. */
  private closed(client: Client): void {
    if (this.clients.delete(client)) this.host.detach(client.source)
    client.closed = true
    for (const subscription of client.subscriptions.values()) {
      this.unindex(subscription)
      subscription.pending = null
      this.host.leave(leavePayload(subscription))
    }
    client.subscriptions.clear()
    client.queue = new Fifo()
    client.queuedBytes = 0
    client.held = 0
    client.heldBytes = 0
  }

  /**
   * Whether `bytes` more may wait for the client: its unsent messages stay below
   * `client_buffer_messages` and its unsent bytes within `client_buffer_bytes` (a single frame
   * larger than that is let through when nothing else is unsent, so that any group can be joined).
   * Otherwise the client is closed with 1013 and false returned.
   */
  private admit(client: Client, bytes: number): boolean {
    if (client.closed) return false
    const limit = this.host.clientBufferMessages
    if (client.inFlight + client.queue.length + client.held >= limit) {
      this.close(client, CLOSE_TRY_AGAIN_LATER, `more than ${limit} unsent messages (client_buffer_messages); reconnect`)
      return false
    }
    const unsent = client.socket.bufferedAmount + client.queuedBytes + client.heldBytes
    const maxBytes = this.host.clientBufferBytes
    if (unsent > 0 && unsent + bytes > maxBytes) {
      this.close(client, CLOSE_TRY_AGAIN_LATER, `more than ${maxBytes} unsent bytes (client_buffer_bytes); reconnect`)
      return false
    }
    return true
  }

  /**
   * Sends a frame, or queues it while ws holds {@link SOCKET_HIGH_WATER_BYTES} or more for the
   * client; a client over its bounds is closed instead ({@link admit}).
   */
  private send(client: Client, out: Outgoing): void {
    if (!this.admit(client, out.bytes)) return
    if (client.queue.length === 0 && (client.inFlight === 0 || client.socket.bufferedAmount < SOCKET_HIGH_WATER_BYTES)) {
      this.write(client, out.frame)
      return
    }
    client.queue.push(out)
    client.queuedBytes += out.bytes
    if (out.subscription !== null) out.subscription.queued++
  }

  private write(client: Client, frame: string): void {
    client.inFlight++
    // Called once the socket took the frame, or with an error when it closed.
    client.socket.send(frame, () => {
      client.inFlight--
      if (client.queue.length > 0) this.pump(client)
    })
  }

  /** Hands queued frames to ws while its buffer is below the high-water mark. */
  private pump(client: Client): void {
    while (!client.closed && (client.inFlight === 0 || client.socket.bufferedAmount < SOCKET_HIGH_WATER_BYTES)) {
      const out = client.queue.shift()
      if (out === undefined) return
      client.queuedBytes -= out.bytes
      if (out.subscription !== null) out.subscription.queued--
      this.write(client, out.frame)
    }
  }

  /**
   * Stops all delivery to a client, releases what the hub held for it and starts the close
   * handshake (ws destroys the socket after 30 s without an answer; it holds at most about
   * {@link SOCKET_HIGH_WATER_BYTES} plus one frame for it meanwhile).
   */
  private close(client: Client, code: number, reason: string): void {
    if (client.closed) return
    if (code === CLOSE_TRY_AGAIN_LATER) this.slowClosed++
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
  // Keys come from the client: a Map, then fromEntries (own properties, `__proto__` included).
  const params = new Map<string, string[]>()
  for (const [key, value] of url.searchParams) {
    const values = params.get(key)
    if (values) values.push(value)
    else params.set(key, [value])
  }
  return { addr: addressOf(req), headers: { ...req.headers }, path: url.pathname, query_params: Object.fromEntries(params) }
}

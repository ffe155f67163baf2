/**
 * One worker session on `/` (protocol.md §3): the socket, its identity, its namespace and the
 * registration buffer that holds frames until the namespace is resolved (§3.4).
 */
import { randomUUID } from 'node:crypto'
import type { WebSocket } from 'ws'
import type { Message, WorkerAnnounce } from 'svc-protocol'
import type { Peer } from './peer.ts'
import type { ListenerConfig } from './types.ts'

/** Frames held by the registration buffer (§3.4). Other frames are processed at once. */
const BUFFERED_TYPES = new Set([
  'registerfunction',
  'unregisterfunction',
  'registertriggertype',
  'unregistertriggertype',
  'registertrigger',
  'unregistertrigger',
  'registerservice',
  'invokefunction',
])

export const MAX_BUFFERED_FRAMES = 10000
/** Frames coalesced into one TCP write at most (see `send`). */
const MAX_WRITE_BATCH = 16

export class Connection implements Peer {
  readonly kind = 'connection' as const
  readonly workerId = randomUUID()
  readonly reattachToken = randomUUID()
  readonly connectedAtMs = Date.now()
  readonly socket: WebSocket
  readonly listener: ListenerConfig
  readonly ipAddress: string | null
  alive = true
  namespace = 'default'
  /** False until the first successful announce, the grace period, or a full buffer (§3.4). */
  namespaceResolved = false
  announce: WorkerAnnounce = {}
  activeInvocations = 0
  private held: Message[] = []
  graceTimer: NodeJS.Timeout | undefined
  /** The TCP socket under the WebSocket, for write coalescing; undefined if `ws` changes shape. */
  private readonly tcp: { cork(): void; uncork(): void } | undefined
  private corked = false
  private batched = 0
  private readonly uncork = () => {
    this.corked = false
    this.tcp!.uncork()
  }

  constructor(socket: WebSocket, listener: ListenerConfig, ipAddress: string | null) {
    this.socket = socket
    this.listener = listener
    this.ipAddress = ipAddress
    const tcp = (socket as unknown as { _socket?: { cork?: unknown; uncork?: unknown } })._socket
    this.tcp = tcp && typeof tcp.cork === 'function' && typeof tcp.uncork === 'function' ? (tcp as { cork(): void; uncork(): void }) : undefined
  }

  get name(): string | null {
    return this.announce.name ?? null
  }

  /** Bytes queued on the socket and not yet sent (for backpressure, §3.5). */
  get pendingBytes(): number {
    return this.socket.bufferedAmount
  }

  /** Whether `message` must wait in the registration buffer. */
  shouldHold(message: Message): boolean {
    if (this.namespaceResolved || !BUFFERED_TYPES.has(message.type)) return false
    return !(message.type === 'invokefunction' && message.function_id === 'engine::workers::register')
  }

  /** Holds a frame; returns true when the buffer is now full. */
  hold(message: Message): boolean {
    this.held.push(message)
    return this.held.length >= MAX_BUFFERED_FRAMES
  }

  /** Marks the namespace resolved and returns the held frames, in arrival order. */
  resolveNamespace(namespace: string): Message[] {
    this.namespace = namespace
    this.namespaceResolved = true
    if (this.graceTimer) clearTimeout(this.graceTimer)
    this.graceTimer = undefined
    const held = this.held
    this.held = []
    return held
  }

  /** Sends one text frame. A peer whose unsent data exceeds `max_outbound_bytes` is terminated. */
  send(text: string): void {
    if (!this.alive) return
    // Frames sent in one turn of the event loop leave in one write: without this every frame is
    // its own writev syscall, which the profile showed as the engine's largest cost under load.
    // Batches are capped so the peer can start on the first frames while later ones are built,
    // which keeps every process of a caller → engine → callee pipeline busy.
    if (this.tcp) {
      if (!this.corked) {
        this.corked = true
        this.batched = 0
        this.tcp.cork()
        process.nextTick(this.uncork)
      } else if (++this.batched >= MAX_WRITE_BATCH) {
        this.batched = 0
        this.socket.send(text)
        this.tcp.uncork()
        this.tcp.cork()
        return
      }
    }
    this.socket.send(text)
    if (this.socket.bufferedAmount > this.listener.max_outbound_bytes) this.socket.terminate()
  }

  /** Stops the connection from being picked or read (§3.6 step 1). */
  retire(): void {
    this.alive = false
    this.held = []
    if (this.graceTimer) clearTimeout(this.graceTimer)
    this.graceTimer = undefined
  }
}

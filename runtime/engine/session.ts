/**
 * One worker session (protocol.md §3) over any {@link Transport}: its identity, namespace, access
 * rules, the registration buffer (§3.4), the inbound queue that keeps frames in arrival order while
 * an asynchronous step runs (authentication, a registration hook, §3.5 "Order"), and the legs it
 * executes and awaits (§6.2), indexed per session so disconnect cleanup never scans other calls.
 */
import { randomUUID } from 'node:crypto'
import type { InboundMessage, PeerInfo, Transport, WorkerAnnounce } from 'svc-protocol'
import type { DeadlineSlot } from 'svc-protocol/deadlines'
import { PERMISSIVE, type AccessPolicy } from './access/policy.ts'
import type { Peer } from './peer.ts'
import { FrameTooLarge, type Callee, type FrameSink, type Reply } from './pipeline.ts'
import type { ListenerConfig } from './config.ts'
import type { Flight } from './flights.ts'
import type { HandlerSpanSource } from './handler-spans.ts'
import { CallIndex } from './call-index.ts'

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

/** The registration buffer's capacity (§3.4 rule 3), and the cap of the inbound queue. */
export const MAX_BUFFERED_FRAMES = 10000

/** A frame waiting in the inbound queue: as received, or decoded (held frames moved there). */
export type QueuedFrame =
  | { readonly data: string | Uint8Array; readonly isBinary: boolean; readonly bytes: number }
  | { readonly message: InboundMessage; readonly bytes: number }

/** The size of an inbound frame as it came over the wire, bytes (text frames are UTF-8). */
export function frameBytes(data: string | Uint8Array): number {
  return typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength
}

/**
 * The UTF-8 size of `text` when it is over `limit`, else undefined. UTF-8 takes 1 to 3 bytes per
 * UTF-16 unit (a lone surrogate leaves as the 3 bytes of U+FFFD), so only text longer than a
 * third of the limit is measured.
 */
export function bytesOver(text: string, limit: number): number | undefined {
  if (text.length * 3 <= limit) return undefined
  const bytes = Buffer.byteLength(text)
  return bytes > limit ? bytes : undefined
}

/** One call sent to a remote session and awaiting its answer. */
export interface Leg {
  /** The engine-assigned invocation id of this leg (§5.8). */
  readonly id: string
  readonly callee: Session
  /** The remote caller, counted against its limit; undefined for engine-originated calls. */
  readonly caller: Session | undefined
  readonly reply: Reply
  /** Its place in the engine's deadlines while its timeout is pending (an engine-originated call, §6.5). */
  deadline: DeadlineSlot<Leg> | undefined
}

/** Session life: authenticating (frames queue), open, closed. */
export type SessionState = 'authenticating' | 'open' | 'closed'

export class Session implements Peer, FrameSink {
  readonly kind = 'connection' as const
  readonly workerId = randomUUID()
  readonly reattachToken = randomUUID()
  readonly connectedAtMs = Date.now()
  readonly transport: Transport
  readonly listener: ListenerConfig
  readonly info: PeerInfo
  state: SessionState = 'authenticating'
  /** The session's access rules (§13); set from the auth result before any frame is handled. */
  access: AccessPolicy = PERMISSIVE
  namespace = 'default'
  /** False until the first successful announce, the grace period, or a full buffer (§3.4). */
  namespaceResolved = false
  /**
   * Set by whoever supervises the worker once a new process of it has registered (`svc`'s reload
   * in-process, the compose daemon's over `engine::workers::drain`): new calls go to the other
   * replicas; calls already here finish (§6.1 picks). Never cleared: the connection is closing.
   */
  draining = false
  announce: WorkerAnnounce = {}
  /** What the latest announce said of the handler spans this worker leaves to the engine (`handler-spans.ts`). */
  handlerSpans: HandlerSpanSource | undefined = undefined
  /** Set by the engine when the session opens: executes calls routed to this session's replicas. */
  callee!: Callee
  /** Legs this session executes, by leg id: results are accepted only from here (§5.9). */
  readonly executing = new CallIndex<Leg>()
  /** Legs this session made and still awaits, by leg id (dropped when it disconnects, §3.6 step 3). */
  readonly calling = new CallIndex<Leg>()
  /**
   * The synchronous calls this session made that are in flight, by the `invocation_id` it sent:
   * what its `cancelinvocation` names. Cancelled when it disconnects.
   */
  readonly requested = new CallIndex<Flight>()
  graceTimer: NodeJS.Timeout | undefined
  /** Frames waiting for the namespace (the registration buffer). */
  private held: Array<{ message: InboundMessage; bytes: number }> = []
  /** Frames waiting while an asynchronous step runs; taken in order once it ends. */
  private backlog: QueuedFrame[] = []
  /**
   * Bytes of the frames in the registration buffer and the inbound queue together, bounded by
   * the listener's `max_inbound_bytes`.
   */
  inboundBytes = 0
  /** True while an asynchronous step (auth, a hook, a reattach) holds the inbound queue. */
  blocked = true
  /** False once the session refused to queue more (the connection is closing): later frames are dropped. */
  reading = true
  /** JSON of the function ids this session calls, so relayed results need no encoding per call. */
  private readonly idJsonCache = new Map<string, string>()

  constructor(transport: Transport, listener: ListenerConfig, info: PeerInfo) {
    this.transport = transport
    this.listener = listener
    this.info = info
  }

  get alive(): boolean {
    return this.state === 'open'
  }

  get maxMessageBytes(): number {
    return this.listener.max_message_bytes
  }

  get name(): string | null {
    return this.announce.name ?? null
  }

  get ipAddress(): string | null {
    return this.info.ip
  }

  get activeInvocations(): number {
    return this.executing.size
  }

  /** Bytes queued on the transport and not yet sent (backpressure, §3.5). */
  get pendingBytes(): number {
    return this.transport.bufferedAmount
  }

  /** The JSON encoding of `id` (cached for the few ids a worker calls; bounded). */
  idJson(id: string): string {
    let json = this.idJsonCache.get(id)
    if (json === undefined) {
      json = JSON.stringify(id)
      if (this.idJsonCache.size >= 1024) this.idJsonCache.clear()
      this.idJsonCache.set(id, json)
    }
    return json
  }

  /** Whether `message` must wait in the registration buffer. */
  shouldHold(message: InboundMessage): boolean {
    if (this.namespaceResolved || !BUFFERED_TYPES.has(message.type)) return false
    return !(message.type === 'invokefunction' && message.function_id === 'engine::workers::register')
  }

  /**
   * Holds a frame of `bytes` bytes in the registration buffer; returns true when the buffer is
   * now full: {@link MAX_BUFFERED_FRAMES} frames (§3.4 rule 3), or the frames held and queued
   * together over the listener's `max_inbound_bytes` (the same rule in bytes, an svc addition).
   */
  hold(message: InboundMessage, bytes: number): boolean {
    this.held.push({ message, bytes })
    this.inboundBytes += bytes
    return this.held.length >= MAX_BUFFERED_FRAMES || this.inboundBytes > this.listener.max_inbound_bytes
  }

  /**
   * Marks the namespace resolved and puts the held frames at the front of the inbound queue, in
   * arrival order (§3.4: before any frame that arrived later). Returns whether there were any.
   */
  resolveNamespace(namespace: string): boolean {
    this.namespace = namespace
    this.namespaceResolved = true
    if (this.graceTimer) clearTimeout(this.graceTimer)
    this.graceTimer = undefined
    const held = this.held
    if (held.length === 0) return false
    this.held = []
    this.backlog = this.backlog.length === 0 ? held : [...held, ...this.backlog]
    return true
  }

  /**
   * Drops the held `invokefunction` whose `invocation_id` is `invocationId` (a call cancelled
   * while it waited in the registration buffer, §3.4). Returns its function id, else undefined.
   */
  dropHeld(invocationId: string): string | undefined {
    const index = this.held.findIndex(({ message }) => message.type === 'invokefunction' && message.invocation_id === invocationId && message.action?.type !== 'void')
    if (index < 0) return undefined
    const [dropped] = this.held.splice(index, 1)
    this.inboundBytes -= dropped!.bytes
    return (dropped!.message as { function_id: string }).function_id
  }

  /** True when frames wait in the inbound queue (later frames must queue behind them). */
  get queued(): boolean {
    return this.backlog.length > 0
  }

  /**
   * Queues a frame behind the asynchronous step that holds the session. Returns why it cannot,
   * as the close reason (1008), when the queue already holds {@link MAX_BUFFERED_FRAMES} frames
   * or the frame would take the bytes held and queued over `max_inbound_bytes`; a frame always
   * fits when nothing else waits, so the bound is never below one frame of `max_message_bytes`.
   */
  queue(data: string | Uint8Array, isBinary: boolean): string | undefined {
    if (this.backlog.length >= MAX_BUFFERED_FRAMES) return `more than ${MAX_BUFFERED_FRAMES} frames queued`
    const bytes = frameBytes(data)
    const limit = this.listener.max_inbound_bytes
    if (this.inboundBytes > 0 && this.inboundBytes + bytes > limit) return `more than ${limit} bytes of frames queued (max_inbound_bytes)`
    this.backlog.push({ data, isBinary, bytes })
    this.inboundBytes += bytes
    return undefined
  }

  /** Takes the oldest queued frame. */
  nextQueued(): QueuedFrame | undefined {
    const frame = this.backlog.shift()
    if (frame !== undefined) this.inboundBytes -= frame.bytes
    return frame
  }

  /** Drops every frame held or queued and every later one: the connection is being closed. */
  stopReading(): void {
    this.reading = false
    this.held = []
    this.backlog = []
    this.inboundBytes = 0
  }

  /**
   * Sends one text frame. A session whose unsent data exceeds `max_outbound_bytes` is terminated
   * (§3.5; the slow-consumer rule's other half is in `keepalive.ts`). Frames to a closed session
   * are dropped.
   * @throws FrameTooLarge when the frame is over the connection's `max_message_bytes` (§2); it is
   *   not sent, and the session stays open.
   */
  send(text: string): void {
    if (this.state === 'closed') return
    const over = bytesOver(text, this.listener.max_message_bytes)
    if (over !== undefined) throw new FrameTooLarge(over, this.listener.max_message_bytes)
    const transport = this.transport
    transport.send(text)
    if (transport.bufferedAmount > this.listener.max_outbound_bytes) transport.terminate()
  }

  /** Stops the session from being picked or read (§3.6 step 1). */
  retire(): void {
    this.state = 'closed'
    this.stopReading()
    if (this.graceTimer) clearTimeout(this.graceTimer)
    this.graceTimer = undefined
  }
}

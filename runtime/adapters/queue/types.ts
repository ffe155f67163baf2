/**
 * The queue backend seam (builtins.md §7.7, §7.8, §13): what the queue worker needs from a store of
 * messages, described by its semantics so that every implementation (memory, SQLite, Redis)
 * behaves the same and passes one conformance suite (./conformance.ts).
 *
 * In the contract:
 * - **enqueue** stores messages (a batch is one durable write) before its promise resolves; an
 *   `idempotency` key already stored for the same queue and not expired stores nothing and answers
 *   the first message's id (`duplicate: true`).
 * - **reserve** moves up to `limit` ready messages of one queue to `in_flight`, incrementing and
 *   storing their attempt count before it resolves. Standard messages start oldest-ready first;
 *   messages with a `group` start at most one per (queue, group) at a time, in enqueue order, and a
 *   group whose head is delayed or in flight is blocked (fifo, retried in place); messages with a
 *   `key` start at most one per (queue, key) at a time. Messages whose target `startable` refuses
 *   (not registered, §7.7) are skipped, keep their place and cost no write.
 * - **ack** deletes an in-flight message; **release** (nack) returns it to pending, visible again at
 *   `ready_at` (delayed until then), optionally giving back the attempt it used; **deadLetter** moves
 *   it to the queue's DLQ with the error; **redrive** / **discard** act on the DLQ.
 * - **recover** runs once after opening, while this backend delivers nothing: in-flight messages of
 *   an earlier process (and any this backend reserved) return to pending with their attempt count
 *   kept, or go to the DLQ (`delivery_interrupted`) when exhausted. A store shared by several
 *   engines (redis) leaves alone the messages another live engine holds: each reserve takes a
 *   lease, its owner renews it, and only an expired lease (its engine crashed) counts as "of an
 *   earlier process".
 * - **recoverExpired** is recover for a running engine: the worker calls it every `leaseCheckMs`
 *   when that is set, taking back messages whose lease expired. A store one engine owns (memory,
 *   builtin: the data directory lock) has no leases, no `leaseCheckMs`, and finds nothing.
 * - **onWake** tells the worker that another engine made messages of a queue startable (an enqueue,
 *   a release, a freed fifo head…), so that it reserves without polling; `undefined` means any
 *   queue may have work (notifications were missed). A store one engine owns never calls it.
 * - In a shared store, ack, release and deadLetter of an in-flight message succeed only for the
 *   backend holding it (false once its lease expired and another engine took it back).
 * - Durable subscriber records (§7.5) are stored next to the messages. A store with `leaseCheckMs`
 *   is shared: the worker reads the records other engines saved when it publishes, and re-saves
 *   the records it holds a live trigger for every `leaseCheckMs`, so that no engine expires them.
 *
 * Not in the contract: settings (retries, backoff, concurrency), delivery, timers and the clock.
 * Times are Unix milliseconds supplied by the caller; a backend never reads the time itself, except
 * the lease deadlines of a shared store, kept on the store's own clock (redis: `TIME`) so that the
 * engines' clocks need not agree.
 */

import type { RawJson } from 'svc-protocol/codec'
import type { StateAdapterLogger } from '../state/types.ts'

/** An error as stored with a dead-lettered message: `{code, message, stacktrace?}` (the handler's stack, kept for the DLQ view). */
export interface QueueError {
  code: string
  message: string
  stacktrace?: string
}

/** A message to store (builtins.md §7.2, §7.4). */
export interface QueueMessageInput {
  /** UUID v4; the receipt id of an Enqueue. */
  id: string
  /** Named queue, subscriber queue (`<topic>::<function_id>[@ns]`) or topic (its DLQ only). */
  queue: string
  function_id: string
  namespace: string
  /**
   * The payload: a value, or a {@link RawJson} holding its JSON text (an enqueue's `data` as the
   * caller's frame carried it), which is stored and delivered as that text (./body.ts `storedPayload`).
   */
  data: unknown
  metadata?: unknown
  traceparent?: string
  baggage?: string
  /** fifo group value: one attempt per (queue, group) at a time, in enqueue order. */
  group?: string
  /** Concurrency key value (`concurrency_key_field`): one attempt per (queue, key) at a time. */
  key?: string
  /** Unix ms. */
  enqueued_at: number
  /** Unix ms of first visibility (`enqueued_at + delay_ms`). */
  ready_at: number
  /** §7.4 idempotency: a second enqueue with `key` to the same queue before `expires_at` stores nothing. */
  idempotency?: { key: string; expires_at: number }
  /** Store the message dead-lettered at once with this error (`no_subscribers`, `invalid_message_group`). */
  dead?: QueueError
}

/** Where a stored message is (§7.7); `delayed` is `pending` with `ready_at` in the future. */
export type QueueMessageState = 'pending' | 'in_flight' | 'dead'

/** A stored message as a backend returns it (a snapshot; do not mutate). */
export interface QueueMessage extends Omit<QueueMessageInput, 'idempotency' | 'dead' | 'data'> {
  /**
   * The payload's JSON text as stored (`data.value` decodes it, once): the delivery's frame
   * carries the text as it is, without a decode and a re-encode (issue 20).
   */
  data: RawJson
  state: QueueMessageState
  /** Attempts started so far (1-based while in flight). */
  attempts: number
  /** Order of enqueue, increasing within one store. */
  seq: number
  /** UTF-8 bytes of the JSON text of `data`. */
  size_bytes: number
  /** Dead-lettered messages: the last error and when (Unix ms). */
  error?: QueueError
  failed_at?: number
}

/** The outcome of one enqueued message. */
export interface EnqueueOutcome {
  /** The stored message's id: the input's, or the first message's for a repeated idempotency key. */
  id: string
  duplicate: boolean
}

export interface ReserveRequest {
  /** Unix ms; messages with `ready_at <= now` are ready. */
  now: number
  /** Most messages to reserve (≥ 1). */
  limit: number
  /**
   * Whether a message for the function `functionId` in `namespace` may start now; absent: all may.
   * Messages it refuses (a target that is not registered, builtins.md §7.7) are skipped, keep their
   * place and are not written: waiting for a target costs nothing.
   */
  startable?: (namespace: string, functionId: string) => boolean
}

/** Counts of one queue (§7.3 `topic_stats`). */
export interface QueueCounts {
  /** Pending and ready. */
  pending: number
  /** Pending with `ready_at` in the future. */
  delayed: number
  in_flight: number
  dead: number
}

/** A durable subscriber (§7.5), remembered across restarts. */
export interface SubscriberRecord {
  /** Subscriber queue name, its identity. */
  queue: string
  topic: string
  namespace: string
  function_id: string
  /** Queue settings of its most recent trigger (raw §7.6 shape; the worker parses it). */
  config?: unknown
  /** Unix ms when its last live trigger went away; absent while it has one. */
  detached_at?: number
}

/** A store of queue messages. All methods are asynchronous; see the module comment for semantics. */
export interface QueueBackend {
  /** Adapter name, shown as `broker_type` (§7.3). */
  readonly name: string
  /** Stores the messages in one durable write. */
  enqueue(messages: readonly QueueMessageInput[]): Promise<EnqueueOutcome[]>
  /** Starts up to `limit` ready messages of `queue`; their attempt counts are stored first. */
  reserve(queue: string, request: ReserveRequest): Promise<QueueMessage[]>
  /**
   * True when the worker may reserve from a queue while an earlier reserve of it is still on its
   * way (each call starts messages of its own): a store across the network, where waiting for the
   * earlier reply before filling slots freed meanwhile costs a round trip. Absent: one at a time.
   */
  readonly reservesOverlap?: boolean
  /**
   * True when a reserve made in the same event-loop turn as an enqueue, before the enqueue's
   * promise resolves, already sees the enqueued messages and is committed with them in one
   * durable write (the in-process index: one transaction per turn). The worker then starts a
   * message on a queue with a free slot at once: stored and started by one commit, one row
   * written, and its delivery leaves in the turn that answers the enqueue. Absent: false.
   */
  readonly reservesJoinEnqueue?: boolean
  /** Deletes an in-flight message; false when it is not in flight (redriven, discarded). */
  ack(id: string): Promise<boolean>
  /** Returns an in-flight message to pending, ready at `ready_at`; `refund` gives its attempt back. */
  release(id: string, options: { ready_at: number; refund?: boolean }): Promise<boolean>
  /** Moves a pending or in-flight message to its queue's DLQ. */
  deadLetter(id: string, error: QueueError, failedAt: number): Promise<boolean>
  /** Moves every pending message of `queue` to its DLQ (a subscriber that expired); returns how many. */
  deadLetterQueue(queue: string, error: QueueError, failedAt: number): Promise<number>
  /** DLQ of `queue` back to pending, attempts reset to 0, ready at `now`; returns how many. */
  redrive(queue: string, now: number): Promise<number>
  /** One DLQ message of `queue` back to pending; false when it is not in that DLQ. */
  redriveMessage(queue: string, id: string, now: number): Promise<boolean>
  /** Deletes one DLQ message of `queue`; false when it is not in that DLQ. */
  discard(queue: string, id: string): Promise<boolean>
  /** A stored message by id, any state. */
  get(id: string): Promise<QueueMessage | undefined>
  /** Counts of `queue` at `now`. */
  counts(queue: string, now: number): Promise<QueueCounts>
  /** A page of the DLQ of `queue`, most recently failed first. */
  deadLetters(queue: string, offset: number, limit: number): Promise<QueueMessage[]>
  /** Names of the queues that hold at least one message, any state. */
  queues(): Promise<string[]>
  /**
   * When reserve may next find work in `queue`: the earliest `ready_at` of a pending message that
   * the last reserve left waiting for its time. A value <= `now` means "at once" (the message came
   * due after that reserve); `undefined` means nothing is waiting for a time.
   */
  nextReadyAt(queue: string, now: number): Promise<number | undefined>
  /**
   * After opening: in-flight messages back to pending (ready at `now`, attempts kept), or to the DLQ
   * with `delivery_interrupted` when `attempts >= allowedAttempts(queue)`.
   */
  recover(now: number, allowedAttempts: (queue: string) => number): Promise<RecoverOutcome>
  /**
   * In-flight messages whose lease expired (their engine stopped renewing it) back to pending or to
   * the DLQ, by the rule of `recover`. Never touches a message a live engine holds.
   */
  recoverExpired(now: number, allowedAttempts: (queue: string) => number): Promise<RecoverOutcome>
  /** How often (ms) the worker calls `recoverExpired`; undefined for a store one engine owns. */
  readonly leaseCheckMs: number | undefined
  /** Listens for other engines' work (see the module comment); returns the function that stops it. */
  onWake(listener: WakeListener): () => void
  saveSubscriber(record: SubscriberRecord): Promise<void>
  deleteSubscriber(queue: string): Promise<void>
  subscribers(): Promise<SubscriberRecord[]>
  /** Flushes and releases the store; later calls reject. */
  close(): Promise<void>
}

/** What `recover` and `recoverExpired` did. */
export interface RecoverOutcome {
  requeued: number
  deadLettered: number
}

/** Called with a queue that may have startable messages, or undefined for every queue. */
export type WakeListener = (queue: string | undefined) => void

/** One string per target `(namespace, function_id)`, for sets of targets. */
export function targetKey(namespace: string, functionId: string): string {
  return `${namespace}\u0000${functionId}`
}

/** What opening a backend needs. */
export interface QueueAdapterContext {
  /** Absolute engine data directory. */
  dataDir: string
  /** Where a shared store warns (e.g. an unreachable Redis at open). */
  log?: StateAdapterLogger | undefined
}

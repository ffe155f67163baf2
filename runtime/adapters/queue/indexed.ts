/**
 * The in-process message index shared by the `memory` and `builtin` queue backends: every message
 * lives in memory, arranged so that reserve is cheap (a ready list per queue in ready order, a heap
 * of delayed messages, fifo groups, busy concurrency keys). A {@link QueueJournal} makes it durable:
 * every change marks the rows it touched, and the journal writes them in one transaction per
 * event-loop turn; the promise of an operation resolves once that transaction committed.
 *
 * One engine per store (the data directory lock, builtins.md §13.2) makes the in-memory index the
 * truth while the process runs; the journal is read back only at open.
 */
import type {
  EnqueueOutcome,
  RecoverOutcome,
  WakeListener,
  QueueBackend,
  QueueCounts,
  QueueError,
  QueueMessage,
  QueueMessageInput,
  ReserveRequest,
  SubscriberRecord,
} from './types.ts'
import { storedPayload } from './body.ts'

/** A message as the index holds it; `version` invalidates stale heap entries. */
export interface IndexedMessage extends QueueMessage {
  version: number
  /**
   * Set by a journal once it wrote the message's row: later writes change only the columns that
   * change after enqueue (the row's immutable part is not encoded, nor kept in memory, again).
   */
  stored?: boolean
}

/** Durable storage behind the index. */
export interface QueueJournal {
  /** Every stored message, subscriber and unexpired idempotency key, read at open. */
  load(now: number): { messages: IndexedMessage[]; idempotency: Array<{ queue: string; key: string; id: string; expires_at: number }>; subscribers: SubscriberRecord[] }
  /** Writes, in one transaction, the current form of each changed row (absent → deleted). */
  write(changes: JournalChanges): void
  close(): void
}

/** Rows changed during one turn. */
export interface JournalChanges {
  /**
   * Message seq (its row's key: unique among stored messages, never changed; a message enqueued
   * again under a deleted one's id has a new seq) → its current form, or null when deleted.
   */
  messages: Map<number, IndexedMessage | null>
  idempotency: Array<{ queue: string; key: string; id: string; expires_at: number }>
  subscribers: Map<string, SubscriberRecord | null>
  /**
   * True when the turn holds a change whose answer promises durability (builtins.md §7.8: an
   * enqueue or durable publish before its receipt; also redrive, discard, subscriber records):
   * the journal must make it survive a power loss before the promises resolve. False when the
   * turn only holds the delivery chain's bookkeeping (reserve, ack, release, dead-letter after an
   * attempt, recover), which answers no caller and must only survive a crash of the process.
   */
  durable: boolean
}

interface HeapEntry {
  at: number
  seq: number
  version: number
  message: IndexedMessage
}

/** A binary min-heap of delayed messages by (ready_at, seq). */
class DelayHeap {
  private readonly items: HeapEntry[] = []
  get size(): number {
    return this.items.length
  }
  peek(): HeapEntry | undefined {
    return this.items[0]
  }
  push(entry: HeapEntry): void {
    const items = this.items
    items.push(entry)
    let i = items.length - 1
    while (i > 0) {
      const parent = (i - 1) >> 1
      if (!before(items[i]!, items[parent]!)) break
      ;[items[i], items[parent]] = [items[parent]!, items[i]!]
      i = parent
    }
  }
  pop(): HeapEntry | undefined {
    const items = this.items
    const top = items[0]
    const last = items.pop()
    if (items.length > 0 && last) {
      items[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1
        const r = l + 1
        let m = i
        if (l < items.length && before(items[l]!, items[m]!)) m = l
        if (r < items.length && before(items[r]!, items[m]!)) m = r
        if (m === i) break
        ;[items[i], items[m]] = [items[m]!, items[i]!]
        i = m
      }
    }
    return top
  }
}

function before(a: HeapEntry, b: HeapEntry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq)
}

/** The messages of one queue. */
class QueueSlot {
  /** Ungrouped pending messages that are ready, in ready order (Map keeps insertion order). */
  readonly ready = new Map<string, IndexedMessage>()
  /** Ungrouped pending messages not yet ready. */
  readonly delayed = new DelayHeap()
  /** Grouped (fifo) live messages per group, in seq order; the head may be in flight or delayed. */
  readonly groups = new Map<string, IndexedMessage[]>()
  readonly inFlight = new Map<string, IndexedMessage>()
  /** Concurrency keys with an attempt in flight. */
  readonly busyKeys = new Set<string>()
  /** DLQ in dead-letter order (oldest first). */
  readonly dead = new Map<string, IndexedMessage>()
  /** Delayed ungrouped messages still pending (the heap may also hold stale entries). */
  delayedCount = 0

  get empty(): boolean {
    return this.ready.size === 0 && this.delayedCount === 0 && this.groups.size === 0 && this.inFlight.size === 0 && this.dead.size === 0
  }
}

/**
 * A {@link QueueBackend} over the in-memory index; durable when given a journal.
 *
 * @example
 * const backend = new IndexedQueueBackend('memory')
 * await backend.enqueue([{ id, queue: 'emails', function_id: 'mail::send', namespace: 'default', data: {}, enqueued_at: Date.now(), ready_at: Date.now() }])
 */
export class IndexedQueueBackend implements QueueBackend {
  readonly name: string
  /**
   * With a journal, a reserve in the turn of an enqueue joins its transaction (one per turn): see
   * {@link QueueBackend.reservesJoinEnqueue}. Without one (`memory`) nothing is written: an enqueue
   * resolves at once and its pump comes right after, as it always did.
   */
  readonly reservesJoinEnqueue: boolean
  private readonly journal: QueueJournal | null
  private readonly messages = new Map<string, IndexedMessage>()
  private readonly slots = new Map<string, QueueSlot>()
  private readonly idempotency = new Map<string, { id: string; expires_at: number }>()
  private readonly subscriberRecords = new Map<string, SubscriberRecord>()
  private seq = 0
  /** Idempotency keys stored since the last pruning of expired ones. */
  private keysSincePrune = 0
  private closed = false
  // The open batch of the current turn.
  private pending: JournalChanges | null = null
  /**
   * Settles when the open batch is committed, or rejects with its failure: one promise that every
   * operation of the batch waits on (a promise, its resolving functions and a waiter record per
   * operation were a share of every queued message's garbage).
   */
  private batch: PromiseWithResolvers<void> | null = null

  constructor(name: string, journal: QueueJournal | null = null, now = Date.now()) {
    this.name = name
    this.journal = journal
    this.reservesJoinEnqueue = journal !== null
    if (!journal) return
    const loaded = journal.load(now)
    loaded.messages.sort((a, b) => a.seq - b.seq)
    for (const message of loaded.messages) {
      this.seq = Math.max(this.seq, message.seq)
      this.messages.set(message.id, message)
      const slot = this.slot(message.queue)
      if (message.state === 'dead') slot.dead.set(message.id, message)
      else if (message.state === 'in_flight') {
        slot.inFlight.set(message.id, message)
        if (message.group !== undefined) this.groupOf(slot, message.group).push(message)
        else if (message.key !== undefined) slot.busyKeys.add(message.key)
      } else this.place(slot, message, now)
    }
    // DLQ order is failure order.
    for (const slot of this.slots.values()) {
      const dead = [...slot.dead.values()].sort((a, b) => (a.failed_at ?? 0) - (b.failed_at ?? 0) || a.seq - b.seq)
      slot.dead.clear()
      for (const message of dead) slot.dead.set(message.id, message)
    }
    for (const entry of loaded.idempotency) this.idempotency.set(idemKey(entry.queue, entry.key), { id: entry.id, expires_at: entry.expires_at })
    for (const record of loaded.subscribers) this.subscriberRecords.set(record.queue, record)
  }

  // ---- durability -----------------------------------------------------------------------------

  private changes(): JournalChanges {
    if (this.closed) throw new Error('the queue store is closed')
    if (!this.pending) this.pending = { messages: new Map(), idempotency: [], subscribers: new Map(), durable: false }
    return this.pending
  }

  /** Marks the open batch as answering a caller that is promised durability ({@link JournalChanges.durable}). */
  private durably(): void {
    if (this.pending) this.pending.durable = true
  }

  private touch(message: IndexedMessage, deleted = false): void {
    if (this.journal) this.changes().messages.set(message.seq, deleted ? null : message)
  }

  /** Resolves once every change made so far is committed. */
  private committed(): Promise<void> {
    if (!this.journal || !this.pending) return Promise.resolve()
    let batch = this.batch
    if (batch === null) {
      batch = this.batch = Promise.withResolvers<void>()
      setImmediate(this.flush)
    }
    return batch.promise
  }

  private readonly flush = (): void => {
    const changes = this.pending
    const batch = this.batch
    this.pending = null
    this.batch = null
    if (!changes) return batch?.resolve()
    try {
      this.journal!.write(changes)
    } catch (error) {
      batch?.reject(error)
      return
    }
    batch?.resolve()
  }

  // ---- index ----------------------------------------------------------------------------------

  private slot(queue: string): QueueSlot {
    let slot = this.slots.get(queue)
    if (!slot) this.slots.set(queue, (slot = new QueueSlot()))
    return slot
  }

  private dropSlotIfEmpty(queue: string): void {
    const slot = this.slots.get(queue)
    if (slot?.empty) this.slots.delete(queue)
  }

  private groupOf(slot: QueueSlot, group: string): IndexedMessage[] {
    let list = slot.groups.get(group)
    if (!list) slot.groups.set(group, (list = []))
    return list
  }

  /** Puts a pending message where reserve finds it. */
  private place(slot: QueueSlot, message: IndexedMessage, now: number): void {
    message.version++
    if (message.group !== undefined) {
      const list = this.groupOf(slot, message.group)
      // Keep seq order: a redriven or recovered message goes back to its place.
      let i = list.length
      while (i > 0 && list[i - 1]!.seq > message.seq) i--
      list.splice(i, 0, message)
    } else if (message.ready_at <= now) {
      slot.ready.set(message.id, message)
    } else {
      slot.delayedCount++
      slot.delayed.push({ at: message.ready_at, seq: message.seq, version: message.version, message })
    }
  }

  /** Takes a message out of wherever it sits in its slot (not the DLQ). */
  private unplace(slot: QueueSlot, message: IndexedMessage): void {
    if (message.state === 'in_flight') {
      slot.inFlight.delete(message.id)
      if (message.key !== undefined && message.group === undefined) slot.busyKeys.delete(message.key)
    }
    if (message.group !== undefined) {
      const list = slot.groups.get(message.group)
      if (list) {
        const i = list.indexOf(message)
        if (i >= 0) list.splice(i, 1)
        if (list.length === 0) slot.groups.delete(message.group)
      }
    } else if (message.state === 'pending') {
      if (!slot.ready.delete(message.id)) slot.delayedCount--
    }
    message.version++
  }

  /** Moves delayed ungrouped messages that came due to the ready list, in ready order. */
  private promote(slot: QueueSlot, now: number): void {
    for (let top = slot.delayed.peek(); top && top.at <= now; top = slot.delayed.peek()) {
      slot.delayed.pop()
      const m = top.message
      if (top.version !== m.version || m.state !== 'pending') continue
      slot.delayedCount--
      slot.ready.set(m.id, m)
    }
  }

  /** A copy of `m` without the index's own fields, built field by field (one shape for every copy; a rest pattern copied by name lookups). */
  private snapshot(m: IndexedMessage): QueueMessage {
    const copy: QueueMessage = {
      id: m.id,
      queue: m.queue,
      function_id: m.function_id,
      namespace: m.namespace,
      data: m.data,
      enqueued_at: m.enqueued_at,
      ready_at: m.ready_at,
      state: m.state,
      attempts: m.attempts,
      seq: m.seq,
      size_bytes: m.size_bytes,
    }
    copyOptional(m, copy)
    if (m.error !== undefined) copy.error = m.error
    if (m.failed_at !== undefined) copy.failed_at = m.failed_at
    return copy
  }

  // ---- QueueBackend -----------------------------------------------------------------------------

  enqueue(inputs: readonly QueueMessageInput[]): Promise<EnqueueOutcome[]> {
    const outcomes: EnqueueOutcome[] = []
    try {
      const changes = this.journal ? this.changes() : null
      for (const input of inputs) {
        if (input.idempotency) {
          const k = idemKey(input.queue, input.idempotency.key)
          const seen = this.idempotency.get(k)
          if (seen && seen.expires_at > input.enqueued_at) {
            outcomes.push({ id: seen.id, duplicate: true })
            continue
          }
          const entry = { id: input.id, expires_at: input.idempotency.expires_at }
          if (++this.keysSincePrune >= 4096) {
            this.keysSincePrune = 0
            this.pruneIdempotency(input.enqueued_at)
          }
          this.idempotency.set(k, entry)
          changes?.idempotency.push({ queue: input.queue, key: input.idempotency.key, ...entry })
        }
        const dead = input.dead
        const data = storedPayload(input.data)
        // Field by field, as in snapshot(): every message of one shape.
        const message: IndexedMessage = {
          id: input.id,
          queue: input.queue,
          function_id: input.function_id,
          namespace: input.namespace,
          data,
          enqueued_at: input.enqueued_at,
          ready_at: input.ready_at,
          state: dead ? 'dead' : 'pending',
          attempts: 0,
          seq: ++this.seq,
          size_bytes: Buffer.byteLength(data.text),
          version: 0,
        }
        copyOptional(input, message)
        if (dead) {
          message.error = dead
          message.failed_at = input.enqueued_at
        }
        this.messages.set(message.id, message)
        const slot = this.slot(message.queue)
        if (dead) slot.dead.set(message.id, message)
        else this.place(slot, message, input.enqueued_at)
        this.touch(message)
        outcomes.push({ id: message.id, duplicate: false })
      }
    } catch (error) {
      return Promise.reject(error)
    }
    this.durably()
    return this.committed().then(() => outcomes)
  }

  reserve(queue: string, request: ReserveRequest): Promise<QueueMessage[]> {
    if (this.closed) return Promise.reject(new Error('the queue store is closed'))
    const slot = this.slots.get(queue)
    const taken: QueueMessage[] = []
    if (!slot) return Promise.resolve(taken)
    const { now, startable } = request
    let limit = request.limit
    const start = (message: IndexedMessage) => {
      message.state = 'in_flight'
      message.attempts++
      message.version++
      slot.inFlight.set(message.id, message)
      this.touch(message)
      taken.push(this.snapshot(message))
      limit--
    }
    // fifo groups: the head only, when pending and ready.
    if (slot.groups.size > 0) {
      for (const list of slot.groups.values()) {
        if (limit <= 0) break
        const head = list[0]!
        if (head.state !== 'pending' || head.ready_at > now) continue
        if (startable !== undefined && !startable(head.namespace, head.function_id)) continue
        start(head)
      }
    }
    if (limit > 0) {
      this.promote(slot, now)
      for (const message of slot.ready.values()) {
        if (limit <= 0) break
        if (message.key !== undefined && slot.busyKeys.has(message.key)) continue
        if (startable !== undefined && !startable(message.namespace, message.function_id)) continue
        slot.ready.delete(message.id)
        if (message.key !== undefined) slot.busyKeys.add(message.key)
        start(message)
      }
    }
    if (taken.length === 0) return Promise.resolve(taken)
    return this.committed().then(() => taken)
  }

  ack(id: string): Promise<boolean> {
    const message = this.messages.get(id)
    if (!message || message.state !== 'in_flight') return Promise.resolve(false)
    const slot = this.slot(message.queue)
    this.unplace(slot, message)
    this.messages.delete(id)
    this.touch(message, true)
    this.dropSlotIfEmpty(message.queue)
    return this.committed().then(yes)
  }

  release(id: string, options: { ready_at: number; refund?: boolean }): Promise<boolean> {
    const message = this.messages.get(id)
    if (!message || message.state !== 'in_flight') return Promise.resolve(false)
    const slot = this.slot(message.queue)
    slot.inFlight.delete(id)
    if (message.key !== undefined && message.group === undefined) slot.busyKeys.delete(message.key)
    message.state = 'pending'
    message.ready_at = options.ready_at
    if (options.refund && message.attempts > 0) message.attempts--
    if (message.group !== undefined) message.version++ // stays at its place in the group
    else this.place(slot, message, -Infinity) // via the heap, so ready order is kept
    this.touch(message)
    return this.committed().then(yes)
  }

  deadLetter(id: string, error: QueueError, failedAt: number): Promise<boolean> {
    const message = this.messages.get(id)
    if (!message || message.state === 'dead') return Promise.resolve(false)
    this.kill(message, error, failedAt)
    return this.committed().then(yes)
  }

  private kill(message: IndexedMessage, error: QueueError, failedAt: number): void {
    const slot = this.slot(message.queue)
    this.unplace(slot, message)
    message.state = 'dead'
    message.error = error.stacktrace === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, stacktrace: error.stacktrace }
    message.failed_at = failedAt
    slot.dead.set(message.id, message)
    this.touch(message)
  }

  deadLetterQueue(queue: string, error: QueueError, failedAt: number): Promise<number> {
    const slot = this.slots.get(queue)
    if (!slot) return Promise.resolve(0)
    const victims: IndexedMessage[] = [...slot.ready.values(), ...[...slot.groups.values()].flat()]
    for (const m of this.messages.values()) if (m.queue === queue && m.state === 'pending' && m.group === undefined && !slot.ready.has(m.id)) victims.push(m)
    let count = 0
    for (const m of victims) {
      if (m.state !== 'pending') continue
      this.kill(m, error, failedAt)
      count++
    }
    this.durably()
    return this.committed().then(() => count)
  }

  redrive(queue: string, now: number): Promise<number> {
    const slot = this.slots.get(queue)
    if (!slot || slot.dead.size === 0) return Promise.resolve(0)
    const dead = [...slot.dead.values()]
    for (const message of dead) this.revive(slot, message, now)
    this.durably()
    return this.committed().then(() => dead.length)
  }

  private revive(slot: QueueSlot, message: IndexedMessage, now: number): void {
    slot.dead.delete(message.id)
    message.state = 'pending'
    message.attempts = 0
    message.ready_at = now
    delete message.error
    delete message.failed_at
    this.place(slot, message, now)
    this.touch(message)
  }

  redriveMessage(queue: string, id: string, now: number): Promise<boolean> {
    const slot = this.slots.get(queue)
    const message = slot?.dead.get(id)
    if (!slot || !message) return Promise.resolve(false)
    this.revive(slot, message, now)
    this.durably()
    return this.committed().then(yes)
  }

  discard(queue: string, id: string): Promise<boolean> {
    const slot = this.slots.get(queue)
    const message = slot?.dead.get(id)
    if (!slot || !message) return Promise.resolve(false)
    slot.dead.delete(id)
    this.messages.delete(id)
    this.touch(message, true)
    this.dropSlotIfEmpty(queue)
    this.durably()
    return this.committed().then(yes)
  }

  get(id: string): Promise<QueueMessage | undefined> {
    const message = this.messages.get(id)
    return Promise.resolve(message ? this.snapshot(message) : undefined)
  }

  counts(queue: string, now: number): Promise<QueueCounts> {
    const slot = this.slots.get(queue)
    if (!slot) return Promise.resolve({ pending: 0, delayed: 0, in_flight: 0, dead: 0 })
    this.promote(slot, now)
    let pending = slot.ready.size
    let delayed = slot.delayedCount
    for (const list of slot.groups.values()) {
      for (const m of list) {
        if (m.state !== 'pending') continue
        if (m.ready_at > now) delayed++
        else pending++
      }
    }
    return Promise.resolve({ pending, delayed, in_flight: slot.inFlight.size, dead: slot.dead.size })
  }

  deadLetters(queue: string, offset: number, limit: number): Promise<QueueMessage[]> {
    const slot = this.slots.get(queue)
    if (!slot) return Promise.resolve([])
    const all = [...slot.dead.values()].reverse()
    return Promise.resolve(all.slice(offset, offset + limit).map((m) => this.snapshot(m)))
  }

  queues(): Promise<string[]> {
    return Promise.resolve([...this.slots.keys()].filter((q) => !this.slots.get(q)!.empty))
  }

  nextReadyAt(queue: string, now: number): Promise<number | undefined> {
    const slot = this.slots.get(queue)
    if (!slot) return Promise.resolve(undefined)
    // No promotion here: a message that came due since the last reserve must still be reported
    // (as a time <= now), or nobody would pump for it.
    let next: number | undefined
    // Drop stale heap entries so that the top is a live one.
    for (let top = slot.delayed.peek(); top && (top.version !== top.message.version || top.message.state !== 'pending'); top = slot.delayed.peek()) slot.delayed.pop()
    const top = slot.delayed.peek()
    if (top) next = top.at
    for (const list of slot.groups.values()) {
      const head = list[0]!
      if (head.state === 'pending' && head.ready_at > now && (next === undefined || head.ready_at < next)) next = head.ready_at
    }
    return Promise.resolve(next)
  }

  recover(now: number, allowedAttempts: (queue: string) => number): Promise<{ requeued: number; deadLettered: number }> {
    let requeued = 0
    let deadLettered = 0
    for (const message of [...this.messages.values()]) {
      if (message.state !== 'in_flight') continue
      if (message.attempts >= allowedAttempts(message.queue)) {
        this.kill(message, { code: 'delivery_interrupted', message: 'the engine stopped while the last attempt was in flight' }, now)
        deadLettered++
        continue
      }
      const slot = this.slot(message.queue)
      slot.inFlight.delete(message.id)
      if (message.key !== undefined && message.group === undefined) slot.busyKeys.delete(message.key)
      message.state = 'pending'
      message.ready_at = Math.min(message.ready_at, now)
      if (message.group !== undefined) message.version++
      else this.place(slot, message, now)
      this.touch(message)
      requeued++
    }
    return this.committed().then(() => ({ requeued, deadLettered }))
  }

  /** One engine owns this store: no leases, nothing expires. */
  readonly leaseCheckMs = undefined

  recoverExpired(): Promise<RecoverOutcome> {
    return Promise.resolve({ requeued: 0, deadLettered: 0 })
  }

  /** Only this engine writes here: nobody else makes work. */
  onWake(_listener: WakeListener): () => void {
    return () => {}
  }

  saveSubscriber(record: SubscriberRecord): Promise<void> {
    this.subscriberRecords.set(record.queue, { ...record })
    if (this.journal) this.changes().subscribers.set(record.queue, { ...record })
    this.durably()
    return this.committed()
  }

  deleteSubscriber(queue: string): Promise<void> {
    if (!this.subscriberRecords.delete(queue)) return Promise.resolve()
    if (this.journal) this.changes().subscribers.set(queue, null)
    this.durably()
    return this.committed()
  }

  subscribers(): Promise<SubscriberRecord[]> {
    return Promise.resolve([...this.subscriberRecords.values()].map((r) => ({ ...r })))
  }

  async close(): Promise<void> {
    if (this.closed) return
    if (this.pending) this.flush()
    this.closed = true
    this.journal?.close()
  }

  /** Forgets expired idempotency keys from memory (every 4096 new keys; the journal drops them at open). */
  pruneIdempotency(now: number): void {
    for (const [k, v] of this.idempotency) if (v.expires_at <= now) this.idempotency.delete(k)
  }
}

/** What an operation's promise answers once its change is committed, shared by every call. */
function yes(): boolean {
  return true
}

function idemKey(queue: string, key: string): string {
  return `${queue}\u0000${key}`
}

/** Copies a message's optional immutable fields that are set (`metadata`, `traceparent`, `baggage`, `group`, `key`) from `from` to `to`. */
function copyOptional(from: QueueMessageInput | QueueMessage, to: QueueMessage): void {
  if (from.metadata !== undefined) to.metadata = from.metadata
  if (from.traceparent !== undefined) to.traceparent = from.traceparent
  if (from.baggage !== undefined) to.baggage = from.baggage
  if (from.group !== undefined) to.group = from.group
  if (from.key !== undefined) to.key = from.key
}

/**
 * The functions of the queue worker (builtins.md §7.3, §7.4, §7.5): durable publish, `queue::define`,
 * redrive and discard of dead-lettered messages, the `engine::queue::*` listings, and
 * `engine::queue::enqueue`, the provider of the Enqueue action. Payloads are validated here;
 * messages are stored through the worker's {@link AdapterSlots} (an operation finishes on the
 * backend it started on, §2.9) and handed to the pumps of ./delivery.ts.
 */
import { uuid4 } from '../../engine/uuid.ts'
import { Codes, errorBodyOf, Errors } from 'svc-protocol/errors'
import { decodeJson } from 'svc-protocol/codec'
import type { DlqMessage, DlqTopic, DurablePublishResult, QueueDefineResult, QueueDiscardMessageResult, QueueEnqueueResult, QueueRedriveMessageResult, QueueRedriveResult, QueueTopic, QueueTopicStats } from 'svc-protocol'
import type { EnqueueOutcome, QueueBackend, QueueMessage, QueueMessageInput } from '../../adapters/queue/index.ts'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'
import type { InvocationContext, LocalFunctionOptions, LocalInvokeRequest, LocalWorker } from '../../engine/types.ts'
import type { AdapterSlots } from '../shared/adapter-slots.ts'
import type { QueueDelivery } from './delivery.ts'
import { QUEUE_FUNCTION_FORMATS } from './formats.ts'
import { MAX_DELAY_MS, parseQueueSettings, queueNameProblem, undeclaredQueue, type QueueSettings, type QueueWorkerSettings } from './settings.ts'
import type { DurableSubscribers } from './triggers.ts'

/** The worker's name: the id of its configuration entry (§7.3 `queue::define` writes there). */
const QUEUE_WORKER_NAME = 'queue'
/** The function id a `no_subscribers` DLQ entry names (§7.5). */
const PUBLISH_ID = 'svc::durable::publish'
/** Most DLQ messages in one `engine::queue::dlq_messages` page (§7.3). */
const MAX_DLQ_PAGE = 1000

type Payload = Record<string, unknown>

/** What the functions need of the worker. */
export interface QueueFunctionsHost {
  /** Where the configuration worker is called (`queue::define`). */
  readonly worker: Pick<LocalWorker, 'invoke'>
  /** Producer spans of §12.7; undefined: none. */
  readonly telemetry: TelemetryHub | undefined
  /** The worker's backends; every operation runs on the current one. */
  readonly backends: AdapterSlots<QueueBackend>
  readonly subscribers: DurableSubscribers
  readonly delivery: QueueDelivery
  /** The settings in effect. */
  settings(): QueueWorkerSettings
  /** Effective settings of any queue. */
  settingsOf(queue: string): QueueSettings
  /** Whether `queue` was removed from queue_configs and still holds messages (§7.1). */
  isRemoved(queue: string): boolean
  /** Unix ms now, on the worker's clock. */
  now(): number
  /** Applies the worker's stored settings entry now (after `queue::define` wrote it). */
  applyStored(): Promise<void>
}

/**
 * Registers the queue worker's functions on `worker`, answered by `functions`.
 * @example registerQueueFunctions(context.worker, new QueueFunctions(host))
 */
export function registerQueueFunctions(worker: LocalWorker, functions: QueueFunctions): void {
  const register = (id: string, description: string, handler: (p: Payload, ctx: InvocationContext) => unknown, options: LocalFunctionOptions = {}) =>
    worker.registerFunction(id, (data, ctx) => handler(payloadOf(data), ctx), { description, ...QUEUE_FUNCTION_FORMATS[id], ...options })
  register(PUBLISH_ID, 'Publish durably to every subscriber of a topic: {topic, data} → {subscriber_count}', (p, ctx) => functions.publish(p, ctx))
  register('queue::define', 'Declare or change a named queue: {queue, config} → {queue, changed}', (p) => functions.define(p))
  register('svc::queue::redrive', "Move a queue's DLQ back to pending: {queue} → {queue, redriven}", (p) => functions.redrive(p))
  register('svc::queue::redrive_message', 'Move one DLQ message back to pending: {queue, message_id} → {queue, message_id, redriven}', (p) => functions.redriveOne(p))
  register('svc::queue::discard_message', 'Delete one DLQ message: {queue, message_id} → {queue, message_id, discarded}', (p) => functions.discardOne(p))
  register('engine::queue::list_topics', 'Named queues, topics and subscriber queues with their depths', () => functions.listTopics())
  register('engine::queue::topic_stats', 'Counters and settings of a queue or topic: {topic}', (p) => functions.topicStats(p))
  register('engine::queue::dlq_topics', 'Queues whose DLQ is not empty', () => functions.dlqTopics())
  register('engine::queue::dlq_messages', 'A page of DLQ messages, most recently failed first: {topic, offset?, limit?}', (p) => functions.dlqMessages(p))
  // Its `enqueue <queue>` span is the span of the Enqueue action: no `execute` span around it.
  register('engine::queue::enqueue', 'Queue provider of the Enqueue action (protocol.md §6.4)', (p, ctx) => functions.enqueue(p, ctx), { metadata: { internal: true }, ownSpan: true })
}

/**
 * The handlers of the queue worker's functions.
 * @example const functions = new QueueFunctions(host); await functions.enqueue({ queue: 'emails', function_id: 'mail::send', data: {} }, ctx)
 */
export class QueueFunctions {
  private readonly host: QueueFunctionsHost

  constructor(host: QueueFunctionsHost) {
    this.host = host
  }

  /**
   * `svc::durable::publish` (§7.5): one copy per known subscriber, in one durable write, inside
   * one `enqueue <topic>` producer span (§12.7, child of the publisher's span) whose context every
   * copy carries. `ctx` is absent for the republish of a redrive (a new trace).
   */
  async publish(p: Payload, ctx?: InvocationContext): Promise<DurablePublishResult> {
    const topic = p.topic ?? p.queue
    if (topic === undefined || topic === null || topic === '') throw Errors.topicNotSet()
    if (typeof topic !== 'string') throw Errors.invalidArguments('topic must be a non-empty string')
    const hub = this.host.telemetry
    const span = hub?.recording(ctx?.traceparent) === true ? hub.startSpan({ name: `enqueue ${topic}`, kind: 'producer', parent: ctx?.traceparent, attributes: { 'svc.queue.name': topic, 'svc.worker.name': QUEUE_WORKER_NAME }, atEnd: true }) : undefined
    try {
      const subscribers = await this.publishCopies(topic, p.data, span?.traceparent ?? ctx?.traceparent, ctx?.baggage)
      span?.end('ok', undefined, { 'svc.queue.subscriber_count': subscribers })
      return { subscriber_count: subscribers }
    } catch (error) {
      if (span !== undefined) endFailed(span, error)
      throw error
    }
  }

  /** Stores the copies of a publish; the number of subscribers. */
  private async publishCopies(topic: string, payloadData: unknown, traceparent: string | undefined, baggage: string | undefined): Promise<number> {
    const data = payloadData === undefined ? null : payloadData
    await this.withBackend(PUBLISH_ID, (b) => this.host.subscribers.learn(b))
    const now = this.host.now()
    const subs = this.host.subscribers.of(topic)
    const base: Pick<QueueMessageInput, 'data' | 'enqueued_at' | 'ready_at' | 'traceparent' | 'baggage'> = { data, enqueued_at: now, ready_at: now }
    if (traceparent !== undefined) base.traceparent = traceparent
    if (baggage !== undefined) base.baggage = baggage
    const inputs: QueueMessageInput[] = subs.map((sub) => {
      const settings = this.host.subscribers.settingsOf(sub)
      const input: QueueMessageInput = { ...base, id: uuid4(), queue: sub.record.queue, function_id: sub.record.function_id, namespace: sub.record.namespace }
      const placed = placeMessage(input, settings, sub.record.queue)
      if (placed) input.dead = placed
      return input
    })
    if (inputs.length === 0) {
      inputs.push({ ...base, id: uuid4(), queue: topic, function_id: PUBLISH_ID, namespace: 'default', dead: { code: Codes.NoSubscribers, message: `topic '${topic}' has no subscribers` } })
    }
    await this.withBackend(PUBLISH_ID, (b) => b.enqueue(inputs))
    for (const input of inputs) {
      if (input.dead) continue
      this.host.delivery.runner(input.queue).enqueued++
      this.host.delivery.pump(input.queue)
    }
    return subs.length
  }

  /**
   * One backend operation of a function, on the current backend (§2.9: it finishes there if the
   * backend is replaced meanwhile).
   * @throws SvcError `STORAGE_ERROR` `<functionId> failed: …` for a backend failure or a stopped worker.
   */
  private withBackend<T>(functionId: string, operation: (backend: QueueBackend) => Promise<T>): Promise<T> {
    return this.host.backends.run(functionId, operation)
  }

  /**
   * `engine::queue::enqueue` (§7.4): stores the message, then answers its receipt. Recorded as an
   * `enqueue <queue>` producer span (§12.7), child of the caller's span (`traceparent` of the
   * payload, which the Enqueue action fills, else the call's); the message carries the span's
   * context so that its deliveries join the caller's trace. The span is written once, when the
   * message is stored (`atEnd`, engine/telemetry.ts: a store takes milliseconds at most).
   */
  enqueue(p: Payload, ctx: InvocationContext): Promise<QueueEnqueueResult> {
    // Not an async function: with store and AdapterSlots.run, the layered awaits of one enqueue
    // were a suspended frame and two promises each. A refusal still rejects (never throws).
    try {
      const queue = p.queue
      if (queue === undefined || queue === null || queue === '') throw Errors.queueNotSet()
      if (typeof queue !== 'string') throw Errors.invalidArguments('queue must be a non-empty string')
      const parent = typeof p.traceparent === 'string' ? p.traceparent : ctx.traceparent
      const hub = this.host.telemetry
      if (hub?.recording(parent) !== true) return this.store(queue, p, parent)
      const functionId = typeof p.function_id === 'string' ? p.function_id : ''
      const attributes = hub.deliveryAttributes(functionId, typeof p.namespace === 'string' && p.namespace !== '' ? p.namespace : 'default', { worker: QUEUE_WORKER_NAME })
      attributes['svc.queue.name'] = queue
      const span = hub.startSpan({ name: `enqueue ${queue}`, kind: 'producer', parent, attributes, atEnd: true })
      if (span === undefined) return this.store(queue, p, parent)
      let stored: Promise<QueueEnqueueResult>
      try {
        stored = this.store(queue, p, span.traceparent)
      } catch (error) {
        endFailed(span, error)
        throw error
      }
      return stored.then(
        (receipt) => {
          span.end('ok', undefined, { 'svc.queue.message_id': receipt.messageReceiptId })
          return receipt
        },
        (error: unknown) => {
          endFailed(span, error)
          throw error
        },
      )
    } catch (error) {
      return Promise.reject(error)
    }
  }

  /**
   * The message of an enqueue, stored with `traceparent` as its trace context.
   * @throws SvcError (synchronously) for a payload it refuses; rejects with the backend's failure.
   */
  store(queue: string, p: Payload, traceparent: string | undefined): Promise<QueueEnqueueResult> {
    const settings = this.host.settings().queue_configs.get(queue)
    if (!settings) throw undeclaredQueue(queue)
    const functionId = p.function_id
    if (typeof functionId !== 'string' || functionId === '') throw Errors.invalidArguments('function_id must be a non-empty string')
    const now = this.host.now()
    const delay = p.delay_ms
    if (delay !== undefined && delay !== null && (typeof delay !== 'number' || !Number.isSafeInteger(delay) || delay < 0 || delay > MAX_DELAY_MS)) {
      throw Errors.invalidArguments(`delay_ms must be an integer from 0 to ${MAX_DELAY_MS} (7 days)`)
    }
    const receipt = typeof p.messageReceiptId === 'string' && p.messageReceiptId !== '' ? p.messageReceiptId : uuid4()
    const input: QueueMessageInput = {
      id: receipt,
      queue,
      function_id: functionId,
      namespace: typeof p.namespace === 'string' && p.namespace !== '' ? p.namespace : 'default',
      data: p.data === undefined ? null : p.data,
      enqueued_at: now,
      ready_at: now + ((delay as number | undefined) ?? 0),
    }
    if (p.metadata !== undefined && p.metadata !== null) input.metadata = p.metadata
    if (traceparent !== undefined) input.traceparent = traceparent
    if (typeof p.baggage === 'string') input.baggage = p.baggage
    const key = p.idempotency_key
    if (key !== undefined && key !== null) {
      if (typeof key !== 'string' || key === '' || key.length > 256) throw Errors.invalidArguments('idempotency_key must be a string of 1 to 256 characters')
      input.idempotency = { key, expires_at: now + this.host.settings().idempotency_window_ms }
    }
    const problem = placeMessage(input, settings, queue)
    if (problem) throw Errors.invalidMessageGroup(queue, settings.message_group_field!)
    // Not an async function (one promise per enqueue instead of a suspended frame and two). The
    // callback holds only `queue`: until the backend answers, `input` (and the frame text its
    // payload is a view of) is the backend's to keep or drop.
    return this.storeOne(input).then(([outcome]) => {
      if (!outcome!.duplicate) {
        this.host.delivery.runner(queue).enqueued++
        this.host.delivery.pump(queue)
      }
      return { messageReceiptId: outcome!.id }
    })
  }

  /**
   * Hands one message to the current backend. A closure of its own, so that the callback `store`
   * waits with does not share its scope (V8 keeps one context per scope), and with it `input`.
   */
  private storeOne(input: QueueMessageInput): Promise<EnqueueOutcome[]> {
    let joins = false
    const stored = this.withBackend('engine::queue::enqueue', (b) => {
      joins = b.reservesJoinEnqueue === true
      return b.enqueue([input])
    })
    // The index holds the message already: a reserve now shares its commit (durable before the
    // receipt and the delivery both), instead of a second commit once the receipt is on its way.
    if (joins) this.host.delivery.pumpIfFree(input.queue)
    return stored
  }

  /** `queue::define` (§7.3): validates, writes into queue_configs of the `queue` entry, applies. */
  async define(p: Payload): Promise<QueueDefineResult> {
    const queue = p.queue
    if (queue === undefined || queue === null || queue === '') throw Errors.queueNotSet()
    const problem = queueNameProblem(queue)
    if (problem !== undefined) throw Errors.invalidQueueConfig(problem)
    const name = queue as string
    const config = p.config ?? {}
    parseQueueSettings(name, config)
    const invoke = (request: LocalInvokeRequest) => this.host.worker.invoke(request)
    const stored = ((await invoke({ function_id: 'configuration::get', data: { id: QUEUE_WORKER_NAME, raw: true } })) as { value?: Record<string, unknown> }).value ?? {}
    const configs = { ...((stored.queue_configs as Record<string, unknown> | undefined) ?? {}) }
    if (Object.hasOwn(configs, name) && JSON.stringify(configs[name]) === JSON.stringify(config)) return { queue: name, changed: false }
    configs[name] = config
    await invoke({ function_id: 'configuration::set', data: { id: QUEUE_WORKER_NAME, value: { ...stored, queue_configs: configs } } })
    // Usable at once (the configuration trigger applies the same value again, which changes
    // nothing), after any application of an older value already under way.
    await this.host.applyStored()
    return { queue: name, changed: true }
  }

  /**
   * The queues a `queue` / `topic` argument names (§7.2): a topic means its own DLQ queue and its
   * subscriber queues. Unknown names that hold nothing fail with `queue_not_found`.
   */
  private async resolve(p: Payload): Promise<{ name: string; queues: string[] }> {
    const name = p.queue ?? p.topic
    if (name === undefined || name === null || name === '') throw Errors.queueNotSet()
    if (typeof name !== 'string') throw Errors.invalidArguments('queue must be a non-empty string')
    const subs = this.host.subscribers.of(name)
    if (subs.length > 0) return { name, queues: [name, ...subs.map((s) => s.record.queue)] }
    if (this.host.settings().queue_configs.has(name) || this.host.subscribers.byQueue.has(name)) return { name, queues: [name] }
    const stored = await this.withBackend('svc::queue', (b) => b.queues())
    if (stored.includes(name)) return { name, queues: [name] }
    throw Errors.queueNotFound(name)
  }

  async redrive(p: Payload): Promise<QueueRedriveResult> {
    const { name, queues } = await this.resolve(p)
    let redriven = 0
    for (const queue of queues) {
      const dead = await this.withBackend('svc::queue::redrive', (b) => b.deadLetters(queue, 0, Number.MAX_SAFE_INTEGER))
      const republish = dead.filter((m) => m.error?.code === Codes.NoSubscribers)
      for (const m of republish) if (await this.republish(queue, m)) redriven++
      if (republish.length < dead.length) redriven += await this.withBackend('svc::queue::redrive', (b) => b.redrive(queue, this.host.now()))
      this.host.delivery.pump(queue)
    }
    return { queue: name, redriven }
  }

  /** Redrive of a `no_subscribers` entry: publish its data again, then drop the entry (§7.3). */
  private async republish(queue: string, message: QueueMessage): Promise<boolean> {
    const topic = message.queue
    if (!(await this.withBackend('svc::queue::redrive', (b) => b.discard(queue, message.id)))) return false
    await this.publish({ topic, data: message.data })
    return true
  }

  private messageIdOf(p: Payload): string {
    const id = p.message_id
    if (id === undefined || id === null || id === '') throw Errors.messageIdNotSet()
    if (typeof id !== 'string') throw Errors.invalidArguments('message_id must be a non-empty string')
    return id
  }

  async redriveOne(p: Payload): Promise<QueueRedriveMessageResult> {
    const messageId = this.messageIdOf(p)
    const { name, queues } = await this.resolve(p)
    for (const queue of queues) {
      const message = await this.withBackend('svc::queue::redrive_message', (b) => b.get(messageId))
      if (!message || message.queue !== queue || message.state !== 'dead') continue
      const done = message.error?.code === Codes.NoSubscribers ? await this.republish(queue, message) : await this.withBackend('svc::queue::redrive_message', (b) => b.redriveMessage(queue, messageId, this.host.now()))
      if (done) {
        this.host.delivery.pump(queue)
        return { queue: name, message_id: messageId, redriven: 1 }
      }
    }
    return { queue: name, message_id: messageId, redriven: 0 }
  }

  async discardOne(p: Payload): Promise<QueueDiscardMessageResult> {
    const messageId = this.messageIdOf(p)
    const { name, queues } = await this.resolve(p)
    for (const queue of queues) {
      if (await this.withBackend('svc::queue::discard_message', (b) => b.discard(queue, messageId))) return { queue: name, message_id: messageId, discarded: 1 }
    }
    return { queue: name, message_id: messageId, discarded: 0 }
  }

  /** Every name the listings show: named queues, topics, subscriber queues, and stored leftovers. */
  private async names(): Promise<Array<{ name: string; kind: 'queue' | 'subscriber' | 'topic' }>> {
    const seen = new Map<string, 'queue' | 'subscriber' | 'topic'>()
    for (const name of this.host.settings().queue_configs.keys()) seen.set(name, 'queue')
    for (const sub of this.host.subscribers.byQueue.values()) {
      if (!seen.has(sub.record.topic)) seen.set(sub.record.topic, 'topic')
      seen.set(sub.record.queue, 'subscriber')
    }
    for (const name of await this.withBackend('engine::queue::list_topics', (b) => b.queues())) {
      if (seen.has(name)) continue
      const message = (await this.withBackend('engine::queue::list_topics', (b) => b.deadLetters(name, 0, 1)))[0]
      seen.set(name, message?.function_id === PUBLISH_ID ? 'topic' : this.host.isRemoved(name) ? 'queue' : 'subscriber')
    }
    return [...seen].map(([name, kind]) => ({ name, kind })).sort((a, b) => a.name.localeCompare(b.name))
  }

  /** Summed counts over the queues a name stands for. */
  private async countsOf(queues: string[]): Promise<{ pending: number; delayed: number; in_flight: number; dead: number }> {
    const total = { pending: 0, delayed: 0, in_flight: 0, dead: 0 }
    const now = this.host.now()
    for (const queue of queues) {
      const c = await this.withBackend('engine::queue::topic_stats', (b) => b.counts(queue, now))
      total.pending += c.pending
      total.delayed += c.delayed
      total.in_flight += c.in_flight
      total.dead += c.dead
    }
    return total
  }

  private queuesOf(name: string, kind: 'queue' | 'subscriber' | 'topic'): string[] {
    return kind === 'topic' ? [name, ...this.host.subscribers.of(name).map((s) => s.record.queue)] : [name]
  }

  async listTopics(): Promise<QueueTopic[]> {
    const out: QueueTopic[] = []
    const brokerType = this.host.backends.current?.adapter.name ?? this.host.settings().adapter.name
    for (const { name, kind } of await this.names()) {
      const c = await this.countsOf(this.queuesOf(name, kind))
      out.push({ name, kind, broker_type: brokerType, subscriber_count: kind === 'topic' ? this.host.subscribers.of(name).length : 0, depth: c.pending + c.delayed, dlq_depth: c.dead })
    }
    return out
  }

  async topicStats(p: Payload): Promise<QueueTopicStats> {
    const name = p.topic ?? p.queue
    if (name === undefined || name === null || name === '') throw Errors.topicNotSet()
    if (typeof name !== 'string') throw Errors.invalidArguments('topic must be a non-empty string')
    const entry = (await this.names()).find((n) => n.name === name)
    if (!entry) throw Errors.queueNotFound(name)
    const queues = this.queuesOf(name, entry.kind)
    const c = await this.countsOf(queues)
    let delivered = 0
    let failed = 0
    for (const queue of queues) {
      const r = this.host.delivery.runnerOf(queue)
      delivered += r?.delivered ?? 0
      failed += r?.failed ?? 0
    }
    const consumers = entry.kind === 'queue' ? 0 : queues.reduce((n, q) => n + (this.host.subscribers.get(q)?.triggers.size ?? 0), 0)
    const stats: QueueTopicStats = {
      name,
      kind: entry.kind,
      depth: c.pending + c.delayed,
      delayed: c.delayed,
      in_flight: c.in_flight,
      dlq_depth: c.dead,
      consumer_count: consumers,
      delivered,
      failed,
      config: (entry.kind === 'topic' ? this.host.settings().subscriber_defaults : this.host.settingsOf(name)) as unknown as QueueTopicStats['config'],
    }
    if (entry.kind === 'topic') {
      const subscribers: NonNullable<QueueTopicStats['subscribers']> = []
      for (const sub of this.host.subscribers.of(name)) {
        const sc = await this.countsOf([sub.record.queue])
        subscribers.push({ function_id: sub.record.function_id, namespace: sub.record.namespace, queue: sub.record.queue, online: sub.triggers.size > 0, depth: sc.pending + sc.delayed, in_flight: sc.in_flight, dlq_depth: sc.dead })
      }
      stats.subscribers = subscribers
    }
    return stats
  }

  async dlqTopics(): Promise<DlqTopic[]> {
    const out: DlqTopic[] = []
    const brokerType = this.host.backends.current?.adapter.name ?? this.host.settings().adapter.name
    for (const { name, kind } of await this.names()) {
      const c = await this.countsOf([name])
      if (c.dead > 0) out.push({ topic: name, kind, broker_type: brokerType, message_count: c.dead })
    }
    return out
  }

  async dlqMessages(p: Payload): Promise<DlqMessage[]> {
    const { queues } = await this.resolve({ queue: p.topic ?? p.queue })
    const offset = boundedInteger(p, 'offset', 0, Number.MAX_SAFE_INTEGER)
    const limit = boundedInteger(p, 'limit', 50, MAX_DLQ_PAGE)
    let all: QueueMessage[] = []
    for (const queue of queues) all = all.concat(await this.withBackend('engine::queue::dlq_messages', (b) => b.deadLetters(queue, 0, offset + limit)))
    if (queues.length > 1) all.sort((a, b) => (b.failed_at ?? 0) - (a.failed_at ?? 0))
    return all.slice(offset, offset + limit).map(dlqView)
  }
}

/**
 * The `deliver <queue>` consumer span of one delivery attempt (builtins.md §12.7), child of the
}

/** Ends a span with the error a call failed with (`svc.error.code`, as `execute` spans do). */
function endFailed(span: ActiveSpan, error: unknown): void {
  const body = errorBodyOf(error)
  span.end('error', body.message, { 'svc.error.code': body.code })
}

/** The §7.3 DLQ message shape. */
function dlqView(m: QueueMessage): DlqMessage {
  return {
    id: m.id,
    queue: m.queue,
    function_id: m.function_id,
    namespace: m.namespace,
    payload: m.data.value,
    error: m.error ?? null,
    attempts: m.attempts,
    retries: Math.max(0, m.attempts - 1),
    enqueued_at: m.enqueued_at,
    // A dead-lettered message always has both; the fallbacks only satisfy the type.
    failed_at: m.failed_at ?? m.enqueued_at,
    size_bytes: m.size_bytes,
  }
}

/**
 * Sets the fifo group and concurrency key of a message from its data (§7.1). Returns the
 * `invalid_message_group` error when a fifo message lacks a usable group value (missing, null,
 * empty, or not a string or number); a fifo queue without a group field is one serial group.
 */
function placeMessage(input: QueueMessageInput, settings: QueueSettings, queue: string): { code: string; message: string } | undefined {
  const field = (name: string): string | undefined => {
    // Decoded only for a queue that reads a field of it (a RawJson decodes once, then caches).
    const data = decodeJson(input.data)
    if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined
    const value = (data as Record<string, unknown>)[name]
    if (typeof value === 'string' && value !== '') return value
    if (typeof value === 'number' && Number.isFinite(value)) return String(value)
    return undefined
  }
  if (settings.type === 'fifo') {
    if (settings.message_group_field === undefined) {
      input.group = ''
      return undefined
    }
    const group = field(settings.message_group_field)
    if (group === undefined) return Errors.invalidMessageGroup(queue, settings.message_group_field).toErrorBody()
    input.group = group
    return undefined
  }
  if (settings.concurrency_key_field !== undefined) {
    const key = field(settings.concurrency_key_field)
    if (key !== undefined) input.key = key
  }
  return undefined
}


function payloadOf(data: unknown): Payload {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidArguments('payload must be an object')
  return data as Payload
}

function boundedInteger(p: Payload, field: string, fallback: number, max: number): number {
  const value = p[field]
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) throw Errors.invalidArguments(`${field} must be an integer from 0 to ${max}`)
  return value
}

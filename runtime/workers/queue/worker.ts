/**
 * The built-in queue worker `queue` (builtins.md §7): named queues for the Enqueue action, durable
 * publish/subscribe, dead letter queues, delivered at least once.
 *
 * The worker owns settings, delivery and timers; messages live behind the queue backend seam
 * (runtime/adapters/queue/), which stores each change before its promise resolves. Per queue a
 * pump reserves as many ready messages as free slots allow (`concurrency`), delivers each one
 * (./delivery.ts) and acknowledges, delays or dead-letters it. Time comes from the kit's clock so
 * that tests can move it by hand; stored times are Unix ms derived from it.
 */
import { randomUUID } from 'node:crypto'
import { Codes, errorBodyOf, Errors, type ErrorBody } from 'svc-protocol/errors'
import {
  describeQueueAdapter,
  openQueueBackend,
  queueAdapterIdentity,
  targetKey,
  type QueueBackend,
  type QueueMessage,
  type QueueMessageInput,
  type SubscriberRecord,
} from '../../adapters/queue/index.ts'
import type { MetricSeries } from '../../adapters/observability/records.ts'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'
import type { BindingInfo, BuiltinContext, BuiltinWorker, InvocationContext, LocalFunctionOptions, LocalInvokeRequest } from '../../engine/types.ts'
import { AdapterSlots, type AdapterSlot } from '../shared/adapter-slots.ts'
import { systemClock, type CancelTimer, type Clock } from '../shared/clock.ts'
import { createCondition, type Condition } from '../shared/conditions.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { MAX_DELAY_MS, queueBaggage, verdictOf } from './delivery.ts'
import { QUEUE_FUNCTION_FORMATS, SUBSCRIBER_PAYLOAD, SUBSCRIBER_TRIGGER_CONFIG } from './formats.ts'
import {
  parseQueueSettings,
  parseQueueWorkerSettings,
  QUEUE_DEFAULTS,
  queueNameProblem,
  triggerQueueConfig,
  type QueueSettings,
  type QueueWorkerSettings,
} from './settings.ts'

export const QUEUE_WORKER_NAME = 'queue'
/** The function id a `no_subscribers` DLQ entry names (§7.5). */
const PUBLISH_ID = 'svc::durable::publish'
/** How often a registered target whose call answered `function_not_found` is tried again without a functions change, ms. */
const MISSING_RETRY_MS = 2000
/** Most DLQ messages in one `engine::queue::dlq_messages` page (§7.3). */
const MAX_DLQ_PAGE = 1000

type Payload = Record<string, unknown>

/** Per-queue delivery state of this engine. */
interface Runner {
  inFlight: number
  pumping: boolean
  again: boolean
  timerAt?: number
  cancelTimer?: CancelTimer
  /** Messages stored by this engine (enqueue action, durable publish), duplicates not counted. */
  enqueued: number
  /** Messages acknowledged. */
  delivered: number
  /** Messages moved to the dead letter queue after a failed attempt. */
  failed: number
}

/** A live `durable:subscriber` / `queue` trigger. */
interface SubscriberTrigger {
  /** Binding id and trigger type (span attributes `svc.trigger.id`, `svc.trigger.type`). */
  id: string
  type: string
  seq: number
  metadata?: unknown
  condition: Condition | null
  /** Raw queue settings of the trigger (§7.6), or undefined. */
  config: Record<string, unknown> | undefined
}

/** A known durable subscriber (§7.5). */
interface Subscriber {
  record: SubscriberRecord
  triggers: Map<string, SubscriberTrigger>
  expiry?: CancelTimer
}

export interface QueueWorkerOptions {
  /** Time source and timers; default the real clock. Stored times are Unix ms derived from it. */
  clock?: Clock
}

/**
 * `queue`. Settings (§7.1) apply through {@link QueueWorker.applySettings}, whole or not at all.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new QueueWorker()] })
 * await engine.start()
 */
export class QueueWorker implements BuiltinWorker {
  readonly name = QUEUE_WORKER_NAME
  private readonly clock: Clock
  /** Unix ms at clock time 0. */
  private readonly epoch: number
  private context: BuiltinContext | null = null
  /** The engine's telemetry seam: spans of §12.7, the metric source of {@link metricSeries}. */
  private hub: TelemetryHub | undefined
  private removeMetricSource: (() => void) | undefined
  private applier: SettingsApplier<QueueWorkerSettings> | null = null
  private settings: QueueWorkerSettings | null = null
  /**
   * The backend in use and replaced ones still in use (the kit's {@link AdapterSlots}): each
   * delivery holds the backend its message was reserved from until the message is settled there.
   */
  private backends: AdapterSlots<QueueBackend> | null = null
  private readonly runners = new Map<string, Runner>()
  /** Settings of queues removed from queue_configs that still hold messages (§7.1). */
  private readonly removed = new Map<string, QueueSettings>()
  private readonly subscribers = new Map<string, Subscriber>()
  /** Registered targets whose call still answered `function_not_found` (their replica went away): their messages wait (§7.7). */
  private readonly missing = new Set<string>()
  private missingTimer: CancelTimer | undefined
  /** Stops hearing the current backend's wake-ups (other engines' work, a shared store). */
  private stopWake: (() => void) | undefined
  /** The next `recoverExpired` sweep of a shared store (leases of crashed engines). */
  private leaseTimer: CancelTimer | undefined
  /**
   * Whether a message for a target may start (§7.7: `pending` leaves to `in_flight` only when its
   * function is registered). Messages of an unregistered target stay where they are, unread and
   * unwritten, until the set of functions changes: waiting costs no write.
   */
  private readonly startable = (namespace: string, functionId: string): boolean =>
    this.context!.worker.hasFunction(functionId, namespace) && (this.missing.size === 0 || !this.missing.has(targetKey(namespace, functionId)))
  private triggerSeq = 0
  private stopped = false

  constructor(options: QueueWorkerOptions = {}) {
    this.clock = options.clock ?? systemClock
    this.epoch = Date.now() - this.clock.now()
  }

  /** Unix ms now, on the worker's clock. */
  private now(): number {
    return Math.floor(this.epoch + this.clock.now())
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.backends = new AdapterSlots<QueueBackend>(QUEUE_WORKER_NAME, context.log)
    this.hub = context.telemetry
    this.applier = createSettingsApplier<QueueWorkerSettings>({
      worker: QUEUE_WORKER_NAME,
      log: context.log,
      parse: parseQueueWorkerSettings,
      apply: (next, previous) => this.apply(next, previous),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applySettings(settings)
    this.registerFunctions()
    const provider = { registerTrigger: (b: BindingInfo) => this.addTrigger(b), unregisterTrigger: (b: BindingInfo) => this.removeTrigger(b) }
    const format = { trigger_request_format: SUBSCRIBER_TRIGGER_CONFIG, call_request_format: SUBSCRIBER_PAYLOAD }
    context.worker.registerTriggerType({ id: 'durable:subscriber', description: 'Durable subscriber of a topic (at-least-once)', ...format }, provider)
    context.worker.registerTriggerType({ id: 'queue', description: 'Older name of durable:subscriber', ...format }, provider)
    context.worker.registerFunction('queue::on-functions-change', () => this.functionsChanged(), {
      description: 'Wakes messages waiting for their target function',
      metadata: { internal: true },
    })
    context.worker.registerTrigger({ id: 'queue::functions', trigger_type: 'engine::functions-available', function_id: 'queue::on-functions-change', config: {} })
    this.removeMetricSource = this.hub?.addMetricSource((now) => this.metricSeries(now))
  }

  /**
   * Validates and applies the `queue` settings (§7.1). Serialised with other applies.
   * @throws SvcError `invalid_queue_config` / `INVALID_ARGUMENTS` for invalid settings,
   *   `STORAGE_ERROR` when a new adapter cannot be opened; the previous settings stay.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${QUEUE_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.removeMetricSource?.()
    for (const runner of this.runners.values()) runner.cancelTimer?.()
    for (const sub of this.subscribers.values()) sub.expiry?.()
    this.missingTimer?.()
    this.leaseTimer?.()
    this.stopWake?.()
    await this.backends?.close()
  }

  // ---- settings --------------------------------------------------------------------------------

  private async apply(next: QueueWorkerSettings, previous: QueueWorkerSettings | undefined): Promise<void> {
    const context = this.context!
    const adapterContext = { dataDir: context.dataDir, log: context.log }
    const identity = queueAdapterIdentity(next.adapter, adapterContext)
    if (previous) for (const [name, settings] of previous.queue_configs) if (!next.queue_configs.has(name)) this.removed.set(name, settings)
    for (const name of next.queue_configs.keys()) this.removed.delete(name)
    const backends = this.backends!
    const opening = backends.identity !== identity
    let backend: QueueBackend | undefined
    if (opening) {
      try {
        backend = await openQueueBackend(next.adapter, adapterContext, this.now())
      } catch (error) {
        throw withSettingsKey(Errors.storageError(`cannot open the ${next.adapter.name} queue adapter: ${(error as Error).message}`, error), 'adapter')
      }
    }
    this.settings = next
    if (backend) {
      backends.install(backend, identity)
      for (const runner of this.runners.values()) runner.inFlight = 0
      await this.loadSubscribers(backend)
      const recovered = await backend.recover(this.now(), (queue) => this.settingsOf(queue).max_retries + 1)
      if (recovered.requeued + recovered.deadLettered > 0) context.log.info(`queue: recovered ${recovered.requeued} in-flight messages, ${recovered.deadLettered} dead-lettered (delivery_interrupted)`)
      context.log.info(`queue uses the ${next.adapter.name} adapter`, { adapter: describeQueueAdapter(next.adapter, adapterContext) })
      this.watch(backend)
    }
    for (const sub of this.subscribers.values()) this.scheduleExpiry(sub)
    void this.pumpAll()
  }

  /**
   * A store shared with other engines: pump a queue when another engine made work in it (wake-ups
   * arrive at most once per change, and pumps coalesce), and take back, every `leaseCheckMs`, the
   * messages of engines that stopped renewing their leases.
   */
  private watch(backend: QueueBackend): void {
    this.stopWake?.()
    this.leaseTimer?.()
    this.leaseTimer = undefined
    const current = () => !this.stopped && this.backends?.current?.adapter === backend
    this.stopWake = backend.onWake((queue) => {
      if (!current()) return
      if (queue === undefined) void this.pumpAll()
      else this.pump(queue)
    })
    const every = backend.leaseCheckMs
    if (every === undefined) return
    const sweep = async () => {
      this.leaseTimer = undefined
      if (!current()) return
      try {
        // Subscribers with a live trigger here say so, so that no engine expires them (see expire).
        for (const sub of this.subscribers.values()) if (sub.triggers.size > 0) await backend.saveSubscriber(sub.record)
        const taken = await backend.recoverExpired(this.now(), (queue) => this.settingsOf(queue).max_retries + 1)
        if (taken.requeued + taken.deadLettered > 0) {
          this.context?.log.info(`queue: took back ${taken.requeued} messages whose engine stopped renewing their lease, ${taken.deadLettered} dead-lettered (delivery_interrupted)`)
          await this.pumpAll()
        }
      } catch (error) {
        this.context?.log.warn('queue: looking for expired leases failed; trying again', { error: String(error) })
      }
      if (current()) this.leaseTimer = this.clock.setTimeout(() => void sweep(), every)
    }
    this.leaseTimer = this.clock.setTimeout(() => void sweep(), every)
  }

  /**
   * Subscribers remembered by the store: none has a live trigger on this engine yet, so each counts
   * as detached now — unless the store is shared (`leaseCheckMs`), where another engine may hold it.
   */
  private async loadSubscribers(backend: QueueBackend): Promise<void> {
    const now = this.now()
    const shared = backend.leaseCheckMs !== undefined
    for (const record of await backend.subscribers()) {
      const known = this.subscribers.get(record.queue)
      if (known) continue
      if (record.detached_at === undefined && !shared) {
        record.detached_at = now
        await backend.saveSubscriber(record)
      }
      this.subscribers.set(record.queue, { record, triggers: new Map() })
    }
  }

  /** Effective settings of a named queue, removed queue, subscriber queue or anything else (defaults). */
  private settingsOf(queue: string): QueueSettings {
    const settings = this.settings!
    const named = settings.queue_configs.get(queue) ?? this.removed.get(queue)
    if (named) return named
    const sub = this.subscribers.get(queue)
    if (sub) return this.subscriberSettings(sub)
    return settings.subscriber_defaults ?? QUEUE_DEFAULTS
  }

  /** §7.6 precedence: the most recent trigger's queue_config, then subscriber_defaults, then defaults. */
  private subscriberSettings(sub: Subscriber): QueueSettings {
    let latest: SubscriberTrigger | undefined
    for (const t of sub.triggers.values()) if (!latest || t.seq > latest.seq) latest = t
    const raw = latest ? latest.config : (sub.record.config as Record<string, unknown> | undefined)
    try {
      return parseQueueSettings(sub.record.queue, raw, this.settings!.subscriber_defaults, { aliases: true, requireGroup: false })
    } catch {
      return this.settings!.subscriber_defaults
    }
  }

  // ---- delivery --------------------------------------------------------------------------------

  private runner(queue: string): Runner {
    let runner = this.runners.get(queue)
    if (!runner) this.runners.set(queue, (runner = { inFlight: 0, pumping: false, again: false, enqueued: 0, delivered: 0, failed: 0 }))
    return runner
  }

  private async pumpAll(): Promise<void> {
    const slot = this.backends?.current
    if (!slot) return
    let queues: string[]
    try {
      queues = await slot.adapter.queues()
    } catch (error) {
      // A shared store that is unreachable: its lease sweep or reconnection wakes the queues later.
      this.context?.log.warn('queue: listing the queues failed', { error: String(error) })
      return
    }
    for (const queue of queues) this.pump(queue)
  }

  /** Starts as many ready messages of `queue` as free slots allow; coalesces concurrent calls. */
  private pump(queue: string): void {
    const runner = this.runner(queue)
    if (runner.pumping) {
      runner.again = true
      return
    }
    runner.pumping = true
    void this.pumpLoop(queue, runner).finally(() => {
      runner.pumping = false
      // A pump() that arrived after the loop's last check (a settled delivery's continuation can
      // run between the loop's return and this callback) would otherwise be lost, and with it the
      // retry timer of the message it released.
      if (runner.again) this.pump(queue)
    })
  }

  private async pumpLoop(queue: string, runner: Runner): Promise<void> {
    do {
      runner.again = false
      const slot = this.backends?.current
      if (!slot || this.stopped) return
      const sub = this.subscribers.get(queue)
      // A subscriber's copies wait for a live trigger (§7.5).
      if (sub && sub.triggers.size === 0) return
      const settings = this.settingsOf(queue)
      const free = settings.concurrency - runner.inFlight
      if (free <= 0) return
      const now = this.now()
      let messages: QueueMessage[]
      try {
        messages = await slot.adapter.reserve(queue, { now, limit: free, startable: this.startable })
      } catch (error) {
        this.context!.log.error(`queue: reserving messages of ${queue} failed`, { error: String(error) })
        this.setTimer(queue, runner, this.now() + 1000)
        return
      }
      runner.inFlight += messages.length
      for (const message of messages) void this.deliver(slot, queue, runner, message)
      if (messages.length === free) runner.again = true
      else {
        let next: number | undefined
        try {
          next = await slot.adapter.nextReadyAt(queue, now)
        } catch {
          next = this.now() + 1000 // the store is unreachable: look again in a second
        }
        if (next !== undefined) this.setTimer(queue, runner, next)
      }
    } while (runner.again)
  }

  /** Pumps `queue` again at Unix ms `at` (keeps an earlier timer). */
  private setTimer(queue: string, runner: Runner, at: number): void {
    if (this.stopped) return
    if (runner.timerAt !== undefined && runner.timerAt <= at) return
    runner.cancelTimer?.()
    runner.timerAt = at
    runner.cancelTimer = this.clock.setTimeout(() => {
      runner.timerAt = undefined
      runner.cancelTimer = undefined
      this.pump(queue)
    }, at - this.now())
  }

  private async deliver(reservedOn: AdapterSlot<QueueBackend>, queue: string, runner: Runner, message: QueueMessage): Promise<void> {
    const backends = this.backends!
    const slot = backends.hold(reservedOn)!
    const settings = this.settingsOf(queue)
    const sub = this.subscribers.get(queue)
    let latest: SubscriberTrigger | undefined
    if (sub) for (const t of sub.triggers.values()) if (!latest || t.seq > latest.seq) latest = t
    const baggage = queueBaggage(message.baggage, queue, message.id, message.attempts)
    const hub = this.hub
    // `deliver <queue>` (§12.7): parent of the condition and handler calls. Nothing at all when no span may be recorded.
    const span = hub?.recording(message.traceparent) === true ? deliverySpan(hub, queue, message, latest) : undefined
    const traceparent = span !== undefined ? span.traceparent : message.traceparent
    let error: ErrorBody | undefined
    let handlerNotFound = false
    let freed = false
    /** Gives the attempt's slot back (once) and looks for more work; slots of a replaced backend were reset already. */
    const free = () => {
      if (freed) return
      freed = true
      if (backends.current !== slot) return
      runner.inFlight--
      this.pump(queue)
    }
    try {
      let run = true
      if (latest?.condition) {
        const call: { timeoutMs: number; traceparent?: string; baggage?: string } = { timeoutMs: settings.delivery_timeout_ms, baggage }
        if (traceparent !== undefined) call.traceparent = traceparent
        const outcome = await latest.condition(message.data, call)
        if (!outcome.run) {
          run = false
          if (outcome.failed) error = outcome.body
        }
      }
      if (run) {
        const request: LocalInvokeRequest = {
          function_id: message.function_id,
          namespace: message.namespace,
          data: message.data,
          baggage,
          timeoutMs: settings.delivery_timeout_ms,
        }
        const metadata = sub ? latest?.metadata : message.metadata
        if (metadata !== undefined && metadata !== null) request.metadata = metadata
        if (traceparent !== undefined) request.traceparent = traceparent
        try {
          await this.context!.worker.invoke(request)
        } catch (thrown) {
          error = errorBodyOf(thrown)
          handlerNotFound = error.code === Codes.FunctionNotFound
        }
      }
      const verdict = verdictOf(message, settings, error, handlerNotFound)
      if (span !== undefined) {
        if (error === undefined) span.end('ok')
        else span.end('error', error.message, { 'svc.error.code': error.code })
      }
      const backend = slot.adapter
      let settled: Promise<boolean>
      switch (verdict.kind) {
        case 'ack':
          settled = backend.ack(message.id)
          runner.delivered++
          break
        case 'wait':
          this.markMissing(targetKey(message.namespace, message.function_id))
          settled = backend.release(message.id, { ready_at: message.ready_at, refund: true })
          break
        case 'retry':
          settled = backend.release(message.id, { ready_at: this.now() + verdict.delayMs })
          break
        case 'dead':
          settled = backend.deadLetter(message.id, deadError(verdict.error), this.now())
          runner.failed++
          break
      }
      // The backend changed its index already: the next reserve may start now and share the
      // transaction of this acknowledgement (one commit for both).
      free()
      await settled
    } catch (failure) {
      free()
      span?.end('error', `settling failed: ${String(failure)}`)
      this.context?.log.error(`queue: settling message ${message.id} of ${queue} failed; it is delivered again after a restart`, { error: String(failure) })
    } finally {
      backends.release(slot)
    }
  }

  /**
   * The queue worker's metric series for `engine::metrics::list` (builtins.md §12.5, through the
   * telemetry hub), one point per queue (named, subscriber, or holding stored messages) with
   * attribute `svc.queue.name`, the figures of `engine::queue::topic_stats`:
   * - gauges, unit `{message}`: `svc.queue.depth` (waiting: ready or delayed), `svc.queue.delayed`,
   *   `svc.queue.in_flight` (being delivered), `svc.queue.dlq_depth` (in its dead letter queue);
   * - sums since this engine started, unit `{message}`: `svc.queue.enqueued` (stored, duplicates
   *   not counted), `svc.queue.delivered` (acknowledged), `svc.queue.failed` (dead-lettered after
   *   an attempt), the throughput per queue.
   */
  private async metricSeries(now: number): Promise<MetricSeries[]> {
    const slot = this.backends?.current
    if (!slot || !this.settings) return []
    const names = new Set<string>([...this.settings.queue_configs.keys(), ...this.subscribers.keys(), ...this.runners.keys(), ...(await slot.adapter.queues())])
    const gauge = (name: string, description: string): MetricSeries => ({ name, type: 'gauge', unit: '{message}', description, points: [] })
    const sum = (name: string, description: string): MetricSeries => ({ name, type: 'sum', unit: '{message}', description, points: [] })
    const depth = gauge('svc.queue.depth', 'messages waiting in the queue, ready or delayed')
    const delayed = gauge('svc.queue.delayed', 'messages waiting for their delay or retry backoff')
    const inFlight = gauge('svc.queue.in_flight', 'messages being delivered')
    const dlq = gauge('svc.queue.dlq_depth', "messages in the queue's dead letter queue")
    const enqueued = sum('svc.queue.enqueued', 'messages stored by this engine')
    const delivered = sum('svc.queue.delivered', 'messages acknowledged by this engine')
    const failed = sum('svc.queue.failed', 'messages this engine moved to the dead letter queue')
    const nowMs = this.now()
    for (const queue of [...names].sort()) {
      const c = await slot.adapter.counts(queue, nowMs)
      const r = this.runners.get(queue)
      const attributes = { 'svc.queue.name': queue }
      const point = (series: MetricSeries, value: number) => series.points.push({ time_unix_nano: now, value, attributes })
      point(depth, c.pending + c.delayed)
      point(delayed, c.delayed)
      point(inFlight, c.in_flight)
      point(dlq, c.dead)
      point(enqueued, r?.enqueued ?? 0)
      point(delivered, r?.delivered ?? 0)
      point(failed, r?.failed ?? 0)
    }
    return [depth, delayed, inFlight, dlq, enqueued, delivered, failed]
  }

  private markMissing(target: string): void {
    this.missing.add(target)
    if (this.missingTimer || this.stopped) return
    this.missingTimer = this.clock.setTimeout(() => {
      this.missingTimer = undefined
      this.functionsChanged()
    }, MISSING_RETRY_MS)
  }

  /** The set of functions changed: messages waiting for a target may go (§7.7). */
  private functionsChanged(): void {
    this.missing.clear()
    this.missingTimer?.()
    this.missingTimer = undefined
    void this.pumpAll()
  }

  // ---- durable subscribers (§7.5, §7.6) ----------------------------------------------------------

  private async addTrigger(binding: BindingInfo): Promise<void> {
    const config = (binding.config ?? {}) as Record<string, unknown>
    if (typeof config !== 'object' || Array.isArray(config)) throw Errors.invalidTriggerConfig('config must be an object')
    const topic = config.topic ?? config.queue
    if (typeof topic !== 'string' || topic === '') throw Errors.invalidTriggerConfig(`topic is required for ${binding.trigger_type} triggers`)
    let raw: Record<string, unknown> | undefined
    try {
      raw = triggerQueueConfig(config)
      parseQueueSettings(topic, raw, this.settings!.subscriber_defaults, { aliases: true, requireGroup: false })
    } catch (error) {
      throw Errors.invalidTriggerConfig(errorBodyOf(error).message)
    }
    const queue = subscriberQueueName(topic, binding.function_id, binding.namespace)
    let sub = this.subscribers.get(queue)
    if (!sub) {
      sub = { record: { queue, topic, namespace: binding.namespace, function_id: binding.function_id }, triggers: new Map() }
      this.subscribers.set(queue, sub)
    }
    const trigger: SubscriberTrigger = {
      id: binding.id,
      type: binding.trigger_type,
      seq: ++this.triggerSeq,
      metadata: binding.metadata,
      condition: createCondition(this.context!.worker, { condition_function_id: config.condition_function_id as string | undefined, namespace: binding.namespace, metadata: binding.metadata }),
      config: raw,
    }
    sub.triggers.set(binding.id, trigger)
    sub.expiry?.()
    sub.expiry = undefined
    const record: SubscriberRecord = { queue, topic, namespace: binding.namespace, function_id: binding.function_id }
    if (raw !== undefined) record.config = raw
    sub.record = record
    await this.backends?.current?.adapter.saveSubscriber(record)
    this.pump(queue)
  }

  private async removeTrigger(binding: BindingInfo): Promise<void> {
    for (const sub of this.subscribers.values()) {
      if (!sub.triggers.delete(binding.id) || sub.triggers.size > 0) continue
      sub.record = { ...sub.record, detached_at: this.now() }
      await this.backends?.current?.adapter.saveSubscriber(sub.record)
      this.scheduleExpiry(sub)
    }
  }

  /** Forgets a detached subscriber after `subscriber_retention_ms`; its messages go to its DLQ. */
  private scheduleExpiry(sub: Subscriber): void {
    sub.expiry?.()
    sub.expiry = undefined
    const retention = this.settings!.subscriber_retention_ms
    if (sub.triggers.size > 0 || sub.record.detached_at === undefined || retention === 0 || this.stopped) return
    const due = sub.record.detached_at + retention
    sub.expiry = this.clock.setTimeout(() => void this.expire(sub), due - this.now())
  }

  private async expire(sub: Subscriber): Promise<void> {
    sub.expiry = undefined
    if (sub.triggers.size > 0 || this.subscribers.get(sub.record.queue) !== sub) return
    const backend = this.backends?.current?.adapter
    if (!backend) return
    if (backend.leaseCheckMs !== undefined) {
      // A shared store: the engines holding a live trigger of this subscriber re-save its record
      // (without detached_at) every leaseCheckMs; the store's record decides, not this engine's.
      const stored = (await backend.subscribers()).find((r) => r.queue === sub.record.queue)
      if (stored === undefined) {
        this.subscribers.delete(sub.record.queue) // another engine expired it already
        return
      }
      const due = stored.detached_at === undefined ? undefined : stored.detached_at + this.settings!.subscriber_retention_ms
      if (due === undefined || due > this.now()) {
        sub.record = stored
        if (due !== undefined) this.scheduleExpiry(sub)
        else this.context?.log.info(`queue: subscriber ${sub.record.queue} is live on another engine; kept`)
        return
      }
    }
    this.subscribers.delete(sub.record.queue)
    const moved = await backend.deadLetterQueue(sub.record.queue, { code: Codes.SubscriberExpired, message: `subscriber ${sub.record.function_id} of topic '${sub.record.topic}' had no live trigger for subscriber_retention_ms` }, this.now())
    await backend.deleteSubscriber(sub.record.queue)
    this.context?.log.info(`queue: subscriber ${sub.record.queue} forgotten; ${moved} undelivered messages moved to its DLQ`)
  }

  /**
   * A store shared with other engines: subscribers whose triggers live on another engine get a
   * copy of a publish too. Records this engine has no trigger for are taken from the store (they
   * are delivered by the engine holding the trigger, which the enqueue wakes).
   */
  private async learnSubscribers(backend: QueueBackend): Promise<void> {
    if (backend.leaseCheckMs === undefined) return
    const stored = new Set<string>()
    for (const record of await backend.subscribers()) {
      stored.add(record.queue)
      const known = this.subscribers.get(record.queue)
      if (!known) this.subscribers.set(record.queue, { record, triggers: new Map() })
      else if (known.triggers.size === 0 && known.expiry === undefined) known.record = record
    }
    // Expired by another engine: no more copies for it.
    for (const [queue, sub] of this.subscribers) {
      if (sub.triggers.size > 0 || stored.has(queue)) continue
      sub.expiry?.()
      this.subscribers.delete(queue)
    }
  }

  private subscribersOf(topic: string): Subscriber[] {
    return [...this.subscribers.values()].filter((s) => s.record.topic === topic)
  }

  /**
   * `svc::durable::publish` (§7.5): one copy per known subscriber, in one durable write, inside
   * one `enqueue <topic>` producer span (§12.7, child of the publisher's span) whose context every
   * copy carries. `ctx` is absent for the republish of a redrive (a new trace).
   */
  private async publish(p: Payload, ctx?: InvocationContext): Promise<{ subscriber_count: number }> {
    const topic = p.topic ?? p.queue
    if (topic === undefined || topic === null || topic === '') throw Errors.topicNotSet()
    if (typeof topic !== 'string') throw Errors.invalidArguments('topic must be a non-empty string')
    const hub = this.hub
    const span = hub?.recording(ctx?.traceparent) === true ? hub.startSpan({ name: `enqueue ${topic}`, kind: 'producer', parent: ctx?.traceparent, attributes: { 'svc.queue.name': topic, 'svc.worker.name': QUEUE_WORKER_NAME } }) : undefined
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
    await this.withBackend(PUBLISH_ID, (b) => this.learnSubscribers(b))
    const now = this.now()
    const subs = this.subscribersOf(topic)
    const base: Pick<QueueMessageInput, 'data' | 'enqueued_at' | 'ready_at' | 'traceparent' | 'baggage'> = { data, enqueued_at: now, ready_at: now }
    if (traceparent !== undefined) base.traceparent = traceparent
    if (baggage !== undefined) base.baggage = baggage
    const inputs: QueueMessageInput[] = subs.map((sub) => {
      const settings = this.subscriberSettings(sub)
      const input: QueueMessageInput = { ...base, id: randomUUID(), queue: sub.record.queue, function_id: sub.record.function_id, namespace: sub.record.namespace }
      const placed = placeMessage(input, settings, sub.record.queue)
      if (placed) input.dead = placed
      return input
    })
    if (inputs.length === 0) {
      inputs.push({ ...base, id: randomUUID(), queue: topic, function_id: PUBLISH_ID, namespace: 'default', dead: { code: Codes.NoSubscribers, message: `topic '${topic}' has no subscribers` } })
    }
    await this.withBackend(PUBLISH_ID, (b) => b.enqueue(inputs))
    for (const input of inputs) {
      if (input.dead) continue
      this.runner(input.queue).enqueued++
      this.pump(input.queue)
    }
    return subs.length
  }

  // ---- functions (§7.3, §7.4) --------------------------------------------------------------------

  private registerFunctions(): void {
    const worker = this.context!.worker
    const register = (id: string, description: string, handler: (p: Payload, ctx: InvocationContext) => unknown, options: LocalFunctionOptions = {}) =>
      worker.registerFunction(id, (data, ctx) => handler(payloadOf(data), ctx), { description, ...QUEUE_FUNCTION_FORMATS[id], ...options })
    register(PUBLISH_ID, 'Publish durably to every subscriber of a topic: {topic, data} → {subscriber_count}', (p, ctx) => this.publish(p, ctx))
    register('queue::define', 'Declare or change a named queue: {queue, config} → {queue, changed}', (p) => this.define(p))
    register('svc::queue::redrive', "Move a queue's DLQ back to pending: {queue} → {queue, redriven}", (p) => this.redrive(p))
    register('svc::queue::redrive_message', 'Move one DLQ message back to pending: {queue, message_id} → {queue, message_id, redriven}', (p) => this.redriveOne(p))
    register('svc::queue::discard_message', 'Delete one DLQ message: {queue, message_id} → {queue, message_id, discarded}', (p) => this.discardOne(p))
    register('engine::queue::list_topics', 'Named queues, topics and subscriber queues with their depths', () => this.listTopics())
    register('engine::queue::topic_stats', 'Counters and settings of a queue or topic: {topic}', (p) => this.topicStats(p))
    register('engine::queue::dlq_topics', 'Queues whose DLQ is not empty', () => this.dlqTopics())
    register('engine::queue::dlq_messages', 'A page of DLQ messages, most recently failed first: {topic, offset?, limit?}', (p) => this.dlqMessages(p))
    // Its `enqueue <queue>` span is the span of the Enqueue action: no `execute` span around it.
    register('engine::queue::enqueue', 'Queue provider of the Enqueue action (protocol.md §6.4)', (p, ctx) => this.enqueue(p, ctx), { metadata: { internal: true }, ownSpan: true })
  }

  /**
   * One backend operation of a function, on the current backend (§2.9: it finishes there if the
   * backend is replaced meanwhile).
   * @throws SvcError `STORAGE_ERROR` `<functionId> failed: …` for a backend failure or a stopped worker.
   */
  private withBackend<T>(functionId: string, operation: (backend: QueueBackend) => Promise<T>): Promise<T> {
    if (!this.backends) return Promise.reject(Errors.storageError(`${functionId} failed: the ${QUEUE_WORKER_NAME} worker is stopped`))
    return this.backends.run(functionId, operation)
  }

  /**
   * `engine::queue::enqueue` (§7.4): stores the message, then answers its receipt. Recorded as an
   * `enqueue <queue>` producer span (§12.7), child of the caller's span (`traceparent` of the
   * payload, which the Enqueue action fills, else the call's); the message carries the span's
   * context so that its deliveries join the caller's trace.
   */
  private async enqueue(p: Payload, ctx: InvocationContext): Promise<{ messageReceiptId: string }> {
    const queue = p.queue
    if (queue === undefined || queue === null || queue === '') throw Errors.queueNotSet()
    if (typeof queue !== 'string') throw Errors.invalidArguments('queue must be a non-empty string')
    const parent = typeof p.traceparent === 'string' ? p.traceparent : ctx.traceparent
    const hub = this.hub
    if (hub?.recording(parent) !== true) return this.store(queue, p, parent)
    const functionId = typeof p.function_id === 'string' ? p.function_id : ''
    const attributes = hub.deliveryAttributes(functionId, typeof p.namespace === 'string' && p.namespace !== '' ? p.namespace : 'default', { worker: QUEUE_WORKER_NAME })
    attributes['svc.queue.name'] = queue
    const span = hub.startSpan({ name: `enqueue ${queue}`, kind: 'producer', parent, attributes })
    if (span === undefined) return this.store(queue, p, parent)
    try {
      const receipt = await this.store(queue, p, span.traceparent)
      span.end('ok', undefined, { 'svc.queue.message_id': receipt.messageReceiptId })
      return receipt
    } catch (error) {
      endFailed(span, error)
      throw error
    }
  }

  /** The message of an enqueue, stored with `traceparent` as its trace context. */
  private async store(queue: string, p: Payload, traceparent: string | undefined): Promise<{ messageReceiptId: string }> {
    const settings = this.settings!.queue_configs.get(queue)
    if (!settings) throw Errors.queueNotFound(queue)
    const functionId = p.function_id
    if (typeof functionId !== 'string' || functionId === '') throw Errors.invalidArguments('function_id must be a non-empty string')
    const now = this.now()
    const delay = p.delay_ms
    if (delay !== undefined && delay !== null && (typeof delay !== 'number' || !Number.isSafeInteger(delay) || delay < 0 || delay > MAX_DELAY_MS)) {
      throw Errors.invalidArguments(`delay_ms must be an integer from 0 to ${MAX_DELAY_MS} (7 days)`)
    }
    const receipt = typeof p.messageReceiptId === 'string' && p.messageReceiptId !== '' ? p.messageReceiptId : randomUUID()
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
      input.idempotency = { key, expires_at: now + this.settings!.idempotency_window_ms }
    }
    const problem = placeMessage(input, settings, queue)
    if (problem) throw Errors.invalidMessageGroup(queue, settings.message_group_field!)
    const [outcome] = await this.withBackend('engine::queue::enqueue', (b) => b.enqueue([input]))
    if (!outcome!.duplicate) {
      this.runner(queue).enqueued++
      this.pump(queue)
    }
    return { messageReceiptId: outcome!.id }
  }

  /** `queue::define` (§7.3): validates, writes into queue_configs of the `queue` entry, applies. */
  private async define(p: Payload): Promise<{ queue: string; changed: boolean }> {
    const queue = p.queue
    if (queue === undefined || queue === null || queue === '') throw Errors.queueNotSet()
    const problem = queueNameProblem(queue)
    if (problem !== undefined) throw Errors.invalidQueueConfig(problem)
    const name = queue as string
    const config = p.config ?? {}
    parseQueueSettings(name, config)
    const invoke = (request: LocalInvokeRequest) => this.context!.worker.invoke(request)
    const stored = ((await invoke({ function_id: 'configuration::get', data: { id: QUEUE_WORKER_NAME, raw: true } })) as { value?: Record<string, unknown> }).value ?? {}
    const configs = { ...((stored.queue_configs as Record<string, unknown> | undefined) ?? {}) }
    if (Object.hasOwn(configs, name) && JSON.stringify(configs[name]) === JSON.stringify(config)) return { queue: name, changed: false }
    configs[name] = config
    await invoke({ function_id: 'configuration::set', data: { id: QUEUE_WORKER_NAME, value: { ...stored, queue_configs: configs } } })
    // Usable at once (the configuration trigger applies the same value again, which changes
    // nothing), after any application of an older value already under way.
    const settings = this.context!.settings
    if (settings !== undefined) await settings.applyLatest()
    else await this.applySettings(((await invoke({ function_id: 'configuration::get', data: { id: QUEUE_WORKER_NAME } })) as { value: unknown }).value)
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
    const subs = this.subscribersOf(name)
    if (subs.length > 0) return { name, queues: [name, ...subs.map((s) => s.record.queue)] }
    if (this.settings!.queue_configs.has(name) || this.subscribers.has(name)) return { name, queues: [name] }
    const stored = await this.withBackend('svc::queue', (b) => b.queues())
    if (stored.includes(name)) return { name, queues: [name] }
    throw Errors.queueNotFound(name)
  }

  private async redrive(p: Payload): Promise<{ queue: string; redriven: number }> {
    const { name, queues } = await this.resolve(p)
    let redriven = 0
    for (const queue of queues) {
      const dead = await this.withBackend('svc::queue::redrive', (b) => b.deadLetters(queue, 0, Number.MAX_SAFE_INTEGER))
      const republish = dead.filter((m) => m.error?.code === Codes.NoSubscribers)
      for (const m of republish) if (await this.republish(queue, m)) redriven++
      if (republish.length < dead.length) redriven += await this.withBackend('svc::queue::redrive', (b) => b.redrive(queue, this.now()))
      this.pump(queue)
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

  private async redriveOne(p: Payload): Promise<{ queue: string; message_id: string; redriven: 0 | 1 }> {
    const messageId = this.messageIdOf(p)
    const { name, queues } = await this.resolve(p)
    for (const queue of queues) {
      const message = await this.withBackend('svc::queue::redrive_message', (b) => b.get(messageId))
      if (!message || message.queue !== queue || message.state !== 'dead') continue
      const done = message.error?.code === Codes.NoSubscribers ? await this.republish(queue, message) : await this.withBackend('svc::queue::redrive_message', (b) => b.redriveMessage(queue, messageId, this.now()))
      if (done) {
        this.pump(queue)
        return { queue: name, message_id: messageId, redriven: 1 }
      }
    }
    return { queue: name, message_id: messageId, redriven: 0 }
  }

  private async discardOne(p: Payload): Promise<{ queue: string; message_id: string; discarded: 0 | 1 }> {
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
    for (const name of this.settings!.queue_configs.keys()) seen.set(name, 'queue')
    for (const sub of this.subscribers.values()) {
      if (!seen.has(sub.record.topic)) seen.set(sub.record.topic, 'topic')
      seen.set(sub.record.queue, 'subscriber')
    }
    for (const name of await this.withBackend('engine::queue::list_topics', (b) => b.queues())) {
      if (seen.has(name)) continue
      const message = (await this.withBackend('engine::queue::list_topics', (b) => b.deadLetters(name, 0, 1)))[0]
      seen.set(name, message?.function_id === PUBLISH_ID ? 'topic' : this.removed.has(name) ? 'queue' : 'subscriber')
    }
    return [...seen].map(([name, kind]) => ({ name, kind })).sort((a, b) => a.name.localeCompare(b.name))
  }

  /** Summed counts over the queues a name stands for. */
  private async countsOf(queues: string[]): Promise<{ pending: number; delayed: number; in_flight: number; dead: number }> {
    const total = { pending: 0, delayed: 0, in_flight: 0, dead: 0 }
    const now = this.now()
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
    return kind === 'topic' ? [name, ...this.subscribersOf(name).map((s) => s.record.queue)] : [name]
  }

  private async listTopics(): Promise<Array<{ name: string; kind: string; broker_type: string; subscriber_count: number; depth: number; dlq_depth: number }>> {
    const out = []
    const brokerType = this.backends?.current?.adapter.name ?? this.settings!.adapter.name
    for (const { name, kind } of await this.names()) {
      const c = await this.countsOf(this.queuesOf(name, kind))
      out.push({ name, kind, broker_type: brokerType, subscriber_count: kind === 'topic' ? this.subscribersOf(name).length : 0, depth: c.pending + c.delayed, dlq_depth: c.dead })
    }
    return out
  }

  private async topicStats(p: Payload): Promise<Record<string, unknown>> {
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
      const r = this.runners.get(queue)
      delivered += r?.delivered ?? 0
      failed += r?.failed ?? 0
    }
    const consumers = entry.kind === 'queue' ? 0 : queues.reduce((n, q) => n + (this.subscribers.get(q)?.triggers.size ?? 0), 0)
    const stats: Record<string, unknown> = {
      name,
      kind: entry.kind,
      depth: c.pending + c.delayed,
      delayed: c.delayed,
      in_flight: c.in_flight,
      dlq_depth: c.dead,
      consumer_count: consumers,
      delivered,
      failed,
      config: entry.kind === 'topic' ? this.settings!.subscriber_defaults : this.settingsOf(name),
    }
    if (entry.kind === 'topic') {
      const subscribers = []
      for (const sub of this.subscribersOf(name)) {
        const sc = await this.countsOf([sub.record.queue])
        subscribers.push({ function_id: sub.record.function_id, namespace: sub.record.namespace, queue: sub.record.queue, online: sub.triggers.size > 0, depth: sc.pending + sc.delayed, in_flight: sc.in_flight, dlq_depth: sc.dead })
      }
      stats.subscribers = subscribers
    }
    return stats
  }

  private async dlqTopics(): Promise<Array<{ topic: string; kind: string; broker_type: string; message_count: number }>> {
    const out = []
    const brokerType = this.backends?.current?.adapter.name ?? this.settings!.adapter.name
    for (const { name, kind } of await this.names()) {
      const c = await this.countsOf([name])
      if (c.dead > 0) out.push({ topic: name, kind, broker_type: brokerType, message_count: c.dead })
    }
    return out
  }

  private async dlqMessages(p: Payload): Promise<unknown[]> {
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
 * context the message carries (its `enqueue` span), with the §12.7 common and queue attributes.
 */
function deliverySpan(hub: TelemetryHub, queue: string, message: QueueMessage, trigger: SubscriberTrigger | undefined): ActiveSpan | undefined {
  const origin = trigger === undefined ? { worker: QUEUE_WORKER_NAME } : { worker: QUEUE_WORKER_NAME, triggerType: trigger.type, triggerId: trigger.id }
  const attributes = hub.deliveryAttributes(message.function_id, message.namespace, origin)
  attributes['svc.queue.name'] = queue
  attributes['svc.queue.message_id'] = message.id
  attributes['svc.queue.attempt'] = message.attempts
  return hub.startSpan({ name: `deliver ${queue}`, kind: 'consumer', parent: message.traceparent, attributes })
}

/** Ends a span with the error a call failed with (`svc.error.code`, as `execute` spans do). */
function endFailed(span: ActiveSpan, error: unknown): void {
  const body = errorBodyOf(error)
  span.end('error', body.message, { 'svc.error.code': body.code })
}

/** The §7.3 DLQ message shape. */
/** Most characters of a handler's stack kept with a dead-lettered message. */
export const MAX_DLQ_STACK_CHARS = 16_384

/** The error stored with a dead-lettered message: code, message and the handler's stack (its first {@link MAX_DLQ_STACK_CHARS} characters). */
function deadError(error: ErrorBody): { code: string; message: string; stacktrace?: string } {
  const out: { code: string; message: string; stacktrace?: string } = { code: error.code, message: error.message }
  if (typeof error.stacktrace === 'string' && error.stacktrace !== '') out.stacktrace = error.stacktrace.slice(0, MAX_DLQ_STACK_CHARS)
  return out
}

function dlqView(m: QueueMessage): Record<string, unknown> {
  return {
    id: m.id,
    queue: m.queue,
    function_id: m.function_id,
    namespace: m.namespace,
    payload: m.data,
    error: m.error,
    attempts: m.attempts,
    retries: Math.max(0, m.attempts - 1),
    enqueued_at: m.enqueued_at,
    failed_at: m.failed_at,
    size_bytes: m.size_bytes,
  }
}

/**
 * Sets the fifo group and concurrency key of a message from its data (§7.1). Returns the
 * `invalid_message_group` error when a fifo message lacks a usable group value (missing, null,
 * empty, or not a string or number); a fifo queue without a group field is one serial group.
 */
function placeMessage(input: QueueMessageInput, settings: QueueSettings, queue: string): { code: string; message: string } | undefined {
  const data = input.data
  const field = (name: string): string | undefined => {
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

/** `<topic>::<function_id>`, suffixed `@<namespace>` outside `default` (§7.2). */
export function subscriberQueueName(topic: string, functionId: string, namespace: string): string {
  return `${topic}::${functionId}${namespace === 'default' ? '' : `@${namespace}`}`
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

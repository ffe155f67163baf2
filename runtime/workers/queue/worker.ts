/**
 * The built-in queue worker `queue` (builtins.md §7): named queues for the Enqueue action, durable
 * publish/subscribe, dead letter queues, delivered at least once.
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./functions.ts (`queue::define`,
 * `svc::durable::publish`, `svc::queue::*`, `engine::queue::*`), ./triggers.ts (`durable:subscriber`,
 * `queue`), and this file, the lifecycle: start, settings, the backend, stop. Beside them,
 * ./delivery.ts: the per-queue pumps that reserve ready messages, deliver each one and acknowledge,
 * delay or dead-letter it.
 *
 * Messages live behind the queue backend seam (runtime/adapters/queue/), which stores each change
 * before its promise resolves. Time comes from the kit's clock so that tests can move it by hand;
 * stored times are Unix ms derived from it.
 */
import { Errors } from 'svc-protocol/errors'
import { describeQueueAdapter, openQueueBackend, queueAdapterIdentity, type QueueBackend } from '../../adapters/queue/index.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { systemClock, type CancelTimer, type Clock } from '../shared/clock.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { QueueDelivery } from './delivery.ts'
import { QueueFunctions, registerQueueFunctions } from './functions.ts'
import { parseQueueWorkerSettings, QUEUE_DEFAULTS, type QueueSettings, type QueueWorkerSettings } from './settings.ts'
import { DURABLE_SUBSCRIBER_TRIGGER_TYPE, DurableSubscribers, QUEUE_TRIGGER_TYPE } from './triggers.ts'

export { subscriberQueueName } from './triggers.ts'

export const QUEUE_WORKER_NAME = 'queue'

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
  private removeMetricSource: (() => void) | undefined
  private applier: SettingsApplier<QueueWorkerSettings> | null = null
  private settings: QueueWorkerSettings | null = null
  /**
   * The backend in use and replaced ones still in use (the kit's {@link AdapterSlots}): each
   * delivery holds the backend its message was reserved from until the message is settled there.
   */
  private backends: AdapterSlots<QueueBackend> | null = null
  private subscribers: DurableSubscribers | null = null
  private delivery: QueueDelivery | null = null
  /** Settings of queues removed from queue_configs that still hold messages (§7.1). */
  private readonly removed = new Map<string, QueueSettings>()
  /** Stops hearing the current backend's wake-ups (other engines' work, a shared store). */
  private stopWake: (() => void) | undefined
  /** The next `recoverExpired` sweep of a shared store (leases of crashed engines). */
  private leaseTimer: CancelTimer | undefined
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
    const backends = (this.backends = new AdapterSlots<QueueBackend>(QUEUE_WORKER_NAME, context.log))
    const common = { worker: context.worker, log: context.log, clock: this.clock, now: () => this.now(), settings: () => this.settings! }
    const settingsOf = (queue: string) => this.settingsOf(queue)
    const subscribers = (this.subscribers = new DurableSubscribers({ ...common, backend: () => backends.current?.adapter, pump: (queue) => delivery.pump(queue) }))
    const delivery = (this.delivery = new QueueDelivery({ ...common, telemetry: context.telemetry, backends, subscribers, settingsOf }))
    const functions = new QueueFunctions({
      ...common,
      telemetry: context.telemetry,
      backends,
      subscribers,
      delivery,
      settingsOf,
      isRemoved: (queue) => this.removed.has(queue),
      applyStored: () => this.applyStored(),
    })
    this.applier = createSettingsApplier<QueueWorkerSettings>({
      worker: QUEUE_WORKER_NAME,
      log: context.log,
      parse: parseQueueWorkerSettings,
      apply: (next, previous) => this.apply(next, previous),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applySettings(settings)
    registerQueueFunctions(context.worker, functions)
    context.worker.registerTriggerType(DURABLE_SUBSCRIBER_TRIGGER_TYPE, subscribers)
    context.worker.registerTriggerType(QUEUE_TRIGGER_TYPE, subscribers)
    context.worker.registerFunction('queue::on-functions-change', () => delivery.functionsChanged(), {
      description: 'Wakes messages waiting for their target function',
      metadata: { internal: true },
    })
    context.worker.registerTrigger({ id: 'queue::functions', trigger_type: 'engine::functions-available', function_id: 'queue::on-functions-change', config: {} })
    this.removeMetricSource = context.telemetry?.addMetricSource((now) => delivery.metricSeries(now))
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
    // Prefetched messages go back to pending before the backend closes.
    await this.delivery?.stop()
    this.subscribers?.stop()
    this.leaseTimer?.()
    this.stopWake?.()
    await this.backends?.close()
  }

  /**
   * Applies the worker's stored settings entry at once, after any application of an older value
   * already under way (`queue::define` wrote it; the configuration trigger applies the same value
   * again later, which changes nothing).
   */
  private async applyStored(): Promise<void> {
    const context = this.context!
    if (context.settings !== undefined) return context.settings.applyLatest()
    const stored = (await context.worker.invoke({ function_id: 'configuration::get', data: { id: QUEUE_WORKER_NAME } })) as { value: unknown }
    await this.applySettings(stored.value)
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
      this.delivery!.resetInFlight()
      await this.subscribers!.load(backend)
      const recovered = await backend.recover(this.now(), (queue) => this.settingsOf(queue).max_retries + 1)
      if (recovered.requeued + recovered.deadLettered > 0) context.log.info(`queue: recovered ${recovered.requeued} in-flight messages, ${recovered.deadLettered} dead-lettered (delivery_interrupted)`)
      context.log.info(`queue uses the ${next.adapter.name} adapter`, { adapter: describeQueueAdapter(next.adapter, adapterContext) })
      this.watch(backend)
    }
    this.subscribers!.scheduleAll()
    void this.delivery!.pumpAll()
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
      if (queue === undefined) void this.delivery!.pumpAll()
      else this.delivery!.pump(queue)
    })
    const every = backend.leaseCheckMs
    if (every === undefined) return
    const sweep = async () => {
      this.leaseTimer = undefined
      if (!current()) return
      try {
        await this.subscribers!.renew(backend)
        const taken = await backend.recoverExpired(this.now(), (queue) => this.settingsOf(queue).max_retries + 1)
        if (taken.requeued + taken.deadLettered > 0) {
          this.context?.log.info(`queue: took back ${taken.requeued} messages whose engine stopped renewing their lease, ${taken.deadLettered} dead-lettered (delivery_interrupted)`)
          await this.delivery!.pumpAll()
        }
      } catch (error) {
        this.context?.log.warn('queue: looking for expired leases failed; trying again', { error: String(error) })
      }
      if (current()) this.leaseTimer = this.clock.setTimeout(() => void sweep(), every)
    }
    this.leaseTimer = this.clock.setTimeout(() => void sweep(), every)
  }

  /** Effective settings of a named queue, removed queue, subscriber queue or anything else (defaults). */
  private settingsOf(queue: string): QueueSettings {
    const settings = this.settings!
    const named = settings.queue_configs.get(queue) ?? this.removed.get(queue)
    if (named) return named
    const sub = this.subscribers!.get(queue)
    if (sub) return this.subscribers!.settingsOf(sub)
    return settings.subscriber_defaults ?? QUEUE_DEFAULTS
  }
}

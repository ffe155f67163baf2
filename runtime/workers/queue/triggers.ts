/**
 * The trigger types `durable:subscriber` and `queue` of the queue worker (builtins.md §7.5, §7.6):
 * the durable subscribers they make known, each with its subscriber queue, the settings its
 * triggers give it, and its expiry after `subscriber_retention_ms` without a live trigger.
 *
 * Delivery of a subscriber's messages is the worker's pump (./delivery.ts); this module only tells
 * it when a subscriber's queue may have work (`pump`).
 */
import { Codes, errorBodyOf, Errors } from 'svc-protocol/errors'
import type { QueueBackend, SubscriberRecord } from '../../adapters/queue/index.ts'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import type { CancelTimer, Clock } from '../shared/clock.ts'
import { createCondition, type Condition } from '../shared/conditions.ts'
import { SUBSCRIBER_PAYLOAD, SUBSCRIBER_TRIGGER_CONFIG } from './formats.ts'
import { parseQueueSettings, triggerQueueConfig, type QueueSettings, type QueueWorkerSettings } from './settings.ts'

const FORMATS = { trigger_request_format: SUBSCRIBER_TRIGGER_CONFIG, call_request_format: SUBSCRIBER_PAYLOAD }

/** `durable:subscriber` as the worker registers it (§7.6). */
export const DURABLE_SUBSCRIBER_TRIGGER_TYPE: LocalTriggerTypeOptions = { id: 'durable:subscriber', description: 'Durable subscriber of a topic (at-least-once)', ...FORMATS }

/** `queue`, the older name of `durable:subscriber`, served by the same provider (§7.6). */
export const QUEUE_TRIGGER_TYPE: LocalTriggerTypeOptions = { id: 'queue', description: 'Older name of durable:subscriber', ...FORMATS }

/** A live `durable:subscriber` / `queue` trigger. */
export interface SubscriberTrigger {
  /** Binding id and trigger type (span attributes `svc.trigger.id`, `svc.trigger.type`). */
  id: string
  type: string
  seq: number
  metadata?: unknown
  condition: Condition | null
  /** `condition_function_id` of the config, named when the condition fails. */
  conditionId?: string
  /** Raw queue settings of the trigger (§7.6), or undefined. */
  config: Record<string, unknown> | undefined
}

/** A known durable subscriber (§7.5). */
export interface Subscriber {
  record: SubscriberRecord
  triggers: Map<string, SubscriberTrigger>
  expiry?: CancelTimer
}

/** What the subscribers need of the worker. */
export interface SubscriberHost {
  /** Where condition functions are called (§2.2). */
  readonly worker: Pick<LocalWorker, 'invoke'>
  readonly log: Logger
  readonly clock: Clock
  /** Unix ms now, on the worker's clock. */
  now(): number
  /** The settings in effect (`subscriber_defaults`, `subscriber_retention_ms`). */
  settings(): QueueWorkerSettings
  /** The backend in use, or undefined when stopped. */
  backend(): QueueBackend | undefined
  /** A subscriber queue may have work now (a trigger came). */
  pump(queue: string): void
}

/** `<topic>::<function_id>`, suffixed `@<namespace>` outside `default` (§7.2). */
export function subscriberQueueName(topic: string, functionId: string, namespace: string): string {
  return `${topic}::${functionId}${namespace === 'default' ? '' : `@${namespace}`}`
}

/**
 * Provider of `durable:subscriber` and `queue`, and the worker's index of durable subscribers by
 * subscriber queue name (§7.5).
 *
 * @example
 * const subscribers = new DurableSubscribers(host)
 * context.worker.registerTriggerType(DURABLE_SUBSCRIBER_TRIGGER_TYPE, subscribers)
 * context.worker.registerTriggerType(QUEUE_TRIGGER_TYPE, subscribers)
 */
export class DurableSubscribers implements LocalTriggerProvider {
  /** Known subscribers by subscriber queue name. */
  readonly byQueue = new Map<string, Subscriber>()
  private readonly host: SubscriberHost
  private triggerSeq = 0
  private stopped = false

  constructor(host: SubscriberHost) {
    this.host = host
  }

  /** The subscriber that owns `queue`, if `queue` is a subscriber queue. */
  get(queue: string): Subscriber | undefined {
    return this.byQueue.get(queue)
  }

  /** The subscribers of `topic`. */
  of(topic: string): Subscriber[] {
    return [...this.byQueue.values()].filter((s) => s.record.topic === topic)
  }

  /** The most recently registered live trigger of `sub` (§7.6: its settings win). */
  latest(sub: Subscriber): SubscriberTrigger | undefined {
    let latest: SubscriberTrigger | undefined
    for (const t of sub.triggers.values()) if (!latest || t.seq > latest.seq) latest = t
    return latest
  }

  /** §7.6 precedence: the most recent trigger's queue_config, then subscriber_defaults, then defaults. */
  settingsOf(sub: Subscriber): QueueSettings {
    const latest = this.latest(sub)
    const raw = latest ? latest.config : (sub.record.config as Record<string, unknown> | undefined)
    const defaults = this.host.settings().subscriber_defaults
    try {
      return parseQueueSettings(sub.record.queue, raw, defaults, { aliases: true, requireGroup: false })
    } catch {
      return defaults
    }
  }

  async registerTrigger(binding: BindingInfo): Promise<void> {
    const config = (binding.config ?? {}) as Record<string, unknown>
    if (typeof config !== 'object' || Array.isArray(config)) throw Errors.invalidTriggerConfig('config must be an object')
    const topic = config.topic ?? config.queue
    if (typeof topic !== 'string' || topic === '') throw Errors.invalidTriggerConfig(`topic is required for ${binding.trigger_type} triggers`)
    let raw: Record<string, unknown> | undefined
    try {
      raw = triggerQueueConfig(config)
      parseQueueSettings(topic, raw, this.host.settings().subscriber_defaults, { aliases: true, requireGroup: false })
    } catch (error) {
      throw Errors.invalidTriggerConfig(errorBodyOf(error).message)
    }
    const queue = subscriberQueueName(topic, binding.function_id, binding.namespace)
    let sub = this.byQueue.get(queue)
    if (!sub) {
      sub = { record: { queue, topic, namespace: binding.namespace, function_id: binding.function_id }, triggers: new Map() }
      this.byQueue.set(queue, sub)
    }
    const trigger: SubscriberTrigger = {
      id: binding.id,
      type: binding.trigger_type,
      seq: ++this.triggerSeq,
      metadata: binding.metadata,
      condition: createCondition(this.host.worker, { condition_function_id: config.condition_function_id as string | undefined, namespace: binding.namespace, metadata: binding.metadata }),
      config: raw,
    }
    if (trigger.condition !== null) trigger.conditionId = String(config.condition_function_id)
    sub.triggers.set(binding.id, trigger)
    sub.expiry?.()
    sub.expiry = undefined
    const record: SubscriberRecord = { queue, topic, namespace: binding.namespace, function_id: binding.function_id }
    if (raw !== undefined) record.config = raw
    sub.record = record
    await this.host.backend()?.saveSubscriber(record)
    this.host.pump(queue)
  }

  async unregisterTrigger(binding: BindingInfo): Promise<void> {
    for (const sub of this.byQueue.values()) {
      if (!sub.triggers.delete(binding.id) || sub.triggers.size > 0) continue
      sub.record = { ...sub.record, detached_at: this.host.now() }
      // Its messages reserved ahead of the free slots (prefetch) go back to the store.
      this.host.pump(sub.record.queue)
      await this.host.backend()?.saveSubscriber(sub.record)
      this.scheduleExpiry(sub)
    }
  }

  /**
   * Subscribers remembered by a newly opened store: none has a live trigger on this engine yet, so
   * each counts as detached now — unless the store is shared (`leaseCheckMs`), where another engine
   * may hold it.
   */
  async load(backend: QueueBackend): Promise<void> {
    const now = this.host.now()
    const shared = backend.leaseCheckMs !== undefined
    for (const record of await backend.subscribers()) {
      const known = this.byQueue.get(record.queue)
      if (known) continue
      if (record.detached_at === undefined && !shared) {
        record.detached_at = now
        await backend.saveSubscriber(record)
      }
      this.byQueue.set(record.queue, { record, triggers: new Map() })
    }
  }

  /**
   * A store shared with other engines: subscribers whose triggers live on another engine get a
   * copy of a publish too. Records this engine has no trigger for are taken from the store (they
   * are delivered by the engine holding the trigger, which the enqueue wakes).
   */
  async learn(backend: QueueBackend): Promise<void> {
    if (backend.leaseCheckMs === undefined) return
    const stored = new Set<string>()
    for (const record of await backend.subscribers()) {
      stored.add(record.queue)
      const known = this.byQueue.get(record.queue)
      if (!known) this.byQueue.set(record.queue, { record, triggers: new Map() })
      else if (known.triggers.size === 0 && known.expiry === undefined) known.record = record
    }
    // Expired by another engine: no more copies for it.
    for (const [queue, sub] of this.byQueue) {
      if (sub.triggers.size > 0 || stored.has(queue)) continue
      sub.expiry?.()
      this.byQueue.delete(queue)
    }
  }

  /** A shared store: subscribers with a live trigger here say so, so that no engine expires them (see expire). */
  async renew(backend: QueueBackend): Promise<void> {
    for (const sub of this.byQueue.values()) if (sub.triggers.size > 0) await backend.saveSubscriber(sub.record)
  }

  /** (Re)schedules the expiry of every detached subscriber (after a settings change). */
  scheduleAll(): void {
    for (const sub of this.byQueue.values()) this.scheduleExpiry(sub)
  }

  /** Cancels every expiry timer; no more are scheduled. */
  stop(): void {
    this.stopped = true
    for (const sub of this.byQueue.values()) sub.expiry?.()
  }

  /** Forgets a detached subscriber after `subscriber_retention_ms`; its messages go to its DLQ. */
  private scheduleExpiry(sub: Subscriber): void {
    sub.expiry?.()
    sub.expiry = undefined
    const retention = this.host.settings().subscriber_retention_ms
    if (sub.triggers.size > 0 || sub.record.detached_at === undefined || retention === 0 || this.stopped) return
    const due = sub.record.detached_at + retention
    sub.expiry = this.host.clock.setTimeout(() => void this.expire(sub), due - this.host.now())
  }

  private async expire(sub: Subscriber): Promise<void> {
    sub.expiry = undefined
    if (sub.triggers.size > 0 || this.byQueue.get(sub.record.queue) !== sub) return
    const backend = this.host.backend()
    if (!backend) return
    if (backend.leaseCheckMs !== undefined) {
      // A shared store: the engines holding a live trigger of this subscriber re-save its record
      // (without detached_at) every leaseCheckMs; the store's record decides, not this engine's.
      const stored = (await backend.subscribers()).find((r) => r.queue === sub.record.queue)
      if (stored === undefined) {
        this.byQueue.delete(sub.record.queue) // another engine expired it already
        return
      }
      const due = stored.detached_at === undefined ? undefined : stored.detached_at + this.host.settings().subscriber_retention_ms
      if (due === undefined || due > this.host.now()) {
        sub.record = stored
        if (due !== undefined) this.scheduleExpiry(sub)
        else this.host.log.info(`queue: subscriber ${sub.record.queue} is live on another engine; kept`)
        return
      }
    }
    this.byQueue.delete(sub.record.queue)
    const moved = await backend.deadLetterQueue(sub.record.queue, { code: Codes.SubscriberExpired, message: `subscriber ${sub.record.function_id} of topic '${sub.record.topic}' had no live trigger for subscriber_retention_ms` }, this.host.now())
    await backend.deleteSubscriber(sub.record.queue)
    this.host.log.info(`queue: subscriber ${sub.record.queue} forgotten; ${moved} undelivered messages moved to its DLQ`)
  }
}

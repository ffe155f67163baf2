/**
 * The `subscribe` trigger type (builtins.md §8): bindings indexed by exact topic, and delivery of
 * each message through the kit's per-trigger fan-out (../shared/fanout.ts).
 *
 * Each trigger has its own bounded queue (10 000 messages, the oldest dropped with a warning), so a
 * flood of publishes or a slow subscriber never grows memory without bound and never delays the
 * other subscribers; each delivery is condition then handler within `internal_invocation_timeout_ms`,
 * and failures are logged and dropped (docs/decisions.md, "Pub/sub delivery").
 */
import type { SubscribeTriggerConfig } from 'svc-protocol'
import { Errors } from 'svc-protocol/errors'
import type { PubSubAdapter, PubSubOrigin } from '../../adapters/pubsub/types.ts'
import type { TelemetryHub } from '../../engine/telemetry.ts'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import type { Clock } from '../shared/clock.ts'
import { OrderedFanOut, type FanOutOptions, type FanOutQueue } from '../shared/fanout.ts'

/** The `subscribe` trigger type as the worker registers it (§8). */
export const SUBSCRIBE_TRIGGER_TYPE: LocalTriggerTypeOptions = {
  id: 'subscribe',
  description: 'Receives the data of every publish to its topic (exact, case-sensitive)',
  trigger_request_format: {
    type: 'object',
    required: ['topic'],
    properties: { topic: { type: 'string', minLength: 1 }, condition_function_id: { type: 'string' } },
  },
  call_request_format: { description: 'the published data, unchanged' },
}

/** A validated `subscribe` trigger config (§8): svc-protocol's. */
export type { SubscribeTriggerConfig }

interface Subscriber {
  readonly id: string
  topic: string
  readonly queue: FanOutQueue<unknown>
}

export interface SubscribeTriggerDeps {
  worker: Pick<LocalWorker, 'invoke'>
  log: Logger
  /** `internal_invocation_timeout_ms`: the budget of one delivery, condition plus handler. */
  timeoutMs: number
  /** Default: the system clock. */
  clock?: Clock
  /** Delivery spans `subscribe <topic> <function_id>` (builtins.md §12.7) go here. */
  telemetry?: TelemetryHub
}

/**
 * Validates a `subscribe` trigger config (§8).
 * @throws SvcError `INVALID_TRIGGER_CONFIG`: `topic is required for subscribe triggers` (missing,
 *   null or empty), `topic must be a string …`, `condition_function_id must be a non-empty string …`.
 * @example parseSubscribeTriggerConfig({ topic: 'orders' }) // { topic: 'orders' }
 */
export function parseSubscribeTriggerConfig(config: unknown): SubscribeTriggerConfig {
  if (config !== undefined && config !== null && (typeof config !== 'object' || Array.isArray(config))) {
    throw Errors.invalidTriggerConfig('config must be an object for subscribe triggers')
  }
  const source = (config ?? {}) as Record<string, unknown>
  const topic = source.topic
  if (topic === undefined || topic === null || topic === '') throw Errors.invalidTriggerConfig('topic is required for subscribe triggers')
  if (typeof topic !== 'string') throw Errors.invalidTriggerConfig('topic must be a string for subscribe triggers')
  const problem = topicProblem(topic)
  if (problem !== undefined) throw Errors.invalidTriggerConfig(`topic ${problem} for subscribe triggers`)
  const result: SubscribeTriggerConfig = { topic }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') {
      throw Errors.invalidTriggerConfig('condition_function_id must be a non-empty string for subscribe triggers')
    }
    result.condition_function_id = condition
  }
  return result
}

/**
 * Why a topic cannot be carried by every adapter, or undefined. A topic is text: one with a lone
 * UTF-16 surrogate has no UTF-8 form, so no Redis channel could carry it (the redis adapter would
 * accept the publish and never deliver it while the builtin one delivers it).
 * @example topicProblem('orders\ud800') // 'contains a lone UTF-16 surrogate at index 6'
 */
export function topicProblem(topic: string): string | undefined {
  if (topic.isWellFormed()) return undefined
  // With the `u` flag a surrogate range matches only surrogates that are not part of a pair.
  return `contains a lone UTF-16 surrogate at index ${/[\ud800-\udfff]/u.exec(topic)!.index}`
}

/**
 * Provider of the `subscribe` trigger type. The worker hands it the adapter in use
 * ({@link SubscribeTriggers.useAdapter}) and routes the adapter's messages to {@link SubscribeTriggers.deliver}.
 *
 * @example
 * const triggers = new SubscribeTriggers({ worker, log, timeoutMs: 30_000 })
 * const adapter = new MemoryPubSubAdapter({ onMessage: (topic, data, origin) => triggers.deliver(topic, data, origin) })
 * await triggers.useAdapter(adapter)
 * worker.registerTriggerType({ id: 'subscribe', description: '…' }, triggers)
 */
export class SubscribeTriggers implements LocalTriggerProvider {
  private readonly fanOut: OrderedFanOut<unknown>
  private readonly byId = new Map<string, Subscriber>()
  private readonly byTopic = new Map<string, Set<Subscriber>>()
  private readonly log: Logger
  private adapter: PubSubAdapter | null = null

  constructor(deps: SubscribeTriggerDeps) {
    const options: FanOutOptions = { worker: deps.worker, log: deps.log, timeoutMs: deps.timeoutMs, triggerType: 'subscribe', workerName: 'svc-pubsub' }
    if (deps.clock) options.clock = deps.clock
    if (deps.telemetry) options.telemetry = deps.telemetry
    this.fanOut = new OrderedFanOut(options)
    this.log = deps.log
  }

  /** Topics with at least one trigger. */
  get topics(): string[] {
    return [...this.byTopic.keys()]
  }

  /**
   * Subscribes every current topic on `adapter`, then routes later topic changes to it (§8: an
   * adapter change moves every subscription).
   * @throws the adapter's error when a subscription fails; the previous adapter stays in use.
   */
  async useAdapter(adapter: PubSubAdapter): Promise<void> {
    await Promise.all(this.topics.map((topic) => adapter.subscribe(topic)))
    this.adapter = adapter
    // Topics added while the subscriptions above were under way.
    await Promise.all(this.topics.map((topic) => adapter.subscribe(topic)))
  }

  async registerTrigger(binding: BindingInfo): Promise<void> {
    const config = parseSubscribeTriggerConfig(binding.config)
    const queue = this.fanOut.registerBinding(binding, config.condition_function_id, `subscribe ${config.topic} ${binding.function_id}`)
    // A known id is a replacement (protocol.md §5.5): it may have moved to another topic.
    const existing = this.byId.get(binding.id)
    if (existing?.topic === config.topic) return
    if (existing) this.unindex(existing)
    const subscriber: Subscriber = existing ?? { id: binding.id, topic: config.topic, queue }
    subscriber.topic = config.topic
    this.byId.set(binding.id, subscriber)
    await this.index(subscriber)
  }

  unregisterTrigger(binding: BindingInfo): void {
    const subscriber = this.byId.get(binding.id)
    if (!subscriber) return
    this.byId.delete(binding.id)
    this.unindex(subscriber)
    this.fanOut.unregister(binding.id)
  }

  /** Queues `data` for every trigger of `topic`; never blocks, never throws. */
  deliver(topic: string, data: unknown, origin?: PubSubOrigin): void {
    const subscribers = this.byTopic.get(topic)
    if (!subscribers) return
    for (const subscriber of subscribers) subscriber.queue.push(data, origin)
  }

  /** Drops every queued message; deliveries in flight finish without being logged. */
  stop(): void {
    this.fanOut.stop()
  }

  private async index(subscriber: Subscriber): Promise<void> {
    let set = this.byTopic.get(subscriber.topic)
    if (set) {
      set.add(subscriber)
      return
    }
    this.byTopic.set(subscriber.topic, (set = new Set([subscriber])))
    await this.adapter?.subscribe(subscriber.topic)
  }

  private unindex(subscriber: Subscriber): void {
    const set = this.byTopic.get(subscriber.topic)
    if (!set) return
    set.delete(subscriber)
    if (set.size > 0) return
    this.byTopic.delete(subscriber.topic)
    this.adapter?.unsubscribe(subscriber.topic).catch((error: unknown) => {
      this.log.warn(`svc-pubsub: unsubscribing topic ${subscriber.topic} failed`, { error: String(error) })
    })
  }
}

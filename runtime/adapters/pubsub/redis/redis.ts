/**
 * The `redis` pub/sub adapter (builtins.md §8, §13.4): a publish on any engine reaches the
 * `subscribe` triggers of every engine once, through Redis pub/sub on channel
 * `<prefix>pubsub:<topic>`.
 *
 * Two connections: one for PUBLISH, one in subscriber mode. The topics subscribed are kept here and
 * subscribed again on every reconnection, so a Redis restart loses only what was published while it
 * was away (§8: best effort). Messages carry `{d: data, t?: traceparent, b?: baggage}` as JSON.
 * When Redis is unreachable, `publish` fails with `ADAPTER_UNAVAILABLE` within
 * {@link CALL_TIMEOUT_MS}; opening never fails for that reason (a warning is logged).
 */
import type { Redis } from 'ioredis'
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { CALL_TIMEOUT_MS, connectRedis, redactRedisUrl, redisCallError, waitReady, type RedisConfig } from '../../redis.ts'
import type { PubSubAdapter, PubSubAdapterContext, PubSubOrigin } from '../types.ts'

interface Envelope {
  d?: unknown
  t?: string
  b?: string
}

/**
 * @example
 * const adapter = await RedisPubSubAdapter.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' }, { onMessage })
 * await adapter.subscribe('orders')
 * await adapter.publish('orders', { id: 1 }) // every engine subscribed to `orders` hears it
 */
export class RedisPubSubAdapter implements PubSubAdapter {
  private readonly publisher: Redis
  private readonly subscriber: Redis
  private readonly channelPrefix: string
  private readonly where: string
  private readonly context: PubSubAdapterContext
  private readonly topics = new Set<string>()
  /** Topics whose UNSUBSCRIBE awaits Redis's confirmation; they are delivered until it comes. */
  private readonly leaving = new Map<string, Promise<void>>()
  private closed = false

  /**
   * Connects both connections (waiting at most {@link CALL_TIMEOUT_MS}); resolves even when Redis
   * is unreachable, logging a warning, and keeps trying with backoff.
   */
  static async open(config: RedisConfig, context: PubSubAdapterContext): Promise<RedisPubSubAdapter> {
    const adapter = new RedisPubSubAdapter(config, context)
    const ready = await Promise.all([waitReady(adapter.publisher, CALL_TIMEOUT_MS), waitReady(adapter.subscriber, CALL_TIMEOUT_MS)])
    if (!ready.every(Boolean)) {
      context.log?.warn(`redis pub/sub adapter: ${adapter.where} is unreachable; publish fails with ADAPTER_UNAVAILABLE until it is back`, {
        url: adapter.where,
      })
    }
    return adapter
  }

  private constructor(config: RedisConfig, context: PubSubAdapterContext) {
    this.context = context
    this.where = redactRedisUrl(config.url)
    this.channelPrefix = `${config.key_prefix}pubsub:`
    this.publisher = connectRedis(config.url)
    this.subscriber = connectRedis(config.url, 'subscriber')
    this.subscriber.on('message', (channel: string, message: string) => this.receive(channel, message))
    this.subscriber.on('ready', () => {
      if (!this.closed && this.topics.size > 0) void this.subscriber.subscribe(...[...this.topics].map((t) => this.channel(t))).catch(() => {})
    })
  }

  async publish(topic: string, data: unknown, origin?: PubSubOrigin): Promise<void> {
    if (this.closed) throw Errors.adapterUnavailable('the redis pub/sub adapter is closed')
    const envelope: Envelope = {}
    if (data !== undefined) envelope.d = data
    if (origin?.traceparent !== undefined) envelope.t = origin.traceparent
    if (origin?.baggage !== undefined) envelope.b = origin.baggage
    try {
      await this.publisher.publish(this.channel(topic), JSON.stringify(envelope))
    } catch (error) {
      throw redisCallError(error, this.where, 'pubsub publish')
    }
  }

  async subscribe(topic: string): Promise<void> {
    // A subscribe while the same topic is being left waits for that to finish, then subscribes anew.
    const leaving = this.leaving.get(topic)
    if (leaving !== undefined) await leaving
    if (this.topics.has(topic)) return
    this.topics.add(topic)
    // While disconnected this fails; the 'ready' handler subscribes every topic again.
    if (this.subscriber.status === 'ready') await this.subscriber.subscribe(this.channel(topic)).catch(() => {})
  }

  /**
   * Stops delivering `topic` once Redis confirmed the UNSUBSCRIBE: messages published before it
   * reach this connection ahead of the confirmation and are still delivered (dropping the topic
   * first lost a message that was published, and acknowledged, while it was subscribed).
   */
  async unsubscribe(topic: string): Promise<void> {
    if (!this.topics.has(topic)) return
    const pending = this.leaving.get(topic)
    if (pending !== undefined) return pending
    const done = this.subscriber.status === 'ready' ? this.subscriber.unsubscribe(this.channel(topic)).then(() => {}, () => {}) : Promise.resolve()
    this.leaving.set(topic, done)
    await done
    this.leaving.delete(topic)
    this.topics.delete(topic)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.topics.clear()
    this.publisher.disconnect()
    this.subscriber.disconnect()
  }

  private channel(topic: string): string {
    return this.channelPrefix + topic
  }

  private receive(channel: string, message: string): void {
    if (this.closed || !channel.startsWith(this.channelPrefix)) return
    const topic = channel.slice(this.channelPrefix.length)
    if (!this.topics.has(topic)) return
    let envelope: Envelope
    try {
      envelope = jsonParse(message) as Envelope
    } catch {
      this.context.log?.warn('redis pub/sub adapter: ignored a message that is not JSON', { channel })
      return
    }
    const origin: PubSubOrigin = {}
    if (typeof envelope.t === 'string') origin.traceparent = envelope.t
    if (typeof envelope.b === 'string') origin.baggage = envelope.b
    this.context.onMessage(topic, envelope.d, origin)
  }
}

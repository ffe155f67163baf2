/**
 * The in-process pub/sub adapter (`builtin` and `memory`, builtins.md §13.1): a message reaches
 * the listener of the adapter it was published on, synchronously, when its topic is subscribed.
 */
import type { PubSubAdapter, PubSubAdapterContext, PubSubOrigin } from '../types.ts'

/**
 * @example
 * const adapter = new MemoryPubSubAdapter({ onMessage: (topic, data) => console.log(topic, data) })
 * await adapter.subscribe('orders')
 * await adapter.publish('orders', { id: 1 }) // logs: orders { id: 1 }
 */
export class MemoryPubSubAdapter implements PubSubAdapter {
  private readonly topics = new Set<string>()
  private readonly context: PubSubAdapterContext
  private closed = false

  constructor(context: PubSubAdapterContext) {
    this.context = context
  }

  async publish(topic: string, data: unknown, origin?: PubSubOrigin): Promise<void> {
    if (!this.closed && this.topics.has(topic)) this.context.onMessage(topic, data, origin)
  }

  async subscribe(topic: string): Promise<void> {
    this.topics.add(topic)
  }

  async unsubscribe(topic: string): Promise<void> {
    this.topics.delete(topic)
  }

  async close(): Promise<void> {
    this.closed = true
    this.topics.clear()
  }
}

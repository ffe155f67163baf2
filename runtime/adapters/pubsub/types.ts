/**
 * The storage seam of the pub/sub worker (builtins.md §8, §13.1): where a published message goes
 * between `publish` and the `subscribe` triggers. The adapter only carries messages; matching them
 * to triggers, conditions and delivery stay with the worker (runtime/workers/pubsub/).
 *
 * Contract:
 * - `publish` resolves once the message is handed over (in-process: at once; Redis: once the
 *   server accepted it). It never waits for a subscriber.
 * - Every message published through any adapter sharing the transport reaches `onMessage` of each
 *   adapter that has `subscribe`d its topic, at most once, with `data` decoded to the same JSON value.
 * - No persistence, no retries, no ordering guarantee between topics.
 * - Topics are well-formed text (the worker refuses one with a lone UTF-16 surrogate: it has no
 *   UTF-8 form, so no Redis channel carries it); matching is exact, pattern characters are text.
 *
 * Every adapter passes the conformance suite (./conformance.ts).
 */

/** Trace context of the publish a message comes from (protocol.md §10.1). */
export interface PubSubOrigin {
  traceparent?: string | undefined
  baggage?: string | undefined
}

/** Receives each message of a subscribed topic. Must not throw; must not block (queue and return). */
export type PubSubListener = (topic: string, data: unknown, origin?: PubSubOrigin) => void

export interface PubSubAdapter {
  /**
   * Hands a message to the transport.
   * @throws SvcError `ADAPTER_UNAVAILABLE` when the transport (Redis) cannot take it.
   */
  publish(topic: string, data: unknown, origin?: PubSubOrigin): Promise<void>
  /** Starts receiving the messages of `topic`; idempotent. */
  subscribe(topic: string): Promise<void>
  /** Stops receiving `topic`; idempotent. */
  unsubscribe(topic: string): Promise<void>
  /** Releases connections; later calls fail. */
  close(): Promise<void>
}

/** What an adapter is opened with. */
export interface PubSubAdapterContext {
  onMessage: PubSubListener
  log?: { warn(message: string, data?: Record<string, unknown>): void }
}

/**
 * Function and trigger payloads of the pub/sub worker (`svc-pubsub`, builtins.md §8): best-effort
 * fan-out. Types only.
 *
 * @example
 * await client.trigger<PublishInput>({ function_id: 'publish', payload: { topic: 'orders', data: order } })
 * client.registerTrigger<SubscribeTriggerConfig>({ type: 'subscribe', function_id: 'mail::on-order', config: { topic: 'orders' } })
 */
import type { JsonValue } from '../messages.ts'

/** `publish` input; it answers no result once the message is handed to the adapter. */
export interface PublishInput<T = JsonValue> {
  /** Exact, case-sensitive, no wildcards; empty fails with `topic_not_set`. */
  topic: string
  /** Delivered unchanged (the topic is not added) to every `subscribe` trigger of `topic`. */
  data: T
}

/**
 * `config` of a `subscribe` trigger (§8). The handler receives the published `data` unchanged as
 * its payload.
 */
export interface SubscribeTriggerConfig {
  /** Exact, case-sensitive topic; non-empty (an empty one is refused with `INVALID_TRIGGER_CONFIG`). */
  topic: string
  /** Function deciding per message; only a `false` result skips it (builtins.md §2.2). */
  condition_function_id?: string
}

/**
 * Function payloads of the queue worker (`queue`, builtins.md §7): durable publish, named queues,
 * their dead letter queues (DLQ) and the engine's enqueue call. Types only. Times are Unix
 * milliseconds.
 *
 * @example
 * import type { DurablePublishInput, DurablePublishResult } from 'svc-protocol'
 * const { subscriber_count } = await client.trigger<DurablePublishInput, DurablePublishResult>({
 *   function_id: 'svc::durable::publish', payload: { topic: 'orders.created', data: order },
 * })
 */
import type { JsonValue } from '../messages.ts'

/** `svc::durable::publish` input (§7.5); `queue` is accepted for `topic`. */
export interface DurablePublishInput<T = JsonValue> {
  topic: string
  data: T
}

/** `svc::durable::publish` result: the subscriber queues the copy went to (0: kept in the topic's DLQ). */
export interface DurablePublishResult {
  subscriber_count: number
}

/** `queue::define` input (§7.3): a named queue and its settings (§7.1 keys). */
export interface QueueDefineInput {
  queue: string
  config: Record<string, JsonValue>
}

/** `queue::define` result; `changed` is false when identical settings already existed. */
export interface QueueDefineResult {
  queue: string
  changed: boolean
}

/** `svc::queue::redrive` input (§7.3); `topic` is accepted for `queue`. */
export interface QueueRedriveInput {
  queue: string
}

/** `svc::queue::redrive` result: the messages moved back to pending. */
export interface QueueRedriveResult {
  queue: string
  redriven: number
}

/** `svc::queue::redrive_message` and `svc::queue::discard_message` input. */
export interface QueueMessageRef {
  queue: string
  message_id: string
}

/** `svc::queue::redrive_message` result: `redriven` 1 when the message was found in the DLQ. */
export interface QueueRedriveMessageResult {
  queue: string
  message_id: string
  redriven: 0 | 1
}

/** `svc::queue::discard_message` result: `discarded` 1 when the message was found and deleted. */
export interface QueueDiscardMessageResult {
  queue: string
  message_id: string
  discarded: 0 | 1
}

/** A named queue, a durable subscriber's queue (`<topic>::<function_id>[@ns]`) or a topic (§7.2). */
export type QueueKind = 'queue' | 'subscriber' | 'topic'

/** An entry of `engine::queue::list_topics` (§7.3); `broker_type` is the adapter's name. */
export interface QueueTopic {
  name: string
  kind: QueueKind
  broker_type: string
  subscriber_count: number
  /** Pending and delayed messages. */
  depth: number
  dlq_depth: number
}

/** A subscriber of a topic in `engine::queue::topic_stats`. */
export interface QueueTopicSubscriber {
  function_id: string
  namespace: string
  queue: string
  /** A trigger for it is registered now. */
  online: boolean
  depth: number
  in_flight: number
  dlq_depth: number
}

/** `engine::queue::topic_stats {topic}` result (§7.3); `subscribers` for topics only. */
export interface QueueTopicStats {
  name: string
  kind: QueueKind
  depth: number
  delayed: number
  in_flight: number
  dlq_depth: number
  consumer_count: number
  /** Deliveries that succeeded since the engine started. */
  delivered: number
  /** Messages dead-lettered since the engine started. */
  failed: number
  /** The queue's settings (a topic: `subscriber_defaults`); null when none. */
  config: Record<string, unknown> | null
  subscribers?: QueueTopicSubscriber[]
}

/** An entry of `engine::queue::dlq_topics` (non-empty DLQs only). */
export interface DlqTopic {
  topic: string
  kind: QueueKind
  broker_type: string
  message_count: number
}

/** `engine::queue::dlq_messages` input; `queue` is accepted for `topic`; `limit` ≤ 1000. */
export interface DlqMessagesInput {
  topic: string
  /** Default 0. */
  offset?: number
  /** Default 50. */
  limit?: number
}

/** A dead-lettered message (§7.3), as `engine::queue::dlq_messages` lists them, most recently failed first. */
export interface DlqMessage {
  /** UUID v4: the receipt id of an Enqueue, or the id of one subscriber's copy. */
  id: string
  queue: string
  function_id: string
  namespace: string
  payload: unknown
  /** The last error (`no_subscribers`, `subscriber_expired`, a handler's error…). */
  error: { code: string; message: string; stacktrace?: string } | null
  attempts: number
  /** `attempts − 1`. */
  retries: number
  enqueued_at: number
  failed_at: number
  size_bytes: number
}

/** `engine::queue::enqueue` input: the provider call the engine makes for an Enqueue action (§7.4). */
export interface QueueEnqueueInput<T = JsonValue> {
  queue: string
  function_id: string
  data: T
  messageReceiptId: string
  /** Only when the target namespace is not `default`. */
  namespace?: string
  metadata?: JsonValue
  traceparent?: string
  baggage?: string
  /** First delivery not before now + `delay_ms` (at most 7 days). */
  delay_ms?: number
  idempotency_key?: string
}

/** `engine::queue::enqueue` result, and the invocation result of an Enqueue action (§7.4). */
export interface QueueEnqueueResult {
  messageReceiptId: string
}

/**
 * Request and result schemas of the queue worker's functions and trigger types (builtins.md §7.3,
 * §7.4, §7.6): registered with them, reported by `engine::functions::info` and in
 * docs/reference/functions.md. Registration-time data only.
 */
import type { FormatSchema } from 'svc-protocol'
import { MAX_DELAY_MS } from './settings.ts'
import { QUEUE_SETTINGS } from './descriptor.ts'

const STRING = { type: 'string' } as const
const COUNT = { type: 'integer', minimum: 0 } as const
const QUEUE = { type: 'string', description: 'a named queue, a subscriber queue or a topic (all its subscriber queues); `topic` accepted' } as const
const TOPIC = { type: 'string', description: 'a topic, named queue or subscriber queue; `queue` accepted' } as const
const MESSAGE_ID = { type: 'string', description: 'id of a dead-lettered message (UUID)' } as const
const KIND = { type: 'string', enum: ['queue', 'subscriber', 'topic'], description: 'queue: named queue; subscriber: subscriber queue; topic: a topic' } as const
const BROKER_TYPE = { type: 'string', description: 'the adapter name' } as const

function object(properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}): FormatSchema {
  return { type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...extra }
}

/** A message of a dead letter queue (§7.3). Times are Unix milliseconds. */
export const DLQ_MESSAGE = object(
  {
    id: STRING,
    queue: STRING,
    function_id: STRING,
    namespace: STRING,
    payload: { description: 'the message data' },
    error: object({ code: STRING, message: STRING }, ['code', 'message'], { description: 'the last error' }),
    attempts: COUNT,
    retries: { ...COUNT, description: 'attempts − 1' },
    enqueued_at: { type: 'integer', description: 'Unix ms' },
    failed_at: { type: 'integer', description: 'Unix ms' },
    size_bytes: COUNT,
  },
  ['id', 'queue', 'function_id', 'namespace', 'payload', 'error', 'attempts', 'retries', 'enqueued_at', 'failed_at', 'size_bytes'],
)

/** Config of a `durable:subscriber` (or `queue`) trigger (§7.6). */
export const SUBSCRIBER_TRIGGER_CONFIG = object(
  {
    topic: { type: 'string', minLength: 1, description: '`queue` accepted as alias' },
    condition_function_id: { type: 'string', description: 'evaluated per message (§2.2)' },
    queue_config: { ...QUEUE_SETTINGS, description: 'queue settings of this subscriber (§7.1 keys); camelCase maxRetries, backoffDelayMs, maxBackoffMs, deliveryTimeoutMs, messageGroupField accepted' },
    max_retries: { ...QUEUE_SETTINGS.properties!.max_retries, description: 'shortcut for queue_config.max_retries (maxRetries accepted)' },
    backoff_ms: { ...QUEUE_SETTINGS.properties!.backoff_ms, description: 'shortcut for queue_config.backoff_ms (backoffDelayMs accepted)' },
  },
  ['topic'],
)

/** Payload of a subscriber's function: the published data itself (§7.6). */
export const SUBSCRIBER_PAYLOAD: FormatSchema = {
  description: 'the published data, unchanged, with no envelope; baggage carries svc.queue.name, svc.queue.message_id and svc.queue.attempt (1-based)',
}

/** Request and result of each function of §7.3, by id. */
export const QUEUE_FUNCTION_FORMATS: Record<string, { request_format: FormatSchema; response_format: FormatSchema }> = {
  'svc::durable::publish': {
    request_format: object({ topic: { type: 'string', minLength: 1, description: '`queue` accepted' }, data: { description: 'copied to every subscriber' } }, ['topic']),
    response_format: object({ subscriber_count: { ...COUNT, description: '0: the message went to the topic DLQ with no_subscribers' } }, ['subscriber_count']),
  },
  'queue::define': {
    request_format: object({ queue: { type: 'string', pattern: '^[A-Za-z0-9_.:-]{1,128}$' }, config: { ...QUEUE_SETTINGS, default: {} } }, ['queue']),
    response_format: object({ queue: STRING, changed: { type: 'boolean', description: 'false when identical settings already existed' } }, ['queue', 'changed']),
  },
  'svc::queue::redrive': {
    request_format: object({ queue: QUEUE }, ['queue']),
    response_format: object({ queue: STRING, redriven: { ...COUNT, description: 'messages moved back to pending' } }, ['queue', 'redriven']),
  },
  'svc::queue::redrive_message': {
    request_format: object({ queue: QUEUE, message_id: MESSAGE_ID }, ['queue', 'message_id']),
    response_format: object({ queue: STRING, message_id: STRING, redriven: { type: 'integer', enum: [0, 1] } }, ['queue', 'message_id', 'redriven']),
  },
  'svc::queue::discard_message': {
    request_format: object({ queue: QUEUE, message_id: MESSAGE_ID }, ['queue', 'message_id']),
    response_format: object({ queue: STRING, message_id: STRING, discarded: { type: 'integer', enum: [0, 1] } }, ['queue', 'message_id', 'discarded']),
  },
  'engine::queue::list_topics': {
    request_format: object({}),
    response_format: {
      type: 'array',
      items: object(
        { name: STRING, kind: KIND, broker_type: BROKER_TYPE, subscriber_count: { ...COUNT, description: 'topics only, else 0' }, depth: { ...COUNT, description: 'pending and delayed' }, dlq_depth: COUNT },
        ['name', 'kind', 'broker_type', 'subscriber_count', 'depth', 'dlq_depth'],
      ),
    },
  },
  'engine::queue::topic_stats': {
    request_format: object({ topic: TOPIC }, ['topic']),
    response_format: object(
      {
        name: STRING,
        kind: KIND,
        depth: { ...COUNT, description: 'pending and delayed' },
        delayed: COUNT,
        in_flight: { ...COUNT, description: 'running attempts' },
        dlq_depth: COUNT,
        consumer_count: COUNT,
        delivered: COUNT,
        failed: COUNT,
        config: { ...QUEUE_SETTINGS, description: 'the queue settings in effect (subscriber_defaults for a topic)' },
        subscribers: {
          type: 'array',
          description: 'topics only',
          items: object(
            { function_id: STRING, namespace: STRING, queue: STRING, online: { type: 'boolean' }, depth: COUNT, in_flight: COUNT, dlq_depth: COUNT },
            ['function_id', 'namespace', 'queue', 'online', 'depth', 'in_flight', 'dlq_depth'],
          ),
        },
      },
      ['name', 'kind', 'depth', 'delayed', 'in_flight', 'dlq_depth', 'consumer_count', 'delivered', 'failed', 'config'],
    ),
  },
  'engine::queue::dlq_topics': {
    request_format: object({}),
    response_format: {
      type: 'array',
      description: 'non-empty DLQs only',
      items: object({ topic: STRING, kind: KIND, broker_type: BROKER_TYPE, message_count: COUNT }, ['topic', 'kind', 'broker_type', 'message_count']),
    },
  },
  'engine::queue::dlq_messages': {
    request_format: object({ topic: TOPIC, offset: { ...COUNT, default: 0 }, limit: { type: 'integer', minimum: 0, maximum: 1000, default: 50 } }, ['topic']),
    response_format: { type: 'array', items: DLQ_MESSAGE, description: 'most recently failed first' },
  },
  'engine::queue::enqueue': {
    request_format: object(
      {
        queue: STRING,
        function_id: STRING,
        data: {},
        messageReceiptId: { type: 'string', description: 'created by the engine (UUID v4)' },
        namespace: { type: 'string', description: 'only when not default' },
        metadata: {},
        traceparent: STRING,
        baggage: STRING,
        delay_ms: { type: 'integer', minimum: 0, maximum: MAX_DELAY_MS, description: 'first delivery not before now + delay_ms' },
        idempotency_key: { type: 'string', minLength: 1, maxLength: 256 },
      },
      ['queue', 'function_id'],
      { description: 'provider call of the Enqueue action (§7.4); callers use the action' },
    ),
    response_format: object({ messageReceiptId: STRING }, ['messageReceiptId']),
  },
}

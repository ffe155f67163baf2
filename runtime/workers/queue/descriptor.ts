/** Descriptor of the queue worker (builtins.md §7). */
import { adapterEntrySchema, type BuiltinDescriptor, type JsonSchema } from '../descriptor.ts'
import { notReservedPattern } from '../shared/names.ts'

/** Settings of one queue (builtins.md §7.1). */
export const QUEUE_SETTINGS: JsonSchema = {
  type: 'object',
  properties: {
    type: { type: 'string', enum: ['standard', 'fifo'], default: 'standard' },
    message_group_field: { type: 'string', minLength: 1, description: 'required for fifo: top-level field of the message data holding the group' },
    max_retries: { type: 'integer', minimum: 0, maximum: 1000, default: 3, description: 'retries after the first attempt' },
    backoff_ms: { type: 'integer', minimum: 0, maximum: 3600000, default: 1000, description: 'delay before retry n is backoff_ms × 2^(n−1)' },
    max_backoff_ms: { type: 'integer', minimum: 0, default: 3600000, description: 'cap of a single retry delay' },
    concurrency: { type: 'integer', minimum: 1, maximum: 1024, default: 10, description: 'deliveries in flight at once (per engine)' },
    delivery_timeout_ms: { type: 'integer', minimum: 1000, maximum: 86400000, default: 900000, description: 'an attempt not finished in time counts as failed' },
    concurrency_key_field: { type: 'string', minLength: 1, description: 'standard only: at most one attempt per distinct value in flight' },
  },
}

/**
 * The queue worker's `adapter` entry: the common one (builtins.md §2.9) plus `lease_ms` and
 * `prefetch` of the redis backend (runtime/adapters/queue/redis/config.ts) and `synchronous` of
 * the builtin one (runtime/adapters/queue/sqlite/sqlite.ts).
 */
function queueAdapterSchema(): JsonSchema {
  const description = 'builtin: SQLite queue.db; memory: in-process; redis: one store for every engine on the same Redis and key_prefix (leases, wake-ups)'
  const entry = adapterEntrySchema(['builtin', 'memory', 'redis'], description) as { properties: { config: { properties: Record<string, JsonSchema> } } }
  entry.properties.config.properties.lease_ms = {
    type: 'integer',
    minimum: 1000,
    maximum: 3600000,
    default: 30000,
    description: 'redis: ms an engine holds a message it delivers before another engine may take it back (renewed every third of it while delivering)',
  }
  entry.properties.config.properties.prefetch = {
    type: 'integer',
    minimum: 0,
    maximum: 1024,
    description:
      "redis: messages per queue reserved ahead of the free slots (each counts its attempt and holds its lease while it waits), so that a slot that frees starts the next one without a Redis round trip; capped at the queue's concurrency; 0 turns it off; default: the queue's concurrency",
  }
  entry.properties.config.properties.synchronous = {
    type: 'string',
    enum: ['full', 'normal'],
    default: 'full',
    description:
      'builtin: full waits for the disk at every commit that answers a caller (an answered enqueue survives a power loss; attempt starts and acks survive an engine crash or kill); normal, opt-in, skips that wait for every commit (a power loss may lose the last commits)',
  }
  return entry as JsonSchema
}

export const QUEUE_DESCRIPTOR = {
  name: 'queue',
  aliases: [],
  mode: 'default',
  engineName: 'queue',
  title: 'Queue',
  description: 'Named queues and durable publish/subscribe, delivered at least once',
  spec: 'builtins.md §7',
  disabledEffect: 'its functions and triggers are unavailable',
  configurationId: 'queue',
  settingsSource: 'seed',
  settings: {
    type: 'object',
    properties: {
      adapter: queueAdapterSchema(),
      queue_configs: {
        type: 'object',
        default: {},
        description: 'named queues usable with Enqueue; names match [A-Za-z0-9_.:-]{1,128}, except __proto__, constructor and prototype',
        propertyNames: { pattern: notReservedPattern('^[A-Za-z0-9_.:-]{1,128}$') },
        additionalProperties: QUEUE_SETTINGS,
      },
      subscriber_defaults: { ...QUEUE_SETTINGS, description: 'used for durable:subscriber queues without their own settings' },
      subscriber_retention_ms: {
        type: 'integer',
        minimum: 0,
        default: 604800000,
        description: 'how long a subscriber with no live trigger is remembered; 0 forever',
      },
      idempotency_window_ms: {
        type: 'integer',
        minimum: 0,
        default: 86400000,
        description: 'how long an Enqueue idempotency_key is remembered per queue (§7.4 extension)',
      },
    },
  },
  adapters: ['builtin', 'memory', 'redis'],
  functions: ['svc::durable::publish', 'svc::queue::*', 'queue::define', 'engine::queue::*'],
  triggerTypes: ['durable:subscriber', 'queue'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 5,
} as const satisfies BuiltinDescriptor

/**
 * Queues declared from code: {@link defineQueue}, over the queue worker's `queue::define`
 * function (builtins.md §7.3), with the settings of a named queue typed (builtins.md §7.1).
 */
import type { SvcClient } from './types.ts'

/** Settings every named queue takes (builtins.md §7.1); a key left out keeps its default. */
interface CommonQueueSettings {
  /** Retries after the first attempt, 0–1000 (default 3): a message is attempted at most `max_retries + 1` times, then moved to the queue's dead letter queue. */
  max_retries?: number
  /** Delay before retry n is `backoff_ms × 2^(n−1)`, ms, 0–3 600 000 (default 1000). */
  backoff_ms?: number
  /** Cap of one retry delay, ms, ≥ 0 (default 3 600 000). */
  max_backoff_ms?: number
  /** Deliveries in flight at once, per engine, 1–1024 (default 10). */
  concurrency?: number
  /** An attempt not finished within this many ms fails with `TIMEOUT`, 1000–86 400 000 (default 900 000, 15 min). */
  delivery_timeout_ms?: number
}

/** A `standard` queue: attempts start oldest-ready first and finish in any order. */
export interface StandardQueueSettings extends CommonQueueSettings {
  type?: 'standard'
  /** Top-level field of the message data: at most one attempt per distinct value is in flight at once. */
  concurrency_key_field?: string
}

/**
 * A `fifo` queue: at most one attempt per group at a time, in enqueue order; a failing message is
 * retried in place and holds its group until it succeeds or is dead-lettered.
 */
export interface FifoQueueSettings extends CommonQueueSettings {
  type: 'fifo'
  /** Top-level field of the message data holding the group (a non-empty string or a number). */
  message_group_field: string
}

/** The settings of a named queue, as under `queue_configs` of config.yaml (builtins.md §7.1). */
export type QueueSettings = StandardQueueSettings | FifoQueueSettings

/** Result of {@link defineQueue}. */
export interface DefineQueueResult {
  queue: string
  /** False when the queue already had exactly these settings. */
  changed: boolean
}

/**
 * Declares the named queue `name` with `settings`, or changes its settings, through the queue
 * worker's `queue::define` (builtins.md §7.3): the settings are validated, written into
 * `queue_configs` of the queue worker's configuration entry and applied before the promise
 * resolves, so the queue takes `TriggerAction.Enqueue({ queue: name })` at once. Idempotent: a
 * worker may call it on every start (`changed` is false when nothing changed). It writes the queue
 * worker's settings entry, the one the `queue` block of config.yaml seeds, as `configuration::set`
 * would.
 *
 * @param client a connected (or connecting) client; the call waits for the connection.
 * @param name the queue name: 1 to 128 characters of `A-Z a-z 0-9 _ . : -`.
 * @param settings keys left out keep their defaults (`{}`: a standard queue with every default).
 * @throws InvocationError `invalid_queue_config` for a name or settings the queue worker refuses
 *   (its message names the key), `queue_not_set` for an empty name, `function_not_found` when the
 *   queue worker is disabled, `TIMEOUT` after the client's `invocationTimeoutMs`.
 *
 * @example
 * import { defineQueue, registerWorker, TriggerAction } from 'svc-sdk'
 *
 * const client = registerWorker()
 * client.registerFunction('mail::send', async (msg: { to: string }) => send(msg))
 * await defineQueue(client, 'emails', { max_retries: 5, backoff_ms: 2000, concurrency: 4 })
 * await defineQueue(client, 'payments', { type: 'fifo', message_group_field: 'account_id' })
 * await client.trigger({ function_id: 'mail::send', payload: { to: 'ada@example.com' }, action: TriggerAction.Enqueue({ queue: 'emails' }) })
 */
export function defineQueue(client: Pick<SvcClient, 'trigger'>, name: string, settings: QueueSettings = {}): Promise<DefineQueueResult> {
  return client.trigger<{ queue: string; config: QueueSettings }, DefineQueueResult>({ function_id: 'queue::define', payload: { queue: name, config: settings } })
}

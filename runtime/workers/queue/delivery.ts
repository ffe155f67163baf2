/**
 * One delivery attempt of a queue message (builtins.md §7.6, §7.7): the `svc.queue.*` baggage
 * entries, the optional condition, the handler call bounded by `delivery_timeout_ms`, and the
 * decision that follows from its outcome.
 */
import type { ErrorBody } from 'svc-protocol/errors'
import { Codes } from 'svc-protocol/errors'
import type { QueueMessage } from '../../adapters/queue/index.ts'
import { backoffDelay, type QueueSettings } from './settings.ts'

/** Longest delay a message may ask for (`delay_ms`, `retry_after_ms`): 7 days. */
export const MAX_DELAY_MS = 604_800_000

/**
 * The W3C baggage of a delivery: `svc.queue.name`, `svc.queue.message_id`, `svc.queue.attempt`
 * (1-based) added to the stored baggage, replacing earlier `svc.queue.*` entries.
 * @example queueBaggage(undefined, 'emails', 'id-1', 2) // 'svc.queue.name=emails,svc.queue.message_id=id-1,svc.queue.attempt=2'
 */
export function queueBaggage(stored: string | undefined, queue: string, messageId: string, attempt: number): string {
  const own = `svc.queue.name=${encodeURIComponent(queue)},svc.queue.message_id=${messageId},svc.queue.attempt=${attempt}`
  if (stored === undefined || stored === '') return own
  const kept = stored
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && !s.startsWith('svc.queue.'))
  return kept.length === 0 ? own : `${kept.join(',')},${own}`
}

/** What to do with a message after an attempt. */
export type Verdict =
  | { kind: 'ack' }
  /** The target is not registered: back to pending without using the attempt. */
  | { kind: 'wait' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'dead'; error: ErrorBody }

/**
 * Decides the fate of a message from the error of its attempt (undefined: success), §7.7.
 * `handlerNotFound` is true when the handler call itself answered `function_not_found`.
 */
export function verdictOf(message: QueueMessage, settings: QueueSettings, error: ErrorBody | undefined, handlerNotFound: boolean): Verdict {
  if (error === undefined) return { kind: 'ack' }
  if (handlerNotFound) return { kind: 'wait' }
  if (error.code === Codes.NonRetryable) return { kind: 'dead', error }
  if (message.attempts > settings.max_retries) return { kind: 'dead', error }
  const retryAfter = error.retry_after_ms
  if (typeof retryAfter === 'number') return { kind: 'retry', delayMs: Math.min(Math.max(0, Math.round(retryAfter)), MAX_DELAY_MS) }
  return { kind: 'retry', delayMs: backoffDelay(settings, message.attempts) }
}

/**
 * Builders of the routing action of an invocation (sdk.md §6, protocol.md §6.3–§6.4).
 */
import type { TriggerActionValue } from '../messages.ts'

const VOID: { type: 'void' } = Object.freeze({ type: 'void' as const }) as { type: 'void' }

/**
 * @example
 * await client.trigger({ function_id: 'audit::record', payload: event, action: TriggerAction.Void() })
 * const { messageReceiptId } = await client.trigger({
 *   function_id: 'billing::charge', payload: order, action: TriggerAction.Enqueue({ queue: 'payments' }),
 * })
 */
export const TriggerAction = {
  /** Fire and forget: no reply, errors are never reported; `trigger` resolves at once with undefined. */
  Void(): { type: 'void' } {
    return VOID
  },
  /**
   * Hand the call to the queue worker; `trigger` resolves with `{messageReceiptId}` once the message
   * is persisted. `delayMs` and `idempotencyKey` travel as `delay_ms` and `idempotency_key`.
   */
  Enqueue(opts: { queue: string; delayMs?: number; idempotencyKey?: string }): Extract<
    TriggerActionValue,
    { type: 'enqueue' }
  > {
    const action: Extract<TriggerActionValue, { type: 'enqueue' }> = { type: 'enqueue', queue: opts.queue }
    if (opts.delayMs !== undefined) action.delay_ms = opts.delayMs
    if (opts.idempotencyKey !== undefined) action.idempotency_key = opts.idempotencyKey
    return action
  },
} as const

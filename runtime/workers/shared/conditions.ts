/**
 * Trigger conditions (builtins.md §2.2, protocol.md §8.6): the `condition_function_id` a binding
 * may name is invoked before each handler call; its outcome decides whether the handler runs.
 *
 * - The condition receives exactly the handler's payload (HTTP: the request object without its
 *   channel references) and the binding's metadata as second argument (§2.3).
 * - It is resolved in the binding's namespace (§2.4, with the engine's fallback to `default`).
 * - Only the JSON boolean `false` skips the handler; `true`, no result, `null`, `0`, `""`, objects
 *   let it run.
 * - A failed call (its own error, `TIMEOUT`, `function_not_found`) skips the handler too; the
 *   outcome carries the error so that each trigger type reports it its own way (HTTP 500 with the
 *   code, a queue delivery counted as failed, a log line for reactive types).
 */
import { errorBodyOf, type ErrorBody } from 'svc-protocol/errors'
import type { LocalInvokeRequest, LocalWorker } from '../../engine/types.ts'

/** The outcome of one condition call. */
export type ConditionOutcome =
  /** The handler runs. */
  | { readonly run: true }
  /** The condition returned exactly `false`. */
  | { readonly run: false; readonly failed: false }
  /** The condition call failed; `error` is what `invoke` rejected with, `body` its wire form. */
  | { readonly run: false; readonly failed: true; readonly error: unknown; readonly body: ErrorBody }

/** What a condition needs from its binding (protocol.md §8.3 binding fields). */
export interface ConditionBinding {
  /** `config.condition_function_id` of the binding; undefined, null or `""` means no condition. */
  condition_function_id?: string | null | undefined
  /** The binding's target namespace. */
  namespace: string
  /** The binding's metadata; sent as the second argument, omitted when undefined or null (§2.3). */
  metadata?: unknown
}

/** Per-call options of a condition. */
export interface ConditionCall {
  /** Bound of the condition call in ms (the engine fails it with `TIMEOUT` after that). */
  timeoutMs: number
  /** Trace context of the event or request, passed through so the call is its child (§2.5 rule 7). */
  traceparent?: string
  baggage?: string
}

/** A compiled condition: call it with the handler's payload. Never rejects. */
export type Condition = (payload: unknown, call: ConditionCall) => Promise<ConditionOutcome>

const RUN: ConditionOutcome = Object.freeze({ run: true })
const SKIPPED: ConditionOutcome = Object.freeze({ run: false, failed: false })

/**
 * Compiles the condition of a binding, once, at registration. Returns null when the binding has
 * none, so callers skip the extra step without an await.
 *
 * @example
 * const condition = createCondition(worker, { condition_function_id: 'orders::is-paid', namespace: 'shop', metadata })
 * if (condition) {
 *   const outcome = await condition(event, { timeoutMs: 30_000 })
 *   if (!outcome.run) return outcome.failed ? log.error(outcome.body.message) : undefined
 * }
 */
export function createCondition(worker: Pick<LocalWorker, 'invoke'>, binding: ConditionBinding): Condition | null {
  const functionId = binding.condition_function_id
  if (functionId === undefined || functionId === null || functionId === '') return null
  const namespace = binding.namespace
  const metadata = binding.metadata === null ? undefined : binding.metadata
  return async (payload, call) => {
    const request: LocalInvokeRequest = { function_id: functionId, data: payload, namespace, timeoutMs: call.timeoutMs }
    if (metadata !== undefined) request.metadata = metadata
    if (call.traceparent !== undefined) request.traceparent = call.traceparent
    if (call.baggage !== undefined) request.baggage = call.baggage
    try {
      return (await worker.invoke(request)) === false ? SKIPPED : RUN
    } catch (error) {
      return { run: false, failed: true, error, body: errorBodyOf(error) }
    }
  }
}

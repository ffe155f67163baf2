/**
 * The context a handler runs with (its third argument, {@link HandlerContext}): the invocation's
 * id and its cancellation (svc addition, docs/reference/protocol.md "cancelinvocation"). The
 * session keeps one per running invocation, by the id the engine sent, so a `cancelinvocation`
 * frame finds it; its `AbortSignal` is made on first use, as most handlers never look at it.
 */
import { Codes, Errors } from '../errors.ts'
import { InvocationError, invocationError } from './errors.ts'
import type { HandlerContext } from './types.ts'

export class HandlerRun implements HandlerContext {
  readonly invocationId: string
  readonly functionId: string
  /** True once cancelled: the handler's answer is not sent (the engine no longer waits for it). */
  cancelled = false
  #controller: AbortController | undefined = undefined
  #reason: InvocationError | undefined = undefined

  constructor(invocationId: string, functionId: string) {
    this.invocationId = invocationId
    this.functionId = functionId
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      if (this.#reason !== undefined) return AbortSignal.abort(this.#reason)
      this.#controller = new AbortController()
    }
    return this.#controller.signal
  }

  /** Cancels the run: its signal aborts with an `InvocationError` `cancelled` carrying `reason`. */
  abort(reason: string | undefined): void {
    if (this.cancelled) return
    this.cancelled = true
    this.#reason = invocationError(Errors.cancelled(reason), this.functionId)
    this.#controller?.abort(this.#reason)
  }
}

/**
 * The reason text of an aborted signal, for `cancelinvocation`: a string as it is, the canceller's
 * own reason of a `cancelled` error (a handler's signal passed on to its calls), another error's
 * message; none for a bare `AbortError` (`controller.abort()` without a reason).
 */
export function abortReason(signal: AbortSignal): string | undefined {
  const reason: unknown = signal.reason
  if (typeof reason === 'string') return reason
  if (reason instanceof InvocationError && reason.code === Codes.Cancelled) {
    const own = reason.detail.replace(/^Invocation cancelled(: )?/, '')
    return own === '' ? undefined : own
  }
  if (reason instanceof Error && reason.name !== 'AbortError') return reason.message
  return undefined
}

/**
 * One invocation as it moves through the pipeline (protocol.md §6) and the {@link Reply} its
 * outcome goes to: the data every stage, callee and interceptor shares. Imports no engine module
 * but the access rules and the peer, so callees and registries can name it without a circle.
 */
import type { ErrorBody, JsonInput, TriggerActionValue } from 'svc-protocol'
import type { AccessPolicy } from './access/policy.ts'
import type { Peer } from './peer.ts'

/** Where an invocation's outcome goes (the deliver stage). Exactly one method is called, once. */
export interface Reply {
  /** The callee answered; `value` undefined (or JSON `null`) means no result (§5.9). */
  result(value: JsonInput | undefined): void
  error(error: ErrorBody): void
}

/**
 * The cancellation side of an invocation (implemented by `Flight`, flights.ts): what the dispatch
 * stage and the callees use of it.
 */
export interface InvocationFlight extends Reply {
  /** Engine-assigned id (UUID v4); a leg to a remote worker uses it as its invocation id. */
  readonly id: string
  /** Set by the callee at dispatch: stops the call's work, and makes sure it delivers nothing afterwards. */
  stop: ((reason: string | undefined) => void) | undefined
  /** Dispatch: who serves the call, the reply its callee answers (after the interceptors), its trace context. */
  dispatched(worker: Peer, outer: Reply, traceparent: string | undefined): void
}

/** One invocation as it moves through the pipeline. Stages may rewrite the mutable fields. */
export interface Invocation {
  /** The id the caller asked for; relayed results carry it (§6.2 step 3). */
  readonly requestedId: string
  /** The id to resolve. */
  functionId: string
  /** Namespace to resolve in (`default` when the caller named none). */
  namespace: string
  /** The payload: the caller's text for remote calls ({@link RawJson}), a value for in-process ones. */
  data: JsonInput
  metadata?: JsonInput
  action?: TriggerActionValue
  traceparent?: string
  baggage?: string
  /** The calling worker (a remote session or a built-in); null for the engine itself. */
  readonly caller: Peer | null
  /** The caller's access rules; {@link PERMISSIVE} for built-ins and the engine. */
  readonly access: AccessPolicy
  /** Engine-originated calls time out in the engine (§6.5); undefined: no engine timeout. */
  timeoutMs?: number
  reply: Reply
  /**
   * Served for another engine of the fleet: only this engine's own replicas may take it (the
   * caller's engine already chose this one; issue 19).
   */
  localOnly?: true
  /**
   * The call's entry in the engine's table of invocations in flight: its cancellation. The
   * dispatch stage records who serves it; the callee sets how its work stops ({@link InvocationFlight.stop}).
   */
  flight?: InvocationFlight
}

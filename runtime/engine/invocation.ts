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
/**
 * What stops a dispatched call's work, set on its flight by the callee (a leg, an in-process run, a
 * call to another engine). `stopWork` must also make sure the callee never delivers to the reply
 * afterwards (the caller already has `cancelled`).
 *
 * An object the callee already has for the call, not a closure made for it: measured in the engine
 * (`bench/load-ws.ts svc`, `--max-semi-space-size=4 --heap-growing-percent=50`), a function stored
 * on every flight (an arrow function or a bound one alike) had nearly every call's objects promoted
 * to the old generation — ~570 bytes per routed call and a full collection every ~13 MB — where the
 * leg object itself there promotes ~6 bytes per call and no full collection in a run
 * (docs/benchmarks.md, "Per-call garbage and the old generation").
 */
export interface WorkStopper {
  /** `reason`: the cancel's reason as the caller gets it, already cut to `MAX_CANCEL_REASON`. */
  stopWork(reason: string | undefined): void
}

export interface InvocationFlight extends Reply {
  /** Engine-assigned id (UUID v4); a leg to a remote worker uses it as its invocation id. */
  readonly id: string
  /** Set by the callee at dispatch: stops the call's work, and makes sure it delivers nothing afterwards. */
  stop: WorkStopper | undefined
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

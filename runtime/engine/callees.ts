/**
 * The dispatch stage's three kinds of callee (protocol.md §6.1): a remote session, reached by a
 * leg that awaits its `invocationresult` (§6.2); an in-process handler of a built-in worker; and
 * an HTTP-invoked function the engine executes itself (§6.8). Each delivers exactly one outcome to
 * the invocation's reply, and engine-originated calls time out here (§6.5).
 */
import { uuid4 } from './uuid.ts'
import { decodeJson, encodeCancel, encodeInvoke, encodeJson, errorBody, errorBodyOf, Errors, RawJson, type ErrorBody, type HttpInvocationConfig } from 'svc-protocol'
import { Deadlines, type DeadlineSlot, type Timers } from 'svc-protocol/deadlines'
import type { FunctionEntry, Replica } from './functions.ts'
import { handlerSpan, spanRecord, spanText, type HandledOutcome, type HandlerSpanText } from './handler-spans.ts'
import { invokeOverHttp } from './http-invoke.ts'
import type { Peer } from './peer.ts'
import { FrameTooLarge, isStringTooLong, mergeBaggage, type Callee, type Invocation } from './pipeline.ts'
import { Session, type Leg } from './session.ts'
import type { HttpFunctionsPolicy, InvocationContext, LocalHandler } from './types.ts'
import type { AccessPolicy } from './access/policy.ts'
import type { Reply, WorkStopper } from './invocation.ts'
import type { SpanRecord } from '../adapters/observability/records.ts'

/**
 * Bounds on open legs: an attacker who sends calls that are never answered must not grow the
 * engine's memory without limit.
 */
export interface LegLimits {
  /** Open calls one connection may have made and still await. Default 10 000. */
  perConnection: number
  /** Open calls in the whole engine. Default 100 000. */
  total: number
}

export const DEFAULT_LEG_LIMITS: LegLimits = { perConnection: 10_000, total: 100_000 }

/**
 * The timers under the engine's call deadlines (§6.5), unreferenced: a slot's timer outlives the
 * calls it held (a call that ends only unlinks itself), and must not keep a stopped engine's
 * process alive for a timeout's length. Calls still open have their connections keeping it alive.
 */
const DEADLINE_TIMERS: Timers = {
  now: Date.now,
  setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setInterval: (callback, ms) => setInterval(callback, ms).unref(),
  clearInterval: (handle) => clearInterval(handle as NodeJS.Timeout),
}

/** Every open leg, indexed from both of its sessions. */
export class LegTable {
  private readonly limits: LegLimits
  /** The answers past each limit, built once: a flood past a limit gets them at the cost of a send. */
  private readonly tooManyForConnection: ErrorBody
  private readonly tooManyForEngine: ErrorBody
  /** Open legs in the whole engine. */
  size = 0
  /**
   * The timeouts of engine-originated legs, one timer per 10 ms slot rather than a Node timer per
   * leg (its object, its arguments and its cancelling were a share of every queued message's
   * garbage); a leg times out at most one slot late, never early.
   */
  private readonly deadlines = new Deadlines<Leg>((leg) => this.expire(leg), DEADLINE_TIMERS)
  /**
   * Where the handler spans workers leave to the engine are recorded (`handler-spans.ts`); set by
   * the engine, absent in tables without telemetry.
   */
  telemetry: { recording(parent?: string): boolean; packedSpan(span: HandlerSpanText): boolean; finishedSpan(record: SpanRecord): void } | undefined

  constructor(limits: LegLimits = DEFAULT_LEG_LIMITS) {
    this.limits = limits
    this.tooManyForConnection = errorBody(Errors.tooManyInvocations, 'connection', limits.perConnection)
    this.tooManyForEngine = errorBody(Errors.tooManyInvocations, 'engine', limits.total)
  }

  /** Sends the call to `callee` as `invokefunction` with a fresh leg id, after the limits allow it. */
  open(callee: Session, invocation: Invocation, target: FunctionEntry, replica: Replica): void {
    const caller = invocation.caller instanceof Session ? invocation.caller : undefined
    if (caller !== undefined && caller.calling.size >= this.limits.perConnection) {
      return invocation.reply.error(this.tooManyForConnection)
    }
    if (this.size >= this.limits.total) return invocation.reply.error(this.tooManyForEngine)
    const flight = invocation.flight
    // A leg of a flight carries the flight's id: the id engine::invocations::list shows is the one the worker knows.
    const leg = new RemoteLeg(this, flight?.id ?? uuid4(), callee, caller, invocation.reply, invocation, target, replica)
    callee.executing.set(leg.id, leg)
    caller?.calling.set(leg.id, leg)
    this.size++
    if (flight !== undefined) flight.stop = leg
    const timeoutMs = invocation.timeoutMs
    if (timeoutMs !== undefined) leg.deadline = this.deadlines.add(leg, timeoutMs)
    try {
      callee.send(
        encodeInvoke(
          leg.id,
          replica.wireIdJson,
          invocation.data,
          invocation.metadata,
          invocation.traceparent,
          invocation.baggage === undefined ? target.baggageJson : JSON.stringify(mergeBaggage(invocation.baggage, target)),
        ),
      )
    } catch (err) {
      // A payload from a built-in, or from a listener with a higher limit, that the callee's
      // connection could not take: the call fails, the callee stays connected.
      this.close(leg)
      if (err instanceof FrameTooLarge) return invocation.reply.error(errorBody(Errors.frameTooLarge, 'invocation', err.bytes, err.limit))
      // A string past V8's limit while encoding a built-in's payload.
      if (isStringTooLong(err)) return invocation.reply.error(errorBody(Errors.frameTooLarge, 'invocation', undefined, callee.maxMessageBytes))
      throw err
    }
  }

  /**
   * An `invocationresult` from `from` (§5.9): results for unknown legs, or from other sessions, are
   * ignored. `trace` holds the result's trace fields: with `span_start`/`span_end` the worker's
   * handler span is recorded here (`handler-spans.ts`), after the caller has its answer.
   */
  complete(from: Session, legId: string, result: RawJson | undefined, error: ErrorBody | undefined, trace?: HandledOutcome): void {
    const leg = from.executing.get(legId)
    if (leg === undefined) return
    this.close(leg)
    if (error !== undefined) leg.reply.error(error)
    else leg.reply.result(result)
    if (trace?.span_start !== undefined && this.telemetry !== undefined) this.recordSpan(leg as RemoteLeg, from, result, error, trace)
  }

  /** Records the handler span a worker's result asks for (nothing when no sink records or the data is malformed). */
  private recordSpan(leg: RemoteLeg, from: Session, result: RawJson | undefined, error: ErrorBody | undefined, trace: HandledOutcome): void {
    const telemetry = this.telemetry!
    const invocation = leg.invocation
    if (!telemetry.recording(invocation.traceparent)) return
    const data = invocation.data
    const call = {
      functionId: leg.replica.wireId,
      data: data instanceof RawJson ? data.text : encodeJson(data),
      traceparent: invocation.traceparent,
      baggage: invocation.baggage === undefined ? leg.target.baggage : mergeBaggage(invocation.baggage, leg.target),
    }
    const outcome: HandledOutcome = { traceparent: trace.traceparent, span_start: trace.span_start, span_end: trace.span_end }
    if (error !== undefined) outcome.error = error
    else if (result !== undefined) outcome.result = result
    const span = handlerSpan(call, outcome, from.handlerSpans, from.name ?? 'unknown')
    if (span === undefined) return
    // As text first (no record objects, no JSON.stringify of them); as a record where the sink asks.
    if (!telemetry.packedSpan(spanText(span))) telemetry.finishedSpan(spanRecord(span))
  }

  /**
   * Disconnect cleanup of `session`'s calls (§3.6 step 3): calls it executed end with
   * `invocation_stopped`; calls it made are dropped, so late results are ignored.
   */
  sessionEnded(session: Session): void {
    if (session.executing.size > 0) {
      const stopped = errorBody(Errors.invocationStopped)
      for (const leg of session.executing.values()) {
        this.close(leg)
        leg.reply.error(stopped)
      }
    }
    for (const leg of session.calling.values()) this.close(leg)
  }

  /**
   * Cancels an open leg: it is closed (a late result is ignored) and its worker gets
   * `cancelinvocation` with the leg's id. The caller's answer is the flight's to give.
   */
  cancel(leg: Leg, reason: string | undefined): void {
    if (leg.callee.executing.get(leg.id) !== leg) return
    this.close(leg)
    LegTable.sendCancel(leg, reason)
  }

  /** Tells the leg's worker to stop; a frame its connection cannot take is not worth failing for. */
  private static sendCancel(leg: Leg, reason: string | undefined): void {
    try {
      leg.callee.send(encodeCancel(leg.id, reason))
    } catch {
      // FrameTooLarge for a tiny max_message_bytes: the worker runs on; its result is ignored.
    }
  }

  private close(leg: Leg): void {
    if (leg.callee.executing.delete(leg.id)) this.size--
    leg.caller?.calling.delete(leg.id)
    const deadline = leg.deadline
    if (deadline !== undefined) {
      leg.deadline = undefined
      this.deadlines.cancel(leg, deadline)
    }
  }

  private expire(leg: Leg): void {
    if (leg.callee.executing.get(leg.id) !== leg) return
    leg.deadline = undefined
    // Only legs with a timeout are in the deadlines.
    const timeoutMs = (leg as RemoteLeg).invocation.timeoutMs!
    this.close(leg)
    // The engine's timeout cancels the callee too (§6.5): its handler need not run on for nobody.
    LegTable.sendCancel(leg, `timed out after ${timeoutMs}ms`)
    leg.reply.error(errorBody(Errors.timeout, timeoutMs))
  }
}

/** An open leg to a remote session; a cancel of its flight cancels it (no closure per call: {@link WorkStopper}). */
class RemoteLeg implements Leg, WorkStopper {
  readonly table: LegTable
  readonly id: string
  readonly callee: Session
  readonly caller: Session | undefined
  readonly reply: Reply
  /** The call as sent, its target and replica: what a handler span recorded here is made of. */
  readonly invocation: Invocation
  readonly target: FunctionEntry
  readonly replica: Replica
  deadline: DeadlineSlot<Leg> | undefined = undefined

  constructor(table: LegTable, id: string, callee: Session, caller: Session | undefined, reply: Reply, invocation: Invocation, target: FunctionEntry, replica: Replica) {
    this.table = table
    this.id = id
    this.callee = callee
    this.caller = caller
    this.reply = reply
    this.invocation = invocation
    this.target = target
    this.replica = replica
  }

  stopWork(reason: string | undefined): void {
    this.table.cancel(this, reason)
  }
}

/** A remote session's replicas: each call becomes a leg. */
export class RemoteCallee implements Callee {
  readonly peer: Session
  private readonly legs: LegTable

  constructor(session: Session, legs: LegTable) {
    this.peer = session
    this.legs = legs
  }

  get pendingBytes(): number {
    return this.peer.pendingBytes
  }

  dispatch(invocation: Invocation, target: FunctionEntry, replica: Replica): void {
    this.legs.open(this.peer, invocation, target, replica)
  }
}

/**
 * One run of an in-process handler: whether its outcome went out, and the `AbortSignal` its
 * context offers, made on first use (most built-in calls never look at it).
 */
class LocalRun implements WorkStopper {
  /**
   * The timeouts of in-process runs, as {@link LegTable}'s of legs: one timer per 10 ms slot, a
   * run times out at most one slot late.
   */
  static readonly deadlines = new Deadlines<LocalRun>((run) => run.expire(), DEADLINE_TIMERS)
  done = false
  /** Set by {@link settle} while the handler's promise is pending. */
  peer: { activeInvocations: number } | undefined = undefined
  /** Set by {@link settle} while a timeout is pending: who hears `TIMEOUT`, after how long (ms). */
  reply: Reply | undefined = undefined
  timeoutMs = 0
  deadline: DeadlineSlot<LocalRun> | undefined = undefined
  private controller: AbortController | undefined = undefined
  private reason: Error | undefined = undefined

  get signal(): AbortSignal {
    if (this.reason !== undefined && this.controller === undefined) return AbortSignal.abort(this.reason)
    return (this.controller ??= new AbortController()).signal
  }

  /** The flight was cancelled: the outcome is dropped and the handler's signal aborts. */
  stopWork(reason: string | undefined): void {
    if (this.done) return
    this.finish()
    this.abort(Errors.cancelled(reason))
  }

  /** The outcome is known: the run stops counting and its timeout is dropped. */
  finish(): void {
    this.done = true
    const deadline = this.deadline
    if (deadline !== undefined) {
      this.deadline = undefined
      LocalRun.deadlines.cancel(this, deadline)
    }
    this.peer!.activeInvocations--
  }

  /** The engine-originated call's timeout passed first: `TIMEOUT` to the caller, the signal aborts. */
  private expire(): void {
    if (this.done) return
    this.deadline = undefined
    this.finish()
    const timedOut = Errors.timeout(this.timeoutMs)
    this.abort(timedOut)
    this.reply!.error(timedOut.toErrorBody())
  }

  /** The call was cancelled or timed out: the handler's signal aborts with `reason`. */
  abort(reason: Error): void {
    if (this.reason !== undefined) return
    this.reason = reason
    this.controller?.abort(reason)
  }
}

/**
 * What an in-process handler learns about its invocation: a class, not an object literal, because
 * a literal's `get signal()` made V8 define the accessor at run time on every call (~0.3 µs, and
 * a closure, an accessor pair and a slow-mode object of garbage per in-process call).
 */
class LocalContext implements InvocationContext {
  readonly function_id: string
  readonly baggage: string
  readonly access: AccessPolicy
  readonly caller_worker_id: string | undefined
  readonly caller: Peer | undefined
  readonly metadata: unknown
  readonly traceparent: string | undefined
  readonly #run: LocalRun

  constructor(invocation: Invocation, target: FunctionEntry, run: LocalRun) {
    this.function_id = target.id
    this.baggage = mergeBaggage(invocation.baggage, target)
    this.access = invocation.access
    const caller = invocation.caller ?? undefined
    this.caller_worker_id = caller?.workerId
    this.caller = caller
    this.metadata = invocation.metadata === undefined ? undefined : decodeJson(invocation.metadata)
    this.traceparent = invocation.traceparent
    this.#run = run
  }

  get signal(): AbortSignal {
    return this.#run.signal
  }
}

/**
 * Delivers the outcome of `work` to `reply` once: the result, the error, or `TIMEOUT` when the
 * engine-originated call's timeout passes first (the run's signal then aborts). A cancel of the
 * invocation's flight aborts the signal and drops the outcome.
 */
function settle(invocation: Invocation, peer: { activeInvocations: number }, run: LocalRun, work: () => unknown): void {
  const reply = invocation.reply
  peer.activeInvocations++
  let value: unknown
  try {
    value = work()
  } catch (err) {
    peer.activeInvocations--
    return reply.error(errorBodyOf(err))
  }
  if (!(value instanceof Promise)) {
    peer.activeInvocations--
    return reply.result(value)
  }
  run.peer = peer
  const timeoutMs = invocation.timeoutMs
  if (timeoutMs !== undefined) {
    run.reply = reply
    run.timeoutMs = timeoutMs
    run.deadline = LocalRun.deadlines.add(run, timeoutMs)
  }
  const flight = invocation.flight
  if (flight !== undefined) flight.stop = run
  value.then(
    (result) => {
      if (run.done) return
      run.finish()
      reply.result(result)
    },
    (err: unknown) => {
      if (run.done) return
      run.finish()
      reply.error(errorBodyOf(err))
    },
  )
}

/** A function a built-in worker serves in-process. */
export class LocalCallee implements Callee {
  readonly peer: Peer & { activeInvocations: number }
  readonly pendingBytes = 0
  private readonly handler: LocalHandler

  constructor(peer: Peer & { activeInvocations: number }, handler: LocalHandler) {
    this.peer = peer
    this.handler = handler
  }

  dispatch(invocation: Invocation, target: FunctionEntry): void {
    const handler = this.handler
    const run = new LocalRun()
    settle(invocation, this.peer, run, () => handler(decodeJson(invocation.data), new LocalContext(invocation, target, run)))
  }
}

/** A replica registered with `invocation`: the engine makes the HTTP request (§6.8). */
export class HttpCallee implements Callee {
  readonly peer: Peer
  readonly pendingBytes = 0
  /** HTTP calls in progress; counted apart from the session's legs, so `executing` stays a leg index. */
  private readonly counter = { activeInvocations: 0 }
  private readonly config: HttpInvocationConfig
  private readonly policy: () => HttpFunctionsPolicy | undefined

  constructor(peer: Peer, config: HttpInvocationConfig, policy: () => HttpFunctionsPolicy | undefined) {
    this.peer = peer
    this.config = config
    this.policy = policy
  }

  dispatch(invocation: Invocation, target: FunctionEntry): void {
    // The call's own timeout_ms applies (§6.5); the engine's timeout of its own calls bounds it too.
    const run = new LocalRun()
    settle(invocation, this.counter, run, () => invokeOverHttp(this.config, target.id, decodeJson(invocation.data), new LocalContext(invocation, target, run), this.policy()))
  }
}

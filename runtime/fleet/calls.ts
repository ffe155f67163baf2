/**
 * Calls between engines of a fleet (issue 19). The caller's engine sends the call as an
 * `invokefunction` frame (protocol.md §5.8) on the function's subject of the engine that holds the
 * replica; that engine runs it through its own pipeline, on its local replicas only, and answers
 * with an `invocationresult` frame on the call's reply subject. Payloads stay the text received
 * (`RawJson`) the whole way.
 *
 * Failures: an engine that is gone has no subscription, so NATS answers "no responders" at once:
 * the member is dropped and the call goes to another replica, if any. Calls in flight to an engine
 * that stops answering heartbeats end with `invocation_stopped` ({@link FleetCalls.memberGone}).
 */
import { randomBytes } from 'node:crypto'
import { Codes, decodeFrame, encodeCancel, encodeInvokeFunction, encodeResult, errorBody, Errors, type ErrorBody, type InvokeFunctionMessage, type JsonInput } from 'svc-protocol'
import type { FunctionEntry, Replica } from '../engine/functions.ts'
import { CallIndex } from '../engine/call-index.ts'
import type { Invocation, Reply, WorkStopper } from '../engine/invocation.ts'
import type { Logger } from '../engine/config.ts'
import type { Member, MemberLink } from './members.ts'
import type { FleetSubjects } from './subjects.ts'

/**
 * Separates the frames of one NATS message: U+001E (record separator) cannot appear in JSON text
 * outside a string, and inside one it is escaped, so no frame contains it.
 */
const SEPARATOR = '\x1e'
const SEPARATOR_BYTE = 0x1e

/**
 * The frames of one NATS message: each calls `each` with one frame's bytes. A message is one frame,
 * or several joined by U+001E (a {@link Batcher}'s).
 */
export function eachFrame(data: Uint8Array, each: (frame: Uint8Array) => void): void {
  let start = 0
  for (;;) {
    const end = data.indexOf(SEPARATOR_BYTE, start)
    if (end < 0) return each(start === 0 ? data : data.subarray(start))
    each(data.subarray(start, end))
    start = end + 1
  }
}

/**
 * Frames for one subject published within one turn of the event loop go out as one NATS message,
 * joined by U+001E, up to NATS's `max_payload`. The batch is sent from a `setImmediate`, after
 * every I/O callback of the turn: calls made by several HTTP requests or WebSocket reads that
 * arrived together share a message (a microtask flush sent one per callback — with 16 HTTP
 * connections through another engine, about one message per request). The check phase follows
 * the poll phase at once, so a lone call waits for nothing. Under load a message carries many
 * calls or answers, so nats-server and both engines handle a fraction of the messages.
 */
export class Batcher {
  private readonly bus: CallBus
  private readonly state: BusState
  private readonly pending = new Map<string, { frames: string[]; chars: number; reply: string | undefined }>()
  private scheduled = false

  constructor(bus: CallBus, state: BusState) {
    this.bus = bus
    this.state = state
  }

  add(subject: string, frame: string, reply?: string): void {
    let batch = this.pending.get(subject)
    // Every frame of a message shares its reply subject; UTF-16 length × 3 bounds the bytes.
    if (batch !== undefined && (batch.reply !== reply || (batch.chars + frame.length + 1) * 3 > this.state.maxPayload)) {
      this.send(subject, batch)
      batch = undefined
    }
    if (batch === undefined) this.pending.set(subject, (batch = { frames: [], chars: 0, reply }))
    batch.frames.push(frame)
    batch.chars += frame.length + 1
    if (!this.scheduled) {
      this.scheduled = true
      setImmediate(Batcher.flushNow, this)
    }
  }

  /** The `setImmediate` callback: static, so no closure per turn. */
  private static flushNow(batcher: Batcher): void {
    if (batcher.scheduled) batcher.flush()
  }

  /** Publishes every pending batch now (at the end of the turn, or when the engine leaves). */
  flush(): void {
    this.scheduled = false
    for (const [subject, batch] of this.pending) this.send(subject, batch)
    this.pending.clear()
  }

  private send(subject: string, batch: { frames: string[]; reply: string | undefined }): void {
    this.pending.delete(subject)
    const payload = batch.frames.length === 1 ? batch.frames[0]! : batch.frames.join(SEPARATOR)
    this.bus.publish(subject, payload, batch.reply === undefined ? undefined : { reply: batch.reply })
  }
}

/** The parts of a NATS connection calls use (nats.js `NatsConnection`). */
export interface CallBus {
  publish(subject: string, payload: string, options?: { reply?: string }): void
}

/** The state of the link to NATS, as calls see it. */
export interface BusState {
  /** Connected now. */
  readonly connected: boolean
  /** The server's `max_payload`, bytes. */
  readonly maxPayload: number
}

/** An open call to another engine; a cancel of its flight cancels it (an object, no closure per call: `WorkStopper`). */
class FleetLeg implements WorkStopper {
  readonly calls: FleetCalls
  readonly id: string
  readonly member: Member
  readonly invocation: Invocation
  /** The call subject it went on: a cancel follows it there. */
  readonly subject: string
  timer: NodeJS.Timeout | undefined = undefined

  constructor(calls: FleetCalls, id: string, member: Member, invocation: Invocation, subject: string) {
    this.calls = calls
    this.id = id
    this.member = member
    this.invocation = invocation
    this.subject = subject
  }

  stopWork(reason: string | undefined): void {
    this.calls.cancel(this, reason)
  }
}

/** The caller's side: open calls to other engines, by leg id. */
export class FleetCalls implements MemberLink {
  private readonly batcher: Batcher
  private readonly state: BusState
  private readonly subjects: FleetSubjects
  private readonly log: Logger
  /** Called when NATS said a member has no subscription: it is gone. */
  private readonly onNoResponders: (member: Member) => void
  /**
   * Open calls by leg id: a {@link CallIndex}, not a `Map`, so that an answered call dies young (a
   * `Map`'s replaced hash tables kept every call reachable from the old generation). No index per
   * member: a member's calls are found by going through these when it leaves, which is rare.
   */
  private readonly legs = new CallIndex<FleetLeg>()
  /** Call subject per (member, function): built once. */
  private readonly subjectCache = new WeakMap<FunctionEntry, Map<Member, string>>()
  private counter = 0
  /**
   * Leg ids start with a secret of this engine run, so that no NATS client can answer a call it
   * did not see by guessing its reply subject.
   */
  private readonly secret = randomBytes(6).toString('hex')

  constructor(batcher: Batcher, state: BusState, subjects: FleetSubjects, log: Logger, onNoResponders: (member: Member) => void) {
    this.batcher = batcher
    this.state = state
    this.subjects = subjects
    this.log = log
    this.onNoResponders = onNoResponders
  }

  /** Open calls to other engines. */
  get size(): number {
    return this.legs.size
  }

  send(member: Member, invocation: Invocation, target: FunctionEntry, _replica: Replica): void {
    if (!this.state.connected) {
      return invocation.reply.error(errorBody(Errors.fleetUnavailable, `${target.id} is served by engine ${member.engine}, and this engine has lost its NATS connection`))
    }
    const isVoid = invocation.action?.type === 'void'
    const id = isVoid ? undefined : this.secret + (this.counter++).toString(36)
    // Built field by field, not with spreads: no object per absent field on every call.
    const message: InvokeFunctionMessage = { type: 'invokefunction', function_id: target.id, data: invocation.data }
    if (id !== undefined) message.invocation_id = id
    // The default namespace goes unsaid (protocol §3.4: absent means `default`): the serving
    // engine's codec reads a call without `namespace` on its fast path, one with it on the full scan.
    if (target.namespace !== 'default') message.namespace = target.namespace
    if (invocation.metadata !== undefined) message.metadata = invocation.metadata
    if (isVoid) message.action = { type: 'void' }
    if (invocation.traceparent !== undefined) message.traceparent = invocation.traceparent
    if (invocation.baggage !== undefined) message.baggage = invocation.baggage
    const frame = encodeInvokeFunction(message)
    const limit = this.state.maxPayload
    if (frame.length * 3 > limit && Buffer.byteLength(frame) > limit) {
      return invocation.reply.error(errorBody(Errors.fleetPayloadTooLarge, Buffer.byteLength(frame), limit))
    }
    const subject = this.subjectOf(member, target)
    const reply = (member.replySubject ??= this.subjects.replyPrefix + member.instance)
    if (id === undefined) {
      this.batcher.add(subject, frame, reply)
      // A void call is done here once sent (§6.3): nothing comes back to settle its flight.
      invocation.flight?.result(undefined)
      return
    }
    const leg = new FleetLeg(this, id, member, invocation, subject)
    this.legs.set(id, leg)
    const timeoutMs = invocation.timeoutMs
    if (timeoutMs !== undefined) leg.timer = setTimeout(FleetCalls.expire, timeoutMs, leg, timeoutMs)
    if (invocation.flight !== undefined) invocation.flight.stop = leg
    this.batcher.add(subject, frame, reply)
  }

  /**
   * Cancels a call to another engine: the leg is closed (a late answer is ignored) and a
   * `cancelinvocation` frame with the leg's id follows the call on its subject, with the same
   * reply subject, so the serving engine finds the call and cancels it there.
   */
  /** The engine's timeout cancels the callee too (§6.5), on the engine that serves it. Static: no closure per call. */
  private static expire(leg: FleetLeg, timeoutMs: number): void {
    const calls = leg.calls
    if (calls.legs.get(leg.id) === leg) calls.sendCancel(leg, `timed out after ${timeoutMs}ms`)
    calls.finish(leg, undefined, errorBody(Errors.timeout, timeoutMs))
  }

  /** Cancels `leg` (its flight's {@link WorkStopper}). */
  cancel(leg: FleetLeg, reason: string | undefined): void {
    if (!this.close(leg)) return
    this.sendCancel(leg, reason)
  }

  private sendCancel(leg: FleetLeg, reason: string | undefined): void {
    if (this.state.connected) this.batcher.add(leg.subject, encodeCancel(leg.id, reason), leg.member.replySubject)
  }

  /**
   * A message on this engine's reply subject for the calls to one member (one subject per member:
   * NATS keeps no per-call state): an `invocationresult` frame of one of those calls, or NATS's
   * "no responders" status (code 503, no body) when the member's engine has no subscription left.
   */
  reply(subject: string, data: Uint8Array, status: number | undefined, memberOf: (instance: string) => Member | undefined): void {
    if (status === 503) {
      const member = memberOf(subject.slice(this.subjects.replyPrefix.length))
      // The member is gone: leaving ends its calls in flight with invocation_stopped.
      if (member !== undefined) this.onNoResponders(member)
      return
    }
    eachFrame(data, (frame) => {
      const decoded = decodeFrame(frame, false)
      if (decoded.kind !== 'message' || decoded.message.type !== 'invocationresult') {
        this.log.debug('a message on a fleet reply subject was not an invocationresult frame; ignored')
        return
      }
      const leg = this.legs.get(decoded.message.invocation_id)
      // Only the answer of a call to that member: a NATS client cannot answer another's calls.
      if (leg === undefined || leg.member.replySubject !== subject) return
      this.finish(leg, decoded.message.result, decoded.message.error)
    })
  }

  /** `member` left the fleet: its calls in flight end with `invocation_stopped`. */
  memberGone(member: Member): void {
    if (this.legs.size === 0) return
    const stopped = errorBody(Errors.invocationStopped)
    for (const leg of this.legs.values()) if (leg.member === member) this.finish(leg, undefined, stopped)
  }

  /** Every open call ends with `invocation_stopped` (this engine is stopping). */
  stopAll(): void {
    if (this.legs.size === 0) return
    const stopped = errorBody(Errors.invocationStopped)
    for (const leg of this.legs.values()) this.finish(leg, undefined, stopped)
  }

  private finish(leg: FleetLeg, result: JsonInput | undefined, error: ErrorBody | undefined): void {
    if (!this.close(leg)) return
    if (error !== undefined) leg.invocation.reply.error(error)
    else leg.invocation.reply.result(result)
  }

  private close(leg: FleetLeg): boolean {
    if (!this.legs.delete(leg.id)) return false
    if (leg.timer !== undefined) clearTimeout(leg.timer)
    return true
  }

  private subjectOf(member: Member, target: FunctionEntry): string {
    let byMember = this.subjectCache.get(target)
    if (byMember === undefined) this.subjectCache.set(target, (byMember = new Map()))
    let subject = byMember.get(member)
    if (subject === undefined) {
      subject = this.subjects.call(member.instance, target.namespace, target.id)
      byMember.set(member, subject)
    }
    return subject
  }
}

/**
 * The serving side's {@link Reply}: the outcome as an `invocationresult` frame on the caller's
 * reply subject. A result over NATS's `max_payload` is answered with `RESULT_TOO_LARGE`.
 */
export class FleetReply implements Reply {
  private readonly batcher: Batcher
  private readonly state: BusState
  private readonly subject: string
  private readonly legId: string
  private readonly idJson: string

  constructor(batcher: Batcher, state: BusState, subject: string, legId: string, idJson: string) {
    this.batcher = batcher
    this.state = state
    this.subject = subject
    this.legId = legId
    this.idJson = idJson
  }

  result(value: JsonInput | undefined): void {
    let frame: string
    try {
      frame = encodeResult(this.legId, this.idJson, value, undefined)
    } catch (err) {
      return this.error({ code: Codes.InvocationFailed, message: `result is not JSON-serialisable: ${(err as Error).message}` })
    }
    const limit = this.state.maxPayload
    if (frame.length * 3 > limit) {
      const bytes = Buffer.byteLength(frame)
      if (bytes > limit) return this.error(errorBody(Errors.fleetResultTooLarge, bytes, limit))
    }
    this.batcher.add(this.subject, frame)
  }

  error(error: ErrorBody): void {
    let frame = encodeResult(this.legId, this.idJson, undefined, error)
    if (frame.length * 3 > this.state.maxPayload && Buffer.byteLength(frame) > this.state.maxPayload) {
      frame = encodeResult(this.legId, this.idJson, undefined, { code: error.code, message: error.message.slice(0, 1024) })
    }
    this.batcher.add(this.subject, frame)
  }
}

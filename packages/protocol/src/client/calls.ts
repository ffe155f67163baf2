/**
 * The call table of a client (sdk.md §6): synchronous and enqueue calls awaiting their
 * `invocationresult`, each with its timeout, and the frames of calls made while not connected,
 * sent in order after the next open.
 *
 * Hot path: a call costs one map entry, one deadline-slot entry ({@link Deadlines}: no timer of its
 * own) and one promise.
 */
import { Errors } from '../errors.ts'
import { Deadlines, type DeadlineSlot } from './deadlines.ts'
import { invocationError } from './errors.ts'
import type { Timers } from './timers.ts'

/** One synchronous or enqueue call awaiting its `invocationresult`. */
export class PendingCall {
  readonly id: string
  readonly functionId: string
  readonly timeoutMs: number
  readonly promise: Promise<unknown>
  resolve!: (value: unknown) => void
  reject!: (error: Error) => void
  /** The deadline slot holding this call until it completes or times out. */
  slot: DeadlineSlot<PendingCall> | undefined = undefined
  /** The frame while the call waits in the outbound queue; cleared once sent or expired. */
  frame: string | undefined = undefined
  /** Sent on the current connection: it may have run if that connection drops. */
  sent = false

  constructor(id: string, functionId: string, timeoutMs: number) {
    this.id = id
    this.functionId = functionId
    this.timeoutMs = timeoutMs
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }
}

export class CallTable {
  readonly #pending = new Map<string, PendingCall>()
  /** Timeouts of the pending calls, grouped so that a call needs no timer of its own. */
  readonly #deadlines: Deadlines<PendingCall>
  /** Frames of calls made while not connected: void calls as text, the others as their entry. */
  #queue: Array<string | PendingCall> = []

  constructor(timers?: Timers) {
    this.#deadlines = new Deadlines<PendingCall>((call) => this.#expire(call), timers)
  }

  /** Calls awaiting an answer. */
  get size(): number {
    return this.#pending.size
  }

  /**
   * Opens a call that rejects with `TIMEOUT` (`invocation timed out after <ms>ms`) unless settled
   * within `timeoutMs`. `send` sends `frame` now, or undefined to queue it until {@link flush}.
   */
  open(id: string, functionId: string, timeoutMs: number, frame: string, send: ((text: string) => void) | undefined): Promise<unknown> {
    const call = new PendingCall(id, functionId, timeoutMs)
    this.#pending.set(id, call)
    call.slot = this.#deadlines.add(call, timeoutMs)
    if (send !== undefined) {
      call.sent = true
      send(frame)
    } else {
      call.frame = frame
      this.#queue.push(call)
    }
    return call.promise
  }

  /** Queues the frame of a void call until {@link flush}. */
  queueVoid(frame: string): void {
    this.#queue.push(frame)
  }

  /** Removes and returns the call `id` (its answer arrived), or undefined for a late or foreign answer. */
  settle(id: string): PendingCall | undefined {
    const call = this.#pending.get(id)
    if (call === undefined) return undefined
    this.#pending.delete(id)
    this.#deadlines.cancel(call, call.slot)
    return call
  }

  /** Sends the queued frames in order; calls that expired meanwhile are skipped. */
  flush(send: (text: string) => void): void {
    const queue = this.#queue
    if (queue.length === 0) return
    this.#queue = []
    for (const item of queue) {
      if (typeof item === 'string') {
        send(item)
      } else if (this.#pending.get(item.id) === item && item.frame !== undefined) {
        item.sent = true
        send(item.frame)
        item.frame = undefined
      }
    }
  }

  /** Rejects the calls sent on a connection that was lost: they may or may not have run (sdk.md §6). */
  failSent(make: (call: PendingCall) => Error): void {
    for (const call of this.#pending.values()) {
      if (!call.sent) continue
      this.#pending.delete(call.id)
      this.#deadlines.cancel(call, call.slot)
      call.reject(make(call))
    }
  }

  /** Rejects every pending and queued call with `make(call)`; queued void calls are dropped. */
  failAll(make: (call: PendingCall) => Error): void {
    const calls = [...this.#pending.values()]
    this.#pending.clear()
    this.#deadlines.clear()
    this.#queue = []
    for (const call of calls) {
      call.frame = undefined
      call.reject(make(call))
    }
  }

  #expire(call: PendingCall): void {
    if (this.#pending.get(call.id) !== call) return
    this.#pending.delete(call.id)
    call.frame = undefined // a queued call that expired is skipped when the queue is flushed
    call.reject(invocationError(Errors.timeout(call.timeoutMs), call.functionId))
  }
}

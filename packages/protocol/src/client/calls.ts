/**
 * The call table of a client (sdk.md §6): synchronous and enqueue calls awaiting their
 * `invocationresult`, each with its timeout, and the frames of calls made while not connected,
 * sent in order after the next open.
 *
 * Hot path: a call costs one index entry ({@link CallIndex}: nothing it lets go of is kept alive by
 * the old generation), one deadline-list node ({@link Deadlines}: no timer of its own) and one
 * promise.
 */
import { CallIndex } from '../call-index.ts'
import { Errors } from '../errors.ts'
import { Deadlines, type DeadlineSlot } from './deadlines.ts'
import { invocationError } from './errors.ts'
import type { Timers } from './timers.ts'

/** One synchronous or enqueue call awaiting its `invocationresult`. */
export class PendingCall {
  readonly id: string
  readonly functionId: string
  readonly timeoutMs: number
  /** Order of opening, for the calls a lost connection fails (in the order they were made). */
  readonly seq: number
  readonly promise: Promise<unknown>
  resolve!: (value: unknown) => void
  reject!: (error: Error) => void
  /** The deadline slot holding this call until it completes or times out. */
  slot: DeadlineSlot<PendingCall> | undefined = undefined
  /** The frame while the call waits in the outbound queue; cleared once sent or expired. */
  frame: string | undefined = undefined
  /** Sent on the current connection: it may have run if that connection drops. */
  sent = false
  /** Removes the call's `abort` listener from its signal, once the call ends (set by the session). */
  detach: (() => void) | undefined = undefined

  constructor(id: string, functionId: string, timeoutMs: number, seq = 0) {
    this.id = id
    this.functionId = functionId
    this.timeoutMs = timeoutMs
    this.seq = seq
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }
}

export class CallTable {
  readonly #pending = new CallIndex<PendingCall>()
  #opened = 0
  /** Timeouts of the pending calls, grouped so that a call needs no timer of its own. */
  readonly #deadlines: Deadlines<PendingCall>
  /** Frames of calls made while not connected: void calls as text, the others as their entry. */
  #queue: Array<string | PendingCall> = []

  /** Told of a call that timed out after it was sent (the session cancels it in the engine). */
  readonly #onExpire: ((call: PendingCall) => void) | undefined

  constructor(timers?: Timers, onExpire?: (call: PendingCall) => void) {
    this.#deadlines = new Deadlines<PendingCall>((call) => this.#expire(call), timers)
    this.#onExpire = onExpire
  }

  /** Calls awaiting an answer. */
  get size(): number {
    return this.#pending.size
  }

  /**
   * Opens a call that rejects with `TIMEOUT` (`invocation timed out after <ms>ms`) unless settled
   * within `timeoutMs`. `send` sends `frame` now, or undefined to queue it until {@link flush}.
   * Returns the call; its `promise` settles with the answer.
   */
  open(id: string, functionId: string, timeoutMs: number, frame: string, send: ((text: string) => void) | undefined): PendingCall {
    const call = new PendingCall(id, functionId, timeoutMs, this.#opened++)
    this.#pending.set(id, call)
    call.slot = this.#deadlines.add(call, timeoutMs)
    if (send !== undefined) {
      call.sent = true
      send(frame)
    } else {
      call.frame = frame
      this.#queue.push(call)
    }
    return call
  }

  /** Queues the frame of a void call until {@link flush}. */
  queueVoid(frame: string): void {
    this.#queue.push(frame)
  }

  /** Removes and returns the call `id` (its answer arrived), or undefined for a late or foreign answer. */
  settle(id: string): PendingCall | undefined {
    const call = this.#pending.take(id)
    if (call === undefined) return undefined
    this.#deadlines.cancel(call, call.slot)
    call.detach?.()
    return call
  }

  /**
   * Cancels the call `id`: it rejects with `error` now and a late answer is ignored; a call still
   * queued is dropped unsent. Returns the call when it was pending (its `sent` says whether the
   * engine has it and must be told), else undefined.
   */
  cancel(id: string, error: Error): PendingCall | undefined {
    const call = this.settle(id)
    if (call === undefined) return undefined
    call.frame = undefined
    call.reject(error)
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
    for (const call of this.#inOrder()) {
      if (!call.sent) continue
      this.#pending.delete(call.id)
      this.#deadlines.cancel(call, call.slot)
      call.detach?.()
      call.reject(make(call))
    }
  }

  /** Rejects every pending and queued call with `make(call)`; queued void calls are dropped. */
  failAll(make: (call: PendingCall) => Error): void {
    const calls = this.#inOrder()
    this.#pending.clear()
    this.#deadlines.clear()
    this.#queue = []
    for (const call of calls) {
      call.frame = undefined
      call.detach?.()
      call.reject(make(call))
    }
  }

  /** The pending calls, oldest first. */
  #inOrder(): PendingCall[] {
    return this.#pending.values().sort(bySeq)
  }

  #expire(call: PendingCall): void {
    if (this.#pending.get(call.id) !== call) return
    this.#pending.delete(call.id)
    call.frame = undefined // a queued call that expired is skipped when the queue is flushed
    call.detach?.()
    if (call.sent) this.#onExpire?.(call)
    call.reject(invocationError(Errors.timeout(call.timeoutMs), call.functionId))
  }
}

const bySeq = (a: PendingCall, b: PendingCall): number => a.seq - b.seq

/**
 * Delivery of the queue worker (builtins.md §7.6, §7.7): per queue a pump reserves as many ready
 * messages as free slots allow (`concurrency`), delivers each one — the `svc.queue.*` baggage
 * entries, the optional condition, the handler call bounded by `delivery_timeout_ms` — and
 * acknowledges, delays or dead-letters it, as the decision from the outcome says.
 *
 * Prefetch (redis, `adapter.config.prefetch`, issue 19): on a store whose reserve crosses the
 * network the pump also reserves up to `prefetch` messages (≤ `concurrency`) ahead of the free
 * slots, as RabbitMQ's `prefetch_count`. They are reserved as any other (attempt stored, lease
 * held and renewed by the backend) and wait in the queue's local buffer; a slot that frees starts
 * the next one at once, and the refill rides with the acknowledgement (ACK_RESERVE). Deliveries in
 * flight never exceed `concurrency`. A buffered message that will not start here (stop, a backend
 * switch, its target gone, a subscriber without a live trigger) goes back to pending with its
 * unused attempt given back; after a crash it returns when its lease runs out, with that attempt
 * counted (the documented cost, as RabbitMQ's redelivered prefetch).
 */
import type { ErrorBody } from 'svc-protocol/errors'
import { Codes, errorBodyOf } from 'svc-protocol/errors'
import { queuePrefetch, targetKey, type QueueBackend, type QueueMessage } from '../../adapters/queue/index.ts'
import { nowUnixNano, type MetricSeries } from '../../adapters/observability/records.ts'
import type { ActiveSpan, TelemetryHub } from '../../engine/telemetry.ts'
import type { LocalInvokeRequest, LocalWorker, Logger } from '../../engine/types.ts'
import type { AdapterSlot, AdapterSlots } from '../shared/adapter-slots.ts'
import type { CancelTimer, Clock } from '../shared/clock.ts'
import { errorText, formatDelay, quoted, triggerCommand } from '../shared/failure-text.ts'
import { backoffDelay, MAX_DELAY_MS, type QueueSettings, type QueueWorkerSettings } from './settings.ts'
import type { DurableSubscribers, SubscriberTrigger } from './triggers.ts'


/**
 * The start of every delivery's own baggage entries for `queue` (made once per queue, in its
 * {@link Runner}): `svc.queue.name=<queue, percent-encoded>,svc.queue.message_id=`. Never throws:
 * a lone surrogate in the name (which UTF-8 cannot carry) is encoded as U+FFFD.
 */
export function queueBaggagePrefix(queue: string): string {
  return `svc.queue.name=${encodeURIComponent(queue.toWellFormed())},svc.queue.message_id=`
}

/**
 * The W3C baggage of a delivery: `svc.queue.name`, `svc.queue.message_id`, `svc.queue.attempt`
 * (1-based) added to the stored baggage, replacing earlier `svc.queue.*` entries. `prefix` is the
 * queue's {@link queueBaggagePrefix}.
 * @example queueBaggage(undefined, queueBaggagePrefix('emails'), 'id-1', 2) // 'svc.queue.name=emails,svc.queue.message_id=id-1,svc.queue.attempt=2'
 */
export function queueBaggage(stored: string | undefined, prefix: string, messageId: string, attempt: number): string {
  const own = `${prefix}${messageId},svc.queue.attempt=${attempt}`
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

/** The verdict of every successful attempt (one object, not one per message). */
const ACK: Verdict = Object.freeze({ kind: 'ack' })

/**
 * Decides the fate of a message from the error of its attempt (undefined: success), §7.7.
 * `handlerNotFound` is true when the handler call itself answered `function_not_found`.
 */
export function verdictOf(message: QueueMessage, settings: QueueSettings, error: ErrorBody | undefined, handlerNotFound: boolean): Verdict {
  if (error === undefined) return ACK
  if (handlerNotFound) return { kind: 'wait' }
  if (error.code === Codes.NonRetryable) return { kind: 'dead', error }
  if (message.attempts > settings.max_retries) return { kind: 'dead', error }
  const retryAfter = error.retry_after_ms
  if (typeof retryAfter === 'number') return { kind: 'retry', delayMs: Math.min(Math.max(0, Math.round(retryAfter)), MAX_DELAY_MS) }
  return { kind: 'retry', delayMs: backoffDelay(settings, message.attempts) }
}

/** The worker name in spans (§12.7). */
const WORKER_NAME = 'queue'
/** How often a registered target whose call answered `function_not_found` is tried again without a functions change, ms. */
const MISSING_RETRY_MS = 2000

/** A prefetched message waiting in its queue's buffer for a slot, and the backend that reserved it (held until it starts or goes back). */
interface Buffered {
  message: QueueMessage
  slot: AdapterSlot<QueueBackend>
}

/** Per-queue delivery state of this engine. */
export interface Runner {
  /** Deliveries running (≤ `concurrency`). */
  inFlight: number
  /** Messages and buffer places asked for by reserves still on their way ({@link QueueBackend.reservesOverlap}: several at once). */
  reserving: number
  /** Prefetched messages, reserved and waiting for a slot, oldest first (empty without prefetch). */
  buffer: Buffered[]
  /** Pump loops running (one, or more while reserves overlap). */
  pumping: number
  again: boolean
  /** A pump is queued behind the current microtasks (pumpSoon). */
  pumpQueued?: boolean
  timerAt?: number
  cancelTimer?: CancelTimer
  /** Messages stored by this engine (enqueue action, durable publish), duplicates not counted. */
  enqueued: number
  /** Messages acknowledged. */
  delivered: number
  /** Messages moved to the dead letter queue after a failed attempt. */
  failed: number
  /** {@link queueBaggagePrefix} of the queue. */
  readonly baggagePrefix: string
}

/** What delivery needs of the worker. */
export interface DeliveryHost {
  /** Where handlers are called, and whether a target is registered (§7.7). */
  readonly worker: Pick<LocalWorker, 'invoke' | 'hasFunction'>
  readonly log: Logger
  readonly clock: Clock
  /** Spans of §12.7; undefined: none. */
  readonly telemetry: TelemetryHub | undefined
  /** The backend in use and replaced ones still settling their deliveries. */
  readonly backends: AdapterSlots<QueueBackend>
  readonly subscribers: DurableSubscribers
  /** Unix ms now, on the worker's clock. */
  now(): number
  /** The worker settings in effect (the named queues of the metric series). */
  settings(): QueueWorkerSettings
  /** Effective settings of any queue. */
  settingsOf(queue: string): QueueSettings
}

/**
 * The pumps of every queue. A pump coalesces concurrent wake-ups, starts as many ready messages as
 * free slots allow, and sets a timer for the next delayed one; time comes from the host's clock so
 * that tests can move it by hand.
 *
 * @example
 * const delivery = new QueueDelivery(host)
 * delivery.pump('emails') // after an enqueue to `emails`
 */
export class QueueDelivery {
  private readonly host: DeliveryHost
  private readonly runners = new Map<string, Runner>()
  /** Registered targets whose call still answered `function_not_found` (their replica went away): their messages wait (§7.7). */
  private readonly missing = new Set<string>()
  private missingTimer: CancelTimer | undefined
  private stopped = false
  /**
   * Whether a message for a target may start (§7.7: `pending` leaves to `in_flight` only when its
   * function is registered). Messages of an unregistered target stay where they are, unread and
   * unwritten, until the set of functions changes: waiting costs no write.
   */
  private readonly startable = (namespace: string, functionId: string): boolean =>
    this.host.worker.hasFunction(functionId, namespace) && (this.missing.size === 0 || !this.missing.has(targetKey(namespace, functionId)))

  constructor(host: DeliveryHost) {
    this.host = host
  }

  /** The delivery state of `queue` (made on first use). */
  runner(queue: string): Runner {
    let runner = this.runners.get(queue)
    if (!runner) this.runners.set(queue, (runner = { inFlight: 0, reserving: 0, buffer: [], pumping: 0, again: false, enqueued: 0, delivered: 0, failed: 0, baggagePrefix: queueBaggagePrefix(queue) }))
    return runner
  }

  /** The delivery state of `queue`, if it has one. */
  runnerOf(queue: string): Runner | undefined {
    return this.runners.get(queue)
  }

  /**
   * A new backend: the slots of the old one are free (its deliveries finish there), and its
   * prefetched messages go back to it.
   */
  resetInFlight(): void {
    for (const runner of this.runners.values()) {
      runner.inFlight = 0
      this.giveBackAll(runner)
    }
  }

  /**
   * Cancels every timer; pumps stop. Resolves once the reserves on their way have landed and every
   * prefetched message is back to pending, attempt given back (each a call bounded by the store's
   * own timeout), so that the caller may close the backend after it.
   */
  async stop(): Promise<void> {
    this.stopped = true
    for (const runner of this.runners.values()) runner.cancelTimer?.()
    this.missingTimer?.()
    // A reserve that lands after the stop gives its messages back itself (pumpLoop).
    while (this.reserves.size > 0) await Promise.allSettled([...this.reserves])
    for (const runner of this.runners.values()) this.giveBackAll(runner)
    while (this.givingBack.size > 0) await Promise.allSettled([...this.givingBack])
  }

  /** Reserves on their way (awaited by {@link stop}). */
  private readonly reserves = new Set<Promise<unknown>>()
  /** Releases of prefetched messages on their way (awaited by {@link stop}). */
  private readonly givingBack = new Set<Promise<unknown>>()

  /**
   * Messages a queue may hold, started or buffered: `concurrency` plus its prefetch (0 on a store
   * whose reserve is in process).
   */
  private capacity(concurrency: number): number {
    return concurrency + queuePrefetch(this.host.settings().adapter, concurrency)
  }

  /** Pumps every queue the backend holds. */
  async pumpAll(): Promise<void> {
    const slot = this.host.backends.current
    if (!slot) return
    let queues: string[]
    try {
      queues = await slot.adapter.queues()
    } catch (error) {
      // A shared store that is unreachable: its lease sweep or reconnection wakes the queues later.
      this.host.log.warn('queue: listing the queues failed', { error: String(error) })
      return
    }
    for (const queue of queues) this.pump(queue)
  }

  /**
   * Starts as many ready messages of `queue` as free slots allow; coalesces concurrent calls. While
   * a reserve is on its way, a call waits for it (the loop looks again when it lands), unless the
   * backend lets reserves overlap and slots are free that no reserve has asked for: then those
   * slots reserve at once, instead of a round trip later.
   */
  pump(queue: string, afterAnswers = false): void {
    const runner = this.runner(queue)
    if (runner.pumping > 0) {
      runner.again = true
      if (runner.reserving === 0 || this.host.backends.current?.adapter.reservesOverlap !== true) return
      if (this.capacity(this.host.settingsOf(queue).concurrency) - runner.inFlight - runner.buffer.length - runner.reserving <= 0) return
    }
    runner.pumping++
    void this.pumpLoop(queue, runner, afterAnswers).finally(() => {
      runner.pumping--
      // A pump() that arrived after the loop's last check (a settled delivery's continuation can
      // run between the loop's return and this callback) would otherwise be lost, and with it the
      // retry timer of the message it released.
      if (runner.again && runner.pumping === 0) this.pump(queue)
    })
  }

  /**
   * Pumps `queue` at once when it has a slot free that no reserve asked for: after an enqueue
   * whose backend lets a reserve join the enqueue's commit ({@link QueueBackend.reservesJoinEnqueue}),
   * so that a message arriving on an idle queue is stored and started by one commit. With every
   * slot busy it does nothing (no pump loop per enqueue).
   */
  pumpIfFree(queue: string): void {
    const runner = this.runner(queue)
    if (this.host.settingsOf(queue).concurrency - runner.inFlight - runner.reserving > 0) this.pump(queue, true)
  }

  /**
   * Pumps `queue` once the microtasks queued so far have run: the results of one socket read
   * settle their deliveries in one microtask round, so every slot they free is free by then and one
   * reserve fills them all (one transaction with their acknowledgements, one write of the
   * deliveries) instead of one reserve for the first slot and another for the rest.
   */
  private pumpSoon(queue: string, runner: Runner): void {
    if (runner.pumpQueued) return
    runner.pumpQueued = true
    queueMicrotask(() => {
      runner.pumpQueued = false
      this.pump(queue)
    })
  }

  /** The set of functions changed: messages waiting for a target may go (§7.7). */
  functionsChanged(): void {
    this.missing.clear()
    this.missingTimer?.()
    this.missingTimer = undefined
    // A target that went away: its prefetched messages go back, attempt given back (§7.7).
    for (const runner of this.runners.values()) if (runner.buffer.length > 0) this.giveBackUnstartable(runner)
    void this.pumpAll()
  }

  /** `afterAnswers`: the first reserve joined an enqueue's commit ({@link pumpIfFree}); its deliveries start a turn later. */
  private async pumpLoop(queue: string, runner: Runner, afterAnswers = false): Promise<void> {
    do {
      runner.again = false
      const slot = this.host.backends.current
      if (!slot || this.stopped) return
      const sub = this.host.subscribers.get(queue)
      // A subscriber's copies wait for a live trigger (§7.5); prefetched ones wait in the store.
      if (sub && sub.triggers.size === 0) {
        if (runner.buffer.length > 0) this.giveBackAll(runner)
        return
      }
      const concurrency = this.host.settingsOf(queue).concurrency
      // A slot freed while the buffer held messages started one already (free); this covers a
      // concurrency raised by a settings change.
      if (runner.buffer.length > 0) this.startBuffered(queue, runner)
      const free = this.capacity(concurrency) - runner.inFlight - runner.buffer.length - runner.reserving
      if (free <= 0) return
      const now = this.host.now()
      let messages: QueueMessage[]
      runner.reserving += free
      const reserving = slot.adapter.reserve(queue, { now, limit: free, startable: this.startable })
      this.reserves.add(reserving)
      try {
        messages = await reserving
      } catch (error) {
        this.host.log.error(`queue: reserving messages of ${queue} failed`, { error: String(error) })
        this.setTimer(queue, runner, this.host.now() + 1000)
        return
      } finally {
        this.reserves.delete(reserving)
        runner.reserving -= free
      }
      if (this.stopped || this.host.backends.current !== slot) {
        // Reserved for a worker that stopped or a backend that was replaced meanwhile: none started.
        for (const message of messages) this.giveBack(slot, message, false)
        return
      }
      // Slots free now (a lowered concurrency may leave none); the rest wait in the buffer, behind older ones.
      const starting = runner.buffer.length > 0 ? 0 : Math.min(messages.length, Math.max(0, concurrency - runner.inFlight))
      for (let m = starting; m < messages.length; m++) runner.buffer.push({ message: messages[m]!, slot: this.host.backends.hold(slot)! })
      runner.inFlight += starting
      if (afterAnswers && starting > 0) {
        // Settled by the commit that answers the enqueue: the answer, further down this
        // microtask round, leaves first and the deliveries in the next turn, so that a worker
        // that enqueues and handles sends its next enqueue before it runs the handler.
        setImmediate(() => {
          for (let m = 0; m < starting; m++) void this.deliver(slot, queue, runner, messages[m]!)
        })
      } else for (let m = 0; m < starting; m++) void this.deliver(slot, queue, runner, messages[m]!)
      if (starting < messages.length) this.startBuffered(queue, runner)
      afterAnswers = false
      if (messages.length === free) runner.again = true
      else {
        let next: number | undefined
        try {
          next = await slot.adapter.nextReadyAt(queue, now)
        } catch {
          next = this.host.now() + 1000 // the store is unreachable: look again in a second
        }
        if (next !== undefined) this.setTimer(queue, runner, next)
      }
    } while (runner.again)
  }

  /** Pumps `queue` again at Unix ms `at` (keeps an earlier timer). */
  private setTimer(queue: string, runner: Runner, at: number): void {
    if (this.stopped) return
    if (runner.timerAt !== undefined && runner.timerAt <= at) return
    runner.cancelTimer?.()
    runner.timerAt = at
    runner.cancelTimer = this.host.clock.setTimeout(() => {
      runner.timerAt = undefined
      runner.cancelTimer = undefined
      this.pump(queue)
    }, at - this.host.now())
  }

  private async deliver(reservedOn: AdapterSlot<QueueBackend>, queue: string, runner: Runner, message: QueueMessage): Promise<void> {
    const host = this.host
    const backends = host.backends
    const slot = backends.hold(reservedOn)!
    const settings = host.settingsOf(queue)
    const sub = host.subscribers.get(queue)
    const latest = sub ? host.subscribers.latest(sub) : undefined
    const baggage = queueBaggage(message.baggage, runner.baggagePrefix, message.id, message.attempts)
    const hub = host.telemetry
    // `deliver <queue>` (§12.7): parent of the condition and handler calls. Nothing at all when no span may be recorded.
    const span = hub?.recording(message.traceparent) === true ? deliverySpan(hub, queue, message, latest) : undefined
    const traceparent = span !== undefined ? span.traceparent : message.traceparent
    let error: ErrorBody | undefined
    /** Which call failed: the handler, or the trigger's condition function. */
    let failedCall = message.function_id
    let handlerNotFound = false
    /** Whether the attempt's slot was given back (once: {@link free}). */
    let freed = false
    /** When the attempt's outcome was known (ns; 0 before), and whether its span went to endSpan. */
    let spanEnd = 0
    let spanHanded = false
    try {
      let run = true
      if (latest?.condition) {
        const call: { timeoutMs: number; traceparent?: string; baggage?: string } = { timeoutMs: settings.delivery_timeout_ms, baggage }
        if (traceparent !== undefined) call.traceparent = traceparent
        const outcome = await latest.condition(message.data.value, call)
        if (!outcome.run) {
          run = false
          if (outcome.failed) {
            error = outcome.body
            failedCall = `condition ${latest.conditionId ?? ''} of ${message.function_id}`
          }
        }
      }
      if (run) {
        const request: LocalInvokeRequest = {
          function_id: message.function_id,
          namespace: message.namespace,
          // The payload's text as stored (as the enqueue's frame carried it): the invocation frame
          // and the handler span's input event both read it, nothing decodes or encodes it again.
          data: message.data,
          baggage,
          timeoutMs: settings.delivery_timeout_ms,
        }
        const metadata = sub ? latest?.metadata : message.metadata
        if (metadata !== undefined && metadata !== null) request.metadata = metadata
        if (traceparent !== undefined) request.traceparent = traceparent
        try {
          await host.worker.invoke(request)
        } catch (thrown) {
          error = errorBodyOf(thrown)
          handlerNotFound = error.code === Codes.FunctionNotFound
        }
      }
      const verdict = verdictOf(message, settings, error, handlerNotFound)
      // Ended now, handed to the store once this turn's commit and deliveries are out (endSpan).
      if (span !== undefined) spanEnd = nowUnixNano()
      const backend = slot.adapter
      let settled: Promise<boolean>
      switch (verdict.kind) {
        case 'ack':
          settled = backend.ack(message.id)
          runner.delivered++
          break
        case 'wait':
          this.markMissing(targetKey(message.namespace, message.function_id))
          if (runner.buffer.length > 0) this.giveBackUnstartable(runner)
          settled = backend.release(message.id, { ready_at: message.ready_at, refund: true })
          break
        case 'retry':
          settled = backend.release(message.id, { ready_at: host.now() + verdict.delayMs })
          this.logFailure(queue, message, settings, failedCall, error!, verdict)
          break
        case 'dead':
          settled = backend.deadLetter(message.id, deadError(verdict.error), host.now())
          runner.failed++
          this.logFailure(queue, message, settings, failedCall, verdict.error, verdict)
          break
      }
      // The backend changed its index already: the next reserve may start now and share the
      // transaction of this acknowledgement (one commit for both).
      freed = true
      this.free(slot, queue, runner)
      if (span !== undefined) {
        this.endSpan(span, error, spanEnd)
        spanHanded = true
      }
      await settled
    } catch (failure) {
      if (!freed) this.free(slot, queue, runner)
      // Once the attempt had its outcome, the span keeps it (as when it ended before settling).
      if (span !== undefined && !spanHanded) {
        if (spanEnd === 0) span.end('error', `settling failed: ${String(failure)}`)
        else endAttemptSpan(span, error, spanEnd)
      }
      host.log.error(`queue: settling message ${message.id} of ${queue} failed; it is delivered again after a restart`, { error: String(failure) })
    } finally {
      backends.release(slot)
    }
  }

  /**
   * Gives an attempt's slot back and looks for more work (a method, not a closure per delivery);
   * slots of a replaced backend were reset already.
   */
  private free(slot: AdapterSlot<QueueBackend>, queue: string, runner: Runner): void {
    if (this.host.backends.current !== slot) return
    runner.inFlight--
    // The next prefetched message starts now, without a round trip; the refill of the buffer
    // goes with this attempt's acknowledgement.
    if (runner.buffer.length > 0) this.startBuffered(queue, runner)
    this.pumpSoon(queue, runner)
  }

  /**
   * Starts prefetched messages of `queue`, oldest first, while slots are free; one that may not
   * start here (its target is not startable, a subscriber without a live trigger, a replaced
   * backend, a stopped worker) goes back instead.
   */
  private startBuffered(queue: string, runner: Runner): void {
    const concurrency = this.host.settingsOf(queue).concurrency
    const buffer = runner.buffer
    while (buffer.length > 0 && runner.inFlight < concurrency) {
      const { message, slot } = buffer.shift()!
      if (!this.mayStart(queue, slot, message)) {
        this.giveBack(slot, message)
        continue
      }
      runner.inFlight++
      void this.deliver(slot, queue, runner, message)
      // deliver holds the slot itself (synchronously, before its first await).
      this.host.backends.release(slot)
    }
  }

  /** Whether a prefetched message may start here now. */
  private mayStart(queue: string, slot: AdapterSlot<QueueBackend>, message: QueueMessage): boolean {
    if (this.stopped || this.host.backends.current !== slot) return false
    const sub = this.host.subscribers.get(queue)
    if (sub && sub.triggers.size === 0) return false
    return this.startable(message.namespace, message.function_id)
  }

  /** Gives back the prefetched messages of `runner` that may not start now (target gone). */
  private giveBackUnstartable(runner: Runner): void {
    const kept: Buffered[] = []
    for (const entry of runner.buffer) {
      if (this.startable(entry.message.namespace, entry.message.function_id)) kept.push(entry)
      else this.giveBack(entry.slot, entry.message)
    }
    runner.buffer = kept
  }

  /** Gives back every prefetched message of `runner`. */
  private giveBackAll(runner: Runner): void {
    const buffer = runner.buffer
    runner.buffer = []
    for (const { slot, message } of buffer) this.giveBack(slot, message)
  }

  /**
   * A reserved message that did not start: back to pending at its ready time with the attempt
   * the reserve counted given back (§7.7: an attempt is counted when it starts). `held`: it was in
   * the buffer, whose hold of `slot` ends once the store answered.
   */
  private giveBack(slot: AdapterSlot<QueueBackend>, message: QueueMessage, held = true): void {
    // Through a promise: a closed store may throw at once.
    const released = Promise.resolve(message.id).then((id) => slot.adapter.release(id, { ready_at: message.ready_at, refund: true })).then(
      () => {},
      (error: unknown) => {
        this.host.log.warn(`queue: giving back prefetched message ${message.id} failed; it is delivered again once its lease runs out`, { error: String(error) })
      },
    )
    this.givingBack.add(released)
    void released.finally(() => {
      this.givingBack.delete(released)
      if (held) this.host.backends.release(slot)
    })
  }

  /**
   * The terminal's and the log store's line of a failed attempt (issue 21): a warning naming the
   * queue, the call that failed, `attempt n of m`, the error and when the next attempt runs; an
   * error when the message went to the dead letter queue, with the `svc trigger` command that
   * redrives it. Everything quoted is bounded and escaped (../shared/failure-text.ts).
   */
  private logFailure(queue: string, message: QueueMessage, settings: QueueSettings, failedCall: string, error: ErrorBody, verdict: Verdict): void {
    if (this.stopped) return
    const sub = this.host.subscribers.get(queue)
    const where = sub ? `durable subscriber of topic ${quoted(sub.record.topic)}` : `queue ${quoted(queue)}`
    const line = `${where}: ${quoted(failedCall)} failed, attempt ${message.attempts} of ${settings.max_retries + 1}: ${errorText(error)}`
    if (verdict.kind === 'retry') {
      this.host.log.warn(`${line}; next retry in ${formatDelay(verdict.delayMs)}`)
      return
    }
    this.host.log.error(`${line}; moved to the dead letter queue. ${redriveHint(queue, message.id)}`)
  }

  /**
   * Hands `deliver` spans that ended (at `end`, ns) to the span store in an immediate queued after
   * the commit of their acknowledgements: the store's work runs once the next deliveries are
   * written, off the chain from a handler's result to the next delivery (at concurrency 1 that
   * chain is the rate). The span's content is the same; it shows as finished one turn later.
   */
  private endSpan(span: ActiveSpan, error: ErrorBody | undefined, end: number): void {
    if (this.ending.length === 0) setImmediate(this.endSpans)
    this.ending.push({ span, error, end })
  }

  private readonly ending: Array<{ span: ActiveSpan; error: ErrorBody | undefined; end: number }> = []

  private readonly endSpans = (): void => {
    const ending = this.ending.splice(0)
    for (const { span, error, end } of ending) endAttemptSpan(span, error, end)
  }

  private markMissing(target: string): void {
    this.missing.add(target)
    if (this.missingTimer || this.stopped) return
    this.missingTimer = this.host.clock.setTimeout(() => {
      this.missingTimer = undefined
      this.functionsChanged()
    }, MISSING_RETRY_MS)
  }

  /**
   * The queue worker's metric series for `engine::metrics::list` (builtins.md §12.5, through the
   * telemetry hub), one point per queue (named, subscriber, or holding stored messages) with
   * attribute `svc.queue.name`, the figures of `engine::queue::topic_stats`:
   * - gauges, unit `{message}`: `svc.queue.depth` (waiting: ready or delayed), `svc.queue.delayed`,
   *   `svc.queue.in_flight` (being delivered), `svc.queue.dlq_depth` (in its dead letter queue);
   * - sums since this engine started, unit `{message}`: `svc.queue.enqueued` (stored, duplicates
   *   not counted), `svc.queue.delivered` (acknowledged), `svc.queue.failed` (dead-lettered after
   *   an attempt), the throughput per queue.
   * `now` is the listing's time, ns since the Unix epoch.
   */
  async metricSeries(now: number): Promise<MetricSeries[]> {
    const slot = this.host.backends.current
    if (!slot) return []
    const names = new Set<string>([...this.host.settings().queue_configs.keys(), ...this.host.subscribers.byQueue.keys(), ...this.runners.keys(), ...(await slot.adapter.queues())])
    const gauge = (name: string, description: string): MetricSeries => ({ name, type: 'gauge', unit: '{message}', description, points: [] })
    const sum = (name: string, description: string): MetricSeries => ({ name, type: 'sum', unit: '{message}', description, points: [] })
    const depth = gauge('svc.queue.depth', 'messages waiting in the queue, ready or delayed')
    const delayed = gauge('svc.queue.delayed', 'messages waiting for their delay or retry backoff')
    const inFlight = gauge('svc.queue.in_flight', 'messages being delivered')
    const dlq = gauge('svc.queue.dlq_depth', "messages in the queue's dead letter queue")
    const enqueued = sum('svc.queue.enqueued', 'messages stored by this engine')
    const delivered = sum('svc.queue.delivered', 'messages acknowledged by this engine')
    const failed = sum('svc.queue.failed', 'messages this engine moved to the dead letter queue')
    const nowMs = this.host.now()
    for (const queue of [...names].sort()) {
      const c = await slot.adapter.counts(queue, nowMs)
      const r = this.runners.get(queue)
      const attributes = { 'svc.queue.name': queue }
      const point = (series: MetricSeries, value: number) => series.points.push({ time_unix_nano: now, value, attributes })
      point(depth, c.pending + c.delayed)
      point(delayed, c.delayed)
      point(inFlight, c.in_flight)
      point(dlq, c.dead)
      point(enqueued, r?.enqueued ?? 0)
      point(delivered, r?.delivered ?? 0)
      point(failed, r?.failed ?? 0)
    }
    return [depth, delayed, inFlight, dlq, enqueued, delivered, failed]
  }
}

/** The origin of a named queue's deliveries (no trigger), one object for all of them. */
const QUEUE_ORIGIN = Object.freeze({ worker: WORKER_NAME })

/**
 * The `deliver <queue>` consumer span of one delivery attempt (builtins.md §12.7), child of the
 * context the message carries (its `enqueue` span), with the §12.7 common and queue attributes.
 * Written once when the attempt ends, or unfinished once it has run 250 ms (`atEnd`,
 * engine/telemetry.ts): a handler that runs long shows its delivery in progress.
 */
function deliverySpan(hub: TelemetryHub, queue: string, message: QueueMessage, trigger: SubscriberTrigger | undefined): ActiveSpan | undefined {
  const origin = trigger === undefined ? QUEUE_ORIGIN : { worker: WORKER_NAME, triggerType: trigger.type, triggerId: trigger.id }
  const attributes = hub.deliveryAttributes(message.function_id, message.namespace, origin)
  attributes['svc.queue.name'] = queue
  attributes['svc.queue.message_id'] = message.id
  attributes['svc.queue.attempt'] = message.attempts
  return hub.startSpan({ name: `deliver ${queue}`, kind: 'consumer', parent: message.traceparent, attributes, atEnd: true })
}

/**
 * How to redrive one dead-lettered message: the exact `svc trigger svc::queue::redrive_message`
 * command (§7.3), or, for a queue name no command line could carry readably (a topic with control
 * characters, or too long), the function and the message id.
 */
export function redriveHint(queue: string, messageId: string): string {
  if (quoted(queue) === queue && quoted(messageId) === messageId) return `Redrive it: ${triggerCommand('svc::queue::redrive_message', { queue, message_id: messageId })}`
  return `Redrive it with svc::queue::redrive_message (message_id ${quoted(messageId)})`
}

/** Most characters of a handler's stack kept with a dead-lettered message. */
export const MAX_DLQ_STACK_CHARS = 16_384

/** The error stored with a dead-lettered message: code, message and the handler's stack (its first {@link MAX_DLQ_STACK_CHARS} characters). */
function deadError(error: ErrorBody): { code: string; message: string; stacktrace?: string } {
  const out: { code: string; message: string; stacktrace?: string } = { code: error.code, message: error.message }
  if (typeof error.stacktrace === 'string' && error.stacktrace !== '') out.stacktrace = error.stacktrace.slice(0, MAX_DLQ_STACK_CHARS)
  return out
}

/** Ends an attempt's `deliver` span at `end` (ns) with the attempt's outcome: ok, or its error and code. */
function endAttemptSpan(span: ActiveSpan, error: ErrorBody | undefined, end: number): void {
  if (error === undefined) span.end('ok', undefined, undefined, end)
  else span.end('error', error.message, { 'svc.error.code': error.code }, end)
}

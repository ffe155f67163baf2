/**
 * Delivery of log records to one `log` trigger (builtins.md §12.6): fire-and-forget, in arrival
 * order, and bounded whatever the log rate.
 *
 * - Records are sent in the order they arrive; at most {@link MAX_IN_FLIGHT_DELIVERIES} are with
 *   the handler's worker at a time (each is an invocation awaiting its answer, a leg of the
 *   engine's bounded table: without this window a log flood would fill the engine's 100,000 open
 *   invocations and starve every other call).
 * - The others wait, at most {@link MAX_QUEUED_DELIVERIES}; beyond that the oldest waiting record
 *   is dropped and counted ({@link LogDelivery.dropped}), with a warning at the first drop and then
 *   at most one every {@link DROP_WARNING_INTERVAL_MS}.
 * - Outcomes are ignored (fire-and-forget): a failed or timed-out delivery only frees its place.
 */
import type { LogRecord } from '../../adapters/observability/records.ts'
import type { BindingInfo, LocalWorker, Logger } from '../../engine/types.ts'
import { DROP_WARNING_INTERVAL_MS, MAX_QUEUED_EVENTS } from '../shared/fanout.ts'
import { Fifo } from '../shared/fifo.ts'

/** Deliveries of one binding awaiting their answer. */
export const MAX_IN_FLIGHT_DELIVERIES = 64
/** Records one binding may hold waiting before the oldest is dropped (as the other trigger types, §2.5). */
export const MAX_QUEUED_DELIVERIES = MAX_QUEUED_EVENTS

export { DROP_WARNING_INTERVAL_MS }

/**
 * @example
 * const delivery = new LogDelivery(binding, 13, context.worker, context.log, traceparent)
 * delivery.push(record) // never blocks, never throws
 */
export class LogDelivery {
  readonly binding: BindingInfo
  /** Minimum severity number delivered (§12.6 `level`). */
  readonly min: number
  /** Records dropped since the binding was registered. */
  dropped = 0
  private readonly queue = new Fifo<LogRecord>()
  private inFlight = 0
  private lastWarning = -Infinity
  private stopped = false
  private readonly worker: Pick<LocalWorker, 'invoke'>
  private readonly log: Logger
  /** `traceparent` of every delivery (unsampled: its spans and logs never come back, §12.6). */
  private readonly traceparent: string
  private readonly settled = (): void => {
    this.inFlight--
    this.pump()
  }

  constructor(binding: BindingInfo, min: number, worker: Pick<LocalWorker, 'invoke'>, log: Logger, traceparent: string) {
    this.binding = binding
    this.min = min
    this.worker = worker
    this.log = log
    this.traceparent = traceparent
  }

  /** Records waiting (those with the handler not included). */
  get waiting(): number {
    return this.queue.length
  }

  /** Queues `record` for delivery and sends what the window allows. */
  push(record: LogRecord): void {
    if (this.stopped) return
    if (this.queue.length >= MAX_QUEUED_DELIVERIES) {
      this.queue.shift()
      this.dropped++
      const now = Date.now()
      if (this.dropped === 1 || now - this.lastWarning >= DROP_WARNING_INTERVAL_MS) {
        this.lastWarning = now
        this.log.warn(`log trigger ${this.binding.id} has ${MAX_QUEUED_DELIVERIES} undelivered records; dropped the oldest`, {
          trigger_id: this.binding.id,
          function_id: this.binding.function_id,
          dropped: this.dropped,
        })
      }
    }
    this.queue.push(record)
    this.pump()
  }

  /** Drops what waits and sends nothing more (the binding was removed). */
  stop(): void {
    this.stopped = true
    this.queue.clear()
  }

  private pump(): void {
    while (!this.stopped && this.inFlight < MAX_IN_FLIGHT_DELIVERIES) {
      const record = this.queue.shift()
      if (record === undefined) return
      this.inFlight++
      this.worker.invoke({ function_id: this.binding.function_id, namespace: this.binding.namespace, data: record, traceparent: this.traceparent }).then(this.settled, this.settled)
    }
  }
}

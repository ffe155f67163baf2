/**
 * The trigger types of the observability worker (builtins.md §12.6): `log`, every stored log
 * record at or above the binding's level, delivered fire-and-forget per binding
 * (./deliveries.ts); and `trace`, the ids of traces that gained spans, batched over
 * {@link TRACE_BATCH_MS}.
 *
 * Deliveries run with an unsampled trace context ({@link UNSAMPLED}), so the spans and log records
 * their handlers make never fire `log` or `trace` again (no feedback loop).
 */
import type { LogRecord, SpanRecord } from '../../adapters/observability/records.ts'
import { headInternal, type SpanHead, type TelemetryStore } from '../../adapters/observability/store.ts'
import { UNSAMPLED_TRACEPARENT } from '../../engine/telemetry.ts'
import type { BindingInfo, LocalTriggerProvider, LocalTriggerTypeOptions, LocalWorker, Logger } from '../../engine/types.ts'
import { LogDelivery } from './deliveries.ts'
import { LOG_TRIGGER_FORMATS, TRACE_TRIGGER_FORMATS } from './formats.ts'

/** The `log` trigger type as the worker registers it (§12.6). */
export const LOG_TRIGGER_TYPE: LocalTriggerTypeOptions = { id: 'log', description: 'Receives every log record at or above its level (fire-and-forget)', ...LOG_TRIGGER_FORMATS }

/** The `trace` trigger type as the worker registers it (§12.6). */
export const TRACE_TRIGGER_TYPE: LocalTriggerTypeOptions = { id: 'trace', description: 'Receives {trace_ids} of traces that gained spans, batched over 300 ms', ...TRACE_TRIGGER_FORMATS }

/** `log` trigger `level` → minimum severity number (§12.6). */
const LEVEL_MIN: Record<string, number> = { all: 0, debug: 5, info: 9, warn: 13, error: 17 }
/** Unsampled context for trigger deliveries: their spans never fire `trace` again (§12.6). */
export const UNSAMPLED = UNSAMPLED_TRACEPARENT
/** The trace id of {@link UNSAMPLED}: a log call carrying it comes from a trigger delivery. */
export const DELIVERY_TRACE = '00000000000000000000000000000001'
/** How long a `trace` batch gathers trace ids, ms. */
export const TRACE_BATCH_MS = 300
/** Trace ids one `trace` batch holds; beyond that the oldest leave the batch (counted). */
export const MAX_BATCH_TRACES = 10_000

/**
 * Provider of the `log` trigger type: one {@link LogDelivery} per binding.
 * @example
 * const logs = new LogTriggers(context.worker, context.log)
 * context.worker.registerTriggerType(LOG_TRIGGER_TYPE, logs)
 * logs.deliver(record) // never blocks, never throws
 */
export class LogTriggers implements LocalTriggerProvider {
  private readonly bindings = new Map<string, LogDelivery>()
  private readonly worker: LocalWorker
  private readonly log: Logger

  constructor(worker: LocalWorker, log: Logger) {
    this.worker = worker
    this.log = log
  }

  /** Bindings registered. */
  get size(): number {
    return this.bindings.size
  }

  /** Records dropped by the deliveries of the current bindings (handlers behind). */
  get dropped(): number {
    let undelivered = 0
    for (const delivery of this.bindings.values()) undelivered += delivery.dropped
    return undelivered
  }

  /**
   * @throws Error with code `INVALID_TRIGGER_CONFIG` for a `level` other than all, debug, info,
   *   warn or error (any case).
   */
  registerTrigger(binding: BindingInfo): void {
    const level = String((binding.config as { level?: unknown } | null)?.level ?? 'all').toLowerCase()
    const min = LEVEL_MIN[level]
    if (min === undefined) throw Object.assign(new Error('level must be all, debug, info, warn or error'), { code: 'INVALID_TRIGGER_CONFIG' })
    // A known id is a replacement (protocol.md §5.5): what the old binding had waiting is dropped.
    this.bindings.get(binding.id)?.stop()
    this.bindings.set(binding.id, new LogDelivery(binding, min, this.worker, this.log, UNSAMPLED))
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.bindings.get(binding.id)?.stop()
    this.bindings.delete(binding.id)
  }

  /** Queues `record` for every binding whose level it reaches. */
  deliver(record: LogRecord): void {
    for (const delivery of this.bindings.values()) if (record.severity_number >= delivery.min) delivery.push(record)
  }

  /** Drops what every binding has waiting; the bindings go. */
  stop(): void {
    for (const delivery of this.bindings.values()) delivery.stop()
    this.bindings.clear()
  }
}

/**
 * Provider of the `trace` trigger type: {@link TraceTriggers.gained} gathers trace ids; after
 * {@link TRACE_BATCH_MS} each binding gets those whose root span matches its `service_name` and
 * `status` (case-insensitive), traces of internal functions left out.
 * @example
 * const traces = new TraceTriggers(context.worker, () => store)
 * context.worker.registerTriggerType(TRACE_TRIGGER_TYPE, traces)
 * traces.gained(span.trace_id)
 */
export class TraceTriggers implements LocalTriggerProvider {
  private readonly bindings = new Map<string, { binding: BindingInfo; service?: string; status?: string }>()
  private readonly worker: LocalWorker
  private readonly store: () => TelemetryStore
  private pendingTraces = new Set<string>()
  /** Trace ids left out of `trace` batches (more than {@link MAX_BATCH_TRACES} within one). */
  droppedTraceIds = 0
  private traceTimer: NodeJS.Timeout | undefined

  /** `store`: the store in use, where the root spans of a batch are read. */
  constructor(worker: LocalWorker, store: () => TelemetryStore) {
    this.worker = worker
    this.store = store
  }

  /** Bindings registered. */
  get size(): number {
    return this.bindings.size
  }

  registerTrigger(binding: BindingInfo): void {
    const c = (binding.config ?? {}) as { service_name?: unknown; status?: unknown }
    const entry: { binding: BindingInfo; service?: string; status?: string } = { binding }
    if (typeof c.service_name === 'string') entry.service = c.service_name.toLowerCase()
    if (typeof c.status === 'string') entry.status = c.status.toLowerCase()
    this.bindings.set(binding.id, entry)
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.bindings.delete(binding.id)
  }

  /** A span of `traceId` was stored: the trace joins the current batch. */
  gained(traceId: string): void {
    const pending = this.pendingTraces
    if (pending.size >= MAX_BATCH_TRACES && !pending.has(traceId)) {
      // A span flood: the batch keeps the newest traces (a set iterates oldest first).
      pending.delete(pending.values().next().value!)
      this.droppedTraceIds++
    }
    pending.add(traceId)
    if (this.traceTimer !== undefined) return
    this.traceTimer = setTimeout(() => {
      this.traceTimer = undefined
      const ids = [...this.pendingTraces]
      this.pendingTraces = new Set()
      // Traces of internal functions (the engine's own housekeeping) are not delivered, as their
      // log records are not (§12.6) and engine::traces::list hides them by default.
      // Heads: the roots are found without parsing spans kept as text.
      const roots = new Map(ids.map((id) => [id, rootOf(this.store().traceHeads(id))]))
      for (const [id, root] of roots) if (root !== undefined && headInternal(root)) roots.delete(id)
      for (const { binding, service, status } of this.bindings.values()) {
        const matched = [...roots.keys()].filter((id) => {
          if (service === undefined && status === undefined) return true
          const root = roots.get(id)
          return root !== undefined && (service === undefined || root.service_name.toLowerCase() === service) && (status === undefined || root.status === status)
        })
        if (matched.length === 0) continue
        this.worker.invoke({ function_id: binding.function_id, namespace: binding.namespace, data: { trace_ids: matched }, action: { type: 'void' }, traceparent: UNSAMPLED }).catch(() => {})
      }
    }, TRACE_BATCH_MS)
    this.traceTimer.unref()
  }

  /** Drops the batch being gathered. */
  stop(): void {
    clearTimeout(this.traceTimer)
  }
}

function rootOf(spans: SpanHead[]): SpanHead | undefined {
  const ids = new Set(spans.map((s) => s.span_id))
  let root: SpanHead | undefined
  for (const s of spans) if ((s.parent_span_id === null || !ids.has(s.parent_span_id)) && (root === undefined || s.start_time_unix_nano < root.start_time_unix_nano)) root = s
  return root
}

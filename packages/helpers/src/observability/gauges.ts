/**
 * Worker resource gauges (sdk.md §12.3, protocol.md §10.3): memory, CPU, event-loop lag and
 * uptime of this process as observable gauges, each with attributes `worker.id` and `worker.name`.
 *
 * Two ways in: {@link registerWorkerGauges} puts them on any OpenTelemetry `Meter`;
 * {@link startWorkerGauges} (what svc-sdk uses) writes the same metrics as OTLP/JSON text at each
 * export of `initOtel`'s telemetry, without the OpenTelemetry metrics SDK (issue 20: a worker with
 * default settings does not load it).
 *
 * @example
 * registerWorkerGauges(getMeter(), { workerId: 'w-1', workerName: 'billing' })
 * // … later
 * stopWorkerGauges()
 */
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { attributesJson, msNanos } from './otlp-json.ts'

type IntervalHistogram = ReturnType<typeof monitorEventLoopDelay>
import type { Attributes, Meter, ObservableGauge, ObservableResult } from '@opentelemetry/api'

/** Identity attached to every gauge. */
export interface WorkerGaugeOptions {
  /** From `workerregistered` (protocol.md §5.10). */
  workerId: string
  workerName?: string
}

/** One sample of the process's resources. CPU percent is over the time since the previous sample. */
export interface WorkerResourceSample {
  heapUsed: number
  heapTotal: number
  rss: number
  external: number
  /** 0–100 × cores, since the previous sample. */
  cpuPercent: number
  /** Cumulative CPU, µs. */
  cpuUserMicros: number
  cpuSystemMicros: number
  /** Mean event-loop delay beyond the timer resolution since the previous sample, ms. */
  eventLoopLagMs: number
  uptimeSeconds: number
}

/**
 * Samples process resources (sdk.md §15 `WorkerMetricsCollector`). Event-loop lag comes from
 * `perf_hooks.monitorEventLoopDelay` (20 ms resolution), reset at each sample.
 */
export class WorkerMetricsCollector {
  #histogram: IntervalHistogram | undefined
  #lastCpu = process.cpuUsage()
  #lastAt = process.hrtime.bigint()

  constructor() {
    this.#histogram = monitorEventLoopDelay({ resolution: 20 })
    this.#histogram.enable()
  }

  /** Takes a sample now. */
  sample(): WorkerResourceSample {
    const memory = process.memoryUsage()
    const cpu = process.cpuUsage()
    const now = process.hrtime.bigint()
    const elapsedMicros = Number(now - this.#lastAt) / 1000
    const usedMicros = cpu.user - this.#lastCpu.user + (cpu.system - this.#lastCpu.system)
    this.#lastCpu = cpu
    this.#lastAt = now
    const h = this.#histogram
    const mean = h !== undefined && h.count > 0 ? h.mean / 1e6 : 0
    h?.reset()
    return {
      heapUsed: memory.heapUsed,
      heapTotal: memory.heapTotal,
      rss: memory.rss,
      external: memory.external,
      cpuPercent: elapsedMicros > 0 ? (usedMicros / elapsedMicros) * 100 : 0,
      cpuUserMicros: cpu.user,
      cpuSystemMicros: cpu.system,
      eventLoopLagMs: Math.max(0, mean - 20),
      uptimeSeconds: process.uptime(),
    }
  }

  /** Stops the event-loop monitor. */
  stop(): void {
    this.#histogram?.disable()
    this.#histogram = undefined
  }
}

/** The gauge names of protocol.md §10.3, with the sample field each reads. */
export const WORKER_GAUGES: ReadonlyArray<readonly [string, keyof WorkerResourceSample, string]> = [
  ['svc.worker.memory.heap_used', 'heapUsed', 'By'],
  ['svc.worker.memory.heap_total', 'heapTotal', 'By'],
  ['svc.worker.memory.rss', 'rss', 'By'],
  ['svc.worker.memory.external', 'external', 'By'],
  ['svc.worker.cpu.percent', 'cpuPercent', '%'],
  ['svc.worker.cpu.user_micros', 'cpuUserMicros', 'us'],
  ['svc.worker.cpu.system_micros', 'cpuSystemMicros', 'us'],
  ['svc.worker.event_loop.lag_ms', 'eventLoopLagMs', 'ms'],
  ['svc.worker.uptime_seconds', 'uptimeSeconds', 's'],
]

let active: { collector: WorkerMetricsCollector; gauges: ObservableGauge[]; callback: (r: ObservableResult) => void }[] = []

/**
 * Registers the worker gauges on `meter`; they are observed at each metrics export. One sample is
 * shared by all gauges of a collection.
 */
export function registerWorkerGauges(meter: Meter, options: WorkerGaugeOptions): void {
  const attributes: Attributes = { 'worker.id': options.workerId }
  if (options.workerName !== undefined) attributes['worker.name'] = options.workerName
  const collector = new WorkerMetricsCollector()
  let sample: WorkerResourceSample | undefined
  let observed = 0
  for (const [name, field, unit] of WORKER_GAUGES) {
    const gauge = meter.createObservableGauge(name, { unit })
    const callback = (result: ObservableResult): void => {
      // A new sample at the first gauge of each collection round.
      if (observed % WORKER_GAUGES.length === 0 || sample === undefined) sample = collector.sample()
      observed++
      result.observe(sample[field], attributes)
    }
    gauge.addCallback(callback)
    active.push({ collector, gauges: [gauge], callback })
  }
}

/** A set of gauges started by {@link startWorkerGauges}. */
interface TextGauges {
  collector: WorkerMetricsCollector
  /** OTLP/JSON `KeyValue[]` of `worker.id` and `worker.name`. */
  attributes: string
  /** When the gauges started, ns since the Unix epoch (every point's `startTimeUnixNano`). */
  start: string
}

let textGauges: TextGauges[] = []

/**
 * Starts the worker gauges of protocol.md §10.3 without a `Meter`: each export of `initOtel`'s
 * telemetry (every `metricsExportIntervalMs`, and at `flushOtel`/`shutdownOtel`) samples them
 * once and sends them in its `MTRC` frame, as {@link registerWorkerGauges} on the SDK's meter would
 * (the same names, units, attributes and `asDouble` values). Nothing is sent while telemetry is
 * off or its metrics are disabled. Stopped by {@link stopWorkerGauges}.
 */
export function startWorkerGauges(options: WorkerGaugeOptions): void {
  const attributes: Record<string, string> = { 'worker.id': options.workerId }
  if (options.workerName !== undefined) attributes['worker.name'] = options.workerName
  textGauges.push({ collector: new WorkerMetricsCollector(), attributes: attributesJson(attributes), start: msNanos(Date.now(), 0) })
}

/** A gauge value as an OTLP/JSON `asDouble` (proto3 JSON strings for NaN and ±Infinity). */
function doubleJson(value: number): string {
  if (Number.isFinite(value)) return String(value)
  return '"' + (Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity') + '"'
}

/**
 * The OTLP/JSON `Metric`s (comma-separated, no brackets) of every gauge set started by
 * {@link startWorkerGauges}, sampled now; '' when there is none. @internal (the `MTRC` export of `otel.ts`)
 */
export function workerGaugeMetricsJson(): string {
  if (textGauges.length === 0) return ''
  const time = msNanos(Date.now(), 0)
  const metrics: string[] = []
  const samples = textGauges.map((g) => g.collector.sample())
  for (const [name, field, unit] of WORKER_GAUGES) {
    let points = ''
    for (let i = 0; i < textGauges.length; i++) {
      const g = textGauges[i]!
      if (i > 0) points += ','
      points += '{"attributes":' + g.attributes + ',"startTimeUnixNano":"' + g.start + '","timeUnixNano":"' + time + '","asDouble":' + doubleJson(samples[i]![field]) + '}'
    }
    metrics.push('{"name":"' + name + '","unit":"' + unit + '","gauge":{"dataPoints":[' + points + ']}}')
  }
  return metrics.join(',')
}

/** Removes every gauge callback {@link registerWorkerGauges} added, ends the gauges {@link startWorkerGauges} started, and stops their collectors. */
export function stopWorkerGauges(): void {
  for (const entry of active) {
    for (const gauge of entry.gauges) gauge.removeCallback(entry.callback)
    entry.collector.stop()
  }
  active = []
  for (const g of textGauges) g.collector.stop()
  textGauges = []
}

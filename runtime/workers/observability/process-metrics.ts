/**
 * Metrics of the engine process for `engine::metrics::list` (builtins.md §12.5, the task list's
 * "engine process metrics"), named after the OpenTelemetry semantic conventions for process,
 * V8 and Node.js runtime metrics:
 *
 * | Name | Type | Unit | Attributes | Source |
 * |---|---|---|---|---|
 * | `process.cpu.time` | sum | `s` | `cpu.mode`: `user`, `system` | `process.cpuUsage()` |
 * | `process.memory.usage` | gauge | `By` | | resident set size |
 * | `v8js.memory.heap.used` | gauge | `By` | `v8js.heap.space.name` | `v8.getHeapSpaceStatistics()` |
 * | `v8js.memory.heap.limit` | gauge | `By` | `v8js.heap.space.name` | size of each heap space |
 * | `process.uptime` | gauge | `s` | | `process.uptime()` |
 * | `nodejs.eventloop.delay.{min,max,mean,stddev,p50,p90,p99}` | gauge | `s` | | `monitorEventLoopDelay` |
 * | `nodejs.eventloop.utilization` | gauge | `1` | | `performance.eventLoopUtilization` |
 *
 * The event-loop figures cover the time since the previous listing (the first listing: since the
 * observability worker started); a listing too soon after the previous one to hold a sample
 * repeats the previous figures.
 */
import { monitorEventLoopDelay, performance, type EventLoopUtilization, type ELDHistogram } from 'node:perf_hooks'
import { getHeapSpaceStatistics } from 'node:v8'
import type { MetricSeries } from '../../adapters/observability/records.ts'

/** Sampling resolution of the event-loop delay histogram, ms. */
const DELAY_RESOLUTION_MS = 20
const DELAY_STATS = ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99'] as const

/**
 * The engine process's metric source; {@link start} enables the event-loop delay monitor,
 * {@link stop} disables it.
 * @example const m = new ProcessMetrics(); m.start(); hub.addMetricSource((now) => m.read(now))
 */
export class ProcessMetrics {
  private histogram: ELDHistogram | undefined
  private utilization: EventLoopUtilization | undefined
  private lastDelay: Record<(typeof DELAY_STATS)[number], number> | undefined
  private lastUtilization = 0

  start(): void {
    if (this.histogram !== undefined) return
    this.histogram = monitorEventLoopDelay({ resolution: DELAY_RESOLUTION_MS })
    this.histogram.enable()
    this.utilization = performance.eventLoopUtilization()
  }

  stop(): void {
    this.histogram?.disable()
    this.histogram = undefined
  }

  /** The current series, every point stamped `now` (Unix ns). */
  read(now: number): MetricSeries[] {
    const point = (value: number, attributes: Record<string, unknown> = {}) => ({ time_unix_nano: now, value, attributes })
    const cpu = process.cpuUsage()
    const series: MetricSeries[] = [
      { name: 'process.cpu.time', type: 'sum', unit: 's', description: 'CPU time of the engine process', points: [point(cpu.user / 1e6, { 'cpu.mode': 'user' }), point(cpu.system / 1e6, { 'cpu.mode': 'system' })] },
      { name: 'process.memory.usage', type: 'gauge', unit: 'By', description: 'resident set size of the engine process', points: [point(process.memoryUsage.rss())] },
    ]
    const spaces = getHeapSpaceStatistics()
    series.push(
      { name: 'v8js.memory.heap.used', type: 'gauge', unit: 'By', description: 'V8 heap memory used, per heap space', points: spaces.map((s) => point(s.space_used_size, { 'v8js.heap.space.name': s.space_name })) },
      { name: 'v8js.memory.heap.limit', type: 'gauge', unit: 'By', description: 'V8 heap memory reserved, per heap space', points: spaces.map((s) => point(s.space_size, { 'v8js.heap.space.name': s.space_name })) },
      { name: 'process.uptime', type: 'gauge', unit: 's', description: 'time since the engine process started', points: [point(process.uptime())] },
    )
    const delay = this.delay()
    if (delay !== undefined) {
      for (const stat of DELAY_STATS) series.push({ name: `nodejs.eventloop.delay.${stat}`, type: 'gauge', unit: 's', description: `event loop delay, ${stat}, since the previous listing`, points: [point(delay[stat])] })
    }
    if (this.utilization !== undefined) {
      const next = performance.eventLoopUtilization()
      const window = performance.eventLoopUtilization(next, this.utilization)
      if (window.idle + window.active > 0) {
        this.lastUtilization = window.utilization
        this.utilization = next
      }
      series.push({ name: 'nodejs.eventloop.utilization', type: 'gauge', unit: '1', description: 'share of time the event loop was busy since the previous listing', points: [point(this.lastUtilization)] })
    }
    return series
  }

  /** Delay statistics in seconds over the window since the previous read (the histogram is in ns). */
  private delay(): Record<(typeof DELAY_STATS)[number], number> | undefined {
    const h = this.histogram
    if (h === undefined) return this.lastDelay
    if (h.count > 0) {
      const s = (ns: number) => (Number.isFinite(ns) ? ns / 1e9 : 0)
      this.lastDelay = { min: s(h.min), max: s(h.max), mean: s(h.mean), stddev: s(h.stddev), p50: s(h.percentile(50)), p90: s(h.percentile(90)), p99: s(h.percentile(99)) }
      h.reset()
    }
    return this.lastDelay
  }
}

/** Worker gauges (sdk.md §12.3, protocol.md §10.3) exported as MTRC frames to a test receiver. */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { WebSocketServer } from 'ws'
import { flushOtel, initOtel, registerWorkerGauges, shutdownOtel, stopWorkerGauges, WORKER_GAUGES, WorkerMetricsCollector } from 'svc-helpers/observability'
import { getMeter, startWorkerGauges, workerGaugeMetricsJson } from 'svc-helpers/observability/internal'
import fc from 'fast-check'
import { waitFor } from '../../../test/support/wait.ts'

describe('worker gauges', () => {
  const metrics: any[] = []
  let wss: WebSocketServer

  before(async () => {
    wss = new WebSocketServer({ port: 0 })
    await new Promise((resolve) => wss.once('listening', resolve))
    wss.on('connection', (ws) =>
      ws.on('message', (data: Buffer) => {
        if (data.subarray(0, 4).toString() !== 'MTRC') return
        const body = JSON.parse(data.subarray(4).toString()) as { resourceMetrics: any[] }
        for (const r of body.resourceMetrics) for (const s of r.scopeMetrics) metrics.push(...s.metrics)
      }),
    )
    initOtel({ engineWsUrl: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, fetchInstrumentationEnabled: false, metricsExportIntervalMs: 60000 })
  })
  after(async () => {
    stopWorkerGauges()
    await shutdownOtel()
    wss.close()
  })

  it('exports every gauge of protocol.md §10.3 with worker.id and worker.name', async () => {
    registerWorkerGauges(getMeter(), { workerId: 'w-1', workerName: 'billing' })
    await flushOtel()
    await waitFor(() => metrics.length >= WORKER_GAUGES.length, () => `every gauge exported; got ${metrics.map((m) => m.name)}`)
    const names = new Set(metrics.map((m) => m.name))
    for (const [name] of WORKER_GAUGES) assert.ok(names.has(name), name)
    const rss = metrics.find((m) => m.name === 'svc.worker.memory.rss').gauge.dataPoints[0]
    assert.ok(Number(rss.asDouble ?? rss.asInt) > 0)
    const attrs = Object.fromEntries(rss.attributes.map((a: any) => [a.key, a.value.stringValue]))
    assert.deepEqual(attrs, { 'worker.id': 'w-1', 'worker.name': 'billing' })
  })

  it('startWorkerGauges exports the same gauges as OTLP/JSON without a meter, at each flush, until stopWorkerGauges', async () => {
    stopWorkerGauges()
    metrics.length = 0
    startWorkerGauges({ workerId: 'w-2', workerName: 'shipping' })
    await flushOtel()
    await waitFor(() => metrics.length >= WORKER_GAUGES.length, () => `every gauge exported; got ${metrics.map((m) => m.name)}`)
    for (const [name, , unit] of WORKER_GAUGES) {
      const metric = metrics.find((m) => m.name === name)
      assert.ok(metric, name)
      assert.equal(metric.unit, unit)
      const [point, ...more] = metric.gauge.dataPoints
      assert.equal(more.length, 0)
      assert.equal(typeof point.asDouble, 'number')
      assert.match(point.timeUnixNano, /^\d{19}$/)
      assert.match(point.startTimeUnixNano, /^\d{19}$/)
      assert.deepEqual(Object.fromEntries(point.attributes.map((a: any) => [a.key, a.value.stringValue])), { 'worker.id': 'w-2', 'worker.name': 'shipping' })
    }
    assert.ok(metrics.find((m) => m.name === 'svc.worker.memory.rss').gauge.dataPoints[0].asDouble > 0)
    stopWorkerGauges()
    metrics.length = 0
    await flushOtel()
    // Then a second set: once its points arrive, any frame of the first one sent by the flush
    // above has arrived too (one socket, in order).
    startWorkerGauges({ workerId: 'w-3' })
    await flushOtel()
    const points = () => metrics.flatMap((m) => m.gauge?.dataPoints ?? []).map((p: any) => Object.fromEntries(p.attributes.map((a: any) => [a.key, a.value.stringValue])))
    await waitFor(() => points().some((a) => a['worker.id'] === 'w-3'), 'the second set exported')
    assert.ok(!points().some((a) => a['worker.id'] === 'w-2'), 'the stopped set is not')
    stopWorkerGauges()
  })

  it('the collector samples sane values', () => {
    const c = new WorkerMetricsCollector()
    const s = c.sample()
    c.stop()
    assert.ok(s.heapUsed > 0 && s.rss > 0 && s.uptimeSeconds > 0)
    assert.ok(s.cpuPercent >= 0 && s.eventLoopLagMs >= 0)
  })
})

describe('property: worker gauges as OTLP/JSON (fast-check)', () => {
  it('any worker id and name (lone surrogates, quotes, control characters, long) give valid JSON that carries them unchanged', () => {
    const hostile = fc.oneof(fc.string({ unit: 'binary' }), fc.constantFrom('\uD800', 'a\uDFFFb', '"},{"key":"x', '\u0000\n\\', 'x'.repeat(10_000), ''))
    fc.assert(
      fc.property(hostile, fc.option(hostile, { nil: undefined }), (workerId, workerName) => {
        stopWorkerGauges()
        startWorkerGauges(workerName === undefined ? { workerId } : { workerId, workerName })
        const metrics = JSON.parse('[' + workerGaugeMetricsJson() + ']') as any[]
        stopWorkerGauges()
        assert.deepEqual(metrics.map((m) => m.name), WORKER_GAUGES.map(([name]) => name))
        for (const m of metrics) {
          const [point, ...more] = m.gauge.dataPoints
          assert.equal(more.length, 0)
          assert.ok(typeof point.asDouble === 'number' || ['NaN', 'Infinity', '-Infinity'].includes(point.asDouble))
          const attrs = Object.fromEntries(point.attributes.map((a: any) => [a.key, a.value.stringValue]))
          assert.deepEqual(attrs, workerName === undefined ? { 'worker.id': workerId } : { 'worker.id': workerId, 'worker.name': workerName })
        }
      }),
      { numRuns: 200 },
    )
    assert.equal(workerGaugeMetricsJson(), '', 'nothing once stopped')
  })
})

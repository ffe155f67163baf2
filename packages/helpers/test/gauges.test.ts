/** Worker gauges (sdk.md §12.3, protocol.md §10.3) exported as MTRC frames to a test receiver. */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { WebSocketServer } from 'ws'
import { flushOtel, initOtel, registerWorkerGauges, shutdownOtel, stopWorkerGauges, WORKER_GAUGES, WorkerMetricsCollector } from 'svc-helpers/observability'
import { getMeter } from 'svc-helpers/observability/internal'

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
    for (let i = 0; i < 100 && metrics.length < WORKER_GAUGES.length; i++) await new Promise((r) => setTimeout(r, 20))
    const names = new Set(metrics.map((m) => m.name))
    for (const [name] of WORKER_GAUGES) assert.ok(names.has(name), name)
    const rss = metrics.find((m) => m.name === 'svc.worker.memory.rss').gauge.dataPoints[0]
    assert.ok(Number(rss.asDouble ?? rss.asInt) > 0)
    const attrs = Object.fromEntries(rss.attributes.map((a: any) => [a.key, a.value.stringValue]))
    assert.deepEqual(attrs, { 'worker.id': 'w-1', 'worker.name': 'billing' })
  })

  it('the collector samples sane values', () => {
    const c = new WorkerMetricsCollector()
    const s = c.sample()
    c.stop()
    assert.ok(s.heapUsed > 0 && s.rss > 0 && s.uptimeSeconds > 0)
    assert.ok(s.cpuPercent >= 0 && s.eventLoopLagMs >= 0)
  })
})

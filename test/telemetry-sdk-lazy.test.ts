/**
 * SDK telemetry on by default loads the OpenTelemetry SDK only when something needs it (issue 20):
 * a svc-sdk worker process with default settings serves invocations whose handler spans reach the
 * engine, and its worker gauges too (sdk.md §12.3, protocol.md §10.3), it connects before even
 * `@opentelemetry/core` loads, while none of
 * `@opentelemetry/sdk-trace`, `sdk-logs`, `sdk-metrics`, `resources` or `otlp-transformer` has
 * been loaded, nor Node's undici (an ES import of `node:http` loads it); its first `Logger` record loads the logs SDK and still reaches `engine::logs::list`.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { ROOT } from './support/processes.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

/** The packages a worker with only handler spans and gauges must not load. */
const SDK_PACKAGES = ['@opentelemetry/otlp-transformer', '@opentelemetry/resources', '@opentelemetry/sdk-logs', '@opentelemetry/sdk-metrics', '@opentelemetry/sdk-trace']

describe('SDK telemetry loads the OpenTelemetry SDK lazily (issue 20)', () => {
  let engine: TestEngine
  let worker: ChildProcess
  /** The `@opentelemetry` packages the worker had loaded when it connected. */
  let atConnect: string[] = []

  before(async () => {
    engine = await startTestEngine()
    const env: Record<string, string | undefined> = { ...process.env }
    delete env.OTEL_ENABLED // the default: telemetry on
    worker = spawn(process.execPath, ['test/support/lazy-otel-worker.ts', engine.url], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    const stderr: string[] = []
    worker.stderr!.on('data', (d) => stderr.push(String(d)))
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: worker.stdout! }).on('line', (line) => {
        if (line.includes('"ready"')) {
          atConnect = (JSON.parse(line) as { modules: string[] }).modules
          resolve()
        }
      })
      worker.once('exit', (code) => reject(new Error(`the worker exited with ${code}:\n${stderr.join('')}`)))
    })
    await waitFor(async () => (engine.engine.functions.resolve('default', 'lazy::log') !== undefined ? true : undefined), 'the worker functions')
  })
  after(async () => {
    await new Promise((resolve) => (worker.exitCode !== null ? resolve(undefined) : (worker.once('exit', resolve), worker.kill('SIGTERM'))))
    await engine.stop()
  })

  const call = (function_id: string, data: unknown = {}): Promise<unknown> => engine.engine.inject({ function_id, data })

  it('a worker connects and registers before @opentelemetry/core loads; its first invocation loads it and the span still reaches the engine', async () => {
    assert.ok(atConnect.includes('@opentelemetry/api'), `the API is loaded: ${atConnect.join(', ')}`)
    assert.deepEqual(atConnect.filter((m) => m === '@opentelemetry/core' || m === '@opentelemetry/semantic-conventions'), [], 'core loads after the connection')
    assert.deepEqual(await call('lazy::echo', { n: 0 }), { n: 0 })
    const span = await waitFor(async () => {
      await call('lazy::modules')
      const { traces } = (await call('engine::traces::list', { name: 'execute lazy::echo' })) as { traces: Array<{ attributes: Record<string, unknown> }> }
      return traces[0]
    }, 'the span of lazy::echo')
    assert.equal(span.attributes['svc.function.id'], 'lazy::echo')
  })

  it('handler spans and worker gauges reach the engine without loading the SDK packages', async () => {
    assert.deepEqual(await call('lazy::echo', { n: 1 }), { n: 1 })
    // Each lazy::modules call flushes: the echo's span, then the gauges (started at workerregistered).
    let modules: string[] = []
    const span = await waitFor(async () => {
      modules = (await call('lazy::modules')) as string[]
      const { traces } = (await call('engine::traces::list', { name: 'execute lazy::echo' })) as { traces: Array<{ name: string; attributes: Record<string, unknown>; events: Array<{ name: string }> }> }
      return traces[0]
    }, 'the span of lazy::echo')
    assert.equal(span.attributes['svc.function.id'], 'lazy::echo')
    assert.deepEqual(span.events.map((e) => e.name).sort(), ['svc.invocation.input', 'svc.invocation.output'])
    const rss = await waitFor(async () => {
      modules = (await call('lazy::modules')) as string[]
      const { metrics } = (await call('engine::metrics::list', { metric_name: 'svc.worker.memory.rss', worker: 'lazy-otel' })) as { metrics: Array<{ type: string; unit?: string; points: Array<{ value: number; attributes: Record<string, unknown> }> }> }
      return metrics[0]
    }, 'the worker gauges')
    assert.equal(rss.type, 'gauge')
    assert.equal(rss.unit, 'By')
    assert.ok(rss.points[0]!.value > 0)
    assert.match(String(rss.points[0]!.attributes['worker.id']), /.+/)
    assert.ok(modules.includes('@opentelemetry/api'), 'the API is loaded')
    assert.deepEqual(modules.filter((m) => SDK_PACKAGES.includes(m)), [], 'no OpenTelemetry SDK package loaded')
  })

  it('a worker that registered and served calls has not loaded undici (Node\'s fetch and WebSocket)', async () => {
    assert.deepEqual(await call('lazy::echo', { n: 2 }), { n: 2 })
    assert.deepEqual(await call('lazy::undici'), [])
  })

  it('the first Logger record loads the logs SDK, and the record reaches engine::logs::list', async () => {
    const modules = (await call('lazy::log', { order: 7 })) as string[]
    assert.ok(modules.includes('@opentelemetry/sdk-logs'), 'the logs SDK is loaded once a record needs it')
    const record = await waitFor(async () => {
      const { logs } = (await call('engine::logs::list', { search: 'lazy log' })) as { logs: Array<{ body: string; service_name: string; attributes: Record<string, unknown> }> }
      return logs[0]
    }, 'the log record')
    assert.equal(record.body, 'lazy log')
    assert.equal(record.service_name, 'svc-node')
  })
})

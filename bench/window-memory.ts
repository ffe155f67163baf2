/**
 * Engine memory held by the observability window (builtins.md §12.3, issue 16 item 9, issue 20):
 * an engine process with the default observability settings (`store: builtin` unless BENCH_STORE
 * says otherwise) is fed one workload, then reports its resident set and heap.
 *
 *   big     BENCH_SPANS (default 20,000) spans over `/otel`, each with four 50 KiB attributes
 *           (200 KiB, within the default size limits), 10 per `OTLP` frame
 *   small   BENCH_SPANS (default 100,000) spans over `/otel` shaped like svc-sdk handler spans
 *           (a name, four attributes, one payload event), 100 per frame
 *   calls   BENCH_SPANS (default 100,000) invocations of an engine-served function through the
 *           pipeline (`engine.inject`, 64 at a time): one `execute bench::noop` span each
 *
 * `node bench/window-memory.ts big|small|calls` prints one JSON line: `{ workload, spans, rss_mib,
 * peak_rss_mib, heap_used_mib, rss_after_gc_mib, heap_after_gc_mib, window }` (`window`: the
 * observability health detail and, where the engine has it, `svc.observability.window_bytes`).
 * BENCH_SPANS=0 gives the engine's own baseline. Linux only (/proc).
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type BuiltinContext, type BuiltinWorker, type EngineConfig } from '../runtime/engine/types.ts'
import { createBuiltins } from '../runtime/workers/index.ts'

type Workload = 'big' | 'small' | 'calls'
const DEFAULT_SPANS: Record<Workload, number> = { big: 20_000, small: 100_000, calls: 100_000 }

/** `VmRSS` and `VmHWM` of a process, MiB. */
function rssOf(pid: number | 'self'): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0)
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) }
}

class BenchWorker implements BuiltinWorker {
  readonly name = 'bench'
  async start(context: BuiltinContext): Promise<void> {
    context.worker.registerFunction('bench::noop', () => ({ ok: true }))
  }
  async applySettings(): Promise<void> {}
  async stop(): Promise<void> {}
}

/** The engine process: prints `{engine_url}`, then answers `calls <n>` and `report` lines on stdin. */
async function engineProcess(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-window-'))
  const store = process.env.BENCH_STORE
  const config: EngineConfig = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30000,
    data_dir: dataDir,
    builtins: {
      'svc-http': { enabled: true, config: { port: 0 } },
      'svc-stream': { enabled: true, config: { port: 0 } },
      'svc-observability': { enabled: true, config: store === undefined ? {} : { store } },
    },
    local_workers: [],
  }
  const engine = new Engine(config, { log: silentLogger, builtins: [...createBuiltins(config), new BenchWorker()] })
  await engine.start()
  console.log(JSON.stringify({ engine_url: engine.workerUrls[0] }))
  const health = async (): Promise<string | undefined> =>
    ((await engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: Record<string, { detail?: string }> }).components.observability?.detail
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, arg] = line.split(' ')
    if (command === 'calls') {
      let left = Number(arg)
      await Promise.all(
        Array.from({ length: 64 }, async () => {
          while (left-- > 0) await engine.inject({ function_id: 'bench::noop', data: {} })
        }),
      )
      console.log(JSON.stringify({ done: true }))
    } else if (command === 'spans') {
      // The number of spans the window holds (to wait until a flood is ingested).
      console.log(JSON.stringify({ detail: await health() }))
    } else if (command === 'report') {
      const before = rssOf('self')
      const heapUsed = Math.round(process.memoryUsage().heapUsed / 1048576)
      const listed = (await engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'svc.observability.window_bytes' } })) as { metrics: Array<{ points: Array<{ value: number; attributes: Record<string, string> }> }> }
      const windowBytes = Object.fromEntries((listed.metrics[0]?.points ?? []).map((p) => [p.attributes['svc.telemetry.signal'], Math.round(p.value / 1048576)]))
      ;(globalThis as { gc?: () => void }).gc?.()
      const after = rssOf('self')
      const heapAfter = Math.round(process.memoryUsage().heapUsed / 1048576)
      console.log(JSON.stringify({ rss_mib: before.rss, peak_rss_mib: before.peak, heap_used_mib: heapUsed, rss_after_gc_mib: after.rss, heap_after_gc_mib: heapAfter, window: { detail: await health(), window_bytes_mib: windowBytes } }))
      await engine.stop()
      await rm(dataDir, { recursive: true, force: true })
      process.exit(0)
    }
  }
}

function smallFrame(count: number): string {
  const now = String(BigInt(Date.now()) * 1_000_000n)
  const spans = Array.from({ length: count }, () => ({
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    name: 'execute bench::echo',
    kind: 2,
    startTimeUnixNano: now,
    endTimeUnixNano: now,
    status: { code: 1 },
    attributes: [
      { key: 'svc.function.id', value: { stringValue: 'bench::echo' } },
      { key: 'faas.invocation_id', value: { stringValue: randomBytes(8).toString('hex') } },
      { key: 'svc.worker.name', value: { stringValue: 'bench' } },
      { key: 'code.function', value: { stringValue: 'echo' } },
    ],
    events: [{ name: 'payload', timeUnixNano: now, attributes: [{ key: 'svc.payload', value: { stringValue: '{"order_id":"ord_7f3a9c21","customer":"cus_42","total_cents":12999}' } }] }],
  }))
  const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }, { key: 'telemetry.sdk.language', value: { stringValue: 'nodejs' } }] }
  return 'OTLP' + JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 'svc-node' }, spans }] }] })
}

function bigFrame(count: number): string {
  const now = String(BigInt(Date.now()) * 1_000_000n)
  // Fresh text per span, as real payloads are (the engine parses each frame into new strings anyway).
  const spans = Array.from({ length: count }, () => ({
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    name: 'big',
    kind: 1,
    startTimeUnixNano: now,
    endTimeUnixNano: now,
    attributes: ['a', 'b', 'c', 'd'].map((key) => ({ key, value: { stringValue: randomBytes(25 * 1024).toString('hex') } })),
  }))
  return 'OTLP' + JSON.stringify({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }] }, scopeSpans: [{ spans }] }] })
}

async function driver(workload: Workload): Promise<void> {
  const total = Number(process.env.BENCH_SPANS ?? DEFAULT_SPANS[workload])
  const engine = spawn(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'engine'], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: engine.stdout! })[Symbol.asyncIterator]()
  const next = async (): Promise<Record<string, unknown>> => {
    for (;;) {
      const { value, done } = await lines.next()
      if (done) throw new Error('the engine ended early')
      if (String(value).startsWith('{')) return JSON.parse(String(value)) as Record<string, unknown>
    }
  }
  try {
    const { engine_url: url } = (await next()) as { engine_url: string }
    if (workload === 'calls') {
      engine.stdin!.write(`calls ${total}\n`)
      await next()
    } else {
      const ws = new WebSocket(`${url}/otel`, { perMessageDeflate: false })
      await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
      const perFrame = workload === 'big' ? 10 : 100
      for (let sent = 0; sent < total; sent += perFrame) {
        ws.send(Buffer.from(workload === 'big' ? bigFrame(perFrame) : smallFrame(perFrame)))
        // Keep the socket's buffer small: the engine reads at its own pace.
        while (ws.bufferedAmount > 8 << 20) await new Promise((r) => setTimeout(r, 5))
      }
      await new Promise<void>((resolve) => ws.send(Buffer.from('OTLP{}'), () => resolve()))
      // Until the engine has read everything: the window's count stops changing.
      let last = ''
      for (;;) {
        await new Promise((r) => setTimeout(r, 1000))
        engine.stdin!.write('spans\n')
        const { detail } = (await next()) as { detail: string }
        if (detail === last) break
        last = detail
      }
      ws.close()
    }
    engine.stdin!.write('report\n')
    console.log(JSON.stringify({ workload, spans: total, store: process.env.BENCH_STORE ?? 'builtin (default)', ...(await next()) }))
  } finally {
    if (engine.exitCode === null) engine.kill('SIGKILL')
  }
}

const mode = process.argv[2]
if (mode === 'engine') await engineProcess()
else if (mode === 'big' || mode === 'small' || mode === 'calls') await driver(mode)
else {
  console.error('usage: node bench/window-memory.ts big|small|calls')
  process.exitCode = 2
}

/**
 * Engine CPU per span received over `/otel` (protocol.md §10.2), by observability store and frame
 * size: real svc-sdk handler spans (the invocation benchmark's `bench::echo` with its payload
 * events, serialized once in this process) sent as `OTLP` frames of BENCH_FRAME_SPANS spans
 * (default 64) at BENCH_SPANS_PER_SECOND (default 20,000) for 5 s to an engine process
 * (`node bench/tracing.ts sdk-engine`, BENCH_STORE = builtin | memory | none | disabled).
 *
 * `node bench/otel-ingest.ts` prints `{ store, frame_spans, bytes_per_span, spans,
 * engine_cpu_us_per_span }` (the engine's CPU, all threads, from /proc: Linux only).
 *
 * `node bench/otel-ingest.ts inprocess` runs the engine in this process instead and hands it the
 * same frames, at the same rate, straight to its telemetry hub (`engine.telemetry.frame`, what the
 * `/otel` listener calls after `ws` and the UTF-8 decode): the CPU of the ingest alone, all
 * threads (the SQLite writer's included, up to the store's close), from `process.cpuUsage`. Less
 * noisy on a shared machine than the socket mode, so builds compare better; it adds `dropped_rows`
 * (rows the builtin store's writer could not keep up with; they were not written, so not counted).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import WebSocket from 'ws'
import type { Transport, TransportHandlers } from 'svc-protocol/transport'
import { flushOtel, initOtel, shutdownOtel } from 'svc-sdk/telemetry'
import { endInvocationSpan, runInSpan, startInvocationSpan } from '../packages/sdk/src/tracing.ts'
import { PAYLOAD } from './payload.ts'

const FRAME_SPANS = Number(process.env.BENCH_FRAME_SPANS ?? 64)
const RATE = Number(process.env.BENCH_SPANS_PER_SECOND ?? 20_000)
const SECONDS = 5

/** One `ExportTraceServiceRequest` of FRAME_SPANS spans as svc-sdk writes them (re-batched when svc-sdk split them). */
async function sampleFrame(): Promise<string> {
  const frames: Array<{ resourceSpans: Array<{ resource: unknown; scopeSpans: Array<{ spans: unknown[] }> }> }> = []
  const connector = (): Transport => ({
    send: () => {},
    sendBinary: (data) => void frames.push(JSON.parse(Buffer.from(data).subarray(4).toString('utf8'))),
    bufferedAmount: 0,
    isOpen: true,
    close: () => {},
    terminate: () => {},
    ping: () => {},
    setHandlers: (h: TransportHandlers) => queueMicrotask(() => h.open?.()),
  })
  initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector, metricsEnabled: false, fetchInstrumentationEnabled: false })
  await new Promise((r) => setImmediate(r))
  for (let i = 0; i < FRAME_SPANS; i++) {
    const s = startInvocationSpan('bench::echo', PAYLOAD, undefined, 'svc.function.id=bench%3A%3Aecho,iii.function.id=bench%3A%3Aecho')!
    endInvocationSpan(s, runInSpan(s, () => PAYLOAD), undefined, JSON.stringify(PAYLOAD))
  }
  await flushOtel()
  await shutdownOtel()
  const spans = frames.flatMap((f) => f.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((ss) => ss.spans)))
  return JSON.stringify({ resourceSpans: [{ resource: frames[0]!.resourceSpans[0]!.resource, scopeSpans: [{ scope: { name: 'svc-node' }, spans }] }] })
}

function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10 // clock ticks of 10 ms
}

const frame = await sampleFrame()

/**
 * The engine in this process, the frames handed to its hub: `{ …, mode: 'inprocess',
 * engine_cpu_us_per_span, dropped_rows }`.
 */
async function inProcess(): Promise<void> {
  const { mkdtemp, rm } = await import('node:fs/promises')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const { Engine } = await import('../runtime/engine/engine.ts')
  const { silentLogger } = await import('../runtime/engine/logger.ts')
  const { LISTENER_DEFAULTS } = await import('../runtime/engine/types.ts')
  const { createBuiltins } = await import('../runtime/workers/index.ts')
  const { ObservabilityWorker } = await import('../runtime/workers/observability/worker.ts')
  const { SqliteStore } = await import('../runtime/adapters/observability/sqlite.ts')
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-otel-ingest-'))
  const store = process.env.BENCH_STORE ?? 'builtin'
  const config = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30000,
    data_dir: dataDir,
    builtins: { 'svc-observability': { enabled: true, config: store === 'disabled' ? { enabled: false } : { store, sampling_ratio: 1 } } },
    local_workers: [],
  }
  const builtins = createBuiltins(config)
  const engine = new Engine(config, { log: silentLogger, builtins })
  await engine.start()
  // The frame cut at each trace id: each frame sent gets fresh ids (a new prefix), as live traffic has.
  const pieces = frame.split(/(?<="traceId":")[0-9a-f]{4}/)
  const source = { worker_name: 'bench' }
  await new Promise((r) => setTimeout(r, 500))
  const before = process.cpuUsage()
  let sent = 0
  let k = 0
  const start = performance.now()
  while (performance.now() - start < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * RATE)
    while (sent + FRAME_SPANS <= due) {
      const prefix = (k++ % 65536).toString(16).padStart(4, '0')
      engine.telemetry.frame('OTLP', pieces.join(prefix), source)
      sent += FRAME_SPANS
    }
    await new Promise((r) => setTimeout(r, 5))
  }
  const worker = builtins.find((b) => b instanceof ObservabilityWorker)
  const held = worker?.currentStore
  held?.flush()
  const dropped = held instanceof SqliteStore ? held.droppedRows : 0
  const used = process.cpuUsage(before)
  await engine.stop()
  await rm(dataDir, { recursive: true, force: true })
  console.log(JSON.stringify({ mode: 'inprocess', store, frame_spans: FRAME_SPANS, bytes_per_span: Math.round(frame.length / FRAME_SPANS), spans: sent, engine_cpu_us_per_span: Math.round(((used.user + used.system) / sent) * 10) / 10, dropped_rows: dropped }))
}

if (process.argv[2] === 'inprocess') {
  await inProcess()
  process.exit(0)
}

const engine = spawn(process.execPath, [...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), 'bench/tracing.ts', 'sdk-engine'], { stdio: ['ignore', 'pipe', 'inherit'] })
try {
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: engine.stdout! })
      .on('line', (line) => {
        if (line.includes('engine_url')) resolve((JSON.parse(line) as { engine_url: string }).engine_url)
      })
      .on('close', () => reject(new Error('the engine ended before printing its URL')))
  })
  const ws = new WebSocket(`${url}/otel`, { perMessageDeflate: false })
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
  await new Promise((r) => setTimeout(r, 500))
  const before = cpuMs(engine.pid!)
  let sent = 0
  let k = 0
  const start = performance.now()
  while (performance.now() - start < SECONDS * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * RATE)
    while (sent + FRAME_SPANS <= due) {
      // Fresh trace ids per frame, as live traffic has (the store indexes spans by trace).
      const prefix = (k++ % 65536).toString(16).padStart(4, '0')
      ws.send(Buffer.from('OTLP' + frame.replace(/"traceId":"[0-9a-f]{4}/g, `"traceId":"${prefix}`)))
      sent += FRAME_SPANS
    }
    await new Promise((r) => setTimeout(r, 5))
  }
  await new Promise((r) => setTimeout(r, 1000)) // let the engine finish what it received
  const used = cpuMs(engine.pid!) - before
  console.log(JSON.stringify({ store: process.env.BENCH_STORE ?? 'builtin', frame_spans: FRAME_SPANS, bytes_per_span: Math.round(frame.length / FRAME_SPANS), spans: sent, engine_cpu_us_per_span: Math.round((used * 1000 * 10) / sent) / 10 }))
  ws.close()
} finally {
  engine.kill('SIGTERM')
}

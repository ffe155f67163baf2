/**
 * The invocation benchmark with tracing on and off (issue 9): one process per mode, an engine
 * with the default built-ins plus `bench::noop`, an in-process function the engine traces
 * (`execute bench::noop`), reached two ways:
 *
 *   ws    `invokefunction` frames over a raw WebSocket (`sequential` p50, `throughput` at 64 in flight)
 *   http  `GET /bench/noop` through svc-http (`<METHOD> <route>` span plus the `execute` span)
 *
 * `node bench/tracing.ts on|off` prints one JSON line. `on`: `store: builtin`, `sampling_ratio: 1`;
 * `off`: `enabled: false` (the worker runs, no spans are recorded). `node bench/tracing.ts` runs
 * both, alternating, in child processes and prints the ratios (target: on ≥ 0.7 × off in
 * throughput, p50 within 1.3×).
 */
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import WebSocket from 'ws'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type BuiltinContext, type BuiltinWorker, type EngineConfig } from '../runtime/engine/types.ts'
import { createBuiltins } from '../runtime/workers/index.ts'
import { sequential, throughput } from './measure.ts'

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 3000)

/** Serves `bench::noop` in-process and binds it to `GET /bench/noop`. */
class BenchWorker implements BuiltinWorker {
  readonly name = 'bench'
  async start(context: BuiltinContext): Promise<void> {
    context.worker.registerFunction('bench::noop', () => ({ status_code: 200, body: { ok: true } }))
    context.worker.registerTrigger({ id: 'bench-route', trigger_type: 'http', function_id: 'bench::noop', config: { api_path: '/bench/noop', http_method: 'GET' } })
  }
  async applySettings(): Promise<void> {}
  async stop(): Promise<void> {}
}

async function measure(mode: 'on' | 'off'): Promise<Record<string, unknown>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-tracing-'))
  const observability = mode === 'on' ? { store: process.env.BENCH_STORE ?? 'builtin', sampling_ratio: 1, ...(process.env.BENCH_MAX_SPANS ? { memory_max_spans: Number(process.env.BENCH_MAX_SPANS) } : {}) } : { enabled: false }
  const config: EngineConfig = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30000,
    data_dir: dataDir,
    builtins: { 'svc-http': { enabled: true, config: { port: 0 } }, 'svc-stream': { enabled: true, config: { port: 0 } }, 'svc-observability': { enabled: true, config: observability } },
    local_workers: [],
  }
  const engine = new Engine(config, { log: silentLogger, builtins: [...createBuiltins(config), new BenchWorker()] })
  await engine.start()
  try {
    const ws = new WebSocket(engine.workerUrls[0]!, { perMessageDeflate: false })
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
    const pending = new Map<string, () => void>()
    ws.on('message', (data) => {
      const text = data.toString()
      const id = /"invocation_id":"([^"]+)"/.exec(text)?.[1]
      if (id !== undefined) {
        pending.get(id)?.()
        pending.delete(id)
      }
    })
    let n = 0
    const wsCall = (): Promise<void> =>
      new Promise((resolve) => {
        const id = `i${n++}`
        pending.set(id, resolve)
        ws.send(`{"type":"invokefunction","invocation_id":"${id}","function_id":"bench::noop","data":{"x":1}}`)
      })
    const agent = new Agent({ keepAlive: true, maxSockets: 64 })
    const target = new URL(`${engine.listenUrls('svc-http')[0]}/bench/noop`)
    const httpCall = (): Promise<void> =>
      new Promise((resolve, reject) => {
        const req = request({ host: target.hostname, port: target.port, path: target.pathname, agent }, (res) => {
          res.resume()
          res.on('end', () => resolve())
        })
        req.on('error', reject)
        req.end()
      })
    const wsLatency = await sequential(wsCall, 5000, 2000)
    const wsRate = await throughput(wsCall, 64, DURATION_MS)
    const httpLatency = await sequential(httpCall, 3000, 1000)
    const httpRate = await throughput(httpCall, 64, DURATION_MS)
    const spans = (await engine.inject({ function_id: 'engine::health::check', data: {} })) as { components: Record<string, { detail?: string }> }
    ws.close()
    agent.destroy()
    return { mode, ws_p50_us: wsLatency.p50_us, ws_per_second: wsRate, http_p50_us: httpLatency.p50_us, http_per_second: httpRate, store: spans.components.observability?.detail }
  } finally {
    await engine.stop()
    await rm(dataDir, { recursive: true, force: true })
  }
}

function child(mode: string): Promise<Record<string, any>> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [new URL(import.meta.url).pathname, mode], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    p.stdout.on('data', (d) => (out += d))
    p.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').at(-1)!)) : reject(new Error(`${mode} exited ${code}`))))
  })
}

const mode = process.argv[2]
if (mode === 'on' || mode === 'off') {
  console.log(JSON.stringify(await measure(mode)))
} else {
  const runs: Array<Record<string, any>> = []
  for (const m of ['off', 'on', 'off', 'on']) runs.push(await child(m))
  const best = (m: string, key: string, pick: (a: number, b: number) => number) => runs.filter((r) => r.mode === m).map((r) => r[key] as number).reduce(pick)
  const ratio = (key: string, higherIsBetter: boolean) => {
    const pick = higherIsBetter ? (a: number, b: number) => Math.max(a, b) : (a: number, b: number) => Math.min(a, b)
    return Math.round((best('on', key, pick) / best('off', key, pick)) * 100) / 100
  }
  console.log(JSON.stringify({ runs, ratios: { ws_throughput: ratio('ws_per_second', true), ws_p50: ratio('ws_p50_us', false), http_throughput: ratio('http_per_second', true), http_p50: ratio('http_p50_us', false) } }, null, 1))
}

/**
 * The invocation benchmark with tracing on and off (issue 9), in two parts.
 *
 * **engine**: one process per mode, an engine with the default built-ins plus `bench::noop`, an
 * in-process function the engine traces (`execute bench::noop`), reached two ways:
 *
 *   ws    `invokefunction` frames over a raw WebSocket (`sequential` p50, `throughput` at 64 in flight)
 *   http  `GET /bench/noop` through svc-http (`<METHOD> <route>` span plus the `execute` span)
 *
 * `node bench/tracing.ts on|off` prints one JSON line. `on`: `store: builtin`, `sampling_ratio: 1`;
 * `off`: `enabled: false` (the worker runs, no spans are recorded).
 *
 * **sdk**: routed calls between two svc-sdk workers, caller → engine → callee, three processes
 * (`bench/load-ws.ts svc` and `bench/callee.ts`, as in `npm run bench`). The engine (its own
 * process, `node bench/tracing.ts sdk-engine`) is the same in both modes: observability with
 * `store: builtin` (BENCH_STORE=memory|none overrides; `disabled`: the worker off, frames dropped
 * unread) and `sampling_ratio: 1`. Only the SDK's telemetry
 * differs: `OTEL_ENABLED=false` vs `true` in caller and callee, so with it on every call records
 * one `execute bench::echo` span in the callee (a new sampled trace: the caller has no span) with
 * its payload events, exported over `/otel` and stored by the engine. A fresh engine per run;
 * modes alternate BENCH_ROUNDS times (default 3), the median of each is compared. Each run then
 * measures CPU µs per call of the three processes at one fixed rate (BENCH_RATE, default 10,000
 * calls/s, the same in both modes; `sdk-rate`): what telemetry costs each process, without the
 * batching effects that make calls/s swing on a shared 2-core machine.
 * Each run also reports the callee's start (`callee.start_ms`: spawn to connected, imports and
 * telemetry set-up included) and its RSS when connected and after the runs (`rss_ready_mib`,
 * `rss_after_mib`; /proc, Linux).
 * BENCH_ON_ONLY=caller|callee turns telemetry on in one of the two only (to see what each costs).
 * BENCH_CPU_PROF=<dir> runs the three processes of every run with `--cpu-prof`, each thread's profile in
 * `<dir>/<process>-<mode>-<run>/`.
 *
 * `node bench/tracing.ts` runs both parts, `node bench/tracing.ts engine|sdk` one; each prints the
 * runs and the on/off ratios (target: on ≥ 0.7 × off in throughput, p50 within 1.3×).
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type BuiltinContext, type BuiltinWorker, type EngineConfig } from '../runtime/engine/types.ts'
import { createBuiltins } from '../runtime/workers/index.ts'
import { registerWorker } from 'svc-sdk'
import { IN_FLIGHT, runMain, sequential, throughput } from './measure.ts'
import { ENGINE_V8_FLAGS } from '../bin/engine-heap.js'
import { PAYLOAD } from './payload.ts'

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

/** The engine part: both modes alternated twice in child processes, best of each compared. */
async function engineMain(): Promise<Record<string, unknown>> {
  const runs: Array<Record<string, any>> = []
  for (const m of ['off', 'on', 'off', 'on']) runs.push(await child(m))
  const best = (m: string, key: string, pick: (a: number, b: number) => number) => runs.filter((r) => r.mode === m).map((r) => r[key] as number).reduce(pick)
  const ratio = (key: string, higherIsBetter: boolean) => {
    const pick = higherIsBetter ? (a: number, b: number) => Math.max(a, b) : (a: number, b: number) => Math.min(a, b)
    return Math.round((best('on', key, pick) / best('off', key, pick)) * 100) / 100
  }
  return { runs, ratios: { ws_throughput: ratio('ws_per_second', true), ws_p50: ratio('ws_p50_us', false), http_throughput: ratio('http_per_second', true), http_p50: ratio('http_p50_us', false) } }
}

/**
 * `sdk-engine`: the engine process of the sdk part. Prints `{engine_url}`; SIGTERM stops it.
 * Observability: `store` from BENCH_STORE (default `builtin`), `sampling_ratio: 1`. Before it
 * stops it prints `{store}`, the observability health detail (how many spans it holds).
 */
async function sdkEngine(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-tracing-sdk-'))
  const config: EngineConfig = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30000,
    data_dir: dataDir,
    builtins: {
      'svc-http': { enabled: true, config: { port: 0 } },
      'svc-stream': { enabled: true, config: { port: 0 } },
      'svc-observability': { enabled: true, config: process.env.BENCH_STORE === 'disabled' ? { enabled: false } : { store: process.env.BENCH_STORE ?? 'builtin', sampling_ratio: 1 } },
    },
    local_workers: [],
  }
  const engine = new Engine(config, { log: silentLogger, builtins: createBuiltins(config) })
  await engine.start()
  process.once('SIGTERM', () => {
    void engine
      .inject({ function_id: 'engine::health::check', data: {} })
      .then((health) => console.log(JSON.stringify({ store: (health as { components: Record<string, { detail?: string }> }).components.observability?.detail })))
      .then(() => engine.stop())
      .then(() => rm(dataDir, { recursive: true, force: true }))
      .finally(() => process.exit(0))
  })
  console.log(JSON.stringify({ engine_url: engine.workerUrls[0] }))
}

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const children: ChildProcess[] = []

/** A child process and a way to wait for its first JSON line that has a key. */
interface NodeChild {
  child: ChildProcess
  /** Resolves with the first JSON line printed (before or after the call) that has `key`; rejects when the process ends first. */
  json(key: string): Promise<Record<string, any>>
}

/** Starts `node <args>` from the repository root; `--cpu-prof` when BENCH_CPU_PROF names a directory. */
function startNode(args: string[], env: Record<string, string>, profileName: string): NodeChild {
  const dir = process.env.BENCH_CPU_PROF
  // One directory per process, Node's own file names: every thread's profile (the SQLite writer's too).
  const prof = dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, profileName)}`] : []
  const p = spawn(process.execPath, [...prof, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(p)
  const seen: Array<Record<string, any>> = []
  let ended = false
  const waiters = new Set<() => void>()
  const wake = () => {
    for (const w of [...waiters]) w()
  }
  createInterface({ input: p.stdout! })
    .on('line', (line) => {
      try {
        seen.push(JSON.parse(line))
      } catch {
        return // a log line
      }
      wake()
    })
    .on('close', () => {
      ended = true
      wake()
    })
  return {
    child: p,
    json: (key) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const found = seen.find((v) => typeof v === 'object' && v !== null && key in v)
          if (found === undefined && !ended) return
          waiters.delete(check)
          if (found !== undefined) resolve(found)
          else reject(new Error(`${args.join(' ')} ended before printing ${key}`))
        }
        waiters.add(check)
        check()
      }),
  }
}

/** CPU time (user + system) a child has used so far, ms, from /proc (Linux; 0 elsewhere). */
async function cpuMs(p: ChildProcess): Promise<number> {
  try {
    const stat = await readFile(`/proc/${p.pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return 0
  }
}
/** Resident set size of a child, MiB, from /proc (Linux; 0 elsewhere). */
async function rssMib(p: ChildProcess): Promise<number> {
  try {
    const status = await readFile(`/proc/${p.pid}/status`, 'utf8')
    return Math.round(Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) / 102.4) / 10
  } catch {
    return 0
  }
}
/** `getconf CLK_TCK` on Linux. */
const CLOCK_TICKS = 100

function stopChild(p: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve()
    p.once('exit', () => resolve())
    p.kill('SIGTERM')
  })
}

/**
 * One sdk run: a fresh engine, a callee and a caller with SDK telemetry `mode`. Returns the
 * caller's line (`p50_us`, `p99_us`, `per_second` by in-flight count) and the engine's `store`
 * detail (spans held).
 */
async function sdkRun(mode: 'on' | 'off', round: number): Promise<Record<string, any>> {
  const env = { OTEL_ENABLED: mode === 'on' ? 'true' : 'false' }
  // Diagnosis: BENCH_ON_ONLY=caller|callee keeps the other side off in the `on` runs.
  const only = process.env.BENCH_ON_ONLY
  const calleeEnv = only === 'caller' ? { OTEL_ENABLED: 'false' } : env
  const callerEnv = only === 'callee' ? { OTEL_ENABLED: 'false' } : env
  // The V8 heap settings `svc` gives its engine (bin/engine-heap.js), so this engine is the users'.
  const engine = startNode([...ENGINE_V8_FLAGS, new URL(import.meta.url).pathname, 'sdk-engine'], {}, `engine-${mode}-${round}`)
  try {
    const { engine_url: url } = await engine.json('engine_url')
    const calleeStart = performance.now()
    const callee = startNode(['bench/callee.ts', url], calleeEnv, `callee-${mode}-${round}`)
    try {
      await callee.json('ready')
      // The worker's start: spawn to connected (imports, telemetry set-up, handshake), and its RSS then.
      const start = { ms: Math.round(performance.now() - calleeStart), rss_mib: await rssMib(callee.child) }
      const caller = startNode(['bench/load-ws.ts', 'svc', url], callerEnv, `caller-${mode}-${round}`)
      const result = await caller.json('per_second')
      await new Promise((resolve) => (caller.child.exitCode !== null ? resolve(undefined) : caller.child.once('exit', resolve)))
      // CPU per call at one fixed rate for both modes: unlike calls/s it does not depend on how
      // well the three processes batch each other's frames, so it shows what telemetry costs.
      const paced = startNode([new URL(import.meta.url).pathname, 'sdk-rate', url], callerEnv, `paced-${mode}-${round}`)
      await paced.json('measuring')
      const before = [await cpuMs(engine.child), await cpuMs(callee.child)]
      const done = await paced.json('calls')
      const after = [await cpuMs(engine.child), await cpuMs(callee.child)]
      const perCall = (ms: number) => Math.round((ms * 1000 * 10) / done.calls) / 10
      result.cpu_us_per_call = { caller: perCall(done.cpu_ms), engine: perCall(after[0]! - before[0]!), callee: perCall(after[1]! - before[1]!) }
      await new Promise((resolve) => (paced.child.exitCode !== null ? resolve(undefined) : paced.child.once('exit', resolve)))
      result.callee = { start_ms: start.ms, rss_ready_mib: start.rss_mib, rss_after_mib: await rssMib(callee.child) }
      await stopChild(callee.child)
      const stopped = stopChild(engine.child)
      const { store } = await engine.json('store')
      await stopped
      return { ...result, mode, round, store }
    } finally {
      await stopChild(callee.child)
    }
  } finally {
    await stopChild(engine.child)
  }
}

/** The sdk part: off and on alternated BENCH_ROUNDS times; medians compared. */
async function sdkMain(): Promise<Record<string, unknown>> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
  const runs: Array<Record<string, any>> = []
  for (let round = 0; round < rounds; round++) for (const m of ['off', 'on'] as const) runs.push(await sdkRun(m, round))
  const median = (m: string, get: (r: Record<string, any>) => number) => {
    const values = runs.filter((r) => r.mode === m).map(get).sort((a, b) => a - b)
    return values[Math.floor(values.length / 2)]!
  }
  const ratio = (get: (r: Record<string, any>) => number) => Math.round((median('on', get) / median('off', get)) * 100) / 100
  const summary: Record<string, unknown> = {}
  for (const m of ['off', 'on']) {
    summary[m] = {
      p50_us: median(m, (r) => r.p50_us),
      p99_us: median(m, (r) => r.p99_us),
      per_second: Object.fromEntries(IN_FLIGHT.map((n) => [n, median(m, (r) => r.per_second[n])])),
      cpu_us_per_call: Object.fromEntries(['caller', 'engine', 'callee'].map((k) => [k, median(m, (r) => r.cpu_us_per_call[k])])),
      callee: Object.fromEntries(['start_ms', 'rss_ready_mib', 'rss_after_mib'].map((k) => [k, median(m, (r) => r.callee[k])])),
    }
  }
  return {
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}`,
    store: process.env.BENCH_STORE ?? 'builtin',
    runs: runs.map((r) => ({ mode: r.mode, p50_us: r.p50_us, per_second: r.per_second, cpu_us_per_call: r.cpu_us_per_call, callee: r.callee, store: r.store })),
    median: summary,
    ratios: { p50: ratio((r) => r.p50_us), ...Object.fromEntries(IN_FLIGHT.map((n) => [`throughput_${n}`, ratio((r) => r.per_second[n])])) },
  }
}

/**
 * `sdk-rate <engine_url>`: a svc-sdk caller that invokes `bench::echo` at BENCH_RATE calls/s
 * (default 10,000; at most 256 in flight) for BENCH_RATE_MS (default 3,000 ms) after a 1 s warm-up.
 * Prints `{measuring}` when the measured window starts and `{calls, cpu_ms}` when it ends
 * (`cpu_ms`: this process, user + system).
 */
async function sdkRate(url: string): Promise<void> {
  const rate = Number(process.env.BENCH_RATE ?? 10_000)
  const windowMs = Number(process.env.BENCH_RATE_MS ?? 3000)
  const client = registerWorker(url, { workerName: 'bench-paced' })
  for (let i = 0; ; i++) {
    try {
      await client.trigger({ function_id: 'bench::echo', payload: PAYLOAD })
      break
    } catch (err) {
      if (i > 200) throw err
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  let inFlight = 0
  let completed = 0
  const pace = async (ms: number): Promise<void> => {
    const start = performance.now()
    let issued = 0
    while (performance.now() - start < ms) {
      const due = Math.floor(((performance.now() - start) * rate) / 1000)
      while (issued < due && inFlight < 256) {
        issued++
        inFlight++
        void client.trigger({ function_id: 'bench::echo', payload: PAYLOAD }).then(() => {
          inFlight--
          completed++
        })
      }
      await new Promise((r) => setTimeout(r, 1))
    }
    while (inFlight > 0) await new Promise((r) => setTimeout(r, 1))
  }
  await pace(1000)
  console.log(JSON.stringify({ measuring: true }))
  completed = 0
  const cpu = process.cpuUsage()
  await pace(windowMs)
  const used = process.cpuUsage(cpu)
  console.log(JSON.stringify({ calls: completed, cpu_ms: Math.round((used.user + used.system) / 1000) }))
  await client.shutdown()
  process.exit(0)
}

const mode = process.argv[2]
if (mode === 'on' || mode === 'off') {
  console.log(JSON.stringify(await measure(mode)))
} else if (mode === 'sdk-engine') {
  await sdkEngine()
} else if (mode === 'sdk-rate') {
  await sdkRate(process.argv[3]!)
} else {
  runMain(async () => {
    const out: Record<string, unknown> = {}
    if (mode === undefined || mode === 'engine') out.engine = await engineMain()
    if (mode === undefined || mode === 'sdk') out.sdk = await sdkMain()
    console.log(JSON.stringify(out, null, 1))
  }, children)
}

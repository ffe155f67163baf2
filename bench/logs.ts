/**
 * Log ingest benchmark (issue 9; builtins.md §12.2–§12.3, protocol.md §10.2): log lines per second
 * through `/otel` into the engine with each store, measured in the same run.
 *
 *   builtin  the in-memory window plus `observability.db` (SQLite on the writer thread)
 *   memory   the in-memory window only
 *   none     nothing stored: the cost of reading the frames alone (the baseline)
 *
 * For each store an engine process (`svc --json`, default built-ins, `memory_max_logs: 20000`,
 * `max_disk_bytes: 64 MiB`) takes `BENCH_LOG_LINES` lines (default 100,000) per round as `LOGS`
 * frames of 1,000 OTLP/JSON records (a numbered body of about 80 bytes, a two-field `log.data`
 * object, the resource of an SDK worker) from 4 `/otel` WebSockets in this process, the way 4
 * worker processes batching their logs would. The frames are built before the clock starts; each
 * socket keeps at most 4 frames not yet written to the kernel. The clock stops when every socket's
 * close handshake has come back: the engine reads a close only after the frames before it, and
 * handles `/otel` frames synchronously as it reads them, so by then every line is in the store (for
 * `builtin`, in the window and handed to the writer; rows the writer could not take are counted).
 *
 * Every store is measured under the same conditions, so that the ratios compare stores, not
 * moments of a shared machine: all engines start (and take `BENCH_LOG_WARMUP` lines, by default
 * 40,000, as a warm-up: a full window evicting, every path optimised, the heap grown) before the
 * first round; then `BENCH_LOG_ROUNDS` rounds (default 7) in which the stores take their turn
 * one after another, the first store rotating from round to round. Only the engine being measured
 * runs: the others are stopped (`SIGSTOP`) meanwhile, so their timers, collections and writer cannot
 * take CPU from it. Each round starts from an empty store with the engine idle (its CPU unchanged
 * for 200 ms: the writer done with the round before). A round's lines (~15 MiB of rows) fit in
 * what the builtin store queues for its writer (16 MiB), so a writer starved by a busy machine
 * catches up after the clock instead of dropping rows, and every round of a store does the same
 * work. A store's figures are the medians over its rounds; `to_none` is the median of the
 * round-by-round ratios to `none`'s round of the same turn (measured seconds apart). Before
 * (session 36 and earlier) each store ran 2 rounds of 100,000 lines in an engine of its own that
 * had taken 2,000 lines, one store after the other (`builtin` last, about 10 s after `none`), and
 * the faster round was reported: the stores were measured at different moments of a shared
 * machine, and a fresh engine's first 100,000 lines cost `builtin` ~1.6 µs more per line
 * (`none` ~0.9) than the later ones.
 *
 * BENCH_STORES (`builtin,none`) measures a subset; BENCH_CPU_PROF=<dir> writes `--cpu-prof` profiles of
 * the engine processes (every thread) there.
 *
 * `node bench/logs.ts` prints one JSON line:
 * `{lines, rounds, load_average: [at start, at end], stores: {<store>: {lines_per_second, to_none, to_none_rounds, lines_per_second_rounds, ms, rss_peak_mib, not_written, engine_cpu_us_per_line, engine_main_cpu_us_per_line, engine_writer_cpu_us_per_line, engine_v8_cpu_us_per_line, sender_cpu_us_per_line, engine_main_wait_us_per_line, engine_cpu_us_per_line_rounds, engine_main_cpu_us_per_line_rounds}}}`
 * (medians over the rounds; `engine_cpu_us_per_line`: the engine's CPU over every thread, from
 * /proc, from before the round until it is idle again, the writer's work included;
 * `engine_main_cpu_us_per_line`: the same of its main thread alone, which reads the frames;
 * `engine_writer_cpu_us_per_line`: of its worker threads, i.e. the builtin store's SQLite writer;
 * `engine_v8_cpu_us_per_line`: of V8's helper threads, collection and compilation;
 * `sender_cpu_us_per_line`: this process's CPU while the clock ran (it sends the frames);
 * `engine_main_wait_us_per_line`: how long the engine's main thread was ready to run but waited for
 * a CPU (other processes, or the engine's own threads, had both cores), from its `schedstat`;
 * `not_written`: rows the builtin store dropped from the file in all rounds, its writer thread
 * behind, from `engine::health::check`; `rss_peak_mib`: the engine's peak over the warm-up and
 * every round; `…_rounds`: each round's figure, in order).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { firstJson } from './lines.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const LINES = Number(process.env.BENCH_LOG_LINES ?? 100_000)
const ROUNDS = Number(process.env.BENCH_LOG_ROUNDS ?? 7)
const PER_FRAME = 1000
const SOCKETS = 4
/** `memory_max_logs` of every engine. */
const WINDOW = 20_000
/** Lines each engine takes before the rounds (BENCH_LOG_WARMUP; by default a full window and as many again). */
const WARMUP_LINES = Number(process.env.BENCH_LOG_WARMUP ?? 2 * WINDOW)
const ALL_STORES = ['none', 'memory', 'builtin'] as const
type Store = (typeof ALL_STORES)[number]
/** What one round measured: its clock, and the engine's CPU per line (µs) over every thread and by kind of thread ({@link CpuMs}). */
interface Round {
  ms: number
  lines_per_second: number
  not_written: number
  cpu_us_per_line: number
  main_cpu_us_per_line: number
  writer_cpu_us_per_line: number
  v8_cpu_us_per_line: number
  sender_cpu_us_per_line: number
  main_wait_us_per_line: number
}
/** Peak RSS of each store's engine, MiB, read as it is stopped. */
const rssPeak = new Map<Store, number>()
/** BENCH_STORES: a comma-separated subset of the stores to measure (all three by default). */
const STORES = process.env.BENCH_STORES === undefined ? ALL_STORES : ALL_STORES.filter((s) => process.env.BENCH_STORES!.split(',').includes(s))

/** The resource an SDK worker sends with every batch (service, SDK, instance). */
const RESOURCE = JSON.stringify({
  attributes: [
    ['service.name', 'bench-worker'],
    ['service.version', 'unknown'],
    ['service.instance.id', '5f0c6d1e-6a7b-4c1d-9e2f-0a1b2c3d4e5f'],
    ['telemetry.sdk.name', 'svc-helpers'],
    ['telemetry.sdk.language', 'nodejs'],
  ].map(([key, value]) => ({ key, value: { stringValue: value } })),
})

/** One `LOGS` frame of lines `first … first + PER_FRAME - 1`. */
function logsFrame(first: number): Buffer {
  const now = `${Date.now()}000000`
  const records: string[] = []
  for (let n = first; n < first + PER_FRAME; n++) {
    records.push(
      `{"timeUnixNano":"${now}","severityNumber":9,"severityText":"INFO","body":{"stringValue":"order ${n} processed for customer c${n % 997} in region eu-west-1"},` +
        `"attributes":[{"key":"log.data","value":{"kvlistValue":{"values":[{"key":"order_id","value":{"stringValue":"o${n}"}},{"key":"amount","value":{"doubleValue":${(n % 1000) / 10}}}]}}}]}`,
    )
  }
  return Buffer.from(`LOGS{"resourceLogs":[{"resource":${RESOURCE},"scopeLogs":[{"scope":{"name":"bench"},"logRecords":[${records.join(',')}]}]}]}`)
}

async function openOtel(url: string): Promise<WebSocket> {
  const ws = new WebSocket(`${url}/otel`, { perMessageDeflate: false })
  await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
  return ws
}

/** Sends `frames` with at most 4 not yet written, then closes and resolves when the engine's close comes back. */
async function sendAndClose(ws: WebSocket, frames: Buffer[]): Promise<void> {
  let inFlight = 0
  let wake: (() => void) | undefined
  const written = (): void => {
    inFlight--
    wake?.()
  }
  for (const frame of frames) {
    while (inFlight >= 4) await new Promise<void>((resolve) => (wake = resolve))
    inFlight++
    ws.send(frame, { binary: true }, written)
  }
  await new Promise((resolve) => (ws.once('close', resolve), ws.close()))
}

/** One call on the engine's main socket, answered by its result. */
async function call(url: string, function_id: string, data: unknown): Promise<any> {
  const ws = new WebSocket(url)
  try {
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)))
    return await new Promise((resolve) => {
      ws.on('message', (raw) => {
        const frame = JSON.parse(String(raw))
        if (frame.invocation_id === 'bench') resolve(frame.result ?? frame.error)
      })
      ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'bench', function_id, data }))
    })
  } finally {
    ws.close()
  }
}

/** One store's engine process, kept for every round; stopped (`SIGSTOP`) while another store's round runs. */
interface Engine {
  store: Store
  project: string
  child: ChildProcess
  url: string
}

/** Starts the engine for `store` in a new project directory, warmed up and then stopped (`SIGSTOP`). */
async function startEngine(store: Store): Promise<Engine> {
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-logs-'))
  await writeFile(join(project, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config: { port: 0 }\n  - name: svc-http\n    config: { port: 0 }\n  - name: svc-stream\n    config: { port: 0 }\n')
  await mkdir(join(project, 'config'))
  const settings = { store, memory_max_logs: WINDOW, max_disk_bytes: 64 << 20 }
  await writeFile(join(project, 'config', 'svc-observability.yaml'), `id: svc-observability\nname: Observability\ndescription: bench\nvalue: ${JSON.stringify(settings)}\n`)
  const child = spawn(process.execPath, [...(process.env.BENCH_CPU_PROF ? ['--max-semi-space-size=4', '--heap-growing-percent=50', '--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), join(ROOT, 'bin', 'run.js'), '--json'], { cwd: project, env: { ...process.env, SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] })
  const engine: Engine = { store, project, child, url: '' }
  try {
    engine.url = (await firstJson(createInterface({ input: child.stdout! })[Symbol.asyncIterator](), 'engine_url')).engine_url
    // A window's worth of lines and more: every path of the round (the window evicting, the writer's
    // batches, blocks and checkpoints) has run and been optimised before the first round.
    const warmup: Buffer[][] = Array.from({ length: SOCKETS }, () => [])
    for (let f = 0; f < WARMUP_LINES / PER_FRAME; f++) warmup[f % SOCKETS]!.push(logsFrame(-WARMUP_LINES + f * PER_FRAME))
    const sockets = await Promise.all(warmup.map(() => openOtel(engine.url)))
    await Promise.all(sockets.map((ws, i) => sendAndClose(ws, warmup[i]!)))
    await settledCpuMs(child.pid!)
  } catch (error) {
    await stopEngine(engine)
    throw error
  }
  child.kill('SIGSTOP')
  return engine
}

/** Ends an engine (resumed first) and removes its project directory. */
async function stopEngine({ store, project, child: engine }: Engine): Promise<void> {
  const status = await readFile(`/proc/${engine.pid}/status`, 'utf8').catch(() => '')
  const peakKib = Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? NaN)
  if (!rssPeak.has(store)) rssPeak.set(store, Math.round(peakKib / 1024))
  if (engine.exitCode === null && engine.signalCode === null) {
    const exited = new Promise((resolve) => engine.once('exit', resolve))
    engine.kill('SIGCONT')
    engine.kill('SIGTERM')
    // Node can deadlock in its own exit (nodejs/node#54918: a concurrent compile job waits for a
    // garbage collection the exiting main thread never runs): 2 of about 50 engine exits here in
    // session 36. Such an engine is killed, and said so, instead of hanging the benchmark.
    const stuck = setTimeout(() => {
      console.error(`${store}: the engine had not exited 10 s after SIGTERM; killed (nodejs/node#54918)`)
      engine.kill('SIGKILL')
    }, 10_000)
    await exited
    clearTimeout(stuck)
  }
  await rm(project, { recursive: true, force: true })
}

/** CPU time, ms, from /proc (Linux): of a process's every thread (`stat`), or of one thread (`task/<tid>/stat`). */
async function statMs(path: string): Promise<number> {
  const stat = await readFile(path, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/**
 * CPU times, ms: of every thread, of the main thread, of the worker threads (the builtin store's
 * writer) and of V8's helper threads (collection, compilation); and how long the main thread was
 * runnable but waited for a CPU (`/proc/…/schedstat`), ms.
 */
interface CpuMs {
  all: number
  main: number
  writer: number
  v8: number
  mainWait: number
}

/** The CPU times of process `pid` by kind of thread (`comm`: `MainThread`, `WorkerThread`, `V8Worker`). */
async function threadCpuMs(pid: number): Promise<CpuMs> {
  const out: CpuMs = { all: await statMs(`/proc/${pid}/stat`), main: 0, writer: 0, v8: 0, mainWait: 0 }
  // schedstat: time on a CPU, time waiting in a run queue, time slices (ns).
  const schedstat = await readFile(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').catch(() => '0 0')
  out.mainWait = Number(schedstat.split(' ')[1]) / 1e6
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [])) {
    const comm = (await readFile(`/proc/${pid}/task/${tid}/comm`, 'utf8').catch(() => '')).trim()
    const kind = comm === 'MainThread' ? 'main' : comm === 'WorkerThread' ? 'writer' : comm === 'V8Worker' ? 'v8' : undefined
    if (kind !== undefined) out[kind] += await statMs(`/proc/${pid}/task/${tid}/stat`).catch(() => 0)
  }
  return out
}

/** The CPU times of process `pid` once it is idle (the builtin store's writer done): two equal readings of every thread's 200 ms apart. */
async function settledCpuMs(pid: number): Promise<CpuMs> {
  let last = await statMs(`/proc/${pid}/stat`)
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 200))
    const now = await statMs(`/proc/${pid}/stat`)
    if (now === last) break
    last = now
  }
  return threadCpuMs(pid)
}

/** One round into `engine` (resumed for it, stopped again after): `frames` per socket, from an empty store. */
async function round(engine: Engine, frames: Buffer[][]): Promise<Round> {
  const { store, url, child } = engine
  const pid = child.pid!
  child.kill('SIGCONT')
  try {
    const notWritten = async (): Promise<number> => Number(/(\d+) rows not written/.exec(String((await call(url, 'engine::health::check', {}))?.components?.observability?.detail ?? ''))?.[1] ?? 0)
    // Each round starts from an empty store, the writer idle (clear waits for it).
    if (store !== 'none') await call(url, 'engine::logs::clear', {})
    const before = await notWritten()
    const sockets = await Promise.all(frames.map(() => openOtel(url)))
    const cpuBefore = await settledCpuMs(pid)
    const started = performance.now()
    const senderBefore = process.cpuUsage()
    await Promise.all(sockets.map((ws, i) => sendAndClose(ws, frames[i]!)))
    const sender = process.cpuUsage(senderBefore)
    const ms = performance.now() - started
    const cpuAfter = await settledCpuMs(pid)
    const perLine = (ms: number): number => Math.round((ms * 1000 * 100) / LINES) / 100
    if (store !== 'none') {
      // Every line reached the window: the newest is one of the last frames sent.
      const listed = await call(url, 'engine::logs::list', { limit: 1 })
      if (!String(listed?.logs?.[0]?.body ?? '').startsWith('order ')) throw new Error(`${store}: unexpected newest line ${JSON.stringify(listed)}`)
    }
    return { ms, lines_per_second: Math.round(LINES / (ms / 1000)), not_written: (await notWritten()) - before, cpu_us_per_line: perLine(cpuAfter.all - cpuBefore.all), main_cpu_us_per_line: perLine(cpuAfter.main - cpuBefore.main), writer_cpu_us_per_line: perLine(cpuAfter.writer - cpuBefore.writer), v8_cpu_us_per_line: perLine(cpuAfter.v8 - cpuBefore.v8), sender_cpu_us_per_line: perLine((sender.user + sender.system) / 1000), main_wait_us_per_line: perLine(cpuAfter.mainWait - cpuBefore.mainWait) }
  } finally {
    child.kill('SIGSTOP')
  }
}

/** The median of `values` (the mean of the middle two for an even count). */
function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const frames: Buffer[][] = Array.from({ length: SOCKETS }, () => [])
for (let f = 0; f < LINES / PER_FRAME; f++) frames[f % SOCKETS]!.push(logsFrame(f * PER_FRAME))
const loadBefore = loadavg()[0]!
const engines: Engine[] = []
// An engine left stopped would stay so after this process: whatever ends it (an error, Ctrl-C, a
// SIGTERM from `npm run bench`), the engines are resumed and ended.
process.on('exit', () => {
  for (const { child, project } of engines) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGCONT'), child.kill('SIGTERM')
    rmSync(project, { recursive: true, force: true })
  }
})
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130))
const runs = new Map<Store, Round[]>(STORES.map((s) => [s, []]))
try {
  for (const store of STORES) engines.push(await startEngine(store))
  for (let r = 0; r < ROUNDS; r++) {
    // The stores in turn, the first one rotating: no store always runs right after the same other.
    for (let i = 0; i < engines.length; i++) {
      const engine = engines[(r + i) % engines.length]!
      runs.get(engine.store)!.push(await round(engine, frames))
    }
  }
} finally {
  for (const engine of engines) await stopEngine(engine)
}
const round2 = (n: number): number => Math.round(n * 100) / 100
const stores: Record<string, Record<string, unknown>> = {}
for (const store of STORES) {
  const rounds = runs.get(store)!
  const none = runs.get('none')
  const ratios = none === undefined ? undefined : rounds.map((run, r) => round2(run.lines_per_second / none[r]!.lines_per_second))
  stores[store] = {
    lines_per_second: Math.round(median(rounds.map((run) => run.lines_per_second))),
    ...(ratios === undefined || store === 'none' ? {} : { to_none: median(ratios), to_none_rounds: ratios }),
    lines_per_second_rounds: rounds.map((run) => run.lines_per_second),
    ms: Math.round(median(rounds.map((run) => run.ms))),
    rss_peak_mib: rssPeak.get(store) ?? NaN,
    not_written: rounds.reduce((sum, run) => sum + run.not_written, 0),
    engine_cpu_us_per_line: round2(median(rounds.map((run) => run.cpu_us_per_line))),
    engine_main_cpu_us_per_line: round2(median(rounds.map((run) => run.main_cpu_us_per_line))),
    engine_writer_cpu_us_per_line: round2(median(rounds.map((run) => run.writer_cpu_us_per_line))),
    engine_v8_cpu_us_per_line: round2(median(rounds.map((run) => run.v8_cpu_us_per_line))),
    sender_cpu_us_per_line: round2(median(rounds.map((run) => run.sender_cpu_us_per_line))),
    engine_main_wait_us_per_line: round2(median(rounds.map((run) => run.main_wait_us_per_line))),
    engine_cpu_us_per_line_rounds: rounds.map((run) => run.cpu_us_per_line),
    engine_main_cpu_us_per_line_rounds: rounds.map((run) => run.main_cpu_us_per_line),
  }
}
console.log(JSON.stringify({ lines: LINES, rounds: ROUNDS, load_average: [round2(loadBefore), round2(loadavg()[0]!)], stores }))

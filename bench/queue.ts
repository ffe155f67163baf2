/**
 * Queue benchmark (issue 8): 10,000 messages through one queue at concurrency 1 and 10, end to
 * end — enqueue, durable store, delivery to a handler, acknowledgement — counting messages/s,
 * p50/p99 enqueue-to-handler latency, and lost or duplicated messages.
 *
 *   svc        the engine process with the queue worker on its `builtin` adapter (SQLite, WAL,
 *              synchronous=FULL); one svc-sdk worker process enqueues and handles
 *   svc-normal the same with the opt-in `synchronous: normal` (no wait for the disk: survives an
 *              engine crash, not a power loss)
 *   svc-redis  the same with the queue worker on the `redis` adapter, on the redis-server BullMQ uses
 *   BullMQ     the peer: a private redis-server (appendonly yes, appendfsync everysec, its usual
 *              durable setting) and one process with a BullMQ Queue and Worker
 *
 * `node bench/queue.ts` runs all four and prints a JSON line `{queue_table, rows}`; `npm run bench`
 * includes it. The load modes (`svc-load`, `bullmq-load`) are what it spawns. svc-sdk's telemetry is
 * off (`OTEL_ENABLED=false`, as under `npm run bench`) unless the environment sets it: BullMQ
 * traces nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { runMain } from './measure.ts'
import { commandStats, startRedis } from './peers/redis-server.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
// The same rows standalone as under `npm run bench` (bench/run.ts): no handler spans in the load process.
process.env.OTEL_ENABLED ??= 'false'
const MESSAGES = Number(process.env.BENCH_QUEUE_MESSAGES ?? 10_000)
/** Enqueues awaiting their receipt at once (the producer's window). */
const WINDOW = 256
/** Concurrencies measured; BENCH_QUEUE_CONCURRENCY=10 measures one while profiling (the table needs both). */
const CONCURRENCIES: readonly number[] = process.env.BENCH_QUEUE_CONCURRENCY ? [Number(process.env.BENCH_QUEUE_CONCURRENCY)] : [1, 10]

/** One measured run. */
export interface QueueRow {
  concurrency: number
  messages: number
  per_second: number
  p50_ms: number
  p99_ms: number
  lost: number
  duplicated: number
  /**
   * CPU time per message, µs (user + system): the engine, the load process (svc-sdk worker or
   * BullMQ process), redis-server, each over the row (Linux /proc; the load process's own
   * `process.cpuUsage()` from its first enqueue to its row, so neither side's start-up counts —
   * `client_process` is its whole life, start-up and module loading included). On a machine whose
   * cores are busy the sum bounds the rate.
   */
  cpu_us?: { engine?: number; client: number; client_process?: number; redis?: number }
  /**
   * Redis calls per message (`INFO commandstats` before and after the row, the whole server):
   * script calls (`EVALSHA`/`EVAL`) and every command, those the scripts ran included.
   */
  redis_calls?: { scripts: number; commands: number }
  /** The machine's 1-minute load average when the row ended (`os.loadavg()[0]`): other work beside the run. */
  load?: number
  /** The load process's CPU from its first enqueue to its row, ms (moved into `cpu_us.client` by the orchestrator). */
  client_cpu_ms?: number
}

/** User + system CPU time of a live process, ms; NaN where /proc is missing. */
function cpuMs(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // clock ticks, USER_HZ 100
  } catch {
    return Number.NaN
  }
}

/** `--cpu-prof` flags for every process this bench starts when BENCH_QUEUE_PROFILE names a directory. */
function profileArgs(): string[] {
  const dir = process.env.BENCH_QUEUE_PROFILE
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []
}

/** Runs one load process and returns its row with the CPU each process spent on it (read before the load exits). */
async function measured(args: string[], engine: ChildProcess | undefined, redis: ChildProcess | undefined, redisPort?: number): Promise<QueueRow> {
  const engine0 = cpuMs(engine?.pid)
  const redis0 = cpuMs(redis?.pid)
  const stats0 = commandStats(redisPort)
  const load = start(process.execPath, [...profileArgs(), ...args])
  const row = (await lastJson(load.lines, 'per_second')) as QueueRow
  const perMessage = (ms: number) => (Number.isFinite(ms) ? Math.round((ms * 1000) / row.messages) : undefined)
  const whole = perMessage(cpuMs(load.child.pid))
  const cpu: NonNullable<QueueRow['cpu_us']> = { client: perMessage(row.client_cpu_ms ?? Number.NaN) ?? whole ?? Number.NaN }
  delete row.client_cpu_ms
  if (whole !== undefined) cpu.client_process = whole
  const e = perMessage(cpuMs(engine?.pid) - engine0)
  const r = perMessage(cpuMs(redis?.pid) - redis0)
  if (e !== undefined) cpu.engine = e
  if (r !== undefined) cpu.redis = r
  row.cpu_us = cpu
  const stats1 = commandStats(redisPort)
  if (stats0 && stats1) {
    let scripts = 0
    let commands = 0
    for (const [name, calls] of stats1) {
      if (name === 'info') continue
      const delta = calls - (stats0.get(name) ?? 0)
      commands += delta
      if (name === 'evalsha' || name === 'eval') scripts += delta
    }
    row.redis_calls = { scripts: Number((scripts / row.messages).toFixed(3)), commands: Number((commands / row.messages).toFixed(2)) }
  }
  row.load = Number(loadavg()[0]!.toFixed(2))
  for await (const _ of load.lines) {
    // drain until the load process has shut down
  }
  return row
}

/** Measurement state shared by the producer and the handler of one load process. */
class Tally {
  readonly sentAt = new Float64Array(MESSAGES)
  readonly seen = new Uint16Array(MESSAGES)
  readonly latencies: number[] = []
  unique = 0
  first = 0
  last = 0
  /** `process.cpuUsage()` at the first enqueue. */
  cpuAtFirst: NodeJS.CpuUsage | undefined
  private resolveAll: (() => void) | undefined
  readonly all = new Promise<void>((resolve) => (this.resolveAll = resolve))

  received(i: number): void {
    if (!(i >= 0 && i < MESSAGES)) return
    const now = performance.now()
    if (this.seen[i]++ === 0) {
      this.unique++
      this.latencies.push(now - this.sentAt[i]!)
      this.last = now
      if (this.unique === MESSAGES) this.resolveAll!()
    }
  }

  async produce(enqueue: (i: number) => Promise<unknown>): Promise<void> {
    this.cpuAtFirst = process.cpuUsage()
    this.first = performance.now()
    let next = 0
    const lane = async () => {
      while (next < MESSAGES) {
        const i = next++
        this.sentAt[i] = performance.now()
        await enqueue(i)
      }
    }
    await Promise.all(Array.from({ length: WINDOW }, lane))
  }

  async row(concurrency: number): Promise<QueueRow> {
    const deadline = new Promise((resolve) => setTimeout(resolve, 300_000).unref())
    await Promise.race([this.all, deadline])
    // A quiet period in which a duplicate delivery would show up.
    await new Promise((resolve) => setTimeout(resolve, 500))
    const sorted = [...this.latencies].sort((a, b) => a - b)
    const at = (q: number) => Number((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(2))
    let duplicated = 0
    for (const count of this.seen) if (count > 1) duplicated += count - 1
    const cpu = process.cpuUsage(this.cpuAtFirst)
    return {
      concurrency,
      messages: MESSAGES,
      per_second: Math.round((this.unique / (this.last - this.first)) * 1000),
      p50_ms: at(0.5),
      p99_ms: at(0.99),
      lost: MESSAGES - this.unique,
      duplicated,
      client_cpu_ms: (cpu.user + cpu.system) / 1000,
    }
  }
}

/** `svc-load <engineUrl> <queue> <concurrency>`: one svc-sdk worker enqueues and handles. */
async function svcLoad(url: string, queue: string, concurrency: number): Promise<void> {
  const { registerWorker, TriggerAction } = await import('svc-sdk')
  const client = registerWorker(url, { workerName: 'bench-queue' })
  const tally = new Tally()
  client.registerFunction('bench::job', (data: { i: number }) => {
    tally.received(data.i)
    return null
  })
  // Registration is not acknowledged: a round trip through the engine orders it before the load.
  await client.trigger({ function_id: 'engine::functions::list', payload: {} })
  const action = TriggerAction.Enqueue({ queue })
  await tally.produce((i) => client.trigger({ function_id: 'bench::job', payload: { i }, action }))
  console.log(JSON.stringify(await tally.row(concurrency)))
  await client.shutdown()
}

/** `bullmq-load <redisPort> <concurrency>`: one BullMQ Queue and Worker in this process. */
async function bullmqLoad(port: number, concurrency: number): Promise<void> {
  const { Queue, Worker } = await import('bullmq')
  const connection = { host: '127.0.0.1', port }
  const name = `bench-${concurrency}`
  const tally = new Tally()
  const queue = new Queue(name, { connection })
  const worker = new Worker(
    name,
    async (job) => {
      tally.received((job.data as { i: number }).i)
    },
    { connection, concurrency, removeOnComplete: { count: 0 } },
  )
  await worker.waitUntilReady()
  await tally.produce((i) => queue.add('job', { i }, { removeOnComplete: true, attempts: 4 }))
  console.log(JSON.stringify(await tally.row(concurrency)))
  await worker.close()
  await queue.close()
}

// ---- orchestration -------------------------------------------------------------------------------

const children: ChildProcess[] = []

function start(command: string, args: string[], cwd = ROOT, env: Record<string, string> = {}): { child: ChildProcess; lines: AsyncIterableIterator<string> } {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() }
}

async function lastJson(lines: AsyncIterableIterator<string>, key?: string): Promise<Record<string, any>> {
  let last: Record<string, any> | undefined
  for await (const line of lines) {
    try {
      const value = JSON.parse(line)
      if (key === undefined) last = value
      else if (key in value) return value
    } catch {
      /* a log line */
    }
  }
  if (!last) throw new Error(`process ended without ${key ?? 'a result'}`)
  return last
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}


/** The queue worker's `adapter` entry of one svc row, as YAML flow text. */
type SvcAdapter = { name: 'builtin'; synchronous?: 'normal' } | { name: 'redis'; port: number; server: ChildProcess }

async function measureSvc(adapter: SvcAdapter): Promise<QueueRow[]> {
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-queue-'))
  const entry = adapter.name === 'builtin' ? (adapter.synchronous ? `{ name: builtin, config: { synchronous: ${adapter.synchronous} } }` : '{ name: builtin }') : `{ name: redis, config: { url: "redis://127.0.0.1:${adapter.port}", key_prefix: "bench:" } }`
  await writeFile(
    join(project, 'config.yaml'),
    [
      'workers:',
      '  - name: svc-worker-manager',
      '    config: { port: 0 }',
      '  - name: svc-http',
      '    config: { port: 0 }',
      // Every port free: another engine on this machine may hold a default one.
      '  - name: svc-stream',
      '    config: { port: 0 }',
      '  - name: queue',
      '    config:',
      `      adapter: ${entry}`,
      '      queue_configs:',
      ...CONCURRENCIES.map((c) => `        bench-${c}: { type: standard, concurrency: ${c}, max_retries: 3 }`),
      '',
    ].join('\n'),
  )
  const engine = start(process.execPath, [...profileArgs(), join(ROOT, 'bin', 'run.js'), '--json'], project, { SVC_LOG_LEVEL: 'warn' })
  const ready = await lastJson(engine.lines, 'engine_url')
  const rows: QueueRow[] = []
  try {
    for (const c of CONCURRENCIES) {
      rows.push(await measured(['bench/queue.ts', 'svc-load', ready.engine_url, `bench-${c}`, String(c)], engine.child, adapter.name === 'redis' ? adapter.server : undefined, adapter.name === 'redis' ? adapter.port : undefined))
    }
  } finally {
    await stop(engine.child)
    await rm(project, { recursive: true, force: true })
  }
  return rows
}

async function measureBullmq(port: number, server: ChildProcess): Promise<QueueRow[]> {
  const rows: QueueRow[] = []
  for (const c of CONCURRENCIES) rows.push(await measured(['bench/queue.ts', 'bullmq-load', String(port), String(c)], undefined, server, port))
  return rows
}

/** The markdown table of one run, ratios against BullMQ. */
export function queueTable(svc: QueueRow[], svcRedis: QueueRow[], bullmq: QueueRow[], svcNormal: QueueRow[]): string {
  const lines = [
    `| Queue, ${MESSAGES.toLocaleString('en')} messages end to end (enqueue → store → handler → ack) | svc (builtin: SQLite, synchronous=FULL) | svc (builtin, opt-in synchronous: normal) | svc (redis adapter, same redis-server as BullMQ) | BullMQ on redis-server (AOF everysec) | svc builtin / BullMQ | svc builtin normal / BullMQ | svc redis / BullMQ |`,
    '|---|---|---|---|---|---|---|---|',
  ]
  for (const [i, c] of CONCURRENCIES.entries()) {
    const s = svc[i]!
    const n = svcNormal[i]!
    const r = svcRedis[i]!
    const b = bullmq[i]!
    const target = ' (target ≥ 1×)'
    const ratio = (x: QueueRow) => `${(x.per_second / b.per_second).toFixed(2)}×`
    lines.push(`| concurrency ${c}: messages/s | ${s.per_second}/s | ${n.per_second}/s | ${r.per_second}/s | ${b.per_second}/s | ${ratio(s)}${target} | ${ratio(n)} | ${ratio(r)}${c === 10 ? target : ''} |`)
    const lat = (x: QueueRow) => `${(x.p50_ms / b.p50_ms).toFixed(2)}× / ${(x.p99_ms / b.p99_ms).toFixed(2)}×`
    lines.push(`| concurrency ${c}: p50 / p99 enqueue → handler | ${s.p50_ms} / ${s.p99_ms} ms | ${n.p50_ms} / ${n.p99_ms} ms | ${r.p50_ms} / ${r.p99_ms} ms | ${b.p50_ms} / ${b.p99_ms} ms | ${lat(s)} | ${lat(n)} | ${lat(r)} |`)
    lines.push(`| concurrency ${c}: lost / duplicated | ${s.lost} / ${s.duplicated} | ${n.lost} / ${n.duplicated} | ${r.lost} / ${r.duplicated} | ${b.lost} / ${b.duplicated} | | | |`)
    const cpu = (x: QueueRow) => {
      const u = x.cpu_us
      if (!u) return 'n/a'
      const parts = [u.engine !== undefined ? `engine ${u.engine}` : '', `client ${u.client}`, u.redis !== undefined ? `redis ${u.redis}` : ''].filter(Boolean)
      return `${parts.join(' + ')} µs`
    }
    lines.push(`| concurrency ${c}: CPU per message | ${cpu(s)} | ${cpu(n)} | ${cpu(r)} | ${cpu(b)} | | | |`)
  }
  return lines.join('\n')
}

async function main(): Promise<void> {
  const [mode, a, b, c] = process.argv.slice(2)
  if (mode === 'svc-load') return svcLoad(a!, b!, Number(c))
  if (mode === 'bullmq-load') return bullmqLoad(Number(a), Number(b))
  const only = process.env.BENCH_QUEUE_ONLY // `redis` or `builtin` (each with BullMQ) while working on one row
  const svc = only === 'redis' ? [] : await measureSvc({ name: 'builtin' })
  const svcNormal = only === 'redis' ? [] : await measureSvc({ name: 'builtin', synchronous: 'normal' })
  const redis = await startRedis(children)
  let svcRedis: QueueRow[]
  let bullmq: QueueRow[]
  try {
    svcRedis = only === 'builtin' ? [] : await measureSvc({ name: 'redis', port: redis.port, server: redis.server })
    bullmq = await measureBullmq(redis.port, redis.server)
  } finally {
    await redis.close()
  }
  if (only === 'redis' || only === 'builtin') {
    console.log(JSON.stringify({ rows: only === 'redis' ? { svcRedis, bullmq } : { svc, svcNormal, bullmq } }))
    return
  }
  const table = queueTable(svc, svcRedis, bullmq, svcNormal)
  console.error(table)
  console.log(JSON.stringify({ queue_table: table, rows: { svc, svc_normal: svcNormal, svc_redis: svcRedis, bullmq } }))
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) runMain(main, children)

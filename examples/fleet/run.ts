/**
 * The fleet example (issue 19 §4), end to end on one machine: a `nats-server` and a `redis-server`
 * on free ports in a temporary directory, three engines (`svc --config examples/fleet/config.yaml`
 * with `SVC_FLEET_ENGINE=e1…e3`, free ports, a data directory each), one orders worker per engine
 * (its `SVC_URL` lists its own engine first, then the others), then an HTTP load that goes
 * round-robin through the three engines' HTTP listeners: each order is created through one engine
 * and read back through the next. It prints, per engine, the requests served through its listener
 * and, per worker, the calls it handled; then it stops every process it started.
 *
 *   examples/fleet/run.sh [--duration 5] [--concurrency 16] [--keep] [--json]
 *
 * `--duration` seconds of load; `--concurrency` requests in flight; `--keep` leaves the fleet running
 * after the load (until Ctrl-C) so that you can send it requests yourself; `--json` prints the
 * summary as one JSON line on stdout (progress goes to stderr); `--nats-port` / `--redis-port` use
 * these ports instead of free ones. Exit 0 when every engine served requests, every worker handled
 * calls and no request failed; 1 otherwise, or when `nats-server` or `redis-server` is missing
 * (with the command that installs it); 130 on Ctrl-C.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { registerWorker } from 'svc-sdk'

const HERE = dirname(fileURLToPath(import.meta.url))
const ROOT = resolve(HERE, '..', '..')
const SVC_BIN = join(ROOT, 'bin', 'run.js')
const CONFIG = join(HERE, 'config.yaml')
const ENGINES = ['e1', 'e2', 'e3'] as const
/** How long engines, workers and servers get to come up, and to stop before SIGKILL, ms. */
const START_TIMEOUT_MS = 60_000
const STOP_TIMEOUT_MS = 10_000

const INSTALL: Record<string, string> = {
  'nats-server': 'apt-get install -y nats-server   (macOS: brew install nats-server; others: https://docs.nats.io/running-a-nats-service/introduction/installation)',
  'redis-server': 'apt-get install -y redis-server   (macOS: brew install redis)',
}

/** One engine of the fleet as the summary shows it. */
interface EngineRow {
  engine: string
  pid: number
  engine_url: string
  http_url: string
  /** Requests answered as expected through this engine's HTTP listener. */
  requests: number
  /** Requests through it that failed (wrong status or no answer). */
  failed: number
}

/** One orders worker as the summary shows it. */
interface WorkerRow {
  worker: string
  pid: number
  /** The engine it was started on (its first `SVC_URL` entry). */
  started_on: string
  /** Calls it handled during the load, by the engine it said it was on. */
  calls: number
  engines: Record<string, number>
}

interface Summary {
  fleet: string
  nats_url: string
  redis_url: string
  duration_ms: number
  concurrency: number
  orders_created: number
  orders_read: number
  failed: number
  /** The first few failures, for the reader. */
  errors: string[]
  engines: EngineRow[]
  workers: WorkerRow[]
  /** Every process this run started, so that a caller can check they are gone afterwards. */
  pids: number[]
  dir: string
}

const { values: args } = parseOptions()
function parseOptions() {
  try {
    return parseArgs({
      options: {
        duration: { type: 'string', default: '5' },
        concurrency: { type: 'string', default: '16' },
        keep: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        'nats-port': { type: 'string' },
        'redis-port': { type: 'string' },
      },
      strict: true,
    })
  } catch (error) {
    usage((error as Error).message)
  }
}
const durationMs = Math.round(Number(args.duration) * 1000)
const concurrency = Number(args.concurrency)
if (!(durationMs > 0) || !Number.isSafeInteger(concurrency) || concurrency < 1) usage('--duration must be a positive number of seconds and --concurrency a positive integer')
const natsPortArg = portArg('nats-port')
const redisPortArg = portArg('redis-port')

/** Progress for people: stderr with --json (stdout is the summary), stdout otherwise. */
const say = (line: string): void => void (args.json ? process.stderr : process.stdout).write(`${line}\n`)

// ---- processes -------------------------------------------------------------------------------

/** What a started process is; they are stopped in this order. */
type Role = 'worker' | 'engine' | 'server'
const children = new Map<ChildProcess, Role>()
let cleaning: Promise<void> | undefined

/** Stops every process this run started: workers, then engines, then Redis and NATS; SIGKILL after STOP_TIMEOUT_MS. */
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const role of ['worker', 'engine', 'server'] as const) await Promise.all([...children].filter(([, r]) => r === role).map(([child]) => stopChild(child)))
  })()
  return cleaning
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((done) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
    child.once('exit', () => {
      clearTimeout(timer)
      done()
    })
    child.kill('SIGTERM')
  })
}

// Whatever ends this process, nothing it started outlives it.
process.on('exit', () => {
  for (const child of children.keys()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})
for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]] as const) {
  process.once(signal, () => {
    say(`\n${signal}: stopping the fleet`)
    void cleanup().finally(() => finish(code))
  })
}

let workDir: string | undefined
let keepDir = false
async function finish(code: number): Promise<never> {
  await cleanup()
  if (workDir && !keepDir) await rm(workDir, { recursive: true, force: true })
  process.exit(code)
}

/** Spawns a process whose output goes to `<workDir>/<name>.log`; `ready` sees each line of its stdout and stderr. */
function launch(role: Role, name: string, command: string, argv: string[], env: Record<string, string>, ready: (line: string) => boolean): Promise<ChildProcess> {
  const child = spawn(command, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.set(child, role)
  const log = createWriteStream(join(workDir!, `${name}.log`))
  /** The last lines of its output, for the error when it does not come up. */
  const last: string[] = []
  const tail = () => (last.length > 0 ? `:\n  ${last.join('\n  ')}` : '')
  return new Promise((resolvePromise, reject) => {
    let isReady = false
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s; see ${join(workDir!, `${name}.log`)}`)), START_TIMEOUT_MS)
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        log.write(`${line}\n`)
        if (last.push(line) > 5) last.shift()
        if (!isReady && ready(line)) {
          isReady = true
          clearTimeout(timer)
          resolvePromise(child)
        }
      })
    }
    child.once('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    // 'close', not 'exit': its last lines are read by then.
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      if (!isReady) reject(new Error(`${name} exited (${signal ?? code}) before it was ready; see ${join(workDir!, `${name}.log`)}${tail()}`))
      else if (!cleaning) say(`${name} exited (${signal ?? code}); see ${join(workDir!, `${name}.log`)}`)
    })
  })
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolvePort(port))
    })
  })
}

/** Starts a server on `given`, else on a free port, trying another when one is taken meanwhile. */
async function startServer(name: string, given: number | undefined, start: (port: number) => Promise<ChildProcess>): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 0; ; attempt++) {
    const port = given ?? (await freePort())
    try {
      return { port, child: await start(port) }
    } catch (error) {
      if (given !== undefined || attempt >= 3 || !/address already in use/i.test((error as Error).message)) throw error
    }
  }
}

// ---- the run ---------------------------------------------------------------------------------

async function main(): Promise<void> {
  const missing = ['nats-server', 'redis-server'].filter((bin) => spawnSync(bin, ['--version'], { stdio: 'ignore' }).error !== undefined)
  if (missing.length > 0) {
    for (const bin of missing) process.stderr.write(`${bin} is not installed (or not on PATH); the fleet example needs it: ${INSTALL[bin]}\n`)
    process.exit(1)
  }
  if (!existsSync(join(ROOT, 'dist', 'src'))) {
    process.stderr.write('svc is not built in this checkout: run `npm install` (or `npm run build`) first\n')
    process.exit(1)
  }

  workDir = await mkdtemp(join(tmpdir(), 'svc-fleet-example-'))
  say(`Working directory (logs, data): ${workDir}`)

  const nats = await startServer('nats-server', natsPortArg, (port) =>
    launch('server', 'nats-server', 'nats-server', ['-a', '127.0.0.1', '-p', String(port)], {}, (line) => line.includes('Server is ready')),
  )
  const redis = await startServer('redis-server', redisPortArg, (port) =>
    launch('server', 'redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', workDir!, '--save', '', '--appendonly', 'no'], {}, (line) =>
      line.includes('Ready to accept connections'),
    ),
  )
  const natsUrl = `nats://127.0.0.1:${nats.port}`
  const redisUrl = `redis://127.0.0.1:${redis.port}`
  say(`nats-server ${natsUrl}, redis-server ${redisUrl}`)

  // Three engines with the one config.yaml; ports 0 are free ports, read back from engine_ready.
  const engines = await Promise.all(
    ENGINES.map(async (engine) => {
      let ready: { engine_url: string; http_url: string } | undefined
      const child = await launch(
        'engine',
        engine,
        process.execPath,
        [SVC_BIN, '--json', '--config', CONFIG, '--data-dir', join(workDir!, engine)],
        { SVC_FLEET_ENGINE: engine, NATS_URL: natsUrl, REDIS_URL: redisUrl, SVC_HOST: '127.0.0.1', SVC_PORT: '0', HTTP_PORT: '0', STREAM_PORT: '0' },
        (line) => {
          if (!line.includes('"engine_ready"')) return false
          ready = JSON.parse(line)
          return true
        },
      )
      return { engine, pid: child.pid!, engine_url: ready!.engine_url, http_url: ready!.http_url }
    }),
  )
  for (const e of engines) say(`engine ${e.engine}: workers ${e.engine_url}, HTTP ${e.http_url}`)

  // One worker per engine: its own engine first, then the others (the SDK rotates on failure).
  const workers = await Promise.all(
    engines.map(async (own, i) => {
      const addresses = [own, ...engines.filter((e) => e !== own)].map((e) => e.engine_url)
      const worker = `orders-${i + 1}`
      const child = await launch('worker', worker, process.execPath, [join(HERE, 'worker.ts')], { SVC_URL: addresses.join(','), SVC_WORKER_NAME: worker }, (line) =>
        line.startsWith('engine connection: connected'),
      )
      return { worker, pid: child.pid!, started_on: own.engine }
    }),
  )

  await waitForFleet(engines.map((e) => e.engine_url), engines.map((e) => e.http_url), workers.map((w) => w.worker))
  say(`Every engine lists the functions of ${workers.map((w) => w.worker).join(', ')}; HTTP load for ${durationMs / 1000} s, ${concurrency} in flight`)

  const load = await runLoad(engines.map((e) => e.http_url))
  const summary: Summary = {
    fleet: 'shop',
    nats_url: natsUrl,
    redis_url: redisUrl,
    duration_ms: durationMs,
    concurrency,
    orders_created: load.created,
    orders_read: load.read,
    failed: load.errors.length,
    errors: load.errors.slice(0, 5),
    engines: engines.map((e, i) => ({ ...e, requests: load.served[i]!, failed: load.failedVia[i]! })),
    workers: workers.map((w) => {
      const seen = load.byWorker.get(w.worker) ?? {}
      return { ...w, calls: Object.values(seen).reduce((a, b) => a + b, 0), engines: seen }
    }),
    pids: [...children.keys()].map((c) => c.pid!),
    dir: workDir,
  }
  print(summary)

  const problems = [
    ...summary.engines.filter((e) => e.requests === 0).map((e) => `engine ${e.engine} served no request`),
    ...summary.workers.filter((w) => w.calls === 0).map((w) => `worker ${w.worker} handled no call`),
    ...(summary.failed > 0 ? [`${summary.failed} requests failed, e.g. ${summary.errors[0]}`] : []),
  ]
  for (const problem of problems) process.stderr.write(`fleet example: ${problem}\n`)
  if (problems.length > 0) keepDir = true
  if (args.keep) {
    say(`\nThe fleet keeps running; try: curl -s -X POST ${engines[0]!.http_url}/orders -H 'content-type: application/json' -d '{"item":"tea"}'`)
    say('Ctrl-C stops it.')
    return
  }
  await finish(problems.length > 0 ? 1 : 0)
}

/** Waits until every engine lists both orders functions with one replica per worker and serves the routes. */
async function waitForFleet(engineUrls: string[], httpUrls: string[], workerNames: string[]): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS
  const probes = engineUrls.map((url) => registerWorker(url, { workerName: 'fleet-example-probe', otel: { enabled: false } }))
  try {
    for (const [i, probe] of probes.entries()) {
      for (;;) {
        const listed = await probe
          .trigger({ function_id: 'engine::functions::list', payload: {} })
          .then((r) => (r as { functions: Array<{ function_id: string; replica_count: number }> }).functions)
          .catch(() => [])
        const complete = ['orders::create', 'orders::get'].every((id) => listed.some((f) => f.function_id === id && f.replica_count === workerNames.length))
        // The route answers with the worker's own 404 once the binding reached this engine's listener.
        const routed = complete && (await fetch(`${httpUrls[i]}/orders/none`).then((r) => r.status === 404 && r.json().then((b) => (b as { error?: string }).error === 'no such order'), () => false))
        if (routed) break
        if (Date.now() > deadline) throw new Error(`engine ${ENGINES[i]} did not list the functions of ${workerNames.join(', ')} within ${START_TIMEOUT_MS / 1000} s`)
        await new Promise((r) => setTimeout(r, 200))
      }
    }
  } finally {
    await Promise.all(probes.map((p) => p.shutdown()))
  }
}

interface LoadResult {
  created: number
  read: number
  /** Requests answered as expected, per engine index. */
  served: number[]
  failedVia: number[]
  errors: string[]
  /** worker → engine it said it was on → calls. */
  byWorker: Map<string, Record<string, number>>
}

/**
 * `concurrency` loops for `durationMs`: order n is created through engine n mod 3 and read back
 * through engine n+1 mod 3, so every listener serves both kinds and every read crosses engines.
 */
async function runLoad(httpUrls: string[]): Promise<LoadResult> {
  const result: LoadResult = { created: 0, read: 0, served: httpUrls.map(() => 0), failedVia: httpUrls.map(() => 0), errors: [], byWorker: new Map() }
  const handled = (by: { worker: string; engine: string }) => {
    const row = result.byWorker.get(by.worker) ?? {}
    row[by.engine] = (row[by.engine] ?? 0) + 1
    result.byWorker.set(by.worker, row)
  }
  /** One request through engine `via`; the answer's body when its status is `expected`. */
  const request = async (via: number, path: string, expected: number, init?: RequestInit): Promise<any> => {
    try {
      const res = await fetch(httpUrls[via] + path, { ...init, signal: AbortSignal.timeout(30_000) })
      const body = (await res.json().catch(() => undefined)) as { served_by?: { worker: string; engine: string } } | undefined
      if (res.status !== expected) throw new Error(`${init?.method ?? 'GET'} ${path} through ${ENGINES[via]}: ${res.status} ${JSON.stringify(body)}`)
      if (body?.served_by === undefined) throw new Error(`${init?.method ?? 'GET'} ${path} through ${ENGINES[via]}: no served_by in ${JSON.stringify(body)}`)
      result.served[via]!++
      handled(body.served_by)
      return body
    } catch (error) {
      result.failedVia[via]!++
      result.errors.push((error as Error).message)
      return undefined
    }
  }
  let next = 0
  const end = Date.now() + durationMs
  const loop = async () => {
    while (Date.now() < end) {
      const n = next++
      const via = n % httpUrls.length
      const created = await request(via, '/orders', 201, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ item: `tea #${n}`, quantity: 1 + (n % 5) }) })
      if (!created) continue
      result.created++
      const read = await request((via + 1) % httpUrls.length, `/orders/${created.order.id}`, 200)
      if (read && read.order.item === `tea #${n}`) result.read++
      else if (read) result.errors.push(`order ${created.order.id} read back as ${JSON.stringify(read.order)}`)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, loop))
  return result
}

function print(summary: Summary): void {
  if (args.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`)
    return
  }
  const table = (rows: string[][]) => {
    const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)))
    for (const row of rows) say(`  ${row.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}`.trimEnd())
  }
  const seconds = summary.duration_ms / 1000
  say('')
  say(`Fleet ${summary.fleet}: ${summary.orders_created} orders created and ${summary.orders_read} read back through another engine in ${seconds} s, ${summary.failed} failed`)
  say('')
  say('Requests served through each engine\'s HTTP listener:')
  table([['engine', 'pid', 'HTTP', 'requests', 'per second', 'failed'], ...summary.engines.map((e) => [e.engine, String(e.pid), e.http_url, String(e.requests), String(Math.round(e.requests / seconds)), String(e.failed)])])
  say('')
  say('Calls each worker handled (and the engine it was on):')
  table([['worker', 'pid', 'started on', 'calls', 'on engine'], ...summary.workers.map((w) => [w.worker, String(w.pid), w.started_on, String(w.calls), Object.entries(w.engines).map(([e, n]) => `${e}: ${n}`).join(', ') || '-'])])
}

function portArg(name: 'nats-port' | 'redis-port'): number | undefined {
  const text = args[name]
  if (text === undefined) return undefined
  const port = Number(text)
  if (!Number.isInteger(port) || port < 1 || port > 65535) usage(`--${name} must be a port number from 1 to 65535`)
  return port
}

function usage(problem: string): never {
  process.stderr.write(`${problem}\nusage: examples/fleet/run.sh [--duration <seconds>] [--concurrency <n>] [--keep] [--json] [--nats-port <port>] [--redis-port <port>]\n`)
  process.exit(2)
}

main().catch((error: unknown) => {
  process.stderr.write(`fleet example: ${(error as Error).message}\n`)
  if (workDir) process.stderr.write(`logs kept in ${workDir}\n`)
  keepDir = true
  void finish(1)
})

/**
 * The engine's memory with its default settings after traced calls (issue 20: "after 100,000
 * traced calls from svc-sdk workers the engine's RSS stays under 200 MiB").
 *
 * Processes, as a user runs them: the engine is `svc --json` (bin/run.js, the compiled CLI) in a
 * project whose config.yaml only moves the ports to free ones (everything else default:
 * observability on, `store: builtin`, the default window); the callee is `bench/callee.ts` and the
 * caller this file's `caller` role, both svc-sdk workers with their default options (telemetry on,
 * so every call also sends the callee's `execute` span over `/otel`). The caller makes
 * BENCH_CALLS calls (default 100,000) to `bench::echo` at 64 in flight with the benchmark payload.
 *
 * `node bench/engine-memory.ts` prints one JSON line: `{ calls, seconds, engine_cpu_us_per_call, rss_idle_mib,
 * rss_after_mib, peak_rss_mib, rss_settled_mib, rss_quiet_mib, window }`: the engine's `VmRSS` once the workers
 * are connected (`engine_cpu_us_per_call`: its CPU time during the calls, spans stored included, per
 * call — steadier than `seconds` on a shared machine), right after the last call, its `VmHWM`, and `VmRSS` again once the observability
 * window reports no further growth (the spans of the last calls arrive after their results), and
 * `rss_quiet_mib` BENCH_QUIET_MS (default 10 s) later, once V8's memory reducer has run;
 * `window` is the observability worker's health detail; `callee_rss_ready_mib` / `callee_rss_after_mib`:
 * the callee's `VmRSS` once connected and after the calls (`callee_sdk`: `vendored` when it ran
 * with the bundled svc-sdk a scaffolded project vendors, from `dist/pack/`; a trivial svc-sdk worker run as a
 * TypeScript file, as `svc` runs one; `callee_prime`: what the compile-cache prime `svc project init` and
 * `svc` run before its start did, `primed`, or `off` with `BENCH_PRIME=0`: its first start then strips
 * the types itself). Linux only (/proc).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { basename, delimiter, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { registerWorker } from 'svc-sdk'
import { primeCompileCache } from '../src/supervisor/prime.ts'
import { runMain } from './measure.ts'
import { PAYLOAD } from './payload.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000)
const IN_FLIGHT = 64
const children: ChildProcess[] = []

/** `VmRSS` and `VmHWM` of a process, MiB. */
function rssOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kib = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0)
  return { rss: Math.round(kib('VmRSS') / 1024), peak: Math.round(kib('VmHWM') / 1024) }
}

/** CPU time (user + system) a process has used, ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** The environment of the processes this benchmark starts (`extra` added). */
function envOf(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value
  // Defaults: `npm run bench` turns svc-sdk's telemetry off for its other rows (OTEL_ENABLED).
  delete env.OTEL_ENABLED
  return { ...env, SVC_LOG_LEVEL: 'warn', ...extra }
}

/** Starts a node process and resolves with its first stdout JSON line holding `key`. */
function start(args: string[], key: string, cwd = ROOT, env: Record<string, string> = envOf()): Promise<{ child: ChildProcess; line: Record<string, any> }> {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return new Promise((resolve, reject) => {
    const input = createInterface({ input: child.stdout! })
    input.on('line', (text) => {
      try {
        const line = JSON.parse(text)
        if (key in line) resolve({ child, line })
      } catch {
        process.stderr.write(`${text}\n`) // not JSON: e.g. the output of --trace-gc
      }
    })
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}) before printing ${key}`)))
  })
}

/** The caller role: BENCH_CALLS calls at 64 in flight, then prints `{done, seconds}`. */
async function caller(url: string): Promise<void> {
  const client = registerWorker(url, { workerName: 'bench-caller' })
  const call = () => client.trigger({ function_id: 'bench::echo', payload: PAYLOAD })
  for (let i = 0; ; i++) {
    try {
      await call()
      break
    } catch (error) {
      if (i > 400) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
  let sent = 0
  const started = performance.now()
  const lane = async (): Promise<void> => {
    while (sent < CALLS) {
      sent++
      await call()
    }
  }
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
  console.log(JSON.stringify({ done: CALLS, seconds: (performance.now() - started) / 1000 }))
  await client.shutdown()
  process.exit(0)
}

async function windowDetail(url: string): Promise<string> {
  const client = registerWorker(url, { workerName: 'bench-probe', otel: { enabled: false } })
  try {
    const health = (await client.trigger({ function_id: 'engine::health::check', payload: {} })) as { components?: Record<string, { detail?: string }> }
    const entry = Object.entries(health.components ?? {}).find(([name]) => name.includes('observability'))
    return entry?.[1].detail ?? ''
  } finally {
    await client.shutdown()
  }
}

/**
 * The callee as a scaffolded project runs it: `bench/callee.ts` in a directory whose
 * `node_modules/svc-sdk` is the vendored tarball of `dist/pack/` (the bundled svc-sdk that `svc
 * project init` copies into a project; `npm run build` makes it). Without that tarball, the
 * workspace's unbundled svc-sdk (more files, more RSS). Returns the script and its directory.
 */
async function calleeScript(project: string): Promise<{ script: string; cwd: string; sdk: 'vendored' | 'workspace' }> {
  const pack = join(ROOT, 'dist', 'pack')
  const tarball = existsSync(pack) ? readdirSync(pack).find((name) => /^svc-sdk-.*\.tgz$/.test(name)) : undefined
  if (tarball === undefined) return { script: join(ROOT, 'bench', 'callee.ts'), cwd: ROOT, sdk: 'workspace' }
  const dir = join(project, 'worker')
  const sdk = join(dir, 'node_modules', 'svc-sdk')
  await mkdir(sdk, { recursive: true })
  execFileSync('tar', ['-xzf', join(pack, tarball), '-C', sdk, '--strip-components=1'])
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'bench-worker', private: true, type: 'module' }))
  await copyFile(join(ROOT, 'bench', 'callee.ts'), join(dir, 'callee.ts'))
  return { script: join(dir, 'callee.ts'), cwd: dir, sdk: 'vendored' }
}

async function main(): Promise<void> {
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-memory-'))
  try {
    await writeFile(
      join(project, 'config.yaml'),
      ['workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', ''].join('\n'),
    )
    // BENCH_OBSERVABILITY: svc-observability settings to try, a YAML flow mapping (default: none, the defaults).
    if (process.env.BENCH_OBSERVABILITY) {
      await mkdir(join(project, 'config'))
      await writeFile(join(project, 'config', 'svc-observability.yaml'), `id: svc-observability\nvalue: ${process.env.BENCH_OBSERVABILITY}\n`)
    }
    const nodeArgs = process.env.BENCH_ENGINE_NODE_ARGS?.split(' ').filter(Boolean) ?? []
    const engine = await start([...nodeArgs, join(ROOT, 'bin', 'run.js'), '--json'], 'engine_url', project)
    const url = engine.line.engine_url as string
    // BENCH_WORKER_NODE_ARGS (space-separated) goes to the callee's and caller's node.
    const workerArgs = process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []
    const calleeRun = await calleeScript(project)
    // The callee's first start as after `svc project init` and `svc`: with a compile cache of its
    // own (svc passes its workers one; this one starts empty, as on a new machine), primed through
    // the function init and the supervisor call (src/supervisor/prime.ts) — unless BENCH_PRIME=0
    // (the first start then strips the types itself: amaro in the callee's RSS).
    const calleeEnv = envOf({ NODE_COMPILE_CACHE: join(project, 'node-compile-cache'), PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` })
    const primed = process.env.BENCH_PRIME === '0' ? 'off' : await primeCompileCache(`node ${basename(calleeRun.script)}`, { cwd: calleeRun.cwd, env: calleeEnv })
    const callee = await start([...workerArgs, calleeRun.script, url], 'ready', calleeRun.cwd, calleeEnv)
    const idle = rssOf(engine.child.pid!)
    const calleeReady = rssOf(callee.child.pid!)
    const cpuBefore = cpuMsOf(engine.child.pid!)
    const { line } = await start([...workerArgs, fileURLToPath(import.meta.url), 'caller', url], 'done')
    const after = rssOf(engine.child.pid!)
    const engineCpuUs = ((cpuMsOf(engine.child.pid!) - cpuBefore) * 1000) / line.done
    // The callee's spans trail the results by the SDK's batch delay: wait until RSS stops moving.
    let settled = after.rss
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500))
      const now = rssOf(engine.child.pid!).rss
      if (Math.abs(now - settled) < 2 && i >= 4) break
      settled = now
    }
    const final = rssOf(engine.child.pid!)
    // V8's memory reducer shrinks the heap some seconds after the allocation rate drops.
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.BENCH_QUIET_MS ?? 10_000)))
    const quiet = rssOf(engine.child.pid!)
    console.log(
      JSON.stringify({
        calls: line.done,
        seconds: Number(line.seconds.toFixed(1)),
        engine_cpu_us_per_call: Number(engineCpuUs.toFixed(1)),
        rss_idle_mib: idle.rss,
        rss_after_mib: after.rss,
        peak_rss_mib: final.peak,
        rss_settled_mib: final.rss,
        rss_quiet_mib: quiet.rss,
        callee_sdk: calleeRun.sdk,
        callee_prime: primed,
        callee_rss_ready_mib: calleeReady.rss,
        callee_rss_after_mib: rssOf(callee.child.pid!).rss,
        window: await windowDetail(url).catch((error) => String(error)),
      }),
    )
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
    await rm(project, { recursive: true, force: true }).catch(() => {})
  }
}

if (process.argv[2] === 'caller') await caller(process.argv[3]!)
else runMain(main, children)

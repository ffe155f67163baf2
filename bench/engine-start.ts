/**
 * Engine start as users get it (issue 20): the packed CLI installed offline, the `quickstart`
 * template scaffolded once (its workers installed), then wall time from spawning `svc` to
 *
 *   banner      the `engine_ready` event (`--json`): engine, built-ins and listeners up
 *   registered  both quickstart workers `running` (registered with the engine)
 *
 * against `node -e 0` on the same Node, alternated round by round (the machine is shared; only
 * ratios of one run compare). Each round stops `svc` with SIGINT and waits for it to exit.
 *
 * Prints one JSON line: `{ rounds, ms: { node, banner, registered, cpu, reload, reload_cpu }, ratio: { banner, registered },
 * worker_rss_mib: { first, warm, reloaded } }`, medians in milliseconds and the medians' ratios to
 * `node -e 0`; `cpu`: CPU time of `svc` and its two workers until both were running (steadier
 * than wall time on a shared machine; `/proc/<pid>/stat`, 10 ms ticks); `worker_rss_mib`: the `VmRSS` of the quickstart's TypeScript workers (`node
 * src/index.ts` with the vendored svc-sdk, issue 20 "a trivial worker's RSS ≤ 70 MB") read when
 * each is reported `running` (connected and registered) — `first` in the warm-up round (the
 * project's first `svc` after `svc project init`: an empty compile cache but for what init's
 * prime put there, src/supervisor/prime.ts), `warm` the median of the later rounds, `reloaded` the
 * math-worker's new process after an edit of its `src/index.ts` while `svc` runs; `reload`: ms
 * from that write to the new process `running`, `reload_cpu`: CPU time `svc` (with its reaped
 * children: the prime) and the new process used meanwhile — one edit per round, in a `svc` started
 * for it.
 * With `SVC_BENCH_BASELINE=<svc executable>` (another installed svc, e.g. the previous release), a
 * project scaffolded by that one is started in the same rounds too (`baseline_banner`,
 * `baseline_registered`): before and after under the same load.
 * Usage: `node bench/engine-start.ts [rounds]` (default 7), after `npm run build`.
 */
import { execFileSync, spawn } from 'node:child_process'
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { installPackedCli, median } from './packed-cli.ts'

const WORKERS = ['math-worker', 'caller-worker']

/** Wall ms of `node -e 0`. */
function bareNode(env: NodeJS.ProcessEnv): Promise<number> {
  const start = performance.now()
  const child = spawn(process.execPath, ['-e', '0'], { env, stdio: 'ignore' })
  return new Promise((resolve, reject) => child.on('close', (code) => (code === 0 ? resolve(performance.now() - start) : reject(new Error(`node -e 0 exited ${code}`)))))
}

/** `VmRSS` of a process in MiB, to 0.1; undefined once it is gone. */
function rssMib(pid: number): number | undefined {
  try {
    const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1])
    return Number.isFinite(kib) ? Math.round((kib / 1024) * 10) / 10 : undefined
  } catch {
    return undefined
  }
}

/** CPU time (user + system) a process has used so far, ms (clock ticks of 10 ms); 0 once it is gone. */
function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

/** CPU time of a process so far with that of its children it waited for (`cutime`, `cstime`), ms; 0 once it is gone. */
function cpuWithChildrenMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10
  } catch {
    return 0
  }
}

/**
 * `svc --json` in `project` until both workers run, then one edit of the math-worker's entry (a
 * comment line appended): ms from the write to its new process `running`, that process's RSS then,
 * and the CPU time svc (the prime included) and the new process used meanwhile; then SIGINT.
 */
async function reloadOnce(svc: string, project: string, env: NodeJS.ProcessEnv, round: number): Promise<{ ms: number; rss: number; cpu: number }> {
  const child = spawn(svc, ['--json'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  const pids = new Map<string, number>()
  let edited: { at: number; cpu: number; pid: number } | undefined
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      let event: Record<string, unknown>
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      if (event.event !== 'worker_state' || event.state !== 'running' || typeof event.pid !== 'number') continue
      const worker = String(event.worker)
      if (edited !== undefined && worker === 'math-worker' && event.pid !== edited.pid) {
        const ms = performance.now() - edited.at
        return { ms, rss: rssMib(event.pid) ?? 0, cpu: cpuWithChildrenMs(child.pid!) - edited.cpu + cpuMs(event.pid) }
      }
      pids.set(worker, event.pid)
      if (edited === undefined && WORKERS.every((name) => pids.has(name))) {
        const cpu = cpuWithChildrenMs(child.pid!)
        appendFileSync(join(project, 'workers', 'math-worker', 'src', 'index.ts'), `// edit ${round}\n`)
        edited = { at: performance.now(), cpu, pid: pids.get('math-worker')! }
      }
    }
    throw new Error(`svc exited before the edited worker ran again: ${stderr}`)
  } finally {
    child.kill('SIGINT')
    await exited
  }
}

/**
 * One start of `svc --json` in `project`: ms to the banner and to every worker running, each
 * worker's RSS when it was reported running, and the CPU time `svc` and its workers used until
 * then; then SIGINT.
 */
async function startOnce(svc: string, project: string, env: NodeJS.ProcessEnv): Promise<{ banner: number; registered: number; rss: number[]; cpu: number }> {
  const start = performance.now()
  const child = spawn(svc, ['--json'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  let banner: number | undefined
  const running = new Set<string>()
  const rss: number[] = []
  let workersCpu = 0
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      let event: Record<string, unknown>
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      if (event.event === 'engine_ready') banner = performance.now() - start
      if (event.event === 'worker_state' && event.state === 'running') {
        running.add(String(event.worker))
        const mib = typeof event.pid === 'number' ? rssMib(event.pid) : undefined
        if (mib !== undefined) rss.push(mib)
        if (typeof event.pid === 'number') workersCpu += cpuMs(event.pid)
      }
      if (banner !== undefined && WORKERS.every((name) => running.has(name))) {
        return { banner, registered: performance.now() - start, rss, cpu: cpuMs(child.pid!) + workersCpu }
      }
    }
    throw new Error(`svc exited before its workers ran: ${stderr}`)
  } finally {
    child.kill('SIGINT')
    await exited
  }
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 7)
  const cli = installPackedCli()
  const parent = mkdtempSync(join(tmpdir(), 'svc-bench-start-'))
  try {
    execFileSync(cli.svc, ['project', 'init', 'qs', '--template', 'quickstart', '--ports', 'auto'], { cwd: parent, env: cli.env, stdio: 'ignore' })
    const project = join(parent, 'qs')
    const baseline = process.env.SVC_BENCH_BASELINE
    // The baseline's own HOME: its own compile cache (~/.cache/svc), so its first start is cold too.
    const baseEnv = { ...cli.env, HOME: join(parent, 'baseline-home') }
    mkdirSync(baseEnv.HOME, { recursive: true })
    if (baseline !== undefined) execFileSync(baseline, ['project', 'init', 'base', '--template', 'quickstart', '--ports', 'auto'], { cwd: parent, env: baseEnv, stdio: 'ignore' })
    const ms: Record<string, number[]> = { node: [], banner: [], registered: [], baseline_banner: [], baseline_registered: [], cpu: [], baseline_cpu: [], reload: [], baseline_reload: [], reload_cpu: [], baseline_reload_cpu: [] }
    const rss: Record<string, number[]> = { first: [], warm: [], reloaded: [], baseline_first: [], baseline_warm: [], baseline_reloaded: [] }
    // One warm-up (the file cache, the compile cache, the workers' first start), then alternated rounds.
    for (let round = -1; round < rounds; round++) {
      const node = await bareNode(cli.env)
      const svc = await startOnce(cli.svc, project, cli.env)
      const base = baseline === undefined ? undefined : await startOnce(baseline, join(parent, 'base'), baseEnv)
      rss[round < 0 ? 'first' : 'warm']!.push(...svc.rss)
      if (base !== undefined) rss[round < 0 ? 'baseline_first' : 'baseline_warm']!.push(...base.rss)
      if (round < 0) continue
      ms.node!.push(node)
      ms.banner!.push(svc.banner)
      ms.registered!.push(svc.registered)
      ms.cpu!.push(svc.cpu)
      if (base !== undefined) {
        ms.baseline_banner!.push(base.banner)
        ms.baseline_registered!.push(base.registered)
        ms.baseline_cpu!.push(base.cpu)
      }
    }
    // Edits while svc runs, alternated the same way.
    for (let round = 0; round < rounds; round++) {
      const svc = await reloadOnce(cli.svc, project, cli.env, round)
      ms.reload!.push(svc.ms)
      ms.reload_cpu!.push(svc.cpu)
      rss.reloaded!.push(svc.rss)
      if (baseline === undefined) continue
      const base = await reloadOnce(baseline, join(parent, 'base'), baseEnv, round)
      ms.baseline_reload!.push(base.ms)
      ms.baseline_reload_cpu!.push(base.cpu)
      rss.baseline_reloaded!.push(base.rss)
    }
    const medians = Object.fromEntries(Object.entries(ms).filter(([, values]) => values.length > 0).map(([key, values]) => [key, median(values)]))
    const ratio = Object.fromEntries(Object.entries(medians).filter(([key]) => key !== 'node' && !key.endsWith('cpu') && !key.endsWith('reload')).map(([key, value]) => [key, Math.round((value / medians.node!) * 10) / 10]))
    const workerRss = Object.fromEntries(Object.entries(rss).filter(([, values]) => values.length > 0).map(([key, values]) => [key, median(values)]))
    console.log(JSON.stringify({ rounds, ms: medians, ratio, worker_rss_mib: workerRss }))
  } finally {
    rmSync(parent, { recursive: true, force: true })
    cli.remove()
  }
}

await main()

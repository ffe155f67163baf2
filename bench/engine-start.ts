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
 * Prints one JSON line: `{ rounds, ms: { node, banner, registered }, ratio: { banner, registered } }`,
 * medians in milliseconds and the medians' ratios to `node -e 0`.
 * With `SVC_BENCH_BASELINE=<svc executable>` (another installed svc, e.g. the previous release), a
 * project scaffolded by that one is started in the same rounds too (`baseline_banner`,
 * `baseline_registered`): before and after under the same load.
 * Usage: `node bench/engine-start.ts [rounds]` (default 7), after `npm run build`.
 */
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
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

/** One start of `svc --json` in `project`: ms to the banner and to every worker running; then SIGINT. */
async function startOnce(svc: string, project: string, env: NodeJS.ProcessEnv): Promise<{ banner: number; registered: number }> {
  const start = performance.now()
  const child = spawn(svc, ['--json'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  let banner: number | undefined
  const running = new Set<string>()
  try {
    for await (const line of createInterface({ input: child.stdout })) {
      let event: Record<string, unknown>
      try {
        event = JSON.parse(line)
      } catch {
        continue
      }
      if (event.event === 'engine_ready') banner = performance.now() - start
      if (event.event === 'worker_state' && event.state === 'running') running.add(String(event.worker))
      if (banner !== undefined && WORKERS.every((name) => running.has(name))) return { banner, registered: performance.now() - start }
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
    if (baseline !== undefined) execFileSync(baseline, ['project', 'init', 'base', '--template', 'quickstart', '--ports', 'auto'], { cwd: parent, env: cli.env, stdio: 'ignore' })
    const ms: Record<string, number[]> = { node: [], banner: [], registered: [], baseline_banner: [], baseline_registered: [] }
    // One warm-up (the file cache, the compile cache, the workers' first start), then alternated rounds.
    for (let round = -1; round < rounds; round++) {
      const node = await bareNode(cli.env)
      const svc = await startOnce(cli.svc, project, cli.env)
      const base = baseline === undefined ? undefined : await startOnce(baseline, join(parent, 'base'), cli.env)
      if (round < 0) continue
      ms.node!.push(node)
      ms.banner!.push(svc.banner)
      ms.registered!.push(svc.registered)
      if (base !== undefined) {
        ms.baseline_banner!.push(base.banner)
        ms.baseline_registered!.push(base.registered)
      }
    }
    const medians = Object.fromEntries(Object.entries(ms).filter(([, values]) => values.length > 0).map(([key, values]) => [key, median(values)]))
    const ratio = Object.fromEntries(Object.entries(medians).filter(([key]) => key !== 'node').map(([key, value]) => [key, Math.round((value / medians.node!) * 10) / 10]))
    console.log(JSON.stringify({ rounds, ms: medians, ratio }))
  } finally {
    rmSync(parent, { recursive: true, force: true })
    cli.remove()
  }
}

await main()

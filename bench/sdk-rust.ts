/**
 * svc's Rust SDK against the Node SDK (issue 18): sequential p50/p99 and calls/s at 1, 8 and 64 in
 * flight of a caller/callee pair through one engine, same run, same payload (bench/payload.ts),
 * same measurement (bench/measure.ts; the Rust caller, packages/sdk-rust/svc-sdk/examples/
 * bench_caller.rs, repeats its loops).
 *
 * Processes: an engine (`svc --json`, default built-ins) and, per pair, a callee serving
 * `bench::echo` and a caller: Node (bench/callee.ts + bench/load-ws.ts svc) or Rust (the
 * bench_callee and bench_caller examples, built here with `cargo build --release`). Only one
 * pair's processes run at a time; the pairs alternate `BENCH_SDK_ROUNDS` times (default 3) and each
 * pair's median round (by 64-in-flight throughput) is reported. Telemetry is off in both (as in
 * the invocation table).
 *
 * `node bench/sdk-rust.ts` prints one JSON line: `{rounds, node, rust, runs}`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { firstJson } from './lines.ts'
import { runMain } from './measure.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CRATES = join(ROOT, 'packages', 'sdk-rust')
const ROUNDS = Number(process.env.BENCH_SDK_ROUNDS ?? 3)
process.env.OTEL_ENABLED ??= 'false'
const children: ChildProcess[] = []

function cargoBin(): string {
  for (const candidate of [process.env.SVC_TEST_CARGO, 'cargo', join(homedir(), '.cargo', 'bin', 'cargo')]) {
    if (candidate === undefined || candidate === '' || (candidate.includes('/') && !existsSync(candidate))) continue
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate
  }
  throw new Error('cargo was not found: install Rust >= 1.85 with cargo to run the Rust SDK benchmark')
}

function start(command: string, args: string[], cwd = ROOT): { child: ChildProcess; lines: AsyncIterableIterator<string> } {
  const child = spawn(command, args, { cwd, env: { ...process.env, SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() }
}

async function lastJson(command: string, args: string[]): Promise<Record<string, any>> {
  const { lines } = start(command, args)
  let last: Record<string, any> | undefined
  for await (const line of lines) {
    try {
      last = JSON.parse(line)
    } catch {
      /* not JSON */
    }
  }
  if (last === undefined) throw new Error(`${command} ${args.join(' ')} printed no result`)
  return last
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.once('exit', () => resolve())
    child.kill('SIGTERM')
  })
}

function median(runs: Array<Record<string, any>>): Record<string, any> {
  return [...runs].sort((a, b) => a.per_second[64] - b.per_second[64])[Math.floor(runs.length / 2)]!
}

async function main(): Promise<void> {
  const built = spawnSync(cargoBin(), ['build', '--release', '--locked', '-p', 'svc-sdk', '--example', 'bench_callee', '--example', 'bench_caller'], {
    cwd: CRATES,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  if (built.status !== 0) throw new Error('cargo build --release of the bench examples failed')
  const examples = join(CRATES, 'target', 'release', 'examples')

  const project = await mkdtemp(join(tmpdir(), 'svc-bench-sdk-'))
  await writeFile(
    join(project, 'config.yaml'),
    'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n',
  )
  const engine = start(process.execPath, [join(ROOT, 'bin', 'run.js'), '--json'], project)
  const { engine_url: url } = await firstJson(engine.lines, 'engine_url')
  const runs: Record<'node' | 'rust', Array<Record<string, any>>> = { node: [], rust: [] }
  for (let round = 0; round < ROUNDS; round++) {
    {
      const callee = start(process.execPath, ['bench/callee.ts', url])
      await firstJson(callee.lines, 'ready')
      runs.node.push(await lastJson(process.execPath, ['bench/load-ws.ts', 'svc', url]))
      await stop(callee.child)
    }
    {
      const callee = start(join(examples, 'bench_callee'), [url])
      await firstJson(callee.lines, 'ready')
      runs.rust.push(await lastJson(join(examples, 'bench_caller'), [url]))
      await stop(callee.child)
    }
  }
  await stop(engine.child)
  await rm(project, { recursive: true, force: true })
  console.log(JSON.stringify({ rounds: ROUNDS, node: median(runs.node), rust: median(runs.rust), runs }))
}

runMain(main, children)

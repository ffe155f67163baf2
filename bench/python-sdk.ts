/**
 * The svc Python SDK against the Node SDK and the iii Python SDK (issue 18): a caller/callee pair
 * of each, through the same engine, in the same run — sequential p50 (and p99) and calls/s with 64
 * calls in flight, echoing a ≈150-byte object. Target: svc Python at least as fast as iii Python.
 *
 * Processes: one engine (`svc --json`, default built-ins, free ports), then for each SDK in turn a
 * callee process (an echo function) and a caller process: Node `svc-sdk` (`node bench/python-sdk.ts
 * node-callee|node-caller`), svc-sdk for Python and iii-sdk for Python (`bench/python/pair.py`,
 * each in its own virtual environment under node_modules/.cache: svc-sdk from this repository's
 * wheels, iii-sdk 0.25.0 from PyPI). Handlers are async on every side; telemetry off on every side.
 * The three pairs run `BENCH_PY_ROUNDS` times (default 3) in turn and each figure is the median.
 *
 * `node bench/python-sdk.ts` prints one JSON line: `{rounds, node, svc_python, iii_python}`, each
 * `{p50_us, p99_us, per_second_64}`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { registerWorker } from 'svc-sdk'
import { svcPython } from '../test/support/python.ts'
import { sequential, throughput } from './measure.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const ROUNDS = Number(process.env.BENCH_PY_ROUNDS ?? 3)
const III_SDK = '0.25.0'
const PAYLOAD = { id: 42, name: 'benchmark', tags: ['a', 'b', 'c'], nested: { x: 1.5, y: true }, text: 'x'.repeat(20) }
const children: ChildProcess[] = []

interface Result {
  p50_us: number
  p99_us: number
  per_second_64: number
}

function start(cmd: string, args: string[], env: Record<string, string> = {}, cwd = ROOT): { child: ChildProcess; lines: AsyncIterableIterator<string> } {
  const child = spawn(cmd, args, { cwd, env: { ...process.env, OTEL_ENABLED: 'false', ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return { child, lines: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() }
}

async function firstLine(lines: AsyncIterableIterator<string>, match: (v: Record<string, any>) => boolean): Promise<Record<string, any>> {
  for await (const line of lines) {
    try {
      const value = JSON.parse(line)
      if (match(value)) return value
    } catch {
      /* not JSON */
    }
  }
  throw new Error('process ended before its line')
}

async function iiiPython(): Promise<string> {
  const venv = join(ROOT, 'node_modules', '.cache', 'svc-bench-python', `iii-sdk-${III_SDK}`)
  const python = join(venv, 'bin', 'python')
  if (!existsSync(python)) {
    await mkdir(join(venv, '..'), { recursive: true })
    if (spawnSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' }).status !== 0) throw new Error('python3 -m venv failed')
    if (spawnSync(python, ['-m', 'pip', 'install', '-q', '--disable-pip-version-check', `iii-sdk==${III_SDK}`], { stdio: 'inherit' }).status !== 0) throw new Error(`pip install iii-sdk==${III_SDK} failed`)
  }
  return python
}

async function pythonPair(python: string, sdk: 'svc' | 'iii', url: string): Promise<Result> {
  const script = join(ROOT, 'bench', 'python', 'pair.py')
  const callee = start(python, [script, 'callee', sdk, url])
  await firstLine(callee.lines, (v) => v.ready === true)
  const caller = start(python, [script, 'caller', sdk, url])
  const result = (await firstLine(caller.lines, (v) => typeof v.p50_us === 'number')) as Result
  callee.child.kill('SIGKILL')
  return result
}

async function nodePair(url: string): Promise<Result> {
  const callee = start(process.execPath, [fileURLToPath(import.meta.url), 'node-callee', url])
  await firstLine(callee.lines, (v) => v.ready === true)
  const caller = start(process.execPath, [fileURLToPath(import.meta.url), 'node-caller', url])
  const result = (await firstLine(caller.lines, (v) => typeof v.p50_us === 'number')) as Result
  callee.child.kill('SIGKILL')
  return result
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const mid = (rs: Result[]): Result => ({ p50_us: median(rs.map((r) => r.p50_us)), p99_us: median(rs.map((r) => r.p99_us)), per_second_64: median(rs.map((r) => r.per_second_64)) })

async function main(): Promise<void> {
  const role = process.argv[2]
  if (role === 'node-callee') {
    const client = registerWorker(process.argv[3], { workerName: 'bench-node-callee', otel: { enabled: false } })
    client.registerFunction('bench::node-echo', async (data: unknown) => data)
    client.addConnectionStateListener((s) => s === 'connected' && setTimeout(() => console.log(JSON.stringify({ ready: true })), 500))
    return
  }
  if (role === 'node-caller') {
    const client = registerWorker(process.argv[3], { workerName: 'bench-node-caller', otel: { enabled: false } })
    const call = () => client.trigger({ function_id: 'bench::node-echo', payload: PAYLOAD })
    const latency = await sequential(call, Number(process.env.BENCH_SAMPLES ?? 3000), 500)
    const rate = await throughput(call, 64, Number(process.env.BENCH_DURATION_MS ?? 3000))
    console.log(JSON.stringify({ p50_us: latency.p50_us, p99_us: latency.p99_us, per_second_64: rate }))
    await client.shutdown()
    process.exit(0)
  }
  const [svcPy, iiiPy] = [await svcPython(), await iiiPython()]
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-py-'))
  await writeFile(join(project, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n')
  const engine = start(process.execPath, [join(ROOT, 'bin', 'run.js'), '--json'], {}, project)
  const url = String((await firstLine(engine.lines, (v) => v.event === 'engine_ready')).engine_url)
  const runs: Record<'node' | 'svc_python' | 'iii_python', Result[]> = { node: [], svc_python: [], iii_python: [] }
  try {
    for (let round = 0; round < ROUNDS; round++) {
      runs.node.push(await nodePair(url))
      runs.svc_python.push(await pythonPair(svcPy, 'svc', url))
      runs.iii_python.push(await pythonPair(iiiPy, 'iii', url))
    }
  } finally {
    engine.child.kill('SIGTERM')
    await rm(project, { recursive: true, force: true })
  }
  console.log(JSON.stringify({ rounds: ROUNDS, node: mid(runs.node), svc_python: mid(runs.svc_python), iii_python: mid(runs.iii_python), runs }))
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
}

main().catch((err) => {
  console.error(err)
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  process.exit(1)
})

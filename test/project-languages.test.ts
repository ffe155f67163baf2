/**
 * The `python` and `rust` templates end to end (issue 18): `svc project init` → `svc` starts the
 * project on free ports → the Python/Rust worker answers `svc trigger` and HTTP, the TypeScript
 * caller calls it → an edit restarts (Python) or rebuilds (Rust) it and the new code answers; a
 * Rust compile error is printed with its place while the old binary keeps answering.
 *
 * Needs python3 with venv (pip reaches PyPI or its find-links for pydantic & co.) and cargo. The
 * Rust build reuses `packages/sdk-rust/target/cargo-home` (the crates the SDK's own tests fetched)
 * when CARGO_HOME is unset, and builds into `packages/sdk-rust/target/templates` with the release
 * profile unoptimised (`CARGO_PROFILE_RELEASE_OPT_LEVEL=0`), so only the first run in a checkout
 * compiles the dependencies (about 40 s of CPU; 80 s optimised).
 */
import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { startEngineProcess, type RunningEngine } from './support/processes.ts'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import { waitFor } from './support/wait.ts'

const REPO = fileURLToPath(new URL('..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-project-languages-'))
const children = new Set<ChildProcess>()
const engines = new Set<RunningEngine>()

after(async () => {
  for (const engine of engines) await stopEngine(engine)
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

let dirs = 0
function workdir(): string {
  const dir = join(scratch, `w${dirs++}`)
  mkdirSync(dir)
  return dir
}

function svc(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  let spawned: ChildProcess | undefined
  return runSvc(args, { cwd, env: cliEnv(env), onSpawn: (child) => children.add((spawned = child)) }).finally(() => {
    if (spawned) children.delete(spawned)
  })
}

function has(command: string, args: string[]): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Rewrites the listener and svc-http ports of a scaffolded config.yaml to 0 (free ports). */
function useFreePorts(project: string): void {
  const file = join(project, 'config.yaml')
  const text = readFileSync(file, 'utf8')
  let patched = text.replace(/^(\s+port:) 49134$/m, '$1 0').replace('${HTTP_PORT:3111}', '0')
  assert.notEqual(patched, text)
  if (!/^\s+- name: svc-stream$/m.test(patched)) patched += '\n  - name: svc-stream\n    config:\n      port: 0\n'
  writeFileSync(file, patched)
}

async function startProject(project: string, env: Record<string, string> = {}): Promise<RunningEngine> {
  const engine = await startEngineProcess(project, [], env)
  engines.add(engine)
  return engine
}

async function stopEngine(engine: RunningEngine): Promise<void> {
  if (!engines.delete(engine)) return
  const workerPids = new Set<number>()
  for (const line of engine.output) {
    try {
      const event = JSON.parse(line)
      if (event.event === 'worker_state' && typeof event.pid === 'number') workerPids.add(event.pid)
    } catch {
      /* not an event */
    }
  }
  const stopped = await Promise.race([engine.stop(), new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15000))])
  if (stopped === 'hung') await engine.kill9()
  for (const pid of workerPids) {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      /* already gone */
    }
  }
}

const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

/** GET /math/hello?name=Ada's message once it is `expected`. */
async function helloSays(engine: RunningEngine, expected: string, timeoutMs: number): Promise<void> {
  await waitFor(
    async () => {
      const res = await fetch(`${engine.httpUrl}/math/hello?name=Ada`)
      if (res.status !== 200) return undefined
      const body = (await res.json()) as { message?: string }
      return body.message === expected ? true : undefined
    },
    () => engine.output.join('\n'),
    timeoutMs,
    250,
  )
}

/** The cross-language calls every template shows: svc trigger into the worker, TypeScript calling it. */
async function assertCalls(engine: RunningEngine, project: string): Promise<void> {
  const trigger = await svc(['trigger', 'math::add', 'a=1', 'b=2', '--engine', engine.engineUrl], project)
  assert.equal(trigger.code, 0, `${trigger.stdout}${trigger.stderr}`)
  assert.deepEqual(JSON.parse(trigger.stdout), { c: 3 })
  const viaNode = await waitFor(
    async () => {
      const res = await post(`${engine.httpUrl}/math/add-two-numbers`, { a: 1, b: 2 })
      return res.status === 200 ? res.json() : undefined
    },
    () => engine.output.join('\n'),
    120_000,
    250,
  )
  assert.deepEqual(viaNode, { c: 3 })
}

describe('svc project init --template python|rust inside a project, then svc worker add (issue 18)', () => {
  it('writes the worker only, its SDK into the project\'s vendor/ named by relative path, and svc worker add declares it (with or without svc.worker.yaml)', async () => {
    const cwd = workdir()
    const bare = await svc(['project', 'init', 'shop'], cwd)
    assert.equal(bare.code, 0, bare.stderr)
    const shop = join(cwd, 'shop')

    const py = await svc(['project', 'init', 'billing', '--template', 'python', '--dir', 'services/py/billing', '--json'], shop)
    assert.equal(py.code, 0, py.stderr)
    const pyResult = JSON.parse(py.stdout) as { files: string[]; next_steps: string[] }
    const wheels = ['svc_helpers-0.1.0-py3-none-any.whl', 'svc_sdk-0.1.0-py3-none-any.whl'].map((w) => `../../../vendor/python/${w}`)
    assert.deepEqual(pyResult.files, [...wheels, 'main.py', 'requirements.txt', 'svc.worker.yaml'])
    assert.deepEqual(pyResult.next_steps, ['svc worker add ./services/py/billing'])
    for (const wheel of wheels) assert.ok(existsSync(join(shop, 'services', 'py', 'billing', wheel)), wheel)
    const requirements = readFileSync(join(shop, 'services', 'py', 'billing', 'requirements.txt'), 'utf8')
    for (const wheel of wheels) assert.match(requirements, new RegExp(`^${wheel.replace(/\./g, '\\.')}$`, 'm'))
    assert.ok(!existsSync(join(shop, 'services', 'py', 'billing', 'config.yaml')), 'no project files')
    assert.ok(!existsSync(join(shop, 'services', 'py', 'billing', '.svc')), 'no project identity')
    assert.match(readFileSync(join(shop, 'services', 'py', 'billing', 'svc.worker.yaml'), 'utf8'), /^name: billing$/m)

    const digit = await svc(['project', 'init', '9ledger', '--template', 'rust', '--dir', 'ledger'], join(shop, 'services'))
    assert.equal(digit.code, 2)
    assert.match(digit.stderr, /^Error: A Rust worker's name cannot start with a digit \(cargo refuses the package name '9ledger'\)$/m)
    assert.ok(!existsSync(join(shop, 'services', 'ledger')))
    const rs = await svc(['project', 'init', 'ledger', '--template', 'rust', '--dir', 'ledger', '--json'], join(shop, 'services'))
    assert.equal(rs.code, 0, rs.stderr)
    assert.deepEqual((JSON.parse(rs.stdout) as { next_steps: string[] }).next_steps, ['svc worker add ./ledger'])
    const ledger = join(shop, 'services', 'ledger')
    assert.match(readFileSync(join(ledger, 'Cargo.toml'), 'utf8'), /^name = "ledger"$[\s\S]*^svc-sdk = \{ path = "\.\.\/\.\.\/vendor\/rust\/svc-sdk" \}$/m)
    assert.ok(existsSync(join(shop, 'vendor', 'rust', 'svc-sdk', 'src', 'lib.rs')))

    const addPy = await svc(['worker', 'add', './services/py/billing'], shop, { SVC_URL: 'ws://127.0.0.1:1' })
    assert.equal(addPy.code, 0, addPy.stderr)
    assert.match(addPy.stdout, /^Added billing; it will start with svc$/m)
    // Without a manifest the Rust worker is detected from Cargo.toml: named after its directory, running the binary it names.
    rmSync(join(ledger, 'svc.worker.yaml'))
    const addRs = await svc(['worker', 'add', './services/ledger'], shop, { SVC_URL: 'ws://127.0.0.1:1' })
    assert.equal(addRs.code, 0, addRs.stderr)
    assert.match(addRs.stdout, /^Added ledger; it will start with svc$/m)
    const config = readFileSync(join(shop, 'config.yaml'), 'utf8')
    assert.match(config, /- name: billing\n\s+worker_path: \.\/services\/py\/billing\n/)
    assert.match(config, /- name: ledger\n\s+worker_path: \.\/services\/ledger\n/)
  })
})

describe('svc project init --template python|rust, then svc (issue 18)', () => {
  it('python: the worker installs into its .venv, answers svc trigger and HTTP, is called from TypeScript, restarts on a .py edit', { timeout: 600_000, skip: has('python3', ['-c', 'import venv, ensurepip']) ? false : 'python3 with venv is not installed' }, async () => {
    const cwd = workdir()
    const init = await svc(['project', 'init', 'demo', '--template', 'python'], cwd)
    assert.equal(init.code, 0, init.stdout + init.stderr)
    const demo = join(cwd, 'demo')
    const requirements = readFileSync(join(demo, 'workers', 'math-worker', 'requirements.txt'), 'utf8')
    assert.match(requirements, /^\.\.\/\.\.\/vendor\/python\/svc_sdk-0\.1\.0-py3-none-any\.whl$/m)
    assert.ok(existsSync(join(demo, 'vendor', 'python', 'svc_helpers-0.1.0-py3-none-any.whl')))

    useFreePorts(demo)
    const engine = await startProject(demo)
    try {
      await helloSays(engine, 'Hello, Ada, from Python', 300_000)
      assert.ok(existsSync(join(demo, 'workers', 'math-worker', '.venv', 'bin', 'python')))
      await assertCalls(engine, demo)

      const main = join(demo, 'workers', 'math-worker', 'main.py')
      writeFileSync(main, readFileSync(main, 'utf8').replace('from Python"}}', 'from Python, edited"}}'))
      await helloSays(engine, 'Hello, Ada, from Python, edited', 120_000)
    } finally {
      await stopEngine(engine)
    }
  })

  it('rust: builds the release binary, answers svc trigger and HTTP, is called from TypeScript; an edit rebuilds it; a compile error is printed while the old binary answers', { timeout: 900_000, skip: has('cargo', ['--version']) ? false : 'cargo is not installed' }, async () => {
    const cwd = workdir()
    const init = await svc(['project', 'init', 'demo', '--template', 'rust'], cwd)
    assert.equal(init.code, 0, init.stdout + init.stderr)
    const demo = join(cwd, 'demo')
    for (const file of ['vendor/rust/Cargo.toml', 'vendor/rust/svc-sdk/src/lib.rs', 'vendor/rust/svc-helpers/Cargo.toml', 'workers/math-worker/Cargo.lock']) {
      assert.ok(existsSync(join(demo, file)), file)
    }

    useFreePorts(demo)
    const cargoHome = join(REPO, 'packages', 'sdk-rust', 'target', 'cargo-home')
    // The release profile unoptimised: the same commands and paths, half the compile time on CI.
    const env: Record<string, string> = { CARGO_TARGET_DIR: join(REPO, 'packages', 'sdk-rust', 'target', 'templates'), CARGO_PROFILE_RELEASE_OPT_LEVEL: '0' }
    if (process.env.CARGO_HOME === undefined && existsSync(cargoHome)) env.CARGO_HOME = cargoHome
    const engine = await startProject(demo, env)
    try {
      await helloSays(engine, 'Hello, Ada, from Rust', 600_000)
      await assertCalls(engine, demo)

      const main = join(demo, 'workers', 'math-worker', 'src', 'main.rs')
      const source = readFileSync(main, 'utf8')
      writeFileSync(main, source.replace('from Rust")', 'from Rust, rebuilt")'))
      await helloSays(engine, 'Hello, Ada, from Rust, rebuilt', 300_000)

      // A type error: the first compiler error with its place is printed, the rebuilt binary still answers.
      writeFileSync(main, source.replace('let name = request', 'let broken: u32 = "one";\n    let name = request'))
      const report = await waitFor(
        async () => engine.output.find((line) => line.includes('error[E0308]')),
        () => engine.output.join('\n'),
        300_000,
        250,
      )
      assert.match(report, /build failed \(cargo build --release exited with code 101\); the previous build keeps running/)
      assert.match(report, /error\[E0308\]: mismatched types(\\n|\n) {2}--> src\/main\.rs:\d+:\d+/)
      await helloSays(engine, 'Hello, Ada, from Rust, rebuilt', 10_000)

      writeFileSync(main, source.replace('from Rust")', 'from Rust, fixed")'))
      await helloSays(engine, 'Hello, Ada, from Rust, fixed', 300_000)
    } finally {
      await stopEngine(engine)
    }
  })
})

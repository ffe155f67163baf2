/**
 * End to end: `svc worker add|remove|list` (cli.md §4.2–§4.5) with the built CLI in temporary
 * projects, with and without a running engine. Needs `npm run build`.
 */
import assert from 'node:assert/strict'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { KVM_MESSAGES } from '../src/supervisor/microvm/probe.ts'
import { startEngineProcess, SVC_BIN } from './support/processes.ts'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import type { RunningEngine } from './support/processes.ts'
import { quietPeriod, waitFor } from './support/wait.ts'

/** A commented config.yaml: every edit must keep these bytes (aligned comments included). */
const CONFIG = `# Test project for the worker commands.
data_dir: .svc/data      # SQLite files

workers:
  # The listener, on any free port.
  - name: svc-worker-manager
    config:
      port: 0            # tests pass SVC_URL
  - name: svc-http
    config: { port: 0 }
  - name: svc-stream
    config: { port: 0 }
  - name: svc-cron
    enabled: false       # no schedules yet

  # Local workers go below.
`

const dirs: string[] = []
const engines = new Set<RunningEngine>()
const clients: SvcClient[] = []
/** ws:// URL of a port nothing listens on: "engine not running" whatever runs on 49134 here. */
let closedUrl = ''

before(async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closedUrl = `ws://127.0.0.1:${(server.address() as { port: number }).port}`
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

after(async () => {
  for (const client of clients) await client.shutdown().catch(() => undefined)
  for (const engine of engines) await stopEngine(engine)
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** SIGTERM (SIGKILL after 15 s), then SIGKILL to any worker process group svc reported, should one outlive it. */
async function stopEngine(engine: RunningEngine): Promise<void> {
  if (!engines.delete(engine)) return
  let timer: NodeJS.Timeout | undefined
  const stopped = await Promise.race([engine.stop(), new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), 15000)))])
  clearTimeout(timer)
  if (stopped === 'hung') await engine.kill9()
  for (const line of engine.output) {
    try {
      const event = JSON.parse(line)
      if (event.event === 'worker_state' && typeof event.pid === 'number') process.kill(-event.pid, 'SIGKILL')
    } catch {
      /* not an event, or the group is gone */
    }
  }
}

/** A project with CONFIG and worker directories: `workers/<name>/svc.worker.yaml` = manifest. */
function project(manifests: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-worker-cmd-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'config.yaml'), CONFIG)
  for (const [name, manifest] of Object.entries(manifests)) {
    mkdirSync(join(dir, 'workers', name), { recursive: true })
    writeFileSync(join(dir, 'workers', name, 'svc.worker.yaml'), manifest)
    // A real worker, should an engine launch it.
    writeFileSync(
      join(dir, 'workers', name, 'index.mjs'),
      `import { registerWorker } from ${JSON.stringify(import.meta.resolve('svc-sdk'))}\n` +
        `const svc = registerWorker()\nsvc.registerFunction('${name}::ping', () => ({ pong: true }))\n`,
    )
  }
  return dir
}

const manifest = (name: string, extra = '') => `name: ${name}\nruntime:\n  kind: javascript\n  entry: index.mjs\nscripts:\n  start: node index.mjs\n${extra}`

/** Runs `svc <args>` in `cwd` to completion; SVC_URL is the given engine, else a closed port. */
function svc(cwd: string, args: string[], engineUrl = closedUrl): Promise<Finished> {
  return runSvc(args, { cwd, env: cliEnv({ SVC_URL: engineUrl, NO_COLOR: '1' }) })
}

const config = (dir: string) => readFileSync(join(dir, 'config.yaml'), 'utf8')

/** CONFIG with `lines` added after its last entry (before the trailing comment block). */
const withEntries = (lines: string) => CONFIG.replace('    enabled: false       # no schedules yet\n', `    enabled: false       # no schedules yet\n${lines}`)

/**
 * What the usable-KVM probe of cli.md §5.7 must answer on this host, worked out independently of
 * svc: undefined when microVMs can run here with hardware KVM, else the exact message.
 */
function expectedKvmRefusal(): string | undefined {
  if (process.platform !== 'linux') return KVM_MESSAGES.notLinux
  if (!existsSync('/dev/kvm')) return KVM_MESSAGES.missing
  try {
    closeSync(openSync('/dev/kvm', 'r+'))
  } catch {
    return KVM_MESSAGES.denied
  }
  const modules = new Set(existsSync('/sys/module') ? readdirSync('/sys/module') : [])
  if (existsSync('/proc/modules')) for (const line of readFileSync('/proc/modules', 'utf8').split('\n')) modules.add(line.split(' ')[0]!)
  if (modules.has('kvm_intel') || modules.has('kvm_amd')) return undefined
  if (modules.has('kvm_pvm')) return KVM_MESSAGES.software('kvm_pvm')
  const other = [...modules].sort().find((m) => /^kvm_[a-z0-9_]+$/.test(m))
  return other ? KVM_MESSAGES.software(other) : KVM_MESSAGES.noBackend
}

describe('svc worker add: local workers', () => {
  it('declares a worker directory, keeping comments; again is a no-op; another path needs --force', async () => {
    const dir = project({ 'math-worker': manifest('math-worker'), other: manifest('other') })
    const added = await svc(dir, ['worker', 'add', './workers/math-worker'])
    assert.equal(added.code, 0, added.stderr)
    assert.equal(added.stdout, 'Added math-worker; it will start with svc\n')
    const declared = withEntries('  - name: math-worker\n    worker_path: ./workers/math-worker\n')
    assert.equal(config(dir), declared)

    const again = await svc(dir, ['worker', 'add', 'workers/math-worker'])
    assert.equal(again.code, 0, again.stderr)
    assert.equal(again.stdout, 'math-worker is already declared in config.yaml (./workers/math-worker)\n')
    assert.equal(config(dir), declared)

    const clash = await svc(dir, ['worker', 'add', './workers/other', '--name', 'math-worker'])
    assert.equal(clash.code, 1)
    assert.equal(clash.stderr, "Error: A worker named 'math-worker' is already declared for ./workers/math-worker; pass --force to replace it\n")
    assert.equal(config(dir), declared)

    const forced = await svc(dir, ['worker', 'add', './workers/other', '--name', 'math-worker', '--force', '--namespace', 'jobs'])
    assert.equal(forced.code, 0, forced.stderr)
    assert.equal(forced.stdout, 'Replaced math-worker; it will start with svc\n')
    assert.equal(config(dir), withEntries('  - name: math-worker\n    worker_path: ./workers/other\n    namespace: jobs\n'))
  })

  it('refuses an invalid manifest with exit 2 and its file:line:col, and unknown names with exit 2', async () => {
    const dir = project({ bad: 'name: bad\nscirpts:\n  start: node index.mjs\n' })
    const bad = await svc(dir, ['worker', 'add', './workers/bad'])
    assert.equal(bad.code, 2)
    assert.equal(bad.stderr, "Error: workers/bad/svc.worker.yaml:2:1: unknown field 'scirpts' (did you mean 'scripts'?)\n")
    const unknown = await svc(dir, ['worker', 'add', 'mathworker'])
    assert.equal(unknown.code, 2)
    assert.equal(
      unknown.stderr,
      "Error: Unknown worker 'mathworker'. Built-in workers: svc-http, svc-state, svc-stream, svc-pubsub, svc-cron, queue, database, console. To add a local worker, pass a path such as ./workers/mathworker\n",
    )
    const missing = await svc(dir, ['worker', 'add', './workers/nope'])
    assert.equal(missing.code, 2)
    assert.equal(missing.stderr, 'Error: Worker directory ./workers/nope does not exist\n')
    assert.equal(config(dir), CONFIG)
  })

  it('runs the usable-KVM probe for microVM isolation before editing config.yaml (exact verdict of this host)', async () => {
    const dir = project({ vm: manifest('vm', 'isolation: microvm\n'), plain: manifest('plain') })
    const fromManifest = await svc(dir, ['worker', 'add', './workers/vm'])
    const fromFlag = await svc(dir, ['worker', 'add', './workers/plain', '--isolation', 'microvm'])
    const refusal = expectedKvmRefusal()
    if (refusal === undefined) {
      assert.equal(fromManifest.code, 0, fromManifest.stderr)
      assert.equal(fromFlag.code, 0, fromFlag.stderr)
      assert.equal(config(dir), withEntries('  - name: vm\n    worker_path: ./workers/vm\n  - name: plain\n    worker_path: ./workers/plain\n    isolation: microvm\n'))
    } else {
      // A /dev/kvm that opens is not enough (a PVM host): the refusal names what is missing.
      for (const result of [fromManifest, fromFlag]) {
        assert.equal(result.code, 1)
        assert.equal(result.stderr, `Error: ${refusal}\n`)
      }
      assert.equal(config(dir), CONFIG)
    }
  })

  it('SVC_MICROVM_ACCEL=tcg lets svc worker add declare a microVM worker on any Linux host', { skip: process.platform !== 'linux' }, async () => {
    const dir = project({ plain: manifest('plain') })
    const added = await runSvc(['worker', 'add', './workers/plain', '--isolation', 'microvm'], {
      cwd: dir,
      env: cliEnv({ SVC_URL: closedUrl, NO_COLOR: '1', SVC_MICROVM_ACCEL: 'tcg', XDG_CACHE_HOME: join(dir, '.cache') }),
    })
    assert.equal(added.code, 0, added.stderr)
    assert.equal(config(dir), withEntries('  - name: plain\n    worker_path: ./workers/plain\n    isolation: microvm\n'))
  })

  it('--json gives the result shape of cli.md §4.2, and the highest exit code of several arguments', async () => {
    const dir = project({ 'math-worker': manifest('math-worker') })
    const result = await svc(dir, ['worker', 'add', './workers/math-worker', 'nope', 'svc-observability', '--json'])
    assert.equal(result.code, 2)
    assert.equal(result.stderr, '')
    const document = JSON.parse(result.stdout)
    assert.deepEqual(document.workers[0], { name: 'math-worker', kind: 'local', path: './workers/math-worker', changed: true, state: 'declared', functions: [] })
    assert.equal(document.workers[1].error.code, 'UNKNOWN_WORKER')
    assert.deepEqual(document.workers[2].error, { code: 'CANNOT_ADD', message: 'svc-observability is injected by the engine and cannot be added' })
    assert.equal(document.error.code, 'UNKNOWN_WORKER')
  })

  it('finds the project from a subdirectory, and refuses a config.yaml it cannot edit (exit 2)', async () => {
    const dir = project({ 'math-worker': manifest('math-worker') })
    const nested = await svc(join(dir, 'workers'), ['worker', 'add', 'math-worker'])
    assert.equal(nested.code, 0, nested.stderr)
    assert.equal(config(dir), withEntries('  - name: math-worker\n    worker_path: ./workers/math-worker\n'))

    writeFileSync(join(dir, 'config.yaml'), 'workers:\n  name: oops\n')
    for (const command of [['worker', 'add', 'db'], ['worker', 'remove', 'db'], ['worker', 'list']]) {
      const result = await svc(dir, command)
      assert.equal(result.code, 2, command.join(' '))
      assert.equal(result.stderr, 'Error: config.yaml:2:3: workers must be a list of entries (- name: …)\n')
    }
    assert.equal(config(dir), 'workers:\n  name: oops\n')
  })

  it('fails with exit 2 outside a project', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-no-project-'))
    dirs.push(dir)
    for (const command of [['worker', 'add', 'db'], ['worker', 'remove', 'db'], ['worker', 'list']]) {
      const result = await svc(dir, command)
      assert.equal(result.code, 2)
      assert.equal(result.stderr, `Error: No config.yaml in ${dir} or any parent directory\nHint: run svc project init to create a project, or pass --config <file>\n`)
    }
  })
})

describe('svc worker add|remove: built-ins', () => {
  it('enables, adds entries, disables and refuses as cli.md §4.2 and §4.4 say', async () => {
    const dir = project()
    const enable = await svc(dir, ['worker', 'add', 'cron'])
    assert.equal(enable.code, 0, enable.stderr)
    assert.equal(enable.stdout, 'Enabled svc-cron; it will start with svc\n')
    assert.equal(config(dir), CONFIG.replace('    enabled: false       # no schedules yet\n', ''))

    const already = await svc(dir, ['worker', 'add', 'svc-cron'])
    assert.equal(already.stdout, 'svc-cron is already enabled\n')

    const database = await svc(dir, ['worker', 'add', 'db'])
    assert.equal(database.code, 0, database.stderr)
    assert.equal(database.stdout, 'database is built in and already enabled; added an entry to config.yaml, configure it in config/database.yaml\n')

    const disable = await svc(dir, ['worker', 'remove', 'svc-cron'])
    assert.equal(disable.code, 0, disable.stderr)
    assert.equal(disable.stdout, 'svc-cron disabled; its triggers will not fire until re-enabled with svc worker add svc-cron\n')
    const expected = CONFIG.replace('    enabled: false       # no schedules yet\n', '    enabled: false\n  - name: database\n')
    assert.equal(config(dir), expected)

    const addConsole = await svc(dir, ['worker', 'add', 'svc-console'])
    assert.equal(addConsole.stdout, 'Added console; it will start with svc\n')
    const removeConsole = await svc(dir, ['worker', 'remove', 'console'])
    assert.equal(removeConsole.stdout, 'Removed console from config.yaml\n')
    assert.equal(config(dir), expected)

    for (const [command, message] of [
      [['worker', 'add', 'svc-observability'], 'svc-observability is injected by the engine and cannot be added'],
      [['worker', 'add', 'configuration'], 'configuration always runs and cannot be added'],
      [['worker', 'remove', 'svc-observability'], 'svc-observability cannot be removed'],
      [['worker', 'remove', 'configuration'], 'configuration cannot be removed'],
      [['worker', 'remove', 'nope'], "Worker 'nope' is not declared in config.yaml"],
      [['worker', 'remove', 'console'], "Worker 'console' is not declared in config.yaml"],
    ] as const) {
      const result = await svc(dir, [...command])
      assert.equal(result.code, 1, command.join(' '))
      assert.equal(result.stderr, `Error: ${message}\n`)
    }
  })
})

describe('svc worker remove and list without an engine', () => {
  it('removes a local worker entry and lists what config.yaml declares', async () => {
    const dir = project({ 'math-worker': manifest('math-worker') })
    await svc(dir, ['worker', 'add', './workers/math-worker'])
    await svc(dir, ['worker', 'add', './workers/math-worker', '--name', 'math-two', '--namespace', 'jobs'])

    const list = await svc(dir, ['worker', 'list'])
    assert.equal(list.code, 0, list.stderr)
    const lines = list.stdout.trimEnd().split('\n')
    assert.equal(lines[0], 'NAME         KIND     NAMESPACE  STATUS              PID  FUNCTIONS  SOURCE')
    assert.ok(lines.includes('svc-cron     builtin  default    disabled            -    -          built-in'), list.stdout)
    assert.ok(lines.includes('svc-http     builtin  default    engine not running  -    -          built-in'), list.stdout)
    assert.equal(lines.at(-2), 'math-worker  local    default    engine not running  -    -          ./workers/math-worker')
    assert.equal(lines.at(-1), 'math-two     local    jobs       engine not running  -    -          ./workers/math-worker')

    const json = JSON.parse((await svc(dir, ['worker', 'list', '--json', '--all'])).stdout)
    assert.equal(json.engine_running, false)
    const names = json.workers.map((w: { name: string }) => w.name)
    assert.deepEqual(names, ['svc-http', 'svc-state', 'svc-stream', 'svc-pubsub', 'svc-cron', 'queue', 'database', 'console', 'configuration', 'svc-observability', 'math-worker', 'math-two'])
    assert.deepEqual(json.workers.at(-1), { name: 'math-two', kind: 'local', namespace: 'jobs', status: 'engine not running', pid: null, functions: [], source: './workers/math-worker' })

    const removed = await svc(dir, ['worker', 'remove', 'math-two', 'math-worker', '--json'])
    assert.equal(removed.code, 0, removed.stderr)
    assert.deepEqual(JSON.parse(removed.stdout), {
      workers: [
        { name: 'math-two', kind: 'local', action: 'removed', changed: true, was_running: false },
        { name: 'math-worker', kind: 'local', action: 'removed', changed: true, was_running: false },
      ],
    })
    assert.equal(config(dir), CONFIG)
    assert.ok(readFileSync(join(dir, 'workers', 'math-worker', 'svc.worker.yaml')), 'the worker directory is left in place')
  })
})

describe('svc worker add|remove|list with a running engine', () => {
  it('lists built-ins, declared and connected workers; add and remove say when svc must restart', { timeout: 120_000 }, async () => {
    const dir = project({ 'math-worker': manifest('math-worker'), idle: manifest('idle'), later: manifest('later') })
    writeFileSync(
      join(dir, 'config.yaml'),
      withEntries('  - name: math-worker\n    worker_path: ./workers/math-worker\n  - name: idle\n    worker_path: ./workers/idle\n    enabled: false\n'),
    )
    // --no-workers: the test connects math-worker itself, whatever this version of svc launches.
    const engine = await startEngineProcess(dir, ['--no-workers'])
    engines.add(engine)

    const math = registerWorker(engine.engineUrl, { workerName: 'math-worker' })
    clients.push(math)
    math.registerFunction('math::add', ({ a, b }: { a: number; b: number }) => ({ sum: a + b }))
    const outsider = registerWorker(engine.engineUrl, { workerName: 'outsider', namespace: 'jobs' })
    clients.push(outsider)
    outsider.registerFunction('jobs::run', () => ({}))

    // Registration is asynchronous: poll until both workers show their function.
    const listing = await waitFor(
      async () => {
        const result = await svc(dir, ['worker', 'list', '--all', '--json'], engine.engineUrl)
        assert.equal(result.code, 0, result.stderr)
        const listed: { engine_running: boolean; workers: Array<Record<string, unknown>> } = JSON.parse(result.stdout)
        const fns = (name: string) => (listed.workers.find((w) => w.name === name)?.functions as string[] | undefined) ?? []
        return fns('math-worker').length > 0 && fns('outsider').length > 0 && listed
      },
      'math-worker and outsider listed with their functions',
      60_000,
      200,
    )
    assert.equal(listing.engine_running, true)
    const row = (name: string) => listing.workers.find((w) => w.name === name)
    assert.deepEqual(row('math-worker'), { name: 'math-worker', kind: 'local', namespace: 'default', status: 'running', pid: process.pid, functions: ['math::add'], source: './workers/math-worker' })
    assert.deepEqual(row('idle'), { name: 'idle', kind: 'local', namespace: 'default', status: 'disabled', pid: null, functions: [], source: './workers/idle' })
    assert.deepEqual(row('outsider'), { name: 'outsider', kind: 'external', namespace: 'jobs', status: 'running', pid: process.pid, functions: ['jobs::run'], source: null })
    assert.equal(row('svc-http')!.status, 'running')
    assert.equal(row('svc-state')!.status, 'running')
    assert.equal(row('svc-cron')!.status, 'disabled')
    assert.ok(!listing.workers.some((w) => String(w.name).startsWith('svc-cli')), 'the CLI does not list itself')

    const table = await svc(dir, ['worker', 'list'], engine.engineUrl)
    assert.match(table.stdout, new RegExp(`^math-worker  local    default    running     ${process.pid} +1 +\\./workers/math-worker$`, 'm'))
    // SVC_URL a fleet's list (issue 19 §3): the first engine that answers, [dead, live].
    const fromList = await svc(dir, ['worker', 'list', '--all', '--json'], `${closedUrl}, ${engine.engineUrl}`)
    assert.equal(fromList.code, 0, fromList.stderr)
    assert.deepEqual((JSON.parse(fromList.stdout) as typeof listing).workers.find((w) => w.name === 'math-worker'), row('math-worker'))
    assert.doesNotMatch(table.stdout, /outsider/, 'external workers only with --all')

    // svc reloads local worker entries itself; built-in changes wait for its next start.
    const added = await svc(dir, ['worker', 'add', './workers/later', '--no-wait'], engine.engineUrl)
    assert.equal(added.code, 0, added.stderr)
    assert.equal(added.stdout, 'Added later; svc is starting it (see svc worker list)\n')
    const enabled = await svc(dir, ['worker', 'add', 'cron'], engine.engineUrl)
    assert.equal(enabled.stdout, 'Enabled svc-cron; restart svc to start it\n')
    const disabled = await svc(dir, ['worker', 'remove', 'http', '--json'], engine.engineUrl)
    assert.deepEqual(JSON.parse(disabled.stdout), { workers: [{ name: 'svc-http', kind: 'builtin', action: 'disabled', changed: true }] })

    // Not interactive (no TTY): no prompt, the default (remove) applies.
    const removed = await svc(dir, ['worker', 'remove', 'math-worker'], engine.engineUrl)
    assert.equal(removed.code, 0, removed.stderr)
    assert.equal(removed.stdout, 'Removed math-worker from config.yaml; svc stops it\n')
    assert.doesNotMatch(config(dir), /name: math-worker/)
  })
})

describe('svc worker list with workers svc launched', () => {
  it('reads the supervisor state files: declared with svc worker add, running after svc starts', { timeout: 120_000 }, async () => {
    // No runtime kind and no install script: the supervisor starts it without installing anything.
    const dir = project({ 'math-worker': 'name: math-worker\nscripts:\n  start: node index.mjs\n' })
    const added = await svc(dir, ['worker', 'add', './workers/math-worker'])
    assert.equal(added.stdout, 'Added math-worker; it will start with svc\n')

    const engine = await startEngineProcess(dir)
    engines.add(engine)
    let row: Record<string, unknown> | undefined
    await waitFor(
      async () => {
        const result = await svc(dir, ['worker', 'list', '--json'], engine.engineUrl)
        assert.equal(result.code, 0, result.stderr)
        row = (JSON.parse(result.stdout).workers as Array<Record<string, unknown>>).find((w) => w.name === 'math-worker')
        return row?.status === 'running' && (row.functions as string[]).length > 0
      },
      () => `math-worker to start: ${JSON.stringify(row)}\n${engine.output.join('\n')}`,
      60_000,
      200,
    )
    const record = JSON.parse(readFileSync(join(dir, '.svc', 'state', 'workers', 'math-worker.json'), 'utf8'))
    assert.deepEqual(row, { name: 'math-worker', kind: 'local', namespace: 'default', status: 'running', pid: record.pid, functions: ['math-worker::ping'], source: './workers/math-worker' })

    const again = await svc(dir, ['worker', 'add', './workers/math-worker', '--json'], engine.engineUrl)
    assert.deepEqual(JSON.parse(again.stdout).workers[0], {
      name: 'math-worker',
      kind: 'local',
      path: './workers/math-worker',
      changed: false,
      state: 'running',
      pid: record.pid,
      functions: ['math-worker::ping'],
    })

    await stopEngine(engine)
    const after = JSON.parse((await svc(dir, ['worker', 'list', '--json'])).stdout)
    assert.equal(after.engine_running, false)
    assert.equal(after.workers.find((w: { name: string }) => w.name === 'math-worker').status, 'engine not running')
  })
})

describe('svc worker add into a running svc', () => {
  it('svc picks up the new entry; add follows the worker until it registers', { timeout: 120_000 }, async () => {
    const dir = project({ greeter: 'name: greeter\nscripts:\n  start: node index.mjs\n' })
    const engine = await startEngineProcess(dir)
    engines.add(engine)
    const added = await svc(dir, ['worker', 'add', './workers/greeter', '--timeout', '60'], engine.engineUrl)
    assert.equal(added.code, 0, added.stdout + added.stderr)
    assert.match(added.stdout, /Declared greeter in config\.yaml/)
    assert.match(added.stdout, /Registered with the engine: greeter::ping/)
    assert.match(added.stdout, /^greeter ready in [\d.]+ s \(logs: \.svc\/logs\/greeter\.log\)$/m)
    const result = await svc(dir, ['trigger', 'greeter::ping'], engine.engineUrl)
    assert.equal(result.stdout, '{\n  "pong": true\n}\n')

    const removed = await svc(dir, ['worker', 'remove', 'greeter'], engine.engineUrl)
    assert.equal(removed.stdout, 'Removed greeter from config.yaml; svc stops it\n')
    let last = ''
    await waitFor(
      async () => {
        const gone = await svc(dir, ['trigger', 'greeter::ping'], engine.engineUrl)
        last = gone.stdout + gone.stderr
        return gone.code === 1 && /function_not_found/.test(gone.stderr)
      },
      () => `greeter to stop answering: ${last}`,
      20_000,
      200,
    )
    await stopEngine(engine)
  })
})

describe('svc worker add of a worker that cannot start (issue 11)', () => {
  it('reports within a few seconds with its output; svc retries once, then waits for a change; a fix starts it', { timeout: 120_000 }, async () => {
    const dir = project({ broken: 'name: broken\nscripts:\n  start: node index.mjs\n' })
    writeFileSync(join(dir, 'workers', 'broken', 'index.mjs'), 'export const handler = {\n')
    const engine = await startEngineProcess(dir)
    engines.add(engine)
    const started = Date.now()
    const added = await svc(dir, ['worker', 'add', './workers/broken', '--timeout', '60'], engine.engineUrl)
    const took = Date.now() - started
    assert.equal(added.code, 1, added.stdout + added.stderr)
    assert.ok(took < 8000, `took ${took} ms`)
    assert.match(added.stderr, /Error: broken exited before registering \(exited with code 1\)/)
    assert.match(added.stderr, /SyntaxError/)
    // svc: a second identical failure, then one line and no third attempt.
    const waiting = await waitFor(
      () => engine.output.find((l) => l.includes('cannot start') && l.includes('waiting for a change to workers/broken')),
      () => `the "waiting for a change" line:\n${engine.output.join('\n')}`,
    )
    assert.match(waiting, /SyntaxError/)
    await quietPeriod(2500, 'no third start of a worker that failed twice the same way (the supervisor backoff runs on real timers)')
    const attempts = engine.output.filter((l) => l.includes('broken starting: node index.mjs')).length
    assert.equal(attempts, 2, engine.output.join('\n'))
    writeFileSync(
      join(dir, 'workers', 'broken', 'index.mjs'),
      `import { registerWorker } from ${JSON.stringify(import.meta.resolve('svc-sdk'))}\nconst svc = registerWorker()\nsvc.registerFunction('broken::ping', () => ({ pong: true }))\n`,
    )
    let last = ''
    await waitFor(
      async () => {
        const result = await svc(dir, ['trigger', 'broken::ping'], engine.engineUrl)
        last = result.stderr
        return result.code === 0
      },
      () => `the fixed worker to answer: ${last}`,
      20_000,
      200,
    )
    await stopEngine(engine)
  })
})

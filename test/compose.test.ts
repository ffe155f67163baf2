/**
 * End to end: the compose daemon (cli.md §4.7) as a real `svc compose` process against a real
 * engine process, running tiny svc-sdk workers as path containers under the supervisor.
 * Needs `npm run build` (bin/run.js runs dist/).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { processAlive } from '../src/lib/processes.ts'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { ROOT, startEngineProcess, SVC_BIN, tempProject, type RunningEngine } from './support/processes.ts'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'
import { waitFor } from './support/wait.ts'

const SDK = join(ROOT, 'packages', 'sdk', 'dist', 'index.js')
const NS = 'e2e-otter'

let dir = ''
let engine: RunningEngine | undefined
let client: SvcClient | undefined
const daemons = new Set<Daemon>()
/** Container pids seen in results: killed in `after` should anything survive. */
const containerPids = new Set<number>()
let unreachable: Promise<{ code: number | null; stdout: string; stderr: string }> | undefined

interface Daemon {
  child: ChildProcess
  events: Array<Record<string, unknown>>
  stderr: string[]
  exited: Promise<number | null>
}

/** A worker directory whose process registers `functions` (id → handler source) under SVC_WORKER_NAME. */
function writeWorker(name: string, body: string, manifest = `name: ${name}\nscripts:\n  start: node index.js\n`): void {
  const workerDir = join(dir, 'workers', name)
  mkdirSync(workerDir, { recursive: true })
  writeFileSync(join(workerDir, 'svc.worker.yaml'), manifest)
  writeFileSync(join(workerDir, 'index.js'), `import { registerWorker } from ${JSON.stringify(SDK)}\n${body}\n`)
}

const cleanEnv = () => cliEnv()

/** Starts `svc compose [up] -n <ns> --engine <url> --json …` in the project directory. */
function spawnDaemon(args: string[]): Daemon {
  const child = spawn(process.execPath, [SVC_BIN, 'compose', ...args, '--engine', engine!.engineUrl, '--json'], {
    cwd: dir,
    env: cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const daemon: Daemon = {
    child,
    events: [],
    stderr: [],
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  }
  createInterface({ input: child.stdout! }).on('line', (line) => {
    try {
      daemon.events.push(JSON.parse(line))
    } catch {
      daemon.stderr.push(`stdout: ${line}`)
    }
  })
  child.stderr!.on('data', (d) => daemon.stderr.push(String(d)))
  daemons.add(daemon)
  return daemon
}

/** Waits for an event matching `match`, or for the process to exit (then rejects with its output). */
async function waitForEvent(daemon: Daemon, match: (e: Record<string, unknown>) => boolean, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  let exited = false
  void daemon.exited.then(() => (exited = true))
  const story = () => `an event (exited: ${exited}):\n${JSON.stringify(daemon.events, null, 1)}\n${daemon.stderr.join('')}`
  const found = await waitFor(() => daemon.events.find(match) ?? (exited && ('exited' as const)), story, timeoutMs, 50)
  if (found === 'exited') throw new Error(`no such event: ${story()}`)
  return found
}

/** Calls a function in the test namespace and returns its result, or `{error}` when it failed. */
async function call(functionId: string, payload: Record<string, unknown> = {}, timeoutMs = 90_000): Promise<any> {
  try {
    return await client!.trigger({ function_id: functionId, payload, namespace: NS, timeoutMs })
  } catch (err) {
    const e = err as { code?: string; detail?: string; message: string }
    return { error: { code: e.code, message: e.detail ?? e.message } }
  }
}

function remember(result: any): any {
  const containers = result?.containers ?? result?.up?.containers ?? []
  for (const c of containers) if (typeof c.pid === 'number') containerPids.add(c.pid)
  return result
}

async function waitUntil(predicate: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  await waitFor(predicate, what, timeoutMs, 100)
}

/** Runs `svc <args>` to completion in the project directory. */
function svc(args: string[]): Promise<Finished> {
  return runSvc(args, { cwd: dir })
}

const COMPOSE = `# shop project: web needs api
containers:
  web:
    worker: path://./workers/web
    depends_on: [api]   # api first
    environment: { GREETING: "\${GREETING:hi}" }
  # the API
  api:
    worker: path://./workers/api
    env_file: .env.api
`

before(async () => {
  // svc-pubsub is disabled so that a builtin:// container of it finds the engine not running it.
  dir = await tempProject('  - name: svc-pubsub\n    enabled: false\n')
  writeWorker(
    'api',
    `registerWorker().registerFunction('api::hello', (p) => ({ hello: p?.name ?? 'world', worker: process.env.SVC_WORKER_NAME, ns: process.env.SVC_NAMESPACE, tone: process.env.TONE }))`,
  )
  writeFileSync(join(dir, '.env.api'), '# read at start\nTONE="warm"\n')
  writeFileSync(join(dir, '.env.reserved'), 'SVC_NAMESPACE=elsewhere\n')
  writeFileSync(join(dir, 'reserved.yaml'), 'containers:\n  sneaky:\n    worker: path://./workers/base\n    env_file: [.env.reserved]\n')
  writeWorker(
    'web',
    `const svc = registerWorker()\nsvc.registerFunction('web::greet', async (p) => ({ greeting: process.env.GREETING, inner: await svc.trigger({ function_id: 'api::hello', payload: p }) }))`,
  )
  writeWorker('extra', `registerWorker().registerFunction('extra::ping', () => ({ pong: true }))`)
  writeWorker('base', `registerWorker().registerFunction('base::ok', () => ({ ok: true }))`)
  writeWorker('broken', `console.error('broken: giving up'); process.exit(3)`)
  writeWorker('misnamed', `registerWorker(undefined, { workerName: 'not-my-key' }).registerFunction('misnamed::x', () => 1)`)
  // `slow` registers only once `fast` has: a sequential start of the two would time out.
  writeWorker(
    'slow',
    [
      "const probe = registerWorker(undefined, { workerName: 'probe', namespace: 'default' })",
      'for (;;) {',
      "  const { workers } = await probe.trigger({ function_id: 'engine::workers::list', payload: { namespace: process.env.SVC_NAMESPACE } })",
      "  if (workers.some((w) => w.name === 'fast')) break",
      '  await new Promise((r) => setTimeout(r, 100))',
      '}',
      'await probe.shutdown()',
      "registerWorker().registerFunction('slow::x', () => 1)",
    ].join('\n'),
  )
  writeWorker('fast', `registerWorker().registerFunction('fast::x', () => 1)`)
  // Exits with code 1 a second after its first registration; runs on after a restart.
  writeWorker(
    'quitter',
    [
      "import { existsSync, writeFileSync } from 'node:fs'",
      // Outside the watched worker directory, or the write itself would restart it.
      'const marker = `${process.env.SVC_PROJECT_ROOT}/.svc/ran-${process.env.SVC_WORKER_NAME}`',
      "registerWorker().registerFunction(`${process.env.SVC_WORKER_NAME}::x`, () => 1)",
      'if (!existsSync(marker)) { writeFileSync(marker, "1"); setTimeout(() => process.exit(1), 1000) }',
    ].join('\n'),
  )
  writeFileSync(
    join(dir, 'policies.yaml'),
    'containers:\n  never-q:\n    worker: path://./workers/quitter\n    restart: never\n    watch: false\n  retry-q:\n    worker: path://./workers/quitter\n    restart: on-failure\n    watch: false\n',
  )
  writeFileSync(join(dir, 'parallel.yaml'), 'startup_timeout: 60s\ncontainers:\n  slow:\n    worker: path://./workers/slow\n  fast:\n    worker: path://./workers/fast\n')
  writeFileSync(join(dir, 'worker-compose.yaml'), COMPOSE)
  writeFileSync(
    join(dir, 'failing.yaml'),
    'containers:\n  base:\n    worker: path://./workers/base\n  broken:\n    worker: path://./workers/broken\n    depends_on: [base]\n  after-broken:\n    worker: path://./workers/extra\n    depends_on: [broken]\n',
  )
  writeFileSync(join(dir, 'misnamed.yaml'), 'startup_timeout: 4s\ncontainers:\n  misnamed:\n    worker: path://./workers/misnamed\n')
  writeFileSync(
    join(dir, 'builtins.yaml'),
    'containers:\n  kv:\n    worker: builtin://state\n    config: { max_value_bytes: "${KV_MAX_BYTES:64}" }\n  topics:\n    worker: builtin://pubsub\n    depends_on: [kv]\n',
  )
  writeFileSync(join(dir, 'invalid.yaml'), 'containers:\n  api:\n    worker: path://./workers/api\n    enviroment: { A: b }\n')
  engine = await startEngineProcess(dir)
  // Started now, checked last: it waits out the 10 s connection deadline beside the other tests.
  unreachable = svc(['compose', '-n', 'e2e-nowhere', '--engine', 'ws://127.0.0.1:9', '--json'])
  client = registerWorker(engine.engineUrl, { workerName: 'compose-e2e' })
})

after(async () => {
  await unreachable
  await client?.shutdown()
  for (const d of daemons) {
    if (d.child.exitCode === null && d.child.signalCode === null) {
      d.child.kill('SIGTERM')
      const timer = setTimeout(() => d.child.kill('SIGKILL'), 15_000)
      await d.exited
      clearTimeout(timer)
    }
  }
  for (const pid of containerPids) {
    if (!processAlive(pid)) continue
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {
      /* gone */
    }
  }
  await engine?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('svc compose', () => {
  let daemon: Daemon

  it('starts the daemon and announces it', async () => {
    daemon = spawnDaemon(['-n', NS])
    const ready = await waitForEvent(daemon, (e) => e.event === 'compose_ready')
    assert.equal(ready.namespace, NS)
    assert.equal(ready.engine_url, engine!.engineUrl)
    assert.equal(ready.pid, daemon.child.pid)
  })

  it('refuses a second daemon in the same namespace (exit 1)', async () => {
    const second = spawnDaemon(['-n', NS])
    assert.equal(await second.exited, 1)
    const error = second.events.find((e) => e.error) as { error: { code: string; message: string } }
    assert.equal(error.error.code, 'DAEMON_ALREADY_SERVING')
    assert.equal(error.error.message, `DAEMON_ALREADY_SERVING: a compose daemon already serves namespace ${NS} (pid ${daemon.child.pid})`)
  })

  it('validates files, pointing at line and column', async () => {
    assert.deepEqual(await call('compose::validate'), { valid: true, namespace: NS, start_order: ['api', 'web'] })
    const invalid = await call('compose::validate', { file: 'invalid.yaml' })
    assert.equal(invalid.error.code, 'INVALID_COMPOSE_FILE')
    assert.equal(invalid.error.message, "invalid.yaml:4:5: unknown key 'enviroment' in container 'api' (did you mean 'environment'?)")
    assert.equal((await call('compose::status', { file: 'missing.yaml' })).error.code, 'NO_COMPOSE_FILE')
    assert.equal((await call('compose::up', { namespace: 'elsewhere' })).error.code, 'WRONG_DAEMON')
    const reserved = await call('compose::up', { file: 'reserved.yaml' })
    assert.equal(reserved.status, 'failed')
    assert.equal(reserved.containers[0].error.code, 'RESERVED_ENV_OVERRIDE')
    assert.match(reserved.containers[0].error.message, /^\.env\.reserved:1: env_file of container sneaky sets SVC_NAMESPACE/)
  })

  it('brings two dependent path containers up in order', async () => {
    const up = remember(await call('compose::up'))
    assert.equal(up.status, 'ok', JSON.stringify(up))
    assert.equal(up.changed, true)
    assert.match(up.operation_id, /^op_[0-9a-f]{4}$/)
    assert.deepEqual(
      up.containers.map((c: any) => [c.container, c.state, c.changed, typeof c.pid]),
      [
        ['api', 'ready', true, 'number'],
        ['web', 'ready', true, 'number'],
      ],
    )
    const status = await call('compose::status')
    assert.equal(status.namespace, NS)
    assert.equal(status.file, 'worker-compose.yaml')
    assert.equal(status.daemon_pid, daemon.child.pid)
    assert.deepEqual(
      status.containers.map((c: any) => [c.container, c.worker, c.state, c.restarts, c.last_error]),
      [
        ['web', 'path://./workers/web', 'ready', 0, null],
        ['api', 'path://./workers/api', 'ready', 0, null],
      ],
    )
    // A second up starts nothing.
    const again = await call('compose::up')
    assert.equal(again.changed, false)
    assert.ok(existsSync(join(dir, '.svc', 'logs', NS, 'api.log')))
    const state = JSON.parse(readFileSync(join(dir, '.svc', 'compose', NS, 'state.json'), 'utf8'))
    assert.equal(state.namespace, NS)
  })

  it('lets svc trigger -n reach the containers in the namespace', async () => {
    const result = await svc(['trigger', '-n', NS, 'web::greet', 'name=ada', '--engine', engine!.engineUrl])
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(JSON.parse(result.stdout), { greeting: 'hi', inner: { hello: 'ada', worker: 'api', ns: NS, tone: 'warm' } })
  })

  it('svc compose status finds the only daemon and prints its containers; --json gives compose::status', async () => {
    const human = await svc(['compose', 'status', '--engine', engine!.engineUrl])
    assert.equal(human.code, 0, human.stderr)
    const lines = human.stdout.trimEnd().split('\n')
    assert.equal(lines[0], `worker-compose.yaml in namespace ${NS} (daemon pid ${daemon.child.pid})`)
    assert.match(lines[1]!, /^CONTAINER\s+WORKER\s+STATE\s+PID\s+RESTARTS\s+STARTED\s+LAST ERROR$/)
    assert.match(lines[2]!, /^web\s+path:\/\/\.\/workers\/web\s+ready\s+\d+\s+0\s+\S+\s+-$/)
    assert.match(lines[3]!, /^api\s+path:\/\/\.\/workers\/api\s+ready\s/)
    const json = await svc(['compose', 'status', '-n', NS, '--json', '--engine', engine!.engineUrl])
    assert.equal(json.code, 0, json.stderr)
    const status = JSON.parse(json.stdout)
    assert.equal(status.namespace, NS)
    assert.deepEqual(status.containers.map((c: any) => c.state), ['ready', 'ready'])
    const wrong = await svc(['compose', 'status', '-n', 'no-daemon-here', '--engine', engine!.engineUrl])
    assert.equal(wrong.code, 1)
    assert.match(wrong.stderr, /^Error: function_not_found: /)
  })

  it('compose::schema returns the JSON Schema of worker-compose.yaml', async () => {
    const schema = await call('compose::schema')
    assert.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema')
    assert.deepEqual(schema.required, ['containers'])
    assert.deepEqual(schema.properties.containers.additionalProperties.else.properties.restart.enum, ['always', 'on-failure', 'never'])
  })

  it('restart policy: never leaves an exited container failed, on-failure restarts it; svc compose down stops the rest', async () => {
    const up = remember(await call('compose::up', { file: 'policies.yaml' }))
    assert.equal(up.status, 'ok', JSON.stringify(up))
    const status = () => call('compose::status', { file: 'policies.yaml' })
    let last: unknown
    await waitUntil(async () => {
      const s = (last = await status())
      const never = s.containers.find((c: any) => c.container === 'never-q')
      const retry = s.containers.find((c: any) => c.container === 'retry-q')
      return never.state === 'failed' && retry.state === 'ready' && retry.restarts === 1
    }, 'never-q failed and retry-q restarted').catch((err) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(last)}`)
    })
    const after = await status()
    const never = after.containers.find((c: any) => c.container === 'never-q')
    assert.equal(never.pid, null)
    assert.equal(never.restarts, 0)
    assert.equal(never.last_error.code, 'EXITED')
    assert.match(never.last_error.message, /exited with code 1; restart policy never/)
    for (const c of after.containers) if (typeof c.pid === 'number') containerPids.add(c.pid)

    const down = await svc(['compose', 'down', '-n', NS, '-f', 'policies.yaml', '--engine', engine!.engineUrl])
    assert.equal(down.code, 0, down.stderr)
    assert.match(down.stdout, /^retry-q  stopped  changed/m)
    assert.match(down.stdout, /^down: ok \(op_[0-9a-f]{4}\)$/m)
    assert.deepEqual((await status()).containers.map((c: any) => c.state), ['stopped', 'stopped'])
  })

  it('adds a worker to the running project, editing the file in place', async () => {
    const added = remember(await call('compose::add', { worker: './workers/extra' }))
    assert.equal(added.status, 'ok', JSON.stringify(added))
    assert.equal(added.container, 'extra')
    assert.equal(added.changed, true)
    assert.equal(added.detail, 'added extra (path://./workers/extra)')
    assert.deepEqual(
      added.up.containers.map((c: any) => [c.container, c.state, c.changed]),
      [
        ['api', 'ready', false],
        ['web', 'ready', false],
        ['extra', 'ready', true],
      ],
    )
    assert.equal(readFileSync(join(dir, 'worker-compose.yaml'), 'utf8'), `${COMPOSE}  extra:\n    worker: path://./workers/extra\n`)
    assert.deepEqual(await call('extra::ping'), { pong: true })

    const again = await call('compose::add', { worker: './workers/extra' })
    assert.equal(again.changed, false)
    assert.equal(again.detail, 'already declared')
    assert.deepEqual(await call('compose::add', {}), { error: { code: 'INVALID_ARGUMENTS', message: 'worker is required' } })
    assert.equal((await call('compose::add', { worker: 'nope' })).error.code, 'UNKNOWN_WORKER')
    assert.equal((await call('compose::add', { worker: 'svc-observability' })).error.code, 'RESERVED_WORKER')

    // A built-in, into a file that does not exist yet.
    const builtin = await call('compose::add', { worker: 'state', file: 'kv.yaml' })
    assert.equal(builtin.status, 'ok', JSON.stringify(builtin))
    assert.equal(builtin.detail, 'added svc-state (builtin://svc-state)')
    assert.deepEqual(builtin.up.containers, [{ container: 'svc-state', state: 'ready', changed: true }])
    assert.equal(readFileSync(join(dir, 'kv.yaml'), 'utf8'), 'containers:\n  svc-state:\n    worker: builtin://svc-state\n')
  })

  it('restarts one container and removes it again, restoring the file', async () => {
    const before = (await call('compose::status')).containers.find((c: any) => c.container === 'extra').pid
    const restarted = remember(await call('compose::restart', { container: 'extra' }))
    assert.equal(restarted.status, 'ok', JSON.stringify(restarted))
    const extra = restarted.containers.find((c: any) => c.container === 'extra')
    assert.equal(extra.changed, true)
    assert.notEqual(extra.pid, before)
    assert.equal((await call('compose::restart', { container: 'nope' })).error.code, 'UNKNOWN_CONTAINER')
    assert.match((await call('compose::remove', { container: 'api' })).error.message, /cannot remove api: web depends on it/)

    const removed = await call('compose::remove', { container: 'extra' })
    assert.equal(removed.status, 'ok')
    assert.equal(removed.changed, true)
    assert.deepEqual(removed.down.containers.map((c: any) => [c.container, c.state, c.changed]), [['extra', 'stopped', true]])
    assert.equal(readFileSync(join(dir, 'worker-compose.yaml'), 'utf8'), COMPOSE)
    await waitUntil(() => !processAlive(extra.pid), 'extra is gone')
    const added = remember(await call('compose::add', { worker: './workers/extra' }))
    assert.equal(added.status, 'ok')
  })

  it('checks built-in containers against the engine and stores their config unexpanded, live', async () => {
    const up = await call('compose::up', { file: 'builtins.yaml' })
    assert.equal(up.status, 'failed', JSON.stringify(up))
    const [kv, topics] = up.containers
    assert.equal(kv.container, 'kv')
    assert.equal(kv.state, 'stopped')
    assert.equal(kv.rolled_back, true)
    assert.equal(kv.detail, 'config applied to settings entry svc-state')
    assert.equal(topics.error.code, 'BUILTIN_DISABLED')
    assert.match(topics.error.message, /does not run the built-in worker svc-pubsub/)
    // Deep-merged into the entry as written; the engine expands it and svc-state applies it at once.
    const stored = await client!.trigger<unknown, { value: Record<string, unknown> }>({ function_id: 'configuration::get', payload: { id: 'svc-state', raw: true } })
    assert.equal(stored.value.max_value_bytes, '${KV_MAX_BYTES:64}')
    await waitUntil(async () => {
      try {
        await client!.trigger({ function_id: 'state::set', payload: { scope: 'compose', key: 'k', value: 'x'.repeat(100) } })
        return false
      } catch (error) {
        return (error as { code?: string }).code === 'VALUE_TOO_LARGE'
      }
    }, 'svc-state applies max_value_bytes')
  })

  it('starts independent containers concurrently', async () => {
    const up = remember(await call('compose::up', { file: 'parallel.yaml' }))
    assert.equal(up.status, 'ok', JSON.stringify(up))
    assert.deepEqual(up.containers.map((c: any) => [c.container, c.state]), [
      ['slow', 'ready'],
      ['fast', 'ready'],
    ])
    assert.equal((await call('compose::down', { file: 'parallel.yaml' })).status, 'ok')
  })

  it('rolls back a failed up and reports each container', async () => {
    const up = remember(await call('compose::up', { file: 'failing.yaml' }))
    assert.equal(up.status, 'failed', JSON.stringify(up))
    const byKey = Object.fromEntries(up.containers.map((c: any) => [c.container, c]))
    assert.equal(byKey.base.state, 'stopped')
    assert.equal(byKey.base.rolled_back, true)
    assert.equal(byKey.broken.state, 'failed')
    assert.equal(byKey.broken.error.code, 'CHILD_EXITED_BEFORE_REGISTRATION')
    assert.match(byKey.broken.error.message, /exited with code 3/)
    assert.match(byKey.broken.error.message, /broken: giving up/)
    // Its output reached the log store as the engine's own workers' does (builtins.md §12.2).
    const logs = (await client!.trigger<unknown, { logs: Array<Record<string, any>> }>({ function_id: 'engine::logs::list', payload: { search: 'broken: giving up' } })).logs
    assert.ok(logs.length >= 1, 'the container output is in engine::logs::list')
    assert.equal(logs[0]!.service_name, 'broken')
    assert.equal(logs[0]!.severity_text, 'WARN')
    assert.equal(logs[0]!.attributes['log.source'], 'stderr')
    assert.equal(byKey['after-broken'].error.code, 'DEPENDENCY_FAILED')
    const workers = (await client!.trigger<unknown, { workers: Array<{ name: string }> }>({ function_id: 'engine::workers::list', payload: { namespace: NS } })).workers
    assert.ok(!workers.some((w) => w.name === 'base'), 'base was stopped again')
    // The first project is untouched.
    assert.deepEqual((await call('compose::status')).containers.map((c: any) => c.state), ['ready', 'ready', 'ready'])
  })

  it('says so when a worker registers under another name', async () => {
    const up = await call('compose::up', { file: 'misnamed.yaml' })
    assert.equal(up.status, 'failed')
    assert.equal(up.containers[0].error.code, 'STARTUP_TIMEOUT')
    assert.match(up.containers[0].error.message, /misnamed did not register within 4 s/)
    assert.match(up.containers[0].error.message, /'not-my-key'.*must use SVC_WORKER_NAME/)
  })

  it('lists its projects', async () => {
    const list = await call('compose::list')
    assert.equal(list.namespace, NS)
    const projects = Object.fromEntries(list.projects.map((p: any) => [p.file, p]))
    assert.equal(projects['worker-compose.yaml'].state, 'up')
    assert.deepEqual(projects['worker-compose.yaml'].containers, ['api', 'web', 'extra'])
    assert.equal(projects['failing.yaml'].state, 'failed')
  })

  it('brings the project down in reverse order', async () => {
    const before = (await call('compose::status')).containers.map((c: any) => c.pid as number)
    const down = await call('compose::down')
    assert.equal(down.status, 'ok')
    assert.deepEqual(
      down.containers.map((c: any) => [c.container, c.state, c.changed]),
      [
        ['api', 'stopped', true],
        ['web', 'stopped', true],
        ['extra', 'stopped', true],
      ],
    )
    await waitUntil(() => before.every((pid: number) => !processAlive(pid)), 'the container processes are gone')
    assert.deepEqual((await call('compose::status')).containers.map((c: any) => c.state), ['stopped', 'stopped', 'stopped'])
  })

  it('stops on compose::stop with exit 0', async () => {
    remember(await call('compose::up'))
    const pids = (await call('compose::status')).containers.map((c: any) => c.pid as number)
    assert.deepEqual(await call('compose::stop'), { stopping: true })
    assert.equal(await daemon.exited, 0, daemon.stderr.join(''))
    await waitUntil(() => pids.every((pid: number) => !processAlive(pid)), 'the container processes are gone')
    assert.ok(daemon.events.some((e) => e.event === 'stopped'))
  })
})

describe('svc compose up', () => {
  it('exits 2 with INVALID_COMPOSE_FILE and the place for an invalid file', async () => {
    const result = await svc(['compose', 'up', '-n', 'e2e-invalid', '-f', 'invalid.yaml', '--engine', engine!.engineUrl])
    assert.equal(result.code, 2)
    assert.equal(result.stderr, "Error: invalid.yaml:4:5: unknown key 'enviroment' in container 'api' (did you mean 'environment'?)\n")
  })

  it('exits 1 with PROJECT_DID_NOT_START when the project fails', async () => {
    const d = spawnDaemon(['up', '-n', 'e2e-fail', '-f', 'failing.yaml'])
    assert.equal(await d.exited, 1)
    const error = d.events.find((e) => e.error) as { error: { code: string; message: string } }
    assert.equal(error.error.code, 'PROJECT_DID_NOT_START')
    assert.match(error.error.message, /broken \(CHILD_EXITED_BEFORE_REGISTRATION\)/)
    const up = d.events.find((e) => e.event === 'project_up') as any
    for (const c of up.containers) if (typeof c.pid === 'number') assert.ok(!processAlive(c.pid))
  })

  it('brings the file up, keeps serving, and stops everything on SIGTERM (exit 0)', async () => {
    const d = spawnDaemon(['up', '-n', 'e2e-up'])
    const up = remember(await waitForEvent(d, (e) => e.event === 'project_up')) as any
    assert.equal(up.status, 'ok', JSON.stringify(up))
    const result = await svc(['trigger', '-n', 'e2e-up', 'api::hello', '--engine', engine!.engineUrl])
    assert.deepEqual(JSON.parse(result.stdout), { hello: 'world', worker: 'api', ns: 'e2e-up', tone: 'warm' })
    d.child.kill('SIGTERM')
    assert.equal(await d.exited, 0)
    for (const c of up.containers) assert.ok(!processAlive(c.pid), `${c.container} stopped`)
  })

  it('re-adopts the containers of a daemon that was killed', async () => {
    const first = spawnDaemon(['up', '-n', 'e2e-adopt'])
    const up = remember(await waitForEvent(first, (e) => e.event === 'project_up')) as any
    assert.equal(up.status, 'ok', JSON.stringify(up))
    first.child.kill('SIGKILL')
    await first.exited
    await waitUntil(async () => {
      const { workers } = await client!.trigger<unknown, { workers: Array<{ name: string }> }>({ function_id: 'engine::workers::list', payload: { namespace: 'e2e-adopt' } })
      return !workers.some((w) => w.name === 'compose')
    }, 'the killed daemon is disconnected')

    const second = spawnDaemon(['-n', 'e2e-adopt'])
    await waitForEvent(second, (e) => e.event === 'compose_ready')
    const status = await client!.trigger<unknown, any>({ function_id: 'compose::status', payload: {}, namespace: 'e2e-adopt' })
    const byName = (a: any[], b: any[]) => (a[0] < b[0] ? -1 : 1)
    assert.deepEqual(
      status.containers.map((c: any) => [c.container, c.state, c.pid]).sort(byName),
      up.containers.map((c: any) => [c.container, 'ready', c.pid]).sort(byName),
    )
    second.child.kill('SIGTERM')
    assert.equal(await second.exited, 0)
    await waitUntil(() => up.containers.every((c: any) => !processAlive(c.pid)), 'the adopted processes are stopped')
  })

  it('exits 3 when the engine is not reachable within 10 s', async () => {
    const result = await unreachable!
    assert.equal(result.code, 3)
    assert.equal(JSON.parse(result.stdout.trim().split('\n').pop()!).error.code, 'ENGINE_UNREACHABLE')
  })
})

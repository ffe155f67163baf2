/**
 * The supervisor with real child processes in temporary directories (cli.md §5): tiny Node
 * workers that print `ready` where a real worker would register with the engine.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import type { Logger } from '../../runtime/engine/types.ts'
import { checkKvm } from './microvm/probe.ts'
import { superviseWorker } from './supervisor.ts'
import type { SupervisorError } from './supervisor.ts'
import type { OutputLine, SupervisedWorker, SupervisorTimings, WorkerSpec, WorkerState } from './types.ts'
import { quietPeriod, waitFor } from '../../test/support/wait.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-supervisor-'))
const started: SupervisedWorker[] = []
const pids = new Set<number>()
after(async () => {
  await Promise.all(started.map((w) => w.stop().catch(() => {})))
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      /* gone */
    }
  }
  rmSync(root, { recursive: true, force: true })
})

let count = 0
/** A worker directory under the project root with `files`. */
function workerDir(files: Record<string, string>): { dir: string; name: string } {
  const name = `w${count++}`
  const dir = join(root, 'workers', name)
  mkdirSync(dir, { recursive: true })
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), content)
  }
  return { dir, name }
}

/** A worker script: prints `ready <tag> <pid>` (our stand-in for registering), then idles. */
function script(tag: string, extra = ''): string {
  return `${extra}\nconsole.log('ready ${tag} ' + process.pid)\nsetInterval(() => {}, 1000)\n`
}

const manifest = (name: string, more = '') => `name: ${name}\nscripts:\n  start: node worker.mjs\n${more}`

interface Harness {
  worker: SupervisedWorker
  dir: string
  name: string
  lines: OutputLine[]
  logs: Array<{ level: string; message: string }>
  states: WorkerState[]
  /** Waits until `check` is true, failing with the worker's story after `timeoutMs`. */
  until(check: () => boolean, what: string, timeoutMs?: number): Promise<void>
  /** The `ready <tag> <pid>` lines printed so far. */
  readies(): string[]
}

function supervise(
  files: Record<string, string>,
  spec: Partial<WorkerSpec> | ((dir: string) => Partial<WorkerSpec>) = {},
  timings: Partial<SupervisorTimings> = {},
): Harness {
  const { dir, name } = workerDir(files)
  const lines: OutputLine[] = []
  const logs: Array<{ level: string; message: string }> = []
  const states: WorkerState[] = []
  const readyAt: number[] = []
  const log = Object.fromEntries(
    (['debug', 'info', 'warn', 'error'] as const).map((level) => [level, (message: string) => void logs.push({ level, message })]),
  ) as unknown as Logger
  const worker = superviseWorker(
    {
      name,
      directory: dir,
      namespace: 'default',
      engineUrl: 'ws://127.0.0.1:1',
      projectRoot: root,
      envBase: 'engine',
      env: {},
      watch: true,
      isRegistered: (probe) => readyAt.some((t) => t >= probe.startedAtMs),
      ...(typeof spec === 'function' ? spec(dir) : spec),
    },
    { log, timings },
  )
  worker.on('output', (line: OutputLine) => {
    lines.push(line)
    if (line.text.startsWith('ready')) {
      readyAt.push(Date.now())
      const pid = Number(line.text.split(' ').pop())
      if (pid) pids.add(pid)
    }
  })
  worker.on('state', (state: WorkerState) => states.push(state))
  started.push(worker)
  const story = () =>
    `state ${worker.state}, states ${states.join(' → ')}\nlogs:\n${logs.map((l) => `  ${l.level} ${l.message}`).join('\n')}\noutput:\n${lines
      .map((l) => `  ${l.stream} ${l.text}`)
      .join('\n')}`
  return {
    worker,
    dir,
    name,
    lines,
    logs,
    states,
    async until(check, what, timeoutMs = 20_000) {
      await waitFor(check, () => `${what}\n${story()}`, timeoutMs)
    },
    readies: () => lines.filter((l) => l.text.startsWith('ready')).map((l) => l.text),
  }
}

/** Alive and not a zombie. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return !/^[ZX]$/.test(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!)
  } catch {
    return process.platform !== 'linux'
  }
}

describe('superviseWorker (cli.md §5)', () => {
  it('runs the start command in the worker directory with the environment of §5.2, and reaches running', async () => {
    const h = supervise(
      {
        'svc.worker.yaml': manifest('env-worker', 'env:\n  FROM_MANIFEST: m\n  SHARED: manifest\n  SVC_URL: ws://ignored\n'),
        'worker.mjs': script(
          'env',
          `const keys = ['SVC_URL','SVC_WORKER_NAME','SVC_NAMESPACE','SVC_ISOLATION','SVC_WORKER_CONFIG','SVC_PROJECT_ROOT','III_URL','III_WORKER_NAME','III_NAMESPACE','FROM_MANIFEST','FROM_ENTRY','SHARED']
console.log('env ' + JSON.stringify({ ...Object.fromEntries(keys.map((k) => [k, process.env[k]])), cwd: process.cwd(), node: process.execPath, path0: process.env.PATH.split(':')[0] }))`,
        ),
      },
      { namespace: 'shop', env: { FROM_ENTRY: 'e', SHARED: 'entry', SVC_NAMESPACE: 'nope' }, config: { greeting: 'hello' } },
    )
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    assert.equal(h.worker.state, 'running')
    assert.deepEqual(h.states, ['starting', 'running'])
    const line = h.lines.find((l) => l.text.startsWith('env '))!
    const env = JSON.parse(line.text.slice(4))
    assert.deepEqual(env, {
      SVC_URL: 'ws://127.0.0.1:1',
      SVC_WORKER_NAME: h.name,
      SVC_NAMESPACE: 'shop',
      SVC_ISOLATION: 'process',
      SVC_WORKER_CONFIG: '{"greeting":"hello"}',
      SVC_PROJECT_ROOT: root,
      III_URL: 'ws://127.0.0.1:1',
      III_WORKER_NAME: h.name,
      III_NAMESPACE: 'shop',
      FROM_MANIFEST: 'm',
      FROM_ENTRY: 'e',
      SHARED: 'entry',
      cwd: h.dir,
      // `node` in the start command is the Node svc runs on.
      node: process.execPath,
      path0: dirname(process.execPath),
    })
    const warnings = h.logs.filter((l) => l.level === 'warn').map((l) => l.message)
    assert.ok(warnings.some((w) => w.includes('manifest env sets SVC_URL')), warnings.join('\n'))
    assert.ok(warnings.some((w) => w.includes('entry env sets SVC_NAMESPACE')), warnings.join('\n'))
    await h.worker.stop()
    assert.equal(h.worker.state, 'stopped')
    assert.equal(h.worker.pid, undefined)
  })

  it('installs before the first start, not again while the dependency manifests are unchanged, and again after package.json changes', async () => {
    const files = {
      'svc.worker.yaml': manifest('installer', 'scripts:\n  install: node install.mjs\n  start: node worker.mjs\n').replace(/scripts:\n  start: node worker.mjs\n/, ''),
      'package.json': '{"name":"installer","version":"1.0.0"}\n',
      'install.mjs': `import { appendFileSync, writeFileSync } from 'node:fs'
appendFileSync('installs.txt', 'x')
// Like npm: the install writes a lockfile, which must not count as a new change.
writeFileSync('package-lock.json', JSON.stringify({ at: Date.now() }))
console.log('installed')`,
      'worker.mjs': script('inst'),
    }
    const h = supervise(files)
    const installs = () => (existsSync(join(h.dir, 'installs.txt')) ? readFileSync(join(h.dir, 'installs.txt'), 'utf8').length : 0)
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    assert.equal(installs(), 1)
    assert.deepEqual(h.states.slice(0, 3), ['installing', 'starting', 'running'])
    const state = JSON.parse(readFileSync(join(root, '.svc', 'state', 'workers', `${h.name}.json`), 'utf8'))
    assert.equal(state.install_command, 'node install.mjs')
    assert.match(state.install_hash, /^sha256:[0-9a-f]{64}$/)

    // A new supervisor on the same state file (svc restarted): no second install.
    await h.worker.stop()
    const again = superviseWorker(
      {
        name: h.name,
        directory: h.dir,
        namespace: 'default',
        engineUrl: 'ws://127.0.0.1:1',
        projectRoot: root,
        envBase: 'engine',
        env: {},
        watch: false,
        isRegistered: () => true,
      },
      { log: { debug() {}, info() {}, warn() {}, error() {} } },
    )
    started.push(again)
    await again.start()
    await again.waitUntilRunning(20_000)
    assert.equal(installs(), 1)
    await again.stop()

    // package.json changes while it runs: install, then restart.
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const before = h.readies().length
    writeFileSync(join(h.dir, 'package.json'), '{"name":"installer","version":"1.0.1","dependencies":{}}\n')
    await h.until(() => installs() === 2 && h.readies().length > before && h.worker.state === 'running', 'the second install and a restart')
    assert.equal(installs(), 2)
  })

  it('a source edit restarts the worker: new pid, new behaviour; setup does not run again', async () => {
    const h = supervise({
      'svc.worker.yaml': manifest('editor', 'scripts:\n  setup: node -e "require(\'fs\').appendFileSync(\'setups.txt\', \'x\')"\n  start: node worker.mjs\n').replace(
        /scripts:\n  start: node worker.mjs\n/,
        '',
      ),
      'worker.mjs': script('v1'),
      'src/lib.mjs': 'export const x = 1\n',
    })
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const firstPid = h.worker.pid
    assert.match(h.readies()[0]!, /^ready v1 /)
    writeFileSync(join(h.dir, 'worker.mjs'), script('v2'))
    await h.until(() => h.readies().some((l) => l.startsWith('ready v2')) && h.worker.state === 'running', 'the edited worker to run')
    assert.notEqual(h.worker.pid, firstPid)
    assert.ok(h.states.includes('restarting'))
    assert.equal(h.worker.restarts, 1)
    assert.ok(h.logs.some((l) => l.message === `${h.name}: worker.mjs changed; restarting`), JSON.stringify(h.logs))
    assert.equal(readFileSync(join(h.dir, 'setups.txt'), 'utf8'), 'x')
    // an ignored path (node_modules, *.log) changes nothing; a nested source does
    const count = h.readies().length
    mkdirSync(join(h.dir, 'node_modules'), { recursive: true })
    writeFileSync(join(h.dir, 'node_modules', 'x.js'), '1')
    writeFileSync(join(h.dir, 'debug.log'), '1')
    writeFileSync(join(h.dir, 'src', 'lib.mjs'), 'export const x = 2\n')
    await h.until(() => h.readies().length === count + 1 && h.worker.state === 'running', 'a restart for src/lib.mjs')
    assert.ok(h.logs.some((l) => l.message === `${h.name}: ${join('src', 'lib.mjs')} changed; restarting`), JSON.stringify(h.logs.map((l) => l.message)))
  })

  it('a worker at the project root: other workers, config.yaml and its temporary files, editors\' files, .svc, .git, node_modules cause no restart; its own source exactly one', async () => {
    // The starter template's shape (worker_path: .): the worker directory is the project root.
    const files = {
      'svc.worker.yaml': manifest('root-worker'),
      'worker.mjs': script('r1'),
      'config.yaml': 'workers: []\n',
      'workers/other/index.mjs': 'export {}\n',
      'data/state.db': '',
      'node_modules/x/index.js': '',
      '.git/index': '',
      '.svc/data/.lock': '',
    }
    const h = supervise(files, (dir) => ({ projectRoot: dir, ignoredPaths: () => [join(dir, 'workers', 'other'), join(dir, 'data')] }))
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const before = h.readies().length
    const changed = () => h.logs.filter((l) => / changed; (restarting|starting)$/.test(l.message)).map((l) => l.message)
    const write = (rel: string, text = `${Date.now()}\n`) => writeFileSync(join(h.dir, rel), text)
    write('workers/other/index.mjs')
    write('config.yaml', 'workers: [] # edited\n')
    // An editor's save of config.yaml: backup, swap file, vim's write test, emacs lock and autosave,
    // a temporary file renamed over it (svc's own config writer: .config.yaml.<pid>.tmp).
    for (const rel of ['config.yaml~', '.config.yaml.swp', '.config.yaml.swx', '4913', '.#config.yaml', '#config.yaml#', '.config.yaml.4242.tmp', 'config.yaml___jb_tmp___']) write(rel)
    write('data/state.db')
    write('node_modules/x/index.js')
    write('.git/index')
    write('.svc/data/.lock')
    write('worker.mjs', script('r2'))
    await h.until(() => h.readies().some((l) => l.startsWith('ready r2')) && h.worker.state === 'running', 'the edited worker to run')
    assert.deepEqual(changed(), [`${h.name}: worker.mjs changed; restarting`])
    assert.equal(h.readies().length, before + 1)
    assert.equal(h.worker.restarts, 1)
  })

  describe('reload beside the serving process (WorkerSpec.drain, issue 21)', () => {
    it('the new process starts while the old one runs; the old one drains, then stops; a crash of the new one keeps the old one', async () => {
      const drains: Array<[number | undefined, number | undefined]> = []
      const h = supervise({ 'svc.worker.yaml': manifest('overlap'), 'worker.mjs': script('o1') }, { drain: async (previous, next) => void drains.push([previous.pid, next.pid]) })
      await h.worker.start()
      await h.worker.waitUntilRunning(20_000)
      const first = h.worker.pid!
      let oldAliveAtReady: boolean | undefined
      h.worker.on('output', (line: OutputLine) => {
        if (line.text.startsWith('ready o2')) oldAliveAtReady = alive(first)
      })
      writeFileSync(join(h.dir, 'worker.mjs'), script('o2'))
      await h.until(() => h.readies().some((l) => l.startsWith('ready o2')) && h.worker.state === 'running' && !alive(first), 'o2 running, o1 gone')
      const second = h.worker.pid!
      assert.deepEqual(drains, [[first, second]])
      // The old process still ran when the new one was ready: it was stopped only after.
      assert.equal(oldAliveAtReady, true)
      assert.deepEqual(h.states.slice(-3), ['restarting', 'starting', 'running'])
      writeFileSync(join(h.dir, 'worker.mjs'), "console.log('loading')\nthrow new Error('no config')\n")
      await h.until(() => h.logs.some((l) => l.level === 'error' && l.message.startsWith(`${h.name}: the new process exited with code 1`)), 'the failure report')
      assert.equal(h.worker.state, 'running')
      assert.equal(h.worker.pid, second)
      assert.ok(alive(second))
      assert.match(h.worker.lastError!, /^the new process exited with code 1 before it registered: Error: no config \(worker\.mjs:2\)$/)
    })

    it('a new process that cannot bind the address the old one holds (EADDRINUSE) is started after the old one stopped', async () => {
      const port = await new Promise<number>((resolve) => {
        const server = createServer().listen(0, '127.0.0.1', () => {
          const { port } = server.address() as AddressInfo
          server.close(() => resolve(port))
        })
      })
      const listener = (tag: string) => `import { createServer } from 'node:http'\ncreateServer().listen(${port}, '127.0.0.1', () => console.log('ready ${tag} ' + process.pid))\n`
      const h = supervise({ 'svc.worker.yaml': manifest('listener'), 'worker.mjs': listener('l1') }, { drain: async () => {} })
      await h.worker.start()
      await h.worker.waitUntilRunning(20_000)
      const first = h.worker.pid!
      writeFileSync(join(h.dir, 'worker.mjs'), listener('l2'))
      await h.until(() => h.readies().some((l) => l.startsWith('ready l2')) && h.worker.state === 'running', 'l2 running')
      assert.ok(!alive(first))
      assert.ok(h.logs.some((l) => l.level === 'warn' && l.message.startsWith(`${h.name}: the new process could not listen beside the previous one`)), JSON.stringify(h.logs))
    })
  })

  it('a killed worker is restarted after 1 s and logs the attempt', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('victim'), 'worker.mjs': script('k') })
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const pid = h.worker.pid!
    process.kill(pid, 'SIGKILL')
    await h.until(() => h.worker.state === 'running' && h.worker.pid !== pid, 'the restarted worker')
    assert.ok(h.logs.some((l) => l.level === 'warn' && l.message === `${h.name} was killed by SIGKILL; restarting in 1 s (1/5)`), JSON.stringify(h.logs))
    assert.deepEqual(h.states.slice(-3), ['restarting', 'starting', 'running'])
  })

  it('a syntax error: retried once, then crashed and waiting for a change, quoting the error; a fix starts it', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('broken'), 'worker.mjs': "console.log('loading')\nexport const x = {\n" }, {}, { backoffStartMs: 50 })
    await h.worker.start()
    await h.until(() => h.worker.state === 'crashed', 'crashed')
    // Two attempts, the same way: no third (the supervisor's backoff runs on real timers).
    await quietPeriod(500, 'no third start of a worker that crashed twice the same way')
    assert.equal(h.lines.filter((l) => l.text === 'loading').length, 0, 'a module with a syntax error runs nothing')
    assert.equal(h.logs.filter((l) => l.message.includes('starting: node worker.mjs')).length, 2, JSON.stringify(h.logs))
    assert.equal(h.worker.failure?.code, 'STARTUP_FAILED')
    const line = h.logs.find((l) => l.level === 'error')!.message
    // The summary keeps where the error is (issue 21).
    assert.match(line, new RegExp(`^${h.name} cannot start \\(exited with code 1, twice the same way\\): SyntaxError: .+ \\(worker\\.mjs:3\\); waiting for a change to workers/${h.name}$`))
    await assert.rejects(h.worker.waitUntilRunning(1000), (err: SupervisorError) => err.code === 'STARTUP_FAILED' && /SyntaxError/.test(err.message))

    writeFileSync(join(h.dir, 'worker.mjs'), script('fixed'))
    await h.until(() => h.worker.state === 'running', 'the fixed worker to run')
  })

  it('5 quick crashes (each printing something else) → crashed with doubling delays; a file change starts it again', async () => {
    const h = supervise(
      { 'svc.worker.yaml': manifest('crasher'), 'worker.mjs': "console.error('boom ' + Math.random().toString(36).replace(/[0-9.]/g, '')); process.exit(3)\n" },
      {},
      { backoffStartMs: 50 },
    )
    await h.worker.start()
    await h.until(() => h.worker.state === 'crashed', 'crashed')
    const restarts = h.logs.filter((l) => l.message.includes('restarting in')).map((l) => l.message)
    assert.deepEqual(restarts, [
      `${h.name} exited with code 3; restarting in 50 ms (1/5)`,
      `${h.name} exited with code 3; restarting in 100 ms (2/5)`,
      `${h.name} exited with code 3; restarting in 200 ms (3/5)`,
      `${h.name} exited with code 3; restarting in 400 ms (4/5)`,
    ])
    assert.equal(h.worker.failure?.code, 'CRASHED')
    assert.equal(h.worker.lastError, 'exited with code 3; 5 unrequested exits within 60 s')
    await assert.rejects(h.worker.waitUntilRunning(1000), (err: SupervisorError) => err.code === 'CRASHED')
    assert.ok(h.lines.some((l) => l.stream === 'stderr' && l.text.startsWith('boom')))

    writeFileSync(join(h.dir, 'worker.mjs'), script('fixed'))
    await h.until(() => h.worker.state === 'running', 'the fixed worker to run')
    assert.ok(h.readies().some((l) => l.startsWith('ready fixed')))
  })

  it('exit code 0 → stopped, started again by the next file change', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('quitter'), 'worker.mjs': "console.log('bye')\n" })
    await h.worker.start()
    await h.until(() => h.worker.state === 'stopped', 'stopped')
    assert.ok(h.logs.some((l) => l.message === `${h.name} exited with code 0; it starts again on the next file change`))
    await assert.rejects(h.worker.waitUntilRunning(1000), { code: 'STOPPED' })
    writeFileSync(join(h.dir, 'worker.mjs'), script('back'))
    await h.until(() => h.worker.state === 'running', 'the worker to run again')
    assert.ok(h.readies().some((l) => l.startsWith('ready back')))
  })

  it('stop() ends the whole process group, grandchildren included', async () => {
    const h = supervise(
      {
        'svc.worker.yaml': manifest('parent'),
      'worker.mjs': `import { spawn } from 'node:child_process'
const child = spawn(process.execPath, ['-e', 'process.on("SIGTERM", () => {}); console.log("grandchild armed"); setInterval(() => {}, 1000)'], { stdio: 'inherit' })
console.log('grandchild ' + child.pid)
${script('parent')}`,
      },
      { stopTimeoutMs: 1000 },
    )
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    await h.until(() => h.lines.some((l) => l.text === 'grandchild armed'), 'the grandchild to ignore SIGTERM')
    const grandchild = Number(h.lines.find((l) => /^grandchild \d+$/.test(l.text))!.text.split(' ')[1])
    pids.add(grandchild)
    const leader = h.worker.pid!
    assert.ok(alive(grandchild))
    await h.worker.stop()
    assert.equal(alive(leader), false, 'the worker is gone')
    assert.equal(alive(grandchild), false, 'the grandchild (which ignores SIGTERM) is gone')
    assert.ok(h.logs.some((l) => l.message.includes('did not stop within 1 s; killed it (SIGKILL)')))
  })

  it('writes every output line to .svc/logs/<name>.log', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('logger'), 'worker.mjs': `console.error('to stderr')\n${script('log')}` })
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    await h.worker.stop()
    const text = readFileSync(join(root, '.svc', 'logs', `${h.name}.log`), 'utf8')
    assert.match(text, /^\S+Z svc \$ node worker\.mjs$/m)
    assert.match(text, /^\S+Z stderr to stderr$/m)
    assert.match(text, /^\S+Z stdout ready log \d+$/m)
  })

  it('an install that fails → failed, with exit code and output in the log; a fix retries', async () => {
    const h = supervise({
      'svc.worker.yaml': 'name: bad-install\nscripts:\n  install: node -e "console.log(\'npm ERR! nope\'); process.exit(7)"\n  start: node worker.mjs\n',
      'package.json': '{}',
      'worker.mjs': script('after-fix'),
    })
    await h.worker.start()
    assert.equal(h.worker.state, 'failed')
    assert.equal(h.worker.failure?.code, 'INSTALL_FAILED')
    assert.equal(h.worker.lastError, `install 'node -e "console.log('npm ERR! nope'); process.exit(7)"' exited with code 7`)
    await assert.rejects(h.worker.waitUntilRunning(1000), { code: 'INSTALL_FAILED' })
    const logFile = join(root, '.svc', 'logs', `${h.name}.log`)
    await h.until(() => existsSync(logFile) && /install exited with code 7/.test(readFileSync(logFile, 'utf8')), 'the log file')
    assert.match(readFileSync(logFile, 'utf8'), /stdout npm ERR! nope/)
    writeFileSync(join(h.dir, 'svc.worker.yaml'), 'name: bad-install\nscripts:\n  install: node -e "0"\n  start: node worker.mjs\n')
    await h.until(() => h.worker.state === 'running', 'the worker to run after the fix')
  })

  it('an invalid manifest → failed with file:line:col; fixing it starts the worker', async () => {
    const h = supervise({ 'svc.worker.yaml': 'name: m\nscripts:\n  start: node worker.mjs\n  strat: x\n', 'worker.mjs': script('valid') })
    await h.worker.start()
    assert.equal(h.worker.state, 'failed')
    assert.equal(h.worker.failure?.code, 'INVALID_MANIFEST')
    assert.equal(h.worker.lastError, `${join('workers', h.name, 'svc.worker.yaml')}:4:3: unknown field 'scripts.strat' (did you mean 'start'?)`)
    writeFileSync(join(h.dir, 'svc.worker.yaml'), 'name: m\nscripts:\n  start: node worker.mjs\n')
    await h.until(() => h.worker.state === 'running', 'the worker to run after the fix')
  })

  it('isolation: microvm → failed with the usable-KVM probe\'s message where the host cannot run microVMs', async () => {
    const kvm = checkKvm()
    if (kvm.ok) return // this host boots microVMs: test/microvm.test.ts covers that
    const h = supervise({ 'svc.worker.yaml': manifest('vm', 'isolation: microvm\n'), 'worker.mjs': script('vm') })
    await h.worker.start()
    assert.equal(h.worker.state, 'failed')
    assert.equal(h.worker.pid, undefined)
    assert.equal(h.worker.failure?.code, kvm.code)
    assert.equal(h.worker.lastError, kvm.message)
    // the entry's isolation wins over the manifest's
    const p = supervise({ 'svc.worker.yaml': manifest('vm2', 'isolation: microvm\n'), 'worker.mjs': script('proc') }, { isolation: 'process' })
    await p.worker.start()
    await p.worker.waitUntilRunning(20_000)
  })

  it('waitUntilRunning rejects when the worker exits before it registers', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('early'), 'worker.mjs': 'setTimeout(() => process.exit(2), 300)\n' })
    await h.worker.start()
    await assert.rejects(h.worker.waitUntilRunning(20_000), (err: SupervisorError) => {
      assert.equal(err.code, 'CHILD_EXITED_BEFORE_REGISTRATION')
      assert.equal(err.message, `${h.name} exited with code 2 before it registered with the engine`)
      return true
    })
  })

  it('restart() gives a new process; a worker that never registers times out with STARTUP_TIMEOUT', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('restarter'), 'worker.mjs': script('r') }, { watch: false })
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const pid = h.worker.pid
    await h.worker.restart()
    await h.worker.waitUntilRunning(20_000)
    assert.notEqual(h.worker.pid, pid)
    assert.equal(h.worker.restarts, 1)

    const silent = supervise({ 'svc.worker.yaml': manifest('silent'), 'worker.mjs': 'setInterval(() => {}, 1000)\n' })
    await silent.worker.start()
    await assert.rejects(silent.worker.waitUntilRunning(300), (err: SupervisorError) => {
      assert.equal(err.code, 'STARTUP_TIMEOUT')
      assert.equal(err.message, `${silent.name} did not register within 300 ms (state: starting)`)
      return true
    })
  })

  it('compose extras: reserved env fails, pre_run gates each start, post_run runs after stop, startCommand replaces start', async () => {
    const reserved = supervise({ 'worker.mjs': script('r') }, { envBase: 'compose', env: { SVC_URL: 'x' }, startCommand: 'node worker.mjs' })
    await reserved.worker.start()
    assert.equal(reserved.worker.failure?.code, 'RESERVED_ENV_OVERRIDE')

    const failing = supervise({ 'worker.mjs': script('f') }, { envBase: 'compose', startCommand: 'node worker.mjs', preRun: { command: 'exit 4', timeoutMs: 10_000 } })
    await failing.worker.start()
    assert.equal(failing.worker.failure?.code, 'PRE_RUN_FAILED')
    assert.equal(failing.worker.lastError, "pre_run 'exit 4' exited with code 4")

    const slow = supervise({ 'worker.mjs': script('s') }, { envBase: 'compose', startCommand: 'node worker.mjs', preRun: { command: 'sleep 30', timeoutMs: 200 } })
    await slow.worker.start()
    assert.equal(slow.worker.lastError, "pre_run 'sleep 30' did not finish within 200 ms")

    const ok = supervise(
      { 'worker.mjs': script('c') },
      {
        envBase: 'compose',
        startCommand: 'node worker.mjs',
        preRun: { command: 'echo pre >> hooks.txt', timeoutMs: 10_000 },
        postRun: 'echo post >> hooks.txt',
      },
    )
    await ok.worker.start()
    await ok.worker.waitUntilRunning(20_000)
    await ok.worker.stop()
    assert.equal(readFileSync(join(ok.dir, 'hooks.txt'), 'utf8'), 'pre\npost\n')
  })

  it('a simple start command replaces the shell (exec): the pid svc supervises is the worker itself', async () => {
    const h = supervise({ 'svc.worker.yaml': manifest('execer'), 'worker.mjs': script('exec') })
    await h.worker.start()
    await h.worker.waitUntilRunning(20_000)
    const printed = Number(h.readies()[0]!.split(' ').pop())
    assert.equal(h.worker.pid, printed)
    // a command the shell must interpret (here `&&`) still runs under it
    const chained = supervise({ 'svc.worker.yaml': manifest('chained').replace('node worker.mjs', 'true && node worker.mjs'), 'worker.mjs': script('chain') })
    await chained.worker.start()
    await chained.worker.waitUntilRunning(20_000)
    assert.notEqual(chained.worker.pid, Number(chained.readies()[0]!.split(' ').pop()))
  })

  describe('compiled workers (scripts.build, issue 18)', () => {
    /**
     * A stand-in compiler: copies src/main.txt into bin.txt, or, when it holds `broken`, prints
     * rustc-style diagnostics and a cargo summary and exits 101 without touching bin.txt.
     */
    const build = `import { appendFileSync, readFileSync, writeFileSync } from 'node:fs'
appendFileSync('builds.txt', 'x')
const source = readFileSync('src/main.txt', 'utf8').trim()
console.error('   Compiling worker v0.1.0')
if (source.startsWith('broken')) {
  console.error('\u001b[1m\u001b[31merror[E0425]\u001b[0m: cannot find value \`y\` in this scope')
  console.error('  --> src/main.rs:12:5')
  console.error('   |')
  console.error('error[E0308]: mismatched types')
  console.error(' --> src/main.rs:20:9')
  console.error('error: could not compile \`worker\` (bin "worker") due to 2 previous errors')
  process.exit(101)
}
writeFileSync('bin.txt', source)
`
    const files = () => ({
      'svc.worker.yaml': 'name: compiled\nscripts:\n  build: node build.mjs\n  start: node worker.mjs\n',
      'build.mjs': build,
      'src/main.txt': 'v1\n',
      'worker.mjs': "import { readFileSync } from 'node:fs'\nconsole.log('ready ' + readFileSync('bin.txt', 'utf8') + ' ' + process.pid)\nsetInterval(() => {}, 1000)\n",
    })

    it('builds before the first start; a source change rebuilds beside the running process, then restarts it', async () => {
      const h = supervise(files())
      await h.worker.start()
      await h.worker.waitUntilRunning(20_000)
      assert.match(h.readies()[0]!, /^ready v1 /)
      assert.deepEqual(h.states.slice(0, 3), ['installing', 'starting', 'running'])
      writeFileSync(join(h.dir, 'src', 'main.txt'), 'v2\n')
      await h.until(() => h.readies().some((l) => l.startsWith('ready v2')) && h.worker.state === 'running', 'the rebuilt worker to run')
      // the build ran while v1 was still running: no `installing` between, only the restart
      assert.deepEqual(h.states.slice(3), ['restarting', 'starting', 'running'])
      assert.equal(readFileSync(join(h.dir, 'builds.txt'), 'utf8'), 'xx')
      assert.ok(h.lines.some((l) => l.phase === 'build' && l.text.includes('Compiling')))
    })

    it('a failed build keeps the previous process serving and reports the first compiler error with its place', async () => {
      const h = supervise(files())
      await h.worker.start()
      await h.worker.waitUntilRunning(20_000)
      const pid = h.worker.pid!
      writeFileSync(join(h.dir, 'src', 'main.txt'), 'broken\n')
      await h.until(() => h.logs.some((l) => l.level === 'error' && l.message.includes('build failed')), 'the build failure')
      const report = h.logs.find((l) => l.level === 'error' && l.message.includes('build failed'))!.message
      assert.equal(
        report,
        `${h.name}: build failed (node build.mjs exited with code 101); the previous build keeps running:\nerror[E0425]: cannot find value \`y\` in this scope\n  --> src/main.rs:12:5`,
      )
      assert.equal(h.worker.state, 'running')
      assert.equal(h.worker.pid, pid)
      assert.ok(alive(pid))
      assert.equal(h.readies().length, 1)
      assert.match(h.worker.lastError ?? '', /^build 'node build\.mjs' exited with code 101: error\[E0425\]/)
      // the fix is built and replaces it
      writeFileSync(join(h.dir, 'src', 'main.txt'), 'v3\n')
      await h.until(() => h.readies().some((l) => l.startsWith('ready v3')) && h.worker.state === 'running', 'the fixed build to run')
      assert.notEqual(h.worker.pid, pid)
    })

    it('a first build that fails → failed with BUILD_FAILED naming the first error; a fix starts it', async () => {
      const h = supervise({ ...files(), 'src/main.txt': 'broken\n' })
      await h.worker.start()
      assert.equal(h.worker.state, 'failed')
      assert.equal(h.worker.failure?.code, 'BUILD_FAILED')
      assert.equal(h.worker.failure?.message, "build 'node build.mjs' exited with code 101: error[E0425]: cannot find value `y` in this scope (src/main.rs:12:5)")
      writeFileSync(join(h.dir, 'src', 'main.txt'), 'v4\n')
      await h.until(() => h.readies().some((l) => l.startsWith('ready v4')) && h.worker.state === 'running', 'the fixed worker to run')
    })
  })
})

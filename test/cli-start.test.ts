/**
 * End to end: `svc` / `svc start` as a user runs it (cli.md §3), the built CLI (bin/run.js) in a
 * child process inside a temporary project directory. Needs `npm run build` (npm test does it).
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { cliEnv, runSvc, type Finished } from './support/cli.ts'

const SVC_BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const PORT0_CONFIG =
  'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n'

const scratch = mkdtempSync(join(tmpdir(), 'svc-cli-start-'))
const children = new Set<ChildProcess>()
after(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

let projects = 0
/** A fresh directory, with config.yaml when `yaml` is given. */
function project(yaml?: string): string {
  const dir = join(scratch, `p${projects++}`)
  mkdirSync(dir)
  if (yaml !== undefined) writeFileSync(join(dir, 'config.yaml'), yaml)
  return dir
}

/** The environment of a user who has set nothing svc-specific. */
const cleanEnv = () => cliEnv()

/** Runs the CLI to completion. */
function runCli(args: string[], cwd: string): Promise<Finished> {
  return runSvc(args, { cwd, onSpawn: (child) => children.add(child) })
}

interface Running {
  child: ChildProcess
  /** The first line matching, or the `engine_ready` event in --json mode. */
  ready: Record<string, unknown>
  lines: string[]
  stderr: () => string
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>
}

/**
 * Starts the CLI and waits until it is ready: the `engine_ready` event with --json, else the
 * `ready in` banner line. Rejects with the output if it exits first.
 */
function startCli(args: string[], cwd: string): Promise<Running> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  const lines: string[] = []
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const json = args.includes('--json')
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      lines.push(line)
      if (json) {
        const event = JSON.parse(line) as Record<string, unknown>
        if (event.event === 'engine_ready') resolve({ child, ready: event, lines, stderr: () => stderr, exited })
      } else if (/ ready in \d+ ms$/.test(line)) {
        resolve({ child, ready: { line }, lines, stderr: () => stderr, exited })
      }
    })
    void exited.then((code) => reject(new Error(`svc exited with ${code} before it was ready\n${lines.join('\n')}\n${stderr}`)))
  })
}

describe('svc start (cli.md §3)', () => {
  it('with no config.yaml anywhere, starts on built-in defaults, says so, and writes no file', async () => {
    const dir = project()
    const child = spawn(process.execPath, [SVC_BIN, '--port', '0', '--json'], { cwd: dir, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    children.add(child)
    const events: Array<Record<string, unknown>> = []
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    const outcome = await new Promise<'ready' | 'exited'>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => {
        const event = JSON.parse(line) as Record<string, unknown>
        events.push(event)
        if (event.event === 'engine_ready') resolve('ready')
      })
      void exited.then(() => resolve('exited'))
    })
    const note = events.find((e) => e.event === 'log' && e.source === 'svc')
    assert.equal(note?.message, `No config.yaml in ${dir} or its parents; starting with built-in defaults`)
    if (outcome === 'ready') {
      const ready = events.find((e) => e.event === 'engine_ready')!
      assert.match(String(ready.engine_url), /^ws:\/\/127\.0\.0\.1:\d+$/)
      assert.equal(ready.http_url, 'http://127.0.0.1:3111', 'svc-http runs on its default port')
      assert.equal(ready.config_file, null)
      assert.equal(ready.data_dir, join(dir, '.svc', 'data'))
      assert.ok(existsSync(join(dir, '.svc', 'data', '.lock')))
      child.kill('SIGTERM')
      assert.equal(await exited, 0)
    } else {
      // Another program (a contributor's own svc, say) holds a default port of svc-http or
      // svc-stream on this machine: the defaults were still used (issue 16: either way passes).
      assert.equal(await exited, 1)
      assert.match(
        String((events.at(-1) as { error?: { message?: string } }).error?.message),
        /^Port (3111|3112) (is already in use \((svc-http|svc-stream)\)|\((svc-http|svc-stream)\) is already in use by the svc engine of project )/,
      )
      assert.deepEqual(events.at(-1), {
        error: {
          code: 'PORT_IN_USE',
          // Held by another program here, or by an svc engine of another project (issue 11).
          message: (events.at(-1) as { error: { message: string } }).error.message,
        },
      })
    }
    assert.equal(existsSync(join(dir, 'config.yaml')), false, 'no config.yaml is written')
  })

  it('prints the ready banner with where each listener is, and stops on SIGINT with exit 0', async () => {
    const dir = project(PORT0_CONFIG)
    const running = await startCli([], dir)
    assert.match(String(running.ready.line), /^svc 0\.1\.0 ready in \d+ ms$/)
    await new Promise((resolve) => setImmediate(resolve))
    const banner = running.lines.slice(running.lines.indexOf(String(running.ready.line)))
    // The banner is written in one piece, so its lines are all here once the first is.
    assert.match(banner[1] ?? '', /^ {2}engine {4}ws:\/\/127\.0\.0\.1:\d+$/)
    assert.match(banner[2] ?? '', /^ {2}http {6}http:\/\/127\.0\.0\.1:\d+$/)
    running.child.kill('SIGINT')
    assert.equal(await running.exited, 0)
    assert.match(running.stderr(), /Received SIGINT; stopping svc/)
  })

  it('--json prints engine_ready and, on SIGTERM, shutdown; exits 0 and releases the data directory', async () => {
    const dir = project(PORT0_CONFIG)
    const running = await startCli(['--json'], dir)
    assert.equal(running.ready.config_file, join(dir, 'config.yaml'))
    assert.equal(running.ready.data_dir, join(dir, '.svc', 'data'))
    assert.match(String(running.ready.engine_url), /^ws:\/\/127\.0\.0\.1:\d+$/)
    assert.match(String(running.ready.http_url), /^http:\/\/127\.0\.0\.1:\d+$/)
    for (const line of running.lines) assert.doesNotThrow(() => JSON.parse(line), `every stdout line is JSON: ${line}`)
    const lock = join(dir, '.svc', 'data', '.lock')
    assert.equal(readFileSync(lock, 'utf8').trim(), String(running.child.pid))
    running.child.kill('SIGTERM')
    assert.equal(await running.exited, 0)
    assert.deepEqual(JSON.parse(running.lines.at(-1)!), { event: 'shutdown', signal: 'SIGTERM' })
    assert.equal(existsSync(lock), false)
  })

  it('finds config.yaml in a parent directory and resolves data_dir against it', async () => {
    const dir = project(`data_dir: ./state\n${PORT0_CONFIG}`)
    const sub = join(dir, 'workers', 'math')
    mkdirSync(sub, { recursive: true })
    const running = await startCli(['--json'], sub)
    assert.equal(running.ready.config_file, join(dir, 'config.yaml'))
    assert.equal(running.ready.data_dir, join(dir, 'state'))
    running.child.kill('SIGTERM')
    assert.equal(await running.exited, 0)
  })

  it('-c names the file and --data-dir overrides data_dir relative to the current directory', async () => {
    const dir = project()
    mkdirSync(join(dir, 'deploy'))
    writeFileSync(join(dir, 'deploy', 'svc.yaml'), PORT0_CONFIG)
    const running = await startCli(['start', '-c', 'deploy/svc.yaml', '--data-dir', 'run-data', '--json'], dir)
    assert.equal(running.ready.config_file, join(dir, 'deploy', 'svc.yaml'))
    assert.equal(running.ready.data_dir, join(dir, 'run-data'))
    running.child.kill('SIGTERM')
    assert.equal(await running.exited, 0)
  })

  it('lists local workers in the banner with their states; --no-workers launches none', async () => {
    const dir = project(`${PORT0_CONFIG}  - name: math-worker\n    worker_path: ./workers/math\n  - name: off-worker\n    worker_path: ./workers/off\n    enabled: false\n`)
    const running = await startCli(['--json'], dir)
    // workers/math does not exist: the worker fails, the engine keeps running.
    assert.deepEqual(running.ready.workers, [
      { name: 'math-worker', state: 'failed' },
      { name: 'off-worker', state: 'disabled' },
    ])
    const events = running.lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    assert.deepEqual(
      events.find((e) => e.event === 'worker_state'),
      { event: 'worker_state', worker: 'math-worker', state: 'failed', error: `Worker directory ${join('workers', 'math')} does not exist`, error_code: 'UNKNOWN_WORKER' },
    )
    running.child.kill('SIGTERM')
    assert.equal(await running.exited, 0)

    const skipped = await startCli(['--json', '--no-workers'], dir)
    assert.deepEqual(skipped.ready.workers, [
      { name: 'math-worker', state: 'skipped' },
      { name: 'off-worker', state: 'disabled' },
    ])
    assert.ok(!skipped.lines.some((l) => l.includes('worker_state')))
    skipped.child.kill('SIGTERM')
    assert.equal(await skipped.exited, 0)
  })

  it('an invalid config.yaml exits 2 pointing at file:line:col', async () => {
    const dir = project('workers:\n  - name: databse\n')
    const result = await runCli([], dir)
    assert.equal(result.code, 2)
    assert.equal(result.stderr, "Error: config.yaml:2:11: unknown built-in worker 'databse' (did you mean 'database'?)\n")
    assert.equal(result.stdout, '')
    assert.equal(existsSync(join(dir, '.svc')), false, 'nothing is created for an invalid file')
  })

  it('an invalid config.yaml with --json prints {"error":{code,message}} on stdout', async () => {
    const dir = project('workers:\n  - name: svc-http\n    config:\n      port: 3111\n  - name: svc-worker-manager\n    config: { prot: 1 }\n')
    const result = await runCli(['--json'], dir)
    assert.equal(result.code, 2)
    assert.deepEqual(JSON.parse(result.stdout), {
      error: { code: 'INVALID_CONFIG', message: "config.yaml:6:15: unknown key 'prot' in svc-worker-manager config (did you mean 'port'?)" },
    })
  })

  it('declaring svc-observability exits 2 with the message of builtins.md §1', async () => {
    const dir = project('workers:\n  - name: svc-observability\n')
    const result = await runCli([], dir)
    assert.equal(result.code, 2)
    assert.equal(
      result.stderr,
      'Error: config.yaml:2:11: svc-observability is injected by the engine and must not be declared in config.yaml; change its settings in config/svc-observability.yaml\n',
    )
  })

  it('an unset environment variable in a placeholder exits 2 naming it', async () => {
    const dir = project('data_dir: ${SVC_TEST_SURELY_UNSET_DIR}\n')
    const result = await runCli([], dir)
    assert.equal(result.code, 2)
    assert.equal(result.stderr, 'Error: config.yaml:1:11: environment variable SVC_TEST_SURELY_UNSET_DIR is not set\n')
  })

  it('an explicit --config that does not exist exits 2', async () => {
    const dir = project(PORT0_CONFIG)
    const result = await runCli(['--config', 'missing.yaml'], dir)
    assert.equal(result.code, 2)
    assert.equal(result.stderr, 'Error: Config file missing.yaml not found\n')
  })

  it('an unknown flag or a bad --log-level exits 2', async () => {
    const dir = project(PORT0_CONFIG)
    const unknown = await runCli(['--prot', '1'], dir)
    assert.equal(unknown.code, 2)
    assert.match(unknown.stderr, /^Error: Nonexistent flag: --prot/)
    const level = await runCli(['--log-level', 'loud'], dir)
    assert.equal(level.code, 2)
    assert.match(level.stderr, /^Error: Expected --log-level=loud to be one of: trace, debug, info, warn, error/)
  })

  it('a second engine on the same data directory exits 1 naming the first one', async () => {
    const dir = project(PORT0_CONFIG)
    const first = await startCli(['--json'], dir)
    const second = await runCli([], dir)
    assert.equal(second.code, 1)
    assert.equal(
      second.stderr,
      `Error: data directory ${join(dir, '.svc', 'data')} is in use by another svc engine (pid ${first.child.pid})\n` +
        'Hint: stop the other engine, or pass --data-dir to use another directory\n',
    )
    first.child.kill('SIGTERM')
    assert.equal(await first.exited, 0)
  })

  it("an engine port held by another project's engine exits 1 naming that project (cli.md §3 step 4, issue 11)", async () => {
    const firstDir = project(PORT0_CONFIG)
    const first = await startCli(['--json'], firstDir)
    const port = new URL(String(first.ready.engine_url)).port
    const second = await runCli(['--port', port], project(PORT0_CONFIG))
    assert.equal(second.code, 1)
    assert.equal(
      second.stderr,
      `Error: Port ${port} (svc-worker-manager) is already in use by the svc engine of project ${basename(firstDir)} (${firstDir}, pid ${first.child.pid})\n` +
        'Hint: stop that engine, or give this project its own ports: set port in the svc-worker-manager entry of config.yaml or pass --port (svc project init --ports auto picks free ports)\n',
    )
    first.child.kill('SIGTERM')
    assert.equal(await first.exited, 0)
  })

  it('an HTTP port already in use exits 1 naming svc-http and its settings file', async () => {
    const first = await startCli(['--json'], project(PORT0_CONFIG))
    const port = new URL(String(first.ready.http_url)).port
    const dir = project(`workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: http\n    config:\n      port: ${port}\n  - name: svc-stream\n    config:\n      port: 0\n`)
    const second = await runCli([], dir)
    assert.equal(second.code, 1)
    // The port comes from the config.yaml entry (no settings file yet): the hint says so (issue 11).
    assert.match(second.stderr, new RegExp(`^Error: Port ${port} \\(svc-http\\) is already in use by the svc engine of project p\\d+ `, 'm'))
    assert.match(second.stderr, /\nHint: stop that engine, or give this project its own ports: change port in the svc-http entry of config\.yaml\n$/)
    assert.equal(existsSync(join(dir, '.svc', 'data', '.lock')), false, 'the lock is released on a failed start')
    first.child.kill('SIGTERM')
    assert.equal(await first.exited, 0)
  })

  it('svc --version prints svc/<version> <platform>-<arch> node-<version>', async () => {
    const result = await runCli(['--version'], project())
    assert.equal(result.code, 0)
    assert.equal(result.stdout, `svc/0.1.0 ${process.platform}-${process.arch} node-${process.version}\n`)
  })
})

/**
 * The `svc` terminal as a developer reads it (issue 11): coloured, levelled, per-source lines on a
 * TTY (tmux) and plain text through a pipe or with NO_COLOR; a line for each invocation and HTTP
 * request at `--log-level debug`; a ready time that is honest about when the banner appears.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { cliEnv, runSvc } from './support/cli.ts'
import { SVC_BIN, tempProject } from './support/processes.ts'
import { quietPeriod, waitForMatch } from './support/wait.ts'

const SOCKET = `svc-devterm-${process.pid}`
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' })
const dirs: string[] = []
const children: ChildProcess[] = []

after(() => {
  try {
    execFileSync('tmux', ['-L', SOCKET, 'kill-server'], { stdio: 'ignore' })
  } catch {
    /* no server left */
  }
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A project whose one worker `greeter` registers `greet::hello` and prints a line on start. */
async function greeterProject(): Promise<string> {
  const dir = await tempProject('  - name: greeter\n    worker_path: ./workers/greeter\n')
  dirs.push(dir)
  mkdirSync(join(dir, 'workers', 'greeter'), { recursive: true })
  writeFileSync(join(dir, 'workers', 'greeter', 'svc.worker.yaml'), 'name: greeter\nscripts:\n  start: node index.mjs\n')
  writeFileSync(
    join(dir, 'workers', 'greeter', 'index.mjs'),
    `import { registerWorker } from ${JSON.stringify(import.meta.resolve('svc-sdk'))}\n` +
      `const svc = registerWorker()\nsvc.registerFunction('greet::hello', () => ({ hi: true }))\nconsole.log('greeter up')\n`,
  )
  return dir
}

/** `svc <args>` with stdout and stderr piped; resolves once the banner is out. */
async function startPiped(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  let text = ''
  child.stdout.on('data', (d) => (text += d))
  child.stderr.on('data', (d) => (text += d))
  await waitForMatch(() => text, /^ {2}http {6}(\S+)$/m, 'the banner', { stopIf: () => child.exitCode !== null && `svc exited with code ${child.exitCode}` })
  return {
    child,
    output: () => text,
    engineUrl: /^ {2}engine {4}(\S+)$/m.exec(text)![1]!,
    httpUrl: /^ {2}http {6}(\S+)$/m.exec(text)![1]!,
    async waitFor(pattern: RegExp, what: string) {
      await waitForMatch(() => text, pattern, what, { timeoutMs: 20_000 })
    },
    async stop() {
      child.kill('SIGTERM')
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve))
    },
  }
}

describe('svc terminal output (issue 11)', () => {
  it('--log-level debug: a line per invocation and per HTTP request; no colour through a pipe', { timeout: 60_000 }, async () => {
    const dir = await greeterProject()
    const svc = await startPiped(dir, ['--log-level', 'debug'])
    await svc.waitFor(/greeter INFO greeter up/, 'the worker output line')
    const triggered = await runSvc(['trigger', 'greet::hello', '--engine', svc.engineUrl], { cwd: dir })
    assert.equal(triggered.code, 0, triggered.stderr)
    await svc.waitFor(/ engine DEBUG invoke greet::hello ok [\d.]+ m?s from svc-cli/, 'the invocation line')
    await fetch(`${svc.httpUrl}/nowhere`)
    await svc.waitFor(/ engine DEBUG http GET \/nowhere 404 [\d.]+ ms/, 'the request line')
    assert.doesNotMatch(svc.output(), /\u001b\[/, 'no escape sequences through a pipe')
    assert.match(svc.output(), /^svc \S+ ready in \d+ ms$/m)
    await svc.stop()
  })

  it('--verbose is --log-level debug; at info there are no invocation lines', { timeout: 60_000 }, async () => {
    const dir = await greeterProject()
    const quiet = await startPiped(dir, [])
    await quiet.waitFor(/greeter running/, 'the worker to run')
    await runSvc(['trigger', 'greet::hello', '--engine', quiet.engineUrl], { cwd: dir })
    await quietPeriod(300, 'no invocation line printed at log level info')
    assert.doesNotMatch(quiet.output(), /invoke greet::hello/)
    await quiet.stop()
    const verbose = await startPiped(dir, ['--verbose'])
    await verbose.waitFor(/greeter running/, 'the worker to run')
    await runSvc(['trigger', 'greet::hello', '--engine', verbose.engineUrl], { cwd: dir })
    await verbose.waitFor(/engine DEBUG invoke greet::hello ok/, 'the invocation line')
    await verbose.stop()
  })

  it('colour on a TTY (time, per-source name, level); none with NO_COLOR or --no-color', { timeout: 90_000 }, async () => {
    const dir = await greeterProject()
    const run = async (name: string, prefix: string, flags = '') => {
      tmux('new-session', '-d', '-s', name, '-x', '200', '-y', '50', '-c', dir, `env -u CI ${prefix} ${process.execPath} ${SVC_BIN} ${flags}; sleep 60`)
      let screen = ''
      await waitForMatch(() => (screen = tmux('capture-pane', '-e', '-p', '-t', name)), /greeter up/, `'greeter up' on the ${name} screen`)
      tmux('send-keys', '-t', name, 'C-c')
      // The next run uses the same data directory: wait until this svc has exited (the pane's
      // shell has moved on to `sleep`), as a user's shell would before the next command.
      await waitForMatch(() => tmux('display-message', '-p', '-t', name, '#{pane_current_command}'), /^sleep$/m, `svc on the ${name} screen to exit after Ctrl-C`)
      return screen
    }
    const coloured = await run('colour', '')
    assert.match(coloured, /greeter up/)
    // The level INFO in green, the source in a colour of its own.
    assert.match(coloured, /\u001b\[32mINFO/, coloured)
    assert.match(coloured, /\u001b\[\d+mgreeter\u001b\[(0|39)m/, coloured)
    const plain = await run('nocolour', 'NO_COLOR=1')
    assert.match(plain, /\d\d:\d\d:\d\d\.\d{3} greeter INFO greeter up/)
    assert.doesNotMatch(plain.replace(/\u001b\[(0|39|49)m/g, ''), /\u001b\[\d/, plain)
    const flag = await run('noflag', '', '--no-color')
    assert.match(flag, /greeter INFO greeter up/)
    assert.doesNotMatch(flag.replace(/\u001b\[(0|39|49)m/g, ''), /\u001b\[\d/, flag)
  })
})

describe('svc logs and svc worker restart (issue 11)', () => {
  it('svc worker restart gives the worker a new process; svc logs -f (store and files) shows its new output line', { timeout: 90_000 }, async () => {
    const dir = await greeterProject()
    const svc = await startPiped(dir, [])
    await svc.waitFor(/greeter running/, 'the worker to run')
    const env = cliEnv({ SVC_URL: svc.engineUrl, NO_COLOR: '1' })

    const past = await runSvc(['logs', 'greeter'], { cwd: dir, env })
    assert.equal(past.code, 0, past.stderr)
    assert.match(past.stdout, /^\d\d:\d\d:\d\d\.\d{3} greeter INFO greeter up$/m)

    const followers = [['logs', 'greeter', '-f', '-n', '0'], ['logs', '-f', '-n', '0', '--files']].map((args) => {
      const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
      children.push(child)
      let text = ''
      child.stdout.on('data', (d) => (text += d))
      child.stderr.on('data', (d) => (text += d))
      return { child, text: () => text }
    })
    await quietPeriod(1500, 'svc logs -f attaches and prints no line from before it started (it prints nothing to wait for)')
    for (const f of followers) assert.doesNotMatch(f.text(), /greeter up/)

    const restarted = await runSvc(['worker', 'restart', 'greeter'], { cwd: dir, env })
    assert.equal(restarted.code, 0, restarted.stdout + restarted.stderr)
    assert.match(restarted.stdout, /^Restarted greeter \(pid \d+\)$/m)
    for (const f of followers) {
      await waitForMatch(f.text, /greeter INFO greeter up/, `the new line in svc logs -f (svc printed:\n${svc.output()})`, { timeoutMs: 10_000 })
      f.child.kill('SIGINT')
      await new Promise((resolve) => f.child.once('exit', resolve))
    }
    await svc.stop()
    const notRunning = await runSvc(['worker', 'restart', 'greeter'], { cwd: dir, env })
    assert.equal(notRunning.code, 1)
    assert.match(notRunning.stderr, /greeter is not running/)
  })
})

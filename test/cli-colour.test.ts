/**
 * `--no-color` and `NO_COLOR` on every command (cli.md §1 Colour): each command of the built CLI —
 * its help, its normal output and its errors — runs as on a colour terminal (`FORCE_COLOR=1`, what
 * a TTY-like setting turns on) and prints no ANSI escape. The command list is oclif's own, so a new
 * command is covered (with no arguments unless `ARGS` names some). Needs `npm run build`.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { Config } from '@oclif/core'
import { cliEnv, runSvc } from './support/cli.ts'
import { ROOT, SVC_BIN } from './support/processes.ts'

/** ESC (7-bit CSI and every other escape) or the 8-bit CSI. */
const ANSI = /\u001b|\u009b/

const dirs: string[] = []
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** A port nothing listens on: bound, read, released. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

let project = ''
let dead = ''

before(async () => {
  dead = `ws://127.0.0.1:${await closedPort()}`
  project = mkdtempSync(join(tmpdir(), 'svc-colour-'))
  dirs.push(project)
  // Every port 0, and no engine running: commands that reach an engine fail (in colour, if at all).
  writeFileSync(
    join(project, 'config.yaml'),
    'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n',
  )
  // A worker's log file, for svc logs --files (a stderr line is a coloured WARN).
  mkdirSync(join(project, '.svc', 'logs'), { recursive: true })
  writeFileSync(join(project, '.svc', 'logs', 'greeter.log'), '2026-01-01T10:00:00.000Z stdout hello\n2026-01-01T10:00:01.000Z stderr oops\n')
})

/** What a colour terminal would set; `extra` adds to it. */
const colourEnv = (extra: NodeJS.ProcessEnv = {}) => cliEnv({ FORCE_COLOR: '1', SVC_URL: dead, ...extra })

/** Arguments that make a command do its work (or fail at it) and exit; others run with none. */
const ARGS: Record<string, () => string[]> = {
  compose: () => ['--engine', dead],
  'compose:down': () => ['--engine', dead],
  'compose:remove': () => ['x', '--engine', dead],
  'compose:restart': () => ['x', '--engine', dead],
  'compose:status': () => ['--engine', dead],
  'compose:up': () => ['--engine', dead],
  functions: () => ['--engine', dead],
  logs: () => ['--files'],
  'project:init': () => ['demo', '--dir', join(mkdtemp(), 'demo'), '--template', 'bare', '--no-install', '--yes', '--ports', 'auto'],
  trigger: () => ['math::add', 'a=1', '--engine', dead],
  'worker:add': () => ['./missing'],
  'worker:remove': () => ['missing', '--yes'],
  'worker:restart': () => ['missing'],
}
/** Commands that run until stopped: each gets its own test below. */
const LONG_RUNNING = new Set(['start', 'console'])

function mkdtemp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-colour-init-'))
  dirs.push(dir)
  return dir
}

/** Runs `svc <args>` in the project until it prints `ready`, then SIGTERM; all it printed. */
async function runUntil(args: string[], ready: RegExp, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [SVC_BIN, ...args], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stderr!.on('data', (d) => (output += d))
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  try {
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (line) => {
        output += `${line}\n`
        if (ready.test(line)) resolve()
      })
      child.once('exit', (code) => reject(new Error(`svc ${args.join(' ')} exited with ${code} before ${ready}:\n${output}`)))
    })
  } finally {
    child.kill('SIGTERM')
  }
  return { code: await exited, output }
}

/** Every command a user can type (oclif's list: svc's own and its plugins'), aliases aside. */
const commands = (await Config.load(ROOT)).commands.filter((c) => !c.hidden).map((c) => c.id)

describe('--no-color and NO_COLOR on every command (cli.md §1)', () => {
  it('finds the commands', () => {
    assert.ok(commands.includes('functions') && commands.includes('help') && commands.includes('start'), commands.join(' '))
  })

  it('a colour terminal without them gets colour (the checks below can see it)', async () => {
    const help = await runSvc(['functions', '--help'], { cwd: project, env: colourEnv() })
    assert.match(help.stdout, ANSI)
    const logs = await runSvc(['logs', '--files'], { cwd: project, env: colourEnv() })
    assert.match(logs.stdout, ANSI)
  })

  for (const id of commands.filter((c) => !LONG_RUNNING.has(c))) {
    const words = id.split(':')
    it(`svc ${words.join(' ')}: its help, its output and its errors have no ANSI escape with --no-color`, async () => {
      for (const args of [[...words, '--help', '--no-color'], [...words, ...(ARGS[id]?.() ?? []), '--no-color']]) {
        const result = await runSvc(args, { cwd: project, env: colourEnv() })
        const shown = `svc ${args.join(' ')} (exit ${result.code}):\n${result.stdout}${result.stderr}`
        assert.doesNotMatch(result.stderr, /Nonexistent flag/, shown)
        assert.doesNotMatch(result.stdout + result.stderr, ANSI, shown)
      }
    })
  }

  it('svc logs and svc help print no ANSI escape with NO_COLOR', async () => {
    for (const args of [['logs', '--files'], ['help', 'functions'], ['functions', '--help']]) {
      const result = await runSvc(args, { cwd: project, env: colourEnv({ NO_COLOR: '1' }) })
      assert.equal(result.code, 0, result.stderr)
      assert.doesNotMatch(result.stdout + result.stderr, ANSI, `svc ${args.join(' ')}:\n${result.stdout}`)
    }
  })

  it('svc start: log lines and banner without ANSI escapes with --no-color, and with NO_COLOR', async () => {
    for (const [args, env] of [
      [['--no-color', '--port', '0'], colourEnv({ SVC_URL: undefined })],
      [['start', '--port', '0'], colourEnv({ SVC_URL: undefined, NO_COLOR: '1' })],
    ] as const) {
      const { code, output } = await runUntil([...args], /^\s+engine\s+ws:/, env)
      assert.equal(code, 0, output)
      assert.match(output, /INFO/, output)
      assert.doesNotMatch(output, ANSI, output)
    }
  })

  it('svc console prints no ANSI escape with --no-color', async () => {
    const { code, output } = await runUntil(['console', '--no-color', '--no-open', '--port', '0', '--engine', dead], /^svc console → /, colourEnv())
    assert.equal(code, 0, output)
    assert.doesNotMatch(output, ANSI, output)
  })
})

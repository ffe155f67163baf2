/**
 * Prompts as a person at a terminal meets them (cli.md §1 Interactive, §6 Prompts): the CLI runs
 * inside tmux, which gives it a real TTY; keys are typed with send-keys and the screen is read with
 * capture-pane.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { SVC_BIN, startEngineProcess, tempProject, type RunningEngine } from './support/processes.ts'
import { waitForMatch } from './support/wait.ts'

const SOCKET = `svc-test-${process.pid}`
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' })
const dirs: string[] = []

/** Runs `command` in a fresh 160×40 tmux session (CI unset, so the CLI counts as interactive). */
function session(name: string, cwd: string, command: string): void {
  tmux('new-session', '-d', '-s', name, '-x', '160', '-y', '40', '-c', cwd, `env -u CI ${command}; echo "[exit $?]"; sleep 60`)
}

/** Waits until the pane shows `text`; returns the screen. */
async function screenShows(name: string, text: string | RegExp, timeoutMs = 20000): Promise<string> {
  let screen = ''
  const pattern = typeof text === 'string' ? new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : text
  await waitForMatch(() => (screen = tmux('capture-pane', '-p', '-t', name)), pattern, `the screen to show ${String(text)}`, { timeoutMs })
  return screen
}

after(() => {
  try {
    tmux('kill-server')
  } catch {
    /* no server left */
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

describe('interactive prompts (real TTY through tmux)', () => {
  let engine: RunningEngine
  let client: SvcClient
  let project: string
  before(async () => {
    project = await tempProject()
    dirs.push(project)
    engine = await startEngineProcess(project)
    client = registerWorker(engine.engineUrl, { workerName: 'picker-test' })
    client.registerFunction('demo::echo', (data: { who?: string }) => ({ picked: true, who: data.who ?? null }), { description: 'Echo for the picker' })
    client.registerFunction('other::thing', () => 'not this one')
    await client.trigger({ function_id: 'demo::echo', payload: {} })
  })
  after(async () => {
    await client?.shutdown()
    await engine?.stop()
  })

  it('svc trigger without FUNCTION_ID offers a searchable list of functions', async () => {
    session('picker', project, `${process.execPath} ${SVC_BIN} trigger --data '{\"who\":\"ada\"}' --engine ${engine.engineUrl}`)
    await screenShows('picker', 'Function to invoke')
    tmux('send-keys', '-t', 'picker', 'demo::ec')
    await screenShows('picker', 'Echo for the picker')
    tmux('send-keys', '-t', 'picker', 'Enter')
    const screen = await screenShows('picker', '[exit 0]')
    assert.match(screen, /"picked": true/)
    assert.match(screen, /"who": "ada"/)
  })

  it('a mistyped command asks "Did you mean trigger?" and runs it with the arguments on yes (issue 11)', async () => {
    session('typo', project, `${process.execPath} ${SVC_BIN} triger demo::echo who=grace --engine ${engine.engineUrl}`)
    await screenShows('typo', /Did you mean .*trigger/)
    tmux('send-keys', '-t', 'typo', 'Enter')
    const screen = await screenShows('typo', '[exit 0]')
    assert.match(screen, /"who": "grace"/)
  })

  it('svc project init asks for the name and the template', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'svc-tty-'))
    dirs.push(cwd)
    session('init', cwd, `${process.execPath} ${SVC_BIN} project init --no-install`)
    await screenShows('init', 'Project name')
    tmux('send-keys', '-t', 'init', 'C-u', 'tty-app', 'Enter')
    await screenShows('init', /[Tt]emplate/)
    tmux('send-keys', '-t', 'init', 'Enter')
    await screenShows('init', '[exit 0]')
    assert.ok(existsSync(join(cwd, 'tty-app', 'config.yaml')))
    assert.ok(existsSync(join(cwd, 'tty-app', '.svc', 'project.ini')))
  })
})

/**
 * `svc console` as a user runs it (cli.md §4.8): the built CLI in its own process, a real engine.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { cliEnv, runSvc } from '../../../test/support/cli.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { SVC_BIN } from '../../../test/support/processes.ts'
import { eventually } from '../../../test/support/raw-worker.ts'

interface Spawned {
  child: ChildProcess
  /** The first stdout line, parsed. */
  ready: Promise<{ event: string; url: string }>
  stderr: () => string
  exited: Promise<number | null>
}

function spawnConsole(args: string[], cwd: string): Spawned {
  const child = spawn(process.execPath, [SVC_BIN, 'console', ...args], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const lines = createInterface({ input: child.stdout! })
  const ready = new Promise<{ event: string; url: string }>((resolve, reject) => {
    lines.once('line', (line) => resolve(JSON.parse(line)))
    child.once('exit', (code) => reject(new Error(`svc console exited with ${code} before it was ready: ${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, ready, stderr: () => stderr, exited }
}

describe('svc console (cli.md §4.8)', () => {
  let t: TestEngine
  let project: string
  const children: ChildProcess[] = []

  before(async () => {
    t = await startTestEngine()
    project = await mkdtemp(join(tmpdir(), 'svc-console-cli-'))
    // The engine address comes from the project's config.yaml, as for svc trigger.
    await writeFile(join(project, 'config.yaml'), `workers:\n  - name: svc-worker-manager\n    config:\n      port: ${new URL(t.url).port}\n`)
  })

  after(async () => {
    for (const child of children) child.kill('SIGKILL')
    await t?.stop()
    await rm(project, { recursive: true, force: true })
  })

  it('--json --no-open prints console_ready, serves the engine of config.yaml, and exits 0 on SIGINT', async () => {
    const run = spawnConsole(['--json', '--no-open', '--port', '0'], project)
    children.push(run.child)
    const ready = await run.ready
    assert.equal(ready.event, 'console_ready')
    assert.match(ready.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    let info: any
    await eventually(async () => (info = (await (await fetch(`${ready.url}/api/info`)).json()) as any).connected === true, 10_000)
    assert.equal(info.engine_url, t.url)
    assert.equal(info.http_url, t.httpUrl)
    run.child.kill('SIGINT')
    assert.equal(await run.exited, 0)
    await assert.rejects(fetch(`${ready.url}/api/info`), 'the server is closed')
  })

  it('a port in use exits 1 with "Port <n> is already in use; pass --port"', async () => {
    const blocker: Server = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as { port: number }).port
    try {
      const human = await runSvc(['console', '--no-open', '--port', String(port)], { cwd: project })
      assert.equal(human.code, 1)
      assert.equal(human.stderr.trim(), `Error: Port ${port} is already in use; pass --port`)
      const json = await runSvc(['console', '--json', '--port', String(port)], { cwd: project })
      assert.equal(json.code, 1)
      assert.deepEqual(JSON.parse(json.stdout), { error: { code: 'PORT_IN_USE', message: `Port ${port} is already in use; pass --port` } })
    } finally {
      blocker.close()
    }
  })

  it('keeps running while the engine is unreachable, and warns for a non-loopback host', async () => {
    const run = spawnConsole(['--json', '--no-open', '--port', '0', '--host', '0.0.0.0', '--engine', 'ws://127.0.0.1:9'], project)
    children.push(run.child)
    const ready = await run.ready
    const url = ready.url.replace('0.0.0.0', '127.0.0.1')
    const info = (await (await fetch(`${url}/api/info`)).json()) as { connected: boolean }
    assert.equal(info.connected, false)
    assert.match(run.stderr(), /no authentication/)
    await new Promise((r) => setTimeout(r, 1500))
    assert.equal(run.child.exitCode, null, 'still running after failed connection attempts')
    run.child.kill('SIGTERM')
    assert.equal(await run.exited, 0)
  })

  it('svc starts the console entry of config.yaml, and stops it on SIGINT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-console-entry-'))
    await writeFile(
      join(dir, 'config.yaml'),
      'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n  - name: console\n    config:\n      port: 0\n',
    )
    const child = spawn(process.execPath, [SVC_BIN, '--json', '--no-watch'], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    const events: any[] = []
    createInterface({ input: child.stdout! }).on('line', (line) => events.push(JSON.parse(line)))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      // The console may be running before svc prints engine_ready (the banner comes last): wait for both.
      await eventually(() => events.some((e) => e.event === 'worker_state' && e.worker === 'console' && e.state === 'running') && events.some((e) => e.event === 'engine_ready'), 20_000)
      const line = events.find((e) => e.event === 'log' && e.source === 'console' && /svc console → /.test(e.message))
      const url = /http:\/\/\S+/.exec(line.message)![0]
      const ready = events.find((e) => e.event === 'engine_ready')
      const info = (await (await fetch(`${url}/api/info`)).json()) as { connected: boolean; engine_url: string }
      assert.equal(info.connected, true)
      assert.equal(info.engine_url, ready.engine_url)
      child.kill('SIGINT')
      assert.equal(await exited, 0)
      await assert.rejects(fetch(`${url}/api/info`), 'the console stopped with svc')
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

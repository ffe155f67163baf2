/**
 * `svc console` as a user runs it (cli.md §4.8): the built CLI in its own process, a real engine.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { cliEnv, runSvc } from '../../../test/support/cli.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { SVC_BIN } from '../../../test/support/processes.ts'
import { waitFor } from '../../../test/support/wait.ts'

interface Ready {
  event: string
  url: string
  open_url?: string
  token?: string
}

interface Spawned {
  child: ChildProcess
  /** The first stdout line, parsed (`--json`), or as text. */
  ready: Promise<Ready>
  stderr: () => string
  exited: Promise<number | null>
}

function spawnConsole(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Spawned {
  const child = spawn(process.execPath, [SVC_BIN, 'console', ...args], { cwd, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr!.on('data', (d) => (stderr += d))
  const lines = createInterface({ input: child.stdout! })
  const ready = new Promise<Ready>((resolve, reject) => {
    lines.once('line', (line) => resolve(line.startsWith('{') ? JSON.parse(line) : { event: 'text', url: line }))
    child.once('exit', (code) => reject(new Error(`svc console exited with ${code} before it was ready: ${stderr}`)))
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, ready, stderr: () => stderr, exited }
}

/** Status of `GET /api/info` sent with exactly this Host header and a bearer token. */
function rawStatus(port: number, host: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/api/info', setHost: false, headers: { host, authorization: `Bearer ${token}` }, agent: false }, (res) => {
      res.resume()
      resolve(res.statusCode!)
    })
    req.on('error', reject)
    req.end()
  })
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

  it('--json --no-open prints console_ready with the access token, serves the engine of config.yaml, and exits 0 on SIGINT', async () => {
    const run = spawnConsole(['--json', '--no-open', '--port', '0'], project)
    children.push(run.child)
    const ready = await run.ready
    assert.equal(ready.event, 'console_ready')
    assert.match(ready.url, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.match(ready.token!, /^[A-Za-z0-9_-]{32}$/)
    assert.equal(ready.open_url, `${ready.url}/?token=${ready.token}`)
    assert.equal((await fetch(`${ready.url}/api/info`)).status, 401, 'the API needs the token')
    const headers = { authorization: `Bearer ${ready.token}` }
    let info: any
    await waitFor(async () => (info = (await (await fetch(`${ready.url}/api/info`, { headers })).json()) as any).connected === true, '(info = (await (await fetch(`${ready.url}/api/info`, { headers })).json()) as any).connected === true', 10_000)
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
    // An "engine" that drops every connection: it counts the console's attempts.
    let attempts = 0
    const dropping = createServer((socket) => {
      attempts++
      socket.destroy()
    })
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve))
    after(() => dropping.close())
    const enginePort = (dropping.address() as { port: number }).port
    const run = spawnConsole(['--json', '--no-open', '--port', '0', '--host', '0.0.0.0', '--engine', `ws://127.0.0.1:${enginePort}`], project)
    children.push(run.child)
    const ready = await run.ready
    const url = ready.url.replace('0.0.0.0', '127.0.0.1')
    const info = (await (await fetch(`${url}/api/info`, { headers: { authorization: `Bearer ${ready.token}` } })).json()) as { connected: boolean }
    assert.equal(info.connected, false)
    assert.match(run.stderr(), /listens on 0\.0\.0\.0: anyone who can reach this port and has the access token/)
    await waitFor(() => attempts >= 2 || run.child.exitCode !== null, 'a second connection attempt')
    assert.equal(run.child.exitCode, null, 'still running after failed connection attempts')
    run.child.kill('SIGTERM')
    assert.equal(await run.exited, 0)
  })

  it('SVC_CONSOLE_TOKEN sets the token (never printed), --allowed-host adds a name, --no-token turns the token off', async () => {
    const token = 'chosen-token-0123456789'
    const chosen = spawnConsole(['--no-open', '--port', '0', '--allowed-host', 'devbox.test'], project, { SVC_CONSOLE_TOKEN: token })
    children.push(chosen.child)
    const line = (await chosen.ready).url
    assert.match(line, /^svc console → http:\/\/127\.0\.0\.1:\d+ \(access token from SVC_CONSOLE_TOKEN\)$/)
    const url = /http:\/\/\S+/.exec(line)![0]
    const port = new URL(url).port
    assert.equal((await fetch(`${url}/api/info`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
    assert.equal((await rawStatus(Number(port), `devbox.test:${port}`, token)), 200)
    assert.equal((await rawStatus(Number(port), `other.test:${port}`, token)), 403)
    chosen.child.kill('SIGTERM')
    assert.equal(await chosen.exited, 0)

    const open = spawnConsole(['--json', '--no-open', '--port', '0', '--no-token'], project)
    children.push(open.child)
    const ready = await open.ready
    assert.deepEqual(Object.keys(ready).sort(), ['event', 'url'])
    assert.equal((await fetch(`${ready.url}/api/info`)).status, 200)
    assert.match(open.stderr(), /no access token \(--no-token\)/)
    open.child.kill('SIGTERM')
    assert.equal(await open.exited, 0)

    const bad = await runSvc(['console', '--no-open', '--port', '0'], { cwd: project, env: cliEnv({ SVC_CONSOLE_TOKEN: 'short' }) })
    assert.equal(bad.code, 2)
    assert.match(bad.stderr, /^Error: SVC_CONSOLE_TOKEN: the console access token must be 16 to 512 of/)
  })

  it('svc starts the console entry of config.yaml with its own token in the banner address, and stops it on SIGINT', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-console-entry-'))
    await writeFile(
      join(dir, 'config.yaml'),
      'workers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n  - name: console\n    config:\n      port: 0\n      allowed_hosts: [devbox.test]\n',
    )
    const child = spawn(process.execPath, [SVC_BIN, '--json', '--no-watch'], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    children.push(child)
    const events: any[] = []
    createInterface({ input: child.stdout! }).on('line', (line) => events.push(JSON.parse(line)))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      // The console may be running before svc prints engine_ready (the banner comes last): wait for both.
      await waitFor(() => events.some((e) => e.event === 'worker_state' && e.worker === 'console' && e.state === 'running') && events.some((e) => e.event === 'engine_ready'), 'the condition', 20_000)
      const line = events.find((e) => e.event === 'log' && e.source === 'console' && /svc console → /.test(e.message))
      const url = /http:\/\/\S+/.exec(line.message)![0]
      const ready = events.find((e) => e.event === 'engine_ready')
      // The banner's address carries the token svc gave the console; the console's own line does not.
      const token = new URL(ready.console_url).searchParams.get('token')!
      assert.match(token, /^[A-Za-z0-9_-]{32}$/)
      assert.ok(!JSON.stringify(events).replace(ready.console_url, '').includes(token), 'the token appears in the banner address only')
      assert.equal((await fetch(`${url}/api/info`)).status, 401)
      const port = Number(new URL(url).port)
      assert.equal(await rawStatus(port, `devbox.test:${port}`, token), 200, 'allowed_hosts of the entry')
      const info = (await (await fetch(`${url}/api/info`, { headers: { authorization: `Bearer ${token}` } })).json()) as { connected: boolean; engine_url: string }
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

/**
 * End to end: a `svc compose` reload drops no call (issue 21), as `svc`'s does (test/reload.test.ts).
 * A real engine process and a real compose daemon (`svc compose up`) run a path container; a client
 * keeps calling its function while the container's source is edited. The new process starts beside
 * the old one, which serves until the new one holds its functions, is then drained over
 * `engine::workers::drain` and stopped once its calls finished (a slow one among them). Needs
 * `npm run build`.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { cliEnv, runSvc } from './support/cli.ts'
import { ROOT, startEngineProcess, SVC_BIN, tempProject, type RunningEngine } from './support/processes.ts'
import { processAlive } from '../src/lib/processes.ts'
import { callLoops, stopCallLoops } from './support/call-loop.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href
const NS = 'e2e-reload'

/**
 * A worker answering `versioned::version` with `{version, pid}` after `delayMs`, so that calls are in
 * flight at every moment; on SIGTERM it closes its connection and exits, as the templates do.
 */
function workerSource(version: string, delayMs = 40): string {
  return `import { registerWorker } from ${JSON.stringify(SDK)}
const svc = registerWorker(undefined, { otel: { enabled: false } })
svc.registerFunction('versioned::version', async () => {
  await new Promise((resolve) => setTimeout(resolve, ${delayMs}))
  return { version: ${JSON.stringify(version)}, pid: process.pid }
})
svc.registerFunction('versioned::other', () => ({ ok: true }))
svc.registerFunction('versioned::slow', async () => {
  await new Promise((resolve) => setTimeout(resolve, 4000))
  return { version: ${JSON.stringify(version)}, pid: process.pid }
})
process.on('SIGTERM', async () => { await svc.shutdown(); process.exit(0) })
`
}

let dir = ''
let engine: RunningEngine | undefined
let client: SvcClient | undefined
let daemon: { child: ChildProcess; events: Array<Record<string, unknown>>; output: string[]; exited: Promise<number | null> } | undefined
const containerPids = new Set<number>()

/** {@link waitFor} with the daemon's output in the timeout message. */
function until<T>(find: () => T | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  return waitFor(find, () => `${what}; the daemon printed:\n${daemon?.output.join('\n')}`, timeoutMs, 50)
}

/** Calls `versioned::version` from `concurrency` loops until `stop()`. */
function steadyCalls(caller: SvcClient, concurrency = 4) {
  return callLoops(async () => (await caller.trigger({ function_id: 'versioned::version', payload: {}, namespace: NS, timeoutMs: 20_000 })) as { version: string; pid: number }, concurrency)
}

before(async () => {
  dir = await tempProject()
  const worker = join(dir, 'workers', 'versioned')
  mkdirSync(worker, { recursive: true })
  writeFileSync(join(worker, 'svc.worker.yaml'), 'name: versioned\nscripts:\n  start: node index.mjs\n')
  writeFileSync(join(worker, 'index.mjs'), workerSource('v1'))
  writeFileSync(join(dir, 'worker-compose.yaml'), 'containers:\n  versioned:\n    worker: path://./workers/versioned\n')
  engine = await startEngineProcess(dir)
  const child = spawn(process.execPath, [SVC_BIN, 'compose', 'up', '-n', NS, '--engine', engine.engineUrl, '--json'], { cwd: dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  const started = { child, events: [] as Array<Record<string, unknown>>, output: [] as string[], exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) }
  daemon = started
  createInterface({ input: child.stdout! }).on('line', (line) => {
    started.output.push(line)
    try {
      started.events.push(JSON.parse(line) as Record<string, unknown>)
    } catch {
      /* a plain line */
    }
  })
  child.stderr!.on('data', (d) => started.output.push(String(d)))
  const up = (await until(() => started.events.find((e) => e.event === 'project_up'), 'the project to be up')) as { status: string; containers: Array<{ pid?: number }> }
  assert.equal(up.status, 'ok', JSON.stringify(up))
  for (const c of up.containers) if (typeof c.pid === 'number') containerPids.add(c.pid)
  client = registerWorker(engine.engineUrl, { workerName: 'compose-reload-caller', otel: { enabled: false } } as Parameters<typeof registerWorker>[1])
})

after(async () => {
  await stopCallLoops()
  await client?.shutdown().catch(() => undefined)
  if (daemon && daemon.child.exitCode === null && daemon.child.signalCode === null) {
    daemon.child.kill('SIGTERM')
    const timer = setTimeout(() => daemon!.child.kill('SIGKILL'), 15_000)
    await daemon.exited
    clearTimeout(timer)
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

describe('svc compose: a reload drops no call (issue 21)', () => {
  it('an edit of a path container during a steady loop of calls: zero errors, the new code answers, the old process is gone', async () => {
    const calls = steadyCalls(client!)
    await until(() => calls.answers.length >= 20 && calls.answers.at(-1)!.version === 'v1', 'answers from v1')
    const oldPid = calls.answers.at(-1)!.pid
    containerPids.add(oldPid)
    // A call running on the old process when the edit lands finishes there (within the 10 s grace).
    const slow = client!
      .trigger({ function_id: 'versioned::slow', payload: {}, namespace: NS, timeoutMs: 30_000 })
      .catch((err: Error) => ({ error: err.message }))
    writeFileSync(join(dir, 'workers', 'versioned', 'index.mjs'), workerSource('v2'))
    const newPid = (await until(() => calls.answers.find((a) => a.version === 'v2'), 'answers from v2')).pid
    containerPids.add(newPid)
    await until(() => !processAlive(oldPid), 'the old process to stop')
    const count = calls.answers.length
    await until(() => calls.answers.length >= count + 20, '20 more answers')
    await calls.stop()
    assert.deepEqual(await slow, { version: 'v1', pid: oldPid })
    assert.deepEqual(calls.errors, [], `calls failed during the reload; the daemon printed:\n${daemon!.output.join('\n')}`)
    assert.equal(calls.answers.at(-1)!.version, 'v2')
    // As a user sees it: `svc trigger` reaches the new code, and one process of the container is listed.
    const triggered = await runSvc(['trigger', '-n', NS, 'versioned::version', '--engine', engine!.engineUrl], { cwd: dir })
    assert.equal(triggered.code, 0, triggered.stderr)
    assert.equal((JSON.parse(triggered.stdout) as { version: string }).version, 'v2')
    const { workers } = await client!.trigger<unknown, { workers: Array<{ name: string; pid: number | null }> }>({ function_id: 'engine::workers::list', payload: { namespace: NS } })
    assert.deepEqual(
      workers.filter((w) => w.name === 'versioned').map((w) => w.pid),
      [newPid],
    )
  })
})

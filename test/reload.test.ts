/**
 * End to end: a reload drops no call (issue 21, "In the terminal"). `startEngine` (what `svc` runs)
 * with a real engine supervises a real worker process; a client keeps calling its function while
 * the worker's source is edited. The new process starts beside the old one, which serves until the
 * new one registered and then finishes its calls; a syntax error in the edit leaves the old process
 * serving and says where the error is.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { startEngine } from '../src/lib/start.ts'
import type { RunningEngine } from '../src/lib/start.ts'
import { ROOT, SVC_BIN, tempProject } from './support/processes.ts'
import { processAlive } from '../src/lib/processes.ts'
import { callLoops, stopCallLoops } from './support/call-loop.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href

/**
 * A worker answering `reload::version` with `{version, pid}` after `delayMs`, so that calls are in
 * flight at every moment; on SIGTERM it closes its connection and exits, as the templates do.
 */
function workerSource(version: string, delayMs = 40): string {
  return `import { registerWorker } from ${JSON.stringify(SDK)}
const svc = registerWorker(undefined, { otel: { enabled: false } })
svc.registerFunction('reload::version', async () => {
  await new Promise((resolve) => setTimeout(resolve, ${delayMs}))
  return { version: ${JSON.stringify(version)}, pid: process.pid }
})
svc.registerFunction('reload::other', () => ({ ok: true }))
process.on('SIGTERM', async () => { await svc.shutdown(); process.exit(0) })
`
}

let dir = ''
let running: RunningEngine | undefined
let caller: SvcClient | undefined
const printed: string[] = []

/** Describes a wait with what svc printed so far, for its failure message. */
const svcPrinted = (what: string) => () => `${what}; svc printed:\n${printed.join('')}`

/** The JSON events printed so far. */
function events(): Array<Record<string, unknown>> {
  return printed
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
}

/** Calls `reload::version` from `concurrency` loops until `stop()`, each answer with when it was sent. */
function steadyCalls(client: SvcClient, concurrency = 4) {
  return callLoops(async () => {
    const sentAt = performance.now()
    const answer = (await client.trigger({ function_id: 'reload::version', payload: {}, timeoutMs: 20_000 })) as { version: string; pid: number }
    return { ...answer, sentAt }
  }, concurrency)
}

before(async () => {
  dir = await tempProject('  - name: versioned\n    worker_path: ./workers/versioned\n  - name: crasher\n    worker_path: ./workers/crasher\n')
  const worker = join(dir, 'workers', 'versioned')
  mkdirSync(worker, { recursive: true })
  writeFileSync(join(worker, 'svc.worker.yaml'), 'name: versioned\nscripts:\n  start: node index.mjs\n')
  writeFileSync(join(worker, 'index.mjs'), workerSource('v1'))
  // A worker that never gets to register crash::now: a syntax error on line 2.
  const crasher = join(dir, 'workers', 'crasher')
  mkdirSync(crasher, { recursive: true })
  writeFileSync(join(crasher, 'svc.worker.yaml'), 'name: crasher\nscripts:\n  start: node index.mjs\n')
  writeFileSync(join(crasher, 'index.mjs'), "console.log('registering crash::now')\nexport const broken = {\n")
  const env = { ...process.env }
  delete env.SVC_URL
  running = await startEngine({ version: 'test', cwd: dir, env, workers: true, watch: true, json: true, stdout: (text) => void printed.push(text) })
  await waitFor(() => running!.workers.find((w) => w.name === 'versioned')?.state === 'running', svcPrinted('the worker to run'), 60_000)
  caller = registerWorker(running.engine.workerUrls[0], { workerName: 'reload-caller', otel: { enabled: false } } as Parameters<typeof registerWorker>[1])
})

after(async () => {
  await stopCallLoops()
  await caller?.shutdown().catch(() => undefined)
  await running?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('reload drops no call (issue 21)', () => {
  it('an edit during a steady loop of calls: zero errors, the new code answers, the old process is gone', async () => {
    const calls = steadyCalls(caller!)
    await waitFor(() => calls.answers.length >= 20 && calls.answers.at(-1)!.version === 'v1', svcPrinted('answers from v1'), 60_000)
    const oldPid = calls.answers.at(-1)!.pid
    const worker = running!.workers.find((w) => w.name === 'versioned')!
    let promotedAt = Infinity
    worker.on('state', (state: string) => {
      if (state === 'running' && promotedAt === Infinity) promotedAt = performance.now()
    })
    writeFileSync(join(dir, 'workers', 'versioned', 'index.mjs'), workerSource('v2'))
    await waitFor(() => calls.answers.at(-1)?.version === 'v2', svcPrinted('answers from v2'), 60_000)
    await waitFor(() => !processAlive(oldPid), svcPrinted('the old process to stop'), 60_000)
    const count = calls.answers.length
    await waitFor(() => calls.answers.length >= count + 20, svcPrinted('20 more answers'), 60_000)
    await calls.stop()
    assert.deepEqual(calls.errors, [], `calls failed during the reload; svc printed:\n${printed.join('')}`)
    // Once the new process registered (state running again), every call sent went to it.
    assert.ok(promotedAt < Infinity)
    const late = calls.answers.filter((a) => a.sentAt > promotedAt && a.version !== 'v2')
    assert.deepEqual(late, [], 'calls sent after the new process registered were answered by the old one')
    assert.ok(calls.answers.some((a) => a.sentAt < promotedAt && a.version === 'v1'))
    assert.equal(worker.state, 'running')
    assert.notEqual(worker.pid, oldPid)
  })

  it('a syntax error in the edit: the old process keeps answering, and svc says where the error is', async () => {
    const calls = steadyCalls(caller!)
    await waitFor(() => calls.answers.length >= 10, svcPrinted('answers'), 60_000)
    const serving = calls.answers.at(-1)!
    writeFileSync(join(dir, 'workers', 'versioned', 'index.mjs'), `${workerSource('v3')}\nexport const broken = {\n`)
    const line = await waitFor(
      () => events().find((e) => e.event === 'log' && typeof e.message === 'string' && e.message.startsWith('versioned: the new process exited')),
      svcPrinted('the report of the failed new process'), 60_000,
    )
    assert.match(line.message as string, /before it registered: SyntaxError: .+ \(index\.mjs:\d+\); the previous process keeps serving \(waiting for a change to workers\/versioned\)$/)
    const count = calls.answers.length
    await waitFor(() => calls.answers.length >= count + 20, svcPrinted('20 more answers'), 60_000)
    await calls.stop()
    assert.deepEqual(calls.errors, [])
    assert.ok(calls.answers.slice(count).every((a) => a.version === serving.version && a.pid === serving.pid), 'the old process answered every call')
    const worker = running!.workers.find((w) => w.name === 'versioned')!
    assert.equal(worker.state, 'running')
    assert.equal(worker.pid, serving.pid)
    assert.match(worker.lastError ?? '', /SyntaxError/)
    // The fix is picked up as usual.
    writeFileSync(join(dir, 'workers', 'versioned', 'index.mjs'), workerSource('v4'))
    const check = steadyCalls(caller!, 1)
    await waitFor(() => check.answers.at(-1)?.version === 'v4', svcPrinted('answers from v4'), 60_000)
    await check.stop()
    assert.deepEqual(check.errors, [])
  })
})

describe("a crashed worker's function_not_found (issue 21)", () => {
  it('svc trigger says the worker crashed, with its name and last error, not that it may still be installing', async () => {
    await waitFor(() => running!.workers.find((w) => w.name === 'crasher')?.state === 'crashed', svcPrinted('the crasher to be crashed'), 60_000)
    const env = { ...process.env }
    delete env.SVC_URL
    const child = spawn(process.execPath, [SVC_BIN, 'trigger', 'crash::now'], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    assert.equal(code, 1, stderr)
    assert.match(stderr, /^Error: function_not_found: Function crash::now not found$/m)
    assert.match(
      stderr,
      /^Hint: crasher crashed \(exited with code 1 before it registered: SyntaxError: .+ \(index\.mjs:\d\)\); fix it and save, svc starts it again on the next change \(svc logs crasher shows its output\)$/m,
    )
    assert.doesNotMatch(stderr, /may still be installing/)
  })
})

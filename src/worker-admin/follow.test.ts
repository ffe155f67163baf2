/**
 * Following a worker until it registers, against a real engine and a real SDK worker. The test
 * plays the supervisor's part by writing the state file as the supervisor would.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { startTestEngine } from '../../test/support/engine.ts'
import type { TestEngine } from '../../test/support/engine.ts'
import { CliError } from '../lib/errors.ts'
import { EngineSession } from './engine.ts'
import { followWorker, WorkerFollower } from './follow.ts'
import type { FollowOptions } from './follow.ts'
import type { StepRunner } from './progress.ts'
import { waitFor } from '../../test/support/wait.ts'

let engine: TestEngine
let session: EngineSession
const roots: string[] = []
const clients: SvcClient[] = []

before(async () => {
  engine = await startTestEngine()
  const opened = await EngineSession.open(engine.url)
  assert.ok(opened, 'the test engine is reachable')
  session = opened
})

after(async () => {
  for (const client of clients) await client.shutdown()
  await session?.close()
  await engine?.stop()
  for (const root of roots) rmSync(root, { recursive: true, force: true })
})

function project(): string {
  const root = mkdtempSync(join(tmpdir(), 'svc-follow-'))
  roots.push(root)
  mkdirSync(join(root, '.svc', 'state', 'workers'), { recursive: true })
  mkdirSync(join(root, '.svc', 'logs'), { recursive: true })
  return root
}

/** Writes a state record the way the supervisor does (src/supervisor/types.ts WorkerStateRecord). */
function writeState(root: string, name: string, fields: Record<string, unknown>): void {
  const record = { name, namespace: 'default', state: 'declared', pid: null, supervisor_pid: process.pid, restarts: 0, last_error: null, updated_at: new Date().toISOString(), ...fields }
  writeFileSync(join(root, '.svc', 'state', 'workers', `${name}.json`), JSON.stringify(record))
}

function options(root: string, name: string, extra: Partial<FollowOptions> = {}): FollowOptions {
  return {
    session,
    projectRoot: root,
    name,
    namespace: 'default',
    timeoutMs: 60_000,
    since: Date.now(),
    logLabel: `.svc/logs/${name}.log`,
    logPath: join(root, '.svc', 'logs', `${name}.log`),
    pollMs: 50,
    ...extra,
  }
}

/** A step runner that records finished titles and runs `hooks[title]` when a step starts. */
function recordingSteps(hooks: Record<string, () => void | Promise<void>> = {}): { steps: StepRunner; finished: string[] } {
  const finished: string[] = []
  const steps: StepRunner = async (title, task) => {
    await hooks[title]?.()
    const done = await task?.()
    finished.push(typeof done === 'string' ? done : title)
  }
  return { steps, finished }
}

describe('following a worker until it registers', () => {
  it('shows installing, started and registered as the worker gets there', async () => {
    const root = project()
    writeState(root, 'math-worker', { state: 'installing' })
    const { steps, finished } = recordingSteps({
      'Installing dependencies (npm install)': () => writeState(root, 'math-worker', { state: 'starting', pid: process.pid }),
      Starting: () => {
        const worker = registerWorker(engine.url, { workerName: 'math-worker' })
        clients.push(worker)
        worker.registerFunction('math::add', ({ a, b }: { a: number; b: number }) => ({ sum: a + b }))
        worker.registerFunction('math::sub', ({ a, b }: { a: number; b: number }) => ({ diff: a - b }))
      },
    })
    const opts = options(root, 'math-worker', { installCommand: 'npm install' })
    const outcome = await followWorker(new WorkerFollower(opts), steps, opts)
    assert.equal(finished.length, 4)
    assert.equal(finished[0], 'Declared math-worker in config.yaml')
    assert.match(finished[1]!, /^Installed dependencies \(npm install, \d+(\.\d)? s\)$/)
    assert.equal(finished[2], `Started (pid ${process.pid})`)
    assert.equal(finished[3], 'Registered with the engine: math::add, math::sub')
    assert.equal(outcome.state, 'running')
    assert.equal(outcome.pid, process.pid)
    assert.deepEqual(outcome.functions, ['math::add', 'math::sub'])
    assert.ok(outcome.readyMs >= 0)
  })

  it('fails with exit 1 and the last 20 lines of the log when the worker fails first', async () => {
    const root = project()
    writeFileSync(join(root, '.svc', 'logs', 'broken.log'), Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\n')
    writeState(root, 'broken', { state: 'failed', last_error: 'npm install exited with code 1' })
    const { steps } = recordingSteps()
    const opts = options(root, 'broken')
    await assert.rejects(followWorker(new WorkerFollower(opts), steps, opts), (err: unknown) => {
      assert.ok(err instanceof CliError)
      assert.equal(err.exitCode, 1)
      assert.equal(err.message, 'broken failed before registering (npm install exited with code 1)')
      const lines = err.details!.split('\n')
      assert.equal(lines[0], 'Last 20 lines of .svc/logs/broken.log:')
      assert.deepEqual(lines.slice(1), Array.from({ length: 20 }, (_, i) => `line ${i + 11}`))
      assert.equal(err.hint, 'see .svc/logs/broken.log')
      return true
    })
  })

  it('times out with exit 4, ignoring records of an earlier run', async () => {
    const root = project()
    // Written by a supervisor that is gone: no information about this run.
    writeState(root, 'slow', { state: 'crashed', supervisor_pid: 2 ** 22 + 12345 })
    const { steps } = recordingSteps()
    const opts = options(root, 'slow', { timeoutMs: 300 })
    await assert.rejects(followWorker(new WorkerFollower(opts), steps, opts), (err: unknown) => {
      assert.ok(err instanceof CliError)
      assert.equal(err.exitCode, 4)
      assert.equal(err.code, 'TIMEOUT')
      assert.equal(err.message, 'slow did not register within 0.3 s (state: declared). See .svc/logs/slow.log')
      return true
    })
  })

  it('counts only a registration under the same name and namespace', async () => {
    const root = project()
    const other = registerWorker(engine.url, { workerName: 'ns-worker', namespace: 'elsewhere' })
    clients.push(other)
    writeState(root, 'ns-worker', { state: 'starting', pid: process.pid })
    const follower = new WorkerFollower(options(root, 'ns-worker', { timeoutMs: 60_000 }))
    // Once the other namespace's connection is listed, the follower must still not see it as registered.
    await waitFor(async () => (await session.listWorkers({ namespace: 'elsewhere' })).some((w) => w.name === 'ns-worker'), 'ns-worker listed in namespace elsewhere')
    const seen = await follower.observe()
    assert.equal(seen.registered, undefined)
    assert.equal(seen.state, 'starting')
  })
})

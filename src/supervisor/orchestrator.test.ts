/**
 * The orchestrator's own rules (src/supervisor/orchestrator.ts) with a stand-in supervisor: what it
 * fills into a worker's spec from the engine view, restart counts across launches of a name,
 * stopping and forgetting, and adopted processes. No engine; the one process is a `sleep`.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { EventEmitter } from 'node:events'
import { describe, it } from 'node:test'
import { silentLogger } from '../../runtime/engine/logger.ts'
import { processAlive } from '../lib/processes.ts'
import { Orchestrator } from './orchestrator.ts'
import type { EngineView, Registrant, RegistrationProbe, SupervisedWorker, WorkerLaunch, WorkerSpec, WorkerState } from './types.ts'

/** A supervisor that only records: `state` and `restarts` are set by the test. */
class FakeWorker extends EventEmitter {
  readonly name: string
  state: WorkerState = 'declared'
  restarts: number
  pid: number | undefined = undefined
  lastError: string | undefined = undefined
  failure = undefined
  manifest = undefined
  startedAt: Date | undefined = undefined
  stops = 0
  restartCalls = 0
  failStop = false
  readonly spec: WorkerSpec

  constructor(spec: WorkerSpec) {
    super()
    this.spec = spec
    this.name = spec.name
    this.restarts = spec.restarts ?? 0
  }
  async start(): Promise<void> {
    this.set('starting')
  }
  async stop(): Promise<void> {
    this.stops++
    if (this.failStop) throw new Error('cannot stop')
    this.set('stopped')
  }
  async restart(): Promise<void> {
    this.restartCalls++
    this.restarts++
  }
  async waitUntilRunning(): Promise<void> {}
  set(state: WorkerState): void {
    this.state = state
    this.emit('state', state)
  }
}

function setup(view: Partial<EngineView> = {}) {
  const made: FakeWorker[] = []
  const asked: Array<{ who: Registrant; probe: RegistrationProbe }> = []
  const drained: Registrant[] = []
  const engine: EngineView = {
    url: 'ws://127.0.0.1:1',
    isRegistered: (who, probe) => {
      asked.push({ who, probe })
      return true
    },
    drain: async (who) => void drained.push(who),
    ...view,
  }
  const orchestrator = new Orchestrator({
    engine,
    log: silentLogger,
    supervise: (spec) => {
      const worker = new FakeWorker(spec)
      made.push(worker)
      return worker as unknown as SupervisedWorker
    },
  })
  return { orchestrator, made, asked, drained }
}

const launch = (name: string, more: Partial<WorkerLaunch> = {}): WorkerLaunch => ({
  name,
  directory: '/nowhere',
  namespace: 'shop',
  projectRoot: '/nowhere',
  envBase: 'engine',
  env: {},
  watch: false,
  ...more,
})

describe('Orchestrator (issue 21)', () => {
  it('fills in the engine URL, the registration check by name and namespace, and the drain', async () => {
    const { orchestrator, made, asked, drained } = setup()
    orchestrator.launch(launch('api'))
    const spec = made[0]!.spec
    assert.equal(spec.engineUrl, 'ws://127.0.0.1:1')
    assert.equal(spec.restarts, 0)
    const probe = { pid: 42, startedAtMs: 1 }
    assert.equal(await spec.isRegistered(probe), true)
    assert.deepEqual(asked, [{ who: { name: 'api', namespace: 'shop', byPid: true }, probe }])
    await spec.drain!(probe, probe, { graceMs: 10, signal: new AbortController().signal })
    assert.deepEqual(drained, [{ name: 'api', namespace: 'shop', byPid: true }])
  })

  it('registersAs names another worker; overlap: false and an engine view without drain both stop first', () => {
    const { orchestrator, made } = setup()
    orchestrator.launch(launch('console', { registersAs: { name: 'svc-console', namespace: 'default', byPid: false }, overlap: false }))
    assert.equal(made[0]!.spec.drain, undefined)
    assert.equal('registersAs' in made[0]!.spec, false)
    const listed = setup({ drain: undefined })
    listed.orchestrator.launch(launch('api'))
    assert.equal(listed.made[0]!.spec.drain, undefined)
  })

  it('a name runs one worker at a time; its restart count carries over to the next launch', async () => {
    const { orchestrator, made } = setup()
    const first = orchestrator.launch(launch('api'))
    assert.throws(() => orchestrator.launch(launch('api')), /api is already launched/)
    made[0]!.restarts = 3
    assert.equal(orchestrator.restarts('api'), 3)
    assert.equal(await orchestrator.restart('api'), true)
    assert.equal(made[0]!.restartCalls, 1)
    assert.equal(await orchestrator.restart('other'), false)
    first.on('state', () => {})
    await orchestrator.stop('api')
    assert.equal(orchestrator.get('api'), undefined)
    assert.equal(first.listenerCount('state'), 0, 'the presenters are detached')
    assert.equal(orchestrator.restarts('api'), 4)
    orchestrator.launch(launch('api'))
    assert.equal(made[1]!.spec.restarts, 4)
    assert.equal(orchestrator.restarts('unknown'), 0)
  })

  it('stopAll stops every worker even when one fails to stop; settled waits for starting workers', async () => {
    const { orchestrator, made } = setup()
    orchestrator.launch(launch('a'))
    orchestrator.launch(launch('b'))
    await Promise.all(orchestrator.workers.map((w) => w.start()))
    let settled = false
    const waiting = orchestrator.settled(60_000).then(() => (settled = true))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(settled, false)
    made[0]!.set('running')
    made[1]!.set('crashed')
    await waiting
    made[0]!.failStop = true
    await orchestrator.stopAll()
    assert.deepEqual(made.map((w) => w.stops), [1, 1])
    assert.deepEqual(orchestrator.workers, [])
  })

  it('an adopted process is stopped as a group (SIGTERM), reports its own exit once, and refuses pids no signal may go to', async () => {
    const { orchestrator } = setup()
    for (const pid of [0, 1, -1, 1.5, Number.NaN]) assert.throws(() => orchestrator.adopt('bad', pid, { restarts: 0, onExit: () => {} }), /is not a pid svc can adopt/)
    const child = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' })
    const exited = new Promise((resolve) => child.once('exit', resolve))
    const pid = child.pid!
    let exits = 0
    orchestrator.adopt('old', pid, { restarts: 2, onExit: () => exits++ })
    assert.equal(orchestrator.isAdopted('old'), true)
    assert.equal(orchestrator.restarts('old'), 2)
    assert.throws(() => orchestrator.launch(launch('old')), /already launched/)
    await orchestrator.stop('old', 5000)
    await exited
    assert.equal(processAlive(pid) && child.exitCode === null && child.signalCode === null, false)
    assert.equal(child.signalCode, 'SIGTERM')
    assert.equal(orchestrator.isAdopted('old'), false)
    assert.equal(exits, 0, 'a stop it asked for is no exit of its own')
  })
})

import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { LoadedConfig } from '../../runtime/config/loader.ts'
import { loadConfig } from '../../runtime/config/loader.ts'
import { handleSignals, pathsInside, portInUse, underway } from './start.ts'
import type { RunningEngine } from './start.ts'
import type { SupervisedWorker } from '../supervisor/types.ts'

class Exited extends Error {
  readonly code: number
  constructor(code: number) {
    super(`exit ${code}`)
    this.code = code
  }
}

/** A running engine whose stop() finishes only when the test says so. */
function fakeEngine() {
  let finish!: () => void
  let stops = 0
  const stopped = new Promise<void>((resolve) => (finish = resolve))
  const running = {
    stop() {
      stops++
      return stopped
    },
  } as unknown as RunningEngine
  return { running, finish, stops: () => stops }
}

function withHandlers(json = false) {
  const out: string[] = []
  const signals = handleSignals({
    json,
    stdout: (t) => out.push(t),
    stderr: (t) => out.push(t),
    exit: (code) => {
      throw new Exited(code)
    },
  })
  return { signals, out }
}

describe('shutdown on signals (cli.md §3, Shutdown)', () => {
  it('stops the engine on SIGTERM and resolves exit code 0', async () => {
    const before = { int: process.listenerCount('SIGINT'), term: process.listenerCount('SIGTERM') }
    const { signals, out } = withHandlers(true)
    const engine = fakeEngine()
    try {
      const done = signals.attach(engine.running)
      process.emit('SIGTERM', 'SIGTERM')
      assert.equal(engine.stops(), 1)
      assert.deepEqual(out, ['{"event":"shutdown","signal":"SIGTERM"}\n'])
      assert.equal(process.listenerCount('SIGINT'), before.int + 1, 'a second Ctrl-C is still handled while the engine stops')
      engine.finish()
      assert.equal(await done, 0)
      // Stopped: a signal during Node's own exit (which can hang, nodejs/node#54918) has its default action.
      assert.deepEqual({ int: process.listenerCount('SIGINT'), term: process.listenerCount('SIGTERM') }, before)
    } finally {
      signals.dispose()
    }
  })

  it('a second SIGINT while stopping exits 130 at once; a second SIGTERM is ignored', async () => {
    const { signals } = withHandlers()
    const engine = fakeEngine()
    try {
      void signals.attach(engine.running)
      process.emit('SIGINT', 'SIGINT')
      process.emit('SIGTERM', 'SIGTERM')
      assert.throws(() => process.emit('SIGINT', 'SIGINT'), (err: unknown) => err instanceof Exited && err.code === 130)
      assert.equal(engine.stops(), 1)
    } finally {
      signals.dispose()
      engine.finish()
    }
  })

  it('a signal during start-up stops the engine as soon as it is attached', async () => {
    const { signals, out } = withHandlers()
    const engine = fakeEngine()
    try {
      process.emit('SIGINT', 'SIGINT')
      assert.match(out.join(''), /Received SIGINT; stopping svc/)
      assert.equal(engine.stops(), 0)
      const done = signals.attach(engine.running)
      assert.equal(engine.stops(), 1)
      engine.finish()
      assert.equal(await done, 0)
    } finally {
      signals.dispose()
    }
  })

  it('dispose removes the handlers', () => {
    const before = process.listenerCount('SIGINT')
    const { signals } = withHandlers()
    assert.equal(process.listenerCount('SIGINT'), before + 1)
    signals.dispose()
    assert.equal(process.listenerCount('SIGINT'), before)
  })
})

describe('port in use (cli.md §3 step 4)', () => {
  const config: LoadedConfig = loadConfig(undefined, { cwd: '/p', env: {}, overrides: { port: 4000 } })
  // An empty registry of running engines: the messages must not depend on an svc running here.
  const env = { SVC_ENGINES_DIR: join(mkdtempSync(join(tmpdir(), 'svc-no-engines-')), 'engines') }
  const inUse = (port: number) => Object.assign(new Error(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`), { code: 'EADDRINUSE', port })

  it('names the engine listener and --port', () => {
    const error = portInUse(inUse(4000), config, env)
    assert.equal(error?.message, 'Port 4000 is already in use (svc-worker-manager). Is another svc running?')
    assert.equal(error?.hint, 'set port in the svc-worker-manager entry of config.yaml or pass --port (svc project init --ports auto picks free ports)')
  })

  it('names the built-in whose default or seeded port it is, and its settings file', () => {
    // No settings file and no config.yaml entry: the hint says where a port can be set (issue 11).
    assert.equal(portInUse(inUse(3111), config, env)?.message, 'Port 3111 is already in use (svc-http). Is another svc running?')
    assert.equal(portInUse(inUse(3111), config, env)?.hint, 'add an entry to config.yaml: - name: svc-http with config: { port: <n> }')
    const placeholder = { ...config, builtins: { ...config.builtins, 'svc-http': { enabled: true, config: { port: 3111 }, raw_config: { port: '${HTTP_PORT:3111}' } } } }
    assert.equal(portInUse(inUse(3111), placeholder, env)?.hint, 'set HTTP_PORT, or port in the svc-http entry of config.yaml')
    const seeded = { ...config, builtins: { ...config.builtins, 'svc-stream': { enabled: true, config: { port: 9000 } } } }
    assert.match(portInUse(new Error('wrapped', { cause: inUse(9000) }), seeded, env)?.message ?? '', /^Port 9000 is already in use \(svc-stream\)/)
    assert.equal(portInUse(inUse(3111), config, env)?.exitCode, 1)
  })

  it('leaves other errors alone', () => {
    assert.equal(portInUse(new Error('boom'), config, env), undefined)
    assert.equal(portInUse(Object.assign(new Error('x'), { code: 'EACCES', port: 80 }), config, env), undefined)
  })
})

describe('pathsInside: what a worker at the project root does not watch (issue 21)', () => {
  it('other workers, the data directory and the settings directory inside it; nothing outside it', () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-paths-inside-'))
    for (const dir of ['workers/other', 'src']) mkdirSync(join(root, dir), { recursive: true })
    writeFileSync(
      join(root, 'config.yaml'),
      'data_dir: state\nworkers:\n  - name: configuration\n    config:\n      directory: settings\n  - name: app\n    worker_path: .\n  - name: other\n    worker_path: ./workers/other\n    enabled: false\n',
    )
    const config = loadConfig('config.yaml', { cwd: root, env: {} })
    assert.deepEqual([...pathsInside(config, config.project_root)].sort(), [join(root, 'settings'), join(root, 'state'), join(root, 'workers', 'other')])
    assert.deepEqual(pathsInside(config, join(root, 'workers', 'other')), [])
    rmSync(root, { recursive: true, force: true })
  })
})

describe('underway: when svc loads the built-ins, after the listener accepts (issue 20)', () => {
  const worker = (state: string) => Object.assign(new EventEmitter(), { state }) as unknown as SupervisedWorker

  it('waits until every launched worker has left declared (its process spawned, an install or a failure under way)', async () => {
    const a = worker('declared')
    const b = worker('declared')
    let done = false
    const waiting = underway([a, b], 60_000).then(() => (done = true))
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(done, false)
    a.emit('state', 'starting')
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(done, false, 'one worker is still declared')
    b.emit('state', 'installing')
    await waiting
    assert.equal(done, true)
  })

  it('does not wait for workers already past declared, nor longer than its bound for one that stays', async () => {
    await underway([worker('starting'), worker('failed')], 60_000)
    await underway([], 60_000)
    await underway([worker('declared')], 10)
  })
})

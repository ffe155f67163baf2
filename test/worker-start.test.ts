/**
 * How `svc` starts its workers (issue 20): as soon as the worker listener accepts, while the
 * built-ins still start — a connection accepted then opens its session only once they are up, so
 * its first call reaches a built-in's function — and a worker counts as registered when the engine
 * reports its registration (`Engine.watchRegistrations`), not at the next poll.
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, describe, it } from 'node:test'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type BuiltinWorker, type EngineConfig } from '../runtime/engine/types.ts'
import { inProcessEngine } from '../src/supervisor/engine-view.ts'
import { Orchestrator } from '../src/supervisor/orchestrator.ts'
import { ROOT } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href
const root = mkdtempSync(join(tmpdir(), 'svc-worker-start-'))
const cleanups: Array<() => Promise<unknown> | unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  rmSync(root, { recursive: true, force: true })
})

/** An engine on port 0 with `builtins` only (no listener of a built-in binds a port). */
function engineWith(builtins: BuiltinWorker[] | (() => Promise<BuiltinWorker[]>), name: string): Engine {
  const config: EngineConfig = {
    listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
    registration_namespace_grace_ms: 250,
    internal_invocation_timeout_ms: 30_000,
    data_dir: join(root, name),
    local_workers: [],
    builtins: {},
  }
  const engine = new Engine(config, { log: silentLogger, builtins })
  cleanups.push(() => engine.stop())
  return engine
}

/** A built-in whose start waits for `open()`, then registers `gate::echo`. */
function gatedBuiltin(): { worker: BuiltinWorker; open: () => void } {
  let open!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  return {
    open,
    worker: {
      name: 'gate',
      async start(context) {
        await gate
        context.worker.registerFunction('gate::echo', async (data) => ({ echoed: data }))
      },
      async applySettings() {},
      async stop() {},
    },
  }
}

describe('workers start while the built-ins start (issue 20)', () => {
  it('a connection accepted before the built-ins are up opens once they are: its first call reaches a built-in function', async () => {
    const gate = gatedBuiltin()
    const engine = engineWith([gate.worker], 'early-call')
    let listening!: () => void
    const isListening = new Promise<void>((resolve) => (listening = resolve))
    const started = engine.start({ onListening: () => listening() })
    await isListening

    const frames: Array<Record<string, any>> = []
    let onOpen!: () => void
    let onPong!: () => void
    const opened = new Promise<void>((resolve) => (onOpen = resolve))
    const ponged = new Promise<void>((resolve) => (onPong = resolve))
    const transport = connectWebSocket(engine.workerUrls[0]!, {})
    cleanups.push(() => transport.close())
    transport.setHandlers({
      open: () => onOpen(),
      message: (data) => void frames.push(JSON.parse(String(data))),
      alive: () => onPong(),
      close: () => {},
    })
    await opened
    transport.send(JSON.stringify({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'early' }, action: { type: 'void' } }))
    transport.send(JSON.stringify({ type: 'invokefunction', invocation_id: 'first', function_id: 'gate::echo', data: { n: 1 } }))
    // A ping after the frames: its pong proves the engine has read them (one ordered connection).
    transport.ping()
    await ponged
    gate.open()
    await started
    await waitFor(() => frames.some((f) => f.type === 'invocationresult' && f.invocation_id === 'first'), () => `the call's result; got ${JSON.stringify(frames)}`)
    const result = frames.find((f) => f.type === 'invocationresult' && f.invocation_id === 'first')!
    assert.equal(result.error, undefined, `the first call failed: ${JSON.stringify(result.error)}`)
    assert.deepEqual(result.result, { echoed: { n: 1 } })
    // The session opened (workerregistered) only after the built-ins: it comes before the result.
    assert.ok(frames.findIndex((f) => f.type === 'workerregistered') < frames.indexOf(result))
  })

  it("built-ins given as a loader are loaded once the listener accepts (svc loads their code while its workers start), and their functions are there when start resolves", async () => {
    const gate = gatedBuiltin()
    gate.open()
    let listening = false
    let loadedAfterListening: boolean | undefined
    const engine = engineWith(async () => {
      loadedAfterListening = listening
      return [gate.worker]
    }, 'loader')
    await engine.start({ onListening: () => (listening = true) })
    assert.equal(loadedAfterListening, true, 'the loader ran after onListening')
    assert.deepEqual(await engine.inject({ function_id: 'gate::echo', data: { n: 2 } }), { echoed: { n: 2 } })
  })

  it('a built-ins loader that fails fails the start, and the listener is closed again', async () => {
    const engine = engineWith(() => Promise.reject(new Error('no built-ins here')), 'loader-fails')
    let url: string | undefined
    await assert.rejects(engine.start({ onListening: () => (url = engine.workerUrls[0]) }), /no built-ins here/)
    assert.ok(url, 'it was listening')
    await assert.rejects(fetch(url!.replace(/^ws/, 'http')), 'nothing listens any more')
  })

  it('a worker counts as registered when the engine reports its registration, without waiting for a poll', async () => {
    const engine = engineWith([], 'event')
    await engine.start()
    // Polls far beyond the test's timeout: only the engine's report can make the worker running.
    const orchestrator = new Orchestrator({
      engine: inProcessEngine(engine, engine.workerUrls[0]!, silentLogger),
      log: silentLogger,
      timings: { registrationPollMs: 3_600_000, registrationFallbackPollMs: 3_600_000 },
    })
    cleanups.push(() => orchestrator.stopAll())
    const dir = join(root, 'workers', 'evented')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: evented\nscripts:\n  start: node index.mjs\n')
    writeFileSync(
      join(dir, 'index.mjs'),
      `import { registerWorker } from ${JSON.stringify(SDK)}\n` +
        `const svc = registerWorker(undefined, { otel: { enabled: false } })\n` +
        `svc.registerFunction('evented::ping', () => 'pong')\n`,
    )
    const worker = orchestrator.launch({ name: 'evented', directory: dir, namespace: 'default', projectRoot: root, envBase: 'engine', env: {}, watch: false, noInstall: true })
    await worker.start()
    await worker.waitUntilRunning(60_000)
    assert.equal(worker.state, 'running')
    assert.equal(await engine.inject({ function_id: 'evented::ping', data: {} }), 'pong')
  })
})

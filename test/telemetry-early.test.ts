/**
 * Telemetry a worker sends before the engine may read it is kept, not dropped (protocol.md §10.2,
 * issue 20: `svc` starts the workers while the built-ins start). An SDK flushes what it queued
 * while disconnected as soon as its `/otel` socket opens; frames that arrive while the built-ins
 * (the observability worker among them) are still starting, or before the listener's auth
 * function answered, are stored once the engine may take them. Too many bytes waiting close the
 * link with 1008, as a session's queue does.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import WebSocket from 'ws'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type EngineConfig, type ListenerConfig } from '../runtime/engine/types.ts'
import { createBuiltins } from '../runtime/workers/index.ts'
import { RawWorker } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

const dirs: string[] = []
const engines: Engine[] = []
after(async () => {
  await Promise.all(engines.map((e) => e.stop()))
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })))
})

/**
 * An engine whose built-ins start only when `release()` is called; `listening` resolves once its
 * listeners accept. Only the configuration and observability workers among the built-ins: the
 * latter is what takes the frames.
 */
async function gatedEngine(listeners: Array<Partial<ListenerConfig>> = [{}]) {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-early-'))
  dirs.push(dataDir)
  const config: EngineConfig = {
    listeners: listeners.map((l) => ({ ...LISTENER_DEFAULTS, port: 0, ...l })),
    registration_namespace_grace_ms: 30,
    internal_invocation_timeout_ms: 30_000,
    data_dir: dataDir,
    local_workers: [],
    builtins: { 'svc-observability': { enabled: true, config: { store: 'memory' } } },
  }
  let release!: () => void
  const gate = new Promise<void>((resolve) => (release = resolve))
  const engine = new Engine(config, { log: silentLogger, builtins: async () => (await gate, createBuiltins(config).filter((b) => b.name === 'configuration' || b.name === 'svc-observability')) })
  engines.push(engine)
  let listening!: () => void
  const accepting = new Promise<void>((resolve) => (listening = resolve))
  const started = engine.start({ onListening: () => listening() })
  await accepting
  return { engine, release, started, urls: engine.workerUrls }
}

/** One OTLP/JSON `LOGS` frame with one record whose body is `body`. */
function logsFrame(body: string, padding = 0): Buffer {
  const logs = { resourceLogs: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'early-worker' } }] }, scopeLogs: [{ logRecords: [{ timeUnixNano: String(BigInt(Date.now()) * 1_000_000n), severityNumber: 9, body: { stringValue: body }, attributes: [{ key: 'pad', value: { stringValue: 'x'.repeat(padding) } }] }] }] }] }
  return Buffer.concat([Buffer.from('LOGS'), Buffer.from(JSON.stringify(logs))])
}

async function openOtel(url: string, headers: Record<string, string> = {}) {
  const socket = new WebSocket(`${url}/otel`, { headers })
  const texts: string[] = []
  let closeCode: number | undefined
  socket.on('message', (data) => texts.push(data.toString()))
  socket.on('close', (code) => (closeCode = code))
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
  /** Resolves once the engine has read everything sent before (it answers pings in order). */
  const read = async () => {
    const before = texts.filter((t) => t.includes('pong')).length
    socket.send('{"type":"ping"}')
    await waitFor(() => texts.filter((t) => t.includes('pong')).length > before, 'the pong')
  }
  return { socket, read, closeCode: () => closeCode }
}

const bodies = async (engine: Engine) => ((await engine.inject({ function_id: 'engine::logs::list', data: { limit: 1000 } })) as { logs: Array<{ body: unknown }> }).logs.map((l) => l.body)

describe('/otel frames sent before the engine may read them', () => {
  it('stores the log records a worker sent while the built-ins were still starting', async () => {
    const { engine, release, started, urls } = await gatedEngine()
    const otel = await openOtel(urls[0]!)
    otel.socket.send(logsFrame('early one'))
    otel.socket.send(logsFrame('early two'))
    await otel.read()
    release()
    await started
    await waitFor(async () => (await bodies(engine)).includes('early two'), 'the early records stored')
    otel.socket.send(logsFrame('after start'))
    await waitFor(async () => (await bodies(engine)).includes('after start'), 'the later record stored')
    const seen = (await bodies(engine)).filter((b) => typeof b === 'string' && /early|after/.test(b))
    assert.deepEqual(seen.slice().sort(), ['after start', 'early one', 'early two'])
    otel.socket.close()
  })

  it('closes a link with 1008 that sends more than max_inbound_bytes before the engine may read it; the engine keeps serving', async () => {
    const { engine, release, started, urls } = await gatedEngine([{ max_inbound_bytes: 100_000 }])
    const flood = await openOtel(urls[0]!)
    for (let i = 0; i < 4; i++) flood.socket.send(logsFrame(`flood ${i}`, 40_000))
    await waitFor(() => flood.closeCode() !== undefined, 'the flooding link closed')
    assert.equal(flood.closeCode(), 1008)
    release()
    await started
    const fine = await openOtel(urls[0]!)
    fine.socket.send(logsFrame('fine'))
    await waitFor(async () => (await bodies(engine)).includes('fine'), 'a later link is served')
    assert.ok(!(await bodies(engine)).some((b) => typeof b === 'string' && b.startsWith('flood')), 'what the refused link sent is not stored')
    fine.socket.close()
  })

  it('stores records sent before the auth function answered, and none of a refused link', async () => {
    const { engine, release, started, urls } = await gatedEngine([{}, { rbac: { auth_function_id: 'gw::auth', expose_functions: [] } }])
    release()
    await started
    const gateway = await RawWorker.connect(urls[0]!, { announce: { name: 'gateway' } })
    let answer!: () => void
    const answered = new Promise<void>((resolve) => (answer = resolve))
    gateway.serve('gw::auth', async (input: { headers: Record<string, string> }) => {
      await answered
      if (input.headers['x-role'] === 'refuse') throw Object.assign(new Error('invalid token'), { code: 'DENIED' })
      return {}
    })
    await waitFor(async () => ((await engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string }> }).functions.some((f) => f.function_id === 'gw::auth'), 'the auth function registered')
    const accepted = await openOtel(urls[1]!, { 'x-role': 'user' })
    const refused = await openOtel(urls[1]!, { 'x-role': 'refuse' })
    accepted.socket.send(logsFrame('before auth'))
    refused.socket.send(logsFrame('from a refused link'))
    await accepted.read()
    answer()
    await waitFor(async () => (await bodies(engine)).includes('before auth'), 'the record sent before the auth result')
    await waitFor(() => refused.closeCode() !== undefined, 'the refused link closed')
    assert.equal(refused.closeCode(), 1008)
    assert.ok(!(await bodies(engine)).includes('from a refused link'))
    accepted.socket.close()
    await gateway.close()
  })
})

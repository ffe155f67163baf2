/**
 * The cross-SDK conformance suite (issue 18; the driver protocol is test/conformance/README.md):
 * every SDK's conformance worker runs against one real engine (the CLI, free ports), and the same
 * scenarios are checked for each — sync, void and enqueue calls, not-found, handler errors with
 * stacktrace, timeouts, two replicas, HTTP GET/POST with path and query params, state operations
 * and a state trigger, a custom trigger type across two workers of different SDKs,
 * `engine::functions::list`, channels between SDKs and against raw ends, and re-registration after
 * `kill -9` of the engine and its restart on the same port. The caller is svc-sdk (Node).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { InvocationError, registerWorker, type ChannelReader, type ChannelWriter, type StreamChannelRef, type SvcClient } from 'svc-sdk'
import { ChannelSocket } from './support/channel-client.ts'
import { ROOT, startEngineProcess, tempProject, type RunningEngine } from './support/processes.ts'
import { svcPython } from './support/python.ts'
import { rustConformanceWorker } from './support/rust.ts'
import { waitFor } from './support/wait.ts'

interface Sdk {
  name: string
  prefix: string
  /** The command that runs this SDK's conformance worker. */
  command(): Promise<{ cmd: string; args: string[] }>
}

/** Every SDK under test; a new SDK adds its worker here (test/conformance/README.md). */
const SDKS: Sdk[] = [
  { name: 'node', prefix: 'conf-node', command: async () => ({ cmd: process.execPath, args: [join(ROOT, 'test/conformance/workers/node/worker.ts')] }) },
  { name: 'python', prefix: 'conf-python', command: async () => ({ cmd: await svcPython(), args: [join(ROOT, 'packages/sdk-python/conformance/worker.py')] }) },
  { name: 'rust', prefix: 'conf-rust', command: async () => ({ cmd: await rustConformanceWorker(), args: [] }) },
]

const BASE_FUNCTIONS = ['bind', 'bindings', 'call', 'echo', 'events', 'fail', 'fire', 'http', 'note', 'on-tick', 'sleep', 'state-event', 'whoami']
const CHANNEL_FUNCTIONS = ['channel-read', 'channel-write']
const QUEUE_YAML = `  - name: queue
    config:
      queue_configs:
        jobs:
          max_retries: 1
          backoff_ms: 50
`

interface Worker {
  sdk: Sdk
  replica: string
  child: ChildProcess
  capabilities: string[]
  stderr: string[]
}

async function launch(sdk: Sdk, replica: string, engineUrl: string): Promise<Worker> {
  const { cmd, args } = await sdk.command()
  const child = spawn(cmd, args, {
    env: { ...process.env, SVC_URL: engineUrl, CONF_PREFIX: sdk.prefix, CONF_WORKER: replica, CONF_RECONNECT_MAX_MS: '500', OTEL_ENABLED: 'false' },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  const stderr: string[] = []
  child.stderr!.on('data', (d) => stderr.push(String(d)))
  const ready = await new Promise<{ capabilities: string[] }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${sdk.name} worker not ready in 60 s:\n${stderr.join('')}`)), 60_000)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const event = JSON.parse(line)
        if (event.ready === true) {
          clearTimeout(timer)
          resolve(event)
        }
      } catch {
        /* not the ready line */
      }
    })
    child.once('exit', (code) => reject(new Error(`${sdk.name} worker exited with ${code}:\n${stderr.join('')}`)))
  })
  return { sdk, replica, child, capabilities: ready.capabilities, stderr }
}

async function stopWorker(w: Worker): Promise<void> {
  if (w.child.exitCode !== null || w.child.signalCode !== null) return
  const exited = new Promise((resolve) => w.child.once('exit', resolve))
  w.child.stdin!.end()
  const timer = setTimeout(() => w.child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

function configYaml(port: number): string {
  return `workers:\n  - name: svc-worker-manager\n    config:\n      port: ${port}\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n${QUEUE_YAML}`
}

function functionsOf(w: Worker): string[] {
  return [...BASE_FUNCTIONS, ...(w.capabilities.includes('channels') ? CHANNEL_FUNCTIONS : [])].map((f) => `${w.sdk.prefix}::${f}`).sort()
}

type Item = { text: string } | { binary_hex: string }

/** Consecutive binary items joined: SDKs may split or join binary frames. */
function normalise(items: Item[]): Item[] {
  const out: Item[] = []
  for (const item of items) {
    const last = out.at(-1)
    if ('binary_hex' in item && last !== undefined && 'binary_hex' in last) last.binary_hex += item.binary_hex
    else out.push({ ...item })
  }
  return out
}

describe('conformance of every SDK against one engine', () => {
  let project: string
  let engine: RunningEngine
  let client: SvcClient
  const workers = new Map<string, Worker>()

  const call = <T = any>(function_id: string, payload: unknown, extra: Record<string, unknown> = {}): Promise<T> =>
    client.trigger({ function_id, payload, ...extra } as never) as Promise<T>
  const listed = async (prefix: string): Promise<string[]> =>
    ((await call<{ functions: Array<{ function_id: string }> }>('engine::functions::list', { prefix: `${prefix}::` })).functions).map((f) => f.function_id).sort()

  async function allRegistered(): Promise<void> {
    for (const w of workers.values()) {
      await waitFor(async () => JSON.stringify(await listed(w.sdk.prefix)) === JSON.stringify(functionsOf(w)), 'JSON.stringify(await listed(w.sdk.prefix)) === JSON.stringify(functionsOf(w))', 30_000)
    }
  }

  before(async () => {
    project = await tempProject()
    await writeFile(join(project, 'config.yaml'), configYaml(0))
    engine = await startEngineProcess(project)
    client = registerWorker(engine.engineUrl, { workerName: 'conformance-driver', otel: { enabled: false }, reconnectionConfig: { initialDelayMs: 100, maxDelayMs: 500 } })
    for (const sdk of SDKS) workers.set(sdk.name, await launch(sdk, 'a', engine.engineUrl))
    await allRegistered()
  }, { timeout: 600_000 })

  after(async () => {
    for (const w of workers.values()) await stopWorker(w)
    await client?.shutdown()
    await engine?.stop()
    await rm(project, { recursive: true, force: true })
  })

  for (const sdk of SDKS) {
    const P = sdk.prefix
    describe(`${sdk.name} SDK`, () => {
      it('answers synchronous calls with the payload and metadata, and makes sync, void and enqueue calls', async () => {
        assert.deepEqual(await call(`${P}::echo`, { a: [1, 'é'] }, { metadata: { m: 1 } }), { data: { a: [1, 'é'] }, metadata: { m: 1 } })
        assert.deepEqual(await call(`${P}::echo`, null), { data: null, metadata: null })
        const list = await call(`${P}::call`, { function_id: 'engine::functions::list', payload: { prefix: `${P}::` } })
        assert.equal(list.ok, true)
        assert.deepEqual(list.result.functions.map((f: { function_id: string }) => f.function_id).sort(), functionsOf(workers.get(sdk.name)!))
        assert.deepEqual(await call(`${P}::call`, { function_id: `${P}::note`, payload: { via: 'void' }, action: { type: 'void' } }), { ok: true, result: null })
        const enqueued = await call(`${P}::call`, { function_id: `${P}::note`, payload: { via: 'enqueue' }, action: { type: 'enqueue', queue: 'jobs' } })
        assert.equal(enqueued.ok, true, JSON.stringify(enqueued))
        assert.match(enqueued.result.messageReceiptId, /^[0-9a-f-]{36}$/)
        await waitFor(async () => (await call(`${P}::events`, {})).notes.length === 2, '(await call(`${P}::events`, {})).notes.length === 2', 10_000)
        assert.deepEqual(((await call(`${P}::events`, {})).notes as unknown[]).map((n) => JSON.stringify(n)).sort(), ['{"via":"enqueue"}', '{"via":"void"}'])
      })

      it('reports function_not_found, handler errors with their code and stacktrace, and timeouts', async () => {
        const missing = await call(`${P}::call`, { function_id: 'nope::missing', payload: {} })
        assert.deepEqual([missing.ok, missing.code, missing.message], [false, 'function_not_found', 'Function nope::missing not found'])
        await assert.rejects(call(`${P}::fail`, { code: 'card_declined', message: 'declined' }), (err: unknown) => {
          assert.ok(err instanceof InvocationError)
          assert.deepEqual([err.code, err.detail], ['card_declined', 'declined'])
          assert.ok(typeof err.stacktrace === 'string' && err.stacktrace.length > 0, 'a stacktrace')
          return true
        })
        assert.deepEqual(await call(`${P}::call`, { function_id: `${P}::fail`, payload: { code: 'E_X', message: 'boom' } }), { ok: false, code: 'E_X', message: 'boom', stacktrace: true })
        const late = await call(`${P}::call`, { function_id: `${P}::sleep`, payload: { ms: 3000 }, timeout_ms: 200 })
        assert.deepEqual(late, { ok: false, code: 'TIMEOUT', message: 'invocation timed out after 200ms', stacktrace: false })
      })

      it('shares calls between two replicas', async () => {
        const b = await launch(sdk, 'b', engine.engineUrl)
        try {
          await waitFor(async () => (await call('engine::functions::info', { function_id: `${P}::whoami` })).replica_count === 2, "(await call('engine::functions::info', { function_id: `${P}::whoami` })).replica_count === 2", 20_000)
          const seen = new Set<string>()
          for (let i = 0; i < 40 && seen.size < 2; i++) seen.add((await call(`${P}::whoami`, {})).worker)
          assert.deepEqual([...seen].sort(), ['a', 'b'])
        } finally {
          await stopWorker(b)
        }
        await waitFor(async () => (await call('engine::functions::info', { function_id: `${P}::whoami` })).replica_count === 1, "(await call('engine::functions::info', { function_id: `${P}::whoami` })).replica_count === 1", 20_000)
      })

      it('serves HTTP GET and POST with path and query params', async () => {
        const url = `${engine.httpUrl}/conf/${sdk.name}/items/42?q=a&q=b&x=1`
        const get = await fetch(url)
        assert.equal(get.status, 200)
        assert.deepEqual(await get.json(), { method: 'GET', path_params: { id: '42' }, query_params: { q: ['a', 'b'], x: '1' }, body: null, sdk: sdk.name })
        const post = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ hello: 'wörld' }) })
        assert.equal(post.status, 200)
        assert.deepEqual(((await post.json()) as { body: unknown }).body, { hello: 'wörld' })
      })

      it('gets, sets and updates state, and its state trigger records the changes', async () => {
        assert.equal((await call(`${P}::call`, { function_id: 'state::set', payload: { scope: P, key: 'k1', value: { n: 1 } } })).ok, true)
        assert.deepEqual(await call(`${P}::call`, { function_id: 'state::get', payload: { scope: P, key: 'k1' } }), { ok: true, result: { n: 1 } })
        const updated = await call(`${P}::call`, { function_id: 'state::update', payload: { scope: P, key: 'k1', ops: [{ type: 'increment', path: 'n', by: 2 }] } })
        assert.equal(updated.ok, true, JSON.stringify(updated))
        assert.deepEqual(updated.result.new_value, { n: 3 })
        await waitFor(async () => (await call(`${P}::events`, {})).state.length >= 2, '(await call(`${P}::events`, {})).state.length >= 2', 10_000)
        const state = (await call(`${P}::events`, {})).state as Array<{ event_type: string; key: string; new_value: unknown }>
        assert.deepEqual(state.map((e) => [e.event_type, e.key, e.new_value]), [['state:created', 'k1', { n: 1 }], ['state:updated', 'k1', { n: 3 }]])
      })
    })
  }

  const pairs = SDKS.length > 1 ? SDKS.flatMap((x) => SDKS.filter((y) => y !== x).map((y) => [x, y] as const)) : SDKS.map((x) => [x, x] as const)

  for (const [consumer, provider] of pairs) {
    it(`fires a ${provider.name} worker's trigger type into a ${consumer.name} worker's function`, async () => {
      const tag = `${consumer.name}->${provider.name}`
      const { id } = await call(`${consumer.prefix}::bind`, { trigger_type: `${provider.prefix}-ticker`, config: { tag }, metadata: { pair: tag } })
      await waitFor(async () => (await call(`${provider.prefix}::bindings`, {})).bindings.some((b: { id: string }) => b.id === id), '(await call(`${provider.prefix}::bindings`, {})).bindings.some((b: { id: string }) => b.id === id)', 10_000)
      const binding = (await call(`${provider.prefix}::bindings`, {})).bindings.find((b: { id: string }) => b.id === id)
      assert.deepEqual(binding, { id, function_id: `${consumer.prefix}::on-tick`, config: { tag }, metadata: { pair: tag } })
      assert.ok((await call(`${provider.prefix}::fire`, { payload: { tick: tag } })).fired >= 1)
      await waitFor(async () => (await call(`${consumer.prefix}::events`, {})).ticks.some((t: { payload: { tick: string } }) => t.payload.tick === tag), 'the condition', 10_000)
      const tick = (await call(`${consumer.prefix}::events`, {})).ticks.find((t: { payload: { tick: string } }) => t.payload.tick === tag)
      assert.deepEqual(tick, { payload: { tick: tag }, metadata: { pair: tag } })
    })
  }

  const big = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251)).toString('hex')
  const ITEMS: Item[] = [{ text: 'hello' }, { binary_hex: '00ff10' }, { binary_hex: big }, { text: 'bye ✓' }]

  /** A new channel's two refs as plain JSON (the driver's svc-sdk hands a result's refs over as live ends). */
  const channel = async (): Promise<{ writer: StreamChannelRef; reader: StreamChannelRef }> => {
    const ends = await call<{ writer: ChannelWriter; reader: ChannelReader }>('engine::channels::create', { buffer_size: 4 })
    return { writer: ends.writer.toJSON(), reader: ends.reader.toJSON() }
  }

  /** Every SDK in SDKS has channels now: a worker that stops announcing them fails, not skips. */
  const hasChannels = (...sdks: Sdk[]): void => {
    for (const sdk of sdks) assert.ok(workers.get(sdk.name)!.capabilities.includes('channels'), `the ${sdk.name} worker does not announce the "channels" capability`)
  }

  for (const writer of SDKS) {
    for (const reader of SDKS) {
      it(`carries text and binary over a channel from a ${writer.name} worker to a ${reader.name} worker`, async () => {
        hasChannels(writer, reader)
        const ch = await channel()
        const read = call(`${reader.prefix}::channel-read`, { reader: ch.reader })
        assert.deepEqual(await call(`${writer.prefix}::channel-write`, { writer: ch.writer, items: ITEMS }), { written: ITEMS.length })
        assert.deepEqual(normalise((await read).items), normalise(ITEMS))
      })
    }
    it(`carries text and binary over a channel between a ${writer.name} worker and raw WebSocket ends`, async () => {
      hasChannels(writer)
      // The SDK writes, a raw end reads.
      const out = await channel()
      const rawReader = await ChannelSocket.open(engine.engineUrl, out.reader)
      await call(`${writer.prefix}::channel-write`, { writer: out.writer, items: ITEMS })
      assert.equal((await rawReader.closed).code, 1000)
      const received = rawReader.items.map((i): Item => (typeof i === 'string' ? { text: i } : { binary_hex: i.toString('hex') }))
      assert.deepEqual(normalise(received), normalise(ITEMS))
      // A raw end writes, the SDK reads.
      const back = await channel()
      const read = call(`${writer.prefix}::channel-read`, { reader: back.reader })
      const rawWriter = await ChannelSocket.open(engine.engineUrl, back.writer)
      for (const item of ITEMS) await rawWriter.sendWritten('text' in item ? item.text : Buffer.from(item.binary_hex, 'hex'))
      rawWriter.ws.close(1000)
      assert.deepEqual(normalise((await read).items), normalise(ITEMS))
    })
  }

  it('re-registers every worker after kill -9 of the engine and its restart on the same port', async () => {
    const port = Number(new URL(engine.engineUrl).port)
    await engine.kill9()
    await writeFile(join(project, 'config.yaml'), configYaml(port))
    engine = await startEngineProcess(project)
    assert.equal(engine.engineUrl, `ws://127.0.0.1:${port}`)
    await allRegistered()
    for (const sdk of SDKS) {
      assert.deepEqual(await call(`${sdk.prefix}::echo`, 'again'), { data: 'again', metadata: null })
      // Its triggers came back with it: the HTTP route and the state trigger.
      await waitFor(async () => (await fetch(`${engine.httpUrl}/conf/${sdk.name}/items/7`)).status === 200, '(await fetch(`${engine.httpUrl}/conf/${sdk.name}/items/7`)).status === 200', 20_000)
      assert.equal((await call(`${sdk.prefix}::call`, { function_id: 'state::set', payload: { scope: sdk.prefix, key: 'after-restart', value: 1 } })).ok, true)
      await waitFor(async () => (await call(`${sdk.prefix}::events`, {})).state.some((e: { key: string }) => e.key === 'after-restart'), "(await call(`${sdk.prefix}::events`, {})).state.some((e: { key: string }) => e.key === 'after-restart')", 10_000)
    }
    // And the bindings to other workers' trigger types.
    for (const [consumer, provider] of pairs) {
      const tag = `${consumer.name}->${provider.name}`
      await waitFor(async () => (await call(`${provider.prefix}::bindings`, {})).bindings.some((b: { config: { tag?: string } }) => b.config.tag === tag), 'the condition', 20_000)
      await call(`${provider.prefix}::fire`, { payload: { tick: `${tag} again` } })
      await waitFor(async () => (await call(`${consumer.prefix}::events`, {})).ticks.some((t: { payload: { tick: string } }) => t.payload.tick === `${tag} again`), 'the condition', 10_000)
    }
  })
})

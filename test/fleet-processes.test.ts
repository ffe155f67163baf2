/**
 * Three engine processes (`svc start`) on one nats-server and one redis-server, with the default
 * heartbeat timings (issue 19 §3): a worker on each, calls across them, state written through one
 * engine read through another, and `kill -9` of an engine under load — its calls in flight end with
 * `invocation_stopped` instead of hanging, its functions leave the fleet, the replica on another
 * engine serves the function again, and no acknowledged state write is lost.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { startTestNats, type TestNats } from './support/nats.ts'
import { startEngineProcess, type RunningEngine } from './support/processes.ts'
import { startTestRedis, type TestRedis } from './support/redis.ts'
import { waitFor } from './support/wait.ts'

describe('a fleet of three engine processes', () => {
  let nats: TestNats
  let redis: TestRedis
  let project: string
  const engines: RunningEngine[] = []
  const workers: SvcClient[] = []
  /** A worker of engine `engine`; `fallback` engines are further addresses it rotates to (sdk: several addresses). */
  const worker = (engine: number, name: string, ...fallback: number[]): SvcClient => {
    const addresses = [engine, ...fallback].map((i) => engines[i]!.engineUrl)
    const w = registerWorker(addresses.length === 1 ? addresses[0]! : addresses, { workerName: name, otel: { enabled: false }, reconnectionConfig: { initialDelayMs: 100, maxDelayMs: 500 } })
    workers.push(w)
    return w
  }
  const listedOn = async (caller: SvcClient, functionId: string, replicas: number) =>
    waitFor(async () => {
      const list = (await caller.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string; replica_count: number }> }
      return list.functions.some((f) => f.function_id === functionId && f.replica_count === replicas)
    }, 'the condition', 15_000)

  before(async () => {
    ;[nats, redis] = await Promise.all([startTestNats(), startTestRedis()])
    project = await mkdtemp(join(tmpdir(), 'svc-fleet-'))
    const redisAdapter = `adapter:\n        name: redis\n        config:\n          url: ${redis.url}\n`
    await writeFile(
      join(project, 'config.yaml'),
      `fleet:\n  name: e2e\n  nats: ${nats.url}\nworkers:\n  - name: svc-worker-manager\n    config:\n      port: 0\n  - name: svc-http\n    config:\n      port: 0\n  - name: svc-stream\n    config:\n      port: 0\n  - name: svc-state\n    config:\n      ${redisAdapter}`,
    )
    for (const name of ['e1', 'e2', 'e3']) {
      engines.push(await startEngineProcess(project, ['--data-dir', join(project, `.data-${name}`), '--no-workers'], { SVC_FLEET_ENGINE: name }))
    }
  })
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()))
    await Promise.all(engines.map((e) => e.stop()))
    await Promise.all([nats.close(), redis.close()])
    await rm(project, { recursive: true, force: true })
  })

  it('says in the engine_ready event which fleet the engine joined, as which engine', () => {
    const ready = engines[2]!.output.map((line) => {
      try {
        return JSON.parse(line) as { event?: string; fleet?: { name: string; engine: string; engines: number; status: string } }
      } catch {
        return {}
      }
    }).find((e) => e.event === 'engine_ready')
    assert.equal(ready?.fleet?.name, 'e2e')
    assert.equal(ready?.fleet?.engine, 'e3')
    assert.equal(ready?.fleet?.status, 'healthy')
  })

  it('calls functions across engine processes, with a worker on each', async () => {
    for (const [i, name] of ['e1', 'e2', 'e3'].entries()) worker(i, `w-${name}`).registerFunction(`hello::${name}`, (input: { from: string }) => `${name} greets ${input.from}`)
    const caller = worker(0, 'caller')
    for (const name of ['e1', 'e2', 'e3']) await listedOn(caller, `hello::${name}`, 1)
    for (const name of ['e1', 'e2', 'e3']) assert.equal(await caller.trigger({ function_id: `hello::${name}`, payload: { from: 'e1' } }), `${name} greets e1`)
    const workersList = (await caller.trigger({ function_id: 'engine::workers::list', payload: {} })) as { workers: Array<{ name: string; engine?: string }> }
    assert.deepEqual(
      workersList.workers.filter((w) => w.name?.startsWith('w-')).map((w) => [w.name, w.engine]).sort(),
      [['w-e1', 'e1'], ['w-e2', 'e2'], ['w-e3', 'e3']],
    )
  })

  it('survives kill -9 of an engine under load: calls in flight end with invocation_stopped, the other replica serves, state is kept', async () => {
    const caller = worker(0, 'load')
    // A replica on e2 and one on e3; e3's answers slowly so that calls are in flight when it dies.
    worker(1, 'stock-e2').registerFunction('stock::reserve', () => 'e2')
    // The e3 worker knows e2's address too: it moves there when e3 dies.
    const movable = worker(2, 'stock-e3', 1)
    movable.registerFunction('stock::reserve', () => new Promise((resolve) => setTimeout(() => resolve('moved'), 200)))
    await listedOn(caller, 'stock::reserve', 2)
    // Acknowledged writes through e3, before it dies.
    const writer = worker(2, 'writer')
    for (let i = 0; i < 50; i++) await writer.trigger({ function_id: 'state::set', payload: { scope: 'fleet-e2e', key: `k${i}`, value: i } })

    const outcomes: string[] = []
    let stop = false
    const load = (async () => {
      const inFlight = new Set<Promise<void>>()
      while (!stop) {
        const call = caller.trigger({ function_id: 'stock::reserve', payload: {} }).then(
          (served) => void outcomes.push(String(served)),
          (err: { code?: string }) => void outcomes.push(`error:${err.code}`),
        )
        inFlight.add(call)
        void call.finally(() => inFlight.delete(call))
        if (inFlight.size >= 16) await Promise.race(inFlight)
      }
      await Promise.all(inFlight)
    })()
    await waitFor(() => outcomes.includes('moved') && outcomes.includes('e2'), "outcomes.includes('moved') && outcomes.includes('e2')", 15_000)
    const killedAt = performance.now()
    await engines[2]!.kill9()
    const before = outcomes.length
    // Calls keep being answered once the fleet dropped e3; the moved worker serves again from e2.
    await waitFor(() => outcomes.slice(before).filter((o) => o === 'e2').length >= 200 && outcomes.slice(before).includes('moved'), "outcomes.slice(before).filter((o) => o === 'e2').length >= 200 && outcomes.slice(before).includes('moved')", 30_000)
    stop = true
    await load
    const errors = outcomes.filter((o) => o.startsWith('error:'))
    assert.ok(errors.every((e) => e === 'error:invocation_stopped'), `only invocation_stopped: ${[...new Set(errors)].join(', ')}`)
    assert.equal(movable.getAddress(), engines[1]!.engineUrl, 'the worker rotated to e2')
    const list = (await caller.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string; replica_count: number; engines?: string[] }> }
    assert.deepEqual(list.functions.find((f) => f.function_id === 'stock::reserve')?.engines, ['e2'])
    const workersList = (await caller.trigger({ function_id: 'engine::workers::list', payload: {} })) as { workers: Array<{ name: string; engine?: string }> }
    assert.ok(!workersList.workers.some((w) => w.engine === 'e3'), 'e3 left the fleet')
    assert.equal(workersList.workers.find((w) => w.name === 'stock-e3')?.engine, 'e2')
    // Every acknowledged write through e3 is read back through e1 and e2.
    for (const reader of [caller, worker(1, 'reader')]) {
      for (let i = 0; i < 50; i++) assert.equal(await reader.trigger({ function_id: 'state::get', payload: { scope: 'fleet-e2e', key: `k${i}` } }), i)
    }
    console.log(`# kill -9 of e3: ${errors.length} calls in flight ended with invocation_stopped; the fleet served again ${Math.round(performance.now() - killedAt)} ms after the kill (200 calls later)`)
  })
})

/**
 * A worker given the addresses of several engines (issue 19 §3), against real engines over real
 * sockets: it skips a dead address, fails over to the next engine when its engine stops — at once,
 * not after the backoff — with its functions callable there again and channel ends connecting to
 * the engine it is on; and `SVC_URL` lists.
 */
import assert from 'node:assert/strict'
import { createServer, type AddressInfo } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { displayAddress } from 'svc-protocol/client'
import { registerWorker } from '../src/index.ts'
import type { ConnectionState } from '../src/types.ts'
import { makeClient } from './support/client.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function engine(t: TestContext): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [] })
  t.after(() => e.stop())
  return e
}

/** A ws: address on which nothing listens. */
async function deadAddress(): Promise<string> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((r) => server.close(() => r()))
  return `ws://127.0.0.1:${port}/?token=dead-secret`
}

/** Calls `functionId` through `caller` until the engine has it (registrations are replayed asynchronously). */
async function callWhenThere(caller: { trigger: (r: { function_id: string; payload: unknown }) => Promise<unknown> }, functionId: string, payload: unknown): Promise<unknown> {
  let result: unknown
  await waitFor(async () => {
    try {
      result = await caller.trigger({ function_id: functionId, payload })
      return true
    } catch (err) {
      if ((err as { code?: string }).code === 'function_not_found') return false
      throw err
    }
  }, 'the condition', 20_000)
  return result
}

// A backoff no test could wait out: reaching the live engine proves no backoff was waited.
const NO_BACKOFF_WAIT = { initialDelayMs: 600_000, maxDelayMs: 600_000, jitterFactor: 0 }

describe('several engine addresses (issue 19 §3)', () => {
  it('a worker given [dead address, live engine] connects to the live one and serves there', async (t) => {
    const live = await engine(t)
    const dead = await deadAddress()
    const worker = registerWorker([dead, live.url], { workerName: 'fleet-worker', otel: { enabled: false }, reconnectionConfig: NO_BACKOFF_WAIT })
    t.after(() => worker.shutdown())
    const seen: Array<[ConnectionState, string]> = []
    worker.addConnectionStateListener((state, address) => seen.push([state, address]))
    worker.registerFunction('fleet::echo', (input: unknown) => ({ from: 'worker', input }))
    await waitFor(() => worker.getConnectionState() === 'connected', "worker.getConnectionState() === 'connected'", 20_000)
    assert.equal(worker.getAddress(), live.url)
    assert.deepEqual(worker.getAddresses(), [dead, live.url])
    assert.deepEqual(seen.at(-1), ['connected', live.url])
    assert.equal(seen[0]![1], dead) // it began with the first address

    const { client: caller } = makeClient(t, live.url, { otel: { enabled: false } })
    assert.deepEqual(await callWhenThere(caller, 'fleet::echo', { n: 1 }), { from: 'worker', input: { n: 1 } })
  })

  it('a worker on engine A fails over to engine B when A stops: its function is callable on B and its channel ends connect to B', async (t) => {
    const a = await startTestEngine({ builtins: [] })
    let aStopped = false
    t.after(() => (aStopped ? undefined : a.stop()))
    const b = await engine(t)
    const warnings: string[] = []
    const { client: worker } = makeClient(t, [a.url, b.url], { otel: { enabled: false }, reconnectionConfig: NO_BACKOFF_WAIT }, { log: { warn: (m) => warnings.push(m) } })
    worker.registerFunction('fleet::where', () => 'served')
    await waitFor(() => worker.getConnectionState() === 'connected', "worker.getConnectionState() === 'connected'", 20_000)
    assert.equal(worker.getAddress(), a.url)
    const { client: onA } = makeClient(t, a.url, { otel: { enabled: false } })
    assert.equal(await callWhenThere(onA, 'fleet::where', null), 'served')

    aStopped = true
    await a.stop()
    await waitFor(() => worker.getConnectionState() === 'connected' && worker.getAddress() === b.url, "worker.getConnectionState() === 'connected' && worker.getAddress() === b.url", 20_000)
    assert.ok(warnings.includes(`connected to ${displayAddress(b.url)} (engine address 2 of 2)`), warnings.join('\n'))

    const { client: onB } = makeClient(t, b.url, { otel: { enabled: false } })
    assert.equal(await callWhenThere(onB, 'fleet::where', null), 'served')

    // A channel made now lives on B: its ends must connect to B, not to the first address.
    const { writer, reader } = await worker.createChannel()
    const read = reader.readAll()
    await writer.write('over B')
    await writer.close()
    assert.equal(Buffer.from(await read).toString(), 'over B')
  })
})

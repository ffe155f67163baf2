/**
 * The client is transport-agnostic: over `memoryConnector` (svc-protocol/transport/memory) it runs
 * the same session against a tiny in-test engine — no socket anywhere — as it does over WebSocket.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, it, type TestContext } from 'node:test'
import { memoryConnector } from 'svc-protocol/transport/memory'
import type { PeerInfo, Transport } from 'svc-protocol/transport'
import { InvocationError, TriggerAction } from '../src/index.ts'
import { WorkerClient, resolveAddress, resolveOptions, type ClientInternals } from '../src/internal.ts'
import type { ConnectionState, InitOptions } from '../src/types.ts'
import { waitFor } from '../../../test/support/wait.ts'

type Frame = { type: string; [key: string]: any }

/**
 * Just enough engine: answers the connection with `workerregistered`, records frames, answers
 * calls to `engine::echo`, and calls every function a worker registers with `{ probe: true }`.
 */
class TinyEngine {
  readonly sessions: Array<{ transport: Transport; info: PeerInfo; frames: Frame[]; closes: number[]; workerId: string; pings: number }> = []
  /** Results of the calls the engine made, by function id. */
  readonly results = new Map<string, Frame>()

  readonly accept = (transport: Transport, info: PeerInfo): void => {
    const session = { transport, info, frames: [] as Frame[], closes: [] as number[], workerId: randomUUID(), pings: 0 }
    this.sessions.push(session)
    transport.setHandlers({
      message: (data) => {
        const frame = JSON.parse(data as string) as Frame
        session.frames.push(frame)
        this.#onFrame(transport, frame)
      },
      close: (code) => session.closes.push(code),
      alive: () => void session.pings++,
    })
    transport.send(JSON.stringify({ type: 'workerregistered', worker_id: session.workerId, reattach_token: randomUUID() }))
  }

  #onFrame(transport: Transport, frame: Frame): void {
    if (frame.type === 'registerfunction') {
      transport.send(
        JSON.stringify({ type: 'invokefunction', invocation_id: randomUUID(), function_id: frame.id, data: { probe: true } }),
      )
    } else if (frame.type === 'invocationresult') {
      this.results.set(frame.function_id, frame)
    } else if (frame.type === 'invokefunction' && frame.function_id === 'engine::echo') {
      transport.send(
        JSON.stringify({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, result: frame.data }),
      )
    }
  }
}

function memoryClient(t: TestContext, engine: TinyEngine, options: InitOptions = {}, internals: ClientInternals = {}) {
  const connector = memoryConnector(engine.accept, { ip: '10.1.2.3' })
  const client = new WorkerClient(
    resolveAddress('ws://engine.local/?token=t1', {}),
    resolveOptions({ workerName: 'memory-worker', ...options }, {}),
    { connector, log: { warn: () => {} }, ...internals },
  )
  const states: ConnectionState[] = []
  client.addConnectionStateListener((s) => states.push(s))
  t.after(() => client.shutdown())
  return { client, states }
}

describe('the client over an in-memory transport', () => {
  it('registers, answers the engine and calls it, with no socket', async (t) => {
    const engine = new TinyEngine()
    const { client, states } = memoryClient(t, engine, { headers: { 'X-Api-Token': 'secret' } })
    client.registerFunction('echo::upper', (input: { probe: boolean }) => ({ seen: input.probe }))

    assert.deepEqual(await client.trigger({ function_id: 'engine::echo', payload: { n: 1 } }), { n: 1 })
    await waitFor(() => engine.results.has('echo::upper'), 'the engine got the result of its call', 5000, 5)

    const session = engine.sessions[0]!
    assert.equal(session.info.ip, '10.1.2.3')
    assert.equal(session.info.headers['x-api-token'], 'secret')
    assert.deepEqual(session.info.query, { token: ['t1'] })
    assert.deepEqual(
      session.frames.slice(0, 2).map((f) => [f.type, f.function_id ?? f.id]),
      [
        ['invokefunction', 'engine::workers::register'],
        ['registerfunction', 'echo::upper'],
      ],
    )
    assert.deepEqual(engine.results.get('echo::upper')?.result, { seen: true })
    assert.equal(client.getWorkerId(), session.workerId)
    assert.deepEqual(states, ['connecting', 'connected'])

    await client.shutdown()
    await waitFor(() => session.closes.length === 1, 'engine side closed', 5000, 5)
    assert.deepEqual(session.closes, [1000])
    assert.equal(client.getConnectionState(), 'disconnected')
  })

  it('queues calls until open, and rejects sent calls with invocation_stopped when the connection drops', async (t) => {
    const engine = new TinyEngine()
    const { client, states } = memoryClient(t, engine, {
      reconnectionConfig: { initialDelayMs: 1, maxDelayMs: 5, jitterFactor: 0 },
    })
    const queued = client.trigger({ function_id: 'engine::echo', payload: 'queued' })
    void client.trigger({ function_id: 'audit::log', payload: 1, action: TriggerAction.Void() })
    assert.equal(await queued, 'queued')
    const stuck = client.trigger({ function_id: 'never::answers', payload: {} })
    await waitFor(() => engine.sessions[0]!.frames.some((f) => f.function_id === 'never::answers'), 'call sent', 5000, 5)
    engine.sessions[0]!.transport.terminate()
    await assert.rejects(stuck, (err: InvocationError) => {
      assert.equal(err.code, 'invocation_stopped')
      assert.equal(err.message, 'invocation_stopped: Invocation stopped: connection to the engine was lost')
      return true
    })
    await waitFor(() => engine.sessions.length === 2 && client.getConnectionState() === 'connected', 'reconnected', 5000, 5)
    assert.equal(await client.trigger({ function_id: 'engine::echo', payload: 2 }), 2)
    assert.deepEqual(states, ['connecting', 'connected', 'reconnecting', 'connecting', 'connected'])
  })

  it('keeps a quiet connection up on pings and pongs alone (keepalive, protocol.md §3.3)', async (t) => {
    const engine = new TinyEngine()
    const { client } = memoryClient(
      t,
      engine,
      { reconnectionConfig: { initialDelayMs: 1, maxDelayMs: 5, jitterFactor: 0 } },
      { timings: { pingIntervalMs: 10, idleTimeoutMs: 40 } },
    )
    await waitFor(() => client.getConnectionState() === 'connected', 'connected', 5000, 5)
    // No frame for three idle timeouts (twelve pings 10 ms apart): the pongs to the client's pings are what keeps it up.
    await waitFor(() => engine.sessions[0]!.pings >= 12, 'twelve pings at the engine')
    assert.equal(engine.sessions.length, 1)
    assert.equal(client.getConnectionState(), 'connected')
  })
})

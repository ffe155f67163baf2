/**
 * The client core (`svc-protocol/client`) on its own: `ClientSession` over the in-memory transport
 * against a tiny in-test engine — no socket, no svc-sdk, nothing from Node in the code under test
 * (neutral.test.ts checks that). The in-memory scenarios of svc-sdk (packages/sdk/test/memory.test.ts)
 * run here against the core, then what only the core has: its hooks (telemetry, materialisation,
 * worker registration), JSON keepalive frames for transports without pings, and hostile engine
 * frames (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import { decodeEngineFrame } from '../../src/codec.ts'
import { memoryConnector } from '../../src/transport/memory.ts'
import type { PeerInfo, Transport } from '../../src/transport/types.ts'
import {
  CALL_ID_FORMAT,
  Channels,
  ClientSession,
  InvocationError,
  TriggerAction,
  type ClientHooks,
  type ClientSessionOptions,
  type ConnectionState,
  type TraceContext,
} from '../../src/client/index.ts'
import { ScriptedTransport } from './support.ts'
import { waitFor } from '../../../../test/support/wait.ts'

type Frame = { type: string; [key: string]: any }

let nextId = 0
const newId = () => `id-${++nextId}`

/**
 * Just enough engine: answers the connection with `workerregistered`, records frames, answers
 * calls to `engine::echo` (and JSON pings unless `silent`), and calls every function a worker
 * registers with `{ probe: true }` (or `probe`).
 */
class TinyEngine {
  readonly sessions: Array<{ transport: Transport; info: PeerInfo; frames: Frame[]; closes: number[]; pings: number; workerId: string }> = []
  /** Results of the calls the engine made, by function id. */
  readonly results = new Map<string, Frame>()
  probe: unknown = { probe: true }
  probeTraceparent: string | undefined = undefined
  silent = false

  readonly accept = (transport: Transport, info: PeerInfo): void => {
    const session = { transport, info, frames: [] as Frame[], closes: [] as number[], pings: 0, workerId: `worker-${this.sessions.length}` }
    this.sessions.push(session)
    transport.setHandlers({
      message: (data) => {
        const frame = JSON.parse(data as string) as Frame
        session.frames.push(frame)
        this.#onFrame(transport, frame)
      },
      close: (code) => session.closes.push(code),
      alive: () => session.pings++,
    })
    transport.send(JSON.stringify({ type: 'workerregistered', worker_id: session.workerId, reattach_token: `token-${session.workerId}` }))
  }

  #onFrame(transport: Transport, frame: Frame): void {
    if (frame.type === 'registerfunction') {
      const call: Frame = { type: 'invokefunction', invocation_id: `probe-${frame.id}`, function_id: frame.id, data: this.probe }
      if (this.probeTraceparent !== undefined) call.traceparent = this.probeTraceparent
      transport.send(JSON.stringify(call))
    } else if (frame.type === 'invocationresult') {
      this.results.set(frame.function_id, frame)
    } else if (frame.type === 'invokefunction' && frame.function_id === 'engine::echo') {
      transport.send(JSON.stringify({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, result: frame.data }))
    } else if (frame.type === 'ping' && !this.silent) {
      transport.send('{"type":"pong"}')
    }
  }
}

function session<Scope = unknown>(
  t: TestContext,
  engine: TinyEngine,
  options: Partial<ClientSessionOptions<Scope>> = {},
): { client: ClientSession<Scope>; states: ConnectionState[]; warnings: string[] } {
  const warnings: string[] = []
  const client = new ClientSession<Scope>({
    address: 'ws://engine.local/?token=t1',
    connector: memoryConnector(engine.accept, { ip: '10.1.2.3' }),
    announce: { runtime: 'test', name: 'core-worker' },
    reconnection: { initialDelayMs: 1, maxDelayMs: 5, jitterFactor: 0 },
    log: { warn: (m) => warnings.push(m) },
    hooks: { newId },
    ...options,
  })
  const states: ConnectionState[] = []
  client.addConnectionStateListener((s) => states.push(s))
  t.after(() => client.shutdown())
  return { client, states, warnings }
}

describe('ClientSession over an in-memory transport (the SDK scenarios, against the core)', () => {
  it('registers, answers the engine and calls it, with no socket', async (t) => {
    const engine = new TinyEngine()
    const { client, states } = session(t, engine, { connectOptions: { headers: { 'X-Api-Token': 'secret' } } })
    client.registerFunction('echo::upper', (input: { probe: boolean }) => ({ seen: input.probe }))

    assert.deepEqual(await client.trigger({ function_id: 'engine::echo', payload: { n: 1 } }), { n: 1 })
    await waitFor(() => engine.results.has('echo::upper'), 'the engine got the result of its call', 10_000, 5)

    const s = engine.sessions[0]!
    assert.equal(s.info.ip, '10.1.2.3')
    assert.equal(s.info.headers['x-api-token'], 'secret')
    assert.deepEqual(s.info.query, { token: ['t1'] })
    assert.deepEqual(s.frames[0], { type: 'invokefunction', function_id: 'engine::workers::register', data: { runtime: 'test', name: 'core-worker' }, action: { type: 'void' } })
    assert.deepEqual(s.frames[1], { type: 'registerfunction', id: 'echo::upper' })
    assert.deepEqual(engine.results.get('echo::upper'), { type: 'invocationresult', invocation_id: 'probe-echo::upper', function_id: 'echo::upper', result: { seen: true } })
    assert.equal(client.getWorkerId(), s.workerId)
    assert.deepEqual(states, ['connecting', 'connected'])

    await client.shutdown()
    await waitFor(() => s.closes.length === 1, 'engine side closed', 10_000, 5)
    assert.deepEqual(s.closes, [1000])
    assert.equal(client.getConnectionState(), 'disconnected')
  })

  it('queues calls until open, rejects sent calls with invocation_stopped when the connection drops, and reattaches', async (t) => {
    const engine = new TinyEngine()
    const { client, states } = session(t, engine)
    const queued = client.trigger({ function_id: 'engine::echo', payload: 'queued' })
    void client.trigger({ function_id: 'audit::log', payload: 1, action: TriggerAction.Void() })
    assert.equal(await queued, 'queued')
    const stuck = client.trigger({ function_id: 'never::answers', payload: {} })
    await waitFor(() => engine.sessions[0]!.frames.some((f) => f.function_id === 'never::answers'), 'call sent', 10_000, 5)
    engine.sessions[0]!.transport.terminate()
    await assert.rejects(stuck, (err: InvocationError) => {
      assert.ok(err instanceof InvocationError)
      assert.equal(err.code, 'invocation_stopped')
      assert.equal(err.message, 'invocation_stopped: Invocation stopped: connection to the engine was lost')
      return true
    })
    await waitFor(() => engine.sessions.length === 2 && client.getConnectionState() === 'connected', 'reconnected', 10_000, 5)
    assert.equal(await client.trigger({ function_id: 'engine::echo', payload: 2 }), 2)
    assert.deepEqual(states, ['connecting', 'connected', 'reconnecting', 'connecting', 'connected'])
    assert.deepEqual(engine.sessions[1]!.frames[0], { type: 'reattach', previous_worker_id: 'worker-0', reattach_token: 'token-worker-0' })
  })

  it('keeps a quiet connection up on pings and pongs alone (keepalive, protocol.md §3.3)', async (t) => {
    const engine = new TinyEngine()
    const { client } = session(t, engine, { timings: { pingIntervalMs: 10, idleTimeoutMs: 40 } })
    await waitFor(() => client.getConnectionState() === 'connected', 'connected', 10_000, 5)
    // No frame for three idle timeouts (12 pings): the pongs to the client's pings keep it up.
    await waitFor(() => engine.sessions[0]!.pings >= 12, 'twelve pings', 10_000, 5)
    assert.equal(engine.sessions.length, 1)
    assert.deepEqual(engine.sessions[0]!.closes, [])
    assert.equal(client.getConnectionState(), 'connected')
  })

  it('keeps up with JSON ping frames where the transport has no pings, and reconnects when they go unanswered', async (t) => {
    const engine = new TinyEngine()
    const { client } = session(t, engine, { pingFrames: true, timings: { pingIntervalMs: 10, idleTimeoutMs: 40 } })
    await waitFor(() => engine.sessions[0]?.frames.filter((f) => f.type === 'ping').length === 5, 'five JSON pings answered', 10_000, 5)
    assert.equal(engine.sessions.length, 1)
    engine.silent = true
    await waitFor(() => engine.sessions.length === 2, 'reconnected after the pongs stopped', 10_000, 5)
    assert.equal(client.getLastError()?.message, 'no frame from the engine for 40ms; reconnecting')
  })
})

describe('ClientSession cancellation (issue 21)', () => {
  it('drops a call still queued when its signal aborts, and sends cancelinvocation for one already sent', async (t) => {
    const engine = new TinyEngine()
    const { client } = session(t, engine)
    const early = new AbortController()
    const queued = client.trigger({ function_id: 'never::answers', payload: 'queued', signal: early.signal })
    early.abort('changed my mind') // before the connection opened: the call is still queued
    await assert.rejects(queued, (err: InvocationError) => err.code === 'cancelled' && err.detail === 'Invocation cancelled: changed my mind')
    const late = new AbortController()
    const sent = client.trigger({ function_id: 'never::answers', payload: 'sent', signal: late.signal })
    await waitFor(() => engine.sessions[0]?.frames.some((f) => f.data === 'sent') === true, 'call sent', 10_000, 5)
    const id = engine.sessions[0]!.frames.find((f) => f.data === 'sent')!.invocation_id
    late.abort()
    await assert.rejects(sent, (err: InvocationError) => err.code === 'cancelled' && err.detail === 'Invocation cancelled')
    await waitFor(() => engine.sessions[0]!.frames.some((f) => f.type === 'cancelinvocation'), 'cancel sent', 10_000, 5)
    const frames = engine.sessions[0]!.frames
    assert.deepEqual(frames.filter((f) => f.type === 'cancelinvocation'), [{ type: 'cancelinvocation', invocation_id: id }])
    assert.equal(frames.some((f) => f.data === 'queued'), false, 'the queued call was never sent')
  })

  it("aborts a handler's signal on the engine's cancelinvocation and sends no answer for it", async (t) => {
    const engine = new TinyEngine()
    engine.probe = 'hold'
    const { client } = session(t, engine)
    let reason: unknown
    client.registerFunction('slow::fn', (_data, _metadata, { signal, invocationId }) => {
      assert.equal(invocationId, 'probe-slow::fn')
      return new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => {
          reason = signal.reason
          reject(new Error('stopped'))
        }),
      )
    })
    await waitFor(() => engine.sessions[0]?.frames.some((f) => f.type === 'registerfunction') === true, 'registered', 10_000, 5)
    engine.sessions[0]!.transport.send(JSON.stringify({ type: 'cancelinvocation', invocation_id: 'probe-slow::fn', reason: 'not needed' }))
    await waitFor(() => reason !== undefined, 'signal aborted', 10_000, 5)
    assert.ok(reason instanceof InvocationError)
    assert.equal(reason.code, 'cancelled')
    assert.equal(reason.detail, 'Invocation cancelled: not needed')
    assert.equal(await client.trigger({ function_id: 'engine::echo', payload: 'still here' }), 'still here')
    assert.equal(engine.results.has('slow::fn'), false, 'no answer for a cancelled invocation')
  })
})

describe('ClientSession hooks', () => {
  it('materialises a payload before the handler runs and a result before the call resolves (sync or async)', async (t) => {
    const engine = new TinyEngine()
    engine.probe = { ref: 'in' }
    const seen: Array<[unknown, string, string]> = []
    const hooks: ClientHooks = {
      newId,
      materialize: (value, kind, functionId) => {
        seen.push([value, kind, functionId])
        if (kind === 'payload') return { live: (value as { ref: string }).ref }
        return Promise.resolve({ live: value })
      },
    }
    const { client } = session(t, engine, { hooks })
    let handled: unknown
    client.registerFunction('chan::read', (data: unknown) => {
      handled = data
      return 'ok'
    })
    assert.deepEqual(await client.trigger({ function_id: 'engine::echo', payload: 'out' }), { live: 'out' })
    await waitFor(() => engine.results.has('chan::read'), 'handler answered', 10_000, 5)
    assert.deepEqual(handled, { live: 'in' })
    assert.deepEqual(
      seen.map(([, kind, id]) => [kind, id]).sort(),
      [
        ['payload', 'chan::read'],
        ['result', 'engine::echo'],
      ],
    )
  })

  it('answers invocation_failed when materialising a payload fails, and rejects the call when a result cannot be', async (t) => {
    const engine = new TinyEngine()
    const hooks: ClientHooks = {
      newId,
      materialize: (_value, kind) => {
        if (kind === 'payload') throw new Error('channel ref is broken')
        return Promise.reject(new Error('result ref is broken'))
      },
    }
    const { client } = session(t, engine, { hooks })
    let ran = false
    client.registerFunction('chan::read', () => {
      ran = true
    })
    await assert.rejects(client.trigger({ function_id: 'engine::echo', payload: 1 }), /result ref is broken/)
    await waitFor(() => engine.results.has('chan::read'), 'answered', 10_000, 5)
    assert.equal(ran, false)
    assert.deepEqual(engine.results.get('chan::read')!.error.code, 'invocation_failed')
    assert.match(engine.results.get('chan::read')!.error.message, /channel ref is broken/)
  })

  it('runs handlers through the telemetry hook and puts its trace context on calls and results', async (t) => {
    const engine = new TinyEngine()
    engine.probeTraceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    const events: string[] = []
    type Scope = { functionId: string }
    const hooks: ClientHooks<Scope> = {
      newId,
      telemetry: {
        outgoing: (): TraceContext => ({ traceparent: '00-11111111111111111111111111111111-2222222222222222-01', baggage: 'tenant=t1' }),
        startHandler: (functionId, data, traceparent) => {
          events.push(`start ${functionId} ${JSON.stringify(data)} ${traceparent}`)
          return { functionId }
        },
        runHandler: (scope, _traceparent, handler, data, metadata, context) => {
          events.push(`run ${scope?.functionId}`)
          return handler(data, metadata, context)
        },
        resultContext: () => ({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' }),
        endHandler: (scope, result, error, json) => events.push(`end ${scope.functionId} ${String(result)} ${error?.code} ${json}`),
      },
    }
    const { client } = session<Scope>(t, engine, { hooks })
    client.registerFunction('traced::fn', () => 42)
    await client.trigger({ function_id: 'engine::echo', payload: 1 })
    await waitFor(() => engine.results.has('traced::fn'), 'answered', 10_000, 5)
    assert.deepEqual(events, [
      'start traced::fn {"probe":true} 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'run traced::fn',
      'end traced::fn 42 undefined 42',
    ])
    assert.equal(engine.results.get('traced::fn')!.traceparent, '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01')
    const call = engine.sessions[0]!.frames.find((f) => f.function_id === 'engine::echo')!
    assert.equal(call.traceparent, '00-11111111111111111111111111111111-2222222222222222-01')
    assert.equal(call.baggage, 'tenant=t1')
  })

  it('reports every workerregistered, gives bindings UUIDs and calls ids of one per-client prefix and a counter by default', async (t) => {
    const engine = new TinyEngine()
    const registered: string[] = []
    const { client } = session(t, engine, { hooks: { onWorkerRegistered: (id) => registered.push(id) } })
    const trigger = client.registerTrigger({ type: 'cron', function_id: 'a::b', config: {} })
    assert.match(trigger.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.equal(await client.trigger({ function_id: 'engine::echo', payload: 'x' }), 'x')
    assert.equal(await client.trigger({ function_id: 'engine::echo', payload: 'y' }), 'y')
    const calls = engine.sessions[0]!.frames.filter((f) => f.function_id === 'engine::echo')
    assert.equal(calls.length, 2)
    for (const call of calls) assert.match(call.invocation_id, CALL_ID_FORMAT)
    const [first, second] = calls.map((call) => call.invocation_id as string)
    assert.equal(first!.slice(0, 17), second!.slice(0, 17))
    assert.notEqual(first, second)
    assert.deepEqual(registered, ['worker-0'])
  })
})

describe('ClientSession under hostile engine frames (fast-check)', () => {
  /** Channel refs, well-formed or not (hostile ids and keys), alone or inside other values. */
  const refLike = fc.record({
    channel_id: fc.oneof(fc.uuid(), fc.constantFrom('..', 'a/b', '', 'x?y'), fc.string({ unit: 'binary', maxLength: 8 })),
    access_key: fc.oneof(fc.uuid(), fc.constantFrom('k&dir=write', ' ', '%'), fc.string({ unit: 'binary', maxLength: 8 })),
    direction: fc.constantFrom('read', 'write', 'READ', 'both'),
  })
  const json = fc.oneof(
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: refLike },
    { weight: 1, arbitrary: fc.tuple(fc.jsonValue({ maxDepth: 1 }), refLike).map(([other, ref]) => ({ other, nested: [ref, { ref }] })) },
  )
  const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('f::known', 'f::throws', 'cron', 'b1', '__proto__', ''))
  const field = fc.oneof(json, text, fc.constant(null))
  const TYPES = ['invocationresult', 'invokefunction', 'workerregistered', 'registertrigger', 'unregistertrigger', 'triggerregistrationresult', 'ping', 'pong', 'error', 'nope'] as const
  const FIELDS = ['invocation_id', 'function_id', 'data', 'metadata', 'result', 'error', 'traceparent', 'baggage', 'worker_id', 'reattach_token', 'id', 'trigger_type', 'config', 'namespace', 'trigger_namespace', 'code', 'message'] as const
  /** Calls as the engine sends them, hostile in every optional field. */
  const call = fc
    .record(
      {
        invocation_id: fc.oneof(fc.uuid(), field),
        function_id: fc.constantFrom('f::known', 'f::throws', 'f::unknown'),
        data: fc.oneof(json, fc.constant(undefined)),
        metadata: field,
        traceparent: fc.oneof(fc.constant('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'), field),
        baggage: field,
      },
      { requiredKeys: ['function_id'] },
    )
    .map((fields) => JSON.stringify({ ...fields, type: 'invokefunction' }))
  const frame = fc.oneof(
    call,
    fc.tuple(fc.constantFrom(...TYPES), fc.dictionary(fc.constantFrom(...FIELDS), field)).map(([type, fields]) => JSON.stringify({ ...fields, type })),
    fc.string({ unit: 'binary' }),
  )

  it('never throws, stays connected, and answers every call it is owed', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(frame, { maxLength: 30 }), async (frames) => {
        const transport = new ScriptedTransport()
        // Refs become live ends (echoed back as their refs by f::known); none is used, so no socket opens.
        const sockets: string[] = []
        const channels = new Channels({
          address: 'ws://engine.local/',
          socket: (url) => {
            sockets.push(url)
            throw new Error('no channel socket in this test')
          },
        })
        const client = new ClientSession({
          address: 'ws://engine.local/',
          connector: () => transport,
          announce: { runtime: 'test' },
          log: { warn: () => {} },
          hooks: { newId, materialize: channels.materialize },
        })
        client.registerFunction('f::known', (data: unknown) => data)
        client.registerFunction('f::throws', () => {
          throw new Error('no')
        })
        client.registerTriggerType({ id: 'cron', description: '' }, { registerTrigger: () => {}, unregisterTrigger: () => {} })
        transport.open()
        const pending = client.trigger({ function_id: 'engine::echo', payload: 1, timeoutMs: 60000 }).catch(() => undefined)
        for (const f of frames) transport.deliver(f)
        // Every call with an invocation id gets its answer once the handlers settled (a handler or a binding may be async).
        const calls = frames.flatMap((f) => {
          const m = decodeEngineFrame(f)
          return m?.type === 'invokefunction' && m.invocation_id !== undefined ? [m] : []
        })
        const once = calls.filter((m) => calls.filter((c) => c.invocation_id === m.invocation_id).length === 1)
        const answerTo = (id: string | undefined) => transport.frames().find((s) => s.type === 'invocationresult' && s.invocation_id === id)
        await waitFor(() => calls.every((m) => answerTo(m.invocation_id) !== undefined), 'every call answered', 10_000, 5)
        for (const call of once) {
          const answer = answerTo(call.invocation_id)!
          if (call.function_id === 'f::known') {
            assert.equal(answer.error, undefined, `f::known answered ${JSON.stringify(answer)}`)
            assert.deepEqual(answer.result, call.data === null ? undefined : call.data)
          } else if (call.function_id === 'f::throws') {
            assert.deepEqual([answer.error.code, answer.error.message], ['invocation_failed', 'no'])
          } else {
            assert.equal(answer.error.code, 'function_not_found')
          }
        }
        assert.equal(client.getConnectionState(), 'connected')
        assert.deepEqual(sockets, [])
        await client.shutdown()
        await pending
      }),
      { numRuns: 150 },
    )
  })
})

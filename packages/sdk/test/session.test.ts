/**
 * Session behaviour of the client (sdk.md §2, §8; protocol.md §3) against a scripted WebSocket peer.
 */
import assert from 'node:assert/strict'
import { createServer, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { InvocationError, RegistrationRejectedError, TriggerAction } from '../src/index.ts'
import { SDK_VERSION } from '../src/options.ts'
import { FAST_RECONNECT, makeClient } from './support/client.ts'
import { EnginePeer } from './support/peer.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function peer(t: import('node:test').TestContext, options?: Parameters<typeof EnginePeer.start>[0]) {
  const p = await EnginePeer.start(options)
  t.after(() => p.close())
  return p
}

/** A port on which nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((r) => server.close(() => r()))
  return port
}

describe('session start (protocol.md §3.1)', () => {
  it('sends the announce, then trigger types, functions, triggers, then queued calls', async (t) => {
    const p = await peer(t)
    const { client } = makeClient(t, p.url, { workerName: 'orders', workerDescription: 'Order service' })
    // All of this happens before the socket opens: registrations are stored, calls are queued.
    const trigger = client.registerTrigger({ type: 'webhook', function_id: 'orders::hook', config: { path: '/x' } })
    client.registerFunction('orders::hook', () => 'ok', { description: 'handles webhooks' })
    client.registerTriggerType({ id: 'webhook', description: 'Incoming webhooks' }, {
      registerTrigger() {},
      unregisterTrigger() {},
    })
    const call = client.trigger({ function_id: 'math::add', payload: { a: 1 } })
    void client.trigger({ function_id: 'audit::log', payload: undefined, action: TriggerAction.Void() })

    const conn = await p.connection(0)
    const frames = await conn.waitForCount(6)
    assert.deepEqual(
      frames.map((f) => f.type),
      ['invokefunction', 'registertriggertype', 'registerfunction', 'registertrigger', 'invokefunction', 'invokefunction'],
    )
    const [announce, type, fn, binding, sync, voidCall] = frames as [any, any, any, any, any, any]
    assert.equal(announce.function_id, 'engine::workers::register')
    assert.deepEqual(announce.action, { type: 'void' })
    assert.equal(announce.invocation_id, undefined)
    assert.equal(announce.data.runtime, 'node')
    assert.equal(announce.data.version, SDK_VERSION)
    assert.equal(announce.data.name, 'orders')
    assert.equal(announce.data.description, 'Order service')
    assert.equal(announce.data.pid, process.pid)
    assert.deepEqual(type, { type: 'registertriggertype', id: 'webhook', description: 'Incoming webhooks' })
    assert.deepEqual(fn, { type: 'registerfunction', id: 'orders::hook', description: 'handles webhooks' })
    assert.deepEqual(binding, {
      type: 'registertrigger',
      id: trigger.id,
      trigger_type: 'webhook',
      function_id: 'orders::hook',
      config: { path: '/x' },
    })
    assert.equal(sync.function_id, 'math::add')
    assert.equal(typeof sync.invocation_id, 'string')
    assert.equal(voidCall.function_id, 'audit::log')
    assert.equal(voidCall.data, null)
    assert.equal('invocation_id' in voidCall, false)

    conn.send({ type: 'invocationresult', invocation_id: sync.invocation_id, function_id: 'math::add', result: 3 })
    assert.equal(await call, 3)
    assert.equal(client.getWorkerId(), conn.workerId)
  })

  it('sends the configured headers on the upgrade', async (t) => {
    const p = await peer(t)
    makeClient(t, p.url, { headers: { 'x-api-token': 'secret-1' } })
    const conn = await p.connection(0)
    assert.equal(conn.upgradeHeaders['x-api-token'], 'secret-1')
  })

  it('puts the worker namespace in the announce and on calls, but not on engine:: calls', async (t) => {
    const p = await peer(t)
    const { client } = makeClient(t, p.url, { namespace: 'prod' })
    const conn = await p.connection(0)
    const announce = await conn.waitForType('invokefunction')
    assert.equal(announce.data.namespace, 'prod')
    assert.equal('namespace' in announce, false)
    void client.trigger({ function_id: 'a::b', payload: 1, action: TriggerAction.Void() })
    void client.trigger({ function_id: 'engine::functions::list', payload: {}, action: TriggerAction.Void() })
    void client.trigger({ function_id: 'c::d', payload: 1, namespace: 'other', action: TriggerAction.Void() })
    const [, ab, engine, cd] = await conn.waitForCount(4)
    assert.equal(ab?.namespace, 'prod')
    assert.equal(engine !== undefined && 'namespace' in engine, false)
    assert.equal(cd?.namespace, 'other')
    assert.equal(client.getNamespace(), 'prod')
  })
})

describe('reconnection and reattach (protocol.md §3.7)', () => {
  it('reattaches with the previous worker id and token and replays the same ids', async (t) => {
    const p = await peer(t)
    const { client, states } = makeClient(t, p.url, { reconnectionConfig: FAST_RECONNECT })
    client.registerFunction('svc::f', () => 1)
    const trigger = client.registerTrigger({ type: 'cron', function_id: 'svc::f', config: { expression: '* * * * *' } })
    const first = await p.connection(0)
    await first.waitForType('registertrigger')
    await waitFor(() => client.getWorkerId() === first.workerId, 'worker id stored', 5000, 5)
    first.ws.terminate()

    const second = await p.connection(1)
    const frames = await second.waitForCount(4)
    assert.deepEqual(frames[0], {
      type: 'reattach',
      previous_worker_id: first.workerId,
      reattach_token: first.reattachToken,
    })
    assert.equal(frames[1]?.function_id, 'engine::workers::register')
    assert.equal(frames[2]?.type, 'registerfunction')
    assert.equal(frames[3]?.id, trigger.id)
    await waitFor(() => client.getWorkerId() === second.workerId, 'new worker id stored', 5000, 5)
    assert.deepEqual(states, ['connecting', 'connected', 'reconnecting', 'connecting', 'connected'])
  })

  it('does not replay what was unregistered while disconnected', async (t) => {
    const p = await peer(t)
    const { client } = makeClient(t, p.url, { reconnectionConfig: { ...FAST_RECONNECT, initialDelayMs: 100 } })
    const kept = client.registerFunction('keep::me', () => 1)
    const gone = client.registerFunction('drop::me', () => 1)
    const first = await p.connection(0)
    await first.waitForType('registerfunction', (f) => f.id === 'drop::me')
    first.ws.terminate()
    await waitFor(() => client.getConnectionState() === 'reconnecting', 'reconnecting', 5000, 5)
    gone.unregister()
    const second = await p.connection(1)
    await second.waitForType('registerfunction')
    await waitFor(() => second.frames.length >= 3, 'replay', 5000, 5)
    assert.deepEqual(
      second.frames.filter((f) => f.type === 'registerfunction').map((f) => f.id),
      [kept.id],
    )
    assert.equal(second.frames.some((f) => f.type === 'unregisterfunction'), false)
  })

  it('gives up after maxRetries failed attempts and rejects queued calls with NOT_CONNECTED', async (t) => {
    const port = await closedPort()
    const { client, states } = makeClient(t, `ws://127.0.0.1:${port}`, {
      reconnectionConfig: { ...FAST_RECONNECT, maxRetries: 2 },
    })
    const queued = client.trigger({ function_id: 'x::y', payload: {} })
    await assert.rejects(queued, (err: InvocationError) => err.code === 'NOT_CONNECTED')
    assert.equal(client.getConnectionState(), 'failed')
    assert.deepEqual(states, ['connecting', 'reconnecting', 'connecting', 'reconnecting', 'connecting', 'failed'])
    assert.match(String((client.getLastError() as NodeJS.ErrnoException).code), /ECONNREFUSED/)
    await assert.rejects(client.trigger({ function_id: 'x::y', payload: {} }), /NOT_CONNECTED: not connected to the engine/)
  })

  it('abandons a handshake that does not complete within the deadline', async (t) => {
    const sockets: Socket[] = []
    const silent = createServer((s) => sockets.push(s)) // accepts TCP, never answers the upgrade
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
    t.after(() => {
      for (const s of sockets) s.destroy()
      silent.close()
    })
    const { client, states } = makeClient(
      t,
      `ws://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      { reconnectionConfig: { ...FAST_RECONNECT, maxRetries: 0 } },
      { timings: { handshakeTimeoutMs: 50 } },
    )
    await waitFor(() => client.getConnectionState() === 'failed', 'failed', 5000, 5)
    assert.deepEqual(states, ['connecting', 'failed'])
    assert.equal((client.getLastError() as { code?: string }).code, 'TIMEOUT')
    assert.match(client.getLastError()?.message ?? '', /handshake .* timed out after 50ms/)
  })

  it('keeps the AUTH_ERROR of an error frame for getLastError and keeps reconnecting', async (t) => {
    const p = await peer(t, { autoRegister: false })
    const { client } = makeClient(t, p.url, { reconnectionConfig: { ...FAST_RECONNECT, initialDelayMs: 50 } })
    const conn = await p.connection(0)
    conn.send({ type: 'error', error: { code: 'AUTH_ERROR', message: 'invalid token' } })
    conn.ws.close(1008)
    await p.connection(1)
    const err = client.getLastError() as { code?: string; message: string }
    assert.equal(err.code, 'AUTH_ERROR')
    assert.equal(err.message, 'invalid token')
    assert.notEqual(client.getConnectionState(), 'failed')
  })
})

describe('connection state listeners (sdk.md §8)', () => {
  it('calls a listener synchronously with the current state, then on change, until removed', async (t) => {
    const p = await peer(t)
    const { client } = makeClient(t, p.url)
    const seen: string[] = []
    const remove = client.addConnectionStateListener((s) => seen.push(s))
    assert.deepEqual(seen, ['connecting'])
    await waitFor(() => client.getConnectionState() === 'connected', 'connected', 5000, 5)
    assert.deepEqual(seen, ['connecting', 'connected'])
    remove()
    await client.shutdown()
    assert.deepEqual(seen, ['connecting', 'connected'])
    assert.equal(client.getConnectionState(), 'disconnected')
  })
})

describe('keepalive (protocol.md §3.3)', () => {
  it('pings the engine periodically', async (t) => {
    const p = await peer(t)
    makeClient(t, p.url, {}, { timings: { pingIntervalMs: 20 } })
    const conn = await p.connection(0)
    await waitFor(() => conn.pings >= 2, 'two pings', 5000, 5)
  })

  it('reconnects when nothing arrives for the idle timeout', async (t) => {
    const p = await peer(t, { autoPong: false })
    const { client } = makeClient(
      t,
      p.url,
      { reconnectionConfig: FAST_RECONNECT },
      { timings: { pingIntervalMs: 20, idleTimeoutMs: 80 } },
    )
    await p.connection(0)
    await p.connection(1)
    assert.equal((client.getLastError() as { code?: string }).code, 'TIMEOUT')
    assert.match(client.getLastError()?.message ?? '', /no frame from the engine for 80ms/)
  })

  it('answers a JSON ping with a JSON pong', async (t) => {
    const p = await peer(t)
    makeClient(t, p.url)
    const conn = await p.connection(0)
    conn.send({ type: 'ping' })
    assert.deepEqual(await conn.waitForType('pong'), { type: 'pong' })
  })
})

describe('shutdown (sdk.md §8)', () => {
  it('rejects pending calls with SHUTDOWN, closes with 1000, and is idempotent', async (t) => {
    const p = await peer(t)
    const { client, states } = makeClient(t, p.url)
    const conn = await p.connection(0)
    const pending = client.trigger({ function_id: 'slow::op', payload: {} })
    await conn.waitForType('invokefunction', (f) => f.function_id === 'slow::op')
    const first = client.shutdown()
    const second = client.shutdown()
    await assert.rejects(pending, (err: InvocationError) => {
      assert.equal(err.code, 'SHUTDOWN')
      assert.equal(err.message, 'SHUTDOWN: worker is shutting down')
      return true
    })
    await Promise.all([first, second])
    assert.equal(await conn.closed, 1000)
    assert.equal(states.at(-1), 'disconnected')
    await assert.rejects(client.trigger({ function_id: 'a::b', payload: 1 }), (err: InvocationError) => {
      return err instanceof InvocationError && err.code === 'NOT_CONNECTED'
    })
    await assert.rejects(
      client.trigger({ function_id: 'a::b', payload: 1, action: TriggerAction.Void() }),
      (err: InvocationError) => err.code === 'NOT_CONNECTED',
    )
  })

  it('stops a client whose handshake is still pending', async (t) => {
    const sockets: Socket[] = []
    const silent = createServer((s) => sockets.push(s))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
    t.after(() => {
      for (const s of sockets) s.destroy()
      silent.close()
    })
    const { client, states } = makeClient(t, `ws://127.0.0.1:${(silent.address() as AddressInfo).port}`)
    await waitFor(() => sockets.length === 1, 'TCP connection accepted', 5000, 5)
    await client.shutdown()
    assert.deepEqual(states, ['connecting', 'disconnected'])
    assert.equal(client.getLastError(), undefined)
  })

  it('stops a client that never connected', async (t) => {
    const port = await closedPort()
    const { client } = makeClient(t, `ws://127.0.0.1:${port}`)
    const queued = client.trigger({ function_id: 'a::b', payload: 1 })
    await client.shutdown()
    await assert.rejects(queued, (err: InvocationError) => err.code === 'SHUTDOWN')
    assert.equal(client.getConnectionState(), 'disconnected')
  })
})

describe('registration refusals (sdk.md §7.3)', () => {
  it('reports FUNCTION_NAMESPACE_CONFLICT to listeners and the log, and keeps running', async (t) => {
    const p = await peer(t)
    const { client, warnings } = makeClient(t, p.url)
    const errors: unknown[] = []
    client.addRegistrationErrorListener((e) => errors.push(e))
    client.registerFunction('billing::charge', () => 1)
    const conn = await p.connection(0)
    await conn.waitForType('registerfunction')
    conn.send({
      type: 'registrationrejected',
      code: 'FUNCTION_NAMESPACE_CONFLICT',
      reason: 'forbidden',
      message: 'function registration is not allowed for this session',
      namespace: 'default',
      function_id: 'billing::charge',
      owner_worker_id: '',
    })
    await waitFor(() => errors.length === 1, 'listener called', 5000, 5)
    assert.deepEqual(errors[0], {
      kind: 'function',
      id: 'billing::charge',
      code: 'FUNCTION_NAMESPACE_CONFLICT',
      reason: 'forbidden',
      message: 'function registration is not allowed for this session',
      namespace: 'default',
      function_id: 'billing::charge',
    })
    assert.match(warnings[0] ?? '', /billing::charge.*function registration is not allowed/)
    assert.equal(client.getConnectionState(), 'connected')
  })

  it('treats any other registrationrejected code as fatal', async (t) => {
    const p = await peer(t)
    const { client, states } = makeClient(t, p.url, { reconnectionConfig: FAST_RECONNECT })
    const conn = await p.connection(0)
    await conn.waitForType('invokefunction')
    const pending = client.trigger({ function_id: 'a::b', payload: 1 })
    await conn.waitForType('invokefunction', (f) => f.function_id === 'a::b')
    conn.send({
      type: 'registrationrejected',
      code: 'WORKER_NAMESPACE_CONFLICT',
      reason: 'forbidden',
      message: 'worker name taken',
      namespace: 'default',
      worker_name: 'test-worker',
      owner_worker_id: 'abc',
    })
    await assert.rejects(pending, (err: RegistrationRejectedError) => {
      assert.ok(err instanceof RegistrationRejectedError)
      assert.equal(err.code, 'WORKER_NAMESPACE_CONFLICT')
      assert.equal(err.worker_name, 'test-worker')
      assert.equal(err.owner_worker_id, 'abc')
      return true
    })
    assert.equal(client.getConnectionState(), 'failed')
    assert.ok(client.getLastError() instanceof RegistrationRejectedError)
    await conn.closed
    assert.equal(p.connections.length, 1, 'no reconnect after a fatal rejection')
    assert.equal(states.at(-1), 'failed')
  })
})

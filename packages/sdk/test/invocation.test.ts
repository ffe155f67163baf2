/**
 * Outbound calls and inbound invocations (sdk.md §4, §6; protocol.md §5.8–§5.9, §6) against a
 * scripted WebSocket peer.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { CALL_ID_FORMAT } from 'svc-protocol/client'
import { InvocationError, TriggerAction } from '../src/index.ts'
import { FAST_RECONNECT, makeClient } from './support/client.ts'
import { EnginePeer, type Frame } from './support/peer.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function connected(t: TestContext, options: Parameters<typeof makeClient>[2] = {}) {
  const p = await EnginePeer.start()
  t.after(() => p.close())
  const made = makeClient(t, p.url, options)
  const conn = await p.connection(0)
  await conn.waitForType('invokefunction') // the announce
  await waitFor(() => made.client.getConnectionState() === 'connected', 'connected', 5000, 5)
  return { ...made, peer: p, conn }
}

const isCall = (id: string) => (f: Frame) => f.type === 'invokefunction' && f.function_id === id

describe('synchronous calls (protocol.md §6.2)', () => {
  it('sends invokefunction with an invocation id and resolves with the result', async (t) => {
    const { client, conn } = await connected(t)
    const result = client.trigger({ function_id: 'math::add', payload: { a: 2, b: 3 }, metadata: { tenant: 't1' } })
    const frame = await conn.waitFor(isCall('math::add'))
    assert.deepEqual(Object.keys(frame).sort(), ['data', 'function_id', 'invocation_id', 'metadata', 'type'])
    // One per-client prefix and a counter (protocol.md §5.8: an opaque id), not a UUID per call.
    assert.match(frame.invocation_id, CALL_ID_FORMAT)
    assert.deepEqual(frame.data, { a: 2, b: 3 })
    assert.deepEqual(frame.metadata, { tenant: 't1' })
    conn.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'math::add', result: { c: 5 } })
    assert.deepEqual(await result, { c: 5 })
  })

  it('sends an undefined payload as null and resolves a null or missing result to undefined', async (t) => {
    const { client, conn } = await connected(t)
    const a = client.trigger({ function_id: 'x::a', payload: undefined })
    const b = client.trigger({ function_id: 'x::b', payload: 0 })
    const fa = await conn.waitFor(isCall('x::a'))
    const fb = await conn.waitFor(isCall('x::b'))
    assert.equal(fa.data, null)
    conn.send({ type: 'invocationresult', invocation_id: fa.invocation_id, function_id: 'x::a', result: null })
    conn.send({ type: 'invocationresult', invocation_id: fb.invocation_id, function_id: 'x::b' })
    assert.equal(await a, undefined)
    assert.equal(await b, undefined)
  })

  it('rejects with an InvocationError carrying the remote code, detail and stack', async (t) => {
    const { client, conn } = await connected(t)
    const call = client.trigger({ function_id: 'math::div', payload: { a: 1, b: 0 } })
    const frame = await conn.waitFor(isCall('math::div'))
    conn.send({
      type: 'invocationresult',
      invocation_id: frame.invocation_id,
      function_id: 'math::div',
      result: 'ignored when error is present',
      error: { code: 'DIVIDE_BY_ZERO', message: 'b must not be 0', stacktrace: 'at div' },
    })
    await assert.rejects(call, (err: InvocationError) => {
      assert.ok(err instanceof InvocationError)
      assert.equal(err.code, 'DIVIDE_BY_ZERO')
      assert.equal(err.detail, 'b must not be 0')
      assert.equal(err.message, 'DIVIDE_BY_ZERO: b must not be 0')
      assert.equal(err.function_id, 'math::div')
      assert.equal(err.stacktrace, 'at div')
      return true
    })
  })

  it('wraps an error value that is not an ErrorBody as UNKNOWN with its JSON text', async (t) => {
    const { client, conn } = await connected(t)
    const call = client.trigger({ function_id: 'odd::err', payload: {} })
    const frame = await conn.waitFor(isCall('odd::err'))
    conn.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'odd::err', error: { oops: 1 } })
    await assert.rejects(call, (err: InvocationError) => err.code === 'UNKNOWN' && err.detail === '{"oops":1}')
  })

  it('times out with TIMEOUT and ignores a late answer', async (t) => {
    const { client, conn } = await connected(t, { invocationTimeoutMs: 40 })
    const byDefault = client.trigger({ function_id: 'slow::a', payload: {} })
    const perCall = client.trigger({ function_id: 'slow::b', payload: {}, timeoutMs: 25 })
    await Promise.all([
      assert.rejects(byDefault, (err: InvocationError) => {
        assert.equal(err.code, 'TIMEOUT')
        assert.equal(err.detail, 'invocation timed out after 40ms')
        assert.equal(err.function_id, 'slow::a')
        return true
      }),
      assert.rejects(perCall, (err: InvocationError) => err.detail === 'invocation timed out after 25ms'),
    ])
    const late = await conn.waitFor(isCall('slow::a'))
    conn.send({ type: 'invocationresult', invocation_id: late.invocation_id, function_id: 'slow::a', result: 1 })
    // The connection stays usable after the ignored late answer.
    const next = client.trigger({ function_id: 'fast::c', payload: {} })
    const f = await conn.waitFor(isCall('fast::c'))
    conn.send({ type: 'invocationresult', invocation_id: f.invocation_id, function_id: 'fast::c', result: 'ok' })
    assert.equal(await next, 'ok')
  })
})

describe('void and enqueue (protocol.md §6.3–§6.4)', () => {
  it('sends a void call without invocation id and resolves at once', async (t) => {
    const { client, conn } = await connected(t)
    assert.equal(await client.trigger({ function_id: 'audit::log', payload: { e: 1 }, action: TriggerAction.Void() }), undefined)
    const frame = await conn.waitFor(isCall('audit::log'))
    assert.deepEqual(frame, { type: 'invokefunction', function_id: 'audit::log', data: { e: 1 }, action: { type: 'void' } })
  })

  it('sends an enqueue call with an invocation id and resolves with the receipt', async (t) => {
    const { client, conn } = await connected(t)
    const receipt = client.trigger({
      function_id: 'billing::charge',
      payload: { order: 42 },
      action: TriggerAction.Enqueue({ queue: 'payments', delayMs: 10, idempotencyKey: 'o-42' }),
    })
    const frame = await conn.waitFor(isCall('billing::charge'))
    assert.equal(typeof frame.invocation_id, 'string')
    assert.deepEqual(frame.action, { type: 'enqueue', queue: 'payments', delay_ms: 10, idempotency_key: 'o-42' })
    conn.send({
      type: 'invocationresult',
      invocation_id: frame.invocation_id,
      function_id: 'billing::charge',
      result: { messageReceiptId: 'r-1' },
    })
    assert.deepEqual(await receipt, { messageReceiptId: 'r-1' })
  })
})

describe('calls across a lost connection (sdk.md §6)', () => {
  it('rejects sent calls with invocation_stopped and sends calls made while disconnected after the next open', async (t) => {
    const { client, conn, peer } = await connected(t, { reconnectionConfig: { ...FAST_RECONNECT, initialDelayMs: 50 } })
    const inFlight = client.trigger({ function_id: 'remote::work', payload: 1 })
    await conn.waitFor(isCall('remote::work'))
    conn.ws.terminate()
    await assert.rejects(inFlight, (err: InvocationError) => {
      assert.equal(err.code, 'invocation_stopped')
      assert.equal(err.detail, 'Invocation stopped: connection to the engine was lost')
      return true
    })
    assert.equal(client.getConnectionState(), 'reconnecting')
    const queued = client.trigger({ function_id: 'later::work', payload: 2 })
    void client.trigger({ function_id: 'later::void', payload: 3, action: TriggerAction.Void() })
    const next = await peer.connection(1)
    const frame = await next.waitFor(isCall('later::work'))
    await next.waitFor(isCall('later::void'))
    next.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'later::work', result: 'done' })
    assert.equal(await queued, 'done')
    assert.equal(next.frames.some(isCall('remote::work')), false, 'a sent call is never resent')
  })

  it('drops a queued call whose timeout expired before the connection opened', async (t) => {
    const { client, conn, peer } = await connected(t, {
      reconnectionConfig: { ...FAST_RECONNECT, initialDelayMs: 150, maxDelayMs: 150 },
    })
    conn.ws.terminate()
    await waitFor(() => client.getConnectionState() === 'reconnecting', 'reconnecting', 5000, 5)
    const expired = client.trigger({ function_id: 'expired::call', payload: 1, timeoutMs: 10 })
    const kept = client.trigger({ function_id: 'kept::call', payload: 1, timeoutMs: 5000 })
    await assert.rejects(expired, (err: InvocationError) => err.code === 'TIMEOUT')
    const next = await peer.connection(1)
    const frame = await next.waitFor(isCall('kept::call'))
    assert.equal(next.frames.some(isCall('expired::call')), false)
    next.send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'kept::call', result: 1 })
    assert.equal(await kept, 1)
  })
})

describe('inbound invocations (sdk.md §4, protocol.md §5.8)', () => {
  function invoke(conn: { send(f: object): void }, id: string, functionId: string, data: unknown, metadata?: unknown) {
    const frame: Record<string, unknown> = { type: 'invokefunction', invocation_id: id, function_id: functionId, data }
    if (metadata !== undefined) frame.metadata = metadata
    conn.send(frame)
  }
  const resultFor = (id: string) => (f: Frame) => f.type === 'invocationresult' && f.invocation_id === id

  it('runs the handler with data and metadata and answers with its result', async (t) => {
    const { client, conn } = await connected(t)
    const seen: unknown[] = []
    client.registerFunction('math::add', async (data: { a: number; b: number }, metadata) => {
      seen.push(metadata)
      return { c: data.a + data.b }
    })
    await conn.waitForType('registerfunction')
    invoke(conn, 'i1', 'math::add', { a: 2, b: 3 }, { tenant: 't1' })
    invoke(conn, 'i2', 'math::add', { a: 1, b: 1 })
    assert.deepEqual(await conn.waitFor(resultFor('i1')), {
      type: 'invocationresult',
      invocation_id: 'i1',
      function_id: 'math::add',
      result: { c: 5 },
    })
    await conn.waitFor(resultFor('i2'))
    assert.deepEqual(seen, [{ tenant: 't1' }, undefined])
  })

  it('sends no result when the handler returns undefined', async (t) => {
    const { client, conn } = await connected(t)
    client.registerFunction('noop::run', () => undefined)
    invoke(conn, 'i1', 'noop::run', null)
    const answer = await conn.waitFor(resultFor('i1'))
    assert.deepEqual(answer, { type: 'invocationresult', invocation_id: 'i1', function_id: 'noop::run' })
  })

  it('turns thrown errors into error bodies with their own code or invocation_failed', async (t) => {
    const { client, conn } = await connected(t)
    client.registerFunction('fail::coded', async () => {
      throw Object.assign(new Error('card declined'), { code: 'PAYMENT_DECLINED' })
    })
    client.registerFunction('fail::plain', () => {
      throw new Error('boom')
    })
    client.registerFunction('fail::badcode', () => {
      throw Object.assign(new Error('bad'), { code: 'has spaces' })
    })
    client.registerFunction('fail::rethrown', () => {
      throw new InvocationError({ code: 'function_not_found', message: 'Function x::y not found' })
    })
    invoke(conn, 'a', 'fail::coded', null)
    invoke(conn, 'b', 'fail::plain', null)
    invoke(conn, 'c', 'fail::badcode', null)
    invoke(conn, 'd', 'fail::rethrown', null)
    const a = await conn.waitFor(resultFor('a'))
    assert.equal(a.error.code, 'PAYMENT_DECLINED')
    assert.equal(a.error.message, 'card declined')
    assert.match(a.error.stacktrace, /card declined/)
    const b = await conn.waitFor(resultFor('b'))
    assert.equal(b.error.code, 'invocation_failed')
    assert.equal(b.error.message, 'boom')
    assert.equal('result' in b, false)
    assert.equal((await conn.waitFor(resultFor('c'))).error.code, 'invocation_failed')
    assert.deepEqual((await conn.waitFor(resultFor('d'))).error, {
      code: 'function_not_found',
      message: 'Function x::y not found',
    })
  })

  it('answers function_not_found for an unknown id and function_not_invokable for an HTTP-invoked one', async (t) => {
    const { client, conn } = await connected(t)
    client.registerFunction('ext::hook', { url: 'https://example.com/hook', method: 'POST' })
    const reg = await conn.waitForType('registerfunction')
    assert.deepEqual(reg.invocation, { url: 'https://example.com/hook', method: 'POST' })
    invoke(conn, 'u', 'nobody::here', null)
    invoke(conn, 'h', 'ext::hook', null)
    assert.deepEqual((await conn.waitFor(resultFor('u'))).error, {
      code: 'function_not_found',
      message: 'Function nobody::here not found',
    })
    assert.deepEqual((await conn.waitFor(resultFor('h'))).error, {
      code: 'function_not_invokable',
      message: 'Function ext::hook is HTTP-invoked and cannot be invoked locally',
    })
  })

  it('runs handlers concurrently: a slow handler does not hold up the next invocation', async (t) => {
    const { client, conn } = await connected(t)
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    client.registerFunction('slow::op', async () => {
      await gate
      return 'slow'
    })
    client.registerFunction('fast::op', () => 'fast')
    invoke(conn, 's', 'slow::op', null)
    invoke(conn, 'f', 'fast::op', null)
    assert.equal((await conn.waitFor(resultFor('f'))).result, 'fast')
    assert.equal(conn.frames.some(resultFor('s')), false)
    release()
    assert.equal((await conn.waitFor(resultFor('s'))).result, 'slow')
  })

  it('answers an unserialisable result with invocation_failed', async (t) => {
    const { client, conn } = await connected(t)
    client.registerFunction('bad::result', () => ({ n: 10n }))
    invoke(conn, 'x', 'bad::result', null)
    const answer = await conn.waitFor(resultFor('x'))
    assert.equal(answer.error.code, 'invocation_failed')
    assert.match(answer.error.message, /not JSON-serialisable/)
  })
})

describe('registerFunction (sdk.md §4)', () => {
  it('throws on an empty or duplicate id, and unregister() sends unregisterfunction once', async (t) => {
    const { client, conn } = await connected(t)
    assert.throws(() => client.registerFunction('', () => 1), /function id is required/)
    const ref = client.registerFunction('math::add', () => 1, {
      description: 'Add',
      metadata: { public: true },
      request_format: { type: 'object' },
      response_format: { type: 'number' },
    })
    assert.throws(() => client.registerFunction('math::add', () => 2), /function id already registered: math::add/)
    assert.deepEqual(await conn.waitForType('registerfunction'), {
      type: 'registerfunction',
      id: 'math::add',
      description: 'Add',
      metadata: { public: true },
      request_format: { type: 'object' },
      response_format: { type: 'number' },
    })
    ref.unregister()
    ref.unregister()
    assert.deepEqual(await conn.waitForType('unregisterfunction'), { type: 'unregisterfunction', id: 'math::add' })
    // The id is free again, and invocations of the removed function are refused.
    client.registerFunction('math::add', () => 3)
    await waitFor(() => conn.frames.filter((f) => f.type === 'registerfunction').length === 2, 'second registration', 5000, 5)
    assert.equal(conn.frames.filter((f) => f.type === 'unregisterfunction').length, 1)
  })
})

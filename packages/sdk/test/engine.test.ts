/**
 * The SDK against the real engine (protocol.md §3–§8): registration, invocation, errors, replicas,
 * reconnection with replay, trigger type providers and shutdown, with real sockets end to end.
 *
 * Built-in workers are left out (`builtins: []`): these tests exercise the engine core and the
 * SDK only, so they neither depend on nor wait for the HTTP and state workers.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { WorkerClient } from '../src/client.ts'
import { EngineFunctions } from '../src/engine.ts'
import { InvocationError, TriggerAction } from '../src/index.ts'
import { resolveOptions } from '../src/options.ts'
import type { InitOptions, RegistrationError, SvcClient, TriggerConfig } from '../src/types.ts'
import { FAST_RECONNECT } from './support/client.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function engine(t: TestContext, port = 0): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], listener: { port } })
  t.after(() => e.stop())
  return e
}

function worker(t: TestContext, url: string, name: string, options: InitOptions = {}): WorkerClient {
  const client = new WorkerClient(url, resolveOptions({ workerName: name, ...options }, {}), {
    log: { warn: () => {} },
  })
  t.after(() => client.shutdown())
  return client
}

interface FunctionSummary {
  function_id: string
  namespace: string
  replica_count: number
}

/** Waits until the engine lists `id` (with at least `replicas` replicas): registrations are not acknowledged. */
async function registered(client: SvcClient, id: string, replicas = 1, namespace?: string): Promise<void> {
  const payload: Record<string, unknown> = { include_internal: true }
  if (namespace !== undefined) payload.namespace = namespace
  await waitFor(async () => {
    const { functions } = await client.trigger<object, { functions: FunctionSummary[] }>({
      function_id: EngineFunctions.LIST_FUNCTIONS,
      payload,
    })
    return functions.some((f) => f.function_id === id && f.replica_count >= replicas)
  }, `function ${id} registered (${replicas} replicas)`)
}

describe('svc-sdk against the engine', () => {
  it('invokes a function registered by another worker, with metadata', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'math')
    const caller = worker(t, e.url, 'client')
    const seen: unknown[] = []
    callee.registerFunction('math::add', (data: { a: number; b: number }, metadata) => {
      seen.push(metadata)
      return { c: data.a + data.b }
    })
    await registered(caller, 'math::add')
    const result = await caller.trigger<{ a: number; b: number }, { c: number }>({
      function_id: 'math::add',
      payload: { a: 2, b: 3 },
      metadata: { tenant: 't1' },
    })
    assert.deepEqual(result, { c: 5 })
    assert.deepEqual(seen, [{ tenant: 't1' }])
  })

  it('announces the worker: the engine lists its name, runtime and namespace', async (t) => {
    const e = await engine(t)
    const w = worker(t, e.url, 'announcer', { workerDescription: 'says hello', namespace: 'prod' })
    await waitFor(() => w.getWorkerId() !== undefined, 'workerregistered', 5000, 5)
    const me = await waitFor(async () => {
      const { workers } = await w.trigger<object, { workers: Array<Record<string, unknown>> }>({
        function_id: EngineFunctions.LIST_WORKERS,
        payload: {},
      })
      return workers.find((x) => x.id === w.getWorkerId() && x.name === 'announcer')
    }, 'the announcer listed under its name')
    assert.equal(me.runtime, 'node')
    assert.equal(me.description, 'says hello')
    assert.equal(me.namespace, 'prod')
    assert.equal(me.pid, process.pid)
  })

  it('carries error codes end to end', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'payments')
    const caller = worker(t, e.url, 'client')
    callee.registerFunction('payments::charge', async () => {
      throw Object.assign(new Error('card declined'), { code: 'PAYMENT_DECLINED' })
    })
    callee.registerFunction('payments::crash', () => {
      throw new Error('null pointer')
    })
    await registered(caller, 'payments::crash')
    await assert.rejects(caller.trigger({ function_id: 'payments::charge', payload: {} }), (err: InvocationError) => {
      assert.ok(err instanceof InvocationError)
      assert.equal(err.code, 'PAYMENT_DECLINED')
      assert.equal(err.message, 'PAYMENT_DECLINED: card declined')
      assert.equal(err.function_id, 'payments::charge')
      assert.match(err.stacktrace ?? '', /card declined/)
      return true
    })
    await assert.rejects(
      caller.trigger({ function_id: 'payments::crash', payload: {} }),
      (err: InvocationError) => err.code === 'invocation_failed' && err.detail === 'null pointer',
    )
    await assert.rejects(caller.trigger({ function_id: 'nobody::home', payload: {} }), (err: InvocationError) => {
      assert.equal(err.code, 'function_not_found')
      assert.equal(err.detail, 'Function nobody::home not found')
      return true
    })
    await assert.rejects(
      caller.trigger({ function_id: 'a::b', payload: {}, action: TriggerAction.Enqueue({ queue: 'q' }) }),
      (err: InvocationError) => err.code === 'enqueue_error',
    )
  })

  it('times out a slow call and keeps working afterwards', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'slow')
    const caller = worker(t, e.url, 'client')
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    callee.registerFunction('slow::op', async () => {
      await gate
      return 'late'
    })
    callee.registerFunction('fast::op', () => 'fast')
    await registered(caller, 'fast::op')
    await assert.rejects(caller.trigger({ function_id: 'slow::op', payload: {}, timeoutMs: 50 }), (err: InvocationError) => {
      assert.equal(err.code, 'TIMEOUT')
      assert.equal(err.detail, 'invocation timed out after 50ms')
      return true
    })
    release() // the late answer reaches the caller and is ignored
    assert.equal(await caller.trigger({ function_id: 'fast::op', payload: {} }), 'fast')
  })

  it('delivers void calls without a reply, and enqueue calls through the queue provider', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'audit')
    const caller = worker(t, e.url, 'client')
    const events: unknown[] = []
    callee.registerFunction('audit::record', (data) => {
      events.push(data)
    })
    const enqueued: Array<Record<string, unknown>> = []
    // A worker standing in for the queue worker: the engine hands enqueue calls to this id (§6.4).
    callee.registerFunction('engine::queue::enqueue', (data: Record<string, unknown>) => {
      enqueued.push(data)
    })
    await registered(caller, 'engine::queue::enqueue')
    await registered(caller, 'audit::record')
    assert.equal(
      await caller.trigger({ function_id: 'audit::record', payload: { e: 1 }, action: TriggerAction.Void() }),
      undefined,
    )
    await waitFor(() => events.length === 1, 'void call delivered', 5000, 5)
    assert.deepEqual(events, [{ e: 1 }])

    const receipt = await caller.trigger({
      function_id: 'billing::charge',
      payload: { order: 42 },
      action: TriggerAction.Enqueue({ queue: 'payments' }),
    })
    assert.equal(typeof receipt.messageReceiptId, 'string')
    assert.equal(enqueued[0]?.messageReceiptId, receipt.messageReceiptId)
    assert.equal(enqueued[0]?.queue, 'payments')
    assert.deepEqual(enqueued[0]?.data, { order: 42 })
  })

  it('lets a handler invoke its own worker (protocol.md §6.6)', async (t) => {
    const e = await engine(t)
    const w = worker(t, e.url, 'self')
    w.registerFunction('fib::n', async (n: number): Promise<number> => {
      if (n < 2) return n
      const [a, b] = await Promise.all([
        w.trigger<number, number>({ function_id: 'fib::n', payload: n - 1 }),
        w.trigger<number, number>({ function_id: 'fib::n', payload: n - 2 }),
      ])
      return a + b
    })
    await registered(w, 'fib::n')
    assert.equal(await w.trigger({ function_id: 'fib::n', payload: 10 }), 55)
  })

  it('balances calls across replicas of the same function', async (t) => {
    const e = await engine(t)
    const replicas = [worker(t, e.url, 'r1'), worker(t, e.url, 'r2')]
    const caller = worker(t, e.url, 'client')
    replicas.forEach((r, i) => r.registerFunction('who::am_i', () => `replica-${i}`))
    await registered(caller, 'who::am_i', 2)
    const answers = new Set<unknown>()
    for (let i = 0; i < 6; i++) answers.add(await caller.trigger({ function_id: 'who::am_i', payload: null }))
    assert.deepEqual([...answers].sort(), ['replica-0', 'replica-1'])
  })

  it('routes by namespace: the worker namespace is the default target', async (t) => {
    const e = await engine(t)
    const prod = worker(t, e.url, 'prod-worker', { namespace: 'prod' })
    const other = worker(t, e.url, 'default-worker')
    prod.registerFunction('cfg::env', () => 'prod')
    other.registerFunction('cfg::env', () => 'default')
    await registered(other, 'cfg::env', 1, 'prod')
    await registered(other, 'cfg::env', 1, 'default')
    assert.equal(await prod.trigger({ function_id: 'cfg::env', payload: null }), 'prod')
    assert.equal(await other.trigger({ function_id: 'cfg::env', payload: null }), 'default')
    assert.equal(await other.trigger({ function_id: 'cfg::env', payload: null, namespace: 'prod' }), 'prod')
    assert.equal(await prod.trigger({ function_id: 'cfg::env', payload: null, namespace: 'default' }), 'default')
  })

  it('rejects an in-flight call with invocation_stopped when the callee disconnects', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'flaky')
    const caller = worker(t, e.url, 'client')
    let started!: () => void
    const running = new Promise<void>((r) => (started = r))
    callee.registerFunction('flaky::op', () => {
      started()
      return new Promise(() => {}) // never answers
    })
    await registered(caller, 'flaky::op')
    const call = caller.trigger({ function_id: 'flaky::op', payload: {} })
    await running
    await callee.shutdown()
    await assert.rejects(call, (err: InvocationError) => {
      assert.equal(err.code, 'invocation_stopped')
      assert.equal(err.detail, 'Invocation stopped')
      return true
    })
  })

  it('reconnects and replays its registrations after the engine restarts on the same port', async (t) => {
    const first = await startTestEngine({ builtins: [] })
    t.after(() => first.stop())
    const port = Number(new URL(first.url).port)
    const callee = worker(t, first.url, 'durable', { reconnectionConfig: { ...FAST_RECONNECT, maxDelayMs: 50 } })
    const states: string[] = []
    callee.addConnectionStateListener((s) => states.push(s))
    callee.registerFunction('durable::echo', (x: unknown) => x)
    await registered(callee, 'durable::echo')
    const firstWorkerId = callee.getWorkerId()
    await first.stop()
    await waitFor(() => callee.getConnectionState() !== 'connected', 'connection lost', 5000, 5)

    const second = await engine(t, port)
    const caller = worker(t, second.url, 'client')
    await registered(caller, 'durable::echo')
    assert.equal(await caller.trigger({ function_id: 'durable::echo', payload: 'again' }), 'again')
    assert.equal(callee.getConnectionState(), 'connected')
    assert.notEqual(callee.getWorkerId(), firstWorkerId)
    assert.deepEqual(states.slice(0, 3), ['connecting', 'connected', 'reconnecting'])
    assert.equal(states.at(-1), 'connected')
  })

  it('runs a custom trigger type: bindings reach the provider, which fires the target', async (t) => {
    const e = await engine(t)
    const provider = worker(t, e.url, 'webhooks')
    const consumer = worker(t, e.url, 'orders')
    const bindings = new Map<string, TriggerConfig<{ path: string }>>()
    const removed: string[] = []
    provider.registerTriggerType<{ path: string }>(
      { id: 'webhook', description: 'Incoming webhooks' },
      {
        registerTrigger(trigger) {
          if (!trigger.config.path?.startsWith('/')) throw new Error('path must start with /')
          bindings.set(trigger.id, trigger)
        },
        unregisterTrigger(trigger) {
          bindings.delete(trigger.id)
          removed.push(trigger.function_id)
        },
      },
    )
    const received: Array<{ data: unknown; metadata: unknown }> = []
    consumer.registerFunction('orders::on-webhook', (data, metadata) => {
      received.push({ data, metadata })
    })
    const refusals: RegistrationError[] = []
    consumer.addRegistrationErrorListener((err) => refusals.push(err))
    const good = consumer.registerTrigger({
      type: 'webhook',
      function_id: 'orders::on-webhook',
      config: { path: '/orders' },
      metadata: { team: 'orders' },
    })
    const bad = consumer.registerTrigger({ type: 'webhook', function_id: 'orders::on-webhook', config: { path: 'x' } })
    await waitFor(() => bindings.has(good.id), 'binding delivered', 5000, 5)
    await waitFor(() => refusals.length === 1, 'refusal reported', 5000, 5)
    assert.equal(refusals[0]?.id, bad.id)
    assert.equal(refusals[0]?.kind, 'trigger')
    assert.equal(refusals[0]?.code, 'trigger_registration_failed')
    assert.equal(refusals[0]?.message, 'path must start with /')
    await registered(provider, 'orders::on-webhook')

    // The provider fires: it invokes the target with the binding's namespace and metadata.
    const binding = bindings.get(good.id)!
    await provider.trigger({
      function_id: binding.function_id,
      payload: { body: 'order 42' },
      namespace: binding.namespace,
      metadata: binding.metadata,
      action: TriggerAction.Void(),
    })
    await waitFor(() => received.length === 1, 'target invoked', 5000, 5)
    assert.deepEqual(received[0], { data: { body: 'order 42' }, metadata: { team: 'orders' } })

    good.unregister()
    await waitFor(() => removed.length === 1, 'unregisterTrigger called', 5000, 5)
    assert.deepEqual(removed, ['orders::on-webhook'])
  })

  it('reports a refused registration and stays connected', async (t) => {
    const e = await engine(t)
    const w = worker(t, e.url, 'bold')
    const refusals: RegistrationError[] = []
    w.addRegistrationErrorListener((err) => refusals.push(err))
    w.registerFunction(EngineFunctions.LIST_FUNCTIONS, () => 'mine')
    await waitFor(() => refusals.length === 1, 'refusal reported', 5000, 5)
    assert.equal(refusals[0]?.kind, 'function')
    assert.equal(refusals[0]?.code, 'FUNCTION_NAMESPACE_CONFLICT')
    assert.equal(refusals[0]?.reason, 'reserved_id')
    assert.equal(w.getConnectionState(), 'connected')
  })

  it('shuts down: pending calls reject with SHUTDOWN and the engine forgets the worker', async (t) => {
    const e = await engine(t)
    const callee = worker(t, e.url, 'slow')
    const leaving = worker(t, e.url, 'leaving')
    callee.registerFunction('slow::op', () => new Promise(() => {}))
    leaving.registerFunction('leaving::fn', () => 1)
    await registered(callee, 'leaving::fn')
    await registered(leaving, 'slow::op')
    const pending = leaving.trigger({ function_id: 'slow::op', payload: {} })
    const rejected = assert.rejects(pending, (err: InvocationError) => err.code === 'SHUTDOWN')
    await leaving.shutdown()
    await rejected
    assert.equal(leaving.getConnectionState(), 'disconnected')
    await waitFor(async () => {
      const { functions } = await callee.trigger<object, { functions: FunctionSummary[] }>({
        function_id: EngineFunctions.LIST_FUNCTIONS,
        payload: {},
      })
      return !functions.some((f) => f.function_id === 'leaving::fn')
    }, 'leaving::fn unlisted')
  })
})

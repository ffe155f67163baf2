/**
 * Protocol conformance through raw WebSockets against a real engine (protocol.md §2–§8, §11).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

type Mode = 'websocket' | 'in-memory'

let t: TestEngine
let mode: Mode = 'websocket'
const open: RawWorker[] = []
/** A worker over the transport of the suite being run. */
async function connect(options: Parameters<typeof RawWorker.connect>[1] = {}): Promise<RawWorker> {
  const w = mode === 'websocket' ? await RawWorker.connect(t.url, options) : await RawWorker.inProcess(t.engine, options)
  open.push(w)
  return w
}
async function worker(announce?: Record<string, unknown>): Promise<RawWorker> {
  return connect(announce ? { announce } : {})
}

// The same protocol suite runs over real WebSockets and over the in-memory transport.
for (const suiteMode of ['websocket', 'in-memory'] as const) {
describe(`protocol over ${suiteMode}`, () => {
before(async () => {
  mode = suiteMode
  t = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 50 } })
})
after(async () => {
  await Promise.all(open.splice(0).map((w) => w.close()))
  await t.stop()
})

describe('session', () => {
  it('sends workerregistered first, with a worker id and a reattach token', async () => {
    const w = await worker()
    assert.equal(w.frames[0]?.type, 'workerregistered')
    assert.match(w.workerId, UUID)
    assert.match(w.reattachToken, UUID)
    assert.notEqual(w.workerId, w.reattachToken)
  })

  it('answers JSON ping with pong', async () => {
    const w = await worker()
    w.send({ type: 'ping' })
    assert.deepEqual(await w.next((f) => f.type === 'pong'), { type: 'pong' })
  })

  it('applies registrations sent before the announce once the grace period ends', async () => {
    const callee = await worker()
    callee.serve('early::fn', () => 'ok')
    const caller = await worker()
    await waitFor(async () => (await caller.call('early::fn', null)).result === 'ok', "(await caller.call('early::fn', null)).result === 'ok'")
  })

  it('places functions in the namespace of the announce, even when it arrives after the registrations', async () => {
    const w = await connect()
    w.serve('ns::fn', () => 'from-shop')
    w.announce({ name: 'shop-worker', namespace: 'shop', runtime: 'node' })
    const caller = await worker()
    const inShop = await caller.call('ns::fn', null, { namespace: 'shop' })
    assert.equal(inShop.result, 'from-shop')
    const inDefault = await caller.call('ns::fn', null)
    assert.deepEqual(inDefault.error, {
      code: 'function_not_found',
      message: 'Function ns::fn not found. It is registered in namespace(s): shop',
    })
  })

  it('falls back to default when a namespaced call names an id registered only there', async () => {
    const w = await worker({ name: 'defaults' })
    w.serve('shared::fn', () => 'default-copy')
    const caller = await worker()
    await waitFor(async () => (await caller.call('shared::fn', null, { namespace: 'elsewhere' })).result === 'default-copy', "(await caller.call('shared::fn', null, { namespace: 'elsewhere' })).result === 'default-copy'")
  })

  it('refuses a blank namespace with INVALID_NAMESPACE', async () => {
    const caller = await worker()
    const r = await caller.call('any::fn', null, { namespace: '  ' })
    assert.equal(r.error.code, 'INVALID_NAMESPACE')
  })
})

describe('invocation', () => {
  it('routes a synchronous call and relays the result with the caller’s invocation id', async () => {
    const callee = await worker({ name: 'math' })
    callee.serve('math::add', (d: { a: number; b: number }) => ({ c: d.a + d.b }))
    const caller = await worker({ name: 'caller' })
    await waitFor(async () => (await caller.call('math::add', { a: 2, b: 3 })).result?.c === 5, "(await caller.call('math::add', { a: 2, b: 3 })).result?.c === 5")
    const r = await caller.call('math::add', { a: 40, b: 2 }, { invocation_id: 'mine-1' })
    assert.deepEqual(r, { type: 'invocationresult', invocation_id: 'mine-1', function_id: 'math::add', result: { c: 42 } })
  })

  it('gives the callee a fresh invocation id, the data unchanged and svc.function.id in baggage', async () => {
    const callee = await worker({ name: 'echo' })
    let seen: Record<string, unknown> = {}
    callee.serve('echo::frame', (_d, frame) => {
      seen = frame
      return null
    })
    const caller = await worker()
    await waitFor(async () => !(await caller.call('echo::frame', { x: 1 }, { invocation_id: 'abc', baggage: 'k=v', metadata: { m: 1 } })).error, 'the condition')
    assert.notEqual(seen.invocation_id, 'abc')
    assert.match(String(seen.invocation_id), UUID)
    assert.deepEqual(seen.data, { x: 1 })
    assert.deepEqual(seen.metadata, { m: 1 })
    assert.equal(seen.action, undefined)
    assert.equal(seen.namespace, undefined)
    assert.match(String(seen.baggage), /^k=v,svc\.function\.id=echo%3A%3Aframe,iii\.function\.id=echo%3A%3Aframe$/)
  })

  it('passes a handler error through with its code', async () => {
    const callee = await worker()
    callee.serve('fail::now', () => {
      throw Object.assign(new Error('nope'), { code: 'ORDER_INVALID' })
    })
    const caller = await worker()
    await waitFor(async () => (await caller.call('fail::now', {})).error?.code === 'ORDER_INVALID', "(await caller.call('fail::now', {})).error?.code === 'ORDER_INVALID'")
  })

  it('removes only this connection’s replica on unregisterfunction', async () => {
    const a = await worker({ name: 'a' })
    const b = await worker({ name: 'b' })
    a.serve('unreg::fn', () => 'a')
    b.serve('unreg::fn', () => 'b')
    await waitFor(() => t.engine.functions.get('default', 'unreg::fn')?.replicas.length === 2, "t.engine.functions.get('default', 'unreg::fn')?.replicas.length === 2")
    a.send({ type: 'unregisterfunction', id: 'unreg::fn' })
    a.send({ type: 'unregisterfunction', id: 'never::registered' })
    await waitFor(() => t.engine.functions.get('default', 'unreg::fn')?.replicas.length === 1, "t.engine.functions.get('default', 'unreg::fn')?.replicas.length === 1")
    const caller = await worker()
    assert.equal((await caller.call('unreg::fn', null)).result, 'b')
    b.send({ type: 'unregisterfunction', id: 'unreg::fn' })
    await waitFor(async () => (await caller.call('unreg::fn', null)).error?.code === 'function_not_found', "(await caller.call('unreg::fn', null)).error?.code === 'function_not_found'")
  })

  it('answers an unknown function with the exact not-found message', async () => {
    const caller = await worker()
    const r = await caller.call('missing::fn', {})
    assert.deepEqual(r.error, { code: 'function_not_found', message: 'Function missing::fn not found' })
  })

  it('sends nothing back for a void call, but still executes it', async () => {
    const callee = await worker()
    let calls = 0
    callee.serve('void::target', () => {
      calls++
      return 'ignored'
    })
    const caller = await worker()
    await waitFor(async () => !(await caller.call('void::target', null)).error, "!(await caller.call('void::target', null)).error")
    caller.send({ type: 'invokefunction', invocation_id: 'v1', function_id: 'void::target', data: null, action: { type: 'void' } })
    caller.send({ type: 'invokefunction', invocation_id: 'v2', function_id: 'missing::void', data: null, action: { type: 'void' } })
    await waitFor(() => calls === 2, 'calls === 2')
    assert.ok(await caller.silent((f) => f.invocation_id === 'v1' || f.invocation_id === 'v2'))
  })

  it('balances calls round-robin across replicas', async () => {
    const a = await worker({ name: 'replica' })
    const b = await worker({ name: 'replica' })
    const counts = { a: 0, b: 0 }
    a.serve('rr::fn', () => ++counts.a)
    b.serve('rr::fn', () => ++counts.b)
    const caller = await worker()
    await waitFor(async () => {
      const list = (await t.engine.inject({ function_id: 'engine::functions::info', data: { function_id: 'rr::fn' } })) as { replica_count: number }
      return list.replica_count === 2
    }, 'the condition')
    for (let i = 0; i < 6; i++) await caller.call('rr::fn', null)
    assert.deepEqual(counts, { a: 3, b: 3 })
  })

  it('fails an in-flight call with invocation_stopped when the callee disconnects', async () => {
    const callee = await worker()
    callee.serve('slow::fn', () => new Promise(() => {}))
    const caller = await worker()
    await waitFor(() => t.engine.functions.get('default', 'slow::fn') !== undefined, "t.engine.functions.get('default', 'slow::fn') !== undefined")
    const pending = caller.call('slow::fn', null)
    await waitFor(() => t.engine.functions.get('default', 'slow::fn')!.replicas[0]!.peer.activeInvocations === 1, "t.engine.functions.get('default', 'slow::fn')!.replicas[0]!.peer.activeInvocations === 1")
    await callee.close()
    assert.deepEqual((await pending).error, { code: 'invocation_stopped', message: 'Invocation stopped' })
  })

  it('ignores results from a connection other than the callee', async () => {
    const callee = await worker()
    let legId = ''
    callee.serve('hijack::fn', (_d, frame) => {
      legId = frame.invocation_id
      return new Promise((resolve) => setTimeout(() => resolve('real'), 100))
    })
    const intruder = await worker()
    const caller = await worker()
    await waitFor(() => t.engine.functions.get('default', 'hijack::fn') !== undefined, "t.engine.functions.get('default', 'hijack::fn') !== undefined")
    const pending = caller.call('hijack::fn', null)
    await waitFor(() => legId !== '', "legId !== ''")
    intruder.send({ type: 'invocationresult', invocation_id: legId, function_id: 'hijack::fn', result: 'fake' })
    assert.equal((await pending).result, 'real')
  })

  it('times out engine-originated calls', async () => {
    const callee = await worker()
    callee.serve('never::answers', () => new Promise(() => {}))
    await waitFor(() => t.engine.functions.get('default', 'never::answers') !== undefined, "t.engine.functions.get('default', 'never::answers') !== undefined")
    await assert.rejects(t.engine.inject({ function_id: 'never::answers', data: null, timeoutMs: 50 }), {
      code: 'TIMEOUT',
      message: 'invocation timed out after 50ms',
    })
  })

  it('lets a worker invoke its own function while awaiting a result', async () => {
    const w = await worker()
    w.serve('self::inner', () => 'inner')
    w.serve('self::outer', async () => (await w.call('self::inner', null)).result + '+outer')
    const caller = await worker()
    await waitFor(async () => (await caller.call('self::outer', null)).result === 'inner+outer', "(await caller.call('self::outer', null)).result === 'inner+outer'")
  })

  it('answers an enqueue with enqueue_error when no queue worker runs', async () => {
    const caller = await worker()
    const r = await caller.call('any::fn', {}, { action: { type: 'enqueue', queue: 'default' } })
    assert.deepEqual(r.error, {
      code: 'enqueue_error',
      message: 'No queue provider is installed; enable the queue worker (svc worker add queue)',
    })
  })
})

describe('lenient decoding and malformed frames', () => {
  it('answers a malformed invocation that carries an invocation id with invalid_message', async () => {
    const w = await worker()
    w.send({ type: 'invokefunction', invocation_id: 'bad-1' })
    const r = await w.next((f) => f.invocation_id === 'bad-1')
    assert.equal(r.type, 'invocationresult')
    assert.equal(r.error.code, 'invalid_message')
    assert.match(r.error.message, /^Invalid message: function_id is required/)

    w.send({ invocation_id: 'bad-2', function_id: 'x' })
    assert.equal((await w.next((f) => f.invocation_id === 'bad-2')).error.code, 'invalid_message')

    w.send({ type: 'invokefunction', invocation_id: 'bad-3', function_id: 42 })
    assert.equal((await w.next((f) => f.invocation_id === 'bad-3')).error.code, 'invalid_message')
  })

  it('stays silent for malformed void calls and ignores unknown types and empty frames', async () => {
    const w = await worker()
    w.send({ type: 'invokefunction', invocation_id: 'bad-void', action: { type: 'void' } })
    w.send({ type: 'somethingnew', invocation_id: 'x' })
    w.send({ type: 'registerservice', id: 'billing', name: 'Billing' })
    w.send({ type: 'pong' })
    w.send({ type: 'workerregistered', worker_id: 'x', reattach_token: 'y' })
    w.send('   ')
    w.send('not json')
    assert.ok(await w.silent((f) => f.type !== 'pong'))
    w.send({ type: 'ping' })
    await w.next((f) => f.type === 'pong')
  })

  it('treats a missing data field as null', async () => {
    const callee = await worker()
    let seen: unknown = 'unset'
    callee.serve('nodata::fn', (d) => {
      seen = d
      return 1
    })
    const caller = await worker()
    await waitFor(() => t.engine.functions.get('default', 'nodata::fn') !== undefined, "t.engine.functions.get('default', 'nodata::fn') !== undefined")
    caller.send({ type: 'invokefunction', invocation_id: 'nd', function_id: 'nodata::fn' })
    await caller.next((f) => f.invocation_id === 'nd')
    assert.equal(seen, null)
  })

  it('rejects a registration without id and a trigger without trigger_type', async () => {
    const w = await worker()
    w.send({ type: 'registerfunction', description: 'no id' })
    const rejected = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(rejected.code, 'FUNCTION_NAMESPACE_CONFLICT')
    assert.equal(rejected.reason, 'invalid')
    assert.equal(rejected.message, 'registration has no id')
    assert.equal(rejected.owner_worker_id, '')
    w.send({ type: 'registertrigger', id: 't-bad', function_id: 'x' })
    const result = await w.next((f) => f.type === 'triggerregistrationresult')
    assert.equal(result.id, 't-bad')
    assert.equal(result.error.code, 'invalid_message')
  })

  it('refuses reserved function ids and engine-owned trigger types', async () => {
    const w = await worker()
    w.send({ type: 'registerfunction', id: 'engine::functions::list' })
    const r1 = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(r1.reason, 'reserved_id')
    assert.equal(r1.function_id, 'engine::functions::list')
    assert.equal(r1.message, "function id 'engine::functions::list' is reserved by the engine")
    w.send({ type: 'registertriggertype', id: 'engine::workers-available', description: '' })
    const r2 = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(r2.reason, 'reserved_id')
    assert.equal(r2.trigger_type_id, 'engine::workers-available')
  })
})

describe('reconnection and ownership', () => {
  it('reattach retires the previous connection and its registrations', async () => {
    const old = await worker({ name: 'phoenix' })
    old.serve('phoenix::fn', () => 'old')
    await waitFor(() => t.engine.functions.get('default', 'phoenix::fn') !== undefined, "t.engine.functions.get('default', 'phoenix::fn') !== undefined")
    const closed = old.closed
    const fresh = await worker()
    fresh.send({ type: 'reattach', previous_worker_id: old.workerId, reattach_token: old.reattachToken })
    fresh.announce({ name: 'phoenix' })
    fresh.serve('phoenix::fn', () => 'new')
    await closed
    const caller = await worker()
    assert.equal((await caller.call('phoenix::fn', null)).result, 'new')
    assert.equal(t.engine.functions.get('default', 'phoenix::fn')!.replicas.length, 1)
  })

  it('ignores a reattach with a wrong token', async () => {
    const victim = await worker({ name: 'victim' })
    const attacker = await worker()
    attacker.send({ type: 'reattach', previous_worker_id: victim.workerId, reattach_token: 'guess' })
    attacker.send({ type: 'ping' })
    await attacker.next((f) => f.type === 'pong')
    assert.equal(victim.isOpen, true)
  })

  it('never lets a stale connection’s cleanup remove the routes of its successor', async () => {
    const stale = await worker({ name: 'flaky' })
    stale.serve('flaky::fn', () => 'stale')
    const successor = await worker({ name: 'flaky' })
    successor.serve('flaky::fn', () => 'successor')
    await waitFor(() => t.engine.functions.get('default', 'flaky::fn')?.replicas.length === 2, "t.engine.functions.get('default', 'flaky::fn')?.replicas.length === 2")
    await stale.close()
    const caller = await worker()
    for (let i = 0; i < 3; i++) assert.equal((await caller.call('flaky::fn', null)).result, 'successor')
  })
})

describe('triggers', () => {
  it('parks a binding until its type appears, then delivers it to the provider', async () => {
    const consumer = await worker({ name: 'consumer' })
    consumer.send({ type: 'registertrigger', id: 'wh-1', trigger_type: 'webhook', function_id: 'orders::on', config: { path: '/a' }, metadata: { team: 'x' } })
    await waitFor(async () => {
      const info = (await t.engine.inject({ function_id: 'engine::registered-triggers::info', data: { id: 'wh-1' } }).catch(() => null)) as { status: string } | null
      return info?.status === 'pending'
    }, 'the condition')
    const provider = await worker({ name: 'provider' })
    provider.send({ type: 'registertriggertype', id: 'webhook', description: 'Incoming webhooks' })
    const delivered = await provider.next((f) => f.type === 'registertrigger')
    assert.deepEqual(delivered, {
      type: 'registertrigger',
      id: 'wh-1',
      trigger_type: 'webhook',
      function_id: 'orders::on',
      config: { path: '/a' },
      metadata: { team: 'x' },
    })
    provider.send({ type: 'triggerregistrationresult', id: 'wh-1', trigger_type: 'webhook', function_id: 'orders::on' })

    // A refusal reaches the consumer and marks the binding failed.
    consumer.send({ type: 'registertrigger', id: 'wh-2', trigger_type: 'webhook', function_id: 'orders::on', config: {} })
    await provider.next((f) => f.type === 'registertrigger' && f.id === 'wh-2')
    provider.send({ type: 'triggerregistrationresult', id: 'wh-2', trigger_type: 'webhook', function_id: 'orders::on', error: { code: 'trigger_registration_failed', message: 'path is required' } })
    const failure = await consumer.next((f) => f.type === 'triggerregistrationresult')
    assert.deepEqual(failure.error, { code: 'trigger_registration_failed', message: 'path is required' })
    const listed = (await t.engine.inject({ function_id: 'engine::registered-triggers::list', data: { trigger_type: 'webhook' } })) as {
      registered_triggers: Array<{ id: string; status: string; config_summary: string; worker_name: string }>
    }
    assert.deepEqual(
      listed.registered_triggers.map((b) => [b.id, b.status, b.worker_name]),
      [
        ['wh-1', 'active', 'consumer'],
        ['wh-2', 'failed', 'consumer'],
      ],
    )

    // Unregistering the trigger reaches the provider.
    consumer.send({ type: 'unregistertrigger', id: 'wh-1' })
    const removed = await provider.next((f) => f.type === 'unregistertrigger')
    assert.deepEqual(removed, { type: 'unregistertrigger', id: 'wh-1', trigger_type: 'webhook', function_id: 'orders::on' })

    // The consumer's disconnect removes its remaining binding at the provider.
    await consumer.close()
    const gone = await provider.next((f) => f.type === 'unregistertrigger')
    assert.equal(gone.id, 'wh-2')
  })

  it('moves bindings to the next provider when the active one leaves, and parks them when none is left', async () => {
    const first = await worker({ name: 'p1' })
    first.send({ type: 'registertriggertype', id: 'mqtt', description: 'MQTT' })
    const second = await worker({ name: 'p2' })
    const consumer = await worker({ name: 'c' })
    await waitFor(() => t.engine.triggers.activeProvider('default', 'mqtt') !== undefined, "t.engine.triggers.activeProvider('default', 'mqtt') !== undefined")
    second.send({ type: 'registertriggertype', id: 'mqtt', description: 'MQTT too' })
    await waitFor(() => t.engine.triggers.activeProvider('default', 'mqtt')?.peer.name === 'p2', "t.engine.triggers.activeProvider('default', 'mqtt')?.peer.name === 'p2'")
    consumer.send({ type: 'registertrigger', id: 'mq-1', trigger_type: 'mqtt', function_id: 'x::y', config: {} })
    await second.next((f) => f.type === 'registertrigger' && f.id === 'mq-1')

    second.send({ type: 'unregistertriggertype', id: 'mqtt' })
    await first.next((f) => f.type === 'registertrigger' && f.id === 'mq-1')
    assert.ok(await second.silent((f) => f.type === 'unregistertrigger'))

    await first.close()
    await waitFor(() => t.engine.triggers.getBinding('mq-1')?.status === 'pending', "t.engine.triggers.getBinding('mq-1')?.status === 'pending'")
  })

  it('engine::register_trigger creates a binding owned by no connection and waits for the provider', async () => {
    const provider = await worker({ name: 'cronish' })
    provider.send({ type: 'registertriggertype', id: 'ticker', description: 'ticks' })
    await waitFor(() => t.engine.triggers.activeProvider('default', 'ticker') !== undefined, "t.engine.triggers.activeProvider('default', 'ticker') !== undefined")
    provider.onFrame((f) => {
      if (f.type === 'registertrigger') {
        const error = f.config.every ? undefined : { code: 'trigger_registration_failed', message: 'every is required' }
        provider.send({ type: 'triggerregistrationresult', id: f.id, trigger_type: f.trigger_type, function_id: f.function_id, ...(error ? { error } : {}) })
      }
    })
    const caller = await worker()
    const ok = await caller.call('engine::register_trigger', { trigger_type: 'ticker', function_id: 'a::b', config: { every: 5 } })
    assert.match(ok.result.id, UUID)
    const refused = await caller.call('engine::register_trigger', { trigger_type: 'ticker', function_id: 'a::b', config: {} })
    assert.deepEqual(refused.error, { code: 'trigger_registration_failed', message: 'trigger_registration_failed: every is required' })
    await caller.close()
    assert.equal(t.engine.triggers.getBinding(ok.result.id)?.status, 'active')
    const removed = (await t.engine.inject({ function_id: 'engine::unregister_trigger', data: { id: ok.result.id } })) as { removed: boolean }
    assert.equal(removed.removed, true)
  })
})

describe('engine functions', () => {
  it('lists workers, functions and trigger types, and describes them', async () => {
    const w = await worker({ name: 'inventory', description: 'Stock levels\u0007', runtime: 'node', version: '1.2.3', pid: 4242 })
    w.serve('inventory::count', () => 7, { description: 'Count items', metadata: { public: true }, request_format: { type: 'object' } })
    w.send({ type: 'registertriggertype', id: 'stock-alert', description: 'Low stock' })
    const caller = await worker()
    await waitFor(() => t.engine.triggers.activeProvider('default', 'stock-alert') !== undefined, "t.engine.triggers.activeProvider('default', 'stock-alert') !== undefined")

    const workers = (await caller.call('engine::workers::list', {})).result.workers as Array<Record<string, unknown>>
    const inventory = workers.find((x) => x.name === 'inventory')!
    assert.equal(inventory.description, 'Stock levels')
    assert.equal(inventory.status, 'connected')
    assert.equal(inventory.runtime, 'node')
    assert.equal(inventory.function_count, 1)
    assert.ok(workers.some((x) => x.name === null), 'connections that never announced are listed with name null')

    const functions = (await caller.call('engine::functions::list', { prefix: 'inventory::' })).result.functions
    assert.deepEqual(functions, [
      { function_id: 'inventory::count', namespace: 'default', worker_name: 'inventory', replica_count: 1, description: 'Count items', metadata: { public: true } },
    ])
    const hidden = (await caller.call('engine::functions::list', {})).result.functions as Array<{ function_id: string }>
    assert.ok(!hidden.some((f) => f.function_id.startsWith('engine::')))
    const all = (await caller.call('engine::functions::list', { include_internal: true })).result.functions as Array<{ function_id: string }>
    assert.ok(all.some((f) => f.function_id === 'engine::functions::list'))

    const info = (await caller.call('engine::functions::info', { function_id: 'inventory::count' })).result
    assert.deepEqual(info.request_schema, { type: 'object' })
    assert.equal(info.replicas[0].worker_name, 'inventory')
    const missing = await caller.call('engine::functions::info', { function_id: 'nope::nope' })
    assert.deepEqual(missing.error, { code: 'NOT_FOUND', message: "Function 'nope::nope' is not registered." })

    const types = (await caller.call('engine::triggers::list', { search: 'stock' })).result.triggers
    assert.deepEqual(types, [{ id: 'stock-alert', namespace: 'default', worker_name: 'inventory', description: 'Low stock' }])
    const typeInfo = (await caller.call('engine::triggers::info', { id: 'stock-alert' })).result
    assert.equal(typeInfo.instance_count, 0)
    const noType = await caller.call('engine::triggers::info', { id: 'nope' })
    assert.equal(noType.error.message, "Trigger type 'nope' is not registered in namespace 'default'.")

    const byName = (await caller.call('engine::workers::info', { name: 'inventory' })).result
    assert.equal(byName.worker.pid, 4242)
    assert.deepEqual(byName.functions.map((f: { function_id: string }) => f.function_id), ['inventory::count'])
    assert.deepEqual(byName.trigger_types.map((x: { id: string }) => x.id), ['stock-alert'])
    const noWorker = await caller.call('engine::workers::info', { name: 'ghost' })
    assert.deepEqual(noWorker.error, { code: 'NOT_FOUND', message: "Worker 'ghost' is not connected." })
  })

  it('rejects non-object input with INVALID_ARGUMENTS', async () => {
    const caller = await worker()
    const r = await caller.call('engine::functions::list', 'text')
    assert.equal(r.error.code, 'INVALID_ARGUMENTS')
    assert.equal(r.error.message, 'Invalid input for engine::functions::list: input must be an object')
  })
})

describe('engine trigger types', () => {
  it('engine::workers-available fires on connect, announce and disconnect', async () => {
    const watcher = await worker({ name: 'watcher' })
    const events: Array<{ event: string; worker_id: string }> = []
    watcher.serve('watch::workers', (data) => void events.push(data))
    watcher.send({ type: 'registertrigger', id: 'watch-w', trigger_type: 'engine::workers-available', function_id: 'watch::workers', config: {} })
    await waitFor(() => t.engine.triggers.getBinding('watch-w')?.status === 'active', "t.engine.triggers.getBinding('watch-w')?.status === 'active'")
    const subject = await connect()
    subject.announce({ name: 'subject' })
    await waitFor(() => events.filter((e) => e.worker_id === subject.workerId).length === 2, 'events.filter((e) => e.worker_id === subject.workerId).length === 2')
    await subject.close()
    await waitFor(() => events.filter((e) => e.worker_id === subject.workerId).length === 3, 'events.filter((e) => e.worker_id === subject.workerId).length === 3')
    assert.deepEqual(
      events.filter((e) => e.worker_id === subject.workerId).map((e) => e.event),
      ['worker_connected', 'worker_metadata_updated', 'worker_disconnected'],
    )
  })

  it('engine::functions-available fires once for a burst of registrations, listing every function', async () => {
    const watcher = await worker({ name: 'fn-watcher' })
    const fires: Array<{ event: string; functions: Array<{ function_id: string }> }> = []
    watcher.serve('watch::functions', (data) => void fires.push(data))
    watcher.send({ type: 'registertrigger', id: 'watch-f', trigger_type: 'engine::functions-available', function_id: 'watch::functions', config: {} })
    await waitFor(() => t.engine.triggers.getBinding('watch-f')?.status === 'active', 'the watch-f binding active')
    // Markers: a function registered after a change fires in the next window, so once a fire lists
    // the marker, every earlier window has fired.
    const listing = (id: string) => fires.findIndex((f) => f.functions.some((fn) => fn.function_id === id))
    watcher.serve('fn-watcher::before', () => null)
    await waitFor(() => listing('fn-watcher::before') >= 0, 'a fire listing fn-watcher::before')
    fires.length = 0
    const burst = await worker({ name: 'burst' })
    for (const id of ['burst::a', 'burst::b', 'burst::c']) burst.serve(id, () => null)
    await waitFor(() => fires.length === 1, 'fires.length === 1')
    burst.serve('burst::after', () => null)
    await waitFor(() => listing('burst::after') >= 0, 'a fire listing burst::after')
    assert.equal(listing('burst::after'), 1, 'the burst fired once, then the marker')
    assert.equal(fires[0]!.event, 'functions_changed')
    const ids = fires[0]!.functions.map((f) => f.function_id)
    for (const id of ['burst::a', 'burst::b', 'burst::c', 'engine::functions::list']) assert.ok(ids.includes(id), id)
  })
})
})
}

describe('WebSocket specifics', () => {
  let ws: TestEngine
  before(async () => {
    ws = await startTestEngine({ builtins: [] })
  })
  after(() => ws.stop())

  it('answers WebSocket pings with pongs carrying the payload', async () => {
    const socket = new WebSocket(ws.url)
    await new Promise((resolve) => socket.once('open', resolve))
    const payload = await new Promise<Buffer>((resolve) => {
      socket.once('pong', resolve)
      socket.ping(Buffer.from('hello'))
    })
    assert.equal(payload.toString(), 'hello')
    socket.close()
    await new Promise((resolve) => socket.once('close', resolve))
    await waitFor(async () => ((await ws.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: unknown[] }).workers.length === 0, 'the condition')
  })

  it('accepts telemetry sockets on /otel without listing them as workers, and 404s other paths', async () => {
    const t = ws
    const before = (await t.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: unknown[] }
    const otel = new WebSocket(`${t.url}/otel`)
    await new Promise((resolve, reject) => (otel.once('open', resolve), otel.once('error', reject)))
    otel.send(Buffer.concat([Buffer.from('OTLP'), Buffer.from('{"resourceSpans":[]}')]))
    otel.send('{"type":"ping"}')
    const pong = await new Promise<string>((resolve) => otel.once('message', (d) => resolve(d.toString())))
    assert.equal(pong, '{"type":"pong"}')
    const listed = (await t.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: unknown[] }
    assert.equal(listed.workers.length, before.workers.length)
    otel.close()

    const other = new WebSocket(`${t.url}/nowhere`)
    const status = await new Promise<number>((resolve) => other.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0)))
    assert.equal(status, 404)
    const plain = await fetch(t.url.replace('ws:', 'http:') + '/')
    assert.equal(plain.status, 404)
  })
})

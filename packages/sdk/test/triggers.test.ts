/**
 * Triggers and trigger types (sdk.md §5, protocol.md §5.3–§5.7, §8) against a scripted WebSocket peer.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { TriggerAction } from '../src/index.ts'
import type { InitOptions, TriggerConfig } from '../src/types.ts'
import { FAST_RECONNECT, makeClient } from './support/client.ts'
import { EnginePeer, type Frame } from './support/peer.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function connected(t: TestContext, options: InitOptions = {}) {
  const p = await EnginePeer.start()
  t.after(() => p.close())
  const made = makeClient(t, p.url, options)
  const conn = await p.connection(0)
  await waitFor(() => made.client.getConnectionState() === 'connected', 'connected', 5000, 5)
  return { ...made, peer: p, conn }
}

/** A provider handler that records what it is given. */
function recordingHandler(options: { refuse?: string; failUnregister?: boolean } = {}) {
  const registered: TriggerConfig[] = []
  const unregistered: TriggerConfig[] = []
  return {
    registered,
    unregistered,
    handler: {
      async registerTrigger(trigger: TriggerConfig) {
        if (options.refuse !== undefined) throw new Error(options.refuse)
        registered.push(trigger)
      },
      async unregisterTrigger(trigger: TriggerConfig) {
        unregistered.push(trigger)
        if (options.failUnregister) throw new Error('cannot stop listener')
      },
    },
  }
}

const resultFor = (id: string) => (f: Frame) => f.type === 'triggerregistrationresult' && f.id === id

describe('registerTrigger (sdk.md §5)', () => {
  it('sends registertrigger with a generated id and the worker namespace as default target', async (t) => {
    const { client, conn } = await connected(t, { namespace: 'prod' })
    const a = client.registerTrigger({
      type: 'cron',
      function_id: 'reports::daily',
      config: { expression: '0 0 * * *' },
      metadata: { team: 'ops' },
    })
    const b = client.registerTrigger({
      type: 'http',
      function_id: 'api::get',
      config: { api_path: '/x' },
      namespace: 'edge',
      trigger_namespace: 'default',
    })
    const c = client.registerTrigger({ type: 'log', function_id: 'engine::log::info', config: undefined })
    assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.notEqual(a.id, b.id)
    assert.deepEqual(await conn.waitForType('registertrigger', (f) => f.id === a.id), {
      type: 'registertrigger',
      id: a.id,
      trigger_type: 'cron',
      function_id: 'reports::daily',
      config: { expression: '0 0 * * *' },
      metadata: { team: 'ops' },
      namespace: 'prod',
    })
    const fb = await conn.waitForType('registertrigger', (f) => f.id === b.id)
    assert.equal(fb.namespace, 'edge')
    assert.equal(fb.trigger_namespace, 'default')
    const fc = await conn.waitForType('registertrigger', (f) => f.id === c.id)
    assert.equal('namespace' in fc, false)
    assert.deepEqual(fc.config, {})

    a.unregister()
    a.unregister()
    assert.deepEqual(await conn.waitForType('unregistertrigger'), { type: 'unregistertrigger', id: a.id, trigger_type: 'cron' })
    await waitFor(() => conn.frames.length >= 5, 'frames', 5000, 5)
    assert.equal(conn.frames.filter((f) => f.type === 'unregistertrigger').length, 1)
  })

  it('throws for a blank namespace or trigger_namespace', async (t) => {
    const { client } = await connected(t)
    assert.throws(() => client.registerTrigger({ type: 'cron', function_id: 'a::b', config: {}, namespace: ' ' }), /namespace is empty/)
    assert.throws(
      () => client.registerTrigger({ type: 'cron', function_id: 'a::b', config: {}, trigger_namespace: '' }),
      /trigger_namespace is empty/,
    )
  })

  it('reports a failed binding to registration error listeners', async (t) => {
    const { client, conn, warnings } = await connected(t, { namespace: 'prod' })
    const errors: unknown[] = []
    client.addRegistrationErrorListener((e) => errors.push(e))
    const trigger = client.registerTrigger({ type: 'http', function_id: 'api::get', config: { api_path: '/x' } })
    await conn.waitForType('registertrigger')
    conn.send({
      type: 'triggerregistrationresult',
      id: trigger.id,
      trigger_type: 'http',
      function_id: 'api::get',
      error: { code: 'ROUTE_CONFLICT', message: "Route 'GET /x' conflicts" },
    })
    await waitFor(() => errors.length === 1, 'listener called', 5000, 5)
    assert.deepEqual(errors[0], {
      kind: 'trigger',
      id: trigger.id,
      code: 'ROUTE_CONFLICT',
      message: "Route 'GET /x' conflicts",
      trigger_type: 'http',
      function_id: 'api::get',
      namespace: 'prod',
    })
    assert.match(warnings.join('\n'), /ROUTE_CONFLICT/)
  })
})

describe('trigger type providers (protocol.md §8.3)', () => {
  it('registers the type, runs the handler for delivered bindings and answers the result', async (t) => {
    const { client, conn } = await connected(t)
    const rec = recordingHandler()
    client.registerTriggerType(
      {
        id: 'webhook',
        description: 'Incoming webhooks',
        trigger_request_format: { type: 'object', required: ['path'] },
        call_request_format: { type: 'object' },
      },
      rec.handler,
    )
    assert.deepEqual(await conn.waitForType('registertriggertype'), {
      type: 'registertriggertype',
      id: 'webhook',
      description: 'Incoming webhooks',
      trigger_request_format: { type: 'object', required: ['path'] },
      call_request_format: { type: 'object' },
    })
    conn.send({
      type: 'registertrigger',
      id: 't1',
      trigger_type: 'webhook',
      function_id: 'orders::on-webhook',
      config: { path: '/orders' },
      metadata: { team: 'orders' },
      namespace: 'shop',
    })
    assert.deepEqual(await conn.waitFor(resultFor('t1')), {
      type: 'triggerregistrationresult',
      id: 't1',
      trigger_type: 'webhook',
      function_id: 'orders::on-webhook',
    })
    assert.deepEqual(rec.registered, [
      { id: 't1', function_id: 'orders::on-webhook', config: { path: '/orders' }, metadata: { team: 'orders' }, namespace: 'shop' },
    ])

    // The provider fires by invoking the target itself.
    const binding = rec.registered[0]!
    await client.trigger({
      function_id: binding.function_id,
      payload: { body: 'x' },
      namespace: binding.namespace,
      metadata: binding.metadata,
      action: TriggerAction.Void(),
    })
    const fire = await conn.waitForType('invokefunction', (f) => f.function_id === 'orders::on-webhook')
    assert.equal(fire.namespace, 'shop')
    assert.deepEqual(fire.metadata, { team: 'orders' })

    conn.send({ type: 'unregistertrigger', id: 't1', trigger_type: 'webhook', function_id: 'orders::on-webhook' })
    await waitFor(() => rec.unregistered.length === 1, 'unregisterTrigger called', 5000, 5)
    assert.deepEqual(rec.unregistered[0], rec.registered[0])
  })

  it('defaults a binding without namespace to `default` for the provider', async (t) => {
    const { client, conn } = await connected(t, { namespace: 'prod' })
    const rec = recordingHandler()
    client.registerTriggerType({ id: 'mqtt', description: '' }, rec.handler)
    conn.send({ type: 'registertrigger', id: 't2', trigger_type: 'mqtt', function_id: 'a::b', trigger_namespace: 'prod' })
    await conn.waitFor(resultFor('t2'))
    assert.deepEqual(rec.registered, [{ id: 't2', function_id: 'a::b', config: {}, namespace: 'default' }])
  })

  it('answers trigger_registration_failed with the thrown message, and trigger_type_not_found for unknown types', async (t) => {
    const { client, conn } = await connected(t)
    const rec = recordingHandler({ refuse: 'path is required' })
    client.registerTriggerType({ id: 'webhook', description: '' }, rec.handler)
    conn.send({ type: 'registertrigger', id: 'bad', trigger_type: 'webhook', function_id: 'a::b', config: {} })
    conn.send({ type: 'registertrigger', id: 'unknown', trigger_type: 'mqtt', function_id: 'a::b', config: {} })
    assert.deepEqual((await conn.waitFor(resultFor('bad'))).error, {
      code: 'trigger_registration_failed',
      message: 'path is required',
    })
    assert.deepEqual((await conn.waitFor(resultFor('unknown'))).error, {
      code: 'trigger_type_not_found',
      message: 'Trigger type not found',
    })
    // A refused binding is not held: its removal does not reach the handler.
    conn.send({ type: 'unregistertrigger', id: 'bad', trigger_type: 'webhook' })
    conn.send({ type: 'ping' })
    await conn.waitForType('pong')
    assert.deepEqual(rec.unregistered, [])
  })

  it('logs errors thrown by unregisterTrigger', async (t) => {
    const { client, conn, warnings } = await connected(t)
    const rec = recordingHandler({ failUnregister: true })
    client.registerTriggerType({ id: 'webhook', description: '' }, rec.handler)
    conn.send({ type: 'registertrigger', id: 't1', trigger_type: 'webhook', function_id: 'a::b', config: {} })
    await conn.waitFor(resultFor('t1'))
    conn.send({ type: 'unregistertrigger', id: 't1', trigger_type: 'webhook' })
    await waitFor(() => warnings.some((w) => w.includes('cannot stop listener')), 'warning logged', 5000, 5)
  })

  it('lets go of held bindings when the connection is lost and re-registers the type on reconnect', async (t) => {
    const { client, conn, peer } = await connected(t, { reconnectionConfig: FAST_RECONNECT })
    const rec = recordingHandler()
    client.registerTriggerType({ id: 'webhook', description: 'hooks' }, rec.handler)
    conn.send({ type: 'registertrigger', id: 't1', trigger_type: 'webhook', function_id: 'a::b', config: {} })
    await conn.waitFor(resultFor('t1'))
    conn.ws.terminate()
    await waitFor(() => rec.unregistered.length === 1, 'binding released', 5000, 5)
    const next = await peer.connection(1)
    await next.waitForType('registertriggertype', (f) => f.id === 'webhook')
    next.send({ type: 'registertrigger', id: 't1', trigger_type: 'webhook', function_id: 'a::b', config: {} })
    await next.waitFor(resultFor('t1'))
    assert.equal(rec.registered.length, 2)
  })

  it('TriggerTypeRef binds functions to the type and unregister() stops providing it', async (t) => {
    const { client, conn } = await connected(t, { namespace: 'prod' })
    const rec = recordingHandler()
    const ref = client.registerTriggerType<{ path: string }>({ id: 'webhook', description: '' }, rec.handler)
    assert.equal(ref.id, 'webhook')
    const trigger = ref.registerTrigger('orders::a', { path: '/a' }, { v: 1 })
    const fn = ref.registerFunction('orders::b', () => 'b', { path: '/b' })
    const ta = await conn.waitForType('registertrigger', (f) => f.function_id === 'orders::a')
    assert.deepEqual(ta, {
      type: 'registertrigger',
      id: trigger.id,
      trigger_type: 'webhook',
      function_id: 'orders::a',
      config: { path: '/a' },
      metadata: { v: 1 },
      namespace: 'prod',
    })
    await conn.waitForType('registerfunction', (f) => f.id === 'orders::b')
    const tb = await conn.waitForType('registertrigger', (f) => f.function_id === 'orders::b')
    fn.unregister()
    await conn.waitForType('unregistertrigger', (f) => f.id === tb.id)
    await conn.waitForType('unregisterfunction', (f) => f.id === 'orders::b')

    conn.send({ type: 'registertrigger', id: ta.id, trigger_type: 'webhook', function_id: 'orders::a', config: { path: '/a' }, trigger_namespace: 'prod' })
    await conn.waitFor(resultFor(ta.id))
    ref.unregister()
    assert.deepEqual(await conn.waitForType('unregistertriggertype'), { type: 'unregistertriggertype', id: 'webhook' })
    // The engine sends no unregistertrigger for a type we stop providing; the SDK lets go itself.
    await waitFor(() => rec.unregistered.length === 1, 'binding released', 5000, 5)
    conn.send({ type: 'registertrigger', id: 'late', trigger_type: 'webhook', function_id: 'x::y' })
    assert.equal((await conn.waitFor(resultFor('late'))).error.code, 'trigger_type_not_found')
  })

  it('unregisterTriggerType({id, namespace}) sends the namespace the type was registered with', async (t) => {
    const { client, conn } = await connected(t)
    client.registerTriggerType({ id: 'webhook', description: '', namespace: 'edge' }, recordingHandler().handler)
    assert.equal((await conn.waitForType('registertriggertype')).namespace, 'edge')
    client.unregisterTriggerType({ id: 'webhook' }) // wrong namespace: nothing registered under it
    client.unregisterTriggerType({ id: 'webhook', namespace: 'edge' })
    assert.deepEqual(await conn.waitForType('unregistertriggertype'), {
      type: 'unregistertriggertype',
      id: 'webhook',
      namespace: 'edge',
    })
    assert.equal(conn.frames.filter((f) => f.type === 'unregistertriggertype').length, 1)
  })
})

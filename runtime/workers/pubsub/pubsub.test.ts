/**
 * svc-pubsub through a real engine (builtins.md §8): svc-sdk clients over the in-process harness,
 * and child-process workers over real WebSockets.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { RegistrationError, SvcClient } from 'svc-sdk'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import { bindingsSettled, connectClient, rejection as failure } from '../../../test/support/sdk-harness.ts'
import { ROOT } from '../../../test/support/processes.ts'
import { PubSubWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

interface Setup {
  test: TestEngine
  worker: PubSubWorker
  entries: ReturnType<typeof recordingLogger>['entries']
  clients: SvcClient[]
  client(name: string): SvcClient
}

async function setup(settings: unknown = {}): Promise<Setup> {
  const { log, entries } = recordingLogger()
  const worker = new PubSubWorker()
  const test = await startTestEngine({ builtins: [worker], settings: { 'svc-pubsub': settings }, log })
  const clients: SvcClient[] = []
  return {
    test,
    worker,
    entries,
    clients,
    client(name) {
      const client = connectClient(test.engine, name)
      clients.push(client)
      return client
    },
  }
}

async function teardown(s: Setup): Promise<void> {
  await Promise.all(s.clients.map((c) => c.shutdown()))
  await s.test.stop()
}

const bound = (s: Setup, ids: string[], status?: 'active' | 'failed') => bindingsSettled(s.test.engine, ids, status)

const publish = (s: Setup, data: unknown) => s.test.engine.inject({ function_id: 'publish', data })

describe('svc-pubsub fan-out (builtins.md §8)', () => {
  let s: Setup
  before(async () => {
    s = await setup()
  })
  after(() => teardown(s))

  it('reaches every subscribe trigger of the exact topic on every worker, with data unchanged', async () => {
    const got: Array<{ who: string; data: unknown }> = []
    const ids: string[] = []
    for (const name of ['a', 'b', 'c']) {
      const client = s.client(name)
      client.registerFunction(`${name}::on-order`, (data) => void got.push({ who: name, data }))
      ids.push(client.registerTrigger({ type: 'subscribe', function_id: `${name}::on-order`, config: { topic: 'orders' } }).id)
    }
    // A second trigger on worker a, and triggers of other topics that must not fire.
    const a = s.clients[0]!
    a.registerFunction('a::second', (data) => void got.push({ who: 'a2', data }))
    ids.push(a.registerTrigger({ type: 'subscribe', function_id: 'a::second', config: { topic: 'orders' } }).id)
    a.registerFunction('a::other', (data) => void got.push({ who: 'other', data }))
    ids.push(a.registerTrigger({ type: 'subscribe', function_id: 'a::other', config: { topic: 'Orders' } }).id)
    await bound(s, ids)

    const data = { id: 7, items: [1, 'two', null], nested: { ok: true } }
    assert.equal(await publish(s, { topic: 'orders', data }), undefined)
    await waitFor(() => got.length >= 4, 'got.length >= 4')
    // A marker on each topic after it: each trigger delivers in order, so a wrong delivery of the
    // first message would have come before the marker.
    await publish(s, { topic: 'orders', data: 'marker' })
    await publish(s, { topic: 'Orders', data: 'marker' })
    await waitFor(() => got.filter((g) => g.data === 'marker').length === 5, 'the markers at every trigger')
    const first = got.filter((g) => g.data !== 'marker')
    assert.deepEqual(first.map((g) => g.who).sort(), ['a', 'a2', 'b', 'c'])
    for (const g of first) assert.deepEqual(g.data, data)
  })

  it('isolates failures: one subscriber throwing does not stop the others, and it is logged', async () => {
    const got: string[] = []
    const ids: string[] = []
    const bad = s.client('bad')
    bad.registerFunction('bad::on', () => {
      throw Object.assign(new Error('boom'), { code: 'BOOM' })
    })
    ids.push(bad.registerTrigger({ type: 'subscribe', function_id: 'bad::on', config: { topic: 'iso' } }).id)
    for (const name of ['g1', 'g2']) {
      const client = s.client(name)
      client.registerFunction(`${name}::on`, () => void got.push(name))
      ids.push(client.registerTrigger({ type: 'subscribe', function_id: `${name}::on`, config: { topic: 'iso' } }).id)
    }
    await bound(s, ids)
    await publish(s, { topic: 'iso', data: 1 })
    await waitFor(() => got.length === 2 && s.entries.some((e) => e.level === 'error' && e.data?.function_id === 'bad::on'), "got.length === 2 && s.entries.some((e) => e.level === 'error' && e.data?.function_id === 'bad::on')")
    const logged = s.entries.find((e) => e.data?.function_id === 'bad::on')!
    assert.equal(logged.data?.trigger_id, ids[0])
    assert.equal(logged.data?.code, 'BOOM')
  })

  it('answers publish before a slow subscriber finishes', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let started = false
    const client = s.client('slow')
    client.registerFunction('slow::on', async () => {
      started = true
      await gate
    })
    const t = client.registerTrigger({ type: 'subscribe', function_id: 'slow::on', config: { topic: 'slow' } })
    await bound(s, [t.id])
    await publish(s, { topic: 'slow', data: {} })
    await waitFor(() => started, 'started')
    release()
  })

  it('unregistering one trigger leaves the other triggers of the topic', async () => {
    const got: string[] = []
    const client = s.client('unsub')
    client.registerFunction('unsub::one', () => void got.push('one'))
    client.registerFunction('unsub::two', () => void got.push('two'))
    const one = client.registerTrigger({ type: 'subscribe', function_id: 'unsub::one', config: { topic: 'u' } })
    const two = client.registerTrigger({ type: 'subscribe', function_id: 'unsub::two', config: { topic: 'u' } })
    await bound(s, [one.id, two.id])
    one.unregister()
    await waitFor(() => s.test.engine.triggers.getBinding(one.id) === undefined, 's.test.engine.triggers.getBinding(one.id) === undefined')
    await publish(s, { topic: 'u', data: 1 })
    await publish(s, { topic: 'u', data: 'marker' })
    // Both calls go to the same worker, in order: a delivery to the removed trigger would have come first.
    await waitFor(() => got.length >= 2, 'the message and the marker at the remaining trigger')
    assert.deepEqual(got, ['two', 'two'])
  })

  it('passes the trigger metadata as second argument; the condition sees data and metadata (§2.2, §2.3)', async () => {
    const got: Array<{ data: unknown; metadata: unknown }> = []
    const conditions: Array<{ data: unknown; metadata: unknown }> = []
    const client = s.client('meta')
    client.registerFunction('meta::on', (data, metadata) => void got.push({ data, metadata }))
    client.registerFunction('meta::only-even', (data, metadata) => {
      conditions.push({ data, metadata })
      return (data as { n: number }).n % 2 === 0
    })
    const t = client.registerTrigger({
      type: 'subscribe',
      function_id: 'meta::on',
      config: { topic: 'meta', condition_function_id: 'meta::only-even' },
      metadata: { tenant: 'acme' },
    })
    await bound(s, [t.id])
    for (const n of [1, 2, 3, 4]) await publish(s, { topic: 'meta', data: { n } })
    await publish(s, { topic: 'meta', data: { n: 6 } }) // a marker: the trigger delivers in order
    const isMarker = (g: { data: unknown }) => (g.data as { n: number }).n === 6
    await waitFor(() => got.some(isMarker), 'the marker delivered')
    assert.equal(conditions.filter((c) => !isMarker(c)).length, 4)
    assert.deepEqual(got.filter((g) => !isMarker(g)).map((g) => g.data).sort((x, y) => (x as { n: number }).n - (y as { n: number }).n), [{ n: 2 }, { n: 4 }])
    for (const g of [...got, ...conditions]) assert.deepEqual(g.metadata, { tenant: 'acme' })
  })

  it('does not deliver when the condition fails, and logs the failure', async () => {
    const got: unknown[] = []
    const client = s.client('cfail')
    client.registerFunction('cfail::on', (data) => void got.push(data))
    client.registerFunction('cfail::cond', () => {
      throw Object.assign(new Error('cannot decide'), { code: 'NOPE' })
    })
    const t = client.registerTrigger({ type: 'subscribe', function_id: 'cfail::on', config: { topic: 'cfail', condition_function_id: 'cfail::cond' } })
    await bound(s, [t.id])
    await publish(s, { topic: 'cfail', data: 1 })
    await waitFor(() => s.entries.some((e) => e.level === 'error' && e.data?.trigger_id === t.id), "s.entries.some((e) => e.level === 'error' && e.data?.trigger_id === t.id)")
    assert.equal(s.entries.find((e) => e.data?.trigger_id === t.id)?.data?.code, 'NOPE')
    assert.deepEqual(got, [])
  })

  it('refuses publish without a topic with topic_not_set (`Topic is not set`)', async () => {
    for (const data of [{}, { topic: '' }, { topic: null, data: 1 }, undefined]) {
      const { code, message } = await failure(publish(s, data))
      assert.deepEqual({ code, message }, { code: 'topic_not_set', message: 'Topic is not set' })
    }
    assert.equal((await failure(publish(s, { topic: 5 }))).code, 'INVALID_ARGUMENTS')
    assert.equal((await failure(publish(s, 'orders'))).code, 'INVALID_ARGUMENTS')
  })

  it('refuses a topic that is not well-formed text (a lone UTF-16 surrogate), which no Redis channel can carry, on every adapter', async () => {
    const refused = await failure(publish(s, { topic: 'orders\ud800', data: 1 }))
    assert.deepEqual({ code: refused.code, message: refused.message }, { code: 'INVALID_ARGUMENTS', message: 'topic contains a lone UTF-16 surrogate at index 6' })
    const client = s.client('lonetopic')
    const errors: RegistrationError[] = []
    client.addRegistrationErrorListener((e) => errors.push(e))
    client.registerFunction('lonetopic::on', () => undefined)
    const trigger = client.registerTrigger({ type: 'subscribe', function_id: 'lonetopic::on', config: { topic: '\udc00x' } })
    await bound(s, [trigger.id], 'failed')
    await waitFor(() => errors.length === 1, 'errors.length === 1')
    assert.deepEqual([errors[0]!.code, errors[0]!.message], ['INVALID_TRIGGER_CONFIG', 'topic contains a lone UTF-16 surrogate at index 0 for subscribe triggers'])
  })

  it('refuses a subscribe trigger with an empty or missing topic with INVALID_TRIGGER_CONFIG', async () => {
    const client = s.client('badtopic')
    const errors: RegistrationError[] = []
    client.addRegistrationErrorListener((e) => errors.push(e))
    client.registerFunction('badtopic::on', () => undefined)
    const ids = [
      client.registerTrigger({ type: 'subscribe', function_id: 'badtopic::on', config: { topic: '' } }).id,
      client.registerTrigger({ type: 'subscribe', function_id: 'badtopic::on', config: {} }).id,
      client.registerTrigger({ type: 'subscribe', function_id: 'badtopic::on', config: { topic: 3 } }).id,
    ]
    await bound(s, ids, 'failed')
    await waitFor(() => errors.length === 3, 'errors.length === 3')
    for (const e of errors) assert.equal(e.code, 'INVALID_TRIGGER_CONFIG')
    assert.equal(errors.find((e) => e.id === ids[0])?.message, 'topic is required for subscribe triggers')
  })

  it('bounds what a slow subscriber holds: 10 000 waiting messages, the oldest dropped with a warning', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const got: number[] = []
    const client = s.client('flood')
    client.registerFunction('flood::on', async (data: { n: number }) => {
      got.push(data.n)
      await gate
    })
    const t = client.registerTrigger({ type: 'subscribe', function_id: 'flood::on', config: { topic: 'flood' } })
    await bound(s, [t.id])
    await publish(s, { topic: 'flood', data: { n: 0 } })
    await waitFor(() => got.length === 1, 'got.length === 1')
    const total = 10_100
    for (let n = 1; n <= total; n++) await publish(s, { topic: 'flood', data: { n } })
    assert.ok(s.entries.some((e) => e.level === 'warn' && e.data?.trigger_id === t.id && /10000 undelivered events; dropped the oldest/.test(e.message)))
    release()
    await waitFor(() => got.length === 1 + 10_000, 'got.length === 1 + 10_000', 30_000)
    // The 100 oldest waiting messages were dropped; the newest 10 000 arrived.
    assert.equal(got[1], total - 10_000 + 1)
    assert.equal(got.at(-1), total)
  })

  it('random publish payloads never crash the worker: no result, topic_not_set or INVALID_ARGUMENTS (fast-check)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.record({ topic: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.jsonValue()), data: fc.jsonValue() })), async (payload) => {
        try {
          assert.equal(await publish(s, payload), undefined)
        } catch (error) {
          assert.ok(['topic_not_set', 'INVALID_ARGUMENTS'].includes((error as { code: string }).code), String(error))
        }
      }),
      { numRuns: 300 },
    )
    // Still serving.
    assert.equal(await publish(s, { topic: 'after-fuzz', data: 1 }), undefined)
  })

  it('random subscribe configs are accepted or refused with INVALID_TRIGGER_CONFIG (fast-check)', async () => {
    const client = s.client('fuzz')
    const errors: RegistrationError[] = []
    client.addRegistrationErrorListener((e) => errors.push(e))
    client.registerFunction('fuzz::on', () => undefined)
    const ids: string[] = []
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ topic: fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.jsonValue()), condition_function_id: fc.jsonValue() }, { requiredKeys: [] })), (config) => {
        ids.push(client.registerTrigger({ type: 'subscribe', function_id: 'fuzz::on', config }).id)
      }),
      { numRuns: 200 },
    )
    await waitFor(() => ids.every((id) => s.test.engine.triggers.getBinding(id)?.status !== 'pending'), "ids.every((id) => s.test.engine.triggers.getBinding(id)?.status !== 'pending')")
    for (const e of errors) assert.equal(e.code, 'INVALID_TRIGGER_CONFIG', e.message)
    assert.equal(await publish(s, { topic: 'after-fuzz', data: 1 }), undefined)
  })
})

describe('svc-pubsub settings (builtins.md §8, §2.9)', () => {
  it('keeps the current adapter when an apply fails, and moves subscriptions on an adapter change', async () => {
    const s = await setup()
    try {
      const got: unknown[] = []
      const client = s.client('settings')
      client.registerFunction('settings::on', (data) => void got.push(data))
      const t = client.registerTrigger({ type: 'subscribe', function_id: 'settings::on', config: { topic: 'cfg' } })
      await bound(s, [t.id])

      const error = await failure(s.worker.applySettings({ adapter: { name: 'memory', config: { path: 'x' } } }))
      assert.deepEqual([error.code, error.message], ['INVALID_ARGUMENTS', 'adapter.config.path is not a memory adapter option (it takes none)'])
      await publish(s, { topic: 'cfg', data: 1 })
      await waitFor(() => got.length === 1, 'got.length === 1')

      await s.worker.applySettings({ adapter: { name: 'in_memory' } })
      await publish(s, { topic: 'cfg', data: 2 })
      await waitFor(() => got.length === 2, 'got.length === 2')
      assert.deepEqual(got, [1, 2])
    } finally {
      await teardown(s)
    }
  })
})

describe('svc-pubsub with child-process workers over WebSockets', () => {
  let test: TestEngine
  const children: ChildProcess[] = []
  before(async () => {
    test = await startTestEngine({ builtins: [new PubSubWorker()], settings: {} })
  })
  after(async () => {
    for (const child of children) child.kill('SIGTERM')
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))))
    await test.stop()
  })

  it('a publish reaches a subscriber in each of three worker processes', async () => {
    const received: Array<{ function_id: string; received: unknown }> = []
    for (const name of ['p1', 'p2', 'p3']) {
      const child = spawn(process.execPath, ['test/support/subscriber-worker.ts', test.url, name, 'news'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] })
      children.push(child)
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const event = JSON.parse(line)
        if ('received' in event) received.push(event)
      })
    }
    await waitFor(
      () => test.engine.triggers.allBindings().filter((b) => b.trigger_type === 'subscribe' && b.status === 'active').length === 3, 'the condition',
      20_000,
    )
    await test.engine.inject({ function_id: 'publish', data: { topic: 'news', data: { headline: 'hi' } } })
    await waitFor(() => received.length === 3, 'received.length === 3', 10_000)
    assert.deepEqual(received.map((r) => r.function_id).sort(), ['p1::on-news', 'p2::on-news', 'p3::on-news'])
    for (const r of received) assert.deepEqual(r.received, { headline: 'hi' })
  })
})

/**
 * A fleet of engines on one real nats-server (issue 19 §3), in one test process: functions
 * registered on any engine are callable from every engine (sync, void), listings show the whole
 * fleet with each worker's engine, local replicas are preferred and remote ones balanced, an engine
 * that leaves takes its functions with it, and a NATS restart degrades the engines until they
 * recover by themselves. Engine processes and `kill -9` are in fleet-processes.test.ts.
 */
import assert from 'node:assert/strict'
import fc from 'fast-check'
import { connect, type NatsConnection } from 'nats'
import { request as httpRequest } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { resolveAddress, resolveOptions, WorkerClient } from 'svc-sdk/internal'
import { flushOtel } from 'svc-sdk/telemetry'
import { FLEET_DEFAULTS, type FleetConfig } from '../runtime/engine/config.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { startTestNats, type TestNats } from './support/nats.ts'
import { connectClient, rejection } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

const fleetConfig = (nats: TestNats, engine: string, name = 'fleet-test'): FleetConfig => ({
  ...FLEET_DEFAULTS,
  name,
  engine,
  nats: [nats.url],
  heartbeat_interval_ms: 200,
  heartbeat_timeout_ms: 1000,
})

interface Listed {
  functions: Array<{ function_id: string; replica_count: number }>
}

describe('a fleet of three engines on NATS', () => {
  let nats: TestNats
  const engines: TestEngine[] = []
  const clients: SvcClient[] = []
  const client = (i: number, name: string): SvcClient => {
    const c = connectClient(engines[i]!.engine, name)
    clients.push(c)
    return c
  }
  /** Waits until engine `i` lists `functionId` with `replicas` replicas. */
  const listed = (i: number, functionId: string, replicas = 1) =>
    waitFor(async () => {
      const list = (await engines[i]!.engine.inject({ function_id: 'engine::functions::list', data: {} })) as Listed
      return list.functions.some((f) => f.function_id === functionId && f.replica_count === replicas)
    }, 'the condition', 10_000)

  before(async () => {
    nats = await startTestNats()
    for (const name of ['alpha', 'bravo', 'charlie']) {
      engines.push(await startTestEngine({ config: { fleet: fleetConfig(nats, name) }, settings: { 'svc-observability': { store: 'memory' }, queue: { queue_configs: { billing: {} } } } }))
    }
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await Promise.all(engines.map((e) => e.stop()))
    await nats.close()
  })

  it('calls a function registered on another engine: sync from a worker and from the engine, and void', async () => {
    const b = client(1, 'orders')
    const seen: unknown[] = []
    b.registerFunction('orders::validate', (input: { id: number }) => {
      seen.push(input)
      return { valid: input.id > 0, served_by: 'bravo' }
    })
    await listed(0, 'orders::validate')
    const a = client(0, 'web')
    assert.deepEqual(await a.trigger({ function_id: 'orders::validate', payload: { id: 7 } }), { valid: true, served_by: 'bravo' })
    assert.deepEqual(await engines[0]!.engine.inject({ function_id: 'orders::validate', data: { id: -1 } }), { valid: false, served_by: 'bravo' })
    await a.trigger({ function_id: 'orders::validate', payload: { id: 99 }, action: { type: 'void' } })
    await waitFor(() => seen.some((s) => (s as { id: number }).id === 99), 'seen.some((s) => (s as { id: number }).id === 99)')
    // An error keeps its code across engines.
    b.registerFunction('orders::reject', () => {
      throw Object.assign(new Error('no stock'), { code: 'OUT_OF_STOCK' })
    })
    await listed(2, 'orders::reject')
    const failure = await rejection(engines[2]!.engine.inject({ function_id: 'orders::reject', data: {} }))
    assert.equal(failure.code, 'OUT_OF_STOCK')
    assert.match(failure.message, /no stock/)
  })

  it('runs a call to another engine in the caller\'s namespace there, not in default\'s function of the same id', async () => {
    const inShop = (i: number, name: string): SvcClient => {
      const c = new WorkerClient(resolveAddress('ws://engine.local/'), resolveOptions({ workerName: name, namespace: 'shop' }), { connector: engines[i]!.engine.connector() })
      clients.push(c)
      return c
    }
    // `default` has its own orders::checkout on bravo: a call that lost its namespace on the way would run that one.
    client(1, 'orders-default').registerFunction('orders::checkout', () => ({ namespace: 'default' }))
    inShop(1, 'orders-shop').registerFunction('orders::checkout', (input: { cart: number }) => ({ namespace: 'shop', cart: input.cart }))
    await waitFor(async () => {
      const list = (await engines[0]!.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string; namespace: string }> }
      return list.functions.filter((f) => f.function_id === 'orders::checkout').length === 2
    }, 'alpha lists orders::checkout in both namespaces', 10_000)
    assert.deepEqual(await inShop(0, 'web-shop').trigger({ function_id: 'orders::checkout', payload: { cart: 3 } }), { namespace: 'shop', cart: 3 })
    assert.deepEqual(await engines[2]!.engine.inject({ function_id: 'orders::checkout', namespace: 'shop', data: { cart: 4 } }), { namespace: 'shop', cart: 4 })
    assert.deepEqual(await engines[2]!.engine.inject({ function_id: 'orders::checkout', data: { cart: 5 } }), { namespace: 'default' })
  })

  it('enqueues for a function on another engine: the queue of the caller\'s engine delivers it there', async () => {
    const delivered: unknown[] = []
    client(2, 'billing').registerFunction('billing::charge', (input: { order: number }) => {
      delivered.push(input.order)
      return { charged: true }
    })
    await listed(0, 'billing::charge')
    const receipt = (await client(0, 'shop').trigger({ function_id: 'billing::charge', payload: { order: 5 }, action: { type: 'enqueue', queue: 'billing' } })) as { messageReceiptId: string }
    assert.match(receipt.messageReceiptId, /^[0-9a-f-]{36}$/)
    await waitFor(() => delivered.includes(5), 'delivered.includes(5)', 10_000)
  })

  it('lists every engine\'s workers with their engine, and the replicas of a function on each', async () => {
    await listed(2, 'orders::validate')
    const workers = (await engines[2]!.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: Array<{ name: string; engine?: string }> }
    const orders = workers.workers.find((w) => w.name === 'orders')
    assert.equal(orders?.engine, 'bravo')
    const own = workers.workers.find((w) => w.name === 'svc-state')
    assert.equal(own?.engine, 'charlie')
    const info = (await engines[2]!.engine.inject({ function_id: 'engine::functions::info', data: { function_id: 'orders::validate' } })) as { replicas: Array<{ engine?: string; worker_name: string }> }
    assert.deepEqual(info.replicas.map((r) => [r.worker_name, r.engine]), [['orders', 'bravo']])
    const list = (await engines[2]!.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: Array<{ function_id: string; engines?: string[] }> }
    assert.deepEqual(list.functions.find((f) => f.function_id === 'orders::validate')?.engines, ['bravo'])
    assert.deepEqual(list.functions.find((f) => f.function_id === 'state::get')?.engines, ['charlie'])
    const fleet = (await engines[2]!.engine.inject({ function_id: 'engine::fleet::list', data: {} })) as { fleet: string; engine: string; status: string; engines: Array<{ engine: string; self: boolean; workers: number }> }
    assert.equal(fleet.fleet, 'fleet-test')
    assert.equal(fleet.engine, 'charlie')
    assert.equal(fleet.status, 'healthy')
    assert.deepEqual(fleet.engines.map((e) => [e.engine, e.self]), [['charlie', true], ['alpha', false], ['bravo', false]])
    assert.ok(fleet.engines.find((e) => e.engine === 'bravo')!.workers >= 1)
  })

  it('prefers a replica on the caller\'s own engine, and balances the replicas on other engines', async () => {
    const servedBy: string[] = []
    for (const [i, name] of ['alpha', 'bravo', 'charlie'].entries()) {
      client(i, `stock-${name}`).registerFunction('stock::count', () => {
        servedBy.push(name)
        return name
      })
    }
    await listed(0, 'stock::count', 3)
    for (let i = 0; i < 10; i++) assert.equal(await engines[0]!.engine.inject({ function_id: 'stock::count', data: {} }), 'alpha')
    const only = client(0, 'prices')
    for (const [i, name] of ['bravo', 'charlie'].entries()) client(i + 1, `prices-${name}`).registerFunction('prices::quote', () => name)
    await listed(0, 'prices::quote', 2)
    const answers = new Set<unknown>()
    for (let i = 0; i < 10; i++) answers.add(await only.trigger({ function_id: 'prices::quote', payload: {} }))
    assert.deepEqual([...answers].sort(), ['bravo', 'charlie'])
  })

  it('counts a call in svc.function.* once across the fleet: on the engine that runs it; the engine that sent it counts svc.fleet.forwarded', async () => {
    const b = client(1, 'tally')
    b.registerFunction('tally::add', (input: { n: number }) => input.n + 1)
    b.registerFunction('tally::fail', () => {
      throw Object.assign(new Error('refused'), { code: 'REFUSED' })
    })
    await listed(0, 'tally::fail')
    await listed(2, 'tally::fail')
    const a = client(0, 'tally-caller')
    for (let n = 0; n < 3; n++) assert.equal(await a.trigger({ function_id: 'tally::add', payload: { n } }), n + 1)
    assert.equal(await engines[0]!.engine.inject({ function_id: 'tally::add', data: { n: 10 } }), 11)
    for (let n = 0; n < 2; n++) assert.equal(await engines[2]!.engine.inject({ function_id: 'tally::add', data: { n } }), n + 1)
    assert.equal(await engines[1]!.engine.inject({ function_id: 'tally::add', data: { n: 0 } }), 1)
    assert.equal((await rejection(engines[0]!.engine.inject({ function_id: 'tally::fail', data: {} }))).code, 'REFUSED')
    type Point = { value: number | { count: number }; attributes: Record<string, unknown> }
    /** The points of `metric` on engine `i` for function `id`, as [serving engine or '', value]. */
    const points = async (i: number, metric: string, id: string): Promise<Array<[unknown, number]>> => {
      const listed = (await engines[i]!.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: metric } })) as { metrics: Array<{ name: string; points: Point[] }> }
      return listed.metrics
        .filter((m) => m.name === metric)
        .flatMap((m) => m.points)
        .filter((p) => p.attributes['svc.function.id'] === id)
        .map((p) => [p.attributes['svc.fleet.engine'] ?? '', typeof p.value === 'number' ? p.value : p.value.count])
    }
    // 7 calls of tally::add, 1 of tally::fail, all run on bravo: counted there only.
    assert.deepEqual(await points(1, 'svc.function.invocations', 'tally::add'), [['', 7]])
    assert.deepEqual(await points(1, 'svc.function.duration', 'tally::add'), [['', 7]])
    assert.deepEqual(await points(1, 'svc.function.invocations', 'tally::fail'), [['', 1]])
    assert.deepEqual(await points(1, 'svc.function.errors', 'tally::fail'), [['', 1]])
    for (const i of [0, 2]) {
      for (const metric of ['svc.function.invocations', 'svc.function.errors', 'svc.function.duration']) {
        assert.deepEqual(await points(i, metric, 'tally::add'), [], `${metric} of engine ${i}`)
        assert.deepEqual(await points(i, metric, 'tally::fail'), [], `${metric} of engine ${i}`)
      }
    }
    // The engines that sent them count what they sent, by serving engine.
    assert.deepEqual(await points(0, 'svc.fleet.forwarded', 'tally::add'), [['bravo', 4]])
    assert.deepEqual(await points(0, 'svc.fleet.forwarded', 'tally::fail'), [['bravo', 1]])
    assert.deepEqual(await points(2, 'svc.fleet.forwarded', 'tally::add'), [['bravo', 2]])
    assert.deepEqual(await points(1, 'svc.fleet.forwarded', 'tally::add'), [])
  })

  it('serves an HTTP route registered through one engine on every engine\'s listener, in one trace', async () => {
    const worker = registerWorker(engines[1]!.url, { workerName: 'api', otel: { enabled: true, serviceName: 'api', fetchInstrumentationEnabled: false } })
    clients.push(worker)
    worker.registerFunction('api::order', (req: { path_params: { id: string } }) => ({ status_code: 200, body: { order: req.path_params.id } }))
    worker.registerTrigger({ type: 'http', function_id: 'api::order', config: { api_path: 'fleet-orders/:id', http_method: 'GET' } })
    for (const e of engines) {
      await waitFor(async () => (await fetch(`${e.httpUrl}/fleet-orders/1`)).status === 200, '(await fetch(`${e.httpUrl}/fleet-orders/1`)).status === 200', 10_000)
    }
    const response = await fetch(`${engines[0]!.httpUrl}/fleet-orders/42`)
    assert.deepEqual(await response.json(), { order: '42' })
    // The server span is alpha's; the handler span, exported by the worker to bravo, is its child.
    const listed = (await engines[0]!.engine.inject({ function_id: 'engine::traces::list', data: { name: 'GET /fleet-orders/:id' } })) as { traces: Array<{ trace_id: string }> }
    const traceIds = listed.traces.map((t) => t.trace_id)
    assert.ok(traceIds.length >= 1)
    let handler: { trace_id: string; parent_span_id: string | null; name: string } | undefined
    await waitFor(async () => {
      await flushOtel()
      for (const traceId of traceIds) {
        const tree = (await engines[1]!.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Array<{ trace_id: string; parent_span_id: string | null; name: string; children: unknown[] }> }
        handler = tree.roots.find((r) => r.name === 'execute api::order') ?? handler
      }
      return handler !== undefined
    }, 'the condition', 10_000)
    const serverSpans = (await engines[0]!.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: handler!.trace_id } })) as { roots: Array<{ span_id: string; name: string; children: Array<{ span_id: string }> }> }
    const server = serverSpans.roots.find((r) => r.name === 'GET /fleet-orders/:id')
    assert.ok(server, 'the request through alpha and the handler on bravo share one trace id')
    const ids = new Set<string>([server.span_id, ...server.children.map((c) => c.span_id)])
    assert.ok(handler!.parent_span_id !== null && ids.has(handler!.parent_span_id), 'the handler span hangs under the request\'s spans')
  })

  it('answers at once, not at default_timeout, when a handler on another engine returns no result; a handler this engine also serves still streams', async () => {
    // A handler on bravo only: through alpha's listener it has no response channel to stream on
    // (a channel's ends open on the engine that created it), so no result is a bad response now.
    const b = client(1, 'quiet')
    b.registerFunction('quiet::nothing', () => null)
    b.registerTrigger({ type: 'http', function_id: 'quiet::nothing', config: { api_path: 'fleet-nothing', http_method: 'POST' } })
    b.registerFunction('quiet::echo', (req: { body: unknown }) => ({ status_code: 200, body: { got: req.body } }))
    b.registerTrigger({ type: 'http', function_id: 'quiet::echo', config: { api_path: 'fleet-echo', http_method: 'POST' } })
    await waitFor(async () => (await fetch(`${engines[0]!.httpUrl}/fleet-echo`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status === 200, 'alpha serves bravo\'s route', 10_000)
    const echoed = await fetch(`${engines[0]!.httpUrl}/fleet-echo`, { method: 'POST', body: JSON.stringify({ n: 1 }), headers: { 'content-type': 'application/json' } })
    assert.deepEqual(await echoed.json(), { got: { n: 1 } })
    const nothing = await fetch(`${engines[0]!.httpUrl}/fleet-nothing`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })
    assert.equal(nothing.status, 500)
    const envelope = (await nothing.json()) as { error: { code: string; message: string } }
    assert.equal(envelope.error.code, 'invalid_response')
    assert.match(envelope.error.message, /another engine of the fleet/)
    // Replicas on alpha and bravo: alpha's own serves, with its channels, and streams.
    for (const i of [0, 1]) {
      // Over real sockets: a channel end opens its own WebSocket to the worker's engine.
      const w = registerWorker(engines[i]!.url, { workerName: `streamer-${i}` })
      clients.push(w)
      w.registerFunction('stream::out', async (req: { response: { sendMessage(text: string): void; write(chunk: string): Promise<void>; close(): Promise<void> } }) => {
        req.response.sendMessage(JSON.stringify({ type: 'set_status', status_code: 201 }))
        await req.response.write(`streamed by ${i}`)
        await req.response.close()
        return null
      })
      w.registerTrigger({ type: 'http', function_id: 'stream::out', config: { api_path: 'fleet-stream', http_method: 'GET' } })
    }
    await listed(0, 'stream::out', 2)
    const streamed = await fetch(`${engines[0]!.httpUrl}/fleet-stream`)
    assert.equal(streamed.status, 201, await streamed.clone().text())
    assert.equal(await streamed.text(), 'streamed by 0')
  })

  it('answers a request through another engine\'s listener as the handler\'s own engine does, whatever the handler returns (fast-check)', async () => {
    // The handler on bravo returns what the request's body names: any JSON, response object or not.
    const b = client(1, 'mirror')
    b.registerFunction('mirror::any', (req: { body: { value: unknown } }) => req.body.value)
    b.registerTrigger({ type: 'http', function_id: 'mirror::any', config: { api_path: 'fleet-mirror', http_method: 'POST' } })
    /** A raw HTTP POST: fetch refuses some statuses a handler may return (407 is "fetch failed"). */
    const post = (i: number, value: unknown) =>
      new Promise<{ status: number; type: string | undefined; text: string }>((resolve, reject) => {
        const request = httpRequest(`${engines[i]!.httpUrl}/fleet-mirror`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (response) => {
          const chunks: Buffer[] = []
          response.on('data', (chunk: Buffer) => chunks.push(chunk))
          response.on('end', () => resolve({ status: response.statusCode!, type: response.headers['content-type'], text: Buffer.concat(chunks).toString() }))
          response.on('error', reject)
        })
        request.on('error', reject)
        request.end(JSON.stringify({ value }))
      })
    await waitFor(async () => (await post(0, { status_code: 204 })).status === 204, 'alpha serves bravo\'s route', 10_000)
    /** Status and body, without the ids that differ per answer (error id, trace id). */
    const seen = ({ status, type, text }: { status: number; type: string | undefined; text: string }) => {
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        /* not JSON: compared as text */
      }
      const error = (body as { error?: Record<string, unknown> } | null)?.error
      if (typeof error === 'object' && error !== null) {
        delete error.error_id
        delete error.trace_id
      }
      return { status, type, body }
    }
    const statusCode = fc.oneof(fc.integer({ min: 100, max: 599 }), fc.integer(), fc.constantFrom(0, 99, 100, 101, 199, 600, 1e9, -1, 1.5), fc.string({ maxLength: 4 }))
    const descriptor = fc.record({ status_code: statusCode, headers: fc.oneof(fc.dictionary(fc.constantFrom('x-a', 'content-type', 'set-cookie', 'x-\u00e9', 'bad header'), fc.oneof(fc.string({ maxLength: 8 }), fc.array(fc.string({ maxLength: 8 }), { maxLength: 2 }))), fc.jsonValue({ maxDepth: 1 })), body: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] })
    await fc.assert(
      fc.asyncProperty(fc.oneof(descriptor, fc.jsonValue({ maxDepth: 3 }).filter((v) => v !== null)), async (value) => {
        assert.deepEqual(seen(await post(0, value)), seen(await post(1, value)))
      }),
      { numRuns: 40 },
    )
    // No result: the own engine would wait for the response channel; through alpha there is none.
    assert.equal((await post(0, null)).status, 500)
  })

  it('keeps serving a route replicated on two other engines when one of its workers goes', async () => {
    const workers = [1, 2].map((i) => {
      const w = client(i, `catalog-${i}`)
      w.registerFunction('catalog::item', () => ({ status_code: 200, body: { from: i } }))
      w.registerTrigger({ type: 'http', function_id: 'catalog::item', config: { api_path: 'fleet-catalog', http_method: 'GET' } })
      return w
    })
    await listed(0, 'catalog::item', 2)
    await waitFor(async () => (await fetch(`${engines[0]!.httpUrl}/fleet-catalog`)).status === 200, '(await fetch(`${engines[0]!.httpUrl}/fleet-catalog`)).status === 200', 10_000)
    await workers[0]!.shutdown()
    await listed(0, 'catalog::item', 1)
    // The route alpha took from bravo is now charlie's.
    await waitFor(async () => {
      const response = await fetch(`${engines[0]!.httpUrl}/fleet-catalog`)
      return response.status === 200 && ((await response.json()) as { from: number }).from === 2
    }, 'the condition', 10_000)
  })

  it('drops the functions of a worker that disconnects from its engine', async () => {
    const c = client(1, 'shortlived')
    c.registerFunction('short::lived', () => 'here')
    await listed(0, 'short::lived')
    assert.equal(await engines[0]!.engine.inject({ function_id: 'short::lived', data: {} }), 'here')
    await c.shutdown()
    await waitFor(async () => (await rejection(engines[0]!.engine.inject({ function_id: 'short::lived', data: {} }))).code === 'function_not_found', 'the condition', 10_000)
  })

  it('times out an engine-originated call to a silent function on another engine', async () => {
    client(1, 'sleepy').registerFunction('sleepy::wait', () => new Promise(() => {}))
    await listed(0, 'sleepy::wait')
    const failure = await rejection(engines[0]!.engine.inject({ function_id: 'sleepy::wait', data: {}, timeoutMs: 300 }))
    assert.equal(failure.code, 'TIMEOUT')
  })

  it('does not make the other engines fetch a snapshot at every heartbeat while only its workers\' active invocation counts change', async () => {
    const releases: Array<() => void> = []
    client(1, 'busy').registerFunction('busy::hold', () => new Promise<string>((resolve) => releases.push(() => resolve('done'))))
    await listed(0, 'busy::hold')
    const nc: NatsConnection = await connect({ servers: nats.url })
    const versions: number[] = []
    const sub = nc.subscribe('svc.fleet-test.heartbeat', {
      callback: (_err, msg) => {
        const beat = JSON.parse(msg.string()) as { engine: string; version: number }
        if (beat.engine === 'bravo') versions.push(beat.version)
      },
    })
    try {
      const calls: Array<Promise<unknown>> = []
      // A new call before each of five heartbeats: bravo's count of active invocations changes every time.
      for (let i = 1; i <= 5; i++) {
        calls.push(engines[0]!.engine.inject({ function_id: 'busy::hold', data: {} }))
        await waitFor(() => releases.length === i, 'the call to reach bravo', 10_000)
        const seen = versions.length
        await waitFor(() => versions.length > seen, "bravo's next heartbeat", 10_000)
      }
      // Registrations are still announced at once.
      client(1, 'busy-2').registerFunction('busy::other', () => 'other')
      await listed(0, 'busy::other')
      for (const release of releases) release()
      assert.deepEqual(await Promise.all(calls), ['done', 'done', 'done', 'done', 'done'])
      // The version moves for busy::other and at most once more (a refresh of the counts), not at every heartbeat.
      assert.ok(new Set(versions).size <= 3, `bravo announced versions ${versions.join(', ')}`)
    } finally {
      sub.unsubscribe()
      await nc.close()
    }
  })

  it('reports degraded health while NATS is down, fails remote calls with ADAPTER_UNAVAILABLE, and recovers', async () => {
    client(1, 'resilient').registerFunction('resilient::ping', () => 'pong')
    await listed(0, 'resilient::ping')
    await nats.stop()
    await waitFor(() => engines[0]!.engine.fleet!.health().status === 'degraded', "engines[0]!.engine.fleet!.health().status === 'degraded'", 10_000)
    const failure = await rejection(engines[0]!.engine.inject({ function_id: 'resilient::ping', data: {} }))
    assert.equal(failure.code, 'ADAPTER_UNAVAILABLE')
    const health = (await engines[0]!.engine.inject({ function_id: 'engine::health::check', data: {} })) as { status: string; components: Record<string, { status: string }> }
    assert.equal(health.components.fleet?.status, 'degraded')
    await nats.start()
    await waitFor(() => engines.every((e) => e.engine.fleet!.health().status === 'healthy'), "engines.every((e) => e.engine.fleet!.health().status === 'healthy')", 15_000)
    await waitFor(async () => {
      try {
        return (await engines[0]!.engine.inject({ function_id: 'resilient::ping', data: {} })) === 'pong'
      } catch {
        return false
      }
    }, 'the condition', 15_000)
  })

  it('stays up and keeps serving whatever any NATS client publishes on the fleet\'s subjects (fast-check)', async () => {
    client(1, 'steady').registerFunction('steady::echo', (input: unknown) => input)
    await listed(0, 'steady::echo')
    const alpha = engines[0]!.engine.fleet!
    const nc: NatsConnection = await connect({ servers: nats.url })
    try {
      const subjects = [
        'svc.fleet-test.heartbeat',
        `svc.fleet-test.snapshot.${alpha.instance}`,
        `svc.fleet-test.call.${alpha.instance}.default.steady::echo`,
        `svc.fleet-test.call.${alpha.instance}.default.state::get`,
        `svc.fleet-test.reply.${alpha.instance}.0`,
        `svc.fleet-test.reply.${alpha.instance}.zz`,
        // The reply subject of a real member: answers with guessed ids must settle nothing.
        `svc.fleet-test.reply.${alpha.instance}.${engines[1]!.engine.fleet!.instance}`,
      ]
      const json = fc.jsonValue({ maxDepth: 4 })
      const heartbeatLike = fc.record(
        { engine: fc.oneof(fc.string(), fc.constant('alpha')), instance: fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f]{16}$/)), version: fc.oneof(fc.integer(), json), urls: fc.oneof(fc.array(fc.string()), json), started_at_ms: fc.oneof(fc.nat(), json), leaving: fc.oneof(fc.constant(true), json) },
        { requiredKeys: [] },
      )
      const frameLike = fc.record(
        { type: fc.constantFrom('invokefunction', 'invocationresult', 'registerfunction', 'x'), invocation_id: fc.oneof(fc.string(), json, fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '0', '1', '')), function_id: fc.oneof(fc.constantFrom('steady::echo', 'engine::functions::list', 'nope'), fc.string(), json), data: json, namespace: fc.oneof(fc.constant('default'), fc.string(), json), action: fc.oneof(fc.constant({ type: 'enqueue', queue: 'q' }), fc.constant({ type: 'void' }), json) },
        { requiredKeys: [] },
      )
      const payload = fc.oneof(
        fc.uint8Array({ maxLength: 512 }),
        fc.string({ unit: 'binary', maxLength: 512 }),
        heartbeatLike.map((v) => JSON.stringify(v)),
        frameLike.map((v) => JSON.stringify(v)),
        fc.constant('['.repeat(10_000)),
      )
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...subjects), payload, fc.boolean()), { minLength: 1, maxLength: 20 }), async (messages) => {
          for (const [subject, data, withReply] of messages) nc.publish(subject, data, withReply ? { reply: `junk.${subject.length}` } : undefined)
          await nc.flush()
          // The engine still answers, and a call across engines still works.
          assert.equal(await engines[0]!.engine.inject({ function_id: 'steady::echo', data: { ok: 1 } }).then((r) => JSON.stringify(r)), '{"ok":1}')
        }),
        { numRuns: 60 },
      )
      const fleet = (await engines[0]!.engine.inject({ function_id: 'engine::fleet::list', data: {} })) as { engines: Array<{ engine: string }> }
      assert.ok(fleet.engines.length <= 1024 + 1)
      // Made-up engines leave after the timeout: only the real ones stay.
      await waitFor(async () => {
        const now = (await engines[0]!.engine.inject({ function_id: 'engine::fleet::list', data: {} })) as { engines: Array<{ engine: string }> }
        return now.engines.map((e) => e.engine).sort().join() === 'alpha,bravo,charlie'
      }, 'the condition', 15_000)
    } finally {
      await nc.close()
    }
  })

  it('removes the functions of an engine that stops, at once', async () => {
    const extra = await startTestEngine({ config: { fleet: fleetConfig(nats, 'delta') } })
    const c = connectClient(extra.engine, 'transient')
    c.registerFunction('transient::fn', () => 'delta')
    await listed(0, 'transient::fn')
    await c.shutdown()
    await extra.stop()
    const failure = await rejection(engines[0]!.engine.inject({ function_id: 'transient::fn', data: {} }))
    assert.equal(failure.code, 'function_not_found')
  })
})

/**
 * One trace from end to end (issue 9; builtins.md §12.7, protocol.md §10): a real engine with
 * svc-http, the queue worker (memory adapter), svc-cron and svc-state, and a real svc-sdk worker
 * over a real WebSocket with telemetry on. Spans recorded by the engine and spans the worker
 * exports over `/otel` must join into single traces, read back with `engine::traces::tree`.
 *
 *   GET /orders/:id (server, svc-http) → execute a → execute b (nested) → enqueue jobs (producer)
 *     → deliver jobs (consumer) → execute c
 *   cron tick (root) → execute tick
 *   execute w → execute state::set → trigger state on-change → execute on-change
 *   (caller) → execute publish → subscribe news on-news → execute on-news, and the same shape for
 *   svc::durable::publish (enqueue/deliver), stream::set and configuration::set
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { registerWorker, TriggerAction, type SvcClient } from 'svc-sdk'
import { flushOtel, otelSocketStats } from 'svc-sdk/telemetry'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

interface Node {
  trace_id: string
  span_id: string
  parent_span_id: string | null
  name: string
  kind: string
  service_name: string
  end_time_unix_nano: number | null
  status: string
  attributes: Record<string, unknown>
  children: Node[]
}

/** Every span of a forest, depth first. */
function flatten(nodes: Node[]): Node[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)])
}

/** The only child of `node`, checked to be named `name` and linked to it. */
function onlyChild(node: Node, name: string): Node {
  assert.deepEqual(
    node.children.map((c) => c.name),
    [name],
    `children of ${node.name}`,
  )
  const child = node.children[0]!
  assert.equal(child.parent_span_id, node.span_id)
  assert.equal(child.trace_id, node.trace_id)
  return child
}

describe('one trace across svc-http, an SDK worker, a nested call, a queue and a delivery', () => {
  let t: TestEngine
  let client: SvcClient
  const delivered: string[] = []

  before(async () => {
    t = await startTestEngine({
      settings: {
        queue: { adapter: { name: 'memory' }, queue_configs: { jobs: { max_retries: 0 } } },
        'svc-observability': { store: 'memory' },
      },
    })
    // The test's own fetch plays an outside HTTP client: no CLIENT span of it in this process.
    client = registerWorker(t.url, { workerName: 'app', otel: { enabled: true, serviceName: 'app', fetchInstrumentationEnabled: false } })
    client.registerFunction('a', async (req: { path_params: { id: string } }) => {
      const answer = await client.trigger<unknown, { receipt: string }>({ function_id: 'b', payload: { id: req.path_params.id } })
      return { status_code: 200, body: answer }
    })
    client.registerFunction('b', async (data: { id: string }) => {
      const { messageReceiptId } = await client.trigger({ function_id: 'c', payload: data, action: TriggerAction.Enqueue({ queue: 'jobs' }) })
      return { receipt: messageReceiptId }
    })
    client.registerFunction('c', (data: { id: string }) => {
      delivered.push(data.id)
      return { ok: true }
    })
    client.registerFunction('tick', () => ({ ticked: true }))
    client.registerFunction('w', async (data: { value: number }) => {
      await client.trigger({ function_id: 'state::set', payload: { scope: 'trace-e2e', key: 'k', value: data.value } })
      return { written: true }
    })
    client.registerFunction('on-change', () => ({ seen: true }))
    client.registerTrigger({ type: 'http', function_id: 'a', config: { api_path: 'orders/:id', http_method: 'GET' } })
    client.registerTrigger({ type: 'state', function_id: 'on-change', config: { scope: 'trace-e2e' } })
    await waitFor(() => client.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, "client.getConnectionState() === 'connected' && otelSocketStats()?.connected === true", 10_000)
  })

  after(async () => {
    await client?.shutdown()
    await t?.stop()
  })

  /** The tree of `traceId` once it holds `count` finished spans (worker spans arrive after an export delay). */
  async function finishedTree(traceId: string, count: number): Promise<Node[]> {
    let roots: Node[] = []
    await waitFor(async () => {
      await flushOtel()
      roots = ((await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: traceId } })) as { roots: Node[] }).roots
      const spans = flatten(roots)
      return spans.length >= count && spans.every((s) => s.end_time_unix_nano !== null)
    }, 'the condition', 10_000)
    return roots
  }

  it('HTTP → execute a → execute b → enqueue jobs → deliver jobs → execute c is one trace', async () => {
    let response: Response | undefined
    await waitFor(async () => {
      response = await fetch(`${t.httpUrl}/orders/42`)
      return response.status === 200
    }, 'the condition', 10_000)
    const body = (await response!.json()) as { receipt: string }
    await waitFor(() => delivered.includes('42'), "delivered.includes('42')", 10_000)

    const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'GET /orders/:id' } })) as { traces: Array<{ trace_id: string }> }
    assert.equal(listed.traces.length, 1, 'one trace for the request')
    const traceId = listed.traces[0]!.trace_id
    const roots = await finishedTree(traceId, 6)
    assert.equal(roots.length, 1, 'one root: every span joined the trace')
    assert.equal(flatten(roots).length, 6, flatten(roots).map((s) => s.name).join(', '))

    const server = roots[0]!
    assert.equal(server.name, 'GET /orders/:id')
    assert.equal(server.kind, 'server')
    assert.equal(server.parent_span_id, null)
    assert.equal(server.service_name, 'svc')
    const a = onlyChild(server, 'execute a')
    assert.equal(a.service_name, 'app', 'exported by the worker over /otel')
    const b = onlyChild(a, 'execute b')
    const enqueue = onlyChild(b, 'enqueue jobs')
    assert.equal(enqueue.kind, 'producer')
    assert.equal(enqueue.service_name, 'svc')
    assert.equal(enqueue.status, 'ok')
    assert.equal(enqueue.attributes['svc.queue.name'], 'jobs')
    assert.equal(enqueue.attributes['svc.queue.message_id'], body.receipt)
    assert.equal(enqueue.attributes['svc.function.id'], 'c')
    assert.equal(enqueue.attributes['svc.worker.name'], 'queue')
    const deliver = onlyChild(enqueue, 'deliver jobs')
    assert.equal(deliver.kind, 'consumer')
    assert.equal(deliver.status, 'ok')
    assert.deepEqual(
      [deliver.attributes['svc.queue.name'], deliver.attributes['svc.queue.message_id'], deliver.attributes['svc.queue.attempt'], deliver.attributes['svc.function.id'], deliver.attributes['svc.worker.name']],
      ['jobs', body.receipt, 1, 'c', 'queue'],
    )
    const c = onlyChild(deliver, 'execute c')
    assert.equal(c.service_name, 'app')
    assert.deepEqual(c.children, [])

    const metrics = (await t.engine.inject({ function_id: 'engine::metrics::list', data: {} })) as {
      metrics: Array<{ name: string; type: string; points: Array<{ value: unknown; attributes: Record<string, unknown> }> }>
    }
    const point = (name: string) => metrics.metrics.find((m) => m.name === name)?.points.find((p) => p.attributes['svc.queue.name'] === 'jobs')?.value
    assert.equal(point('svc.queue.enqueued'), 1)
    assert.equal(point('svc.queue.delivered'), 1)
    assert.equal(point('svc.queue.failed'), 0)
    assert.equal(point('svc.queue.depth'), 0)
    assert.equal(point('svc.queue.in_flight'), 0)
  })

  it('a failed delivery attempt is a deliver span with error status', async () => {
    client.registerFunction('boom', () => {
      throw Object.assign(new Error('no way'), { code: 'BOOM' })
    })
    await waitFor(async () => (await t.engine.inject({ function_id: 'engine::functions::list', data: {} }).then((r) => JSON.stringify(r))).includes('"boom"'), 'the condition', 10_000)
    const { messageReceiptId } = await client.trigger({ function_id: 'boom', payload: {}, action: TriggerAction.Enqueue({ queue: 'jobs' }) })
    let deliver: { status: string; status_message?: string; attributes: Record<string, unknown> } | undefined
    await waitFor(async () => {
      const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'enqueue jobs', limit: 1000 } })) as { traces: Array<{ trace_id: string; attributes: Record<string, unknown> }> }
      const mine = listed.traces.find((x) => x.attributes['svc.queue.message_id'] === messageReceiptId)
      if (mine === undefined) return false
      const roots = ((await t.engine.inject({ function_id: 'engine::traces::tree', data: { trace_id: mine.trace_id } })) as { roots: Node[] }).roots
      const span = flatten(roots).find((s) => s.name === 'deliver jobs')
      if (span === undefined || span.end_time_unix_nano === null) return false
      deliver = span
      return true
    }, 'the condition', 10_000)
    assert.equal(deliver!.status, 'error')
    assert.equal(deliver!.status_message, 'no way')
    assert.equal(deliver!.attributes['svc.error.code'], 'BOOM')
  })

  it('a cron run is a root span `cron <function_id>` with the worker execute span as its child', async () => {
    const trigger = client.registerTrigger({ type: 'cron', function_id: 'tick', config: { expression: '* * * * * *' } })
    let traceId: string | undefined
    try {
      await waitFor(async () => {
        const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'cron tick' } })) as { traces: Array<{ trace_id: string }> }
        traceId = listed.traces[0]?.trace_id
        return traceId !== undefined
      }, 'the condition', 10_000)
    } finally {
      trigger.unregister()
    }
    const roots = await finishedTree(traceId!, 2)
    assert.equal(roots.length, 1)
    const cron = roots[0]!
    assert.equal(cron.name, 'cron tick')
    assert.equal(cron.parent_span_id, null)
    assert.equal(cron.kind, 'internal')
    assert.equal(cron.status, 'ok')
    assert.equal(cron.attributes['svc.trigger.type'], 'cron')
    assert.equal(cron.attributes['svc.worker.name'], 'svc-cron')
    assert.equal(cron.attributes['svc.function.id'], 'tick')
    assert.equal(typeof cron.attributes['svc.trigger.id'], 'string')
    const execute = onlyChild(cron, 'execute tick')
    assert.equal(execute.service_name, 'app')
  })

  it('a state trigger delivery is `trigger state <function_id>`, child of the write, parent of the handler', async () => {
    await client.trigger({ function_id: 'w', payload: { value: 7 } })
    let traceId: string | undefined
    await waitFor(async () => {
      await flushOtel()
      const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name: 'execute w' } })) as { traces: Array<{ trace_id: string }> }
      traceId = listed.traces[0]?.trace_id
      return traceId !== undefined
    }, 'the condition', 10_000)
    const roots = await finishedTree(traceId!, 4)
    assert.equal(roots.length, 1)
    const writer = roots[0]!
    assert.equal(writer.name, 'execute w')
    const write = onlyChild(writer, 'execute state::set')
    const trigger = onlyChild(write, 'trigger state on-change')
    assert.equal(trigger.kind, 'internal')
    assert.equal(trigger.status, 'ok')
    assert.equal(trigger.attributes['svc.trigger.type'], 'state')
    assert.equal(trigger.attributes['svc.worker.name'], 'svc-state')
    assert.equal(trigger.attributes['svc.function.id'], 'on-change')
    assert.equal(typeof trigger.attributes['svc.trigger.id'], 'string')
    const handler = onlyChild(trigger, 'execute on-change')
    assert.equal(handler.service_name, 'app')
  })

  it('pub/sub, durable publish, stream and configuration deliveries are children of the write call', async () => {
    for (const id of ['on-news', 'on-order', 'on-stream', 'on-config']) client.registerFunction(id, () => ({ ok: true }))
    await t.engine.inject({ function_id: 'configuration::register', data: { id: 'trace-e2e', schema: { type: 'object' }, initial_value: {} } })
    const triggers = [
      client.registerTrigger({ type: 'subscribe', function_id: 'on-news', config: { topic: 'news' } }),
      client.registerTrigger({ type: 'durable:subscriber', function_id: 'on-order', config: { topic: 'orders' } }),
      client.registerTrigger({ type: 'stream', function_id: 'on-stream', config: { stream_name: 'trace-e2e' } }),
      client.registerTrigger({ type: 'configuration', function_id: 'on-config', config: { configuration_id: 'trace-e2e' } }),
    ]
    try {
      await waitFor(() => triggers.every((x) => t.engine.triggers.getBinding(x.id)?.status === 'active'), "triggers.every((x) => t.engine.triggers.getBinding(x.id)?.status === 'active')", 10_000)
      const writes: Array<{ call: string; data: unknown; chain: string[] }> = [
        { call: 'publish', data: { topic: 'news', data: { n: 1 } }, chain: ['execute publish', 'subscribe news on-news', 'execute on-news'] },
        { call: 'svc::durable::publish', data: { topic: 'orders', data: { n: 1 } }, chain: ['execute svc::durable::publish', 'enqueue orders', 'deliver orders::on-order', 'execute on-order'] },
        { call: 'stream::set', data: { stream_name: 'trace-e2e', group_id: 'g', item_id: 'i', data: { n: 1 } }, chain: ['execute stream::set', 'trigger stream on-stream', 'execute on-stream'] },
        { call: 'configuration::set', data: { id: 'trace-e2e', value: { n: 1 } }, chain: ['execute configuration::set', 'trigger configuration on-config', 'execute on-config'] },
      ]
      for (const { call, data, chain } of writes) {
        const traceId = randomBytes(16).toString('hex')
        const callerSpan = randomBytes(8).toString('hex')
        await t.engine.inject({ function_id: call, data, traceparent: `00-${traceId}-${callerSpan}-01` })
        const roots = await finishedTree(traceId, chain.length)
        assert.equal(roots.length, 1, call)
        assert.equal(roots[0]!.parent_span_id, callerSpan, `${call}: the write call is a child of its caller`)
        let node = roots[0]!
        assert.equal(node.name, chain[0])
        for (const name of chain.slice(1)) node = onlyChild(node, name)
        assert.deepEqual(node.children, [], call)
      }
      const subscribe = flatten(await finishedTree((await lastTrace('execute publish'))!, 3)).find((s) => s.name === 'subscribe news on-news')!
      assert.equal(subscribe.attributes['svc.trigger.type'], 'subscribe')
      assert.equal(subscribe.attributes['svc.worker.name'], 'svc-pubsub')
      const deliver = flatten(await finishedTree((await lastTrace('execute svc::durable::publish'))!, 4)).find((s) => s.name === 'deliver orders::on-order')!
      assert.equal(deliver.attributes['svc.trigger.type'], 'durable:subscriber')
      assert.equal(deliver.attributes['svc.queue.name'], 'orders::on-order')
    } finally {
      for (const trigger of triggers) trigger.unregister()
    }
  })

  /** The trace id of the newest trace whose root span is named `name`. */
  async function lastTrace(name: string): Promise<string | undefined> {
    const listed = (await t.engine.inject({ function_id: 'engine::traces::list', data: { name } })) as { traces: Array<{ trace_id: string; name: string }> }
    return listed.traces.find((x) => x.name === name)?.trace_id
  }

  it('engine::metrics::list carries the engine process metrics', async () => {
    const { metrics } = (await t.engine.inject({ function_id: 'engine::metrics::list', data: {} })) as { metrics: Array<{ name: string; type: string; unit?: string; points: Array<{ value: number; attributes: Record<string, unknown> }> }> }
    const byName = new Map(metrics.map((m) => [m.name, m]))
    const cpu = byName.get('process.cpu.time')!
    assert.equal(cpu.type, 'sum')
    assert.equal(cpu.unit, 's')
    assert.deepEqual(cpu.points.map((p) => p.attributes['cpu.mode']).sort(), ['system', 'user'])
    assert.ok(cpu.points.every((p) => p.value > 0))
    assert.ok(byName.get('process.memory.usage')!.points[0]!.value > 1_000_000, 'rss in bytes')
    assert.ok(byName.get('v8js.memory.heap.used')!.points.some((p) => p.attributes['v8js.heap.space.name'] === 'new_space'))
    const p99 = byName.get('nodejs.eventloop.delay.p99')!
    assert.equal(p99.unit, 's')
    assert.ok(p99.points[0]!.value > 0 && p99.points[0]!.value < 10, `p99 ${p99.points[0]!.value} s`)
    const filtered = (await t.engine.inject({ function_id: 'engine::metrics::list', data: { metric_name: 'svc.queue.depth' } })) as { metrics: Array<{ name: string }> }
    assert.deepEqual(
      filtered.metrics.map((m) => m.name),
      ['svc.queue.depth'],
    )
  })
})

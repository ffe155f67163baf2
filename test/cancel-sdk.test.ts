/**
 * Cancellation through svc-sdk (issue 21), workers on real WebSockets: a caller's `signal` cancels
 * a long handler, whose own `signal` aborts with the reason and whose child call is cancelled
 * with it (also, with telemetry on, under an unrelated OpenTelemetry context); the SDK's own call timeout and the engine's timeout cancel the handler; a call made
 * while disconnected is dropped unsent; and a cancel crosses the fleet to the engine that serves
 * the call (two engines on a real nats-server).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api'
import { InvocationError, registerWorker, type HandlerContext, type SvcClient } from 'svc-sdk'
import { FLEET_DEFAULTS } from '../runtime/engine/config.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { startTestNats, type TestNats } from './support/nats.ts'
import { rejection } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

const OTEL_OFF = { enabled: false } as const

/** A handler that runs until its signal aborts, and records the reason. */
function untilAborted(seen: { reason?: unknown; started?: true }) {
  return (_data: unknown, _metadata: unknown, { signal }: HandlerContext) =>
    new Promise((_resolve, reject) => {
      seen.started = true
      signal.addEventListener('abort', () => {
        seen.reason = signal.reason
        reject(signal.reason)
      })
    })
}

describe('svc-sdk cancellation, one engine', () => {
  let e: TestEngine
  const clients: SvcClient[] = []
  const client = (name: string): SvcClient => {
    const c = registerWorker(e.url, { workerName: name, otel: OTEL_OFF })
    clients.push(c)
    return c
  }
  const registered = (id: string) => waitFor(() => e.engine.functions.get('default', id) !== undefined, `${id} registered`)

  before(async () => {
    e = await startTestEngine({ builtins: [] })
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await e.stop()
  })

  it("a caller's signal cancels the handler and, through it, the handler's own child call", async () => {
    const child: { reason?: unknown; started?: true } = {}
    const parent: { reason?: unknown; started?: true; childError?: unknown } = {}
    client('leaf').registerFunction('leaf::wait', untilAborted(child))
    const middle = client('middle')
    middle.registerFunction('middle::work', async (_data, _metadata, { signal }) => {
      parent.started = true
      signal.addEventListener('abort', () => (parent.reason = signal.reason))
      try {
        // No signal passed: the call follows the handler's own cancellation.
        await middle.trigger({ function_id: 'leaf::wait', payload: null })
      } catch (err) {
        parent.childError = err
        throw err
      }
    })
    await registered('leaf::wait')
    await registered('middle::work')

    const caller = client('caller')
    const controller = new AbortController()
    const call = caller.trigger({ function_id: 'middle::work', payload: { pages: 3 }, signal: controller.signal })
    await waitFor(() => child.started === true, 'child.started === true')
    controller.abort('the user closed the page')
    const error = await rejection(call)
    assert.ok(error instanceof InvocationError)
    assert.equal(error.code, 'cancelled')
    assert.match(error.message, /the user closed the page/)

    await waitFor(() => parent.reason !== undefined && child.reason !== undefined, 'parent.reason !== undefined && child.reason !== undefined')
    assert.equal((parent.reason as InvocationError).code, 'cancelled')
    assert.match((parent.reason as InvocationError).message, /the user closed the page/)
    // The child was cancelled by the middle worker's SDK (its own cancel), with the same reason.
    assert.equal((child.reason as InvocationError).code, 'cancelled')
    assert.match((child.reason as InvocationError).message, /the user closed the page/)
    assert.equal((parent.childError as InvocationError).code, 'cancelled')
    await waitFor(() => e.engine.flights.size === 0, 'e.engine.flights.size === 0')
  })

  it('with telemetry on, a child call made under an unrelated OpenTelemetry context is still cancelled with its handler', async () => {
    // The handler scope and OpenTelemetry's context share one store (svc-helpers' scope.ts); switching
    // the OpenTelemetry context must not drop the handler the calls are cancelled with (sdk.md §6).
    const child: { reason?: unknown; started?: true } = {}
    const parent: { reason?: unknown; spanInHandler?: boolean; spanAfterSwitch?: boolean; childError?: unknown } = {}
    client('leaf-otel').registerFunction('leaf::wait-otel', untilAborted(child))
    const middle = registerWorker(e.url, { workerName: 'middle-otel', otel: { enabled: true } })
    try {
      middle.registerFunction('middle::switch', async (_data, _metadata, { signal }) => {
        signal.addEventListener('abort', () => (parent.reason = signal.reason))
        parent.spanInHandler = trace.getSpan(context.active()) !== undefined
        try {
          await context.with(ROOT_CONTEXT, () => {
            parent.spanAfterSwitch = trace.getSpan(context.active()) !== undefined
            return middle.trigger({ function_id: 'leaf::wait-otel', payload: null })
          })
        } catch (err) {
          parent.childError = err
          throw err
        }
      })
      await registered('leaf::wait-otel')
      await registered('middle::switch')
      const controller = new AbortController()
      const call = client('caller-otel').trigger({ function_id: 'middle::switch', payload: null, signal: controller.signal })
      await waitFor(() => child.started === true, 'child.started === true')
      assert.equal(parent.spanInHandler, true, 'the handler runs in its span')
      assert.equal(parent.spanAfterSwitch, false, 'the switch left the span behind')
      controller.abort('stop the switch')
      assert.equal((await rejection(call)).code, 'cancelled')
      await waitFor(() => child.reason !== undefined && parent.childError !== undefined, 'child.reason !== undefined && parent.childError !== undefined')
      assert.equal((child.reason as InvocationError).code, 'cancelled')
      assert.match((child.reason as InvocationError).message, /stop the switch/)
      assert.equal((parent.childError as InvocationError).code, 'cancelled')
      await waitFor(() => e.engine.flights.size === 0, 'e.engine.flights.size === 0')
    } finally {
      await middle.shutdown()
    }
  })

  it('rejects at once, sending nothing, for a signal already aborted', async () => {
    let ran = false
    const never = client('never')
    never.registerFunction('never::run', () => {
      ran = true
    })
    never.registerFunction('never::marker', () => 'marker')
    await registered('never::run')
    await registered('never::marker')
    const caller = client('caller2')
    const error = await rejection(caller.trigger({ function_id: 'never::run', payload: null, signal: AbortSignal.abort('too late') }))
    assert.equal(error.code, 'cancelled')
    assert.match(error.message, /too late/)
    // A call after it on the same connections: had the aborted call been sent, it would have run first.
    assert.equal(await caller.trigger({ function_id: 'never::marker', payload: null }), 'marker')
    assert.equal(ran, false)
  })

  it("the SDK's own call timeout cancels the handler", async () => {
    const seen: { reason?: unknown; started?: true } = {}
    client('slow').registerFunction('slow::timeout', untilAborted(seen))
    await registered('slow::timeout')
    const error = await rejection(client('impatient').trigger({ function_id: 'slow::timeout', payload: null, timeoutMs: 300 }))
    assert.equal(error.code, 'TIMEOUT')
    await waitFor(() => seen.reason !== undefined, 'seen.reason !== undefined')
    assert.equal((seen.reason as InvocationError).code, 'cancelled')
    assert.match((seen.reason as InvocationError).message, /timed out after 300ms/)
  })

  it("the engine's timeout of its own call cancels the handler (protocol.md §6.5)", async () => {
    const seen: { reason?: unknown; started?: true } = {}
    client('slow2').registerFunction('slow::engine', untilAborted(seen))
    await registered('slow::engine')
    await assert.rejects(e.engine.inject({ function_id: 'slow::engine', data: null, timeoutMs: 200 }), { code: 'TIMEOUT' })
    await waitFor(() => seen.reason !== undefined, 'seen.reason !== undefined')
    assert.match((seen.reason as InvocationError).message, /timed out after 200ms/)
  })

  it('engine::invocations::cancel from a script reaches the handler', async () => {
    const seen: { reason?: unknown; started?: true } = {}
    client('svc-long').registerFunction('long::job', untilAborted(seen))
    await registered('long::job')
    const script = client('script')
    const call = script.trigger({ function_id: 'long::job', payload: null })
    await waitFor(() => seen.started === true, 'seen.started === true')
    const { invocations } = await script.trigger<unknown, { invocations: Array<{ invocation_id: string; worker_name: string }> }>({
      function_id: 'engine::invocations::list',
      payload: { function_id: 'long::job' },
    })
    assert.equal(invocations.length, 1)
    assert.equal(invocations[0]!.worker_name, 'svc-long')
    const answer = await script.trigger({ function_id: 'engine::invocations::cancel', payload: { invocation_id: invocations[0]!.invocation_id, reason: 'stuck' } })
    assert.deepEqual(answer, { cancelled: true })
    assert.equal((await rejection(call)).code, 'cancelled')
    await waitFor(() => seen.reason !== undefined, 'seen.reason !== undefined')
    assert.match((seen.reason as InvocationError).message, /stuck/)
  })
})

describe('svc-sdk cancellation across a fleet', () => {
  let nats: TestNats
  const engines: TestEngine[] = []
  const clients: SvcClient[] = []

  before(async () => {
    nats = await startTestNats()
    for (const name of ['east', 'west']) {
      const fleet = { ...FLEET_DEFAULTS, name: 'cancel-fleet', engine: name, nats: [nats.url], heartbeat_interval_ms: 200, heartbeat_timeout_ms: 2000 }
      engines.push(await startTestEngine({ builtins: [], config: { fleet } }))
    }
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.shutdown()))
    await Promise.all(engines.map((e) => e.stop()))
    await nats.close()
  })

  it('a cancel on the caller\'s engine reaches the handler on the engine that serves the call', async () => {
    const seen: { reason?: unknown; started?: true } = {}
    const server = registerWorker(engines[1]!.url, { workerName: 'west-worker', otel: OTEL_OFF })
    clients.push(server)
    server.registerFunction('far::wait', untilAborted(seen))
    await waitFor(() => engines[0]!.engine.functions.get('default', 'far::wait') !== undefined, "engines[0]!.engine.functions.get('default', 'far::wait') !== undefined", 10_000)
    const caller = registerWorker(engines[0]!.url, { workerName: 'east-caller', otel: OTEL_OFF })
    clients.push(caller)
    const controller = new AbortController()
    const call = caller.trigger({ function_id: 'far::wait', payload: null, signal: controller.signal })
    await waitFor(() => seen.started === true, 'seen.started === true', 10_000)
    // Listed on both engines: on the caller's as sent to the other engine, on the serving one with its worker.
    const served = (await engines[1]!.engine.inject({ function_id: 'engine::invocations::list', data: { function_id: 'far::wait' } })) as { total: number }
    assert.equal(served.total, 1)
    controller.abort('across the fleet')
    assert.equal((await rejection(call)).code, 'cancelled')
    await waitFor(() => seen.reason !== undefined, 'seen.reason !== undefined', 10_000)
    assert.match((seen.reason as InvocationError).message, /across the fleet/)
    await waitFor(() => engines[1]!.engine.flights.size === 0 && engines[0]!.engine.flights.size === 0, 'engines[1]!.engine.flights.size === 0 && engines[0]!.engine.flights.size === 0', 10_000)
  })

  it("a void call to another engine leaves nothing in flight on the caller's engine", async () => {
    let ran = 0
    const server = registerWorker(engines[1]!.url, { workerName: 'west-void', otel: OTEL_OFF })
    clients.push(server)
    server.registerFunction('far::void', () => {
      ran++
    })
    await waitFor(() => engines[0]!.engine.functions.get('default', 'far::void') !== undefined, "engines[0]!.engine.functions.get('default', 'far::void') !== undefined", 10_000)
    await engines[0]!.engine.inject({ function_id: 'far::void', data: null, action: { type: 'void' } })
    await waitFor(() => ran === 1, 'ran === 1', 10_000)
    await waitFor(() => engines[0]!.engine.flights.size === 0 && engines[1]!.engine.flights.size === 0, 'engines[0]!.engine.flights.size === 0 && engines[1]!.engine.flights.size === 0', 10_000)
  })
})

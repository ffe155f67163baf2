/**
 * Cancellation (issue 21; docs/reference/protocol.md "cancelinvocation"), against a real engine
 * over WebSockets with raw workers that speak the frames by hand: a caller cancels its call, the
 * engine's timeout cancels the callee, a caller's disconnect and an HTTP client's disconnect cancel
 * the call, `engine::invocations::list`/`cancel`, a call cancelled while it waits in the
 * registration buffer, and an old worker that ignores the cancel frame.
 */
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

let e: TestEngine
const workers: RawWorker[] = []
before(async () => {
  e = await startTestEngine({ config: { registration_namespace_grace_ms: 10 } })
})
after(async () => {
  await Promise.all(workers.map((w) => w.close()))
  await e.stop()
})

async function worker(announce?: Record<string, unknown>): Promise<RawWorker> {
  const w = await RawWorker.connect(e.url, announce === undefined ? {} : { announce })
  workers.push(w)
  return w
}

/** A worker serving `id` whose handler never answers: the invocations it receives are recorded. */
async function hangingCallee(id: string): Promise<RawWorker> {
  const w = await worker({ name: `callee-${id}` })
  w.send({ type: 'registerfunction', id })
  await waitFor(() => e.engine.functions.get('default', id) !== undefined, "e.engine.functions.get('default', id) !== undefined")
  return w
}

const invoked = (id: string) => (f: Frame) => f.type === 'invokefunction' && f.function_id === id
const cancelOf = (legId: string) => (f: Frame) => f.type === 'cancelinvocation' && f.invocation_id === legId

describe('cancelinvocation from the caller', () => {
  it('answers the caller with cancelled at once, tells the callee by its leg id, and drops the late result', async () => {
    const callee = await hangingCallee('slow::one')
    const caller = await worker({ name: 'caller' })
    caller.send({ type: 'invokefunction', invocation_id: 'c1', function_id: 'slow::one', data: { n: 1 } })
    const leg = await callee.next(invoked('slow::one'))
    caller.send({ type: 'cancelinvocation', invocation_id: 'c1', reason: 'user pressed stop' })
    const answer = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'c1')
    assert.equal(answer.error?.code, 'cancelled')
    assert.match(answer.error.message, /user pressed stop/)
    assert.equal(answer.function_id, 'slow::one')
    const cancel = await callee.next(cancelOf(leg.invocation_id))
    assert.equal(cancel.reason, 'user pressed stop')
    // The worker answers anyway (an old SDK): the engine drops it, the caller hears nothing more.
    callee.send({ type: 'invocationresult', invocation_id: leg.invocation_id, function_id: 'slow::one', result: 'late' })
    assert.equal(await caller.silent((f) => f.type === 'invocationresult' && f.invocation_id === 'c1'), true)
    assert.equal(e.engine.flights.get(leg.invocation_id), undefined)
  })

  it('ignores a cancel of an unknown or finished call, and a cancel of another connection\'s call', async () => {
    const callee = await hangingCallee('slow::two')
    const caller = await worker()
    const other = await worker()
    caller.send({ type: 'invokefunction', invocation_id: 'c2', function_id: 'slow::two', data: null })
    const leg = await callee.next(invoked('slow::two'))
    other.send({ type: 'cancelinvocation', invocation_id: 'c2' })
    other.send({ type: 'cancelinvocation', invocation_id: 'nothing' })
    assert.equal(await callee.silent(cancelOf(leg.invocation_id)), true)
    callee.send({ type: 'invocationresult', invocation_id: leg.invocation_id, function_id: 'slow::two', result: 7 })
    const answer = await caller.next((f) => f.type === 'invocationresult' && f.invocation_id === 'c2')
    assert.equal(answer.result, 7)
    caller.send({ type: 'cancelinvocation', invocation_id: 'c2' })
    assert.equal(await callee.silent((f) => f.type === 'cancelinvocation'), true)
  })

  it('an old worker that ignores the cancel frame keeps serving', async () => {
    const old = await worker({ name: 'old' })
    let calls = 0
    const gate: Array<() => void> = []
    old.serve('old::fn', (data) => {
      calls++
      if (data === 'hang') return new Promise<string>((resolve) => gate.push(() => resolve('finally')))
      return `ok ${data}`
    })
    await waitFor(() => e.engine.functions.get('default', 'old::fn') !== undefined, "e.engine.functions.get('default', 'old::fn') !== undefined")
    const caller = await worker()
    caller.send({ type: 'invokefunction', invocation_id: 'o1', function_id: 'old::fn', data: 'hang' })
    await waitFor(() => calls === 1, 'calls === 1')
    caller.send({ type: 'cancelinvocation', invocation_id: 'o1' })
    assert.equal((await caller.next((f) => f.invocation_id === 'o1')).error?.code, 'cancelled')
    await old.next((f) => f.type === 'cancelinvocation')
    gate.shift()!() // its late answer is dropped
    const again = await caller.call('old::fn', 'again')
    assert.equal(again.result, 'ok again')
    assert.equal(old.isOpen, true)
  })

  it('drops a call cancelled while it waits in the registration buffer, before the worker ever gets it', async () => {
    // An engine whose buffer holds a connection's frames until it announces (§3.4).
    const held = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 60_000 } })
    try {
      const callee = await RawWorker.connect(held.url, { announce: { name: 'callee' } })
      callee.send({ type: 'registerfunction', id: 'slow::held' })
      await waitFor(() => held.engine.functions.get('default', 'slow::held') !== undefined, "held.engine.functions.get('default', 'slow::held') !== undefined")
      const caller = await RawWorker.connect(held.url)
      caller.send({ type: 'invokefunction', invocation_id: 'h1', function_id: 'slow::held', data: null })
      caller.send({ type: 'cancelinvocation', invocation_id: 'h1', reason: 'changed my mind' })
      const answer = await caller.next((f) => f.invocation_id === 'h1')
      assert.equal(answer.error?.code, 'cancelled')
      assert.equal(answer.function_id, 'slow::held')
      caller.announce({ name: 'caller' }) // releases the buffer: nothing of h1 is left in it
      assert.equal(await callee.silent(invoked('slow::held')), true)
      await Promise.all([caller.close(), callee.close()])
    } finally {
      await held.stop()
    }
  })
})

describe('the engine cancels', () => {
  it("an engine-originated call's timeout sends the cancel to the worker (§6.5)", async () => {
    const callee = await hangingCallee('slow::timeout')
    const call = e.engine.inject({ function_id: 'slow::timeout', data: null, timeoutMs: 200 })
    const leg = await callee.next(invoked('slow::timeout'))
    await assert.rejects(call, { code: 'TIMEOUT' })
    const cancel = await callee.next(cancelOf(leg.invocation_id))
    assert.match(cancel.reason, /timed out after 200ms/)
  })

  it("the caller's disconnect cancels the calls it awaits", async () => {
    const callee = await hangingCallee('slow::orphan')
    const caller = await worker()
    caller.send({ type: 'invokefunction', invocation_id: 'd1', function_id: 'slow::orphan', data: null })
    const leg = await callee.next(invoked('slow::orphan'))
    await caller.close()
    const cancel = await callee.next(cancelOf(leg.invocation_id))
    assert.equal(cancel.reason, 'the caller disconnected')
  })

  it('an HTTP client that disconnects before the response cancels the route handler', async () => {
    const callee = await hangingCallee('slow::route')
    callee.send({ type: 'registertrigger', id: 'route-slow', trigger_type: 'http', function_id: 'slow::route', config: { api_path: 'slow', http_method: 'GET' } })
    await callee.next((f) => f.type === 'triggerregistrationresult' || f.type === 'registertrigger', 300).catch(() => undefined)
    await waitFor(() => e.engine.triggers.getBinding('route-slow')?.status === 'active', "e.engine.triggers.getBinding('route-slow')?.status === 'active'")
    const req = request(`${e.httpUrl}/slow`)
    req.on('error', () => {})
    req.end()
    const leg = await callee.next(invoked('slow::route'))
    req.destroy()
    const cancel = await callee.next(cancelOf(leg.invocation_id))
    assert.equal(cancel.reason, 'the HTTP client disconnected')
    await waitFor(() => e.engine.flights.get(leg.invocation_id) === undefined, 'e.engine.flights.get(leg.invocation_id) === undefined')
  })
})

describe('an HTTP-invoked function (protocol.md §6.8)', () => {
  it('a cancelled call abandons its HTTP request: the function\'s server sees the connection close', async () => {
    const { createServer } = await import('node:http')
    let closed!: () => void
    const connectionClosed = new Promise<void>((resolve) => (closed = resolve))
    let arrived!: () => void
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve))
    const server = createServer((req) => {
      arrived()
      req.socket.once('close', () => closed()) // never answers
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const h = await startTestEngine({ builtins: [], config: { http_functions: { url_allowlist: ['127.0.0.1'], block_private_ips: true, require_https: true } } })
    try {
      const owner = await RawWorker.connect(h.url, { announce: { name: 'owner' } })
      const port = (server.address() as { port: number }).port
      owner.send({ type: 'registerfunction', id: 'remote::hang', invocation: { url: `http://127.0.0.1:${port}/`, timeout_ms: 60_000 } })
      await waitFor(() => h.engine.functions.get('default', 'remote::hang') !== undefined, "h.engine.functions.get('default', 'remote::hang') !== undefined")
      const caller = await RawWorker.connect(h.url, { announce: { name: 'caller' } })
      caller.send({ type: 'invokefunction', invocation_id: 'r1', function_id: 'remote::hang', data: {} })
      await requestArrived
      caller.send({ type: 'cancelinvocation', invocation_id: 'r1' })
      assert.equal((await caller.next((f) => f.invocation_id === 'r1')).error?.code, 'cancelled')
      await connectionClosed
      await waitFor(() => h.engine.flights.size === 0, 'h.engine.flights.size === 0')
      await Promise.all([owner.close(), caller.close()])
    } finally {
      await h.stop()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('engine::invocations::list and ::cancel', () => {
  it('lists the call in flight with its worker, caller and trace, and cancels it by the listed id', async () => {
    const callee = await hangingCallee('slow::listed')
    const caller = await worker({ name: 'lister' })
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
    const before = Date.now()
    caller.send({ type: 'invokefunction', invocation_id: 'l1', function_id: 'slow::listed', data: null, traceparent })
    const leg = await callee.next(invoked('slow::listed'))
    const all = await caller.call('engine::invocations::list', {})
    const ids = all.result.invocations.map((i: { function_id: string }) => i.function_id)
    assert.ok(ids.includes('slow::listed'), ids.join(','))
    assert.ok(!ids.some((id: string) => id.startsWith('engine::')), 'engine:: calls (the listing itself) only with include_internal')
    const internal = await caller.call('engine::invocations::list', { include_internal: true })
    assert.ok(internal.result.invocations.some((i: { function_id: string }) => i.function_id === 'engine::invocations::list'))
    const listed = await caller.call('engine::invocations::list', { function_id: 'slow::listed' })
    const [entry] = listed.result.invocations
    assert.equal(listed.result.total, 1)
    assert.equal(entry.invocation_id, leg.invocation_id)
    assert.equal(entry.worker, callee.workerId)
    assert.equal(entry.worker_name, 'callee-slow::listed')
    assert.equal(entry.caller, caller.workerId)
    assert.equal(entry.caller_name, 'lister')
    assert.equal(entry.trace_id, '4bf92f3577b34da6a3ce929d0e0e4736')
    assert.ok(entry.started_at >= before && entry.started_at <= Date.now())

    const cancelled = await e.engine.inject({ function_id: 'engine::invocations::cancel', data: { invocation_id: leg.invocation_id, reason: 'from a script' } })
    assert.deepEqual(cancelled, { cancelled: true })
    const answer = await caller.next((f) => f.invocation_id === 'l1')
    assert.equal(answer.error?.code, 'cancelled')
    assert.match(answer.error.message, /from a script/)
    await callee.next(cancelOf(leg.invocation_id))
    assert.deepEqual(await e.engine.inject({ function_id: 'engine::invocations::cancel', data: { invocation_id: leg.invocation_id } }), { cancelled: false })
    const after = await caller.call('engine::invocations::list', { function_id: 'slow::listed' })
    assert.deepEqual(after.result, { invocations: [], total: 0 })
  })

  it('refuses input of the wrong shape with INVALID_ARGUMENTS', async () => {
    await assert.rejects(e.engine.inject({ function_id: 'engine::invocations::cancel', data: {} }), { code: 'INVALID_ARGUMENTS' })
    await assert.rejects(e.engine.inject({ function_id: 'engine::invocations::cancel', data: { invocation_id: 3 } }), { code: 'INVALID_ARGUMENTS' })
    await assert.rejects(e.engine.inject({ function_id: 'engine::invocations::list', data: { limit: -1 } }), { code: 'INVALID_ARGUMENTS' })
  })

  it('a built-in caller cancels with an AbortSignal; an in-process handler sees its signal abort', async () => {
    let seen: AbortSignal | undefined
    // A handler of a built-in: LocalWorker.registerFunction through the engine's own peer type.
    const { BuiltinPeer } = await import('../runtime/engine/builtin-peer.ts')
    const peer = new BuiltinPeer(e.engine, 'cancel-test', '0')
    const stopped = new Promise<unknown>((resolve) => {
      peer.registerFunction('local::wait', (_data, context) => {
        seen = context.signal
        context.signal.addEventListener('abort', () => resolve(context.signal.reason))
        return new Promise(() => {})
      })
    })
    const controller = new AbortController()
    const call = e.engine.inject({ function_id: 'local::wait', data: null, signal: controller.signal })
    await waitFor(() => seen !== undefined, 'seen !== undefined')
    controller.abort('no longer needed')
    await assert.rejects(call, { code: 'cancelled', message: 'Invocation cancelled: no longer needed' })
    assert.equal(((await stopped) as { code: string }).code, 'cancelled')
    peer.unregisterFunction('local::wait')
  })

  it("an engine-originated call's timeout answers TIMEOUT and aborts an in-process handler's signal (§6.5)", async () => {
    const { BuiltinPeer } = await import('../runtime/engine/builtin-peer.ts')
    const peer = new BuiltinPeer(e.engine, 'timeout-test', '0')
    const stopped = new Promise<unknown>((resolve) => {
      peer.registerFunction('local::late', (_data, context) => {
        context.signal.addEventListener('abort', () => resolve(context.signal.reason))
        return new Promise(() => {})
      })
    })
    // A handler that answers in time leaves nothing behind that could time it out later.
    peer.registerFunction('local::prompt', async () => ({ ok: true }))
    assert.deepEqual(await e.engine.inject({ function_id: 'local::prompt', data: null, timeoutMs: 100 }), { ok: true })
    await assert.rejects(e.engine.inject({ function_id: 'local::late', data: null, timeoutMs: 150 }), { code: 'TIMEOUT' })
    assert.equal(((await stopped) as { code: string }).code, 'TIMEOUT')
    peer.unregisterFunction('local::late')
    peer.unregisterFunction('local::prompt')
  })
})

/**
 * Ids and namespaces the engine would refuse (issue 16 item 14; protocol.md §3.5): a lone UTF-16
 * surrogate, a control character, more than 1024 characters. svc-sdk refuses them itself, before
 * anything is sent, with the catalogue's `INVALID_ID` / `INVALID_NAMESPACE` and the problem named
 * (the engine can only answer a registration with FUNCTION_NAMESPACE_CONFLICT, §5.11). Against a
 * real engine, with a fast-check property that the SDK and the engine agree on every id.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import { idProblem } from 'svc-protocol/ids'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { WorkerClient } from '../src/client.ts'
import { InvocationError, TriggerAction } from '../src/index.ts'
import { resolveOptions } from '../src/options.ts'
import type { RegistrationError } from '../src/types.ts'
import { waitFor } from '../../../test/support/wait.ts'

async function engine(t: TestContext): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 10 } })
  t.after(() => e.stop())
  return e
}

function worker(t: TestContext, url: string): { client: WorkerClient; refusals: RegistrationError[] } {
  const client = new WorkerClient(url, resolveOptions({ workerName: 'ids' }, {}), { log: { warn: () => {} } })
  t.after(() => client.shutdown())
  const refusals: RegistrationError[] = []
  client.addRegistrationErrorListener((error) => refusals.push(error))
  return { client, refusals }
}

/** Asserts that `run` throws, synchronously, an InvocationError with `code` and `detail`. */
function throwsCode(run: () => unknown, code: string, detail: string): void {
  assert.throws(run, (err: unknown) => {
    assert.ok(err instanceof InvocationError, `expected an InvocationError, got ${String(err)}`)
    assert.equal(err.code, code)
    assert.equal(err.detail, detail)
    assert.equal(err.message, `${code}: ${detail}`)
    return true
  })
}

async function listed(client: WorkerClient, id: string): Promise<boolean> {
  const { functions } = await client.trigger<object, { functions: Array<{ function_id: string }> }>({ function_id: 'engine::functions::list', payload: {} })
  return functions.some((f) => f.function_id === id)
}

describe('ids and namespaces the engine would refuse (issue 16 item 14)', () => {
  it('registerFunction throws INVALID_ID naming the problem, sends nothing, and the client keeps working', async (t) => {
    const e = await engine(t)
    const { client, refusals } = worker(t, e.url)
    throwsCode(() => client.registerFunction('bad::\ud800', () => 1), 'INVALID_ID', 'Invalid id: function id contains a lone UTF-16 surrogate at index 5')
    throwsCode(() => client.registerFunction('bad::\u0007bell', () => 1), 'INVALID_ID', 'Invalid id: function id contains a control character (U+0007) at index 5')
    throwsCode(() => client.registerFunction('x'.repeat(1025), { url: 'https://example.com/' }), 'INVALID_ID', 'Invalid id: function id is longer than 1024 characters (1025)')
    client.registerFunction('good::fn', (data: number) => data + 1)
    await waitFor(() => listed(client, 'good::fn'), "listed(client, 'good::fn')")
    assert.equal(await client.trigger({ function_id: 'good::fn', payload: 1 }), 2)
    // Nothing reached the engine: no refusal came back, and the id was never stored for a replay.
    assert.deepEqual(refusals, [])
    assert.equal(client.getConnectionState(), 'connected')
    client.registerFunction('bad::fixed', () => 'ok')
    await waitFor(() => listed(client, 'bad::fixed'), "listed(client, 'bad::fixed')")
  })

  it('registerTrigger and registerTriggerType check their ids (INVALID_ID) and namespaces (INVALID_NAMESPACE)', async (t) => {
    const e = await engine(t)
    const { client, refusals } = worker(t, e.url)
    const handler = { registerTrigger() {}, unregisterTrigger() {} }
    throwsCode(() => client.registerTrigger({ type: 'hook\ud800', function_id: 'a::b', config: {} }), 'INVALID_ID', 'Invalid id: trigger type contains a lone UTF-16 surrogate at index 4')
    throwsCode(() => client.registerTrigger({ type: 'hook', function_id: 'a::\udc00', config: {} }), 'INVALID_ID', 'Invalid id: function_id contains a lone UTF-16 surrogate at index 3')
    throwsCode(() => client.registerTrigger({ type: 'hook', function_id: 'a::b', config: {}, namespace: 'ns\u0000' }), 'INVALID_NAMESPACE', 'Invalid namespace: namespace contains a control character (U+0000) at index 2')
    throwsCode(() => client.registerTrigger({ type: 'hook', function_id: 'a::b', config: {}, trigger_namespace: '\ud800' }), 'INVALID_NAMESPACE', 'Invalid namespace: trigger_namespace contains a lone UTF-16 surrogate at index 0')
    throwsCode(() => client.registerTriggerType({ id: 'type\ud800', description: '' }, handler), 'INVALID_ID', 'Invalid id: trigger type id contains a lone UTF-16 surrogate at index 4')
    throwsCode(() => client.registerTriggerType({ id: 'type', description: '', namespace: 'n\ud800' }, handler), 'INVALID_NAMESPACE', 'Invalid namespace: namespace contains a lone UTF-16 surrogate at index 1')
    // Through a trigger type's ref too: the function is not left registered when its binding is refused.
    const type = client.registerTriggerType({ id: 'hook', description: 'hooks' }, handler)
    throwsCode(() => type.registerFunction('hooked::\ud800', () => 1, {}), 'INVALID_ID', 'Invalid id: function id contains a lone UTF-16 surrogate at index 8')
    client.registerFunction('hooked::fn', () => 'ok')
    await waitFor(() => listed(client, 'hooked::fn'), "listed(client, 'hooked::fn')")
    assert.deepEqual(refusals, [])
    // A blank namespace stays a TypeError (sdk.md §5).
    assert.throws(() => client.registerTrigger({ type: 'hook', function_id: 'a::b', config: {}, namespace: ' ' }), TypeError)
  })

  it('trigger rejects at once with INVALID_ID or INVALID_NAMESPACE, the engine\'s own message, whatever the action', async (t) => {
    const e = await engine(t)
    const { client } = worker(t, e.url)
    const raw = await RawWorker.connect(e.url)
    t.after(() => raw.close())
    for (const action of [undefined, TriggerAction.Void(), TriggerAction.Enqueue({ queue: 'q' })]) {
      const request = action === undefined ? { function_id: 'a::\ud800', payload: 1 } : { function_id: 'a::\ud800', payload: 1, action }
      await assert.rejects(client.trigger(request as never), { name: 'InvocationError', code: 'INVALID_ID', detail: 'Invalid id: function_id contains a lone UTF-16 surrogate at index 3', function_id: 'a::\ud800' })
    }
    await assert.rejects(client.trigger({ function_id: 'a::b', payload: 1, namespace: 'x\u001b' }), {
      code: 'INVALID_NAMESPACE',
      detail: 'Invalid namespace: namespace contains a control character (U+001B) at index 1',
    })
    await assert.rejects(client.trigger({ function_id: 'a::b', payload: 1, namespace: '' }), { code: 'INVALID_NAMESPACE' })
    // The engine answers a raw client's frame with the same code and message.
    assert.deepEqual((await raw.call('a::\ud800', 1)).error, { code: 'INVALID_ID', message: 'Invalid id: function_id contains a lone UTF-16 surrogate at index 3' })
  })

  it('a worker namespace that is not well-formed text is refused when the client is created', () => {
    assert.throws(() => resolveOptions({ namespace: 'team\ud800' }, {}), { name: 'InvocationError', code: 'INVALID_NAMESPACE' })
    assert.throws(() => resolveOptions({}, { SVC_NAMESPACE: 'team\u0001' }), {
      code: 'INVALID_NAMESPACE',
      detail: 'Invalid namespace: namespace contains a control character (U+0001) at index 4',
    })
  })

  it('svc-sdk and the engine agree on every id: refused locally with the engine\'s message, or registered and callable (fast-check)', async (t) => {
    const e = await engine(t)
    const { client, refusals } = worker(t, e.url)
    const raw = await RawWorker.connect(e.url)
    t.after(() => raw.close())
    const suffix = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
      fc.constantFrom('\ud800', '\udfff', '😀', '\ud83d', 'a\u0000b', '\u007f', 'x'.repeat(1020), 'x'.repeat(1021)),
    )
    let n = 0
    await fc.assert(
      fc.asyncProperty(suffix, async (tail) => {
        const id = `fz${n++}::${tail}`
        const problem = idProblem(id)
        if (problem === undefined) {
          const ref = client.registerFunction(id, () => id.length)
          assert.equal(await client.trigger({ function_id: id, payload: null }), id.length)
          ref.unregister()
          return
        }
        throwsCode(() => client.registerFunction(id, () => 0), 'INVALID_ID', `Invalid id: function id ${problem}`)
        const local = await client.trigger({ function_id: id, payload: null }).then(
          () => assert.fail('trigger resolved'),
          (err: InvocationError) => ({ code: err.code, message: err.detail }),
        )
        assert.deepEqual(local, (await raw.call(id, null)).error)
      }),
      { numRuns: 80 },
    )
    assert.deepEqual(refusals, [])
  })
})

/**
 * The client's call table (calls.ts, deadlines.ts) under churn: a settled call's objects die young.
 * A caller keeps its pending calls and their deadlines for as long as it runs, so those tables
 * reach the old generation; a `Map` or `Set` there (V8 replaces their hash tables as entries come
 * and go, and a replaced table still points at what it held) made every call in flight survive
 * the scavenges and be promoted: a svc-sdk caller at 64 in flight promoted ~300 bytes per call.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import { decodeText, encodeInvokeFunction, RawJson } from '../../src/codec.ts'
import { idProblem } from '../../src/ids.ts'
import { CALL_ID_FORMAT, CallIds, ClientSession, InvocationError } from '../../src/client/index.ts'
import { ScriptedTransport } from './support.ts'

describe('call table', () => {
  it("lets a settled call's objects die young: 40,000 calls at 64 in flight do not fill the old generation", async () => {
    // Scavenges only (`gc({ type: 'minor' })`) between rounds: what an old-generation table still
    // points at is promoted instead of freed.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void
    const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size
    const transport = new ScriptedTransport()
    let n = 0
    let lastId = ''
    const client = new ClientSession({ address: 'ws://127.0.0.1:1', connector: () => transport, announce: { runtime: 'test', name: 'calls' }, hooks: { newId: () => (lastId = `call-${n++}`) } })
    transport.open()
    const inFlight: string[] = []
    const answers: Array<Promise<unknown>> = []
    let settled = 0
    const call = () => {
      // A call's objects: its entry, its promise, the frame, and an answer of about 1 KB.
      const promise = client.trigger({ function_id: 'bench::echo', payload: { n } })
      transport.sent.length = 0
      inFlight.push(lastId)
      answers.push(promise.then(() => settled++))
      if (inFlight.length > 64) {
        const done = inFlight.shift()!
        transport.deliver(`{"type":"invocationresult","invocation_id":"${done}","function_id":"bench::echo","result":{"data":[${new Array(120).fill(n).join(',')}]}}`)
      }
    }
    for (let i = 0; i < 2000; i++) call()
    await Promise.all(answers.splice(0, answers.length - 64))
    // The tables are long-lived, as in a worker that has been up for a while.
    gc({ type: 'major' })
    gc({ type: 'major' })
    const before = oldSpace()
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 1000; i++) call()
      await Promise.all(answers.splice(0, answers.length - 64))
      gc({ type: 'minor' })
    }
    const grown = oldSpace() - before
    for (const id of inFlight.splice(0)) transport.deliver(`{"type":"invocationresult","invocation_id":"${id}","function_id":"bench::echo"}`)
    await Promise.all(answers.splice(0))
    assert.equal(settled, 42_000)
    await client.shutdown()
    assert.ok(grown < 8 * 1024 * 1024, `old generation grew by ${(grown / 1048576).toFixed(1)} MiB over 40,000 settled calls`)
  })

  it('still times calls out, and a lost connection fails the calls sent on it in the order they were made', async () => {
    const transport = new ScriptedTransport()
    let n = 0
    const client = new ClientSession({ address: 'ws://127.0.0.1:1', connector: () => transport, announce: { runtime: 'test', name: 'calls' }, hooks: { newId: () => `call-${n++}` } })
    transport.open()
    const timedOut = client.trigger({ function_id: 'slow::one', payload: null, timeoutMs: 20 }).catch((err: unknown) => err)
    const failed: string[] = []
    const lost = ['a::1', 'b::2', 'c::3'].map((id) => client.trigger({ function_id: id, payload: null }).catch((err: InvocationError) => failed.push(`${id} ${err.code}`)))
    const error = await timedOut
    assert.ok(error instanceof InvocationError)
    assert.equal(error.code, 'TIMEOUT')
    transport.terminate()
    await Promise.all(lost)
    assert.deepEqual(failed.map((f) => f.split(' ')[0]), ['a::1', 'b::2', 'c::3'])
    await client.shutdown()
  })
})

describe('call ids (fast-check)', () => {
  /** The `invocation_id` of each call frame a session sent. */
  const callIdsOf = (sent: string[]): string[] => sent.map((text) => JSON.parse(text)).filter((f) => f.type === 'invokefunction' && f.invocation_id !== undefined).map((f) => f.invocation_id)

  it('are unique across clients and calls, and well-formed ids the engine reads on its one-pass path', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 40 }), { minLength: 1, maxLength: 12 }), fc.array(fc.nat(), { maxLength: 200 }), (callsPerClient, order) => {
        // Clients made the default way (the platform's UUIDs for the prefix), calls interleaved in any order.
        const transports = callsPerClient.map(() => new ScriptedTransport())
        const clients = transports.map((transport) => new ClientSession({ address: 'ws://127.0.0.1:1', connector: () => transport, announce: { runtime: 'test', name: 'ids' }, log: { warn: () => {} } }))
        for (const transport of transports) transport.open()
        const left = [...callsPerClient]
        const calls = (i: number) => clients[i]!.trigger({ function_id: 'a::b', payload: { i } }).catch(() => {})
        for (const pick of order) {
          const i = pick % clients.length
          if (left[i]! > 0) (left[i]!--, void calls(i))
        }
        left.forEach((n, i) => {
          for (let k = 0; k < n; k++) void calls(i)
        })
        const ids = transports.flatMap((transport) => callIdsOf(transport.sent))
        assert.equal(ids.length, callsPerClient.reduce((a, b) => a + b, 0))
        assert.equal(new Set(ids).size, ids.length, 'an id was made twice')
        for (const id of ids) {
          assert.match(id, CALL_ID_FORMAT)
          assert.equal(idProblem(id), undefined)
          assert.equal(JSON.stringify(id), `"${id}"`)
          // The engine's decoder takes the frame on its one-pass path and reads the same id back.
          const frame = encodeInvokeFunction({ type: 'invokefunction', invocation_id: id, function_id: 'a::b', data: new RawJson('{"i":1}') }, `"${id}"`)
          assert.equal(frame, encodeInvokeFunction({ type: 'invokefunction', invocation_id: id, function_id: 'a::b', data: new RawJson('{"i":1}') }))
          const decoded = decodeText(frame)
          assert.equal(decoded.kind, 'message')
          assert.equal((decoded as { message: { invocation_id?: string } }).message.invocation_id, id)
        }
        for (const client of clients) void client.shutdown()
      }),
      { numRuns: 60 },
    )
  })

  it('refuse a hostile function id whatever ids were called before it (the last id found well-formed is not checked again)', async () => {
    const functionId = fc.oneof(fc.constantFrom('a::b', 'c::d', 'a::\ud800', 'a::\u0000', 'x'.repeat(1025), 'x'.repeat(1024)), fc.string({ unit: 'binary', maxLength: 6 }).filter((s) => s !== ''))
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ id: functionId, namespace: fc.option(fc.constantFrom('ns', ' ', 'n\u0001'), { nil: undefined }) }), { minLength: 1, maxLength: 30 }), async (calls) => {
        const transport = new ScriptedTransport()
        const client = new ClientSession({ address: 'ws://127.0.0.1:1', connector: () => transport, announce: { runtime: 'test', name: 'ids' }, log: { warn: () => {} } })
        transport.open()
        transport.sent.length = 0
        for (const { id, namespace } of calls) {
          let outcome = 'pending'
          client.trigger({ function_id: id, namespace, payload: 1 }).catch((err: InvocationError) => (outcome = err.code))
          await new Promise((resolve) => setImmediate(resolve))
          const bad = idProblem(id) !== undefined || (namespace !== undefined && (namespace.trim() === '' || idProblem(namespace) !== undefined))
          assert.equal(outcome === 'pending', !bad, `${JSON.stringify(id)} in ${JSON.stringify(namespace)}: ${outcome}`)
        }
        assert.equal(transport.sent.length, calls.filter(({ id, namespace }) => idProblem(id) === undefined && (namespace === undefined || (namespace.trim() !== '' && idProblem(namespace) === undefined))).length)
        await client.shutdown()
      }),
      { numRuns: 100 },
    )
  })

  it('take their prefix from any UUID source and refuse a source that gives something else', () => {
    fc.assert(
      fc.property(fc.uuid({ version: 4 }), fc.nat({ max: 5000 }), (uuid, skip) => {
        const ids = new CallIds(() => uuid)
        for (let i = 0; i < skip; i++) ids.next()
        const id = ids.next()
        assert.match(id, CALL_ID_FORMAT)
        assert.equal(id, `${(uuid.replace(/-/g, '').slice(0, 12) + uuid.replace(/-/g, '').slice(13, 17)).toLowerCase()}-${skip.toString(36)}`)
      }),
    )
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('', '"', '\\', 'zzzzzzzz-zzzz-4zzz-8zzz-zzzzzzzzzzzz', '0'.repeat(31), '0'.repeat(33))),
        (bad) => {
          fc.pre(!/^[0-9a-fA-F]{32}$/.test(bad.replace(/-/g, '')))
          assert.throws(() => new CallIds(() => bad), TypeError)
        },
      ),
    )
  })
})

/**
 * No input can take the engine down (issue 6 item 8): the single frames that crashed it, bounds on
 * open invocations, a property-based fuzz test of the worker protocol over the in-memory
 * transport and over real WebSockets, and of the channel route (`/ws/channels/…`). After every
 * attack the engine still routes calls.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { idProblem, MessageType, RESERVED_FUNCTION_IDS, RESERVED_TRIGGER_TYPES } from 'svc-protocol'
import WebSocket from 'ws'
import { ChannelSocket, upgradeAnswer } from './support/channel-client.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS } from '../runtime/engine/types.ts'

let t: TestEngine
let callee: RawWorker
const open: RawWorker[] = []

before(async () => {
  t = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 20 } })
  callee = await RawWorker.connect(t.url, { announce: { name: 'healthy' } })
  open.push(callee)
  callee.serve('health::echo', (data) => data)
  await waitFor(() => t.engine.functions.get('default', 'health::echo') !== undefined, "t.engine.functions.get('default', 'health::echo') !== undefined")
})
after(async () => {
  await Promise.all(open.map((w) => w.close()))
  await t.stop()
})

/** The engine still routes a call between two workers and serves its own functions. */
async function stillRouting(): Promise<void> {
  const probe = await RawWorker.connect(t.url)
  try {
    assert.deepEqual((await probe.call('health::echo', { ok: 1 })).result, { ok: 1 })
    assert.ok(Array.isArray(((await t.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: unknown[] }).functions))
    assert.ok(Array.isArray(((await t.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: unknown[] }).workers))
  } finally {
    await probe.close()
  }
}

const deep = (levels: number, leaf = '1') => '['.repeat(levels) + leaf + ']'.repeat(levels)

describe('frames that used to crash the engine', () => {
  it('a function id holding a lone UTF-16 surrogate (a 41-byte frame) is answered with INVALID_ID', async () => {
    const w = await RawWorker.connect(t.url)
    open.push(w)
    const frame = '{"type":"invokefunction","invocation_id":"s","function_id":"\\ud800"}'
    w.send(frame)
    const answer = await w.next((f) => f.invocation_id === 's')
    assert.deepEqual(answer.error, { code: 'INVALID_ID', message: 'Invalid id: function_id contains a lone UTF-16 surrogate at index 0' })
    // registrationrejected keeps FUNCTION_NAMESPACE_CONFLICT, the code SDKs read as "this one
    // registration was refused" (§5.11): any other code stops an SDK's client for good.
    w.send('{"type":"registerfunction","id":"bad::\\udfff"}')
    const rejected = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(rejected.code, 'FUNCTION_NAMESPACE_CONFLICT')
    assert.equal(rejected.reason, 'invalid')
    assert.equal(rejected.message, 'INVALID_ID: function id contains a lone UTF-16 surrogate at index 5')
    await stillRouting()
  })

  it('trigger ids, trigger types and namespaces that are not well-formed text get INVALID_ID and INVALID_NAMESPACE (issue 16 item 14)', async () => {
    const w = await RawWorker.connect(t.url)
    open.push(w)
    w.send({ type: 'registertrigger', id: 'b\ud800', trigger_type: 'cron', function_id: 'health::echo' })
    const badId = await w.next((f) => f.type === 'triggerregistrationresult')
    assert.deepEqual(badId.error, { code: 'INVALID_ID', message: 'Invalid id: id contains a lone UTF-16 surrogate at index 1' })
    assert.equal(badId.id, '')
    w.send({ type: 'registertrigger', id: 'b1', trigger_type: 'cron\u0007', function_id: 'health::echo' })
    const badType = await w.next((f) => f.type === 'triggerregistrationresult')
    assert.deepEqual(badType.error, { code: 'INVALID_ID', message: 'Invalid id: trigger_type contains a control character (U+0007) at index 4' })
    assert.equal(badType.id, 'b1')
    w.send({ type: 'registertrigger', id: 'b2', trigger_type: 'cron', function_id: 'health::echo', trigger_namespace: 'ns\udc00' })
    assert.equal((await w.next((f) => f.type === 'triggerregistrationresult')).error.code, 'INVALID_NAMESPACE')
    const call = await w.call('health::echo', 1, { namespace: 'ns\ud800' })
    assert.deepEqual(call.error, { code: 'INVALID_NAMESPACE', message: 'Invalid namespace: namespace contains a lone UTF-16 surrogate at index 2' })
    w.send({ type: 'registertriggertype', id: 'hooks', namespace: 'x\ud800' })
    const rejected = await w.next((f) => f.type === 'registrationrejected')
    assert.equal(rejected.code, 'FUNCTION_NAMESPACE_CONFLICT')
    assert.equal(rejected.message, 'INVALID_NAMESPACE: namespace contains a lone UTF-16 surrogate at index 1')
    const announce = await w.call('engine::workers::register', { name: 'w', namespace: 'team\ud800' })
    assert.equal(announce.error.code, 'INVALID_NAMESPACE')
    // Not only frames: engine::register_trigger checks its input the same way.
    await assert.rejects(t.engine.inject({ function_id: 'engine::register_trigger', data: { trigger_type: 'cron', function_id: 'a::\ud800' } }), { code: 'INVALID_ID' })
    await assert.rejects(t.engine.inject({ function_id: 'engine::register_trigger', data: { trigger_type: 'cron', function_id: 'a', namespace: '\ud800' } }), {
      code: 'INVALID_NAMESPACE',
    })
    assert.equal(t.engine.triggers.allBindings().some((b) => b.id === 'b1' || b.id === 'b2'), false)
    await stillRouting()
  })

  it('deeply nested data in a call is refused at the edge, answered with invalid_message', async () => {
    const w = await RawWorker.connect(t.url)
    open.push(w)
    w.send(`{"type":"invokefunction","invocation_id":"deep","function_id":"health::echo","data":${deep(5000)}}`)
    const answer = await w.next((f) => f.invocation_id === 'deep')
    assert.equal(answer.error.code, 'invalid_message')
    assert.match(answer.error.message, /nesting deeper than 144 levels/)
    // A payload at the limit of outside values still round-trips unchanged.
    const allowed = JSON.parse(deep(128))
    assert.deepEqual((await w.call('health::echo', allowed)).result, allowed)
    await stillRouting()
  })

  it('a deeply nested result from a worker ends the call with invalid_message instead of hanging it', async () => {
    const w = await RawWorker.connect(t.url)
    open.push(w)
    w.onFrame((f) => {
      if (f.type === 'invokefunction' && f.function_id === 'deep::result') {
        w.send(`{"type":"invocationresult","invocation_id":"${f.invocation_id}","function_id":"deep::result","result":${deep(5000)}}`)
      }
    })
    w.send({ type: 'registerfunction', id: 'deep::result' })
    await waitFor(() => t.engine.functions.get('default', 'deep::result') !== undefined, "t.engine.functions.get('default', 'deep::result') !== undefined")
    const caller = await RawWorker.connect(t.url)
    open.push(caller)
    const answer = await caller.call('deep::result', null)
    assert.equal(answer.error.code, 'invalid_message')
    assert.match(answer.error.message, /result of the callee refused: nesting deeper than 144 levels/)
    await stillRouting()
  })

  it('deep registration metadata and announce fields never reach the listings', async () => {
    const w = await RawWorker.connect(t.url)
    open.push(w)
    w.send(`{"type":"registerfunction","id":"deep::meta","metadata":{"x":${deep(5000)}}}`)
    const rejected = await w.next((f) => f.type === 'registrationrejected' && f.function_id === 'deep::meta')
    assert.equal(rejected.reason, 'invalid')
    assert.match(rejected.message, /nesting deeper than 144 levels/)
    w.send(`{"type":"invokefunction","function_id":"engine::workers::register","action":{"type":"void"},"data":{"name":"deep","telemetry":{"framework":${deep(5000)}}}}`)
    // Nesting under the limit is accepted; only the announce's strings are kept.
    w.announce({ name: 'n\ud800ame\u202e', description: 'd', os: { nested: JSON.parse(deep(100)) }, telemetry: { framework: JSON.parse(deep(100)), language: 'ts' } })
    w.send(`{"type":"registerfunction","id":"deep::ok","metadata":{"x":${deep(100)}}}`)
    await waitFor(() => t.engine.functions.get('default', 'deep::ok') !== undefined, "t.engine.functions.get('default', 'deep::ok') !== undefined")
    const workers = ((await t.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: Array<{ id: string; name: string; os: unknown }> }).workers
    const me = workers.find((x) => x.id === w.workerId)!
    assert.equal(me.name, 'n\ufffdame')
    assert.equal(me.os, null)
    const listed = await RawWorker.connect(t.url)
    open.push(listed)
    const functions = (await listed.call('engine::functions::list', {})).result.functions
    assert.ok(functions.some((f: { function_id: string }) => f.function_id === 'deep::ok'))
    await stillRouting()
  })

  it('invalid UTF-8 in a binary frame and huge numbers are handled', async () => {
    const socket = new WebSocket(t.url)
    const frames: string[] = []
    socket.on('message', (d) => frames.push(d.toString()))
    await new Promise((resolve) => socket.once('open', resolve))
    socket.send(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), { binary: true })
    socket.send('{"type":"invokefunction","invocation_id":"big","function_id":"health::echo","data":1e400}')
    await waitFor(() => frames.some((f) => f.includes('"big"')), 'frames.some((f) => f.includes(\'"big"\'))')
    // The engine forwards the number as written; the callee's JSON.parse reads it as Infinity,
    // which JSON writes back as null.
    assert.equal(JSON.parse(frames.find((f) => f.includes('"big"'))!).error, undefined)
    socket.close()
    await stillRouting()
  })
})

describe('open invocations are bounded', () => {
  it('per connection and overall, with TOO_MANY_INVOCATIONS; a disconnect releases its calls', async () => {
    const e = await startTestEngine({ builtins: [], config: { registration_namespace_grace_ms: 20 }, limits: { perConnection: 3, total: 5 } })
    const workers: RawWorker[] = []
    try {
      const sink = await RawWorker.connect(e.url)
      workers.push(sink)
      sink.send({ type: 'registerfunction', id: 'never::answers' })
      await waitFor(() => e.engine.functions.get('default', 'never::answers') !== undefined, "e.engine.functions.get('default', 'never::answers') !== undefined")
      const a = await RawWorker.connect(e.url)
      const b = await RawWorker.connect(e.url)
      workers.push(a, b)
      for (let i = 0; i < 3; i++) a.send({ type: 'invokefunction', invocation_id: `a${i}`, function_id: 'never::answers', data: i })
      const refused = await a.call('never::answers', 3)
      assert.deepEqual(refused.error, { code: 'TOO_MANY_INVOCATIONS', message: 'this connection already has 3 invocations open; wait for some to finish' })
      for (let i = 0; i < 2; i++) b.send({ type: 'invokefunction', invocation_id: `b${i}`, function_id: 'never::answers', data: i })
      const full = await b.call('never::answers', 9)
      assert.deepEqual(full.error, { code: 'TOO_MANY_INVOCATIONS', message: 'the engine already holds 5 open invocations; retry later' })
      await a.close()
      const again = await RawWorker.connect(e.url)
      workers.push(again)
      again.send({ type: 'invokefunction', invocation_id: 'later', function_id: 'never::answers', data: 0 })
      assert.equal(await again.silent((f) => f.invocation_id === 'later', 200), true)
    } finally {
      await Promise.all(workers.map((w) => w.close()))
      await e.stop()
    }
  })
})

// ---- fuzz -----------------------------------------------------------------------------------

const TYPES = [...Object.values(MessageType), 'unknown']

/** Strings with lone surrogates, control characters, near-miss ids and huge lengths. */
const hostileString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', ' ', 'engine::functions::list', 'health::echo', 'iii::x', '\ud800', 'health::\udfff', 'a\ud800::b', 'a\u0000b', '__proto__', 'constructor', 'x'.repeat(2000)),
)

/** Text holding at least one lone UTF-16 surrogate anywhere. */
const loneSurrogateText = fc
  .tuple(fc.string({ maxLength: 8 }), fc.integer({ min: 0xd800, max: 0xdfff }), fc.string({ maxLength: 8 }))
  .map(([before, unit, after]) => before + String.fromCharCode(unit) + after)
  .filter((text) => !text.isWellFormed())

/** JSON values up to `depth` levels, with the numbers JSON parsers get wrong. */
const { value: hostileValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileString,
    fc.constantFrom(0, -0, 1e308, -1e308, 2 ** 53 + 1, 1e-320, true, false, null),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 4 }),
  ),
}))

/** Invocation ids of the calls and cancels a fuzzed connection sends. */
const CALL_IDS = ['fz', 'fz2', '', '__proto__', 'constructor', 'hasOwnProperty', '0', '4294967295', '-0', 'a\ud800']

const FIELDS = ['id', 'function_id', 'invocation_id', 'trigger_type', 'namespace', 'trigger_namespace', 'data', 'result', 'error', 'metadata', 'config', 'action', 'description', 'invocation', 'previous_worker_id', 'reattach_token', 'reason']

/** One frame: a plausible message with hostile fields, deep nesting, or raw text. */
const hostileFrame = fc.oneof(
  fc.record({ type: fc.constantFrom(...TYPES), fields: fc.dictionary(fc.constantFrom(...FIELDS), hostileValue, { maxKeys: 6 }) }).map(({ type, fields }) => JSON.stringify({ ...fields, type })),
  fc.record({ type: fc.constantFrom('invokefunction', 'registerfunction', 'invocationresult'), depth: fc.integer({ min: 120, max: 3000 }) }).map(
    ({ type, depth }) => `{"type":"${type}","id":"f::d","function_id":"health::echo","invocation_id":"fz","data":${deep(depth)},"result":${deep(depth)}}`,
  ),
  // A call and cancels of it, of other ids, with hostile reasons (issue 21): in any order with the rest.
  // The ids are keys of the session's call index (runtime/engine/call-index.ts): names objects have, array indices.
  fc.record({ id: fc.constantFrom(...CALL_IDS), reason: fc.option(hostileValue, { nil: undefined }) }).map(({ id, reason }) =>
    JSON.stringify(reason === undefined ? { type: 'cancelinvocation', invocation_id: id } : { type: 'cancelinvocation', invocation_id: id, reason }),
  ),
  fc.constantFrom(...CALL_IDS.filter((id) => id !== '')).map((id) => JSON.stringify({ type: 'invokefunction', function_id: 'health::echo', invocation_id: id, data: { id } })),
  // engine::workers::drain (issue 21) with any payload: answered with an error, never a dropped connection.
  fc.oneof(hostileValue, fc.record({ id: hostileValue })).map((data) => JSON.stringify({ type: 'invokefunction', function_id: 'engine::workers::drain', invocation_id: 'fzd', data })),
  // A call as svc's encoders write it — type first, compact: the codec's one-pass reading
  // (decodeCall) — with hostile fields, a callee's result for a call id, maybe one character changed.
  fc
    .tuple(
      fc.constantFrom('invokefunction', 'invocationresult'),
      fc.dictionary(fc.constantFrom('function_id', 'invocation_id', 'data', 'result', 'metadata', 'traceparent', 'baggage', 'error', 'action', 'namespace'), hostileValue, { maxKeys: 4 }),
      fc.option(fc.tuple(fc.nat(), fc.constantFrom(...'{}[]",:\\ 0n\u0000\u007f'.split(''))), { nil: undefined }),
    )
    .map(([type, fields, change]) => {
      const text = JSON.stringify({ type, function_id: 'health::echo', invocation_id: 'fz', data: { ok: true }, ...fields })
      if (change === undefined) return text
      const i = change[0] % text.length
      return text.slice(0, i) + change[1] + text.slice(i + 1)
    }),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.constantFrom('{', '[]', 'null', '{"type":1}', '{"type":"invokefunction"}', '{"type":"invokefunction","function_id":"health::echo","action":{"type":"enqueue"}}', '   '),
)

/** How to build a text: `units` repetitions of ASCII, a 2-byte, a 4-byte character, a lone surrogate (6 bytes as a JSON escape) or a quote. */
const textRecipe = fc.record({ units: fc.integer({ min: 0, max: 3000 }), unit: fc.constantFrom('a', 'é', '😀', '\ud800', '"') })

describe('frames over a connection\'s limit (fast-check, issue 16 item 7)', () => {
  it('results, errors and payloads of any size around max_message_bytes are answered and never drop a connection', async () => {
    const limit = 2048
    const e = await startTestEngine({ builtins: [], extraListeners: [{ max_message_bytes: limit }], config: { registration_namespace_grace_ms: 10 } })
    try {
      // The callee sits on the listener with the large limit; the caller and a second callee on the small one.
      const callee = await RawWorker.connect(e.urls[0]!)
      callee.serve('size::make', ({ unit, units, code }: { unit: string; units: number; code?: string }) => {
        const text = unit.repeat(units)
        if (code !== undefined) throw Object.assign(new Error(text), { code })
        return text
      })
      const small = await RawWorker.connect(e.urls[1]!)
      small.serve('size::echo', (data) => data)
      const caller = await RawWorker.connect(e.urls[1]!)
      await waitFor(() => e.engine.functions.get('default', 'size::make') !== undefined && e.engine.functions.get('default', 'size::echo') !== undefined, 'the condition')
      await fc.assert(
        fc.asyncProperty(textRecipe, fc.option(fc.constantFrom('ORDER_FAILED', 'x'.repeat(100), '\ud800'), { nil: undefined }), async ({ unit, units }, code) => {
          const text = unit.repeat(units)
          // The caller's own frame stays small (the callee builds the text), so only the engine's frames can be too large.
          const answer = await caller.call('size::make', code === undefined ? { unit, units } : { unit, units, code })
          if (code === undefined && answer.error === undefined) assert.equal(answer.result, text)
          else if (code === undefined) assert.equal(answer.error.code, 'RESULT_TOO_LARGE')
          else assert.ok(answer.error.code === code || answer.error.code === 'RESULT_TOO_LARGE', `code ${answer.error.code}`)
          // A payload from inside the engine to a callee on the small listener.
          const pushed = await e.engine.inject({ function_id: 'size::echo', data: text }).then(
            (result) => ({ result, error: undefined }),
            (error: { code: string }) => ({ result: undefined, error }),
          )
          if (pushed.error === undefined) assert.equal(pushed.result, text)
          else assert.equal(pushed.error.code, 'PAYLOAD_TOO_LARGE')
          assert.equal(caller.isOpen && small.isOpen && callee.isOpen, true)
        }),
        { numRuns: 60 },
      )
      await Promise.all([callee.close(), small.close(), caller.close()])
    } finally {
      await e.stop()
    }
  })
})

/** One inbound frame: text of `units` repetitions of a 1-, 2-, 3- (a lone surrogate) or 4-byte unit, or bytes. */
const inboundFrame = fc.oneof(
  fc.record({ units: fc.integer({ min: 0, max: 40000 }), unit: fc.constantFrom('a', 'é', '\ud800', '😀') }).map(({ units, unit }) => unit.repeat(units)),
  fc.integer({ min: 0, max: 90000 }).map((n) => Buffer.alloc(n, 7)),
)

describe('frames queued while a session is busy (fast-check, issue 16 item 5)', () => {
  it('a connection is closed with 1008 at the first frame that takes the queued bytes over max_inbound_bytes, never before', async () => {
    const limit = 64 * 1024
    const warnings: Array<Record<string, unknown>> = []
    const log = { debug() {}, info() {}, error() {}, warn: (message: string, data?: Record<string, unknown>) => void (message.startsWith('closing a connection that sent too much') && warnings.push(data ?? {})) }
    const e = await startTestEngine({
      builtins: [],
      log,
      extraListeners: [{ max_inbound_bytes: limit, rbac: { auth_function_id: 'gate::auth', expose_functions: ['health::echo'] } }],
      config: { registration_namespace_grace_ms: 10, internal_invocation_timeout_ms: 600000 },
    })
    try {
      const gate = await RawWorker.connect(e.url)
      // Connections that ask to wait are never answered: everything they send queues.
      gate.serve('gate::auth', (input: { headers: Record<string, string> }) => (input.headers['x-wait'] ? new Promise(() => {}) : {}))
      gate.serve('health::echo', (data: unknown) => data)
      await waitFor(() => e.engine.functions.get('default', 'gate::auth') !== undefined && e.engine.functions.get('default', 'health::echo') !== undefined, 'the condition')
      await fc.assert(
        fc.asyncProperty(fc.array(inboundFrame, { maxLength: 12 }), async (drawn) => {
          // Two frames of the limit at the end make sure the bound is reached.
          const frames = [...drawn, 'z'.repeat(limit), 'z'.repeat(limit)]
          const size = (f: string | Buffer) => (typeof f === 'string' ? Buffer.byteLength(f) : f.length)
          let queued = 0
          for (const frame of frames) {
            if (queued > 0 && queued + size(frame) > limit) break
            queued += size(frame)
          }
          const socket = new WebSocket(e.urls[1]!, { headers: { 'x-wait': '1' } })
          socket.on('error', () => {})
          const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })))
          await new Promise((resolve) => socket.once('open', resolve))
          const before = warnings.length
          for (const frame of frames) socket.send(frame, { binary: typeof frame !== 'string' })
          assert.deepEqual(await closed, { code: 1008, reason: `more than ${limit} bytes of frames queued (max_inbound_bytes)` })
          assert.equal(warnings.length, before + 1)
          assert.equal(warnings.at(-1)!.queued_bytes, queued)
        }),
        { numRuns: 40 },
      )
      const polite = await RawWorker.connect(e.urls[1]!)
      assert.deepEqual((await polite.call('health::echo', { ok: 1 })).result, { ok: 1 })
      await Promise.all([polite.close(), gate.close()])
    } finally {
      await e.stop()
    }
  })
})

describe('protocol fuzz (fast-check)', () => {
  it('random frames over the in-memory transport never take the engine down', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileFrame, { minLength: 1, maxLength: 12 }), async (frames) => {
        const w = await RawWorker.inProcess(t.engine)
        // A frame may register health::echo on this connection too: the engine then sends it some of
        // the calls, and it answers them as the callee does (a replica that never answered would
        // hang them, and the probe call below, however the engine behaved).
        w.onFrame((f) => {
          if (f.type === 'invokefunction' && f.function_id === 'health::echo' && typeof f.invocation_id === 'string') {
            w.send({ type: 'invocationresult', invocation_id: f.invocation_id, function_id: 'health::echo', result: f.data })
          }
        })
        try {
          for (const frame of frames) w.send(frame)
          w.send({ type: 'ping' })
          // Either the session answers in order, or the engine closed it on purpose; never a crash.
          await Promise.race([w.next((f) => f.type === 'pong', 5000), w.closed])
          if (w.isOpen) {
            const answer = await w.call('health::echo', { after: frames.length })
            assert.deepEqual(answer.result, { after: frames.length })
          }
        } finally {
          // Closed whatever happened: a connection left open would stay a replica for the next runs.
          await w.close()
        }
        // Whatever was called and cancelled, nothing stays in flight once the connection is gone.
        await waitFor(() => t.engine.flights.size === 0, 't.engine.flights.size === 0')
      }),
      { numRuns: 150 },
    )
    await stillRouting()
  })

  it('ids and namespaces holding lone surrogates are refused with INVALID_ID and INVALID_NAMESPACE, wherever they are', async () => {
    await fc.assert(
      fc.asyncProperty(loneSurrogateText, async (bad) => {
        const w = await RawWorker.inProcess(t.engine)
        try {
          assert.equal((await w.call(bad, null)).error.code, 'INVALID_ID')
          assert.equal((await w.call('health::echo', null, { namespace: bad })).error.code, 'INVALID_NAMESPACE')
          w.send({ type: 'registertrigger', id: 'fz', trigger_type: bad, function_id: 'health::echo' })
          assert.equal((await w.next((f) => f.type === 'triggerregistrationresult')).error.code, 'INVALID_ID')
          w.send({ type: 'registerfunction', id: bad })
          const rejected = await w.next((f) => f.type === 'registrationrejected')
          assert.deepEqual([rejected.code, rejected.reason], ['FUNCTION_NAMESPACE_CONFLICT', 'invalid'])
          assert.match(rejected.message, /^INVALID_ID: function id contains a lone UTF-16 surrogate at index \d+$/)
          w.send({ type: 'registertriggertype', id: bad })
          const type = await w.next((f) => f.type === 'registrationrejected')
          assert.match(type.message, /^INVALID_ID: trigger type id contains a lone UTF-16 surrogate at index \d+$/)
          assert.equal(type.trigger_type_id, '')
          assert.equal((await w.call('health::echo', 'after')).result, 'after')
        } finally {
          await w.close()
        }
      }),
      { numRuns: 60 },
    )
  })

  it('random frames over real WebSockets never take the engine down', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileFrame, { minLength: 1, maxLength: 8 }), fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 2 }), async (frames, binary) => {
        const w = await RawWorker.connect(t.url)
        try {
          const socket = new WebSocket(t.url)
          await new Promise((resolve) => socket.once('open', resolve))
          for (const bytes of binary) socket.send(Buffer.concat([Buffer.from('OTLP'), bytes]), { binary: true })
          for (const bytes of binary) socket.send(bytes, { binary: true })
          socket.close()
          for (const frame of frames) w.send(frame)
          w.send({ type: 'ping' })
          await Promise.race([w.next((f) => f.type === 'pong', 5000), w.closed])
        } finally {
          // Closed whatever happened: a connection left open may stay a replica of health::echo.
          await w.close()
        }
      }),
      { numRuns: 40 },
    )
    await stillRouting()
  })
})

describe('frames sent while the built-ins start (fast-check, issue 20)', () => {
  it('a connection accepted before the built-ins are up: its frames wait, then are answered in order or it is closed on purpose; the engine routes', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-early-fuzz-'))
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(hostileFrame, { minLength: 1, maxLength: 12 }), fc.boolean(), async (frames, closeEarly) => {
          let open!: () => void
          const gate = new Promise<void>((resolve) => (open = resolve))
          const engine = new Engine(
            { listeners: [{ ...LISTENER_DEFAULTS, port: 0 }], registration_namespace_grace_ms: 20, internal_invocation_timeout_ms: 30_000, data_dir: dataDir, local_workers: [], builtins: {} },
            {
              log: silentLogger,
              builtins: [
                {
                  name: 'gate',
                  async start(context) {
                    await gate
                    context.worker.registerFunction('health::echo', async (data) => data)
                  },
                  async applySettings() {},
                  async stop() {},
                },
              ],
            },
          )
          let listening!: () => void
          const isListening = new Promise<void>((resolve) => (listening = resolve))
          const started = engine.start({ onListening: () => listening() })
          try {
            await isListening
            const socket = new WebSocket(engine.workerUrls[0]!)
            socket.on('error', () => {})
            const received: string[] = []
            socket.on('message', (data) => void received.push(String(data)))
            const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
            await new Promise((resolve) => socket.once('open', resolve))
            for (const frame of frames) socket.send(frame)
            socket.send(JSON.stringify({ type: 'ping' }))
            // A WebSocket ping after the frames: its pong proves the engine has read them.
            await new Promise<void>((resolve) => {
              socket.once('pong', () => resolve())
              socket.ping()
            })
            if (closeEarly) socket.close()
            open()
            await started
            // The session answers the JSON ping after every frame before it, or was closed on purpose.
            await Promise.race([waitFor(() => received.some((text) => text.includes('"pong"')), 'the pong'), closed])
            if (!closeEarly && socket.readyState === WebSocket.OPEN) {
              assert.ok(received[0]?.includes('"workerregistered"'), `the first frame: ${received[0]}`)
              socket.close()
            }
            const probe = await RawWorker.connect(engine.workerUrls[0]!)
            assert.deepEqual((await probe.call('health::echo', { ok: 1 })).result, { ok: 1 })
            await probe.close()
          } finally {
            open()
            await started.catch(() => {})
            await engine.stop()
          }
        }),
        { numRuns: 30 },
      )
    } finally {
      await rm(dataDir, { recursive: true, force: true })
    }
  })
})

/** What a registration hook (§13.5) may answer: any JSON, or an object mapping the fields with hostile values. */
const hookResult = fc.oneof(
  hostileValue,
  fc.constant(undefined),
  fc.record(
    {
      function_id: fc.oneof(hostileString, hostileValue),
      trigger_type_id: fc.oneof(hostileString, hostileValue),
      trigger_id: fc.oneof(hostileString, hostileValue),
      trigger_type: fc.oneof(hostileString, hostileValue),
      description: hostileValue,
      metadata: hostileValue,
      config: hostileValue,
    },
    { requiredKeys: [] },
  ),
)

/** The hook's answer as the engine reads it, or why it refuses it: the rule of §13.5 (an object, valid ids). */
function readHookAnswer(value: unknown): Record<string, unknown> | 'hook_denied' {
  if (value === undefined) return 'hook_denied'
  const read: unknown = JSON.parse(JSON.stringify(value))
  if (typeof read !== 'object' || read === null || Array.isArray(read)) return 'hook_denied'
  const fields = read as Record<string, unknown>
  for (const field of ['function_id', 'trigger_id', 'trigger_type', 'trigger_type_id']) {
    const v = fields[field]
    if (v !== undefined && (typeof v !== 'string' || v === '' || idProblem(v) !== undefined)) return 'hook_denied'
  }
  return fields
}

describe('registration hook fuzz (fast-check)', () => {
  it('any answer of a registration hook maps the registration or refuses it; the session and the engine go on', async () => {
    const hooks = { function: undefined as unknown, triggerType: undefined as unknown, trigger: undefined as unknown }
    const e = await startTestEngine({
      builtins: [],
      extraListeners: [
        {
          rbac: {
            auth_function_id: 'hooks::auth',
            expose_functions: ['match("*")'],
            on_function_registration_function_id: 'hooks::function',
            on_trigger_type_registration_function_id: 'hooks::trigger-type',
            on_trigger_registration_function_id: 'hooks::trigger',
          },
        },
      ],
    })
    const hookWorker = await RawWorker.connect(e.url)
    try {
      hookWorker.serve('hooks::auth', () => ({ allow_trigger_type_registration: true }))
      hookWorker.serve('hooks::function', () => hooks.function)
      hookWorker.serve('hooks::trigger-type', () => hooks.triggerType)
      hookWorker.serve('hooks::trigger', () => hooks.trigger)
      await waitFor(() => e.engine.functions.get('default', 'hooks::trigger') !== undefined, "e.engine.functions.get('default', 'hooks::trigger') !== undefined")
      await fc.assert(
        fc.asyncProperty(hookResult, hookResult, hookResult, async (onFunction, onTriggerType, onTrigger) => {
          Object.assign(hooks, { function: onFunction, triggerType: onTriggerType, trigger: onTrigger })
          // The announce resolves the namespace first, so no registration waits in the buffer (§3.4).
          const w = await RawWorker.inProcess(e.engine, { announce: { name: 'fz' } }, e.engine.config.listeners[1])
          try {
            w.send({ type: 'registerfunction', id: 'fz::fn' })
            w.send({ type: 'registertriggertype', id: 'fz-type' })
            w.send({ type: 'registertrigger', id: 'fz-trigger', trigger_type: 'fz-type', function_id: 'fz::fn', config: {} })
            w.send({ type: 'ping' })
            // Hooks hold the session's later frames, so the pong comes after all three were decided.
            await w.next((f) => f.type === 'pong')
            const rejected = (key: string) => w.frames.find((f) => f.type === 'registrationrejected' && f[key] !== undefined)

            const fn = readHookAnswer(onFunction)
            const fnId = fn === 'hook_denied' ? undefined : typeof fn.function_id === 'string' ? fn.function_id : 'fz::fn'
            const fnRefusal = fnId === undefined ? 'hook_denied' : RESERVED_FUNCTION_IDS.has(fnId) ? 'reserved_id' : undefined
            if (fnRefusal !== undefined) assert.equal(rejected('function_id')?.reason, fnRefusal)
            else assert.ok(e.engine.functions.get('default', fnId!)?.replicas.some((r) => r.peer.workerId === w.workerId), `registered as ${fnId}`)

            const type = readHookAnswer(onTriggerType)
            const typeId = type === 'hook_denied' ? undefined : typeof type.trigger_type_id === 'string' ? type.trigger_type_id : 'fz-type'
            const typeRefusal = typeId === undefined ? 'hook_denied' : RESERVED_TRIGGER_TYPES.has(typeId) ? 'reserved_id' : undefined
            if (typeRefusal !== undefined) assert.equal(rejected('trigger_type_id')?.reason, typeRefusal)
            else assert.equal(e.engine.triggers.activeProvider('default', typeId!)?.peer.workerId, w.workerId)

            const trigger = readHookAnswer(onTrigger)
            const answer = w.frames.find((f) => f.type === 'triggerregistrationresult' && f.error !== undefined)
            if (trigger === 'hook_denied') assert.equal(answer?.error.code, 'FORBIDDEN')
            else if (answer === undefined) {
              const triggerId = typeof trigger.trigger_id === 'string' ? trigger.trigger_id : 'fz-trigger'
              assert.equal(e.engine.triggers.getBinding(triggerId)?.owner?.workerId, w.workerId)
            }
            assert.equal((await w.call('hooks::function', null)).error?.code ?? 'answered', 'answered')
          } finally {
            await w.close()
          }
        }),
        { numRuns: 80 },
      )
      const listed = (await e.engine.inject({ function_id: 'engine::functions::list', data: {} })) as { functions: unknown[] }
      assert.ok(Array.isArray(listed.functions))
    } finally {
      await hookWorker.close()
      await e.stop()
    }
  })
})

/** Hostile pieces of a channel upgrade's request line, all safe to send raw (no space or control character). */
const junk = fc.oneof(
  fc.string({ maxLength: 40 }).map((text) => encodeURIComponent(text)),
  fc.constantFrom('%zz', '%', '%00', '%C0%AF', '%2F', '..', '%E2%80%AE', '%ED%A0%80', 'a'.repeat(1500), '', '=', '&&'),
)

type Part<T extends string> = { [K in T]: { kind: K } }[T] | { kind: 'junk'; text: string }

/** One upgrade to the channel route: how its id, key and dir are spelled, and junk parameters. */
const channelUpgrade = fc.record({
  id: fc.oneof(
    fc.constantFrom<Part<'exact' | 'percent-encoded' | 'upper-case' | 'unknown'>>({ kind: 'exact' }, { kind: 'percent-encoded' }, { kind: 'upper-case' }, { kind: 'unknown' }),
    junk.map((text): Part<never> => ({ kind: 'junk', text })),
  ),
  key: fc.oneof(
    fc.constantFrom<Part<'own' | 'other-end' | 'missing' | 'own-then-junk' | 'junk-then-own'>>({ kind: 'own' }, { kind: 'other-end' }, { kind: 'missing' }, { kind: 'own-then-junk' }, { kind: 'junk-then-own' }),
    junk.map((text): Part<never> => ({ kind: 'junk', text })),
  ),
  dir: fc.oneof(fc.constantFrom<Part<'read' | 'write' | 'READ' | 'missing'>>({ kind: 'read' }, { kind: 'write' }, { kind: 'READ' }, { kind: 'missing' }), junk.map((text): Part<never> => ({ kind: 'junk', text }))),
  // Parameters other than key and dir: the first key and dir are the ones read.
  extra: fc.array(fc.tuple(junk, junk).filter(([name]) => name !== 'key' && name !== 'dir'), { maxLength: 3 }),
})

describe('the channel route (fast-check, issue 17 part 2)', () => {
  it('an upgrade opens a channel end only with the exact id, that end\'s key and its dir; anything else is 404 `Channel not found`', async () => {
    await fc.assert(
      fc.asyncProperty(channelUpgrade, async ({ id, key, dir, extra }) => {
        const refs = (await t.engine.inject({ function_id: 'engine::channels::create', data: {} })) as { writer: { channel_id: string; access_key: string }; reader: { access_key: string } }
        const channelId = refs.writer.channel_id
        const direction = dir.kind === 'read' || dir.kind === 'write' ? dir.kind : undefined
        const own = direction === 'read' ? refs.reader.access_key : refs.writer.access_key
        const other = direction === 'read' ? refs.writer.access_key : refs.reader.access_key
        const idText =
          id.kind === 'exact' ? channelId
          : id.kind === 'percent-encoded' ? [...channelId].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')
          : id.kind === 'upper-case' ? channelId.toUpperCase()
          : id.kind === 'unknown' ? crypto.randomUUID()
          : id.text
        const query: string[] = extra.map(([k, v]) => `${k}=${v}`)
        if (key.kind === 'own') query.push(`key=${own}`)
        else if (key.kind === 'other-end') query.push(`key=${other}`)
        else if (key.kind === 'own-then-junk') query.push(`key=${own}`, 'key=junk')
        else if (key.kind === 'junk-then-own') query.push('key=junk', `key=${own}`)
        else if (key.kind === 'junk') query.push(`key=${key.text}`)
        if (dir.kind !== 'missing') query.push(`dir=${dir.kind === 'junk' ? dir.text : dir.kind}`)
        const opens = (id.kind === 'exact' || id.kind === 'percent-encoded') && direction !== undefined && (key.kind === 'own' || key.kind === 'own-then-junk')
        const answer = await upgradeAnswer(t.url, `/ws/channels/${idText}?${query.join('&')}`)
        if (opens) assert.equal(answer.status, 101)
        else assert.deepEqual(answer, { status: 404, body: 'Channel not found' })
        t.engine.channels.remove(channelId)
      }),
      { numRuns: 200 },
    )
    await stillRouting()
  })

  it('a writer sending text that is not UTF-8 is closed with 1007; its reader gets 1011 after the items before it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: 'grapheme', maxLength: 8 }), { maxLength: 5 }), fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]), async (before, bad) => {
        const refs = (await t.engine.inject({ function_id: 'engine::channels::create', data: {} })) as { writer: never; reader: never }
        const reader = await ChannelSocket.open(t.url, refs.reader)
        const writer = await ChannelSocket.open(t.url, refs.writer)
        for (const text of before) writer.send(text)
        writer.ws.send(Buffer.from(bad), { binary: false })
        assert.equal((await writer.closed).code, 1007)
        assert.equal((await reader.closed).code, 1011)
        assert.deepEqual(reader.items, before)
      }),
      { numRuns: 30 },
    )
    await waitFor(() => t.engine.channels.size === 0, 't.engine.channels.size === 0')
    await stillRouting()
  })
})

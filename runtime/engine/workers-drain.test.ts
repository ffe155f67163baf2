/**
 * `engine::workers::drain` (protocol.md §11.1, issue 21): a supervisor that reaches the engine over
 * a connection (the compose daemon) marks a replaced process's connection draining — new calls go
 * to the other live replica, calls already running there finish — and polls the same function until
 * it runs none. Hostile payloads get INVALID_ARGUMENTS or NOT_FOUND and mark nothing.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../test/support/engine.ts'
import { RawWorker } from '../../test/support/raw-worker.ts'
import { waitFor } from '../../test/support/wait.ts'
import { PubSubWorker } from '../workers/pubsub/worker.ts'

const drain = (t: TestEngine, data: unknown) => t.engine.inject({ function_id: 'engine::workers::drain', data }) as Promise<{ id: string; draining: true; active_invocations: number }>

describe('engine::workers::drain (issue 21)', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ builtins: [], extraListeners: [{ rbac: { expose_functions: ['greet::hi'] } }] })
  })
  after(() => t?.stop())

  it('sends new calls to the other replica, lets the running call finish, and counts it until it has', async () => {
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    let holding = true
    const old = await RawWorker.connect(t.url, { announce: { name: 'greeter' } })
    old.serve('greet::hi', async () => {
      if (holding) {
        holding = false
        await held
      }
      return 'old'
    })
    await waitFor(() => t.engine.functions.get('default', 'greet::hi') !== undefined, 'greet::hi registered')
    const caller = await RawWorker.connect(t.url)
    const running = caller.call('greet::hi', {}, { timeout_ms: 60_000 })
    await waitFor(() => t.engine.peerById(old.workerId)?.activeInvocations === 1, 'the old worker running one call')
    const fresh = await RawWorker.connect(t.url, { announce: { name: 'greeter' } })
    fresh.serve('greet::hi', () => 'new')
    await waitFor(() => t.engine.functions.get('default', 'greet::hi')?.replicas.length === 2, 'two replicas of greet::hi')
    try {
      assert.deepEqual(await drain(t, { id: old.workerId }), { id: old.workerId, draining: true, active_invocations: 1 })
      for (let i = 0; i < 6; i++) assert.equal((await caller.call('greet::hi', {})).result, 'new')
      // The draining connection is still listed until it closes, marked so; the new one is not.
      const listed = (await t.engine.inject({ function_id: 'engine::workers::list', data: {} })) as { workers: Array<{ id: string; draining?: true }> }
      assert.equal(listed.workers.find((w) => w.id === old.workerId)?.draining, true)
      assert.equal(listed.workers.find((w) => w.id === fresh.workerId)?.draining, undefined)
      release()
      assert.equal((await running).result, 'old', 'the call that was running on the draining connection finished there')
      await waitFor(async () => (await drain(t, { id: old.workerId })).active_invocations === 0, 'the drained worker idle')
    } finally {
      release()
      await Promise.all([old.close(), fresh.close(), caller.close()])
    }
  })

  it('a draining connection that is the only replica left still serves', async () => {
    const only = await RawWorker.connect(t.url, { announce: { name: 'lonely' } })
    only.serve('lonely::ping', () => 'pong')
    await waitFor(() => t.engine.functions.get('default', 'lonely::ping') !== undefined, 'lonely::ping registered')
    try {
      await drain(t, { id: only.workerId })
      assert.equal((await only.call('lonely::ping', {})).result, 'pong')
    } finally {
      await only.close()
    }
  })

  it('refuses a missing or non-string id, an unknown id and a built-in worker, with catalogue codes', async () => {
    await assert.rejects(drain(t, {}), { code: 'INVALID_ARGUMENTS', message: 'Invalid input for engine::workers::drain: id is required' })
    await assert.rejects(drain(t, { id: 7 }), { code: 'INVALID_ARGUMENTS' })
    await assert.rejects(drain(t, 'x'), { code: 'INVALID_ARGUMENTS' })
    await assert.rejects(drain(t, { id: 'no-such-worker' }), { code: 'NOT_FOUND', message: "Worker 'no-such-worker' is not connected." })
    const e = await startTestEngine({ builtins: [new PubSubWorker()] })
    try {
      const listed = (await e.engine.inject({ function_id: 'engine::workers::list', data: { runtime: 'builtin' } })) as { workers: Array<{ id: string }> }
      assert.ok(listed.workers.length > 0)
      await assert.rejects(drain(e, { id: listed.workers[0]!.id }), { code: 'INVALID_ARGUMENTS', message: /built-in worker/ })
    } finally {
      await e.stop()
    }
  })

  it('is denied on an rbac listener unless exposed, like the other engine:: functions', async () => {
    const victim = await RawWorker.connect(t.url, { announce: { name: 'victim' } })
    const outsider = await RawWorker.connect(t.urls[1]!)
    try {
      const answer = await outsider.call('engine::workers::drain', { id: victim.workerId })
      assert.equal(answer.error?.code, 'FORBIDDEN')
      assert.equal(t.engine.openSessions().find((s) => s.workerId === victim.workerId)?.draining, false)
    } finally {
      await Promise.all([victim.close(), outsider.close()])
    }
  })
})

/** Strings with lone surrogates, control characters, near-miss ids and huge lengths. */
const hostileString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', ' ', '__proto__', 'constructor', '\ud800', 'a\u0000b', 'x'.repeat(5000), '00000000-0000-4000-8000-000000000000'),
)
const { value: hostileValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    hostileString,
    fc.constantFrom(0, -1, 1e308, 2 ** 53 + 1, true, false, null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileString, tie('value'), { maxKeys: 3 }),
  ),
}))

describe('engine::workers::drain fuzz (fast-check)', () => {
  it('any payload is answered with a result, INVALID_ARGUMENTS or NOT_FOUND; only the named connection is ever marked, and calls still route', async () => {
    const t = await startTestEngine({ builtins: [] })
    const bystander = await RawWorker.connect(t.url, { announce: { name: 'bystander' } })
    bystander.serve('by::echo', (data) => data)
    const caller = await RawWorker.connect(t.url)
    await waitFor(() => t.engine.functions.get('default', 'by::echo') !== undefined, 'by::echo registered')
    try {
      await fc.assert(
        fc.asyncProperty(fc.oneof(hostileValue, fc.record({ id: hostileValue }), fc.record({ id: hostileString, extra: hostileValue })), async (payload) => {
          // Over a real connection too: the frame carries the hostile payload as sent.
          const answer = await caller.call('engine::workers::drain', payload)
          const named = typeof payload === 'object' && payload !== null && !Array.isArray(payload) ? (payload as { id?: unknown }).id : undefined
          if (answer.error === undefined) {
            assert.equal(answer.result.id, named)
            assert.ok(t.engine.openSessions().some((s) => s.workerId === named))
          } else {
            assert.ok(['INVALID_ARGUMENTS', 'NOT_FOUND', 'INVALID_ID', 'INVALID_MESSAGE'].includes(answer.error.code), JSON.stringify(answer.error))
          }
          assert.equal(t.engine.openSessions().find((s) => s.workerId === bystander.workerId)?.draining, false)
          assert.deepEqual((await caller.call('by::echo', { ok: 1 })).result, { ok: 1 })
        }),
        { numRuns: 150 },
      )
    } finally {
      await Promise.all([bystander.close(), caller.close()])
      await t.stop()
    }
  })
})

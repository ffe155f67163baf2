/**
 * `listedEngine` (the compose daemon's engine view, issue 21): a reload's new process counts as
 * registered once it holds the previous one's functions, and the drain marks only the previous
 * process's connections over `engine::workers::drain`, whatever the engine answers.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { silentLogger } from '../../runtime/index.ts'
import { drainListedConnections, listedEngine, REGISTRATION_SETTLE_MS } from './engine-view.ts'
import type { ListedConnection } from './launch.ts'

const who = { name: 'api', namespace: 'shop', byPid: true }
const previous = { pid: 100, startedAtMs: 1_000 }
const next = { pid: 200, startedAtMs: 5_000 }

describe('listedEngine registration (issue 21)', () => {
  it('a new connection beside the previous one counts once it holds every function the previous one holds', async () => {
    const now = Date.now()
    const probe = { pid: 200, startedAtMs: now - 100 }
    const connections: ListedConnection[] = [
      { id: 'old', name: 'api', namespace: 'shop', connectedAtMs: now - 60_000, pid: 100 },
      { id: 'new', name: 'api', namespace: 'shop', connectedAtMs: now - 50, pid: 200 },
    ]
    const held: Record<string, string[]> = { old: ['shop/api::a', 'shop/api::b'], new: ['shop/api::a'] }
    const view = listedEngine('ws://x', { list: async () => connections, functionsOf: async (id) => held[id]! })
    assert.equal(await view.isRegistered(who, probe), false)
    held.new!.push('shop/api::b')
    assert.equal(await view.isRegistered(who, probe), true)
    // Open for REGISTRATION_SETTLE_MS: the new code may have dropped a function.
    held.new = []
    connections[1]!.connectedAtMs = now - REGISTRATION_SETTLE_MS - 1
    assert.equal(await view.isRegistered(who, probe), true)
  })

  it('without drain the view has none (a reload stops first); with it, it has', () => {
    assert.equal(listedEngine('ws://x', { list: async () => [] }).drain, undefined)
    assert.equal(typeof listedEngine('ws://x', { list: async () => [], drain: async () => 0 }).drain, 'function')
  })
})

const connection = fc.record({
  id: fc.option(fc.constantFrom('a', 'b', 'c', 'd', '', '__proto__'), { nil: undefined }),
  name: fc.constantFrom('api', 'web', null, 'api\u0000'),
  namespace: fc.constantFrom('shop', 'default', ''),
  connectedAtMs: fc.oneof(fc.integer({ min: 0, max: 8_000 }), fc.constantFrom(-1, Number.MAX_SAFE_INTEGER, Number.NaN)),
  pid: fc.option(fc.constantFrom(100, 200, 300, 0, -1), { nil: undefined }),
})

/** What the engine answers a drain or a listing: a count, a closed connection, or a failure. */
const answer = fc.oneof(
  fc.integer({ min: 0, max: 3 }).map((n) => ({ count: n })),
  fc.constantFrom({ error: 'NOT_FOUND' }, { error: 'FORBIDDEN' }, { error: 'TIMEOUT' }),
)

describe('drainListedConnections (fast-check)', () => {
  it('marks only the previous process\'s connections, never the new one\'s, and always resolves', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(connection, { maxLength: 6 }), fc.array(answer, { minLength: 1, maxLength: 8 }), fc.boolean(), async (connections, answers, listFails) => {
        const drained: string[] = []
        let i = 0
        await drainListedConnections(
          {
            list: async () => {
              if (listFails) throw new Error('engine unreachable')
              return connections
            },
            drain: async (id) => {
              drained.push(id)
              const a = answers[i++ % answers.length]!
              if ('error' in a) throw Object.assign(new Error(a.error), { code: a.error })
              return a.count
            },
            log: silentLogger,
          },
          who,
          previous,
          next,
          { graceMs: 150, signal: new AbortController().signal },
        )
        for (const id of drained) {
          const c = connections.find((x) => x.id === id && x.name === 'api' && x.namespace === 'shop' && !(x.connectedAtMs >= next.startedAtMs || x.pid === next.pid))
          assert.ok(c, `drained ${id}, which is not a connection of the previous process`)
        }
        if (listFails) assert.deepEqual(drained, [])
      }),
      { numRuns: 60 },
    )
  })
})

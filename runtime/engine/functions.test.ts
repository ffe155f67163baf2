/**
 * Replica selection (protocol.md §6.1) with a draining peer: a worker process a reload replaces
 * (issue 21) gets no new call while another live replica is there, and still serves when it is the
 * only one.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { FunctionEntry } from './functions.ts'
import type { Callee, Replica } from './functions.ts'
import type { Peer } from './peer.ts'

function replica(name: string, state: { alive?: boolean; draining?: boolean; pendingBytes?: number; remote?: boolean } = {}): Replica {
  const peer = { workerId: name, kind: 'connection', alive: state.alive ?? true, draining: state.draining ?? false, name, namespace: 'default', connectedAtMs: 0, activeInvocations: 0, announce: {}, ipAddress: null } as Peer
  const callee: Callee = { peer, pendingBytes: state.pendingBytes ?? 0, dispatch() {}, ...(state.remote ? { remote: true } : {}) }
  return { peer, callee, wireId: 'f', wireIdJson: '"f"' }
}

function picks(entry: FunctionEntry, n: number): string[] {
  return Array.from({ length: n }, () => entry.pick(1024)?.peer.name ?? 'none')
}

describe('FunctionEntry.pick with a draining peer (issue 21)', () => {
  it('new calls go to the live replicas that are not draining, round-robin', () => {
    const entry = new FunctionEntry('default', 'f')
    entry.replicas.push(replica('old', { draining: true }), replica('new-a'), replica('new-b'))
    assert.deepEqual(picks(entry, 4), ['new-a', 'new-b', 'new-a', 'new-b'])
  })

  it('a draining replica still serves when it is the only live one, or every other is dying', () => {
    const only = new FunctionEntry('default', 'f')
    only.replicas.push(replica('old', { draining: true }))
    assert.deepEqual(picks(only, 2), ['old', 'old'])
    const dying = new FunctionEntry('default', 'f')
    dying.replicas.push(replica('old', { draining: true }), replica('gone', { alive: false }))
    assert.deepEqual(picks(dying, 2), ['old', 'old'])
  })

  it('a backpressured replica that is not draining comes before a draining one', () => {
    const entry = new FunctionEntry('default', 'f')
    entry.replicas.push(replica('old', { draining: true }), replica('busy', { pendingBytes: 1 << 20 }))
    assert.deepEqual(picks(entry, 2), ['busy', 'busy'])
  })
})

describe('FunctionEntry.pick (fast-check)', () => {
  it('any replica set: a live replica is picked whenever one may be, never a dying one, and a draining one only when no other local live replica is there', () => {
    // Only connections of this engine drain (other engines' replicas are RemoteWorker peers).
    const state = fc
      .record({ alive: fc.boolean(), draining: fc.boolean(), pendingBytes: fc.constantFrom(0, 10, 1 << 20), remote: fc.boolean() })
      .map((s) => ({ ...s, draining: s.draining && !s.remote }))
    fc.assert(
      fc.property(fc.array(state, { minLength: 1, maxLength: 8 }), fc.boolean(), fc.nat({ max: 20 }), (states, localOnly, turns) => {
        const entry = new FunctionEntry('default', 'f')
        states.forEach((s, i) => entry.replicas.push(replica(`r${i}`, s)))
        for (let t = 0; t <= turns; t++) {
          const picked = entry.pick(1024, localOnly)
          const usable = entry.replicas.filter((r) => r.peer.alive && !(localOnly && r.callee.remote === true))
          if (usable.length === 0) return assert.equal(picked, undefined)
          assert.ok(picked !== undefined && picked.peer.alive)
          if (localOnly) assert.notEqual(picked.callee.remote, true)
          const otherLocal = usable.some((r) => r.callee.remote !== true && r.peer.draining !== true)
          if (picked.peer.draining === true && entry.replicas.length > 1) assert.ok(!otherLocal, 'a draining replica was picked beside a live one')
        }
      }),
      { numRuns: 1000 },
    )
  })
})

/**
 * Replica selection (protocol.md §6.1) with a draining peer: a worker process a reload replaces
 * (issue 21) gets no new call while another live replica is there, and still serves when it is the
 * only one.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { FunctionEntry } from './functions.ts'
import type { Callee, Replica } from './functions.ts'
import type { Peer } from './peer.ts'

function replica(name: string, state: { alive?: boolean; draining?: boolean; pendingBytes?: number } = {}): Replica {
  const peer = { workerId: name, kind: 'connection', alive: state.alive ?? true, draining: state.draining ?? false, name, namespace: 'default', connectedAtMs: 0, activeInvocations: 0, announce: {}, ipAddress: null } as Peer
  const callee: Callee = { peer, pendingBytes: state.pendingBytes ?? 0, dispatch() {} }
  return { peer, callee, wireIdJson: '"f"' }
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

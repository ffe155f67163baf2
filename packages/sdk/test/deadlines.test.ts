/** Grouped call timeouts (packages/sdk/src/deadlines.ts). */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { DEADLINE_SLOT_MS, Deadlines } from '../src/deadlines.ts'
import { waitFor } from '../../../test/support/wait.ts'

describe('Deadlines', () => {
  it('expires each item not cancelled once, never before its deadline', async () => {
    const expired: Array<{ id: number; at: number }> = []
    const deadlines = new Deadlines<{ id: number; due: number }>((item) => expired.push({ id: item.id, at: Date.now() - item.due }))
    const items = Array.from({ length: 50 }, (_, id) => ({ id, due: Date.now() + 30 }))
    const slots = items.map((item) => deadlines.add(item, 30))
    for (let i = 0; i < items.length; i += 2) deadlines.cancel(items[i]!, slots[i])
    // Every item has the same deadline: the cancelled ones would have expired with the others.
    await waitFor(() => expired.length >= items.length / 2, 'the items not cancelled expired')
    assert.deepEqual(expired.map((e) => e.id).sort((a, b) => a - b), items.filter((i) => i.id % 2 === 1).map((i) => i.id))
    // Date.now() has 1 ms resolution; the timer itself never fires early.
    for (const e of expired) assert.ok(e.at >= -1, `expired ${-e.at} ms before its deadline`)
  })

  it('clear drops every item and timer', async () => {
    const fired: number[] = []
    const deadlines = new Deadlines<number>((n) => fired.push(n))
    for (let i = 0; i < 10; i++) deadlines.add(i, 5 + i)
    deadlines.clear()
    // A marker due after all of them: once it expired, a cleared item would have expired too.
    deadlines.add(99, 15 + DEADLINE_SLOT_MS)
    await waitFor(() => fired.length > 0, 'the marker expired')
    assert.deepEqual(fired, [99])
  })
})

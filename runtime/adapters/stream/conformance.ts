/**
 * The behaviour every {@link StreamAdapter} must show (./types.ts). Each adapter's test calls
 * {@link runStreamAdapterConformance} with a factory returning a fresh, empty store.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { StreamAdapter, StreamAdapterChange } from './types.ts'

export type StreamAdapterFactory = () => StreamAdapter | Promise<StreamAdapter>

function record(adapter: StreamAdapter): StreamAdapterChange[] {
  const changes: StreamAdapterChange[] = []
  adapter.subscribe((change) => changes.push(change))
  return changes
}

const withoutOrigin = (changes: StreamAdapterChange[]) => changes.map(({ origin: _origin, ...rest }) => rest)

/**
 * Registers the cases as a `node:test` suite named `<name> stream adapter conformance`.
 * @example runStreamAdapterConformance('memory', () => new StateBackedStreamAdapter(new MemoryStateAdapter()))
 */
export function runStreamAdapterConformance(name: string, factory: StreamAdapterFactory): void {
  describe(`${name} stream adapter conformance`, () => {
    const withAdapter = (body: (adapter: StreamAdapter) => Promise<void>) => async () => {
      const adapter = await factory()
      try {
        await body(adapter)
      } finally {
        await adapter.close()
      }
    }

    it('set, get and delete an item', withAdapter(async (a) => {
      assert.equal(await a.get('s', 'g', 'i'), undefined)
      assert.equal(await a.set('s', 'g', 'i', { n: 1 }), undefined)
      assert.deepEqual(await a.set('s', 'g', 'i', { n: 2 }), { n: 1 })
      assert.deepEqual(await a.get('s', 'g', 'i'), { n: 2 })
      assert.deepEqual(await a.delete('s', 'g', 'i'), { n: 2 })
      assert.equal(await a.delete('s', 'g', 'i'), undefined)
      assert.equal(await a.get('s', 'g', 'i'), undefined)
    }))

    it('stores null and keeps streams, groups and items apart', withAdapter(async (a) => {
      await a.set('s', 'g', 'i', null)
      await a.set('s', 'g2', 'i', 2)
      await a.set('s2', 'g', 'i', 3)
      assert.equal(await a.get('s', 'g', 'i'), null)
      assert.equal(await a.get('s', 'g2', 'i'), 2)
      assert.equal(await a.get('s2', 'g', 'i'), 3)
    }))

    it('lists items by item id, groups and streams sorted byte-wise', withAdapter(async (a) => {
      for (const item of ['b', 'a', 'é', 'Z']) await a.set('s', 'g', item, item)
      await a.set('s', 'b-group', 'x', 1)
      await a.set('s', '😀', 'x', 1)
      await a.set('s', '\uFFFD', 'x', 1)
      await a.set('r', 'g', 'x', 1)
      assert.deepEqual(await a.list('s', 'g'), ['Z', 'a', 'b', 'é'])
      assert.deepEqual(await a.list('s', 'nope'), [])
      assert.deepEqual(await a.listGroups('s'), ['b-group', 'g', '\uFFFD', '😀'])
      assert.deepEqual(await a.listGroups('nope'), [])
      assert.deepEqual(await a.listAll(), [
        { stream_name: 'r', groups: ['g'] },
        { stream_name: 's', groups: ['b-group', 'g', '\uFFFD', '😀'] },
      ])
      await a.delete('r', 'g', 'x')
      assert.deepEqual((await a.listAll()).map((s) => s.stream_name), ['s'])
    }))

    it('names with brackets, quotes and commas do not collide', withAdapter(async (a) => {
      await a.set('a","b', 'c', 'i', 1)
      await a.set('a', 'b","c', 'i', 2)
      assert.equal(await a.get('a","b', 'c', 'i'), 1)
      assert.equal(await a.get('a', 'b","c', 'i'), 2)
      assert.deepEqual(await a.listGroups('a'), ['b","c'])
    }))

    it('applies update operations atomically and reports errors by index', withAdapter(async (a) => {
      const first = await a.update('s', 'g', 'i', [{ type: 'increment', path: 'n' }])
      assert.deepEqual(first, { old_value: undefined, new_value: { n: 1 }, errors: [] })
      const second = await a.update('s', 'g', 'i', [
        { type: 'increment', path: 'n', by: 2 },
        { type: 'append', path: 'n', value: 'x' },
      ])
      assert.deepEqual(second.old_value, { n: 1 })
      assert.deepEqual(second.new_value, { n: 3 })
      assert.equal(second.errors[0]?.op_index, 1)
      assert.equal(second.errors[0]?.code, 'append.type_mismatch')
      await Promise.all(Array.from({ length: 20 }, () => a.update('s', 'g', 'c', [{ type: 'increment', path: 'n' }])))
      assert.deepEqual(await a.get('s', 'g', 'c'), { n: 20 })
    }))

    it('refuses malformed ops before storing anything', withAdapter(async (a) => {
      await assert.rejects(a.update('s', 'g', 'i', [{ type: 'nope' } as never]), { code: 'INVALID_ARGUMENTS' })
      assert.equal(await a.get('s', 'g', 'i'), undefined)
    }))

    it('enforces max_item_bytes on set and update, storing nothing', withAdapter(async (a) => {
      const changes = record(a)
      await assert.rejects(a.set('s', 'g', 'i', 'x'.repeat(20), { maxItemBytes: 10 }), {
        code: 'VALUE_TOO_LARGE',
        message: 'value of 22 bytes exceeds max_item_bytes 10',
      })
      await a.set('s', 'g', 'i', 'x', { maxItemBytes: 10 })
      await assert.rejects(a.update('s', 'g', 'i', [{ type: 'append', value: 'y'.repeat(20) }], { maxItemBytes: 10 }), {
        code: 'VALUE_TOO_LARGE',
      })
      assert.equal(await a.get('s', 'g', 'i'), 'x')
      assert.equal(changes.length, 1)
    }))

    it('reports changes and sends in commit order, before the call resolves', withAdapter(async (a) => {
      const changes = record(a)
      await a.set('s', 'g', 'i', 1, { origin: { traceparent: 'tp' } })
      await a.update('s', 'g', 'i', [{ type: 'increment' }])
      await a.delete('s', 'g', 'i')
      await a.delete('s', 'g', 'i')
      await a.publish({ stream_name: 's', group_id: 'g', id: null, type: 'ping', data: { x: 1 } })
      assert.equal(changes[0]?.origin?.traceparent, 'tp')
      assert.deepEqual(withoutOrigin(changes), [
        { kind: 'item', stream_name: 's', group_id: 'g', item_id: 'i', old_value: undefined, new_value: 1 },
        { kind: 'item', stream_name: 's', group_id: 'g', item_id: 'i', old_value: 1, new_value: 2 },
        { kind: 'item', stream_name: 's', group_id: 'g', item_id: 'i', old_value: 2, new_value: undefined },
        { kind: 'send', stream_name: 's', group_id: 'g', id: null, type: 'ping', data: { x: 1 } },
      ])
    }))

    it('a listener that throws does not stop the others or the write', withAdapter(async (a) => {
      a.subscribe(() => {
        throw new Error('bad listener')
      })
      const changes = record(a)
      await a.set('s', 'g', 'i', 1)
      assert.equal(changes.length, 1)
    }))

    it('rejects every call once closed', async () => {
      const a = await factory()
      await a.close()
      await a.close()
      await assert.rejects(a.get('s', 'g', 'i'))
      await assert.rejects(a.set('s', 'g', 'i', 1))
      await assert.rejects(a.publish({ stream_name: 's', group_id: 'g', id: null, type: 't', data: 1 }))
    })
  })
}

/**
 * The behaviour every {@link StateAdapter} must show (./types.ts). Each adapter's test file calls
 * {@link runStateAdapterConformance} with a factory that returns a fresh, empty store.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import type { StateAdapter, StateChange } from './types.ts'

/** Returns a fresh, empty adapter; the suite closes it after each case. */
export type StateAdapterFactory = () => StateAdapter | Promise<StateAdapter>

export interface ConformanceOptions {
  /** Cases this adapter skips, by case name, each with the reason (listed in the test output). */
  skip?: Record<string, string>
}

/**
 * Registers the conformance cases as a `node:test` suite named `<name> state adapter conformance`.
 *
 * @example
 * runStateAdapterConformance('memory', () => new MemoryStateAdapter())
 */
export function runStateAdapterConformance(
  name: string,
  factory: StateAdapterFactory,
  options: ConformanceOptions = {},
): void {
  const skip = options.skip ?? {}
  const cases = new Set<string>()

  /** One case on a fresh adapter. */
  const check = (title: string, body: (adapter: StateAdapter, t: TestContext) => Promise<void>) => {
    cases.add(title)
    const reason = skip[title]
    it(title, reason ? { skip: reason } : {}, async (t) => {
      const adapter = await factory()
      t.after(() => adapter.close())
      await body(adapter, t)
    })
  }

  /** Collects every change reported while the adapter is in use. */
  const record = (adapter: StateAdapter): StateChange[] => {
    const changes: StateChange[] = []
    adapter.subscribe((change) => changes.push(change))
    return changes
  }

  describe(`${name} state adapter conformance`, () => {
    check('get of an absent key resolves undefined', async (adapter) => {
      assert.equal(await adapter.get('s', 'missing'), undefined)
    })

    check('stores every kind of JSON value, null included, and reads it back', async (adapter) => {
      const values: unknown[] = [null, 0, -1.5, true, false, '', 'text', 'ünïcödé 😀', [], [1, 'a', null], {}, { a: { b: [1, { c: null }] } }]
      for (const [i, value] of values.entries()) await adapter.set('s', `k${i}`, value)
      for (const [i, value] of values.entries()) assert.deepEqual(await adapter.get('s', `k${i}`), value)
    })

    check('set resolves the previous value, undefined for a new key', async (adapter) => {
      assert.equal(await adapter.set('s', 'k', { v: 1 }), undefined)
      assert.deepEqual(await adapter.set('s', 'k', { v: 2 }), { v: 1 })
      assert.deepEqual(await adapter.set('s', 'k', null), { v: 2 })
      assert.equal(await adapter.set('s', 'k', 3), null)
    })

    check('stores a snapshot and returns fresh values', async (adapter) => {
      const value = { list: [1] }
      await adapter.set('s', 'k', value)
      value.list.push(2)
      const read = (await adapter.get('s', 'k')) as { list: number[] }
      assert.deepEqual(read, { list: [1] })
      read.list.push(3)
      assert.deepEqual(await adapter.get('s', 'k'), { list: [1] })
    })

    check('delete resolves the removed value, undefined when absent', async (adapter) => {
      await adapter.set('s', 'k', { v: 1 })
      assert.deepEqual(await adapter.delete('s', 'k'), { v: 1 })
      assert.equal(await adapter.get('s', 'k'), undefined)
      assert.equal(await adapter.delete('s', 'k'), undefined)
    })

    check('a stored null is present: get gives null and delete gives null', async (adapter) => {
      await adapter.set('s', 'k', null)
      assert.equal(await adapter.get('s', 'k'), null)
      assert.deepEqual(await adapter.list('s'), [null])
      assert.equal(await adapter.delete('s', 'k'), null)
      assert.equal(await adapter.get('s', 'k'), undefined)
    })

    check('scopes are independent', async (adapter) => {
      await adapter.set('a', 'k', 1)
      await adapter.set('b', 'k', 2)
      assert.equal(await adapter.get('a', 'k'), 1)
      await adapter.delete('a', 'k')
      assert.equal(await adapter.get('b', 'k'), 2)
    })

    check('update hands fn the current value and stores its result', async (adapter) => {
      const seen: unknown[] = []
      const first = await adapter.update('s', 'k', (current) => (seen.push(current), { n: 1 }))
      assert.deepEqual(first, { old_value: undefined, new_value: { n: 1 } })
      const second = await adapter.update('s', 'k', (current) => {
        seen.push(current)
        return { n: (current as { n: number }).n + 1 }
      })
      assert.deepEqual(second, { old_value: { n: 1 }, new_value: { n: 2 } })
      assert.deepEqual(seen, [undefined, { n: 1 }])
      assert.deepEqual(await adapter.get('s', 'k'), { n: 2 })
    })

    check('update stores nothing and reports nothing when fn throws', async (adapter) => {
      await adapter.set('s', 'k', 1)
      const changes = record(adapter)
      const failure = new Error('refused')
      await assert.rejects(
        adapter.update('s', 'k', () => {
          throw failure
        }),
        (error) => error === failure,
      )
      await assert.rejects(adapter.update('s', 'new', () => {
        throw failure
      }))
      assert.equal(await adapter.get('s', 'k'), 1)
      assert.equal(await adapter.get('s', 'new'), undefined)
      assert.deepEqual(changes, [])
      // The store still accepts writes afterwards (no transaction left open).
      await adapter.set('s', 'k', 2)
      assert.equal(await adapter.get('s', 'k'), 2)
    })

    check('concurrent updates of one key lose nothing', async (adapter) => {
      const bump = () => adapter.update('s', 'counter', (current) => ((current as number | undefined) ?? 0) + 1)
      await Promise.all(Array.from({ length: 200 }, bump))
      assert.equal(await adapter.get('s', 'counter'), 200)
    })

    check('list returns the scope values ordered by key byte-wise, [] for an unknown scope', async (adapter) => {
      // Code point order: Z < a < aa < b < é (U+E9) < U+FFFD < 😀 (U+1F600). JavaScript's default
      // sort would put 😀 (a surrogate pair, 0xD83D…) before U+FFFD.
      const keys = ['😀', 'b', '\uFFFD', 'aa', 'é', 'Z', 'a']
      for (const key of keys) await adapter.set('s', key, key)
      assert.deepEqual(await adapter.list('s'), ['Z', 'a', 'aa', 'b', 'é', '\uFFFD', '😀'])
      assert.deepEqual(await adapter.list('unknown'), [])
    })

    check('listKeys pages the ordered keys and counts the total', async (adapter) => {
      for (const key of ['k3', 'k1', 'k5', 'k2', 'k4']) await adapter.set('s', key, key)
      assert.deepEqual(await adapter.listKeys('s', { offset: 0, limit: 100 }), {
        items: ['k1', 'k2', 'k3', 'k4', 'k5'],
        total: 5,
      })
      assert.deepEqual(await adapter.listKeys('s', { offset: 1, limit: 2 }), { items: ['k2', 'k3'], total: 5 })
      assert.deepEqual(await adapter.listKeys('s', { offset: 4, limit: 10 }), { items: ['k5'], total: 5 })
      assert.deepEqual(await adapter.listKeys('s', { offset: 9, limit: 10 }), { items: [], total: 5 })
      assert.deepEqual(await adapter.listKeys('s', { offset: 0, limit: 0 }), { items: [], total: 5 })
      assert.deepEqual(await adapter.listKeys('unknown', { offset: 0, limit: 10 }), { items: [], total: 0 })
    })

    check('listKeys filters by a literal, case-sensitive prefix', async (adapter) => {
      const keys = ['user:1', 'user:2', 'User:3', 'user', 'users', 'us%r', 'us_r', 'usxr', 'v', 'u']
      for (const key of keys) await adapter.set('s', key, 1)
      assert.deepEqual(await adapter.listKeys('s', { prefix: 'user:', offset: 0, limit: 10 }), {
        items: ['user:1', 'user:2'],
        total: 2,
      })
      assert.deepEqual((await adapter.listKeys('s', { prefix: 'user', offset: 0, limit: 10 })).items, [
        'user',
        'user:1',
        'user:2',
        'users',
      ])
      assert.deepEqual((await adapter.listKeys('s', { prefix: 'us%', offset: 0, limit: 10 })).items, ['us%r'])
      assert.deepEqual((await adapter.listKeys('s', { prefix: 'us_', offset: 0, limit: 10 })).items, ['us_r'])
      assert.deepEqual(await adapter.listKeys('s', { prefix: 'user:', offset: 1, limit: 10 }), {
        items: ['user:2'],
        total: 2,
      })
      assert.deepEqual(await adapter.listKeys('s', { prefix: 'nothing', offset: 0, limit: 10 }), { items: [], total: 0 })
      assert.equal((await adapter.listKeys('s', { prefix: '', offset: 0, limit: 100 })).total, keys.length)
    })

    check('listKeys prefixes work on non-ASCII keys, up to the last code point', async (adapter) => {
      const keys = ['é', 'éa', 'é\u{10FFFF}', 'é\u{10FFFF}z', 'e', 'f', 'ê', '😀a', '😀']
      for (const key of keys) await adapter.set('s', key, 1)
      assert.deepEqual((await adapter.listKeys('s', { prefix: 'é', offset: 0, limit: 10 })).items, [
        'é',
        'éa',
        'é\u{10FFFF}',
        'é\u{10FFFF}z',
      ])
      assert.deepEqual((await adapter.listKeys('s', { prefix: '😀', offset: 0, limit: 10 })).items, ['😀', '😀a'])
    })

    check('listEntries pages key and value pairs with the same rules', async (adapter) => {
      for (const key of ['b', 'a', 'c', 'ab']) await adapter.set('s', key, { key })
      assert.deepEqual(await adapter.listEntries('s', { prefix: 'a', offset: 0, limit: 10 }), {
        items: [
          { key: 'a', value: { key: 'a' } },
          { key: 'ab', value: { key: 'ab' } },
        ],
        total: 2,
      })
      assert.deepEqual(await adapter.listEntries('s', { offset: 2, limit: 1 }), {
        items: [{ key: 'b', value: { key: 'b' } }],
        total: 4,
      })
    })

    check('listGroups lists the scopes holding at least one key, ordered byte-wise', async (adapter) => {
      assert.deepEqual(await adapter.listGroups(), [])
      for (const scope of ['users', 'Orders', 'été', 'a']) await adapter.set(scope, 'k', 1)
      await adapter.set('users', 'k2', 1)
      assert.deepEqual(await adapter.listGroups(), ['Orders', 'a', 'users', 'été'])
      await adapter.delete('a', 'k')
      assert.deepEqual(await adapter.listGroups(), ['Orders', 'users', 'été'])
    })

    check('a key with a lone surrogate reads back under the same key and lists as U+FFFD', async (adapter) => {
      await adapter.set('s', 'x\uD800', 1)
      assert.equal(await adapter.get('s', 'x\uD800'), 1)
      assert.deepEqual((await adapter.listKeys('s', { offset: 0, limit: 10 })).items, ['x\uFFFD'])
    })

    check('reports every committed change once, in commit order, with old and new values', async (adapter) => {
      const changes = record(adapter)
      const origin = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
      await adapter.set('s', 'k', { v: 1 }, origin)
      await adapter.set('s', 'k', { v: 1 })
      await adapter.update('s', 'k', () => ({ v: 2 }))
      await adapter.update('s', 'fresh', () => 'new')
      await adapter.delete('s', 'k')
      await adapter.delete('s', 'k')
      await adapter.get('s', 'fresh')
      await adapter.list('s')
      assert.deepEqual(
        changes.map(({ scope, key, old_value, new_value }) => ({ scope, key, old_value, new_value })),
        [
          { scope: 's', key: 'k', old_value: undefined, new_value: { v: 1 } },
          { scope: 's', key: 'k', old_value: { v: 1 }, new_value: { v: 1 } },
          { scope: 's', key: 'k', old_value: { v: 1 }, new_value: { v: 2 } },
          { scope: 's', key: 'fresh', old_value: undefined, new_value: 'new' },
          { scope: 's', key: 'k', old_value: { v: 2 }, new_value: undefined },
        ],
      )
      assert.deepEqual(changes[0]!.origin, origin)
    })

    check('reports a change before the write resolves, and never for concurrent writes out of order', async (adapter) => {
      const changes = record(adapter)
      const writes = [adapter.set('s', 'k', 1), adapter.set('s', 'k', 2), adapter.delete('s', 'k')]
      await writes[0]
      assert.ok(changes.length >= 1)
      await Promise.all(writes)
      assert.deepEqual(
        changes.map((c) => [c.old_value, c.new_value]),
        [
          [undefined, 1],
          [1, 2],
          [2, undefined],
        ],
      )
    })

    check('unsubscribe stops the reports, and a throwing listener does not fail the write', async (adapter) => {
      const changes: StateChange[] = []
      adapter.subscribe(() => {
        throw new Error('listener bug')
      })
      const unsubscribe = adapter.subscribe((change) => changes.push(change))
      await adapter.set('s', 'k', 1)
      unsubscribe()
      await adapter.set('s', 'k', 2)
      assert.equal(changes.length, 1)
      assert.equal(await adapter.get('s', 'k'), 2)
    })

    check('every method rejects after close, and close twice is harmless', async (adapter) => {
      await adapter.set('s', 'k', 1)
      await adapter.close()
      await adapter.close()
      await assert.rejects(adapter.get('s', 'k'))
      await assert.rejects(adapter.set('s', 'k', 2))
      await assert.rejects(adapter.delete('s', 'k'))
      await assert.rejects(adapter.update('s', 'k', () => 3))
      await assert.rejects(adapter.list('s'))
      await assert.rejects(adapter.listKeys('s', { offset: 0, limit: 1 }))
      await assert.rejects(adapter.listEntries('s', { offset: 0, limit: 1 }))
      await assert.rejects(adapter.listGroups())
    })

    it('skips only cases that exist', () => {
      for (const title of Object.keys(skip)) assert.ok(cases.has(title), `unknown conformance case: ${title}`)
    })
  })
}

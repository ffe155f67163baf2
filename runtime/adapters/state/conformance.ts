/**
 * The behaviour every {@link StateAdapter} must show (./types.ts). Each adapter's test file calls
 * {@link runStateAdapterConformance} with a factory that returns a fresh, empty store.
 */
import assert from 'node:assert/strict'
import { describe, it, type TestContext } from 'node:test'
import { applyUpdateOps } from '../../update-ops/index.ts'
import type { StateAdapter, StateChange, UpdateOp } from './types.ts'

/** Returns a fresh, empty adapter; the suite closes it after each case. */
export type StateAdapterFactory = () => StateAdapter | Promise<StateAdapter>

export interface ConformanceOptions {
  /** Cases this adapter skips, by case name, each with the reason (listed in the test output). */
  skip?: Record<string, string>
  /**
   * For adapters whose store several engines share: opens another adapter on the same store as
   * `adapter` (as a second engine would). Cases that need it are skipped when it is absent.
   */
  openPeer?: (adapter: StateAdapter) => StateAdapter | Promise<StateAdapter>
}

/** Scope of the marker write that {@link settled} uses to know the feed has caught up. */
const MARKER_SCOPE = 'conformance-marker'
let markers = 0

/** Collects every change reported while the adapter is in use. */
function record(adapter: StateAdapter): StateChange[] {
  const changes: StateChange[] = []
  adapter.subscribe((change) => changes.push(change))
  return changes
}

/**
 * Waits until the change feed has caught up with every write made so far through `writer`, then
 * returns the changes in `changes` before the marker, without origin. Since the feed is in commit
 * order, anything missing or duplicated by then is a failure, not a delay.
 */
async function settled(writer: StateAdapter, changes: StateChange[], timeoutMs = 5000): Promise<StateChange[]> {
  const marker = `m${++markers}`
  await writer.set(MARKER_SCOPE, marker, true)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const index = changes.findIndex((c) => c.scope === MARKER_SCOPE && c.key === marker)
    if (index >= 0) return changes.slice(0, index).filter((c) => c.scope !== MARKER_SCOPE)
    if (Date.now() > deadline) assert.fail(`the change of the marker write did not arrive within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

const shape = (changes: StateChange[]) =>
  changes.map(({ scope, key, old_value, new_value }) => ({ scope, key, old_value, new_value }))

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
  const skip = { ...(options.skip ?? {}) }
  const cases = new Set<string>()
  const SHARED = 'a second adapter on the same store reads every write and reports every change exactly once, in order'
  if (!options.openPeer && skip[SHARED] === undefined) skip[SHARED] = 'the store is not shared between engines'

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

    check('update applies the operations to the current value and stores the result', async (adapter) => {
      const first = await adapter.update('s', 'k', [{ type: 'set', path: 'n', value: 1 }])
      assert.deepEqual(first, { old_value: undefined, new_value: { n: 1 }, errors: [] })
      const second = await adapter.update('s', 'k', [
        { type: 'increment', path: 'n' },
        { type: 'append', path: 'tags', value: 'a' },
        { type: 'merge', path: 'profile', value: { name: 'Al' } },
      ])
      assert.deepEqual(second, { old_value: { n: 1 }, new_value: { n: 2, tags: 'a', profile: { name: 'Al' } }, errors: [] })
      assert.deepEqual(await adapter.get('s', 'k'), { n: 2, tags: 'a', profile: { name: 'Al' } })
    })

    check('update records skipped operations with the codes and messages of runtime/update-ops, and still stores', async (adapter) => {
      await adapter.set('s', 'k', { count: 1, name: 'Al' })
      const ops: UpdateOp[] = [
        { type: 'increment', path: 'count' },
        { type: 'increment', path: 'name' },
        { type: 'set', path: ['name', 'first'], value: 'A' },
        { type: 'merge', value: 1 as never },
        { type: 'set', path: 'done', value: true },
      ]
      const expected = applyUpdateOps({ count: 1, name: 'Al' }, ops)
      const result = await adapter.update('s', 'k', ops)
      assert.deepEqual(result, { old_value: { count: 1, name: 'Al' }, new_value: expected.value, errors: expected.errors })
      assert.deepEqual(result.errors[0], {
        op_index: 1,
        code: 'increment.not_number',
        message: "increment at path 'name' expects a number, found string",
      })
      assert.deepEqual(await adapter.get('s', 'k'), { count: 2, name: 'Al', done: true })
    })

    check('update of an absent key stores {} when no operation produced a value', async (adapter) => {
      const result = await adapter.update('s', 'k', [{ type: 'increment', by: 'x' as never }])
      assert.deepEqual(result.new_value, {})
      assert.equal(result.errors[0]!.code, 'increment.invalid_by')
      assert.deepEqual(await adapter.get('s', 'k'), {})
      assert.deepEqual((await adapter.update('s', 'e', [])).new_value, {})
    })

    check('update refuses malformed ops with INVALID_ARGUMENTS, storing and reporting nothing', async (adapter) => {
      const changes = record(adapter)
      await adapter.set('s', 'k', 1)
      for (const ops of [{ type: 'set', value: 2 }, [{ type: 'nope' }], [{ type: 'set' }], [7]]) {
        await assert.rejects(adapter.update('s', 'k', ops as never), { code: 'INVALID_ARGUMENTS' })
      }
      await assert.rejects(adapter.update('s', 'new', [{ type: 'multiply' } as never]), { code: 'INVALID_ARGUMENTS' })
      assert.equal(await adapter.get('s', 'k'), 1)
      assert.equal(await adapter.get('s', 'new'), undefined)
      assert.deepEqual(shape(await settled(adapter, changes)), [{ scope: 's', key: 'k', old_value: undefined, new_value: 1 }])
    })

    check('update refuses a non-finite by like runtime/update-ops does', async (adapter) => {
      const ops: UpdateOp[] = [
        { type: 'increment', path: 'a', by: Number.NaN },
        { type: 'decrement', path: 'b', by: Number.POSITIVE_INFINITY },
        { type: 'increment', path: 'c', by: 2 },
      ]
      const result = await adapter.update('s', 'k', ops)
      assert.deepEqual(result.errors, applyUpdateOps(undefined, ops).errors)
      assert.deepEqual(result.new_value, { c: 2 })
    })

    check('max value bytes: set and update store nothing and report nothing above the limit', async (adapter) => {
      const changes = record(adapter)
      // '{"v":"xxxx"}' is 12 bytes; 'é' takes 2 bytes in UTF-8.
      await adapter.set('s', 'k', { v: 'xxxx' }, { maxValueBytes: 12 })
      await assert.rejects(adapter.set('s', 'k', { v: 'xxxxx' }, { maxValueBytes: 12 }), {
        code: 'VALUE_TOO_LARGE',
        message: 'value of 13 bytes exceeds max_value_bytes 12',
      })
      await assert.rejects(adapter.set('s', 'k', { v: 'éé' }, { maxValueBytes: 10 }), {
        code: 'VALUE_TOO_LARGE',
        message: 'value of 12 bytes exceeds max_value_bytes 10',
      })
      await assert.rejects(adapter.update('s', 'k', [{ type: 'append', path: 'v', value: 'é' }], { maxValueBytes: 13 }), {
        code: 'VALUE_TOO_LARGE',
        message: 'value of 14 bytes exceeds max_value_bytes 13',
      })
      await assert.rejects(adapter.update('s', 'fresh', [{ type: 'set', value: 'x'.repeat(20) }], { maxValueBytes: 21 }), {
        code: 'VALUE_TOO_LARGE',
        message: 'value of 22 bytes exceeds max_value_bytes 21',
      })
      assert.deepEqual(await adapter.get('s', 'k'), { v: 'xxxx' })
      assert.equal(await adapter.get('s', 'fresh'), undefined)
      const ok = await adapter.update('s', 'k', [{ type: 'append', path: 'v', value: 'y' }], { maxValueBytes: 13 })
      assert.deepEqual(ok.new_value, { v: 'xxxxy' })
      assert.deepEqual(shape(await settled(adapter, changes)), [
        { scope: 's', key: 'k', old_value: undefined, new_value: { v: 'xxxx' } },
        { scope: 's', key: 'k', old_value: { v: 'xxxx' }, new_value: { v: 'xxxxy' } },
      ])
    })

    check('concurrent updates of one key lose nothing', async (adapter) => {
      const bump = () => adapter.update('s', 'counter', [{ type: 'increment' }])
      await Promise.all(Array.from({ length: 200 }, bump))
      assert.equal(await adapter.get('s', 'counter'), 200)
    })

    check('values round-trip exactly through set and through update of a sibling field', async (adapter) => {
      const value = {
        empty_array: [],
        empty_object: {},
        nested: [[], {}, [{}], { a: [] }],
        numbers: [0.1, 0.30000000000000004, 1e21, 1e-7, 123456789012345680000, 2 ** 53 + 2, -1.5e-300, 5e-324, 1.7976931348623157e308],
        text: 'quote " backslash \\ slash / controls \u0000\u001f\n\t é 😀 lone \uD800 end',
        'key with "quotes"': true,
        '10': 'integer-like key',
        nothing: null,
      }
      await adapter.set('s', 'k', value)
      assert.deepEqual(await adapter.get('s', 'k'), value)
      const result = await adapter.update('s', 'k', [{ type: 'set', path: 'added', value: [] }])
      assert.deepEqual(result.new_value, { ...value, added: [] })
      assert.deepEqual(await adapter.get('s', 'k'), { ...value, added: [] })
      assert.deepEqual(await adapter.list('s'), [{ ...value, added: [] }])
    })

    check('numbers computed by increment and decrement equal the JavaScript double results', async (adapter) => {
      const cases: Array<[number, number]> = [
        [0.1, 0.2],
        [1e21, 1],
        [9007199254740992, 1],
        [-0.000001, -0.0000001],
        [1.7976931348623157e308, 1.7976931348623157e308],
        [123.456, -123.456],
        [5e-324, 5e-324],
        [1e-7, 0],
        [0.1, -0.30000000000000004],
      ]
      for (const [i, [start, by]] of cases.entries()) {
        await adapter.set('s', `n${i}`, { n: start })
        const ops: UpdateOp[] = [
          { type: 'increment', path: 'n', by },
          { type: 'decrement', path: 'm', by },
        ]
        const result = await adapter.update('s', `n${i}`, ops)
        // What a JavaScript store would keep: the double results, stored as JSON text.
        const expected = JSON.parse(JSON.stringify(applyUpdateOps({ n: start }, ops).value)) as unknown
        assert.deepEqual(result.new_value, expected, `case ${i}: ${start} + ${by}`)
        assert.deepEqual(await adapter.get('s', `n${i}`), expected)
      }
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

    check('reports every committed change once, in commit order, with old and new values and origin', async (adapter) => {
      const changes = record(adapter)
      const origin = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', baggage: 'user=alice' }
      await adapter.set('s', 'k', { v: 1 }, { origin })
      await adapter.set('s', 'k', { v: 1 })
      await adapter.update('s', 'k', [{ type: 'set', path: 'v', value: 2 }])
      await adapter.update('s', 'fresh', [{ type: 'set', value: 'new' }], { origin })
      await adapter.delete('s', 'k', { origin })
      await adapter.delete('s', 'k')
      await adapter.get('s', 'fresh')
      await adapter.list('s')
      const seen = await settled(adapter, changes)
      assert.deepEqual(shape(seen), [
        { scope: 's', key: 'k', old_value: undefined, new_value: { v: 1 } },
        { scope: 's', key: 'k', old_value: { v: 1 }, new_value: { v: 1 } },
        { scope: 's', key: 'k', old_value: { v: 1 }, new_value: { v: 2 } },
        { scope: 's', key: 'fresh', old_value: undefined, new_value: 'new' },
        { scope: 's', key: 'k', old_value: { v: 2 }, new_value: undefined },
      ])
      assert.deepEqual(
        seen.map((c) => c.origin),
        [origin, undefined, undefined, origin, origin],
      )
    })

    check('reports concurrent writes exactly once each, in commit order', async (adapter) => {
      const changes = record(adapter)
      const writes: Array<Promise<unknown>> = []
      for (let i = 0; i < 50; i++) {
        writes.push(adapter.set('s', 'k', i))
        writes.push(adapter.update('s', 'n', [{ type: 'increment' }]))
      }
      writes.push(adapter.delete('s', 'k'))
      await Promise.all(writes)
      const seen = await settled(adapter, changes)
      assert.equal(seen.length, 101)
      // Whatever order the store committed them in, each change starts from the previous one's value.
      for (const key of ['k', 'n']) {
        const ofKey = seen.filter((c) => c.key === key)
        for (let i = 1; i < ofKey.length; i++) assert.deepEqual(ofKey[i]!.old_value, ofKey[i - 1]!.new_value)
      }
      assert.deepEqual(
        seen.filter((c) => c.key === 'n').map((c) => c.new_value),
        Array.from({ length: 50 }, (_, i) => i + 1),
      )
      assert.equal(seen.at(-1)!.new_value, undefined)
    })

    check('reports a change before the write resolves', async (adapter) => {
      const changes = record(adapter)
      const writes = [adapter.set('s', 'k', 1), adapter.set('s', 'k', 2), adapter.delete('s', 'k')]
      await writes[0]
      assert.ok(changes.length >= 1)
      await Promise.all(writes)
      assert.equal(changes.length, 3)
    })

    check('unsubscribe stops the reports, and a throwing listener does not fail the write', async (adapter) => {
      const changes: StateChange[] = []
      adapter.subscribe(() => {
        throw new Error('listener bug')
      })
      const unsubscribe = adapter.subscribe((change) => changes.push(change))
      const all = record(adapter)
      await adapter.set('s', 'k', 1)
      await settled(adapter, all)
      unsubscribe()
      await adapter.set('s', 'k', 2)
      await settled(adapter, all)
      assert.equal(changes.filter((c) => c.scope === 's').length, 1)
      assert.equal(await adapter.get('s', 'k'), 2)
    })

    check(SHARED, async (adapter, t) => {
      const peer = await options.openPeer!(adapter)
      t.after(() => peer.close())
      const mine = record(adapter)
      const theirs = record(peer)
      await adapter.set('s', 'a', 1)
      await peer.update('s', 'a', [{ type: 'increment' }])
      await peer.set('s', 'b', { from: 'peer' })
      await adapter.delete('s', 'b')
      assert.equal(await peer.get('s', 'a'), 2)
      assert.equal(await adapter.get('s', 'b'), undefined)
      const expected = [
        { scope: 's', key: 'a', old_value: undefined, new_value: 1 },
        { scope: 's', key: 'a', old_value: 1, new_value: 2 },
        { scope: 's', key: 'b', old_value: undefined, new_value: { from: 'peer' } },
        { scope: 's', key: 'b', old_value: { from: 'peer' }, new_value: undefined },
      ]
      assert.deepEqual(shape(await settled(adapter, mine)), expected)
      assert.deepEqual(shape(await settled(adapter, theirs)), expected)
    })

    check('every method rejects after close, and close twice is harmless', async (adapter) => {
      await adapter.set('s', 'k', 1)
      await adapter.close()
      await adapter.close()
      await assert.rejects(adapter.get('s', 'k'))
      await assert.rejects(adapter.set('s', 'k', 2))
      await assert.rejects(adapter.delete('s', 'k'))
      await assert.rejects(adapter.update('s', 'k', [{ type: 'increment' }]))
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

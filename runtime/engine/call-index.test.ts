/**
 * The invocation path's per-call index (call-index.ts): behaves as a string-keyed map for any key,
 * and what it lets go of dies young — the engine's flight table no longer keeps every call alive
 * into the old generation (the `Map` it used did, through the hash tables V8 replaces).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import fc from 'fast-check'
import type { ErrorBody, JsonInput } from 'svc-protocol'
import { CallIndex } from './call-index.ts'
import { Flight, FlightTable } from './flights.ts'

/** Keys a caller may send as its `invocation_id`, hostile ones included. */
const hostileKey = fc.oneof(
  fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', '', '0', '1', '-0', '4294967294', '4294967295', 'NaN', ' ', '\u0000', '\ud800', 'a'.repeat(70_000)),
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.uuid(),
  fc.nat().map(String),
)

describe('CallIndex', () => {
  it('answers get, has, take, size and values as a Map does, for any keys and any order of operations', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: hostileKey }),
      fc.record({ kind: fc.constant('delete' as const), key: hostileKey }),
      fc.record({ kind: fc.constant('take' as const), key: hostileKey }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 400 }), (ops) => {
        const index = new CallIndex<{ n: number }>()
        const model = new Map<string, { n: number }>()
        ops.forEach((o, n) => {
          if (o.kind === 'set') {
            const value = { n }
            index.set(o.key, value)
            model.set(o.key, value)
          } else if (o.kind === 'take') {
            const value = model.get(o.key)
            model.delete(o.key)
            assert.equal(index.take(o.key), value)
          } else assert.equal(index.delete(o.key), model.delete(o.key))
          assert.equal(index.size, model.size)
          assert.equal(index.get(o.key), model.get(o.key))
          assert.equal(index.has(o.key), model.has(o.key))
        })
        for (const [key, value] of model) assert.equal(index.get(key), value)
        assert.deepEqual(
          index.values().map((v) => v.n).sort((a, b) => a - b),
          [...model.values()].map((v) => v.n).sort((a, b) => a - b),
        )
      }),
      { numRuns: 300 },
    )
  })

  it('keeps its entries through growth, tombstones and shrinking back', () => {
    const index = new CallIndex<{ id: string }>()
    const ids = Array.from({ length: 5000 }, (_, i) => `id-${i}`)
    for (const id of ids) index.set(id, { id })
    for (let i = 0; i < ids.length; i += 2) assert.equal(index.delete(ids[i]!), true)
    assert.equal(index.size, 2500)
    for (let i = 0; i < ids.length; i++) assert.equal(index.get(ids[i]!)?.id, i % 2 === 0 ? undefined : ids[i])
    for (let i = 1; i < ids.length; i += 2) index.delete(ids[i]!)
    assert.equal(index.size, 0)
    assert.deepEqual(index.values(), [])
    index.set('again', { id: 'again' })
    assert.equal(index.get('again')?.id, 'again')
  })
})

describe('FlightTable', () => {
  it('lists flights oldest first', () => {
    const table = new FlightTable()
    const reply = { result() {}, error() {} }
    const flights = Array.from({ length: 50 }, (_, i) => new Flight(table, `f${i}`, 'default', null, reply))
    flights[10]!.result(undefined)
    const { invocations, total } = table.list(5, () => true)
    assert.equal(total, 49)
    assert.deepEqual(
      invocations.map((s) => s.function_id),
      ['f0', 'f1', 'f2', 'f3', 'f4'],
    )
  })

  it("lets a settled call's objects die young: churning flights does not fill the old generation", () => {
    // Scavenges only (`gc({ type: 'minor' })`): an object still reachable from an old-generation
    // hash table the index replaced is promoted instead of freed. With the `Map` the table used
    // before, ~40 MB of settled calls reached the old generation here; now a few hundred KB.
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void
    const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size
    const table = new FlightTable()
    const index = new CallIndex<Flight>()
    const sink = { result(_value: JsonInput | undefined) {}, error(_error: ErrorBody) {} }
    const inFlight: Flight[] = []
    const call = (n: number) => {
      // A call's objects: the flight, its reply and a payload of about 1 KB.
      const payload = { data: new Array<number>(120).fill(n) }
      const flight = new Flight(table, 'bench::echo', 'default', null, { result: () => sink.result(payload), error: sink.error }, index, `call-${n}`)
      inFlight.push(flight)
      if (inFlight.length > 64) inFlight.shift()!.result(null)
    }
    let n = 0
    for (; n < 2000; n++) call(n)
    // The tables are long-lived, as in an engine that has been up for a while.
    gc({ type: 'major' })
    gc({ type: 'major' })
    const before = oldSpace()
    for (let round = 0; round < 40; round++) {
      for (let i = 0; i < 1000; i++) call(n++)
      gc({ type: 'minor' })
    }
    const grown = oldSpace() - before
    while (inFlight.length > 0) inFlight.shift()!.result(null)
    assert.equal(table.size, 0)
    assert.equal(index.size, 0)
    assert.ok(grown < 8 * 1024 * 1024, `old generation grew by ${(grown / 1048576).toFixed(1)} MiB over 40,000 settled calls`)
  })
})

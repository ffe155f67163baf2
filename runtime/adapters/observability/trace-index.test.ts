import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LIMITS, span } from './conformance.ts'
import { MemoryStore } from './store.ts'
import { TraceIndex } from './trace-index.ts'

describe('trace index of the span window', () => {
  it('answers as a Map of each trace to its newest position, through growth, wrap-around clusters and deletions (property)', async () => {
    const { default: fc } = await import('fast-check')
    // Few distinct hashes (and ones near the table's end) make long, wrapping clusters: the probing
    // and the backward-shift deletion are what is tested.
    const hashes = fc.constantFrom(0, 1, 2, 1023, 1022, -1, 0x7fffffff)
    const op = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('set' as const), trace: fc.integer({ min: 0, max: 2500 }) }), weight: 6 },
      { arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }), weight: 4 },
      { arbitrary: fc.record({ kind: fc.constant('clear' as const) }), weight: 1 },
    )
    fc.assert(
      fc.property(fc.dictionary(fc.integer({ min: 0, max: 2500 }).map((t) => `t${t}`), hashes, { minKeys: 50, maxKeys: 500 }), fc.array(op, { minLength: 1000, maxLength: 3000 }), (hashOf, ops) => {
        // Positions are arrival numbers: each names one trace for good.
        const traceAt: string[] = []
        const index = new TraceIndex((position, trace) => traceAt[position] === trace)
        const hash = (trace: string): number => hashOf[trace] ?? index.hash(trace)
        const model = new Map<string, number>()
        for (const o of ops) {
          if (o.kind === 'set') {
            const trace = `t${o.trace}`
            traceAt.push(trace)
            index.set(trace, hash(trace), traceAt.length - 1)
            model.set(trace, traceAt.length - 1)
          } else if (o.kind === 'delete' && model.size > 0) {
            const [trace, position] = [...model][o.pick % model.size]!
            // An older span of the trace leaving changes nothing; the newest removes the entry.
            const older = position > 0 ? traceAt.lastIndexOf(trace, position - 1) : -1
            if (older >= 0) index.delete(hash(trace), older)
            assert.equal(index.newest(trace, hash(trace)), position)
            index.delete(hash(trace), position)
            model.delete(trace)
          } else if (o.kind === 'clear') {
            index.clear()
            model.clear()
          }
        }
        assert.equal(index.size, model.size)
        for (const [trace, position] of model) assert.equal(index.newest(trace, hash(trace)), position, trace)
        for (let i = 0; i < 20; i++) assert.equal(index.newest(`absent${i}`, hash(`absent${i}`)), -1)
      }),
      { numRuns: 200 },
    )
  })

  it('the window finds every span of each of thousands of traces, oldest first, sealed or not, through evictions, resends and clears (property)', async () => {
    const { default: fc } = await import('fast-check')
    const op = fc.oneof(
      { arbitrary: fc.record({ kind: fc.constant('span' as const), trace: fc.integer({ min: 0, max: 3000 }), sealed: fc.boolean() }), weight: 12 },
      { arbitrary: fc.record({ kind: fc.constant('resend' as const), pick: fc.nat(), sealed: fc.boolean() }), weight: 2 },
      { arbitrary: fc.record({ kind: fc.constant('clear' as const) }), weight: 1 },
    )
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1500 }), fc.array(op, { minLength: 1000, maxLength: 4000 }), (maxSpans, ops) => {
        const store = new MemoryStore({ ...LIMITS, maxSpans, maxSpanBytes: 1 << 30 })
        // The model: [trace, span] of the spans held, oldest first.
        let held: Array<[string, string]> = []
        let n = 0
        for (const o of ops) {
          if (o.kind === 'span') {
            const ids: [string, string] = [`t${o.trace}`, `s${n++}`]
            store.putSpan(span(ids[0], ids[1], null, 1_000_000 + n), 100, o.sealed)
            held.push(ids)
            if (held.length > maxSpans) held.shift()
          } else if (o.kind === 'resend' && held.length > 0) {
            // Keeps its place in the window.
            const [trace, id] = held[o.pick % held.length]!
            store.putSpan(span(trace, id, null, 1_000_000 + n, { status: 'error' }), 100, o.sealed)
          } else if (o.kind === 'clear') {
            store.clearSpans()
            held = []
          }
        }
        assert.deepEqual([...store.heads()].map((s) => [s.trace_id, s.span_id]), held)
        const byTrace = new Map<string, string[]>()
        for (const [trace, id] of held) byTrace.set(trace, [...(byTrace.get(trace) ?? []), id])
        for (const [trace, ids] of byTrace) {
          assert.deepEqual(store.traceHeads(trace).map((s) => s.span_id), ids, trace)
          assert.deepEqual(store.trace(trace).map((s) => s.span_id), ids, trace)
        }
        for (let t = 0; t <= 3000; t += 97) if (!byTrace.has(`t${t}`)) assert.deepEqual(store.trace(`t${t}`), [])
      }),
      { numRuns: 60 },
    )
  })
})

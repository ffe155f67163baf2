/**
 * Pairing the supervisor's captured lines with svc-sdk's console records (issue 21,
 * ./console-lines.ts): whichever arrives first, every printed line is stored once and carries a
 * trace; hostile and repeated texts included (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { log } from '../../adapters/observability/conformance.ts'
import type { LogRecord } from '../../adapters/observability/records.ts'
import { CONSOLE_PAIRING_MS, ConsoleLines } from './console-lines.ts'

const trace = (i: number) => i.toString(16).padStart(32, '0')

/** One handler's console call: its lines as the supervisor captures them, the SDK's record. */
function call(i: number, lines: string[], stream: 'stdout' | 'stderr'): { captured: LogRecord[]; record: LogRecord } {
  return {
    captured: lines.map((l) => log(l, Date.now(), { attributes: { 'log.source': stream } })),
    record: log(lines.join('\n'), Date.now(), { attributes: { 'log.source': stream }, trace_id: trace(i), span_id: '1'.repeat(16) }),
  }
}

describe('console lines and their trace', () => {
  it('a line captured first gets the trace of the record that follows; the record is not stored', () => {
    const table = new ConsoleLines()
    const c = call(1, ['printed 1'], 'stdout')
    assert.equal(table.capturedLine('app', 'stdout', c.captured[0]!), true)
    assert.equal(table.consoleRecord('app', c.record), true)
    assert.equal(c.captured[0]!.trace_id, trace(1))
    // Another worker's or stream's line is never paired.
    const other = call(2, ['printed 2'], 'stdout')
    table.capturedLine('other', 'stdout', other.captured[0]!)
    assert.equal(table.consoleRecord('app', other.record), false)
  })

  it('a record that arrives first is stored and the lines it covers are dropped', () => {
    const table = new ConsoleLines()
    const c = call(1, ['a', 'b'], 'stderr')
    assert.equal(table.consoleRecord('app', c.record), false)
    assert.equal(table.capturedLine('app', 'stderr', c.captured[0]!), false)
    assert.equal(table.capturedLine('app', 'stderr', c.captured[1]!), false)
    assert.equal(table.capturedLine('app', 'stderr', log('a', Date.now())), true, 'the next a is a new line')
  })

  it('forgets lines after the pairing window', () => {
    let now = 0
    const table = new ConsoleLines(() => now)
    const c = call(1, ['late'], 'stdout')
    table.consoleRecord('app', c.record)
    now = CONSOLE_PAIRING_MS + 1
    assert.equal(table.capturedLine('app', 'stdout', c.captured[0]!), true)
  })

  it('stores every printed line exactly once, whichever half arrives first (property)', () => {
    const text = fc.oneof(fc.constantFrom('ok', 'ok', '', ' ', '\u001b]52;c;aGk=\u0007', '__proto__', 'a\rb'), fc.string({ maxLength: 8 }))
    const calls = fc.array(fc.record({ lines: fc.array(text.filter((t) => !/[\r\n]/.test(t)), { minLength: 1, maxLength: 3 }), stream: fc.constantFrom('stdout' as const, 'stderr' as const), recordFirst: fc.boolean(), worker: fc.constantFrom('app', 'app', 'web') }), { maxLength: 30 })
    fc.assert(
      fc.property(calls, (list) => {
        const table = new ConsoleLines()
        const stored: LogRecord[] = []
        const printed: string[] = []
        for (const [i, c] of list.entries()) {
          const { captured, record } = call(i + 1, c.lines, c.stream)
          printed.push(...c.lines)
          const capture = () => {
            for (const line of captured) if (table.capturedLine(c.worker, c.stream, line)) stored.push(line)
          }
          if (c.recordFirst) {
            if (!table.consoleRecord(c.worker, record)) stored.push(record)
            capture()
          } else {
            capture()
            if (!table.consoleRecord(c.worker, record)) stored.push(record)
          }
        }
        const storedLines = stored.flatMap((r) => (r.attributes['log.source'] !== undefined && r.trace_id !== null && r.body.includes('\n') ? r.body.split('\n') : [r.body]))
        assert.deepEqual([...storedLines].sort(), [...printed].sort())
        for (const r of stored) assert.notEqual(r.trace_id, null, JSON.stringify(r))
      }),
      { numRuns: 500 },
    )
  })
})

/**
 * `svc traces` rendering (issue 21): the flags' parsers, the table and the waterfall; names,
 * messages and stacks from workers never reach the terminal raw, and every line fits the width
 * (fast-check over hostile spans).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { CliError } from './errors.ts'
import { formatDuration, formatTracesTable, formatWaterfall, parseDurationMs, parseTraceId, type TraceListEntry, type TraceSpan } from './traces.ts'

const T = 'a'.repeat(32)
const MS = 1e6
const BASE = Date.now() * MS

function span(id: string, parent: string | null, startMs: number, durationMs: number | null, depth: number, fields: Partial<TraceSpan> = {}): TraceSpan & { depth: number } {
  return {
    trace_id: T,
    span_id: id.padStart(16, '0'),
    parent_span_id: parent === null ? null : parent.padStart(16, '0'),
    name: `execute ${id}`,
    kind: 'internal',
    service_name: 'svc',
    start_time_unix_nano: BASE + startMs * MS,
    end_time_unix_nano: durationMs === null ? null : BASE + (startMs + durationMs) * MS,
    duration_ms: durationMs,
    status: 'ok',
    attributes: {},
    events: [],
    depth,
    ...fields,
  }
}

/** Characters a terminal acts on (but TAB), as `terminalText` defines them. */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/

describe('svc traces flags', () => {
  it('--min-duration takes ms, or a number with ms, s or m', () => {
    assert.equal(parseDurationMs('250', '--min-duration'), 250)
    assert.equal(parseDurationMs('250ms', '--min-duration'), 250)
    assert.equal(parseDurationMs('1.5s', '--min-duration'), 1500)
    assert.equal(parseDurationMs('2m', '--min-duration'), 120_000)
    for (const bad of ['', '-1', '1h', 'fast', '1e3', '\u001b[2J']) assert.throws(() => parseDurationMs(bad, '--min-duration'), (e: unknown) => e instanceof CliError && e.exitCode === 2 && !UNSAFE.test(e.message), bad)
  })

  it('a trace id is 32 hex characters or a traceparent value', () => {
    assert.equal(parseTraceId('4BF92F3577B34DA6A3CE929D0E0E4736'), '4bf92f3577b34da6a3ce929d0e0e4736')
    assert.equal(parseTraceId('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), '4bf92f3577b34da6a3ce929d0e0e4736')
    for (const bad of ['abc', 'g'.repeat(32), `${'a'.repeat(32)}\u001b]0;x\u0007`]) assert.throws(() => parseTraceId(bad), (e: unknown) => e instanceof CliError && e.exitCode === 2 && !UNSAFE.test(e.message))
  })

  it('any argument text parses or is refused as a usage error, shown escaped (property)', () => {
    const hostile = fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'binary', maxLength: 80 }), fc.constantFrom('\u001b]52;c;aGk=\u0007', '1e309', 'NaN', '-0', '0x10', ' 5 s ', '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01\n'))
    fc.assert(
      fc.property(hostile, (text) => {
        for (const parse of [() => parseTraceId(text), () => parseDurationMs(text, '--min-duration')]) {
          try {
            const value = parse()
            assert.ok(typeof value === 'string' ? /^[0-9a-f]{32}$/.test(value) : Number.isFinite(value) && value >= 0, String(value))
          } catch (e) {
            assert.ok(e instanceof CliError && e.exitCode === 2, String(e))
            assert.ok(!UNSAFE.test(e.message) && !UNSAFE.test(e.hint ?? ''), JSON.stringify(e.message))
          }
        }
      }),
      { numRuns: 1000 },
    )
  })

  it('durations read as people write them', () => {
    assert.deepEqual([0.42, 12.4, 1250, 123_000, null].map(formatDuration), ['0.42ms', '12ms', '1.25s', '2m03s', 'running'])
  })
})

describe('svc traces waterfall', () => {
  it('one row per span, indented by depth, the bar placed by start and sized by duration; the failure under its span', () => {
    const spans = [
      span('1', null, 0, 100, 0, { name: 'POST /orders' }),
      span('2', '1', 50, 50, 1, { status: 'error', events: [{ name: 'exception', timestamp_unix_nano: BASE, attributes: { 'exception.type': 'Error', 'exception.message': 'card declined', 'exception.stacktrace': 'Error: card declined\n    at charge (/app/src/pay.ts:12:11)\n    at handler (/app/src/index.ts:30:5)\n    at run (/app/node_modules/svc-sdk/dist/tracing.js:1:1)\n    at emit (node:events:514:28)' } }] }),
      span('3', '2', 60, null, 2, { status: 'unset' }),
    ]
    const out = formatWaterfall(spans, { columns: 100 })
    const lines = out.trimEnd().split('\n')
    assert.match(lines[0]!, new RegExp(`^Trace ${T}  100ms  3 spans, 1 failed  .*POST /orders$`))
    assert.match(lines[1]!, /^POST \/orders +█+ +100ms {2}ok$/)
    assert.match(lines[2]!, /^ {2}execute 2 +█+ +50ms {2}error$/)
    assert.match(lines[3]!, /^ {4}! Error: card declined$/)
    assert.match(lines[4]!, /^ {6}at charge \(\/app\/src\/pay\.ts:12:11\)$/)
    assert.match(lines[5]!, /^ {6}at handler \(\/app\/src\/index\.ts:30:5\)$/)
    // The frames after the user's (svc-sdk's dispatch, Node's) are left to --json.
    assert.equal(lines[6], `      … 2 more frames (svc traces ${T} --json)`)
    assert.match(lines[7]!, /^ {4}execute 3 +░+ +running {2}unset$/)
    // The parent's bar starts at the left of the bar column, the child's half way along it.
    const barStart = (line: string) => line.search(/[█░]/)
    const barEnd = (line: string) => line.lastIndexOf('█') + 1
    const left = barStart(lines[1]!)
    const width = barEnd(lines[1]!) - left
    assert.ok(Math.abs(barStart(lines[2]!) - left - width / 2) <= 1, lines[2])
    assert.equal(barEnd(lines[2]!), left + width)
    for (const line of lines) assert.ok(line.length <= 100, line)
  })

  it('names, messages and stacks from workers are escaped and every line fits the terminal (property)', () => {
    const hostile = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.constantFrom('\u001b]52;c;aGk=\u0007', '\u001b[2J\u001b[H', 'ok\r12:00 engine ERROR forged', 'a\u202eb', '\u009b31m', 'line\nline', '\u2028'),
      fc.string({ unit: 'binary', maxLength: 200 }),
    )
    const tree = fc.array(fc.record({ name: hostile, message: hostile, stack: hostile, status: fc.constantFrom('ok', 'error', 'unset', '\u001b[31m'), start: fc.nat(1000), duration: fc.option(fc.nat(1000)) }), { minLength: 1, maxLength: 8 })
    fc.assert(
      fc.property(tree, fc.integer({ min: 20, max: 300 }), (items, columns) => {
        const spans = items.map((it, i) =>
          span(String(i + 1), i === 0 ? null : String(i), it.start, it.duration, i === 0 ? 0 : 1 + (i % 3), {
            name: it.name,
            status: it.status,
            status_message: it.message,
            events: [{ name: 'exception', timestamp_unix_nano: BASE, attributes: { 'exception.message': it.message, 'exception.stacktrace': `x\n    at ${it.stack}` } }],
          }),
        )
        const out = formatWaterfall(spans, { columns })
        for (const line of out.slice(0, -1).split('\n')) {
          assert.ok(!UNSAFE.test(line), JSON.stringify(line))
          assert.ok(line.length <= Math.max(60, columns), `${line.length} > ${columns}: ${JSON.stringify(line)}`)
        }
        const table = formatTracesTable(spans.map((s) => ({ ...s, span_count: 1, error_count: 0, service_names: [s.service_name] }) as TraceListEntry), { columns })
        for (const line of table.slice(0, -1).split('\n')) {
          assert.ok(!UNSAFE.test(line), JSON.stringify(line))
          assert.ok(line.length <= Math.max(80, columns) || line.startsWith('('), `${line.length} > ${columns}: ${JSON.stringify(line)}`)
        }
      }),
      { numRuns: 300 },
    )
  })
})

/**
 * The size limits of stored telemetry (./limits.ts) on records built by hand: truncation on a
 * character boundary with the marker, counts, the record budget, applying twice, and the counters
 * behind `svc.observability.truncated`.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LogRecord, SpanRecord } from '../../adapters/observability/records.ts'
import { DEFAULT_TELEMETRY_LIMITS, TelemetryLimiter, truncateText, truncationMarker, type TelemetryLimits } from './limits.ts'
import { attributeMap } from './otlp.ts'

const bytes = (text: string): number => Buffer.byteLength(text)

function span(extra: Partial<SpanRecord> = {}): SpanRecord {
  return {
    trace_id: 'a'.repeat(32),
    span_id: 'b'.repeat(16),
    parent_span_id: null,
    name: 'execute app::x',
    kind: 'internal',
    service_name: 'app',
    start_time_unix_nano: 1,
    end_time_unix_nano: 2,
    duration_ms: 0,
    status: 'ok',
    attributes: {},
    resource: { 'service.name': 'app' },
    events: [],
    links: [],
    ...extra,
  }
}

function log(extra: Partial<LogRecord> = {}): LogRecord {
  return {
    timestamp_unix_nano: 1,
    observed_timestamp_unix_nano: 1,
    severity_number: 9,
    severity_text: 'INFO',
    body: 'hello',
    attributes: {},
    resource: {},
    service_name: 'app',
    trace_id: null,
    span_id: null,
    ...extra,
  }
}

const limits = (extra: Partial<TelemetryLimits> = {}): TelemetryLimits => ({ ...DEFAULT_TELEMETRY_LIMITS, ...extra })

describe('truncateText', () => {
  it('leaves text within the limit alone', () => {
    assert.equal(truncateText('x'.repeat(64), 64), 'x'.repeat(64))
    assert.equal(truncateText('é'.repeat(32), 64), 'é'.repeat(32))
  })

  it('keeps the first bytes and appends the marker, the whole within the limit', () => {
    const out = truncateText('x'.repeat(1000), 100)
    assert.ok(bytes(out) <= 100)
    const kept = out.indexOf('…')
    assert.equal(out, 'x'.repeat(kept) + truncationMarker(1000 - kept))
  })

  it('cuts on a character boundary: multi-byte characters and surrogate pairs stay whole', () => {
    for (const unit of ['é', '中', '😀']) {
      for (let limit = 64; limit < 80; limit++) {
        const out = truncateText(unit.repeat(200), limit)
        assert.ok(bytes(out) <= limit, `${unit} ${limit}: ${bytes(out)} bytes`)
        assert.equal(out.toWellFormed(), out)
        const kept = out.slice(0, out.indexOf('…'))
        assert.equal(kept, unit.repeat(kept.length / unit.length))
        assert.equal(out, kept + truncationMarker(bytes(unit.repeat(200)) - bytes(kept)))
      }
    }
  })

  it('is idempotent', () => {
    const once = truncateText('y'.repeat(10_000), 256)
    assert.equal(truncateText(once, 256), once)
  })
})

describe('TelemetryLimiter', () => {
  it('truncates attribute values, drops attributes beyond the count, and counts both on the span', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100, attribute_count_limit: 3 }))
    const s = span({ attributes: { a: 'a'.repeat(500), b: 1, c: { nested: 'n'.repeat(500) }, d: true, e: 'e' } })
    limiter.span(s)
    assert.deepEqual(Object.keys(s.attributes), ['a', 'b', 'c'])
    assert.ok((s.attributes.a as string).endsWith(truncationMarker(500 - (s.attributes.a as string).indexOf('…'))))
    // A structured value over the limit becomes its JSON, truncated.
    assert.ok((s.attributes.c as string).startsWith('{"nested":"nnn'))
    assert.ok(bytes(s.attributes.c as string) <= 100)
    assert.equal(s.dropped_attributes_count, 4)
    assert.deepEqual(limiter.totals(), { 'spans.attribute_value_length_limit': 2, 'spans.attribute_count_limit': 2 })
  })

  it('drops events and links beyond their counts, limits their attributes, and counts them', () => {
    const limiter = new TelemetryLimiter(limits({ span_event_count_limit: 2, span_link_count_limit: 1, attribute_count_limit: 1 }))
    const events = Array.from({ length: 5 }, (_, i) => ({ name: `e${i}`, timestamp_unix_nano: i, attributes: { x: 1, y: 2 } }))
    const links = Array.from({ length: 3 }, () => ({ trace_id: 'c'.repeat(32), span_id: 'd'.repeat(16), attributes: {} }))
    const s = span({ events, links })
    limiter.span(s)
    assert.deepEqual(s.events.map((e) => [e.name, e.attributes, e.dropped_attributes_count]), [['e0', { x: 1 }, 1], ['e1', { x: 1 }, 1]])
    assert.equal(s.links.length, 1)
    assert.equal(s.dropped_events_count, 3)
    assert.equal(s.dropped_links_count, 2)
    assert.equal(s.dropped_attributes_count, undefined)
  })

  it('keeps a record within record_size_limit: later attributes and events that do not fit are dropped', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 4096, record_size_limit: 10_000 }))
    const attributes: Record<string, unknown> = {}
    for (let i = 0; i < 5; i++) attributes[`k${i}`] = 'v'.repeat(3000)
    attributes.small = 1
    const events = [{ name: 'payload', timestamp_unix_nano: 1, attributes: { json: 'p'.repeat(3000) } }]
    const s = span({ attributes, events })
    limiter.span(s)
    assert.deepEqual(Object.keys(s.attributes), ['k0', 'k1', 'k2', 'small'])
    assert.equal(s.dropped_attributes_count, 2)
    // The event stays (its name fits) without the attribute that no longer fits.
    assert.deepEqual(s.events[0]!.attributes, {})
    assert.equal(s.events[0]!.dropped_attributes_count, 1)
    assert.ok(JSON.stringify(s).length <= 10_000, `${JSON.stringify(s).length}`)
    assert.deepEqual(limiter.totals(), { 'spans.record_size_limit': 3 })
  })

  it('applied again (an engine span finished in place) changes nothing it already limited and counts only what is new', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100, attribute_count_limit: 2 }))
    const s = span({ attributes: { a: 'a'.repeat(500) } })
    limiter.span(s)
    const first = structuredClone(s)
    limiter.span(s)
    assert.deepEqual(s, first)
    Object.assign(s.attributes, { b: 1, c: 2 })
    s.status_message = 'm'.repeat(500)
    limiter.span(s)
    assert.deepEqual(Object.keys(s.attributes), ['a', 'b'])
    assert.equal(s.dropped_attributes_count, 2)
    assert.ok(bytes(s.status_message) <= 100)
    assert.deepEqual(limiter.totals(), { 'spans.attribute_value_length_limit': 2, 'spans.attribute_count_limit': 1 })
  })

  it('limits a log record: body, attributes, resource, sender-chosen strings', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100, log_body_length_limit: 200 }))
    const record = log({ body: 'b'.repeat(5000), attributes: { 'log.data.x': 'x'.repeat(500) }, resource: { 'service.name': 's'.repeat(500) }, service_name: 's'.repeat(500), trace_id: 't'.repeat(500) })
    limiter.log(record)
    assert.ok(bytes(record.body) <= 200 && record.body.endsWith(' bytes]'))
    for (const text of [record.attributes['log.data.x'] as string, record.resource['service.name']!, record.service_name, record.trace_id!]) assert.ok(bytes(text) <= 100)
    assert.equal(record.dropped_attributes_count, 1)
    assert.equal(limiter.totals()['logs.log_body_length_limit'], 1)
  })

  it('drops an attribute whose key is over the value limit', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100 }))
    const attributes = JSON.parse('{"ok":1}') as Record<string, unknown>
    attributes['k'.repeat(1000)] = 1
    const s = span({ attributes })
    limiter.span(s)
    assert.deepEqual(s.attributes, { ok: 1 })
    assert.equal(s.dropped_attributes_count, 1)
  })

  it('keeps `__proto__`, `constructor` and `toString` of an attribute map as ordinary attributes, truncated like any other', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100, attribute_count_limit: 2 }))
    const attributes = attributeMap()
    attributes['__proto__'] = 'p'.repeat(1000)
    attributes['constructor'] = { nested: 'n'.repeat(1000) }
    attributes['toString'] = 1
    const s = span({ attributes })
    limiter.span(s)
    assert.deepEqual(Object.keys(s.attributes), ['__proto__', 'constructor'])
    // Nothing inherited: the map's prototype chain holds no property (otlp.ts, attributeMap).
    for (let p = Object.getPrototypeOf(s.attributes); p !== null; p = Object.getPrototypeOf(p)) assert.deepEqual(Reflect.ownKeys(p), [])
    assert.equal('hasOwnProperty' in s.attributes, false)
    assert.match(s.attributes['__proto__'] as string, /^p+…\[truncated \d+ bytes\]$/)
    assert.match(s.attributes['constructor'] as string, /^\{"nested":"n+…\[truncated \d+ bytes\]$/)
    assert.equal(s.dropped_attributes_count, 3)
    assert.match(JSON.stringify(s.attributes), /^\{"__proto__":"p+/)
  })

  it('reports svc.observability.truncated by signal and limit once something was truncated', () => {
    const limiter = new TelemetryLimiter(limits({ attribute_value_length_limit: 100 }))
    assert.deepEqual(limiter.series(5), [])
    const series = { name: 'n'.repeat(500), type: 'gauge' as const }
    const point = { time_unix_nano: 1, value: 1, attributes: { a: 'a'.repeat(500) } }
    limiter.point(series, point)
    assert.ok(bytes(series.name) <= 100 && bytes(point.attributes.a) <= 100)
    assert.deepEqual(limiter.series(5), [
      {
        name: 'svc.observability.truncated',
        type: 'sum',
        unit: '{item}',
        description: 'telemetry values truncated and items dropped by the size limits',
        points: [{ time_unix_nano: 5, value: 2, attributes: { 'svc.telemetry.signal': 'metrics', 'svc.telemetry.limit': 'attribute_value_length_limit' } }],
      },
    ])
  })
})

/**
 * CPU per span of the observability worker's ingest work after parsing (builtins.md §12.3): the
 * size limits (`TelemetryLimiter.span`, which also measures the span) and the in-memory window
 * (`MemoryStore.putSpan`, and `updateSpan` for engine spans that finish in place), in-process,
 * without sockets or SQLite.
 *
 *   sdk     spans as `/otel` frames of svc-sdk handler spans carry them (four attributes, a payload
 *           event), parsed with the worker's OTLP reader
 *   engine  engine spans (`execute <function_id>`): put unfinished, then finished in place with one
 *           more attribute
 *
 * `node bench/window-ingest.ts` prints one JSON line per kind: `{ kind, spans, ns_per_span }`, the
 * median of BENCH_ROUNDS (default 7) rounds of BENCH_SPANS (default 200,000) spans into a window of
 * the default bounds (100,000 spans, 64 MiB), so that the window is full and evicting.
 */
import { randomBytes } from 'node:crypto'
import type { SpanRecord } from '../runtime/adapters/observability/records.ts'
import { MemoryStore } from '../runtime/adapters/observability/store.ts'
import { DEFAULT_TELEMETRY_LIMITS, TelemetryLimiter } from '../runtime/workers/observability/limits.ts'
import { spansOf } from '../runtime/workers/observability/otlp.ts'

const SPANS = Number(process.env.BENCH_SPANS ?? 200_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7)
const LIMITS = { retentionSeconds: 3600, maxSpans: 100_000, maxLogs: 20_000, maxSpanBytes: 64 << 20, maxLogBytes: 32 << 20, maxDiskBytes: 0 }

function sdkSpans(count: number): SpanRecord[] {
  const now = String(BigInt(Date.now()) * 1_000_000n)
  const spans = Array.from({ length: count }, () => ({
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    name: 'execute bench::echo',
    kind: 2,
    startTimeUnixNano: now,
    endTimeUnixNano: now,
    status: { code: 1 },
    attributes: [
      { key: 'svc.function.id', value: { stringValue: 'bench::echo' } },
      { key: 'faas.invocation_id', value: { stringValue: randomBytes(8).toString('hex') } },
      { key: 'svc.worker.name', value: { stringValue: 'bench' } },
      { key: 'code.function', value: { stringValue: 'echo' } },
    ],
    events: [{ name: 'payload', timeUnixNano: now, attributes: [{ key: 'svc.payload', value: { stringValue: '{"order_id":"ord_7f3a9c21","customer":"cus_42","total_cents":12999}' } }] }],
  }))
  const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'bench' } }] }
  // One frame per 64 spans, as svc-sdk batches them (they share the frame's resource).
  const out: SpanRecord[] = []
  for (let i = 0; i < spans.length; i += 64) out.push(...spansOf(JSON.parse(JSON.stringify({ resourceSpans: [{ resource, scopeSpans: [{ spans: spans.slice(i, i + 64) }] }] })), 'bench'))
  return out
}

const RESOURCE = Object.freeze({ 'service.name': 'svc' })
const NONE = Object.freeze([]) as never[]
function engineSpans(count: number): SpanRecord[] {
  return Array.from({ length: count }, (_, i) => ({
    trace_id: randomBytes(16).toString('hex'),
    span_id: randomBytes(8).toString('hex'),
    parent_span_id: null,
    name: `execute app::fn${i % 10}`,
    kind: 'internal' as const,
    service_name: 'svc',
    start_time_unix_nano: Date.now() * 1e6,
    end_time_unix_nano: null,
    duration_ms: null,
    status: 'unset' as const,
    attributes: { 'svc.function.id': `app::fn${i % 10}`, 'svc.worker.name': 'w' },
    resource: RESOURCE,
    events: NONE,
    links: NONE,
  }))
}

function round(kind: 'sdk' | 'engine'): number {
  const spans = kind === 'sdk' ? sdkSpans(SPANS) : engineSpans(SPANS)
  const limiter = new TelemetryLimiter(DEFAULT_TELEMETRY_LIMITS)
  const store = new MemoryStore(LIMITS)
  const start = process.hrtime.bigint()
  if (kind === 'sdk') {
    for (const span of spans) store.putSpan(span, limiter.span(span))
  } else {
    for (const span of spans) {
      store.putSpan(span, limiter.span(span))
      span.end_time_unix_nano = span.start_time_unix_nano + 1000
      span.duration_ms = 0.001
      span.status = 'ok'
      span.attributes['http.response.status_code'] = 200
      store.updateSpan(span, limiter.span(span))
    }
  }
  return Number(process.hrtime.bigint() - start) / SPANS
}

for (const kind of ['sdk', 'engine'] as const) {
  const times = Array.from({ length: ROUNDS }, () => round(kind)).sort((a, b) => a - b)
  console.log(JSON.stringify({ kind, spans: SPANS, ns_per_span: Math.round(times[Math.floor(ROUNDS / 2)]!) }))
}

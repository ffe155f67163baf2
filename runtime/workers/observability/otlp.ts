/**
 * Reading the `/otel` frames (protocol.md §10.2): OTLP/JSON `ExportTraceServiceRequest`,
 * `ExportLogsServiceRequest` and `ExportMetricsServiceRequest` into the records of builtins.md
 * §12.4. Lenient: anything that is not the expected shape is skipped, never thrown on (frames come
 * from any worker); ids that are not hex of the right length drop the span.
 */
import type { LogRecord, MetricPoint, MetricSeries, SpanKind, SpanRecord, SpanStatus } from '../../adapters/observability/records.ts'

type Obj = Record<string, unknown>
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v)
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const HEX32 = /^[0-9a-fA-F]{32}$/
const HEX16 = /^[0-9a-fA-F]{16}$/

/** Removes ANSI escape sequences (CSI, OSC and two-character escapes) from `text`. */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.includes('\u001b') || text.includes('\u009b') ? text.replace(/[\u001b\u009b](?:\[[0-?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)|[@-Z\\-_])/g, '') : text
}

/** An OTLP `AnyValue` as plain JSON (`intValue` strings become numbers when safe). */
export function anyValue(v: unknown, depth = 0): unknown {
  if (!isObj(v) || depth > 16) return null
  if ('stringValue' in v) return typeof v.stringValue === 'string' ? v.stringValue : String(v.stringValue)
  if ('boolValue' in v) return v.boolValue === true
  if ('intValue' in v) return num(v.intValue)
  if ('doubleValue' in v) return num(v.doubleValue)
  if ('arrayValue' in v) return arr(isObj(v.arrayValue) ? v.arrayValue.values : undefined).map((x) => anyValue(x, depth + 1))
  if ('kvlistValue' in v) return attributes(isObj(v.kvlistValue) ? v.kvlistValue.values : undefined, depth + 1)
  if ('bytesValue' in v) return typeof v.bytesValue === 'string' ? v.bytesValue : null
  return null
}

/**
 * The prototype of every attribute map: frozen, empty, itself without a prototype. Nothing is
 * inherited through it, and V8 keeps its descendants' properties in fast mode, where
 * `Object.create(null)` makes a dictionary: the JSON of a span's attributes and events (written
 * for every span stored, `../../adapters/observability/sqlite.ts`) took 1.7× as long from
 * dictionaries, and they take more memory in the window.
 */
const ATTRIBUTE_PROTOTYPE: object = Object.freeze(Object.create(null) as object)

/**
 * A map of attributes: an object that inherits no property, so that every key a sender chooses is
 * an ordinary own property (`__proto__` included, which on a plain object would set the prototype
 * or be lost) and reads such as `constructor` find only what was sent. JSON, `for…in`,
 * `Object.keys` and spreading treat it as any object. Its prototype is a frozen empty object
 * without a prototype ({@link ATTRIBUTE_PROTOTYPE}), not null: the same reads, faster objects.
 */
export function attributeMap(): Obj {
  return Object.create(ATTRIBUTE_PROTOTYPE) as Obj
}

/** OTLP `KeyValue[]` as an attribute map ({@link attributeMap}). */
export function attributes(list: unknown, depth = 0): Obj {
  const out = attributeMap()
  for (const kv of arr(list)) if (isObj(kv) && typeof kv.key === 'string') out[kv.key] = anyValue(kv.value, depth)
  return out
}

function num(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : NaN
  return Number.isFinite(n) ? n : 0
}

function resourceOf(r: unknown): Record<string, string> {
  const out = attributeMap() as Record<string, string>
  if (!isObj(r)) return out
  for (const [k, v] of Object.entries(attributes(r.attributes))) out[k] = typeof v === 'string' ? v : JSON.stringify(v)
  return out
}

const KINDS: SpanKind[] = ['internal', 'internal', 'server', 'client', 'producer', 'consumer']
function kindOf(v: unknown): SpanKind {
  if (typeof v === 'number') return KINDS[v] ?? 'internal'
  if (typeof v === 'string') {
    const k = v.replace(/^SPAN_KIND_/, '').toLowerCase()
    return (KINDS as string[]).includes(k) ? (k as SpanKind) : 'internal'
  }
  return 'internal'
}

function statusOf(v: unknown): SpanStatus {
  const code = isObj(v) ? v.code : undefined
  if (code === 1 || code === 'STATUS_CODE_OK') return 'ok'
  if (code === 2 || code === 'STATUS_CODE_ERROR') return 'error'
  return 'unset'
}

/** The spans of an `ExportTraceServiceRequest`. */
export function spansOf(request: unknown, fallbackService: string): SpanRecord[] {
  const out: SpanRecord[] = []
  if (!isObj(request)) return out
  for (const rs of arr(request.resourceSpans)) {
    if (!isObj(rs)) continue
    const resource = resourceOf(rs.resource)
    const service = resource['service.name'] ?? fallbackService
    for (const ss of arr(rs.scopeSpans ?? rs.instrumentationLibrarySpans)) {
      if (!isObj(ss)) continue
      for (const s of arr(ss.spans)) {
        if (!isObj(s) || typeof s.traceId !== 'string' || typeof s.spanId !== 'string' || !HEX32.test(s.traceId) || !HEX16.test(s.spanId)) continue
        const start = num(s.startTimeUnixNano)
        const end = s.endTimeUnixNano === undefined || s.endTimeUnixNano === null ? null : num(s.endTimeUnixNano)
        const parent = typeof s.parentSpanId === 'string' && HEX16.test(s.parentSpanId) ? s.parentSpanId.toLowerCase() : null
        const span: SpanRecord = {
          trace_id: s.traceId.toLowerCase(),
          span_id: s.spanId.toLowerCase(),
          parent_span_id: parent,
          name: typeof s.name === 'string' ? s.name : '',
          kind: kindOf(s.kind),
          service_name: service,
          start_time_unix_nano: start,
          end_time_unix_nano: end,
          duration_ms: end === null ? null : Math.max(0, (end - start) / 1e6),
          status: statusOf(s.status),
          attributes: attributes(s.attributes),
          resource,
          events: eventsOf(s.events),
          links: linksOf(s.links),
        }
        if (isObj(s.status) && typeof s.status.message === 'string' && s.status.message !== '') span.status_message = s.status.message
        out.push(span)
      }
    }
  }
  return out
}

/** The events of a span (one pass: no intermediate arrays, an empty list shared by none). */
function eventsOf(list: unknown): SpanRecord['events'] {
  const out: SpanRecord['events'] = []
  if (!Array.isArray(list)) return out
  for (const e of list) if (isObj(e)) out.push({ name: typeof e.name === 'string' ? e.name : '', timestamp_unix_nano: num(e.timeUnixNano), attributes: attributes(e.attributes) })
  return out
}

/** The links of a span with string ids (one pass). */
function linksOf(list: unknown): SpanRecord['links'] {
  const out: SpanRecord['links'] = []
  if (!Array.isArray(list)) return out
  for (const l of list) if (isObj(l) && typeof l.traceId === 'string' && typeof l.spanId === 'string') out.push({ trace_id: l.traceId.toLowerCase(), span_id: l.spanId.toLowerCase(), attributes: attributes(l.attributes) })
  return out
}

const SEVERITY_TEXT = ['UNSPECIFIED', 'TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL']

/** The usual text of a severity number (`INFO` for 9–12 …). */
export function severityText(n: number): string {
  return SEVERITY_TEXT[n <= 0 ? 0 : Math.min(6, Math.ceil(n / 4))]!
}

/**
 * Stores `data` as attributes (§12.2): each top-level field `f` of an object becomes
 * `log.data.f`; anything else the single attribute `log.data`.
 */
export function spreadLogData(target: Obj, data: unknown): void {
  if (data === undefined) return
  if (isObj(data)) for (const [k, v] of Object.entries(data)) target[`log.data.${k}`] = v
  else target['log.data'] = data
}

/** {@link spreadLogData} of an OTLP `AnyValue`: a `kvlistValue`'s members become `log.data.*` without an intermediate object. */
function spreadLogValue(target: Obj, value: unknown): void {
  if (isObj(value) && 'kvlistValue' in value) {
    for (const kv of arr(isObj(value.kvlistValue) ? value.kvlistValue.values : undefined)) if (isObj(kv) && typeof kv.key === 'string') target[`log.data.${kv.key}`] = anyValue(kv.value, 1)
  } else target['log.data'] = anyValue(value)
}

/** The log records of an `ExportLogsServiceRequest`. */
export function logsOf(request: unknown, fallbackService: string, observedNs: number): LogRecord[] {
  const out: LogRecord[] = []
  if (!isObj(request)) return out
  for (const rl of arr(request.resourceLogs)) {
    if (!isObj(rl)) continue
    const resource = resourceOf(rl.resource)
    for (const sl of arr(rl.scopeLogs)) {
      if (!isObj(sl)) continue
      const scope = isObj(sl.scope) ? sl.scope : {}
      const scopeName = typeof scope.name === 'string' ? scope.name : undefined
      const scopeVersion = typeof scope.version === 'string' ? scope.version : undefined
      for (const r of arr(sl.logRecords)) {
        if (!isObj(r)) continue
        // One pass over the key-value list: `log.data` spread into `log.data.*` as it is read (§12.2).
        const attrs = attributeMap()
        for (const kv of arr(r.attributes)) {
          if (!isObj(kv) || typeof kv.key !== 'string') continue
          if (kv.key === 'log.data') spreadLogValue(attrs, kv.value)
          else attrs[kv.key] = anyValue(kv.value)
        }
        const body = anyValue(r.body)
        const severity = Math.max(0, Math.min(24, Math.trunc(num(r.severityNumber))))
        const traceId = typeof r.traceId === 'string' && HEX32.test(r.traceId) ? r.traceId.toLowerCase() : typeof attrs.trace_id === 'string' && HEX32.test(attrs.trace_id) ? attrs.trace_id.toLowerCase() : null
        const spanId = typeof r.spanId === 'string' && HEX16.test(r.spanId) ? r.spanId.toLowerCase() : typeof attrs.span_id === 'string' && HEX16.test(attrs.span_id) ? attrs.span_id.toLowerCase() : null
        const ts = num(r.timeUnixNano) || num(r.observedTimeUnixNano) || observedNs
        // A record's own `service.name` wins; an empty one (the iii Python SDK's `Logger()` without a
        // service name sends "") falls back to the resource's (docs/decisions.md).
        const own = attrs['service.name']
        const service = typeof own === 'string' && own !== '' ? own : resource['service.name'] || fallbackService
        const text = typeof r.severityText === 'string' && r.severityText !== '' ? r.severityText : severityText(severity)
        const line = stripAnsi(typeof body === 'string' ? body : body === null ? '' : JSON.stringify(body))
        // The scope's fields in the object literal when the scope has them, not added after it: an
        // added property goes to a property array of its own, one more object for every record the
        // window keeps (docs/benchmarks.md, issue 20, session 36).
        let record: LogRecord
        if (scopeName === undefined)
          record = { timestamp_unix_nano: ts, observed_timestamp_unix_nano: observedNs, severity_number: severity, severity_text: text, body: line, attributes: attrs, resource, service_name: service, trace_id: traceId, span_id: spanId }
        else if (scopeVersion === undefined)
          record = { timestamp_unix_nano: ts, observed_timestamp_unix_nano: observedNs, severity_number: severity, severity_text: text, body: line, attributes: attrs, resource, service_name: service, trace_id: traceId, span_id: spanId, instrumentation_scope_name: scopeName }
        else
          record = {
            timestamp_unix_nano: ts,
            observed_timestamp_unix_nano: observedNs,
            severity_number: severity,
            severity_text: text,
            body: line,
            attributes: attrs,
            resource,
            service_name: service,
            trace_id: traceId,
            span_id: spanId,
            instrumentation_scope_name: scopeName,
            instrumentation_scope_version: scopeVersion,
          }
        if (scopeName === undefined && scopeVersion !== undefined) record.instrumentation_scope_version = scopeVersion
        out.push(record)
      }
    }
  }
  return out
}

/** Metric points of an `ExportMetricsServiceRequest` (`iii.worker.*` stored as `svc.worker.*`). */
export function metricsOf(request: unknown): Array<{ series: Omit<MetricSeries, 'points'>; point: MetricPoint }> {
  const out: Array<{ series: Omit<MetricSeries, 'points'>; point: MetricPoint }> = []
  if (!isObj(request)) return out
  for (const rm of arr(request.resourceMetrics)) {
    if (!isObj(rm)) continue
    for (const sm of arr(rm.scopeMetrics)) {
      if (!isObj(sm)) continue
      for (const m of arr(sm.metrics)) {
        if (!isObj(m) || typeof m.name !== 'string') continue
        const name = m.name.startsWith('iii.worker.') ? `svc.worker.${m.name.slice(11)}` : m.name
        const type = isObj(m.gauge) ? 'gauge' : isObj(m.sum) ? 'sum' : isObj(m.histogram) ? 'histogram' : undefined
        if (type === undefined) continue
        const series: Omit<MetricSeries, 'points'> = { name, type }
        if (typeof m.unit === 'string' && m.unit !== '') series.unit = m.unit
        if (typeof m.description === 'string' && m.description !== '') series.description = m.description
        for (const p of arr((m[type] as Obj).dataPoints)) {
          if (!isObj(p)) continue
          const value =
            type === 'histogram'
              ? { count: num(p.count), sum: num(p.sum), bucket_counts: arr(p.bucketCounts).map(num), explicit_bounds: arr(p.explicitBounds).map(num) }
              : num(p.asDouble ?? p.asInt)
          out.push({ series, point: { time_unix_nano: num(p.timeUnixNano), value, attributes: attributes(p.attributes) } })
        }
      }
    }
  }
  return out
}

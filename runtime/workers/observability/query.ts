/**
 * The query functions over a store's window (builtins.md §12.5, protocol.md §11.4):
 * `engine::logs::list`, `engine::traces::list`, `engine::traces::tree`, `engine::traces::group_by`.
 * Inputs are validated here; a wrong shape throws `INVALID_ARGUMENTS`.
 */
import { Errors } from 'svc-protocol'
import type { LogRecord, LogsListResult, SpanGroup, SpanGroupsResult, SpanNode, SpanRecord, TraceSummary, TracesListResult, TraceTreeResult } from 'svc-protocol'
import { fullSpan, headFunctionId, headInternal, type SpanHead, type TelemetryStore } from '../../adapters/observability/store.ts'

type Obj = Record<string, unknown>

function input(data: unknown, fn: string): Obj {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidInput(fn, 'the input must be an object')
  return data as Obj
}

function optNumber(o: Obj, key: string, fn: string): number | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'number' || !Number.isFinite(v)) throw Errors.invalidInput(fn, `${key} must be a number`)
  return v
}

function optString(o: Obj, key: string, fn: string): string | undefined {
  const v = o[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw Errors.invalidInput(fn, `${key} must be a string`)
  return v
}

/** `limit` (default 100, 1–1000) and `offset` (default 0). */
function page(o: Obj, fn: string): { limit: number; offset: number } {
  const limit = optNumber(o, 'limit', fn) ?? 100
  const offset = optNumber(o, 'offset', fn) ?? 0
  if (!Number.isInteger(limit) || limit < 0 || limit > 1000) throw Errors.invalidInput(fn, 'limit must be an integer from 0 to 1000')
  if (!Number.isInteger(offset) || offset < 0) throw Errors.invalidInput(fn, 'offset must be a non-negative integer')
  return { limit, offset }
}

/** `engine::logs::list`: `{logs, total, offset, limit}`, newest first. */
export function listLogs(store: TelemetryStore, data: unknown): LogsListResult {
  const fn = 'engine::logs::list'
  const o = input(data, fn)
  const { limit, offset } = page(o, fn)
  const start = optNumber(o, 'start_time', fn)
  const end = optNumber(o, 'end_time', fn)
  const traceId = optString(o, 'trace_id', fn)?.toLowerCase()
  const spanId = optString(o, 'span_id', fn)?.toLowerCase()
  const service = optString(o, 'service_name', fn)?.toLowerCase()
  const severityMin = optNumber(o, 'severity_min', fn)
  const severity = optString(o, 'severity_text', fn)?.toLowerCase()
  const search = optString(o, 'search', fn)?.toLowerCase()
  const startNs = start === undefined ? undefined : start * 1e6
  const endNs = end === undefined ? undefined : end * 1e6
  const all = store.logs()
  const matched: LogRecord[] = []
  for (let i = all.length - 1; i >= 0; i--) {
    const l = all[i]!
    if (startNs !== undefined && l.timestamp_unix_nano < startNs) continue
    if (endNs !== undefined && l.timestamp_unix_nano > endNs) continue
    if (traceId !== undefined && l.trace_id !== traceId) continue
    if (spanId !== undefined && l.span_id !== spanId) continue
    if (service !== undefined && l.service_name.toLowerCase() !== service) continue
    if (severityMin !== undefined && l.severity_number < severityMin) continue
    if (severity !== undefined && l.severity_text.toLowerCase() !== severity) continue
    if (search !== undefined && !l.body.toLowerCase().includes(search)) continue
    matched.push(l)
  }
  return { logs: matched.slice(offset, offset + limit), total: matched.length, offset, limit }
}

/** Longest text filter of `engine::traces::list` (`name`, `service_name`, `function_id`), characters. */
export const MAX_TRACE_FILTER_CHARS = 256

/** Root-span statuses `status` may name (§12.4). */
const STATUSES = new Set(['ok', 'error', 'unset'])

/**
 * Spans grouped by trace, each with its root (the earliest span whose parent is not stored). With
 * `functionId`, only traces one of whose spans has `svc.function.id` equal to it.
 */
/** A trace of {@link summaries}: its root as the window holds it, and the counts of `TraceSummary`. */
interface Summary {
  root: SpanHead
  span_count: number
  error_count: number
  service_names: string[]
}

function summaries(store: TelemetryStore, functionId?: string): Summary[] {
  // Heads, not records: only the roots returned are parsed (spans kept as text, ../../adapters/observability/store.ts).
  const byTrace = new Map<string, SpanHead[]>()
  for (const s of store.heads()) {
    let list = byTrace.get(s.trace_id)
    if (list === undefined) byTrace.set(s.trace_id, (list = []))
    list.push(s)
  }
  const out: Summary[] = []
  for (const spans of byTrace.values()) {
    const ids = new Set(spans.map((s) => s.span_id))
    let root: SpanHead | undefined
    let errors = 0
    let calls = functionId === undefined
    const services = new Set<string>()
    for (const s of spans) {
      if (!calls && headFunctionId(s) === functionId) calls = true
      if (s.status === 'error') errors++
      services.add(s.service_name)
      if ((s.parent_span_id === null || !ids.has(s.parent_span_id)) && (root === undefined || s.start_time_unix_nano < root.start_time_unix_nano)) root = s
    }
    if (root === undefined || !calls) continue
    out.push({ root, span_count: spans.length, error_count: errors, service_names: [...services] })
  }
  return out
}

const isInternal = (s: SpanRecord): boolean => s.attributes['svc.function.kind'] === 'internal'

const SORT_KEYS: Record<string, (s: SpanHead) => number | string> = {
  start_time: (s) => s.start_time_unix_nano,
  duration_ms: (s) => s.duration_ms ?? -1,
  duration: (s) => s.duration_ms ?? -1,
  name: (s) => s.name,
  service_name: (s) => s.service_name,
}

/** An optional text filter of at most {@link MAX_TRACE_FILTER_CHARS} characters. */
function optFilter(o: Obj, key: string, fn: string): string | undefined {
  const v = optString(o, key, fn)
  if (v !== undefined && v.length > MAX_TRACE_FILTER_CHARS) throw Errors.invalidInput(fn, `${key} must be at most ${MAX_TRACE_FILTER_CHARS} characters`)
  return v
}

/**
 * `engine::traces::list` (builtins.md §12.5): `{traces, spans (the same array), total, offset, limit}`.
 * Besides the spec's filters, `function_id` keeps the traces in which that function ran (a span
 * with `svc.function.id` equal to it), which `svc traces --function` reads. Text filters are at most
 * {@link MAX_TRACE_FILTER_CHARS} characters, `status` is `ok`, `error` or `unset`, durations are
 * non-negative ms.
 *
 * @throws {SvcError} `INVALID_ARGUMENTS` for a field of the wrong type or out of those bounds
 */
export function listTraces(store: TelemetryStore, data: unknown): TracesListResult {
  const fn = 'engine::traces::list'
  const o = input(data, fn)
  const { limit, offset } = page(o, fn)
  const traceId = optFilter(o, 'trace_id', fn)?.toLowerCase()
  const name = optFilter(o, 'name', fn)?.toLowerCase()
  const service = optFilter(o, 'service_name', fn)?.toLowerCase()
  const functionId = optFilter(o, 'function_id', fn)
  const status = optString(o, 'status', fn)?.toLowerCase()
  if (status !== undefined && !STATUSES.has(status)) throw Errors.invalidInput(fn, 'status must be ok, error or unset')
  const minD = optNumber(o, 'min_duration_ms', fn)
  const maxD = optNumber(o, 'max_duration_ms', fn)
  if ((minD !== undefined && minD < 0) || (maxD !== undefined && maxD < 0)) throw Errors.invalidInput(fn, 'min_duration_ms and max_duration_ms must be non-negative')
  const start = optNumber(o, 'start_time', fn)
  const end = optNumber(o, 'end_time', fn)
  const sortBy = optString(o, 'sort_by', fn) ?? 'start_time'
  const order = optString(o, 'sort_order', fn) ?? 'desc'
  // Own keys only: `__proto__` or `constructor` must not reach the prototype.
  const key = Object.hasOwn(SORT_KEYS, sortBy) ? SORT_KEYS[sortBy] : undefined
  if (key === undefined) throw Errors.invalidInput(fn, 'sort_by must be start_time, duration_ms, name or service_name')
  if (order !== 'asc' && order !== 'desc') throw Errors.invalidInput(fn, 'sort_order must be asc or desc')
  const attrs = o.attributes
  if (attrs !== undefined && attrs !== null && (typeof attrs !== 'object' || Array.isArray(attrs))) throw Errors.invalidInput(fn, 'attributes must be an object')
  const includeInternal = o.include_internal === true
  // Filtered and sorted on the roots' heads: only the page returned is parsed (the attributes
  // filter parses the roots it looks at).
  const matched = summaries(store, functionId).filter(({ root: t }) => {
    if (traceId !== undefined && t.trace_id !== traceId) return false
    if (!includeInternal && traceId === undefined && headInternal(t)) return false
    if (name !== undefined && !t.name.toLowerCase().includes(name)) return false
    if (service !== undefined && !t.service_name.toLowerCase().includes(service)) return false
    if (status !== undefined && t.status !== status) return false
    if (minD !== undefined && (t.duration_ms === null || t.duration_ms < minD)) return false
    if (maxD !== undefined && (t.duration_ms === null || t.duration_ms > maxD)) return false
    const endNs = t.end_time_unix_nano ?? Number.MAX_VALUE
    if (start !== undefined && endNs < start * 1e6) return false
    if (end !== undefined && t.start_time_unix_nano > end * 1e6) return false
    // Own keys only: `constructor` or `__proto__` match what a sender set, never the prototype's.
    if (attrs) {
      const attributes = fullSpan(t).attributes
      for (const [k, v] of Object.entries(attrs as Obj)) if (!Object.hasOwn(attributes, k) || attributes[k] !== v) return false
    }
    return true
  })
  const sign = order === 'asc' ? 1 : -1
  matched.sort((a, b) => {
    const x = key(a.root)
    const y = key(b.root)
    return (x < y ? -1 : x > y ? 1 : 0) * sign
  })
  const traces: TraceSummary[] = matched.slice(offset, offset + limit).map(({ root, ...counts }) => ({ ...fullSpan(root), ...counts }))
  return { traces, spans: traces, total: matched.length, offset, limit }
}

/** `engine::traces::tree`: `{trace_id, roots}`; spans whose parent is not stored are roots. */
export function traceTree(store: TelemetryStore, data: unknown): TraceTreeResult {
  const fn = 'engine::traces::tree'
  const traceId = optString(input(data, fn), 'trace_id', fn)
  if (traceId === undefined || traceId === '') throw Errors.invalidInput(fn, 'trace_id is required')
  const nodes = new Map<string, SpanNode>()
  for (const s of store.trace(traceId.toLowerCase())) nodes.set(s.span_id, { ...s, children: [] })
  const roots: SpanNode[] = []
  for (const n of nodes.values()) {
    const parent = n.parent_span_id === null ? undefined : nodes.get(n.parent_span_id)
    if (parent === undefined || parent === n) roots.push(n)
    else parent.children.push(n)
  }
  const byStart = (a: SpanNode, b: SpanNode): number => a.start_time_unix_nano - b.start_time_unix_nano
  for (const n of nodes.values()) n.children.sort(byStart)
  roots.sort(byStart)
  return { trace_id: traceId.toLowerCase(), roots }
}

/** `engine::traces::group_by` (protocol.md §11.4): spans with `attribute`, grouped by its value, largest groups first. */
export function groupBy(store: TelemetryStore, data: unknown): SpanGroupsResult {
  const fn = 'engine::traces::group_by'
  const o = input(data, fn)
  const attribute = optString(o, 'attribute', fn)
  if (attribute === undefined || attribute === '') throw Errors.invalidInput(fn, 'attribute is required')
  const since = optNumber(o, 'since_ms', fn)
  const { limit } = page({ limit: o.limit }, fn)
  const includeInternal = o.include_internal === true
  const sinceNs = since === undefined ? undefined : since * 1e6
  const groups = new Map<string, SpanGroup & { traces: Set<string> }>()
  for (const s of store.spans()) {
    if (!Object.hasOwn(s.attributes, attribute)) continue
    if (!includeInternal && isInternal(s)) continue
    if (sinceNs !== undefined && s.start_time_unix_nano < sinceNs) continue
    const value = s.attributes[attribute]
    const key = JSON.stringify(value) ?? 'null'
    let g = groups.get(key)
    const ms = s.start_time_unix_nano / 1e6
    if (g === undefined) groups.set(key, (g = { value, trace_ids: [], traces: new Set(), span_count: 0, first_seen_ms: ms, last_seen_ms: ms, duration_ms: 0, error_count: 0 }))
    g.traces.add(s.trace_id)
    g.span_count++
    if (ms < g.first_seen_ms) g.first_seen_ms = ms
    if (ms > g.last_seen_ms) g.last_seen_ms = ms
    g.duration_ms += s.duration_ms ?? 0
    if (s.status === 'error') g.error_count++
  }
  const list = [...groups.values()].sort((a, b) => b.span_count - a.span_count).slice(0, limit)
  return { groups: list.map(({ traces, ...g }) => ({ ...g, trace_ids: [...traces] })) }
}

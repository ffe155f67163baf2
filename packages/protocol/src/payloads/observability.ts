/**
 * Records and function payloads of the observability worker (`svc-observability`, builtins.md §12):
 * the spans, log records and metrics it stores and answers (§12.4, §12.5), and the results of its
 * `engine::logs::*`, `engine::traces::*`, `engine::metrics::list` and `engine::runs::list`
 * functions (protocol.md §11.4). Types only: the engine's observability worker and the console both
 * use these, so a field added here reaches both.
 *
 * @example
 * import type { RunsListResult } from 'svc-protocol'
 * const page = await client.trigger<RunsListInput, RunsListResult>({
 *   function_id: 'engine::runs::list', payload: { function_id: 'orders::create', status: 'error' },
 * })
 */

/** Span kinds of §12.4 (OTLP `SPAN_KIND_*` lower-cased, `unspecified` read as `internal`). */
export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer'

/** `ok`, `error` or `unset` (§12.4). */
export type SpanStatus = 'ok' | 'error' | 'unset'

/** An event of a span (§12.4); `timestamp_unix_nano` in Unix nanoseconds. */
export interface SpanEvent {
  name: string
  timestamp_unix_nano: number
  attributes: Record<string, unknown>
  /** Attributes dropped or truncated by the size limits; absent when none. */
  dropped_attributes_count?: number
}

/** A link of a span to another span (§12.4); ids lower-case hex. */
export interface SpanLink {
  trace_id: string
  span_id: string
  attributes: Record<string, unknown>
  /** Attributes dropped or truncated by the size limits; absent when none. */
  dropped_attributes_count?: number
}

/**
 * A span (§12.4). Ids are lower-case hex (trace 32, span 16 characters). Times are Unix
 * nanoseconds as JSON numbers (microsecond precision). `end_time_unix_nano` and `duration_ms`
 * are null while the span is unfinished.
 */
export interface SpanRecord {
  trace_id: string
  span_id: string
  parent_span_id: string | null
  name: string
  kind: SpanKind
  service_name: string
  start_time_unix_nano: number
  end_time_unix_nano: number | null
  duration_ms: number | null
  status: SpanStatus
  status_message?: string
  attributes: Record<string, unknown>
  resource: Record<string, string>
  events: SpanEvent[]
  links: SpanLink[]
  /**
   * Attributes dropped or truncated by the observability worker's size limits (OTLP's field of the
   * same name); absent when none. Likewise on events and links.
   */
  dropped_attributes_count?: number
  /** Events dropped by the size limits; absent when none. */
  dropped_events_count?: number
  /** Links dropped by the size limits; absent when none. */
  dropped_links_count?: number
}

/** A log record (§12.4): payload of the `log` trigger and element of `engine::logs::list`. */
export interface LogRecord {
  timestamp_unix_nano: number
  observed_timestamp_unix_nano: number
  /** 1–4 trace, 5–8 debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal; 0 unspecified. */
  severity_number: number
  severity_text: string
  body: string
  attributes: Record<string, unknown>
  resource: Record<string, string>
  service_name: string
  trace_id: string | null
  span_id: string | null
  instrumentation_scope_name?: string
  instrumentation_scope_version?: string
  /** Attributes dropped or truncated by the observability worker's size limits (OTLP's field); absent when none. */
  dropped_attributes_count?: number
}

/** One point of a metric (§12.5 `engine::metrics::list`); `time_unix_nano` in Unix nanoseconds. */
export interface MetricPoint {
  time_unix_nano: number
  value: unknown
  attributes: Record<string, unknown>
}

/** A metric with its points (§12.5). */
export interface MetricSeries {
  name: string
  type: 'gauge' | 'sum' | 'histogram'
  unit?: string
  description?: string
  points: MetricPoint[]
}

/** `engine::metrics::list` result (§12.5). */
export interface MetricsListResult {
  metrics: MetricSeries[]
}

/** `engine::logs::list` input (§12.5); every filter optional; times in Unix ms. */
export interface LogsListInput {
  /** 0–1000, default 100. */
  limit?: number
  offset?: number
  start_time?: number
  end_time?: number
  trace_id?: string
  span_id?: string
  /** Exact, ignoring case. */
  service_name?: string
  /** A severity number, 0–24. */
  severity_min?: number
  /** Exact, ignoring case. */
  severity_text?: string
  /** Case-insensitive substring of the body. */
  search?: string
}

/** `engine::log::<level>` input (`info`, `warn`…): a log record written by the caller. */
export interface LogInput {
  message: string
  /** Stored as attributes `log.data.<field>` (non-object data as `log.data`). */
  data?: unknown
  trace_id?: string
  span_id?: string
  /** Default: the calling worker's name. */
  service_name?: string
}

/** `engine::metrics::list` input: every filter optional; times in Unix ms. */
export interface MetricsListInput {
  metric_name?: string
  /** Points whose `worker.name` attribute is this worker. */
  worker?: string
  start_time?: number
  end_time?: number
}

/** `engine::logs::list` result (§12.5): a page of the matching records, newest first. */
export interface LogsListResult {
  logs: LogRecord[]
  /** Every stored record matching the filters. */
  total: number
  offset: number
  limit: number
}

/** An entry of `engine::traces::list`: the root span of a trace plus counts over the whole trace. */
export type TraceSummary = SpanRecord & { span_count: number; error_count: number; service_names: string[] }

/** `engine::traces::list` input (protocol.md §11.4); every filter optional; times in Unix ms. */
export interface TracesListInput {
  trace_id?: string
  /** Case-insensitive substring of the root span's name (at most 256 characters, like the next two). */
  name?: string
  service_name?: string
  /** Traces in which this function ran. */
  function_id?: string
  /** Of the root span. */
  status?: SpanStatus
  min_duration_ms?: number
  max_duration_ms?: number
  start_time?: number
  end_time?: number
  /** Every pair must equal a root-span attribute. */
  attributes?: Record<string, unknown>
  /** Show traces whose root span is internal; default false. */
  include_internal?: boolean
  /** Default `start_time`. */
  sort_by?: 'start_time' | 'duration_ms' | 'duration' | 'name' | 'service_name'
  /** Default `desc`. */
  sort_order?: 'desc' | 'asc'
  offset?: number
  /** 0–1000, default 100. */
  limit?: number
}

/** `engine::traces::list` result; `spans` is the same list as `traces` (the iii engine's name). */
export interface TracesListResult {
  traces: TraceSummary[]
  spans: TraceSummary[]
  total: number
  offset: number
  limit: number
}

/** A node of `engine::traces::tree`: a span with its children, oldest first. */
export type SpanNode = SpanRecord & { children: SpanNode[] }

/** `engine::traces::tree {trace_id}` result: the trace's spans as a forest. */
export interface TraceTreeResult {
  trace_id: string
  roots: SpanNode[]
}

/** `engine::traces::tree` input. */
export interface TraceTreeInput {
  trace_id: string
}

/** `engine::traces::group_by` input: spans with `attribute`, grouped by its value. */
export interface SpanGroupsInput {
  attribute: string
  /** Unix ms. */
  since_ms?: number
  /** 0–1000, default 100. */
  limit?: number
  /** Also count spans of internal functions; default false. */
  include_internal?: boolean
}

/** One group of `engine::traces::group_by` (protocol.md §11.4). */
export interface SpanGroup {
  value: unknown
  trace_ids: string[]
  span_count: number
  /** Unix ms. */
  first_seen_ms: number
  /** Unix ms. */
  last_seen_ms: number
  /** Sum of the finished spans' durations, ms. */
  duration_ms: number
  error_count: number
}

/** `engine::traces::group_by` result: largest groups first. */
export interface SpanGroupsResult {
  groups: SpanGroup[]
}

/** `engine::logs::clear` and `engine::traces::clear` result: the records removed. */
export interface ClearedResult {
  cleared: number
}

/** A recorded payload of a run (`engine::runs::list`): its JSON text, maybe cut. */
export interface RunPayload {
  /** JSON text (when `truncated`, a prefix of it, so not always valid JSON); at most 4096 bytes. */
  json: string
  /** Cut by the engine's preview, by the SDK's cap or by the store's size limits. */
  truncated: boolean
}

/** `engine::runs::list` input (builtins.md §12.5, issue 21). */
export interface RunsListInput {
  function_id: string
  /** 1–500, default 50. */
  limit?: number
  status?: SpanStatus
  /** Unix ms: runs started strictly before it (the next page). */
  before_ms?: number
}

/** One invocation of a function, from its `execute <function_id>` span (`engine::runs::list`). */
export interface Run {
  trace_id: string
  span_id: string
  function_id: string
  status: SpanStatus
  /** The error message of a failed run. */
  status_message?: string
  /**
   * The catalogue code a failed run ended with (packages/protocol/src/errors.ts: `cancelled`,
   * `TIMEOUT`, `invocation_failed`…): the engine span's `svc.error.code`, else the `exception.type`
   * of the SDK span's `exception` event; null for a run that did not fail or recorded no code.
   */
  error_code: string | null
  /** Unix ms of the span's start. */
  started_at_ms: number
  /** null while the span is unfinished. */
  duration_ms: number | null
  /** Who called: the calling function's id, else the parent span's name (`POST /orders`, `cron …`); null for a root. */
  caller: string | null
  /** The service (worker) that ran it. */
  service_name: string
  input: RunPayload | null
  output: RunPayload | null
  /** The trace this run re-runs (the span attribute `svc.rerun_of`, set by the console's re-run). */
  rerun_of: string | null
}

/** `engine::runs::list` result: `runs` newest first, `total` every stored run matching the filters. */
export interface RunsListResult {
  runs: Run[]
  total: number
}

/** One component of `engine::health::check`: `healthy`, `degraded`, `disabled`…; some add their own figures. */
export interface HealthComponent {
  status: string
  detail?: string
  [field: string]: unknown
}

/** `engine::health::check` result: `degraded` when any component is. */
export interface HealthCheckResult {
  status: 'healthy' | 'degraded'
  version: string
  /** RFC 3339. */
  timestamp: string
  /** `engine`, `observability`, `otlp_export`, and `fleet`, `redis` where they run. */
  components: Record<string, HealthComponent>
}

/** `engine::baggage::get {key}` result: null when the invocation's baggage has no such entry. */
export interface BaggageGetResult {
  value: string | null
}

/** `engine::baggage::set {key, value}` result: the updated W3C `baggage` header value. */
export interface BaggageSetResult {
  baggage: string
}

/** `engine::baggage::get_all` result. */
export interface BaggageEntriesResult {
  entries: Record<string, string>
}

/**
 * Shapes of the backend endpoints (cli.md §7.1) and of the engine and built-in function results the
 * pages read (protocol.md §11, builtins.md §4–§12). Only the fields the console uses are typed;
 * everything else is kept as `unknown` so that additive fields never break a page.
 */
import type { SpanRecord as Span } from 'svc-protocol'

/** `GET /api/info` (cli.md §7.1). */
export interface ConsoleInfo {
  version: string
  engine_url: string
  http_url: string | null
  stream_url: string | null
  connected: boolean
}

/** One worker of `GET /api/microvms`: its name and its microVM's host RSS, bytes (cli.md §5.7). */
export interface ConsoleMicrovm {
  name: string
  vm_rss_bytes: number
}

/** Error body of a failed invocation: `{code, message, stacktrace?}` (protocol.md §7). */
export interface InvocationErrorBody {
  code: string
  message: string
  stacktrace?: string
  [extra: string]: unknown
}

/** `POST /api/invoke` result (cli.md §7.1); `duration_ms` is measured by the backend. */
export type InvokeResult<T = unknown> =
  | { ok: true; result: T; duration_ms: number }
  | { ok: false; error: InvocationErrorBody; duration_ms: number }

/** `POST /api/invoke` body. */
export interface InvokeRequest {
  function_id: string
  payload: unknown
  namespace?: string
  timeout_ms?: number
  /** false: no trace is recorded for the call (the pages' own reads); default true. */
  trace?: boolean
}

/** `POST /api/rerun` body: an invoke in a new trace marked as a re-run of `rerun_of` (a trace id). */
export interface RerunRequest {
  function_id: string
  payload: unknown
  namespace?: string
  timeout_ms?: number
  /** The old run's trace id; absent for a payload with no trace (a dead letter). */
  rerun_of?: string
}

/** `POST /api/rerun` result: the invoke envelope, the new run's trace id and the old one. */
export type RerunResult<T = unknown> = InvokeResult<T> & { trace_id?: string; rerun_of?: string | null }

/**
 * `engine::runs::list` (builtins.md §12.5): the runs of one function, each with its status, error
 * code, timings, caller and payload previews — svc-protocol's types, as the engine answers them.
 */
export type { Run, RunPayload, RunsListResult as RunPage } from 'svc-protocol'

/** `GET /api/stream-groups`: every stream group with its item count (null: not counted, or `error`). */
export interface StreamGroups {
  streams: { stream_name: string; groups: { group_id: string; items: number | null; error?: string }[] }[]
  group_count: number
  truncated: boolean
}

/** `POST /api/http` body: a request the backend performs against the HTTP listener. */
export interface HttpTestRequest {
  method: string
  path: string
  query?: Record<string, string | string[]>
  headers?: Record<string, string>
  body?: unknown
}

/** `POST /api/http` result. */
export interface HttpTestResponse {
  status: number
  headers: Record<string, string | string[]>
  body: unknown
  duration_ms: number
}

/** Channels of `GET /api/live` (cli.md §7.1). */
export type LiveChannel = 'workers' | 'functions' | 'logs' | 'state' | 'configuration' | 'traces' | 'connection'

/** WorkerSummary (protocol.md §11.1); every descriptive field is nullable. */
export interface WorkerSummary {
  id: string
  name: string | null
  description: string | null
  version: string | null
  namespace: string | null
  runtime: string | null
  os: string | null
  pid: number | null
  isolation: string | null
  ip_address: string | null
  status: 'connected' | 'available' | string
  function_count: number
  connected_at_ms: number | null
  active_invocations: number
  /** In a fleet: the engine the worker is connected to (issue 19; absent on an engine alone). */
  engine?: string
}

/** WorkerDetail: a WorkerSummary plus the engine's view of it. */
export interface WorkerDetail extends WorkerSummary {
  internal: boolean
  latest_metrics?: Record<string, number>
  listen_urls?: string[]
  last_config_error?: string
}

/** FunctionSummary (protocol.md §11.1). */
export interface FunctionSummary {
  function_id: string
  namespace: string
  worker_name: string | null
  description?: string
  metadata?: Record<string, unknown>
  replica_count: number
  /** In a fleet: the engines its replicas' workers are connected to, sorted (issue 19). */
  engines?: string[]
}

/** FunctionDetail (protocol.md §11.1). */
export interface FunctionDetail extends FunctionSummary {
  request_schema?: JsonSchema
  response_schema?: JsonSchema
  invocation?: { url: string; method?: string }
  /** `engine`: in a fleet, the engine each replica's worker is connected to (issue 19). */
  replicas: { worker_id: string; worker_name: string | null; engine?: string }[]
  registered_triggers: { id: string; trigger_type: string; config: unknown; status: string }[]
}

/**
 * `engine::fleet::list` (issue 19), the engine's own payload types. Everything in `engines[]` but
 * the answering engine's own row came from other engines over NATS: read it through `readFleet`
 * (pages/fleet/fleet.ts) before showing it.
 */
export type { FleetEngineInfo, FleetListResult } from 'svc-protocol'

/** TriggerTypeSummary (protocol.md §11.1). */
export interface TriggerTypeSummary {
  id: string
  namespace: string
  worker_name: string | null
  description: string | null
}

/** RegisteredTriggerSummary (protocol.md §11.1). */
export interface RegisteredTrigger {
  id: string
  trigger_type: string
  function_id: string
  namespace: string
  worker_name: string | null
  status: 'active' | 'pending' | 'failed' | string
  config: Record<string, unknown> | null
  config_summary: string
}

/** `engine::workers::info` result. */
export interface WorkerInfo {
  worker: WorkerDetail
  functions: FunctionSummary[]
  trigger_types: TriggerTypeSummary[]
  registered_triggers: RegisteredTrigger[]
  matching_ids: string[]
}

/** A metric of `engine::metrics::list` (builtins.md §12.5): svc-protocol's; a point's `value` is a number for gauges and sums. */
export type { MetricSeries as Metric, MetricsListResult } from 'svc-protocol'

/**
 * A log record and a span as the observability worker stores and answers them (builtins.md §12.4),
 * `engine::logs::list`'s page, `engine::traces::list`'s entries and `engine::traces::tree`'s nodes:
 * svc-protocol's types.
 */
export type { LogRecord, LogsListResult as LogPage, SpanNode, SpanRecord as Span, TraceSummary } from 'svc-protocol'

/**
 * The queue worker's listings (builtins.md §7.3): `engine::queue::list_topics`,
 * `engine::queue::topic_stats`, `engine::queue::dlq_topics` and a dead-lettered message of
 * `engine::queue::dlq_messages` — svc-protocol's types.
 */
export type { DlqMessage, DlqTopic, QueueTopic, QueueTopicStats as TopicStats } from 'svc-protocol'

/** An entry of `configuration::list` (builtins.md §11.2). */
export interface ConfigurationEntry {
  id: string
  name: string
  description: string
  schema: JsonSchema
  metadata?: Record<string, unknown>
}

/** A JSON Schema (or a protocol FormatSchema, which is a compatible subset). */
export interface JsonSchema {
  type?: string | string[]
  description?: string
  title?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  default?: unknown
  examples?: unknown[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  exclusiveMaximum?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  minItems?: number
  maxItems?: number
  oneOf?: JsonSchema[]
  anyOf?: JsonSchema[]
  allOf?: JsonSchema[]
  [keyword: string]: unknown
}

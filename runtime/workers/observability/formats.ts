/**
 * Request and result schemas of the observability worker's functions and of the `log` and `trace`
 * trigger types (builtins.md §12.4–§12.6, protocol.md §11.4): registered with them, reported by
 * `engine::functions::info` and in docs/reference/functions.md. Registration-time data only.
 */
import type { FormatSchema } from 'svc-protocol'
import { NO_RESULT, pageResult } from '../shared/formats.ts'

const STRING = { type: 'string' } as const
const NULLABLE_STRING = { type: ['string', 'null'] } as const
const COUNT = { type: 'integer', minimum: 0 } as const
const UNIX_NANO = { type: 'number', description: 'Unix nanoseconds (no precision finer than a microsecond)' } as const
const UNIX_MS = { type: 'integer', description: 'Unix milliseconds' } as const
const OFFSET = { ...COUNT, default: 0 } as const
const LIMIT = { type: 'integer', minimum: 0, maximum: 1000, default: 100 } as const
const SPAN_STATUS = { type: 'string', enum: ['ok', 'error', 'unset'] } as const
const INCLUDE_INTERNAL = { type: 'boolean', default: false, description: 'also count spans of internal functions' } as const

function object(properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}): FormatSchema {
  return { type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...extra }
}

/** A log record (§12.4): payload of the `log` trigger, element of `engine::logs::list`. */
export const LOG_RECORD = object(
  {
    timestamp_unix_nano: UNIX_NANO,
    observed_timestamp_unix_nano: UNIX_NANO,
    severity_number: { type: 'integer', minimum: 0, maximum: 24, description: '1–4 trace, 5–8 debug, 9–12 info, 13–16 warn, 17–20 error, 21–24 fatal; 0 unspecified' },
    severity_text: STRING,
    body: STRING,
    attributes: { type: 'object', description: 'includes log.data.*' },
    resource: { type: 'object', additionalProperties: STRING },
    service_name: STRING,
    trace_id: NULLABLE_STRING,
    span_id: NULLABLE_STRING,
    instrumentation_scope_name: STRING,
    instrumentation_scope_version: STRING,
    dropped_attributes_count: { ...COUNT, description: 'attributes dropped or truncated by the size limits; absent when none' },
  },
  ['timestamp_unix_nano', 'observed_timestamp_unix_nano', 'severity_number', 'severity_text', 'body', 'attributes', 'resource', 'service_name', 'trace_id', 'span_id'],
)

const ATTRIBUTES = { type: 'object' } as const
const DROPPED_ATTRIBUTES = { ...COUNT, description: 'attributes dropped or truncated by the size limits; absent when none' } as const

/** A span (§12.4). */
export const SPAN = object(
  {
    trace_id: { type: 'string', description: 'lower-case hex' },
    span_id: { type: 'string', description: 'lower-case hex' },
    parent_span_id: NULLABLE_STRING,
    name: STRING,
    kind: { type: 'string', enum: ['internal', 'server', 'client', 'producer', 'consumer'] },
    service_name: STRING,
    start_time_unix_nano: UNIX_NANO,
    end_time_unix_nano: { type: ['number', 'null'], description: 'null while the span is unfinished' },
    duration_ms: { type: ['number', 'null'], description: 'null while the span is unfinished' },
    status: SPAN_STATUS,
    status_message: STRING,
    attributes: ATTRIBUTES,
    resource: { type: 'object', additionalProperties: STRING },
    events: { type: 'array', items: object({ name: STRING, timestamp_unix_nano: UNIX_NANO, attributes: ATTRIBUTES, dropped_attributes_count: DROPPED_ATTRIBUTES }, ['name', 'timestamp_unix_nano', 'attributes']) },
    links: { type: 'array', items: object({ trace_id: STRING, span_id: STRING, attributes: ATTRIBUTES, dropped_attributes_count: DROPPED_ATTRIBUTES }, ['trace_id', 'span_id', 'attributes']) },
    dropped_attributes_count: DROPPED_ATTRIBUTES,
    dropped_events_count: { ...COUNT, description: 'events dropped by the size limits; absent when none' },
    dropped_links_count: { ...COUNT, description: 'links dropped by the size limits; absent when none' },
  },
  ['trace_id', 'span_id', 'parent_span_id', 'name', 'kind', 'service_name', 'start_time_unix_nano', 'end_time_unix_nano', 'duration_ms', 'status', 'attributes', 'resource', 'events', 'links'],
)

/** An entry of `traces`: the root span of a trace plus counts (§12.5). */
const TRACE_SUMMARY = object(
  { ...SPAN.properties, span_count: COUNT, error_count: COUNT, service_names: { type: 'array', items: STRING } },
  [...SPAN.required!, 'span_count', 'error_count', 'service_names'],
)

/** `{cleared}` of the clear functions. */
const CLEARED = object({ cleared: { ...COUNT, description: 'number of records removed' } }, ['cleared'])

const LOG_CALL = object(
  {
    message: STRING,
    data: { description: 'stored as attributes log.data.<field> (non-object data as log.data)' },
    trace_id: STRING,
    span_id: STRING,
    service_name: { type: 'string', description: 'default: the calling worker\'s name' },
  },
  ['message'],
)

const METRIC_POINT = object({ time_unix_nano: UNIX_NANO, value: { description: 'a number; for histograms {count, sum, bucket_counts, explicit_bounds}' }, attributes: ATTRIBUTES }, ['time_unix_nano', 'value', 'attributes'])

/** Request and result of each function, by id; `engine::log::<level>` share one. */
export function observabilityFunctionFormats(id: string): { request_format: FormatSchema; response_format: FormatSchema } | undefined {
  if (id.startsWith('engine::log::')) return { request_format: LOG_CALL, response_format: NO_RESULT }
  return OBSERVABILITY_FUNCTION_FORMATS[id]
}

const OBSERVABILITY_FUNCTION_FORMATS: Record<string, { request_format: FormatSchema; response_format: FormatSchema }> = {
  'engine::logs::list': {
    request_format: object(
      {
        limit: LIMIT,
        offset: OFFSET,
        start_time: UNIX_MS,
        end_time: UNIX_MS,
        trace_id: STRING,
        span_id: STRING,
        service_name: { type: 'string', description: 'exact, ignoring case' },
        severity_min: { type: 'integer', minimum: 0, maximum: 24, description: 'a severity number' },
        severity_text: { type: 'string', description: 'exact, ignoring case' },
        search: { type: 'string', description: 'case-insensitive substring of the body' },
      },
      [],
      { examples: [{ limit: 100 }] },
    ),
    response_format: { ...pageResult('logs', LOG_RECORD), description: 'newest first' },
  },
  'engine::logs::clear': { request_format: object({}), response_format: CLEARED },
  'engine::traces::list': {
    request_format: object(
      {
        trace_id: { type: 'string', maxLength: 256, description: 'one trace' },
        name: { type: 'string', maxLength: 256, description: 'case-insensitive substring of the root span\'s name' },
        service_name: { type: 'string', maxLength: 256, description: 'case-insensitive substring of the root span\'s service' },
        function_id: { type: 'string', maxLength: 256, description: 'traces in which this function ran (a span with svc.function.id equal to it)' },
        status: { ...SPAN_STATUS, description: 'of the root span' },
        min_duration_ms: { type: 'number', minimum: 0 },
        max_duration_ms: { type: 'number', minimum: 0 },
        start_time: { ...UNIX_MS, description: 'traces overlapping the window (Unix ms)' },
        end_time: { ...UNIX_MS, description: 'traces overlapping the window (Unix ms)' },
        attributes: { type: 'object', description: 'every pair must equal a root-span attribute' },
        include_internal: { type: 'boolean', default: false, description: 'show traces whose root span is internal' },
        sort_by: { type: 'string', enum: ['start_time', 'duration_ms', 'duration', 'name', 'service_name'], default: 'start_time' },
        sort_order: { type: 'string', enum: ['desc', 'asc'], default: 'desc' },
        offset: OFFSET,
        limit: LIMIT,
      },
      [],
      { examples: [{ limit: 100 }] },
    ),
    response_format: (() => {
      const page = pageResult('traces', TRACE_SUMMARY)
      return { ...page, required: [...page.required!, 'spans'], properties: { ...page.properties, spans: { type: 'array', items: TRACE_SUMMARY, description: 'the same array as traces (compatibility)' } } }
    })(),
  },
  'engine::traces::tree': {
    request_format: object({ trace_id: STRING }, ['trace_id']),
    response_format: object(
      { trace_id: STRING, roots: { type: 'array', items: { $ref: '#/$defs/span_node' }, description: 'spans whose parent is not stored; [] for an unknown trace' } },
      ['trace_id', 'roots'],
      {
        $defs: {
          span_node: {
            ...SPAN,
            required: [...SPAN.required!, 'children'],
            properties: { ...SPAN.properties, children: { type: 'array', items: { $ref: '#/$defs/span_node' }, description: 'sorted by start time' } },
          },
        },
      },
    ),
  },
  'engine::traces::group_by': {
    request_format: object({ attribute: { type: 'string', minLength: 1 }, since_ms: UNIX_MS, limit: LIMIT, include_internal: INCLUDE_INTERNAL }, ['attribute']),
    response_format: object(
      {
        groups: {
          type: 'array',
          description: 'largest groups first',
          items: object(
            { value: {}, trace_ids: { type: 'array', items: STRING }, span_count: COUNT, first_seen_ms: UNIX_MS, last_seen_ms: UNIX_MS, duration_ms: { type: 'number', description: 'sum of the finished spans\' durations' }, error_count: COUNT },
            ['value', 'trace_ids', 'span_count', 'first_seen_ms', 'last_seen_ms', 'duration_ms', 'error_count'],
          ),
        },
      },
      ['groups'],
    ),
  },
  'engine::traces::clear': { request_format: object({}), response_format: CLEARED },
  'engine::metrics::list': {
    request_format: object(
      { metric_name: STRING, worker: { type: 'string', description: 'filters points by their worker.name attribute' }, start_time: UNIX_MS, end_time: UNIX_MS },
      [],
      { examples: [{}] },
    ),
    response_format: object(
      {
        metrics: {
          type: 'array',
          items: object(
            { name: STRING, type: { type: 'string', enum: ['gauge', 'sum', 'histogram'] }, unit: STRING, description: STRING, points: { type: 'array', items: METRIC_POINT } },
            ['name', 'type', 'points'],
          ),
        },
      },
      ['metrics'],
    ),
  },
  'engine::baggage::get': {
    request_format: object({ key: { type: 'string', minLength: 1 } }, ['key']),
    response_format: object({ value: { ...NULLABLE_STRING, description: 'null when the invocation\'s baggage has no such entry' } }, ['value']),
  },
  'engine::baggage::set': {
    request_format: object({ key: { type: 'string', minLength: 1 }, value: STRING }, ['key', 'value']),
    response_format: object({ baggage: { type: 'string', description: 'the updated W3C baggage header value' } }, ['baggage']),
  },
  'engine::baggage::get_all': {
    request_format: object({}),
    response_format: object({ entries: { type: 'object', additionalProperties: STRING } }, ['entries']),
  },
  'engine::health::check': {
    request_format: object({}),
    response_format: object(
      {
        status: { type: 'string', enum: ['healthy', 'degraded'] },
        version: STRING,
        timestamp: { type: 'string', format: 'date-time' },
        components: { type: 'object', additionalProperties: object({ status: STRING, detail: STRING }, ['status']) },
      },
      ['status', 'version', 'timestamp', 'components'],
    ),
  },
}

/** Trigger types `log` and `trace` (§12.6). */
export const LOG_TRIGGER_FORMATS = {
  trigger_request_format: object({
    level: { type: 'string', enum: ['all', 'debug', 'info', 'warn', 'error'], default: 'all', description: 'minimum severity (any case): debug ≥ 5, info ≥ 9, warn ≥ 13, error ≥ 17; all delivers everything' },
  }),
  call_request_format: LOG_RECORD,
}

export const TRACE_TRIGGER_FORMATS = {
  trigger_request_format: object({
    service_name: { type: 'string', description: 'case-insensitive filter on the root span\'s service' },
    status: { ...SPAN_STATUS, description: 'case-insensitive filter on the root span\'s status' },
  }),
  call_request_format: object({ trace_ids: { type: 'array', items: STRING, description: 'traces that gained spans, batched over about 300 ms' } }, ['trace_ids']),
}

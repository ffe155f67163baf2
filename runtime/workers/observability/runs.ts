/**
 * `engine::runs::list` (builtins.md §12.5, issue 21 "In the console"): the recent invocations of
 * one function, read from the `execute <function_id>` spans in the store — an SDK's handler span
 * or the engine's span of a function it serves — with status, timings, caller and the payloads the
 * SDK recorded as span events (`svc.invocation.input`/`svc.invocation.output`, protocol.md §10.1).
 *
 * Payloads are previews: at most {@link RUN_PAYLOAD_PREVIEW_BYTES} of their JSON, cut on a UTF-8
 * boundary and marked `truncated`; the whole recorded value is on the span (`engine::traces::tree`).
 * The store's size limits apply before (a value the limiter truncated is marked too).
 */
import { Errors } from 'svc-protocol'
import type { FormatSchema, Run, RunPayload, RunsListResult, SpanRecord } from 'svc-protocol'
import { fullSpan, type SpanHead, type TelemetryStore } from '../../adapters/observability/store.ts'

/** Largest payload preview of a run, bytes of JSON (the input and the output each). */
export const RUN_PAYLOAD_PREVIEW_BYTES = 4096
/** Default and largest `limit` of `engine::runs::list`. */
export const RUNS_DEFAULT_LIMIT = 50
export const RUNS_MAX_LIMIT = 500

const STATUSES = new Set(['ok', 'error', 'unset'])

/**
 * `engine::runs::list {function_id, limit?, status?, before_ms?}` → `{runs, total}`: the runs of
 * `function_id` newest first; `total` counts every stored run matching the filters, `runs` holds at
 * most `limit` (default {@link RUNS_DEFAULT_LIMIT}, 1–{@link RUNS_MAX_LIMIT}); `before_ms` (Unix
 * ms) pages back: runs started strictly before it.
 * @throws SvcError `INVALID_ARGUMENTS` naming the field
 * @example listRuns(store, { function_id: 'orders::create', limit: 20, status: 'error' })
 */
export function listRuns(store: TelemetryStore, data: unknown): RunsListResult {
  const fn = 'engine::runs::list'
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidInput(fn, 'the input must be an object with function_id')
  const o = data as Record<string, unknown>
  const functionId = o.function_id
  if (typeof functionId !== 'string' || functionId === '' || functionId.length > 1024) throw Errors.invalidInput(fn, 'function_id must be a non-empty string of at most 1024 characters')
  const limit = o.limit ?? RUNS_DEFAULT_LIMIT
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > RUNS_MAX_LIMIT) throw Errors.invalidInput(fn, `limit must be an integer from 1 to ${RUNS_MAX_LIMIT}`)
  const status = o.status ?? undefined
  if (status !== undefined && (typeof status !== 'string' || !STATUSES.has(status))) throw Errors.invalidInput(fn, 'status must be ok, error or unset')
  const before = o.before_ms ?? undefined
  if (before !== undefined && (typeof before !== 'number' || !Number.isFinite(before))) throw Errors.invalidInput(fn, 'before_ms must be a number (Unix ms)')
  const name = `execute ${functionId}`
  const beforeNs = before === undefined ? undefined : before * 1e6
  // A bounded set of the newest matches: the window is iterated oldest first and may be large.
  // Heads, not records: only the runs returned are parsed (spans kept as text, ../../adapters/observability/store.ts).
  const newest: SpanHead[] = []
  let total = 0
  for (const s of store.heads()) {
    if (s.name !== name) continue
    if (status !== undefined && s.status !== status) continue
    if (beforeNs !== undefined && s.start_time_unix_nano >= beforeNs) continue
    total++
    newest.push(s)
    if (newest.length > limit * 2) trim(newest, limit)
  }
  trim(newest, limit)
  return { runs: newest.map((s) => runOf(store, functionId, fullSpan(s))), total }
}

/** Keeps the `limit` newest spans, newest first. */
function trim(spans: SpanHead[], limit: number): void {
  spans.sort((a, b) => b.start_time_unix_nano - a.start_time_unix_nano)
  spans.length = Math.min(spans.length, limit)
}

function runOf(store: TelemetryStore, functionId: string, s: SpanRecord): Run {
  const run: Run = {
    trace_id: s.trace_id,
    span_id: s.span_id,
    function_id: functionId,
    status: s.status,
    // + 1 µs: a whole ms stored as ns (ms × 1e6, a double) may read back just below it.
    started_at_ms: Math.floor(s.start_time_unix_nano / 1e6 + 1e-3),
    duration_ms: s.duration_ms,
    caller: callerOf(store, s),
    service_name: s.service_name,
    input: payloadOf(s, 'svc.invocation.input'),
    output: payloadOf(s, 'svc.invocation.output'),
    rerun_of: typeof s.attributes['svc.rerun_of'] === 'string' ? (s.attributes['svc.rerun_of'] as string) : null,
    error_code: errorCodeOf(s),
  }
  if (s.status_message !== undefined && s.status_message !== '') run.status_message = s.status_message
  return run
}

/** What an error code may look like here: the catalogue's and a worker's own (`cancelled`, `TIMEOUT`, `increment.not_number`, `TypeError`). */
const ERROR_CODE = /^[A-Za-z0-9_.:-]{1,128}$/

/**
 * The code a failed run ended with: the engine's `execute` span carries it as `svc.error.code`, an
 * SDK's handler span as the `exception.type` of its `exception` event (svc-sdk names the exception
 * after the wire error's code). Null for a run that did not fail, and for a value that is not a
 * code (a worker's spans are not trusted: anything longer than 128 characters or outside
 * `[A-Za-z0-9_.:-]`).
 */
function errorCodeOf(s: SpanRecord): string | null {
  if (s.status !== 'error') return null
  let code = s.attributes['svc.error.code']
  if (code === undefined) code = s.events.find((e) => e.name === 'exception')?.attributes['exception.type']
  return typeof code === 'string' && ERROR_CODE.test(code) ? code : null
}

/** The parent span's function (`execute <id>` → `<id>`) or name; null without a stored parent. */
function callerOf(store: TelemetryStore, s: SpanRecord): string | null {
  if (s.parent_span_id === null) return null
  const parent = store.trace(s.trace_id).find((p) => p.span_id === s.parent_span_id)
  if (parent === undefined) return null
  const id = parent.attributes['svc.function.id']
  if (parent.name.startsWith('execute ') && typeof id === 'string') return id
  return parent.name
}

/** The payload event `name` as a preview of at most {@link RUN_PAYLOAD_PREVIEW_BYTES}. */
function payloadOf(s: SpanRecord, name: string): RunPayload | null {
  const event = s.events.find((e) => e.name === name)
  if (event === undefined) return null
  const json = event.attributes['svc.payload.json']
  if (typeof json !== 'string') return null
  const marked = event.attributes['svc.payload.truncated'] === true || (event.dropped_attributes_count ?? 0) > 0
  return previewOf(json, marked)
}

/**
 * `json` cut to at most {@link RUN_PAYLOAD_PREVIEW_BYTES} UTF-8 bytes (never inside a character).
 * @example previewOf('"' + 'x'.repeat(5000) + '"', false).truncated // true
 */
export function previewOf(json: string, truncated: boolean): RunPayload {
  // A string of n UTF-16 units has at most 3n UTF-8 bytes: most payloads skip the encoding.
  if (json.length * 3 <= RUN_PAYLOAD_PREVIEW_BYTES || Buffer.byteLength(json) <= RUN_PAYLOAD_PREVIEW_BYTES) return { json, truncated }
  const bytes = Buffer.from(json)
  let end = RUN_PAYLOAD_PREVIEW_BYTES
  // Back off continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  return { json: bytes.subarray(0, end).toString('utf8'), truncated: true }
}

const PAYLOAD = {
  type: ['object', 'null'],
  required: ['json', 'truncated'],
  properties: {
    json: { type: 'string', description: `JSON text, at most ${RUN_PAYLOAD_PREVIEW_BYTES} bytes; a prefix when truncated` },
    truncated: { type: 'boolean', description: 'cut here, by the SDK cap or by the store\'s size limits' },
  },
  description: 'null when the SDK recorded no payload (SVC_DISABLE_TRACE_PAYLOADS, an engine-served function)',
} as const

/** Request and result schemas of `engine::runs::list`. */
export const RUNS_LIST_FORMATS: { request_format: FormatSchema; response_format: FormatSchema } = {
  request_format: {
    type: 'object',
    required: ['function_id'],
    properties: {
      function_id: { type: 'string', minLength: 1, maxLength: 1024 },
      limit: { type: 'integer', minimum: 1, maximum: RUNS_MAX_LIMIT, default: RUNS_DEFAULT_LIMIT },
      status: { type: 'string', enum: ['ok', 'error', 'unset'] },
      before_ms: { type: 'number', description: 'runs started before this time (Unix ms): the next page' },
    },
    examples: [{ function_id: 'orders::create', limit: 20 }],
  },
  response_format: {
    type: 'object',
    required: ['runs', 'total'],
    properties: {
      runs: {
        type: 'array',
        description: 'newest first',
        items: {
          type: 'object',
          required: ['trace_id', 'span_id', 'function_id', 'status', 'error_code', 'started_at_ms', 'duration_ms', 'caller', 'service_name', 'input', 'output', 'rerun_of'],
          properties: {
            trace_id: { type: 'string' },
            span_id: { type: 'string' },
            function_id: { type: 'string' },
            status: { type: 'string', enum: ['ok', 'error', 'unset'] },
            status_message: { type: 'string' },
            error_code: { type: ['string', 'null'], description: 'the error code of a failed run (cancelled, TIMEOUT, a worker\'s own); null when it did not fail or recorded none' },
            started_at_ms: { type: 'integer', description: 'Unix milliseconds' },
            duration_ms: { type: ['number', 'null'] },
            caller: { type: ['string', 'null'], description: 'the calling function, else the parent span\'s name; null for a root span' },
            service_name: { type: 'string' },
            input: PAYLOAD,
            output: PAYLOAD,
            rerun_of: { type: ['string', 'null'], description: 'trace id of the run this one re-runs (svc.rerun_of)' },
          },
        },
      },
      total: { type: 'integer', minimum: 0, description: 'stored runs matching the filters' },
    },
  },
}

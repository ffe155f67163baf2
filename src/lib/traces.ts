/**
 * `svc traces [trace_id]` (issue 21): recent traces as a table and one trace as a waterfall in the
 * terminal, read from the observability worker (`engine::traces::list`, `engine::traces::tree`,
 * builtins.md §12.5). Everything a span carries came from a worker, so names, attributes, messages
 * and stacks are printed through `terminalText` (one escaped line each).
 */
import { Codes, Errors } from 'svc-protocol/errors'
import { CliError, ExitCode, hintFor, usageError } from './errors.ts'
import { triggerOnce } from './trigger.ts'
import { terminalText } from '../../runtime/index.ts'

/** A stored span as `engine::traces::tree` returns it (builtins.md §12.4); times in Unix ns. */
export interface TraceSpan {
  trace_id: string
  span_id: string
  parent_span_id: string | null
  name: string
  kind: string
  service_name: string
  start_time_unix_nano: number
  end_time_unix_nano: number | null
  duration_ms: number | null
  status: string
  status_message?: string
  attributes: Record<string, unknown>
  events: Array<{ name: string; timestamp_unix_nano: number; attributes: Record<string, unknown> }>
  children?: TraceSpan[]
}

/** One entry of `engine::traces::list`: the root span plus counts. */
export type TraceListEntry = TraceSpan & { span_count: number; error_count: number; service_names: string[] }

/** The filters of `svc traces` (its flags), sent to `engine::traces::list` as they are. */
export interface TracesQuery {
  url: string
  /** Case-insensitive substring of the root span's name. */
  name?: string | undefined
  status?: string | undefined
  /** Root span at least this long, ms. */
  minDurationMs?: number | undefined
  /** Traces in which this function ran. */
  functionId?: string | undefined
  /** 1–1000. */
  limit: number
  timeoutMs?: number
  unreachableHint?: string | undefined
}

/** Most traces one `svc traces` lists (the engine's page size). */
export const MAX_TRACES_LIMIT = 1000

/**
 * A duration flag: `250` (ms), `250ms`, `1.5s`, `2m`; the value in ms.
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2) for anything else, negative or not finite
 * @example parseDurationMs('1.5s', '--min-duration') // 1500
 */
export function parseDurationMs(text: string, flag: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/i.exec(text)
  const value = match === null ? Number.NaN : Number(match[1]) * ({ ms: 1, s: 1000, m: 60_000 }[(match[2] ?? 'ms').toLowerCase() as 'ms'] ?? 1)
  if (!Number.isFinite(value)) throw usageError(`Invalid value for ${flag}: '${terminalText(text.slice(0, 40))}'`, 'give milliseconds (250), or a number with ms, s or m (250ms, 1.5s, 2m)')
  return value
}

/**
 * The trace id of a `svc traces <trace_id>` argument: 32 hex characters, or a W3C `traceparent`
 * value (`00-<trace id>-<span id>-<flags>`, as svc-http's responses carry it); lower case.
 *
 * @throws {CliError} `INVALID_ARGUMENT` (exit 2) for anything else
 */
export function parseTraceId(text: string): string {
  const trimmed = text.trim()
  const fromParent = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/i.exec(trimmed)
  const id = fromParent !== null ? fromParent[1]! : trimmed
  if (!/^[0-9a-f]{32}$/i.test(id)) throw usageError(`Invalid trace id '${terminalText(text.slice(0, 80))}': expected 32 hex characters or a traceparent value`, 'svc traces lists the ids of recent traces')
  return id.toLowerCase()
}

/** `function_not_found` for an `engine::*` query: the observability worker is not running. */
function withoutObservability(err: unknown): unknown {
  if (err instanceof CliError && err.code === Codes.FunctionNotFound) {
    return new CliError({ code: err.code, message: 'This engine records no traces: its observability worker (svc-observability) is not running', exitCode: ExitCode.Failure, hint: 'enable svc-observability under builtins in config.yaml (it is on unless turned off)', cause: err })
  }
  return err
}

/**
 * Lists recent traces, newest first, through `engine::traces::list`.
 *
 * @returns the function's answer without its `spans` duplicate: `{traces, total, offset, limit}`
 * @throws {CliError} exit 3 unreachable, exit 1 `STORAGE_DISABLED` / `INVALID_ARGUMENTS` / no observability worker
 */
export async function listTraces(query: TracesQuery): Promise<{ traces: TraceListEntry[]; total: number; offset: number; limit: number }> {
  const payload: Record<string, unknown> = { limit: query.limit }
  if (query.name !== undefined) payload.name = query.name
  if (query.status !== undefined) payload.status = query.status
  if (query.minDurationMs !== undefined) payload.min_duration_ms = query.minDurationMs
  if (query.functionId !== undefined) payload.function_id = query.functionId
  try {
    const { result } = await triggerOnce({ url: query.url, functionId: 'engine::traces::list', payload, mode: 'sync', timeoutMs: query.timeoutMs ?? 30_000, unreachableHint: query.unreachableHint })
    const { traces, total, offset, limit } = result as { traces: TraceListEntry[]; total: number; offset: number; limit: number }
    return { traces, total, offset, limit }
  } catch (err) {
    throw withoutObservability(err)
  }
}

/**
 * The spans of one trace, depth first with children by start time (`engine::traces::tree`).
 *
 * @throws {CliError} `TRACE_NOT_FOUND` (exit 1) when no span of it is stored, and as {@link listTraces}
 */
export async function readTrace(url: string, traceId: string, options: { timeoutMs?: number; unreachableHint?: string | undefined } = {}): Promise<Array<TraceSpan & { depth: number }>> {
  let roots: TraceSpan[]
  try {
    const { result } = await triggerOnce({ url, functionId: 'engine::traces::tree', payload: { trace_id: traceId }, mode: 'sync', timeoutMs: options.timeoutMs ?? 30_000, unreachableHint: options.unreachableHint })
    roots = (result as { roots: TraceSpan[] }).roots
  } catch (err) {
    throw withoutObservability(err)
  }
  if (roots.length === 0) {
    const error = Errors.traceNotFound(traceId)
    throw new CliError({ code: error.code, message: error.message, exitCode: ExitCode.Failure, hint: hintFor(error.code) ?? '' })
  }
  const out: Array<TraceSpan & { depth: number }> = []
  const walk = (nodes: TraceSpan[], depth: number): void => {
    for (const { children, ...span } of nodes) {
      out.push({ ...span, depth })
      walk(children ?? [], depth + 1)
    }
  }
  walk(roots, 0)
  return out
}

/** A duration for people: `0.42ms`, `12ms`, `1.25s`, `2m03s`; `running` when unfinished. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return 'running'
  if (ms < 1) return `${ms.toFixed(2)}ms`
  if (ms < 1000) return `${Math.round(ms)}ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`
  const s = Math.round(ms / 1000)
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
}

/** Local time of a Unix-ns time: `HH:MM:SS` today, `YYYY-MM-DD HH:MM:SS` another day. */
function localTime(ns: number, now = new Date()): string {
  const t = new Date(ns / 1e6)
  const p = (n: number) => String(n).padStart(2, '0')
  const time = `${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`
  return t.toDateString() === now.toDateString() ? time : `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${time}`
}

/** `text` cut to `width` characters, `…` marking the cut. */
function fit(text: string, width: number): string {
  if (width <= 0) return ''
  return text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`
}

const paint = (on: boolean, code: string, text: string): string => (on ? `\u001b[${code}m${text}\u001b[0m` : text)

/** Terminal width used when stdout is not a terminal. */
export const DEFAULT_COLUMNS = 100

/**
 * The table of `svc traces`: `TRACE ID  STATUS  DURATION  SPANS  STARTED  NAME`, newest first,
 * the name (the one unbounded column, last) cut to fit `columns` (at least 80). An empty list
 * prints a hint.
 */
export function formatTracesTable(traces: readonly TraceListEntry[], options: { columns?: number; colour?: boolean; total?: number } = {}): string {
  if (traces.length === 0) return 'No traces match. Traces are recorded while svc runs with its observability worker; call a function (svc trigger, an HTTP route) and try again.\n'
  // The fixed columns take 80 at most (status ≤ 6, started ≤ 19): narrower terminals wrap.
  const columns = Math.max(80, options.columns ?? DEFAULT_COLUMNS)
  const colour = options.colour === true
  const header = ['TRACE ID', 'STATUS', 'DURATION', 'SPANS', 'STARTED', 'NAME']
  const rows = traces.map((t) => [terminalText(t.trace_id).slice(0, 32), fit(terminalText(t.status), 6), formatDuration(t.duration_ms), String(t.span_count), localTime(t.start_time_unix_nano), terminalText(t.name)])
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const fixed = widths.slice(0, -1).reduce((a, w) => a + w + 2, 0)
  const line = (cells: string[], isHeader: boolean) =>
    cells
      .map((cell, i) => {
        if (i === cells.length - 1) return fit(cell, columns - fixed)
        const padded = cell.padEnd(widths[i]! + 2)
        return !isHeader && i === 1 && cell === 'error' ? paint(colour, '31', padded) : padded
      })
      .join('')
      .trimEnd()
  const more = options.total !== undefined && options.total > traces.length ? `(${traces.length} of ${options.total}; --limit shows more)\n` : ''
  return [line(header, true), ...rows.map((r) => line(r, false))].join('\n') + '\n' + more
}

/** Stack lines printed under a failing span at most; `--json` has them all. */
const STACK_LINES = 12

/** A frame of the user's code: neither Node's (`node:…`) nor a package's (`/node_modules/`). */
function isUserFrame(frame: string): boolean {
  return !/\(node:|\bat node:|[\\/]node_modules[\\/]/.test(frame)
}

/** The message and stack of a failing span: its `exception` event, else its status message. */
function failureOf(span: TraceSpan): { message: string | undefined; stack: string | undefined } {
  const exception = span.events.find((e) => e.name === 'exception')
  const attr = (key: string): string | undefined => (typeof exception?.attributes[key] === 'string' ? (exception.attributes[key] as string) : undefined)
  const type = attr('exception.type')
  const message = attr('exception.message') ?? span.status_message
  return { message: message === undefined ? undefined : type !== undefined && type !== '' && !message.startsWith(type) ? `${type}: ${message}` : message, stack: attr('exception.stacktrace') }
}

/**
 * The waterfall of `svc traces <trace_id>`: a header line, then one row per span (depth first),
 * its name indented by depth, a bar placed at its offset from the trace's start and sized by its
 * duration on a scale of the whole trace (an unfinished span runs to the end, drawn `░`), its
 * duration and status; under a failing span its error message and the first lines of its stack.
 * Every line fits `columns` (default {@link DEFAULT_COLUMNS}); names, messages and stacks are escaped.
 */
export function formatWaterfall(spans: ReadonlyArray<TraceSpan & { depth: number }>, options: { columns?: number; colour?: boolean } = {}): string {
  const columns = Math.max(60, options.columns ?? DEFAULT_COLUMNS)
  const colour = options.colour === true
  const start = Math.min(...spans.map((s) => s.start_time_unix_nano))
  const ends = spans.map((s) => s.end_time_unix_nano ?? s.start_time_unix_nano)
  const end = Math.max(...ends, start)
  const total = end - start
  const root = spans[0]!
  const errors = spans.filter((s) => s.status === 'error').length
  const lines: string[] = []
  lines.push(fit(`Trace ${root.trace_id}  ${formatDuration(total / 1e6)}  ${spans.length} span${spans.length === 1 ? '' : 's'}${errors > 0 ? `, ${errors} failed` : ''}  ${localTime(start)}  ${terminalText(root.name)}`, columns))
  const labels = spans.map((s) => `${'  '.repeat(Math.min(s.depth, 20))}${terminalText(s.name)}`)
  const nameWidth = Math.min(Math.max(...labels.map((l) => l.length)), Math.floor(columns * 0.4))
  const durations = spans.map((s) => formatDuration(s.duration_ms))
  const durWidth = Math.max(...durations.map((d) => d.length))
  const statusWidth = 5
  const barWidth = columns - nameWidth - durWidth - statusWidth - 6
  for (const [i, s] of spans.entries()) {
    const from = total === 0 ? 0 : Math.floor(((s.start_time_unix_nano - start) / total) * barWidth)
    const open = s.end_time_unix_nano === null
    const to = open ? barWidth : total === 0 ? barWidth : Math.ceil(((s.end_time_unix_nano! - start) / total) * barWidth)
    const length = Math.max(1, Math.min(barWidth, to) - Math.min(from, barWidth - 1))
    const offset = Math.min(from, barWidth - 1)
    const bar = ' '.repeat(offset) + (open ? '░' : '█').repeat(length) + ' '.repeat(Math.max(0, barWidth - offset - length))
    const failed = s.status === 'error'
    const status = terminalText(s.status).slice(0, statusWidth).padEnd(statusWidth)
    lines.push(`${fit(labels[i]!, nameWidth).padEnd(nameWidth)}  ${paint(colour, failed ? '31' : '36', bar)}  ${durations[i]!.padStart(durWidth)}  ${failed ? paint(colour, '31', status) : status}`.trimEnd())
    if (!failed) continue
    const indent = '  '.repeat(Math.min(s.depth, 20)) + '  '
    const { message, stack } = failureOf(s)
    if (message !== undefined) lines.push(indent + paint(colour, '31', fit(`! ${terminalText(message)}`, columns - indent.length)))
    if (stack !== undefined) {
      // The stack's first line repeats the message; the frames follow it.
      const frames = stack.split(/\r?\n/).filter((l) => /^\s*at /.test(l))
      // The user's frames come first; Node's and the packages' (svc-sdk's dispatch) after them are left to --json.
      const own = frames.findIndex((f) => !isUserFrame(f))
      const shown = Math.min(STACK_LINES, own > 0 ? own : frames.length)
      for (const frame of frames.slice(0, shown)) lines.push(fit(`${indent}  ${terminalText(frame.trim())}`, columns))
      if (frames.length > shown) lines.push(fit(`${indent}  … ${frames.length - shown} more frame${frames.length - shown === 1 ? '' : 's'} (svc traces ${root.trace_id} --json)`, columns))
    }
  }
  return lines.join('\n') + '\n'
}

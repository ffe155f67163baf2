/**
 * `svc traces [TRACE_ID]`: recent traces as a table, or one trace as a waterfall (issue 21).
 */
import { Args, Flags } from '@oclif/core'
import { colourEnabled, terminalJson } from '../../runtime/index.ts'
import { SvcCommand } from '../lib/command.ts'
import { projectEngine, unreachableHint } from '../lib/project.ts'
import { DEFAULT_COLUMNS, formatTracesTable, formatWaterfall, listTraces, MAX_TRACES_LIMIT, parseDurationMs, parseTraceId, readTrace } from '../lib/traces.ts'

export default class Traces extends SvcCommand {
  static override summary = 'List recent traces, or draw one trace as a waterfall'
  static override description =
    'Without an argument: recent traces, newest first, one row each (trace id, status, duration, span count, start, root span name), ' +
    'from engine::traces::list. With a trace id (or a traceparent header value): every span of that trace as a waterfall, ' +
    'one row per span indented under its parent, with the error message and stack of a failing span, from engine::traces::tree. ' +
    'Traces are recorded by the observability worker (svc-observability) of the running engine.'

  static override examples = [
    '<%= config.bin %> traces',
    '<%= config.bin %> traces --status error --min-duration 250ms',
    '<%= config.bin %> traces --function orders::create --limit 5',
    '<%= config.bin %> traces 4bf92f3577b34da6a3ce929d0e0e4736',
    '<%= config.bin %> traces 4bf92f3577b34da6a3ce929d0e0e4736 --json',
  ]

  static override args = {
    trace_id: Args.string({ description: 'A trace to draw: 32 hex characters, or a traceparent value (00-<trace id>-<span id>-01)', required: false }),
  }

  static override flags = {
    name: Flags.string({ summary: 'Only traces whose root span name contains this text (any case)' }),
    status: Flags.string({ summary: 'Only traces whose root span has this status', options: ['ok', 'error', 'unset'] }),
    'min-duration': Flags.string({ summary: 'Only traces at least this long: milliseconds (250) or 250ms, 1.5s, 2m' }),
    function: Flags.string({ summary: 'Only traces in which this function ran (its id)' }),
    limit: Flags.integer({ char: 'n', summary: `How many traces to list (1–${MAX_TRACES_LIMIT})`, default: 20, min: 1, max: MAX_TRACES_LIMIT }),
    engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
    json: Flags.boolean({ summary: 'Print one JSON document: {"traces": [...], "total"} for the list, {"trace_id", "spans": [...]} for one trace' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Traces)
    const traceId = args.trace_id === undefined ? undefined : parseTraceId(args.trace_id)
    const minDurationMs = flags['min-duration'] === undefined ? undefined : parseDurationMs(flags['min-duration'], '--min-duration')
    const target = projectEngine({ flag: flags.engine, cwd: process.cwd() })
    const hint = unreachableHint(target)
    const view = { columns: process.stdout.columns || DEFAULT_COLUMNS, colour: colourEnabled(process.stdout) }
    if (traceId !== undefined) {
      const spans = await readTrace(target.url, traceId, { unreachableHint: hint })
      process.stdout.write(flags.json ? `${terminalJson({ trace_id: traceId, spans })}\n` : formatWaterfall(spans, view))
      return
    }
    const listed = await listTraces({ url: target.url, name: flags.name, status: flags.status, minDurationMs, functionId: flags.function, limit: flags.limit, unreachableHint: hint })
    process.stdout.write(flags.json ? `${terminalJson({ traces: listed.traces, total: listed.total })}\n` : formatTracesTable(listed.traces, { ...view, total: listed.total }))
  }
}

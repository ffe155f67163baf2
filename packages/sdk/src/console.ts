/**
 * `console.log` (and `info`, `debug`, `warn`, `error`) inside a handler, tied to the invocation's
 * trace in the engine's log store (issue 21), as `Logger` records are (sdk.md §12.4). Each call
 * prints exactly as before — same stream, same text, same order — and, while a span is active (a
 * handler's, or one the handler started) and telemetry is on, also emits an OTel log record with
 * the span's `trace_id` and `span_id`, the printed text as body, `log.source` `stdout` or `stderr`,
 * `svc.worker.name` and `svc.console: true`. The observability worker pairs that record with the line svc's
 * supervisor captured from the process, so the line is stored once, with its trace, and printed
 * once (runtime/workers/observability/console-lines.ts).
 *
 * Outside a span nothing but the print happens.
 */
import { logs, type SeverityNumber } from '@opentelemetry/api'
import { formatWithOptions } from 'node:util'
import { currentSpanId, currentTraceId, isOtelInitialized } from 'svc-helpers/observability'

type Method = 'log' | 'info' | 'debug' | 'warn' | 'error'

/** Severity (sdk.md §12.4 numbers), its text, and the stream Node's console writes the method to. */
const METHODS: Record<Method, [number, string, 'stdout' | 'stderr']> = {
  debug: [5, 'DEBUG', 'stdout'],
  log: [9, 'INFO', 'stdout'],
  info: [9, 'INFO', 'stdout'],
  warn: [13, 'WARN', 'stderr'],
  error: [17, 'ERROR', 'stderr'],
}

let installed = false
/** `svc.worker.name` of the records: the first telemetry client's worker name (svc's supervisor sets it, `SVC_WORKER_NAME`). */
let workerName = ''
/** True while a record is emitted: a console call made by the emitting code itself is only printed. */
let emitting = false

/**
 * Wraps the console methods once per process (later calls do nothing). Called by `registerWorker`
 * when it starts telemetry, with the client's worker name: the name svc's supervisor knows the
 * process by, which pairs a record with the line it captured.
 */
export function captureConsole(name: string): void {
  if (installed) return
  installed = true
  workerName = name
  for (const method of Object.keys(METHODS) as Method[]) {
    const print = console[method] as (...args: unknown[]) => void
    const [severity, severityText, stream] = METHODS[method]
    console[method] = function (this: unknown, ...args: unknown[]): void {
      print.apply(this, args)
      if (emitting || !isOtelInitialized()) return
      const traceId = currentTraceId()
      if (traceId === undefined) return
      emitting = true
      try {
        // The text Node printed: its console formats the same way (no colours on a pipe).
        const body = formatWithOptions({ colors: false }, ...args)
        const attributes: Record<string, string | boolean> = { trace_id: traceId, 'log.source': stream, 'svc.console': true, 'svc.worker.name': workerName }
        const spanId = currentSpanId()
        if (spanId !== undefined) attributes.span_id = spanId
        logs.getLogger('svc-sdk').emit({ body, severityNumber: severity as SeverityNumber, severityText, attributes })
      } catch {
        // Telemetry never breaks a print.
      } finally {
        emitting = false
      }
    }
  }
}

/**
 * The `Logger` of sdk.md §12.4: OTel log records linked to the active trace, or console output
 * when telemetry is off.
 *
 * @example
 * const log = getLogger()
 * client.registerFunction('orders::create', async (input) => {
 *   log.info('creating order', { items: input.items.length }) // carries the invocation's trace id
 * })
 */
import { type AnyValue, logs, SeverityNumber } from '@opentelemetry/api'
import { isOtelInitialized } from './otel.ts'
import { redact, safeStringify } from './redact.ts'
import { currentSpanId, currentTraceId, TRACER_NAME } from './trace.ts'
import { jsonParse } from 'svc-protocol/json'
import type { LogRecord } from 'svc-protocol'

export { SeverityNumber }

/** A log record as the observability worker stores it (builtins.md §12.4): svc-protocol's `LogRecord`. */
export type OtelLogEvent = LogRecord

type Level = 'debug' | 'info' | 'warn' | 'error'
const SEVERITY: Record<Level, [SeverityNumber, string]> = {
  debug: [SeverityNumber.DEBUG, 'DEBUG'],
  info: [SeverityNumber.INFO, 'INFO'],
  warn: [SeverityNumber.WARN, 'WARN'],
  error: [SeverityNumber.ERROR, 'ERROR'],
}

/** Converts redacted data to an OTel `AnyValue` through JSON (BigInt, cycles handled). */
function toAnyValue(data: unknown): AnyValue {
  return jsonParse(safeStringify(redact(data)).replace(/^\[unserializable\]$/, '"[unserializable]"')) as AnyValue
}

/**
 * Emits OTel log records (sdk.md §12.4): body = message, severity 5/9/13/17, attributes
 * `trace_id`/`span_id` (the constructor's, else the active span's), `service.name`, and
 * `log.data` = the redacted data. Without telemetry it writes to `console.<level>`.
 */
export class Logger {
  readonly #traceId: string | undefined
  readonly #serviceName: string | undefined
  readonly #spanId: string | undefined

  constructor(traceId?: string, serviceName?: string, spanId?: string) {
    this.#traceId = traceId
    this.#serviceName = serviceName
    this.#spanId = spanId
  }

  debug(message: string, data?: unknown): void {
    this.#emit('debug', message, data)
  }
  info(message: string, data?: unknown): void {
    this.#emit('info', message, data)
  }
  warn(message: string, data?: unknown): void {
    this.#emit('warn', message, data)
  }
  error(message: string, data?: unknown): void {
    this.#emit('error', message, data)
  }

  #emit(level: Level, message: string, data: unknown): void {
    if (!isOtelInitialized()) {
      if (data === undefined) console[level](message)
      else console[level](message, redact(data))
      return
    }
    const [severityNumber, severityText] = SEVERITY[level]
    const attributes: Record<string, AnyValue> = {}
    const traceId = this.#traceId ?? currentTraceId()
    const spanId = this.#spanId ?? currentSpanId()
    if (traceId !== undefined) attributes['trace_id'] = traceId
    if (spanId !== undefined) attributes['span_id'] = spanId
    if (this.#serviceName !== undefined) attributes['service.name'] = this.#serviceName
    if (data !== undefined) attributes['log.data'] = toAnyValue(data)
    logs.getLogger(TRACER_NAME).emit({ body: message, severityNumber, severityText, attributes })
  }
}

let shared: Logger | undefined

/** A process-wide {@link Logger} without fixed ids (records follow the active span). */
export function getLogger(): Logger {
  shared ??= new Logger()
  return shared
}

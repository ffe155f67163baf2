/**
 * The engine's console logger: `HH:MM:SS.mmm <source> <LEVEL> <message>` (cli.md §3), filtered by
 * level. The observability worker will also collect these records later.
 */
import type { Logger } from './types.ts'

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error'
const ORDER: Record<LogLevel, number> = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 }

export interface LogRecord {
  time: Date
  source: string
  level: Exclude<LogLevel, 'trace'>
  message: string
  data?: Record<string, unknown>
}

/** Formats a record as one console line. */
export function formatLogLine(record: LogRecord): string {
  const t = record.time
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  const time = `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)}`
  const data = record.data && Object.keys(record.data).length > 0 ? ` ${JSON.stringify(record.data)}` : ''
  return `${time} ${record.source} ${record.level.toUpperCase()} ${record.message}${data}`
}

/**
 * A logger writing to stderr (warn, error) and stdout (the rest), or to `sink` when given.
 * `level` defaults to env `SVC_LOG_LEVEL`, else `info`.
 */
export function consoleLogger(source: string, level?: LogLevel, sink?: (record: LogRecord) => void): Logger {
  const threshold = ORDER[level ?? (process.env.SVC_LOG_LEVEL as LogLevel) ?? 'info'] ?? ORDER.info
  const emit = (lvl: LogRecord['level'], message: string, data?: Record<string, unknown>) => {
    if (ORDER[lvl] < threshold) return
    const record: LogRecord = { time: new Date(), source, level: lvl, message }
    if (data) record.data = data
    if (sink) return sink(record)
    const line = formatLogLine(record) + '\n'
    if (lvl === 'warn' || lvl === 'error') process.stderr.write(line)
    else process.stdout.write(line)
  }
  return {
    debug: (m, d) => emit('debug', m, d),
    info: (m, d) => emit('info', m, d),
    warn: (m, d) => emit('warn', m, d),
    error: (m, d) => emit('error', m, d),
  }
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} }

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

const ESC = '\u001b['
const paint = (code: string, text: string) => `${ESC}${code}m${text}${ESC}0m`
/** Source colours: no red or yellow, which mean ERROR and WARN. */
const SOURCE_COLOURS = ['36', '35', '34', '32', '96', '95', '94', '92']
const LEVEL_COLOURS: Record<LogRecord['level'], string> = { debug: '90', info: '32', warn: '33', error: '1;31' }

/** The same colour for the same source in every run (a small string hash). */
function sourceColour(source: string): string {
  if (source === 'svc' || source === 'engine') return '2'
  let hash = 0
  for (let i = 0; i < source.length; i++) hash = (hash * 31 + source.charCodeAt(i)) >>> 0
  return SOURCE_COLOURS[hash % SOURCE_COLOURS.length]!
}

/** Formats a record as one console line; `colour` paints the time, the source (one colour per source) and the level. */
export function formatLogLine(record: LogRecord, colour = false): string {
  const t = record.time
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  const time = `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)}`
  const data = record.data && Object.keys(record.data).length > 0 ? ` ${JSON.stringify(record.data)}` : ''
  const level = record.level.toUpperCase()
  if (!colour) return `${time} ${record.source} ${level} ${record.message}${data}`
  const message = record.level === 'error' ? paint('31', record.message) : record.level === 'debug' ? paint('2', record.message) : record.message
  return `${paint('2', time)} ${paint(sourceColour(record.source), record.source)} ${paint(LEVEL_COLOURS[record.level], level)} ${message}${data && paint('2', data)}`
}

let colourOverride: boolean | undefined

/** `--no-color` (false) or a forced choice for this process; undefined goes back to {@link colourEnabled}'s rules. */
export function setLogColour(on: boolean | undefined): void {
  colourOverride = on
}

/**
 * Whether lines written to `stream` are coloured (cli.md §1 Colour): never with `NO_COLOR` set
 * (non-empty, no-color.org) or `--no-color`; always with `FORCE_COLOR` set to anything but `0`
 * or `false`; otherwise only on a TTY whose `TERM` is not `dumb`.
 */
export function colourEnabled(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (colourOverride !== undefined) return colourOverride
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.FORCE_COLOR !== undefined) return env.FORCE_COLOR !== '0' && env.FORCE_COLOR !== 'false'
  return stream.isTTY === true && env.TERM !== 'dumb'
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
    const stream = lvl === 'warn' || lvl === 'error' ? process.stderr : process.stdout
    stream.write(formatLogLine(record, colourEnabled(stream)) + '\n')
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

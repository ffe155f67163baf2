/**
 * The engine's console logger: `HH:MM:SS.mmm <source> <LEVEL> <message>` (cli.md §3), filtered by
 * level. The observability worker will also collect these records later.
 */
import { terminalLines, terminalText } from './terminal.ts'
import type { Logger } from './config.ts'

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
/**
 * A colour or text attribute (SGR, `ESC [ … m`) in a message: dropped, since the line is painted
 * here (a worker's own colours would run into ours). The store drops them too (stripAnsi).
 */
// eslint-disable-next-line no-control-regex
const SGR = /\u001b\[[0-9;:]*m/g
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

/**
 * Formats a record as console lines (cli.md §3 `HH:MM:SS.mmm <source> <LEVEL> <message>`); `colour`
 * paints the time, the source (one colour per source) and the level. Source, message and data come
 * from outside (a worker's output, an OTLP `service.name`), so the message's own colours (SGR) are
 * dropped and every control character left is shown escaped ({@link terminalText}) before any
 * colour is added (issue 16): the only escape sequences in the result are the SGR colours painted
 * here. A message of several lines becomes one line per line, each with the record's own time,
 * source and level, so a line break in a message can never start a line that looks like another
 * source's (trailing line breaks are dropped); the data follows the last line.
 */
export function formatLogLine(record: LogRecord, colour = false): string {
  const t = record.time
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  const time = `${pad(t.getHours())}:${pad(t.getMinutes())}:${pad(t.getSeconds())}.${pad(t.getMilliseconds(), 3)}`
  const data = record.data && Object.keys(record.data).length > 0 ? ` ${terminalText(JSON.stringify(record.data))}` : ''
  const level = record.level.toUpperCase()
  const source = terminalText(record.source)
  const lines = terminalLines(record.message.replace(SGR, ''))
  // A trailing line break ends the message; it starts no empty line.
  while (lines.length > 1 && lines[lines.length - 1] === '') lines.pop()
  if (!colour) return lines.map((line, i) => `${time} ${source} ${level} ${line}${i === lines.length - 1 ? data : ''}`).join('\n')
  const prefix = `${paint('2', time)} ${paint(sourceColour(source), source)} ${paint(LEVEL_COLOURS[record.level], level)} `
  const body = (line: string) => (record.level === 'error' ? paint('31', line) : record.level === 'debug' ? paint('2', line) : line)
  return lines.map((line, i) => `${prefix}${body(line)}${i === lines.length - 1 ? data && paint('2', data) : ''}`).join('\n')
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

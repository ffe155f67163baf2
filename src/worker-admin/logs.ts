/**
 * `svc logs [worker] [-f]` (issue 11): worker and engine log lines, from the observability
 * worker's store (`engine::logs::list`) while svc runs with it, else from the supervisor's log
 * files `.svc/logs/<name>.log` (cli.md §5.6).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { formatLogLine, type LogRecord, terminalText } from '../../runtime/index.ts'
import type { EngineSession, StoredLog } from './engine.ts'

export interface LogsOptions {
  projectRoot: string
  /** Only this worker (service name, or log file name). */
  worker?: string | undefined
  /** Only the records of this trace (32 lower-case hex characters); the store only, never the files. */
  traceId?: string | undefined
  /** Lines printed before following. */
  lines: number
  follow: boolean
  colour: boolean
  write: (text: string) => void
  /** Resolves when following should end (Ctrl-C). */
  stopped: Promise<void>
  pollMs?: number
}

/** Prints stored log records (oldest first), then, with `follow`, new ones as they arrive. */
export async function logsFromStore(session: EngineSession, options: LogsOptions): Promise<boolean> {
  const filter = (start?: number) => ({
    limit: start === undefined ? options.lines : 1000,
    ...(options.worker ? { service_name: options.worker } : {}),
    ...(options.traceId !== undefined ? { trace_id: options.traceId } : {}),
    ...(start !== undefined ? { start_time: start } : {}),
  })
  // One query either way: it tells whether the store answers at all.
  const first = await session.listLogs(filter())
  if (first === undefined) return false
  const seen = new Set<string>()
  let last = options.lines === 0 ? Date.now() : 0
  if (options.lines === 0) first.length = 0
  const print = (records: StoredLog[]) => {
    for (const r of [...records].reverse()) {
      const key = `${r.timestamp_unix_nano} ${r.service_name} ${r.body}`
      if (seen.has(key)) continue
      seen.add(key)
      last = Math.max(last, Math.floor(r.timestamp_unix_nano / 1e6))
      options.write(`${formatLogLine(storedRecord(r), options.colour)}\n`)
    }
  }
  print(first)
  if (!options.follow) return true
  let stop = false
  void options.stopped.then(() => (stop = true))
  while (!stop) {
    await sleep(options.pollMs ?? 500, options.stopped)
    if (stop) break
    const next = await session.listLogs(filter(last))
    if (next) print(next)
    if (seen.size > 100_000) seen.clear()
  }
  return true
}

function storedRecord(r: StoredLog): LogRecord {
  const severity = r.severity_text.toLowerCase()
  const level = severity.startsWith('err') || severity === 'fatal' ? 'error' : severity.startsWith('warn') ? 'warn' : severity === 'debug' || severity === 'trace' ? 'debug' : 'info'
  return { time: new Date(r.timestamp_unix_nano / 1e6), source: r.service_name, level, message: r.body }
}

/** The log files to read: `.svc/logs/<worker>.log`, or every `*.log` there. */
export function logFiles(projectRoot: string, worker?: string): Array<{ name: string; path: string }> {
  const dir = join(projectRoot, '.svc', 'logs')
  if (worker) return [{ name: worker, path: join(dir, `${worker}.log`) }]
  let names: string[] = []
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.log')).sort()
  } catch {
    /* no logs yet */
  }
  return names.map((n) => ({ name: n.slice(0, -4), path: join(dir, n) }))
}

/** A log-file line `2026-01-01T10:00:00.000Z stdout text` as a console line. */
export function fileLine(name: string, line: string, colour: boolean): string {
  const match = /^(\d{4}-\d\d-\d\dT[\d:.]+Z) (stdout|stderr|svc) (.*)$/.exec(line)
  // A line written by a worker, not by the supervisor's format: shown, escaped (issue 16).
  if (!match) return terminalText(line)
  const [, time, stream, text] = match
  const record: LogRecord = { time: new Date(time!), source: stream === 'svc' ? `svc ${name}` : name, level: stream === 'stderr' ? 'warn' : 'info', message: text! }
  return formatLogLine(record, colour)
}

/** Prints the last lines of the log files, then, with `follow`, lines appended to them. */
export async function logsFromFiles(options: LogsOptions): Promise<void> {
  const files = logFiles(options.projectRoot, options.worker)
  const offsets = new Map<string, number>()
  const tail: Array<{ time: string; text: string }> = []
  for (const file of files) {
    let text = ''
    try {
      text = readFileSync(file.path, 'utf8')
    } catch {
      /* not written yet */
    }
    offsets.set(file.path, Buffer.byteLength(text))
    if (options.lines === 0) continue
    for (const line of text.split('\n').filter(Boolean).slice(-options.lines)) tail.push({ time: line.slice(0, 24), text: fileLine(file.name, line, options.colour) })
  }
  tail.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0))
  for (const line of options.lines === 0 ? [] : tail.slice(-options.lines)) options.write(`${line.text}\n`)
  if (!options.follow) return
  let stop = false
  void options.stopped.then(() => (stop = true))
  while (!stop) {
    await sleep(options.pollMs ?? 250, options.stopped)
    for (const file of logFiles(options.projectRoot, options.worker)) {
      let size: number
      try {
        size = statSync(file.path).size
      } catch {
        continue
      }
      let from = offsets.get(file.path) ?? 0
      if (size < from) from = 0 // rotated
      if (size === from) continue
      const buffer = readFileSync(file.path).subarray(from, size)
      const text = buffer.toString('utf8')
      const end = text.lastIndexOf('\n')
      if (end < 0) continue
      offsets.set(file.path, from + Buffer.byteLength(text.slice(0, end + 1)))
      for (const line of text.slice(0, end).split('\n').filter(Boolean)) options.write(`${fileLine(file.name, line, options.colour)}\n`)
    }
  }
}

function sleep(ms: number, stopped: Promise<void>): Promise<void> {
  return Promise.race([new Promise<void>((resolve) => setTimeout(resolve, ms)), stopped])
}

/** A logger that keeps what it is told, so tests can assert on warnings and errors. */
import type { Logger } from '../../runtime/engine/types.ts'

export interface LogEntry {
  level: 'debug' | 'info' | 'warn' | 'error'
  message: string
  data?: Record<string, unknown> | undefined
}

/** @example const { log, entries } = recordingLogger(); log.warn('x'); entries[0].message // 'x' */
export function recordingLogger(): { log: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = []
  const at =
    (level: LogEntry['level']) =>
    (message: string, data?: Record<string, unknown>): void => {
      entries.push({ level, message, data })
    }
  return { log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') }, entries }
}

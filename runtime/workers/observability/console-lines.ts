/**
 * `console.log` inside a handler, tied to the invocation's trace (issue 21). A worker's output
 * reaches the log store by two paths: the process's stdout/stderr lines, which svc's supervisor
 * captures (`TelemetrySink.output`, no trace ids: another process cannot know them), and, for
 * svc-sdk workers, a copy of every console call made during a handler, sent as an OTLP log record
 * with the invocation's trace and span ids and the attribute `svc.console` (svc-sdk's
 * `console.ts`). This table pairs the two so each line is stored once, with its trace:
 *
 * - the captured line arrives first (the usual order: the SDK batches its records): it is stored
 *   and remembered; the SDK's record, when it arrives, sets the trace and span ids on the stored
 *   line(s) and is itself dropped;
 * - the SDK's record arrives first: it is stored, and the captured lines it covers are dropped.
 *
 * A record no captured line ever matches (a worker svc did not launch, or a line the size limits
 * cut) is simply stored. Lines are compared after the ANSI removal both paths apply; both sides
 * are kept {@link CONSOLE_PAIRING_MS} at most, {@link MAX_REMEMBERED} per worker and stream.
 */
import type { LogRecord } from '../../adapters/observability/records.ts'

/** How long a line waits for its other half, ms. */
export const CONSOLE_PAIRING_MS = 30_000

/** Most lines (or records) remembered per worker and stream. */
export const MAX_REMEMBERED = 1000

/** Most worker/stream pairs tracked. */
const MAX_KEYS = 1000

interface Pending {
  lines: string[]
  /** Index of the next line expected from the captured output. */
  next: number
  atMs: number
}

/** The supervisor's lines and the SDK's console records of the last {@link CONSOLE_PAIRING_MS}, per worker and stream. */
export class ConsoleLines {
  /** Captured lines stored without a trace, oldest first. */
  private readonly captured = new Map<string, LogRecord[]>()
  /** SDK console records stored before their lines were captured, oldest first. */
  private readonly early = new Map<string, Pending[]>()

  private readonly nowMs: () => number

  constructor(nowMs: () => number = Date.now) {
    this.nowMs = nowMs
  }

  /**
   * A line the supervisor captured (`text` as stored, ANSI removed). Returns false when an SDK
   * console record stored earlier already holds it (the line must not be stored again); else the
   * caller stores `record` and this table remembers it.
   */
  capturedLine(worker: string, stream: 'stdout' | 'stderr', record: LogRecord): boolean {
    const key = `${worker}\u0000${stream}`
    const now = this.nowMs()
    const early = this.early.get(key)
    if (early !== undefined) {
      prune(early, now)
      const pending = early.find((p) => p.lines[p.next] === record.body)
      if (pending !== undefined) {
        if (++pending.next === pending.lines.length) early.splice(early.indexOf(pending), 1)
        return false
      }
    }
    let lines = this.captured.get(key)
    if (lines === undefined) {
      if (this.captured.size >= MAX_KEYS) this.captured.delete(this.captured.keys().next().value!)
      this.captured.set(key, (lines = []))
    }
    lines.push(record)
    while (lines.length > MAX_REMEMBERED || (lines.length > 0 && now - lines[0]!.observed_timestamp_unix_nano / 1e6 > CONSOLE_PAIRING_MS)) lines.shift()
    return true
  }

  /**
   * An SDK console record (`svc.console`) of `worker`. Returns true when captured lines matched it
   * — they now carry its trace and span ids, and the record must not be stored — else false (the
   * caller stores it, and its lines captured later are dropped).
   */
  consoleRecord(worker: string, record: LogRecord): boolean {
    const stream = record.attributes['log.source'] === 'stderr' ? 'stderr' : 'stdout'
    const key = `${worker}\u0000${stream}`
    const body = record.body.split(/\r?\n/)
    // console.log('x\n') prints 'x' and an empty line; the captured side has both.
    const captured = this.captured.get(key)
    if (captured !== undefined) {
      for (let i = 0; i + body.length <= captured.length; i++) {
        let all = true
        for (let j = 0; j < body.length && all; j++) all = captured[i + j]!.body === body[j] && captured[i + j]!.trace_id === null
        if (!all) continue
        for (const line of captured.splice(i, body.length)) {
          line.trace_id = record.trace_id
          line.span_id = record.span_id
        }
        return true
      }
    }
    let early = this.early.get(key)
    if (early === undefined) {
      if (this.early.size >= MAX_KEYS) this.early.delete(this.early.keys().next().value!)
      this.early.set(key, (early = []))
    }
    early.push({ lines: body, next: 0, atMs: this.nowMs() })
    if (early.length > MAX_REMEMBERED) early.shift()
    return false
  }
}

function prune(pending: Pending[], now: number): void {
  while (pending.length > 0 && now - pending[0]!.atMs > CONSOLE_PAIRING_MS) pending.shift()
}

/**
 * A worker's log file (cli.md §2, §5.6): `.svc/logs/<name>.log`, rotated at 10 MiB with 3 files
 * kept (`<name>.log`, `<name>.log.1`, `<name>.log.2`).
 */
import { appendFile, mkdir, rename, rm, stat } from 'node:fs/promises'
import { dirname } from 'node:path'

export const LOG_ROTATE_BYTES = 10 * 1024 * 1024
export const LOG_FILES_KEPT = 3

/**
 * Appends lines to a log file without blocking the engine: lines written in one turn of the event
 * loop go out in one append, appends never overlap, and the file is rotated before an append
 * would take it past `rotateBytes`. Write failures are reported once through `onError` and the
 * lines dropped (a full disk must not stop the worker).
 */
export class LogFile {
  readonly path: string
  private readonly rotateBytes: number
  private readonly kept: number
  private readonly onError: (err: Error) => void
  private pending: string[] = []
  private size: number | undefined
  private chain: Promise<void> = Promise.resolve()
  private scheduled = false
  private failed = false

  constructor(path: string, options: { rotateBytes?: number; kept?: number; onError?: (err: Error) => void } = {}) {
    this.path = path
    this.rotateBytes = options.rotateBytes ?? LOG_ROTATE_BYTES
    this.kept = options.kept ?? LOG_FILES_KEPT
    this.onError = options.onError ?? (() => {})
  }

  /** Queues one line (a newline is added). */
  write(line: string): void {
    this.pending.push(line + '\n')
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.chain = this.chain.then(() => this.flushPending())
    })
  }

  /** Resolves once every line written so far is on disk. */
  async flush(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve))
    this.chain = this.chain.then(() => this.flushPending())
    await this.chain
  }

  private async flushPending(): Promise<void> {
    if (this.pending.length === 0) return
    const text = this.pending.join('')
    this.pending = []
    try {
      if (this.size === undefined) {
        await mkdir(dirname(this.path), { recursive: true })
        this.size = await stat(this.path).then(
          (s) => s.size,
          () => 0,
        )
      }
      const bytes = Buffer.byteLength(text)
      if (this.size > 0 && this.size + bytes > this.rotateBytes) await this.rotate()
      await appendFile(this.path, text)
      this.size += bytes
      this.failed = false
    } catch (err) {
      this.size = undefined
      if (!this.failed) this.onError(err as Error)
      this.failed = true
    }
  }

  private async rotate(): Promise<void> {
    await rm(`${this.path}.${this.kept - 1}`, { force: true })
    for (let n = this.kept - 2; n >= 1; n--) {
      await rename(`${this.path}.${n}`, `${this.path}.${n + 1}`).catch(() => {})
    }
    await rename(this.path, `${this.path}.1`)
    this.size = 0
  }
}

/**
 * Install output of `svc start` folded behind one spinner line (issue 11, cli.md §6 Progress):
 * while workers install before the banner, a TTY shows `⠙ installing math-worker (npm install) 4 s`
 * and holds other console output back; each install ends with one line. Its output reaches the
 * terminal only when it fails (it is always in `.svc/logs/<name>.log`).
 */
import type { Spinner } from 'listr2'
import { formatMs } from './dev-log.ts'

type Write = typeof process.stdout.write

/** One spinner line for the installs in progress; a no-op renderer when `tty` is false. */
export class InstallProgress {
  readonly #tty: boolean
  readonly #colour: boolean
  readonly #installing = new Map<string, { command: string; started: number }>()
  // listr2 loads when an install first shows progress, not at every engine start (issue 20).
  #spinner: Spinner | undefined
  #held: Array<{ stream: NodeJS.WriteStream; chunk: string | Uint8Array }> = []
  #restore: (() => void) | undefined
  #timer: NodeJS.Timeout | undefined
  #closed = false

  constructor(options: { tty: boolean; colour: boolean }) {
    this.#tty = options.tty
    this.#colour = options.colour
  }

  /** `name` started installing with `command`. */
  begin(name: string, command: string): void {
    if (!this.#tty || this.#closed) return
    this.#installing.set(name, { command, started: performance.now() })
    if (!this.#restore) this.#hold()
    this.#render()
  }

  /** `name` finished installing (`ok`), or failed: the caller prints its output after this. */
  end(name: string, ok: boolean): void {
    const entry = this.#installing.get(name)
    if (!entry) return
    this.#installing.delete(name)
    const took = formatMs(performance.now() - entry.started)
    const mark = ok ? this.#paint('32', '✔') : this.#paint('31', '✖')
    this.#direct(`${mark} ${ok ? 'Installed' : 'Install failed for'} ${name} (${entry.command}, ${took})\n`)
    if (this.#installing.size === 0) this.#release()
    else this.#render()
  }

  /** Stops showing progress (the banner is next, or svc is stopping); held output is written. */
  close(): void {
    this.#closed = true
    this.#installing.clear()
    this.#release()
  }

  #paint(code: string, text: string): string {
    return this.#colour ? `\u001b[${code}m${text}\u001b[0m` : text
  }

  /** Holds other console output back and starts the spinner. */
  #hold(): void {
    // Ctrl-C during an install: what svc says about stopping must not be held back.
    process.once('SIGINT', this.#onSignal)
    this.#patch()
    import('listr2').then(
      ({ Spinner }) => (this.#spinner ??= new Spinner()),
      () => {},
    )
    this.#timer = setInterval(() => {
      this.#spinner?.spin()
      this.#render()
    }, 100)
    this.#timer.unref()
  }

  #patch(): void {
    const out = process.stdout
    const err = process.stderr
    const write = { out: out.write, err: err.write }
    const holder = (stream: NodeJS.WriteStream): Write =>
      ((chunk: string | Uint8Array, ...rest: unknown[]) => {
        this.#held.push({ stream, chunk })
        const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined
        callback?.()
        return true
      }) as Write
    out.write = holder(out)
    err.write = holder(err)
    this.#restore = () => {
      out.write = write.out
      err.write = write.err
    }
  }

  /** Writes `text` past the hold, over the spinner line. */
  #direct(text: string): void {
    const restore = this.#restore
    if (!restore) return void process.stdout.write(text)
    restore()
    process.stdout.write(`\r\u001b[2K${text}`)
    this.#patch()
  }

  readonly #onSignal = () => this.close()

  #release(): void {
    process.off('SIGINT', this.#onSignal)
    clearInterval(this.#timer)
    this.#timer = undefined
    const restore = this.#restore
    if (!restore) return
    this.#restore = undefined
    restore()
    process.stdout.write('\r\u001b[2K')
    for (const { stream, chunk } of this.#held) stream.write(chunk)
    this.#held = []
  }

  #render(): void {
    if (!this.#restore || this.#installing.size === 0) return
    const now = performance.now()
    const parts = [...this.#installing].map(([name, e]) => `${name} (${e.command}, ${Math.floor((now - e.started) / 1000)} s)`)
    const text = `${this.#spinner?.fetch() ?? '⠋'} Installing dependencies: ${parts.join(' · ')}`
    const width = process.stdout.columns ?? 80
    this.#direct(text.length > width - 1 ? `${text.slice(0, width - 2)}…` : text)
  }
}

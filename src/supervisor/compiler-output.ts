/**
 * The compiler's first error in a build's output (issue 18: a failed Rust build is reported with
 * it while the previous binary keeps serving). rustc, as cargo prints it:
 *
 * ```
 * error[E0425]: cannot find value `y` in this scope
 *   --> src/main.rs:12:5
 * ```
 */

/** ANSI SGR and other CSI sequences (cargo colours its output when `CARGO_TERM_COLOR=always`). */
const CSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g

/** `error: …` or `error[E0425]: …` at the start of a line. */
const ERROR_LINE = /^error(?:\[[A-Za-z]\d{1,5}\])?: \S/

/** cargo's summary lines: they name no place and follow the real errors. */
const SUMMARY = /^error: (?:could not compile|aborting due to|build failed|failed to compile)/

/** The place line under a diagnostic: `  --> src/main.rs:12:5`. */
const PLACE_LINE = /^\s*-->\s+(\S.*:\d+:\d+)\s*$/

/** Longest line kept (a diagnostic may quote a long line of code). */
const MAX_LINE = 300

/**
 * Reads a build's output line by line and keeps its first error: the first `error…:` line that is
 * not a cargo summary, and the `--> file:line:col` line that follows it within three lines. A
 * summary line (`error: could not compile …`) is kept only when no other error came before it.
 *
 * @example
 * const scanner = new CompilerErrorScanner()
 * for (const line of output) scanner.push(line)
 * scanner.firstError // 'error[E0425]: cannot find value `y` in this scope\n  --> src/main.rs:12:5'
 */
export class CompilerErrorScanner {
  #error: string | undefined
  #place: string | undefined
  #summary: string | undefined
  /** Lines still to look at for the place of `#error`; 0 when done. */
  #placeWindow = 0

  /** Takes one line of output (stdout or stderr, without its line break). */
  push(raw: string): void {
    if (this.#error !== undefined && this.#placeWindow === 0) return
    const line = clip(raw.replace(CSI, '').replace(/\s+$/, ''))
    if (this.#error !== undefined) {
      this.#placeWindow--
      const place = PLACE_LINE.exec(line)
      if (place) {
        this.#place = place[1]
        this.#placeWindow = 0
      }
      return
    }
    if (!ERROR_LINE.test(line)) return
    if (SUMMARY.test(line)) {
      this.#summary ??= line
      return
    }
    this.#error = line
    this.#placeWindow = 3
  }

  /** The first error with its place on a second line (`  --> file:line:col`), or undefined. */
  get firstError(): string | undefined {
    if (this.#error === undefined) return this.#summary
    return this.#place === undefined ? this.#error : `${this.#error}\n  --> ${this.#place}`
  }

  /** The first error on one line: `error[E0425]: … (src/main.rs:12:5)`, or undefined. */
  get oneLine(): string | undefined {
    if (this.#error === undefined) return this.#summary
    return this.#place === undefined ? this.#error : `${this.#error} (${this.#place})`
  }
}

/** The first error of a whole output (see {@link CompilerErrorScanner}). */
export function firstCompilerError(lines: Iterable<string>): string | undefined {
  const scanner = new CompilerErrorScanner()
  for (const line of lines) scanner.push(line)
  return scanner.firstError
}

function clip(line: string): string {
  return line.length > MAX_LINE ? `${line.slice(0, MAX_LINE - 1)}…` : line
}

/** `file:///abs/worker.mjs:3` or `/abs/worker.ts:3`: the line Node prints above a syntax error. */
const NODE_PLACE = /^(?:file:\/\/)?((?:\/|[A-Za-z]:[\\/])[^\s:]*(?::[^\s:]+)*?):(\d{1,9})$/

/** esbuild (tsx) under `Error: Transform failed with 1 error:`: `/abs/src/index.ts:3:0: ERROR: Expected "}" but found "x"`. */
const ESBUILD_PLACE = /^((?:\/|[A-Za-z]:[\\/])[^\s:]*(?::[^\s:]+)*?):(\d{1,9}):(\d{1,9}): ERROR: (.+)$/

/** A stack frame: `at f (file:///abs/a.mjs:3:9)` or `at file:///abs/a.mjs:3:9`. */
const STACK_PLACE = /^at (?:.*? \()?(?:file:\/\/)?((?:\/|[A-Za-z]:[\\/])[^\s()]*?):(\d{1,9}):(\d{1,9})\)?$/

/** Python: `File "/abs/main.py", line 3` (a traceback or a SyntaxError). */
const PYTHON_PLACE = /^File "([^"]+)", line (\d{1,9})/

/** The line that names what went wrong: `…Error: …`, `…Exception…`, a panic, a traceback, `error:`. */
const ERROR_NAME = /^(\w+\.)*\w*(Error|Exception)\b|^panic|^Traceback|^error(\[|:)/i

/** Longest summary kept (a message may quote a long line of code). */
const MAX_SUMMARY = 200

/**
 * The one line that says why a worker process ended before it registered, with where when its
 * output says it (issue 21: the summary kept the message and lost the `file:line`):
 * `SyntaxError: Unexpected end of input (worker.mjs:3)`. The message is the last `…Error: …`,
 * `…Exception`, `panic` or `error:` line, else the last line that is not a stack frame or Node's
 * version footer; the place is, in this order, esbuild's (tsx) `file:line:col: ERROR: …` line (its
 * message replaces Transform failed's), the `file:line` Node prints above a syntax error, Python's
 * last `File "…", line n`, or the first stack frame below the message outside `node:` internals and
 * `node_modules`. Paths inside `directory` are shown relative to it. At most 200 characters;
 * undefined when nothing was printed.
 *
 * @example
 * startupErrorLine(['file:///w/worker.mjs:3', '', 'SyntaxError: Unexpected end of input', '    at …'], '/w')
 * // 'SyntaxError: Unexpected end of input (worker.mjs:3)'
 */
export function startupErrorLine(lines: readonly string[], directory?: string): string | undefined {
  // A line a process printed with a bare carriage return (a progress bar) is several lines on a terminal.
  const clean = lines.flatMap((l) => l.split(/\r\n|\r|\n/)).map((l) => clip(l.replace(CSI, '')).trim())
  const meaningful = clean.filter((l) => l !== '' && !/^at\s/.test(l) && !/^Node\.js v\d/.test(l) && l !== '^' && !/^\^+$/.test(l))
  let message = meaningful.findLast((l) => ERROR_NAME.test(l)) ?? meaningful.at(-1)
  if (message === undefined) return undefined
  const at = clean.lastIndexOf(message)
  let place: string | undefined
  const esbuild = clean.map((l) => ESBUILD_PLACE.exec(l)).find((m) => m !== null)
  if (esbuild) {
    place = `${shownPath(esbuild[1]!, directory)}:${esbuild[2]}:${esbuild[3]}`
    if (/^\w*Error: Transform failed/.test(message)) message = esbuild[4]!
  }
  if (place === undefined) {
    const node = clean.slice(0, at).findLast((l) => NODE_PLACE.test(l))
    const match = node === undefined ? null : NODE_PLACE.exec(node)
    if (match) place = `${shownPath(match[1]!, directory)}:${match[2]}`
  }
  if (place === undefined) {
    const python = clean.slice(0, at).findLast((l) => PYTHON_PLACE.test(l))
    const match = python === undefined ? null : PYTHON_PLACE.exec(python)
    if (match) place = `${shownPath(match[1]!, directory)}:${match[2]}`
  }
  if (place === undefined) {
    for (const line of clean.slice(at + 1)) {
      const match = STACK_PLACE.exec(line)
      if (!match || /[\\/]node_modules[\\/]/.test(match[1]!)) continue
      place = `${shownPath(match[1]!, directory)}:${match[2]}:${match[3]}`
      break
    }
  }
  const text = place === undefined || message.includes(place) ? message : `${message} (${place})`
  return text.length > MAX_SUMMARY ? `${text.slice(0, MAX_SUMMARY - 1)}…` : text
}

/** `path` relative to `directory` when inside it, else as it is; `file://` URLs decoded. */
function shownPath(path: string, directory: string | undefined): string {
  let absolute = path
  if (/%[0-9A-Fa-f]{2}/.test(absolute)) {
    try {
      absolute = decodeURIComponent(absolute)
    } catch {
      /* shown as printed */
    }
  }
  if (directory === undefined) return absolute
  const base = directory.endsWith('/') || directory.endsWith('\\') ? directory : `${directory}/`
  return absolute.startsWith(base) ? absolute.slice(base.length) : absolute
}

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

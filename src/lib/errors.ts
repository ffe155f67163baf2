/**
 * CLI errors and exit codes (cli.md §1, §1.1): every failure has a stable code, a one-line message,
 * an optional hint and an exit code; stacks are shown only with `DEBUG` set.
 *
 * Codes of engine, SDK and built-in workers come from the one catalogue in `svc-protocol/errors`
 * (exit class, hints keyed by its codes); failures the CLI itself detects have codes of their own
 * ({@link CliCodes}): those scripts test (`ENGINE_UNREACHABLE`, `MESSAGE_TOO_LARGE`) are catalogue
 * entries produced by the CLI (source `cli`), so errors.md lists them with their hint; the others
 * are no catalogue code.
 */
import { catalogueEntry, Codes, exitCodeOf } from 'svc-protocol/errors'
import { ConfigError, terminalJson, terminalLines, terminalText } from '../../runtime/index.ts'
import { debugEnabled } from './argv.ts'

// Read by bin/run.js before the CLI loads (it turns on source maps); kept importable from here.
export { debugEnabled }

/**
 * Codes of failures only the CLI detects (cli.md §1, §4.6); engine and function failures keep their
 * catalogue code (`Codes` of `svc-protocol/errors`). Other CLI modules add their own codes in place
 * (`CONFIG_NOT_FOUND`, `UNKNOWN_WORKER`, …); none of them may reuse a catalogue code for another
 * meaning: a CLI code in the catalogue is an entry whose source is `cli`.
 */
export const CliCodes = {
  /** A usage error: bad flag, argument or key=value (exit 2). */
  InvalidArgument: 'INVALID_ARGUMENT',
  /** The engine did not accept a connection (exit 3, cli.md §4.6); a catalogue entry with its hint. */
  EngineUnreachable: Codes.EngineUnreachable,
  /** A payload larger than the engine accepts in one message, refused before sending (exit 2); a catalogue entry. */
  MessageTooLarge: Codes.MessageTooLarge,
  /** oclif reported a failure that is not a usage error. */
  Failed: 'FAILED',
} as const

/** Exit codes of cli.md §1.1; 1–4 equal `EXIT_CODES` of the catalogue (a test holds them together). */
export const ExitCode = {
  /** Success; for `svc start`: stopped by SIGINT/SIGTERM. */
  Success: 0,
  /** The operation failed: a function returned an error, a port could not be bound, … */
  Failure: 1,
  /** Usage or configuration error: bad flag or argument, malformed key=value, invalid config. */
  Usage: 2,
  /** The engine is not reachable. */
  Unreachable: 3,
  /** Timed out (invocation or readiness wait). */
  Timeout: 4,
  /** A second SIGINT, or SIGINT during a one-shot command. */
  Interrupted: 130,
} as const
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export interface CliErrorInit {
  /** Stable code for `--json` output: a spec error code (`INVALID_CONFIG`, `function_not_found`, …). */
  code: string
  message: string
  exitCode: ExitCodeValue
  /** Printed as `Hint: <hint>` after the message. */
  hint?: string
  /** Extra text printed after the message in human mode. */
  details?: string
  /** Printed after the message only with `--debug`/`DEBUG`, e.g. a function's stack trace. */
  debugDetails?: string
  cause?: unknown
}

/**
 * A failure the CLI reports to the user: `Error: <message>` (then `details`, then `Hint: <hint>`)
 * on stderr, or `{"error":{"code","message"}}` on stdout with `--json`, and exit code `exitCode`.
 *
 * @example throw new CliError({ code: 'INVALID_ARGUMENT', message: "Invalid argument 'x': expected key=value", exitCode: ExitCode.Usage })
 */
export class CliError extends Error {
  override readonly name = 'CliError'
  readonly code: string
  readonly exitCode: ExitCodeValue
  readonly hint: string | undefined
  readonly details: string | undefined
  readonly debugDetails: string | undefined

  constructor(init: CliErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.code = init.code
    this.exitCode = init.exitCode
    this.hint = init.hint
    this.details = init.details
    this.debugDetails = init.debugDetails
  }
}

/**
 * The CLI's hint for a catalogue code (cli.md §1 `Hint: <text>`): the entry's `hint` in the one
 * catalogue of `svc-protocol/errors`, which also holds the cause and fix errors.md lists; undefined
 * for other codes and codes without one. `function_not_found`: the outcome table of cli.md §4.6.
 */
export function hintFor(code: string): string | undefined {
  return catalogueEntry(code)?.hint
}

/**
 * The exit code of cli.md §1.1 for an operation that failed with `code`: the catalogue's exit class
 * (`NOT_CONNECTED` 3, `TIMEOUT` 4, `INVALID_NAMESPACE` 2, …), 1 for codes outside it.
 */
export function exitCodeForCode(code: string): ExitCodeValue {
  return exitCodeOf(code) as ExitCodeValue
}

/** A usage error (exit 2) with code `INVALID_ARGUMENT`. */
export function usageError(message: string, hint?: string): CliError {
  const init: CliErrorInit = { code: CliCodes.InvalidArgument, message, exitCode: ExitCode.Usage }
  if (hint !== undefined) init.hint = hint
  return new CliError(init)
}

/**
 * Converts anything thrown into a {@link CliError}: config errors and oclif parse errors are usage
 * errors (exit 2); an error with a catalogue code exits as the catalogue says ({@link exitCodeForCode});
 * anything else is a failure (exit 1) with its own code, else `internal_error`.
 */
export function toCliError(err: unknown): CliError {
  if (err instanceof CliError) return err
  if (err instanceof ConfigError) {
    return new CliError({ code: err.code, message: err.message, exitCode: ExitCode.Usage, cause: err })
  }
  if (err instanceof Error) {
    const oclif = (err as { oclif?: { exit?: number } }).oclif
    if (oclif && typeof oclif.exit === 'number') {
      // oclif's parser errors (unknown flag, missing value, bad option) carry exit 2.
      const exitCode = oclif.exit === 2 ? ExitCode.Usage : ExitCode.Failure
      const message = err.message.replace(/\n+See more help with --help\s*$/, '').trim()
      return new CliError({ code: exitCode === ExitCode.Usage ? CliCodes.InvalidArgument : CliCodes.Failed, message, exitCode, cause: err })
    }
    const own = (err as { code?: unknown }).code
    const init: CliErrorInit = typeof own === 'string'
      ? { code: own, message: err.message, exitCode: exitCodeForCode(own), cause: err }
      : { code: Codes.InternalError, message: err.message, exitCode: ExitCode.Failure, cause: err }
    const hint = typeof own === 'string' ? hintFor(own) : undefined
    if (hint !== undefined) init.hint = hint
    return new CliError(init)
  }
  return new CliError({ code: Codes.InternalError, message: String(err), exitCode: ExitCode.Failure })
}

/**
 * Human form: `Error: …`, details, `Hint: …`, and the stack when `debug` is on. Ends with a newline.
 * Messages quote what came from outside (a function's error, a file, an argument), so every
 * control character is shown escaped (issue 16, `terminalText`): the message and the hint stay
 * one line each — further lines of a message are indented, so none can pass for an `Error:` or
 * `Hint:` line — and the lines of details and stacks are kept, each escaped.
 */
export function formatHumanError(err: CliError, debug = false): string {
  const block = (text: string) => `${terminalLines(text.endsWith('\n') ? text.slice(0, -1) : text).join('\n')}\n`
  let text = `Error: ${terminalLines(err.message).join('\n  ')}\n`
  if (err.details) text += block(err.details)
  if (debug && err.debugDetails) text += block(err.debugDetails)
  if (err.hint) text += `Hint: ${terminalText(err.hint)}\n`
  else if (!debug && err.debugDetails) text += 'Hint: run again with --debug to see the stack trace\n'
  if (debug) {
    const origin = err.cause instanceof Error ? err.cause : err
    if (origin.stack) text += block(origin.stack)
  }
  return text
}

/** `--json` form of cli.md §1: `{"error":{"code","message"}}` plus any extra fields. One line, safe for a terminal ({@link terminalJson}). */
export function formatJsonError(err: CliError, extra: Record<string, unknown> = {}): string {
  return `${terminalJson({ ...extra, error: { code: err.code, message: err.message } })}\n`
}

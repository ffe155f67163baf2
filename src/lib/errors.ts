/**
 * CLI errors and exit codes (cli.md §1, §1.1): every failure has a stable code, a one-line message,
 * an optional hint and an exit code; stacks are shown only with `DEBUG` set.
 */
import { ConfigError } from '../../runtime/config/errors.ts'

/** Exit codes of cli.md §1.1. */
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
  /** Extra text printed after the message in human mode, e.g. a remote stack trace. */
  details?: string
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

  constructor(init: CliErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.code = init.code
    this.exitCode = init.exitCode
    this.hint = init.hint
    this.details = init.details
  }
}

/** A usage error (exit 2) with code `INVALID_ARGUMENT`. */
export function usageError(message: string, hint?: string): CliError {
  const init: CliErrorInit = { code: 'INVALID_ARGUMENT', message, exitCode: ExitCode.Usage }
  if (hint !== undefined) init.hint = hint
  return new CliError(init)
}

/**
 * Converts anything thrown into a {@link CliError}: config errors and oclif parse errors are usage
 * errors (exit 2), anything else a failure (exit 1).
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
      return new CliError({ code: exitCode === ExitCode.Usage ? 'INVALID_ARGUMENT' : 'FAILED', message, exitCode, cause: err })
    }
    const own = (err as { code?: unknown }).code
    return new CliError({
      code: typeof own === 'string' ? own : 'internal_error',
      message: err.message,
      exitCode: ExitCode.Failure,
      cause: err,
    })
  }
  return new CliError({ code: 'internal_error', message: String(err), exitCode: ExitCode.Failure })
}

/** True when stack traces should be shown (`DEBUG` set to anything but empty, `0` or `false`). */
export function debugEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = env.DEBUG
  return value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false'
}

/** Human form: `Error: …`, details, `Hint: …`, and the stack when `debug` is on. Ends with a newline. */
export function formatHumanError(err: CliError, debug = false): string {
  let text = `Error: ${err.message}\n`
  if (err.details) text += err.details.endsWith('\n') ? err.details : `${err.details}\n`
  if (err.hint) text += `Hint: ${err.hint}\n`
  if (debug) {
    const origin = err.cause instanceof Error ? err.cause : err
    if (origin.stack) text += `${origin.stack}\n`
  }
  return text
}

/** `--json` form of cli.md §1: `{"error":{"code","message"}}` plus any extra fields. One line. */
export function formatJsonError(err: CliError, extra: Record<string, unknown> = {}): string {
  return `${JSON.stringify({ ...extra, error: { code: err.code, message: err.message } })}\n`
}

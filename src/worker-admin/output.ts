/**
 * Where the worker commands' human output goes (cli.md §1): results on stdout, warnings and
 * `Error:`/`Hint:` lines on stderr; with `--json` nothing is written until the one JSON document.
 */
import { terminalLines, terminalText } from '../../runtime/index.ts'
import { debugEnabled, formatHumanError, toCliError } from '../lib/errors.ts'
import type { CliError } from '../lib/errors.ts'

export interface Output {
  /** One result line (stdout). */
  line(text: string): void
  /** `Warning: <text>` (stderr). */
  warn(text: string): void
  /** A failure of one argument; the command goes on with the next one (stderr). */
  error(err: CliError): void
}

/** Human output on the process streams, or `sinks` for tests. */
export function humanOutput(sinks: { stdout?: (text: string) => void; stderr?: (text: string) => void } = {}): Output {
  const stdout = sinks.stdout ?? ((text: string) => void process.stdout.write(text))
  const stderr = sinks.stderr ?? ((text: string) => void process.stderr.write(text))
  return {
    // Lines quote names, paths and messages from files and the engine: escaped (issue 16).
    line: (text) => stdout(`${terminalLines(text).join('\n')}\n`),
    warn: (text) => stderr(`Warning: ${terminalText(text)}\n`),
    error: (err) => stderr(formatHumanError(toCliError(err), debugEnabled())),
  }
}

/** Output for `--json`: the command prints the collected results itself. */
export function silentOutput(): Output {
  return { line: () => undefined, warn: () => undefined, error: () => undefined }
}


/** The `{code, message}` of a failure in `--json` results. */
export function jsonError(err: CliError): { code: string; message: string } {
  return { code: err.code, message: err.message }
}

/**
 * Base class of svc commands: one place that turns any failure into the output and exit code of
 * cli.md §1 (`Error: …`/`Hint: …` on stderr, or `{"error":{"code","message"}}` on stdout with --json).
 */
import { Command, Flags } from '@oclif/core'
import { setLogColour } from '../../runtime/index.ts'
import { debugEnabled, formatHumanError, formatJsonError, toCliError } from './errors.ts'
import type { CliError } from './errors.ts'

/**
 * Every svc command extends this instead of oclif's `Command`: a thrown {@link CliError} (or any
 * error, through `toCliError`) becomes the message and exit code of cli.md §1.1, and oclif's own
 * parse errors (unknown flag, bad option value) exit 2 in the same format.
 */
export abstract class SvcCommand extends Command {
  /** Accepted by every command; read from argv by {@link debugEnabled} so parse errors honour it too. */
  static override baseFlags = {
    debug: Flags.boolean({ summary: 'Show stack traces with errors (also DEBUG=1)', helpGroup: 'GLOBAL' }),
    color: Flags.boolean({
      summary: 'Colour the output (default: on a terminal, unless NO_COLOR is set); --no-color turns it off',
      allowNo: true,
      helpGroup: 'GLOBAL',
    }),
  }

  /**
   * Applies `--color`/`--no-color` (cli.md §1 Colour) before the command runs, so every line it
   * prints — log lines, progress, errors — follows it, parse errors included. The last of the two
   * before any `--` wins; without either, `colourEnabled`'s rules (TTY, `NO_COLOR`, `FORCE_COLOR`).
   * oclif's help and listr2 read `--no-color` from the process's argv themselves.
   */
  override async init(): Promise<void> {
    const colour = colourRequested(this.argv)
    if (colour !== undefined) setLogColour(colour)
    await super.init()
  }

  /** True when `--json` appears before any `--` (known before flags are parsed, so parse errors follow it). */
  protected jsonRequested(): boolean {
    const end = this.argv.indexOf('--')
    return (end < 0 ? this.argv : this.argv.slice(0, end)).includes('--json')
  }

  /** Fields added to the `--json` error object (e.g. `ok: false` for svc trigger). */
  protected jsonErrorFields(): Record<string, unknown> {
    return {}
  }

  override async catch(err: Error & { code?: unknown; oclif?: { exit?: number } }): Promise<unknown> {
    // this.exit() throws an ExitError; let it through so oclif exits with its code quietly.
    if (err.code === 'EEXIT') throw err
    const error = toCliError(err)
    if (this.jsonRequested()) process.stdout.write(formatJsonError(error, this.jsonErrorFields()))
    else process.stderr.write(formatHumanError(error, debugEnabled()))
    this.exit(error.exitCode)
    return undefined
  }
}

/**
 * `--color` (true) or `--no-color` (false) as the last of them before any `--` in `argv`;
 * undefined when neither is given.
 *
 * @example colourRequested(['--color', 'x', '--no-color']) // false
 */
export function colourRequested(argv: readonly string[]): boolean | undefined {
  const end = argv.indexOf('--')
  let colour: boolean | undefined
  for (const arg of end < 0 ? argv : argv.slice(0, end)) {
    if (arg === '--color') colour = true
    else if (arg === '--no-color') colour = false
  }
  return colour
}

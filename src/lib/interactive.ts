/**
 * When a command may ask questions (cli.md §1 Interactive): stdin and stdout are TTYs, `CI` is
 * unset, and neither `--json` nor `--yes` was given. Otherwise defaults apply or the command fails
 * naming the missing flag or argument (exit 2).
 */
import { CliError, ExitCode } from './errors.ts'

export interface InteractiveContext {
  stdinIsTTY: boolean
  stdoutIsTTY: boolean
  env: NodeJS.ProcessEnv
  json: boolean
  yes: boolean
}

/** The rule of cli.md §1, on explicit inputs (for tests). */
export function isInteractive(context: InteractiveContext): boolean {
  return context.stdinIsTTY && context.stdoutIsTTY && context.env.CI === undefined && !context.json && !context.yes
}

/** The rule of cli.md §1 for this process. */
export function isInteractiveProcess(flags: { json?: boolean; yes?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return isInteractive({
    stdinIsTTY: Boolean(process.stdin.isTTY),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    env,
    json: flags.json === true,
    yes: flags.yes === true,
  })
}

/**
 * Awaits a prompt; Ctrl-C in it (@inquirer/prompts' `ExitPromptError`) becomes exit 130
 * (cli.md §1.1).
 */
export async function interruptible<T>(prompt: Promise<T>): Promise<T> {
  try {
    return await prompt
  } catch (err) {
    if (err instanceof Error && err.name === 'ExitPromptError') {
      throw new CliError({ code: 'INTERRUPTED', message: 'Interrupted', exitCode: ExitCode.Interrupted, cause: err })
    }
    throw err
  }
}

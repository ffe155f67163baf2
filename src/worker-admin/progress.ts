/**
 * Progress steps of `svc worker add` (cli.md §6 Progress): listr2's default renderer on a TTY,
 * one plain line per finished step otherwise, nothing with `--json`.
 *
 * Each step is its own one-task list: which steps exist is learnt while following the worker
 * (an install step appears only when the supervisor installs), so the list cannot be built ahead.
 */
import { Listr, ListrLogger, ListrLogLevels } from 'listr2'

/**
 * Runs one step: `task` resolves with the finished title (or nothing to keep `title`); a rejection
 * marks the step failed and is rethrown unchanged.
 */
export type StepRunner = (title: string, task?: () => Promise<string | void>) => Promise<void>

/** Steps as lines for a terminal (`tty`), as plain finished-step lines (`plain`), or not shown (`silent`). */
export function createStepRunner(mode: 'tty' | 'plain' | 'silent'): StepRunner {
  if (mode === 'silent') {
    return async (_title, task) => {
      await task?.()
    }
  }
  return async (title, task) => {
    const list = new Listr(
      [
        {
          title,
          task: async (_ctx, wrapper) => {
            const finished = await task?.()
            if (typeof finished === 'string') wrapper.title = finished
          },
        },
      ],
      mode === 'tty'
        ? { renderer: 'default', exitOnError: true, rendererOptions: { showErrorMessage: false } }
        : { renderer: 'simple', exitOnError: true, rendererOptions: { logger: new FinishedStepsLogger({ useIcons: true, toStderr: [ListrLogLevels.FAILED] }) } },
    )
    await list.run()
  }
}

/** The simple renderer's logger without the "started" lines and failure suffixes (the error is printed once, by the command). */
class FinishedStepsLogger extends ListrLogger {
  override log(level: ListrLogLevels, message: string | any[], options?: Parameters<ListrLogger['log']>[2]): void {
    if (level === ListrLogLevels.STARTED) return
    if (level === ListrLogLevels.FAILED) return super.log(level, message)
    super.log(level, message, options)
  }
}

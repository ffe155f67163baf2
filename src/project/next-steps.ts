/**
 * The next steps printed after `svc project init` (cli.md §4.1).
 */
import { displayDirectory } from './target.ts'
import type { NextStep, TemplateInfo } from './types.ts'

/** Commands longer than this do not widen the comment column. */
const MAX_ALIGNED_COMMAND = 48

/**
 * Next steps for a new project at `directory`: `cd` there (unless it is `cwd`), `svc`, then the
 * template's own example; for the `worker` template, `svc worker add`. (`svc console` joins the
 * list when the console ships.)
 */
export function nextSteps(template: TemplateInfo, directory: string, cwd: string): NextStep[] {
  const shown = displayDirectory(directory, cwd)
  if (template.kind === 'worker') {
    return [{ command: `svc worker add ${shellWord(shown)}`, comment: 'from the project: declare it, install, start and watch it' }]
  }
  const steps: NextStep[] = []
  if (shown !== '.') steps.push({ command: `cd ${shellWord(shown.replace(/^\.\//, ''))}` })
  steps.push({ command: 'svc', comment: 'engine, built-ins and workers' })
  if (template.tryIt) steps.push(template.tryIt)
  return steps
}

/**
 * The block of cli.md §4.1: `Next steps:`, then each command indented by two spaces with its
 * comment aligned in one column.
 *
 * @example
 * Next steps:
 *   cd my-app
 *   svc                                         # engine, built-ins and workers
 */
export function formatNextSteps(steps: readonly NextStep[]): string {
  const aligned = steps.filter((s) => s.comment !== undefined && s.command.length <= MAX_ALIGNED_COMMAND)
  const width = Math.max(0, ...aligned.map((s) => s.command.length)) + 3
  const lines = steps.map((s) =>
    s.comment === undefined ? `  ${s.command}` : `  ${s.command}${' '.repeat(Math.max(3, width - s.command.length))}# ${s.comment}`,
  )
  return `Next steps:\n${lines.join('\n')}\n`
}

/** `word` quoted for a POSIX shell when it holds anything but safe characters. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

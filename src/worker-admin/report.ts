/**
 * The `--json` document of `svc worker add|remove` (cli.md §4.2, §1).
 */
import { terminalJson } from '../../runtime/index.ts'

/**
 * Prints `{"workers": [...]}` on one line, plus the top-level `error` of cli.md §1 (the first
 * failing worker's `{code, message}`) when `exitCode` is not 0, so scripts can test one field
 * whatever the command.
 *
 * @example printJsonReport(report.workers, report.exitCode)
 */
export function printJsonReport(
  workers: ReadonlyArray<{ error?: { code: string; message: string } }>,
  exitCode: number,
  write: (text: string) => void = (text) => void process.stdout.write(text),
): void {
  const document: Record<string, unknown> = { workers }
  if (exitCode !== 0) {
    const failed = workers.find((w) => w.error !== undefined)
    if (failed?.error) document.error = failed.error
  }
  write(`${terminalJson(document)}\n`)
}

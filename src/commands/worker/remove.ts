/**
 * `svc worker remove`: take workers out of config.yaml, or turn built-ins off (cli.md §4.4).
 */
import { Args, Flags } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { interruptible, isInteractiveProcess } from '../../lib/interactive.ts'
import { EngineAccess, humanOutput, openProject, printJsonReport, removeWorkers, silentOutput } from '../../worker-admin/index.ts'

export default class WorkerRemove extends SvcCommand {
  static override summary = 'Remove workers from config.yaml, or disable built-ins'
  static override description =
    'A local worker or console loses its config.yaml entry; a built-in that runs by default gets enabled: false. ' +
    'Files in the worker directory and .svc/logs are left in place.'

  static override usage = ['worker remove <NAME>... [-c <file>] [--yes] [--json]']

  static override examples = ['<%= config.bin %> worker remove math-worker', '<%= config.bin %> worker remove svc-cron --yes']

  // NAME may be repeated.
  static override strict = false

  static override args = {
    name: Args.string({ description: 'Entry name of a local worker, or a built-in name or alias', required: true }),
  }

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    yes: Flags.boolean({ summary: 'Do not ask before stopping a running worker' }),
    json: Flags.boolean({ summary: 'Print one JSON document: {"workers": [...]}' }),
  }

  async run(): Promise<void> {
    const { flags, argv } = await this.parse(WorkerRemove)
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    const engine = new EngineAccess(project.engine ?? project.engineUrl, { announce: flags.json ? undefined : (text) => void process.stderr.write(text) })
    let report
    try {
      report = await removeWorkers(argv as string[], {
        project,
        output: flags.json ? silentOutput() : humanOutput(),
        engine,
        confirm: isInteractiveProcess(flags) ? ask : undefined,
      })
    } finally {
      await engine.close()
    }
    if (flags.json) printJsonReport(report.workers, report.exitCode)
    if (report.exitCode !== 0) this.exit(report.exitCode)
  }
}

/** `? Stop and remove math-worker? (Y/n)`; Ctrl-C at the prompt exits 130 (cli.md §1.1). */
async function ask(message: string): Promise<boolean> {
  const { confirm } = await import('@inquirer/prompts')
  return interruptible(confirm({ message, default: true }))
}

/**
 * `svc logs [WORKER] [-f]`: worker and engine log lines (issue 11).
 */
import { Args, Flags } from '@oclif/core'
import { colourEnabled } from '../../runtime/engine/logger.ts'
import { SvcCommand } from '../lib/command.ts'
import { EngineAccess, openProject } from '../worker-admin/index.ts'
import { logsFromFiles, logsFromStore } from '../worker-admin/logs.ts'

export default class Logs extends SvcCommand {
  static override summary = 'Show (and follow) the log lines of the workers and the engine'
  static override description =
    'Reads the log store of the running engine (engine::logs::list) when svc runs with its observability worker, ' +
    'else the log files svc writes for each worker it launches (.svc/logs/<name>.log).'

  static override examples = ['<%= config.bin %> logs', '<%= config.bin %> logs math-worker -f', '<%= config.bin %> logs --files -n 200']

  static override args = {
    worker: Args.string({ description: 'Only this worker (its name in config.yaml, or a service name)', required: false }),
  }

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing new lines until Ctrl-C' }),
    lines: Flags.integer({ char: 'n', summary: 'Lines printed before following (default 50)', default: 50, min: 0 }),
    files: Flags.boolean({ summary: 'Read the log files even when the engine runs' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Logs)
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    let stop!: () => void
    const stopped = new Promise<void>((resolve) => (stop = resolve))
    const onSignal = () => stop()
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const options = {
      projectRoot: project.root,
      worker: args.worker,
      lines: flags.lines,
      follow: flags.follow,
      colour: colourEnabled(process.stdout),
      write: (text: string) => void process.stdout.write(text),
      stopped,
    }
    const engine = new EngineAccess(project.engineUrl)
    try {
      const session = flags.files ? undefined : await engine.get()
      if (!session || !(await logsFromStore(session, options))) await logsFromFiles(options)
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await engine.close()
    }
  }
}

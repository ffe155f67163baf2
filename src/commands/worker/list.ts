/**
 * `svc worker list`: every worker of the project with its status (cli.md §4.5).
 */
import { Flags } from '@oclif/core'
import { terminalJson } from '../../../runtime/index.ts'
import { SvcCommand } from '../../lib/command.ts'
import { EngineAccess, formatTable, listWorkers, openProject } from '../../worker-admin/index.ts'

export default class WorkerList extends SvcCommand {
  static override summary = 'List the workers of the project and their status'
  static override description =
    'Merges config.yaml, the supervisor state files and, when svc is running, the workers connected to the engine.'

  static override examples = ['<%= config.bin %> worker list', '<%= config.bin %> worker list --all --json']

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    all: Flags.boolean({ summary: 'Also list the mandatory built-ins and connected workers config.yaml does not declare' }),
    json: Flags.boolean({ summary: 'Print one JSON document: {"engine_running", "workers": [...]}' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(WorkerList)
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    const engine = new EngineAccess(project.engine ?? project.engineUrl, { announce: flags.json ? undefined : (text) => void process.stderr.write(text) })
    try {
      const listing = await listWorkers({ all: flags.all }, { project, env: process.env, engine })
      process.stdout.write(flags.json ? `${terminalJson(listing)}\n` : formatTable(listing.workers))
    } finally {
      await engine.close()
    }
  }
}

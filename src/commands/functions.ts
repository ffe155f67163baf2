/**
 * `svc functions`: list the functions of the running engine (id, worker, namespace, description).
 */
import { Flags } from '@oclif/core'
import { SvcCommand } from '../lib/command.ts'
import { terminalJson } from '../../runtime/index.ts'
import { formatFunctionsTable, listFunctions } from '../lib/functions.ts'
import { engineNotice, projectEngine, unreachableHint } from '../lib/project.ts'

export default class Functions extends SvcCommand {
  static override summary = 'List the functions registered with the running engine'
  static override description =
    'Reads engine::functions::list and prints one row per function: id, worker, namespace and description. ' +
    'Internal functions (engine::*, those marked internal) are listed only with --all.'

  static override examples = [
    '<%= config.bin %> functions',
    '<%= config.bin %> functions -n billing --search invoice',
    '<%= config.bin %> functions --all --json',
  ]

  static override flags = {
    namespace: Flags.string({ char: 'n', summary: 'Only functions of this namespace (default: every namespace)' }),
    all: Flags.boolean({ summary: 'Also list internal functions (engine::*, metadata.internal)' }),
    search: Flags.string({ char: 's', summary: 'Only functions whose id or description contains this text' }),
    worker: Flags.string({ char: 'w', summary: 'Only functions served by this worker' }),
    engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
    json: Flags.boolean({ summary: 'Print one JSON document: {"functions": [{function_id, worker, namespace, description, internal, replica_count}]}' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Functions)
    const target = projectEngine({ flag: flags.engine, cwd: process.cwd() })
    // Which engine answers, on stderr (outside a project: that none was found); --json stays one document.
    const notice = engineNotice(target)
    if (notice !== undefined && !flags.json) process.stderr.write(notice)
    const functions = await listFunctions({ url: target.url, namespace: flags.namespace, all: flags.all, search: flags.search, worker: flags.worker, unreachableHint: unreachableHint(target) })
    process.stdout.write(flags.json ? `${terminalJson({ functions })}\n` : formatFunctionsTable(functions))
  }
}

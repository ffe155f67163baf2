/**
 * `svc compose restart`: restart one container, or the whole project with the file re-read (cli.md §4.7, `compose::restart`).
 */
import { Args } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { terminalJson } from '../../../runtime/index.ts'
import { callCompose, composeClientFlags, composeTarget, formatOpResult } from '../../lib/compose-client.ts'
import type { OpResult } from '../../compose/types.ts'

export default class ComposeRestart extends SvcCommand {
  static override summary = 'Restart one container, or the whole compose project'
  static override description = 'Asks the compose daemon (compose::restart): with CONTAINER, stops and starts that container; without, brings the project down and up again with the file re-read.'
  static override examples = ['<%= config.bin %> compose restart api', '<%= config.bin %> compose restart -n shop']

  static override args = { container: Args.string({ description: 'Container key (default: every container)', required: false }) }

  static override flags = composeClientFlags

  async run(): Promise<void> {
    const { flags, args } = await this.parse(ComposeRestart)
    const target = composeTarget(flags)
    const { result } = await callCompose<OpResult>(target, 'restart', args.container === undefined ? {} : { container: args.container })
    process.stdout.write(flags.json ? `${terminalJson(result)}\n` : formatOpResult('restart', result))
    if (result.status !== 'ok') this.exit(1)
  }
}

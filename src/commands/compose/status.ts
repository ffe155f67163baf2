/**
 * `svc compose status`: the containers of a compose file and their states (cli.md §4.7, `compose::status`).
 */
import { SvcCommand } from '../../lib/command.ts'
import { terminalJson } from '../../../runtime/index.ts'
import { callCompose, composeClientFlags, composeTarget, formatStatus } from '../../lib/compose-client.ts'
import type { StatusResult } from '../../compose/types.ts'

export default class ComposeStatus extends SvcCommand {
  static override summary = 'Show the containers of the compose project and their states'
  static override description = 'Asks the compose daemon (compose::status) for every container of the file: worker, state, pid, restarts, start time and last error.'
  static override examples = ['<%= config.bin %> compose status', '<%= config.bin %> compose status -n shop --json']

  static override flags = composeClientFlags

  async run(): Promise<void> {
    const { flags } = await this.parse(ComposeStatus)
    const target = composeTarget(flags)
    const { result } = await callCompose<StatusResult>(target, 'status', {})
    process.stdout.write(flags.json ? `${terminalJson(result)}\n` : formatStatus(result))
  }
}

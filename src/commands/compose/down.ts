/**
 * `svc compose down`: stop the containers of a compose file (cli.md §4.7, `compose::down`).
 */
import { SvcCommand } from '../../lib/command.ts'
import { terminalJson } from '../../../runtime/index.ts'
import { callCompose, composeClientFlags, composeTarget, formatOpResult } from '../../lib/compose-client.ts'
import type { OpResult } from '../../compose/types.ts'

export default class ComposeDown extends SvcCommand {
  static override summary = 'Stop the containers of the compose project'
  static override description = 'Asks the compose daemon (compose::down) to stop the containers of the file in reverse dependency order; the daemon keeps running.'
  static override examples = ['<%= config.bin %> compose down', '<%= config.bin %> compose down -n shop -f deploy/worker-compose.yaml']

  static override flags = composeClientFlags

  async run(): Promise<void> {
    const { flags } = await this.parse(ComposeDown)
    const target = composeTarget(flags)
    const { result } = await callCompose<OpResult>(target, 'down', {})
    process.stdout.write(flags.json ? `${terminalJson(result)}\n` : formatOpResult('down', result))
    if (result.status !== 'ok') this.exit(1)
  }
}

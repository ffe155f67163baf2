/**
 * `svc compose remove`: stop a container and remove it from its compose file (cli.md §4.7, `compose::remove`).
 */
import { Args } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { terminalJson } from '../../../runtime/index.ts'
import { callCompose, composeClientFlags, composeTarget, formatRemove } from '../../lib/compose-client.ts'
import type { RemoveResult } from '../../compose/types.ts'

export default class ComposeRemove extends SvcCommand {
  static override summary = 'Stop a container and remove it from the compose file'
  static override description = 'Asks the compose daemon (compose::remove) to stop CONTAINER and delete its entry from the file (comments and order kept).'
  static override examples = ['<%= config.bin %> compose remove api']

  static override args = { container: Args.string({ description: 'Container key', required: true }) }

  static override flags = composeClientFlags

  async run(): Promise<void> {
    const { flags, args } = await this.parse(ComposeRemove)
    const target = composeTarget(flags)
    const { result } = await callCompose<RemoveResult>(target, 'remove', { container: args.container })
    process.stdout.write(flags.json ? `${terminalJson(result)}\n` : formatRemove(result))
    if (result.status !== 'ok') this.exit(1)
  }
}

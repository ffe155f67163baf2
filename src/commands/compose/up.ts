/**
 * `svc compose up`: run the compose daemon and bring the compose file up (cli.md §4.7).
 */
import { SvcCommand } from '../../lib/command.ts'
import { serveCompose } from '../../compose/serve.ts'
import { composeFlags } from './index.ts'

export default class ComposeUp extends SvcCommand {
  static override summary = 'Run the compose daemon and start the compose file'
  static override description =
    'Like svc compose, then brings up the file (-f, default ./worker-compose.yaml): containers start in dependency order. ' +
    'Exits 1 with PROJECT_DID_NOT_START and the container errors when that fails; otherwise keeps serving.'

  static override examples = ['<%= config.bin %> compose up', '<%= config.bin %> compose up -n shop -f deploy/worker-compose.yaml --json']

  static override flags = composeFlags

  async run(): Promise<void> {
    const { flags } = await this.parse(ComposeUp)
    const code = await serveCompose({
      namespace: flags.namespace,
      engine: flags.engine,
      file: flags.file,
      json: flags.json,
      up: true,
      cwd: process.cwd(),
      env: process.env,
      tty: Boolean(process.stdout.isTTY) && !process.env.CI,
    })
    this.exit(code)
  }
}

/**
 * `svc compose`: run the compose daemon of one namespace in the foreground (cli.md §4.7).
 */
import { Flags } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { serveCompose } from '../../compose/serve.ts'

/** Flags shared by `svc compose` and `svc compose up`. */
export const composeFlags = {
  namespace: Flags.string({ char: 'n', summary: 'Namespace to serve; containers register there (default: two generated words, e.g. brave-otter)' }),
  engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
  file: Flags.string({ char: 'f', summary: 'Compose file used when a call names none (default: ./worker-compose.yaml)' }),
  json: Flags.boolean({ summary: 'Print one JSON event per line (compose_ready, project_up, log, stopped)' }),
}

export default class Compose extends SvcCommand {
  static override summary = 'Run the compose daemon of a namespace'
  static override description =
    'Connects to the engine as the worker `compose`, serves compose::up|down|restart|status|list|validate|add|remove|stop|schema in its ' +
    'namespace, and runs the containers of worker-compose.yaml files there until SIGINT, SIGTERM or compose::stop.'

  static override examples = [
    '<%= config.bin %> compose -n shop',
    '<%= config.bin %> trigger -n shop compose::add worker=./workers/api',
    '<%= config.bin %> compose status -n shop',
    '<%= config.bin %> compose down -n shop',
  ]

  static override flags = composeFlags

  async run(): Promise<void> {
    const { flags } = await this.parse(Compose)
    const code = await serveCompose({
      namespace: flags.namespace,
      engine: flags.engine,
      file: flags.file,
      json: flags.json,
      up: false,
      cwd: process.cwd(),
      env: process.env,
      tty: Boolean(process.stdout.isTTY) && !process.env.CI,
    })
    this.exit(code)
  }
}

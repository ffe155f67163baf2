/**
 * `svc console`: the web console server (cli.md §4.8, §7).
 */
import { Flags } from '@oclif/core'
import { DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT } from 'svc-console'
import { SvcCommand } from '../lib/command.ts'
import { runConsole, untilSignal } from '../lib/console.ts'
import { isInteractiveProcess } from '../lib/interactive.ts'
import { resolveEngineUrl } from '../lib/project.ts'

export default class Console extends SvcCommand {
  static override summary = 'Serve the web console of a running engine'
  static override description =
    'Serves the web console on http://127.0.0.1:3113 and connects to the engine as the worker svc-console; ' +
    'if the engine is not reachable it keeps retrying (1 s doubling to 30 s) and the pages show a disconnected banner. ' +
    'Opens a browser when interactive unless --no-open. Runs until SIGINT or SIGTERM.'

  static override examples = ['<%= config.bin %> console', '<%= config.bin %> console --port 4000 --no-open', '<%= config.bin %> console --engine ws://10.0.0.5:49134 --json']

  static override flags = {
    port: Flags.integer({ char: 'p', summary: 'Port of the console (0 picks a free port)', default: DEFAULT_CONSOLE_PORT, min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Interface to listen on; anything but loopback is reachable by others without authentication', default: DEFAULT_CONSOLE_HOST }),
    engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
    open: Flags.boolean({ summary: 'Open the console in a browser (only when interactive)', default: true, allowNo: true }),
    json: Flags.boolean({ summary: 'Print {"event":"console_ready","url"} once listening' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Console)
    const running = await runConsole({
      port: flags.port,
      host: flags.host,
      engineUrl: resolveEngineUrl({ flag: flags.engine, cwd: process.cwd() }),
      open: flags.open && isInteractiveProcess({ json: flags.json }),
      json: flags.json,
      version: this.config.version,
    })
    this.exit(await untilSignal(running, { json: flags.json }))
  }
}

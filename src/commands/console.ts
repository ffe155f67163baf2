/**
 * `svc console`: the web console server (cli.md §4.8, §7).
 */
import { dirname } from 'node:path'
import { Flags } from '@oclif/core'
import { CONSOLE_TOKEN_ENV, DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT } from 'svc-console'
import { SvcCommand } from '../lib/command.ts'
import { runConsole, untilSignal } from '../lib/console.ts'
import { isInteractiveProcess } from '../lib/interactive.ts'
import { findConfigFile, resolveEngineUrl } from '../lib/project.ts'

export default class Console extends SvcCommand {
  static override summary = 'Serve the web console of a running engine'
  static override description =
    'Serves the web console on http://127.0.0.1:3113 (another free port, printed, when 3113 is taken and --port is not given) and connects to the engine as the worker svc-console; ' +
    'if the engine is not reachable it keeps retrying (1 s doubling to 30 s) and the pages show a disconnected banner. ' +
    'Only requests that name the console as localhost, 127.0.0.1, [::1], its --host or an --allowed-host are served. ' +
    'The API needs a per-run access token: the printed address carries it (/?token=…) and opening it once lets the browser in; ' +
    `scripts send Authorization: Bearer <token>. ${CONSOLE_TOKEN_ENV} sets the token instead of a random one; --no-token turns it off. ` +
    'Opens a browser when interactive unless --no-open. Runs until SIGINT or SIGTERM.'

  static override examples = [
    '<%= config.bin %> console',
    '<%= config.bin %> console --port 4000 --no-open',
    '<%= config.bin %> console --engine ws://10.0.0.5:49134 --json',
    '<%= config.bin %> console --host 0.0.0.0 --allowed-host devbox.local',
  ]

  static override flags = {
    port: Flags.integer({ char: 'p', summary: `Port of the console (0 picks a free port); without it ${DEFAULT_CONSOLE_PORT}, or a free port when ${DEFAULT_CONSOLE_PORT} is taken`, min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Interface to listen on; anything but loopback is reachable by others (with the access token)', default: DEFAULT_CONSOLE_HOST }),
    'allowed-host': Flags.string({ summary: 'Another host name the console may be reached as (besides localhost, 127.0.0.1, [::1] and --host); repeatable', multiple: true }),
    token: Flags.boolean({ summary: `Require the per-run access token (default; ${CONSOLE_TOKEN_ENV} sets it); --no-token lets anyone who can reach the port in`, default: true, allowNo: true }),
    engine: Flags.string({ aliases: ['url'], summary: 'Engine URL (default: SVC_URL, else the listener of config.yaml, else ws://127.0.0.1:49134)' }),
    open: Flags.boolean({ summary: 'Open the console in a browser (only when interactive)', default: true, allowNo: true }),
    json: Flags.boolean({ summary: 'Print {"event":"console_ready","url","open_url","token"} once listening (the token only when the console drew it)' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Console)
    const fromEnv = process.env[CONSOLE_TOKEN_ENV]
    // Signals are handled from here on, so one sent as soon as the address is printed exits 0.
    const running = runConsole({
      port: flags.port ?? DEFAULT_CONSOLE_PORT,
      // Only the default gives way: a port the user named is theirs to fix (cli.md §4.8).
      portFallback: flags.port === undefined,
      host: flags.host,
      allowedHosts: flags['allowed-host'] ?? [],
      token: !flags.token ? false : fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined,
      engineUrl: resolveEngineUrl({ flag: flags.engine, cwd: process.cwd() }),
      open: flags.open && isInteractiveProcess({ json: flags.json }),
      json: flags.json,
      version: this.config.version,
      // Supervised by svc, the project is SVC_PROJECT_ROOT (its cwd is .svc/console/); by hand, the nearest config.yaml's.
      projectRoot: process.env.SVC_PROJECT_ROOT || projectRootOf(process.cwd()),
    })
    this.exit(await untilSignal(running, { json: flags.json }))
  }
}

function projectRootOf(cwd: string): string | undefined {
  const config = findConfigFile(cwd)
  return config === undefined ? undefined : dirname(config)
}

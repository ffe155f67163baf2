/**
 * `svc [start]`: runs the engine of the project (cli.md §3).
 */
import { Flags } from '@oclif/core'
import { SvcCommand } from '../lib/command.ts'
import { handleSignals, LOG_LEVELS, startEngine } from '../lib/start.ts'

export default class Start extends SvcCommand {
  static override summary = 'Start the engine of the project in this directory'
  static override description =
    'Reads config.yaml (--config, else the nearest config.yaml in this directory or a parent; built-in defaults when there is none), ' +
    'starts the engine and its built-in workers, launches the local workers of config.yaml (installed, watched and restarted on change), ' +
    'prints where everything listens, and runs until SIGINT or SIGTERM.'

  static override examples = [
    '<%= config.bin %>',
    '<%= config.bin %> start --config deploy/config.yaml --port 0',
    '<%= config.bin %> start --json',
  ]

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    port: Flags.integer({ summary: 'Port of the first engine listener, for this run (0 picks a free port)', min: 0, max: 65535 }),
    host: Flags.string({ summary: 'Host of the first engine listener, for this run' }),
    'data-dir': Flags.string({ summary: 'Data directory for this run, relative to the current directory' }),
    workers: Flags.boolean({ summary: 'Launch the local workers of config.yaml', default: true, allowNo: true }),
    watch: Flags.boolean({ summary: 'Watch config.yaml and worker files', default: true, allowNo: true }),
    'log-level': Flags.string({
      summary: 'Lowest log level printed',
      description: "Default: the log_level of config/svc-observability.yaml (info), which can change while svc runs; this flag overrides it for the run.",
      options: [...LOG_LEVELS],
    }),
    verbose: Flags.boolean({ summary: 'Print a line for each HTTP request and each invocation (same as --log-level debug)' }),
    json: Flags.boolean({ summary: 'Print one JSON event per line (engine_ready, worker_state, log, shutdown)' }),
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(Start)
    const signals = handleSignals({ json: flags.json })
    let running
    try {
      running = await startEngine({
        version: this.config.version,
        cwd: process.cwd(),
        env: process.env,
        config: flags.config,
        port: flags.port,
        host: flags.host,
        dataDir: flags['data-dir'],
        workers: flags.workers,
        watch: flags.watch,
        logLevel: (flags['log-level'] ?? (flags.verbose ? 'debug' : undefined)) as (typeof LOG_LEVELS)[number] | undefined,
        json: flags.json,
      })
    } catch (err) {
      signals.dispose()
      throw err
    }
    this.exit(await signals.attach(running))
  }
}

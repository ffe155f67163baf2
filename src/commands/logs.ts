/**
 * `svc logs [WORKER] [-f]`: worker and engine log lines (issue 11).
 */
import { Args, Flags } from '@oclif/core'
import { colourEnabled } from '../../runtime/index.ts'
import { SvcCommand } from '../lib/command.ts'
import { Codes } from 'svc-protocol/errors'
import { CliError, ExitCode } from '../lib/errors.ts'
import { shownAddresses } from '../lib/engine-addresses.ts'
import { parseTraceId } from '../lib/traces.ts'
import { EngineAccess, openProject } from '../worker-admin/index.ts'
import { logsFromFiles, logsFromStore } from '../worker-admin/logs.ts'

export default class Logs extends SvcCommand {
  static override summary = 'Show (and follow) the log lines of the workers and the engine'
  static override description =
    'Reads the log store of the running engine (engine::logs::list) when svc runs with its observability worker, ' +
    'else the log files svc writes for each worker it launches (.svc/logs/<name>.log).'

  static override examples = ['<%= config.bin %> logs', '<%= config.bin %> logs math-worker -f', '<%= config.bin %> logs --trace 4bf92f3577b34da6a3ce929d0e0e4736', '<%= config.bin %> logs --files -n 200']

  static override args = {
    worker: Args.string({ description: 'Only this worker (its name in config.yaml, or a service name)', required: false }),
  }

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    follow: Flags.boolean({ char: 'f', summary: 'Keep printing new lines until Ctrl-C' }),
    lines: Flags.integer({ char: 'n', summary: 'Lines printed before following (default 50)', default: 50, min: 0 }),
    files: Flags.boolean({ summary: 'Read the log files even when the engine runs', exclusive: ['trace'] }),
    trace: Flags.string({ summary: 'Only the log records of this trace (its id, or a traceparent value); needs the log store of the running engine' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(Logs)
    const traceId = flags.trace === undefined ? undefined : parseTraceId(flags.trace)
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    let stop!: () => void
    const stopped = new Promise<void>((resolve) => (stop = resolve))
    const onSignal = () => stop()
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const options = {
      projectRoot: project.root,
      worker: args.worker,
      traceId,
      lines: flags.lines,
      follow: flags.follow,
      colour: colourEnabled(process.stdout),
      write: (text: string) => void process.stdout.write(text),
      stopped,
    }
    const engine = new EngineAccess(project.engineUrl)
    try {
      const session = flags.files ? undefined : await engine.get()
      const fromStore = session !== undefined && (await logsFromStore(session, options))
      // The log files hold no trace ids: a trace's records come from the store or not at all.
      if (!fromStore && traceId !== undefined) throw noTraceLogs(session !== undefined, project.engineUrl)
      if (!fromStore) await logsFromFiles(options)
    } finally {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      await engine.close()
    }
  }
}

/**
 * `svc logs --trace` without the engine's log store: `ENGINE_UNREACHABLE` (exit 3) when no engine
 * answered, `STORAGE_DISABLED` (exit 1) when it has no log store (observability worker off, or
 * `store: none`).
 */
function noTraceLogs(connected: boolean, engineUrl: string): CliError {
  if (!connected) return new CliError({ code: Codes.EngineUnreachable, message: `svc logs --trace reads the log store of the running engine, and no engine answered at ${shownAddresses(engineUrl)}`, hint: 'start the engine with svc in the project directory', exitCode: ExitCode.Unreachable })
  return new CliError({ code: Codes.StorageDisabled, message: 'svc logs --trace reads the log store of the running engine, and this engine keeps none', hint: 'turn on svc-observability with store builtin or memory in config.yaml', exitCode: ExitCode.Failure })
}

/**
 * `svc worker add`: declare local workers or built-ins in config.yaml (cli.md §4.2).
 */
import { Args, Flags } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { usageError } from '../../lib/errors.ts'
import {
  addWorkers,
  createStepRunner,
  DEFAULT_ADD_TIMEOUT_MS,
  EngineAccess,
  humanOutput,
  openProject,
  printJsonReport,
  silentOutput,
} from '../../worker-admin/index.ts'

export default class WorkerAdd extends SvcCommand {
  static override summary = 'Declare local or built-in workers in config.yaml and wait until they run'
  static override description =
    'WORKER is a path to a worker directory (with a svc.worker.yaml, or detectable from its files) or a built-in name ' +
    '(svc-http, svc-state, svc-stream, svc-pubsub, svc-cron, queue, database, console, or an alias). config.yaml is ' +
    'edited in place: comments and order are kept. When svc is running, each local worker is followed until it registers.'

  static override usage = [
    'worker add <WORKER>... [--name <n>] [--namespace <ns>] [--isolation process|microvm] [--force] [--no-wait] [--timeout <seconds>] [-c <file>] [--yes] [--json]',
  ]

  static override examples = [
    '<%= config.bin %> worker add ./workers/math-worker',
    '<%= config.bin %> worker add ./workers/math-worker --name math --namespace billing',
    '<%= config.bin %> worker add database console',
  ]

  // WORKER may be repeated.
  static override strict = false

  static override args = {
    worker: Args.string({ description: 'Worker directory, or built-in name or alias', required: true }),
  }

  static override flags = {
    name: Flags.string({ summary: 'Entry name (default: the manifest name, else the directory name); one WORKER only' }),
    namespace: Flags.string({ summary: 'Namespace the worker registers in (default: default)' }),
    isolation: Flags.string({ summary: 'How the worker runs (default: the manifest value, else process)', options: ['process', 'microvm'] }),
    force: Flags.boolean({ summary: 'Replace an entry of the same name declared for another path' }),
    wait: Flags.boolean({ summary: 'Follow each local worker until it registers (when svc is running)', default: true, allowNo: true }),
    timeout: Flags.string({ summary: 'How long to wait for a worker to register, in seconds', default: String(DEFAULT_ADD_TIMEOUT_MS / 1000) }),
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    yes: Flags.boolean({ summary: 'Accept the defaults of every prompt' }),
    json: Flags.boolean({ summary: 'Print one JSON document: {"workers": [...]}' }),
  }

  async run(): Promise<void> {
    const { flags, argv } = await this.parse(WorkerAdd)
    const timeout = Number(flags.timeout)
    if (!Number.isFinite(timeout) || timeout <= 0) {
      throw usageError(`Invalid --timeout '${flags.timeout}': expected a number of seconds greater than 0`)
    }
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    const engine = new EngineAccess(project.engine ?? project.engineUrl, { announce: flags.json ? undefined : (text) => void process.stderr.write(text) })
    let report
    try {
      report = await addWorkers(
        {
          workers: argv as string[],
          name: flags.name,
          namespace: flags.namespace,
          isolation: flags.isolation as 'process' | 'microvm' | undefined,
          force: flags.force,
          wait: flags.wait,
          timeoutMs: timeout * 1000,
        },
        {
          project,
          env: process.env,
          output: flags.json ? silentOutput() : humanOutput(),
          steps: createStepRunner(flags.json ? 'silent' : process.stdout.isTTY ? 'tty' : 'plain'),
          engine,
        },
      )
    } finally {
      await engine.close()
    }
    if (flags.json) printJsonReport(report.workers, report.exitCode)
    if (report.exitCode !== 0) this.exit(report.exitCode)
  }
}

/**
 * `svc worker restart <NAME>`: restart a local worker the running svc supervises (issue 11).
 */
import { Args, Flags } from '@oclif/core'
import { SvcCommand } from '../../lib/command.ts'
import { CliError, ExitCode } from '../../lib/errors.ts'
import { requestRestart } from '../../lib/restart-requests.ts'
import { openProject } from '../../worker-admin/index.ts'
import { logFilePath, readWorkerState, tailLines } from '../../worker-admin/state-files.ts'

export default class WorkerRestart extends SvcCommand {
  static override summary = 'Restart a local worker that svc is running'
  static override description =
    'Asks the svc process that supervises the worker to stop it and start it again (the crash policy starts over), ' +
    'then waits until it has registered again.'

  static override examples = ['<%= config.bin %> worker restart math-worker']

  static override args = {
    name: Args.string({ description: 'Worker name in config.yaml', required: true }),
  }

  static override flags = {
    config: Flags.string({ char: 'c', summary: 'Config file (default: config.yaml here or in the nearest parent)' }),
    timeout: Flags.integer({ summary: 'Seconds to wait for the worker to register again (default 60)', default: 60, min: 1 }),
    json: Flags.boolean({ summary: 'Print one JSON object: {"worker", "state", "pid"}' }),
  }

  async run(): Promise<void> {
    const { args, flags } = await this.parse(WorkerRestart)
    const project = openProject({ configFlag: flags.config, cwd: process.cwd(), env: process.env })
    const before = readWorkerState(project.root, args.name)
    if (!before || before.stale) {
      throw new CliError({
        code: 'WORKER_NOT_RUNNING',
        message: `${args.name} is not running: no svc process supervises it`,
        exitCode: ExitCode.Failure,
        hint: 'start the project with svc; svc worker list shows its workers',
      })
    }
    const requested = Date.now()
    requestRestart(project.root, args.name)
    const deadline = requested + flags.timeout * 1000
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      const now = readWorkerState(project.root, args.name)
      const fresh = now && now.updatedAtMs >= requested - 50
      if (fresh && now.state === 'running' && now.pid !== before.pid) {
        if (flags.json) process.stdout.write(`${JSON.stringify({ worker: args.name, state: now.state, pid: now.pid ?? null })}\n`)
        else process.stdout.write(`Restarted ${args.name}${now.pid ? ` (pid ${now.pid})` : ''}\n`)
        return
      }
      if (fresh && (now.state === 'failed' || now.state === 'crashed' || (now.state === 'restarting' && now.pid === undefined && now.lastError))) {
        const tail = tailLines(logFilePath(project.root, args.name), 20)
        throw new CliError({
          code: 'WORKER_FAILED',
          message: `${args.name} did not start again${now.lastError ? ` (${now.lastError})` : ''}`,
          exitCode: ExitCode.Failure,
          details: tail.length > 0 ? tail.join('\n') : undefined,
        })
      }
      if (Date.now() > deadline) {
        throw new CliError({
          code: 'TIMEOUT',
          message: `${args.name} did not register again within ${flags.timeout} s (state: ${now?.state ?? 'unknown'})`,
          exitCode: ExitCode.Timeout,
        })
      }
    }
  }
}

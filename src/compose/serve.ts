/**
 * `svc compose` and `svc compose up` (cli.md §4.7): run the daemon in the foreground, print its
 * banner, optionally bring the file up with progress (cli.md §6), and stop on SIGINT, SIGTERM or
 * `compose::stop`.
 */
import { resolve } from 'node:path'
import { Listr, ListrLogger, ListrLogLevels } from 'listr2'
import { consoleLogger, type Env, type LogRecord, terminalJson } from '../../runtime/index.ts'
import { CliError, ExitCode } from '../lib/errors.ts'
import { displayPath, resolveEngineUrl } from '../lib/project.ts'
import { ComposeDaemon } from './daemon.ts'
import type { Supervise } from './runner.ts'
import { ComposeError, toComposeCliError } from './errors.ts'
import { COMPOSE_FILE_NAME, loadComposeFile } from './file.ts'
import { generateNamespace } from './names.ts'
import type { ContainerResult, OpResult } from './types.ts'

export interface ServeOptions {
  /** `-n`; default two generated words. */
  namespace?: string | undefined
  /** `--engine` / `--url`. */
  engine?: string | undefined
  /** `-f`, relative to `cwd`. */
  file?: string | undefined
  json: boolean
  /** `svc compose up`: bring the file up after the daemon starts. */
  up: boolean
  cwd: string
  env: Env
  /** Progress renderer: listr2's default on a TTY, else one line per finished container. */
  tty?: boolean
  stdout?: (text: string) => void
  stderr?: (text: string) => void
  supervise?: Supervise
}

/** The three-line banner of cli.md §4.7. */
export function formatDaemonBanner(namespace: string, engineUrl: string): string {
  return (
    `compose daemon serving namespace ${namespace} on ${engineUrl}\n` +
    `Add a worker:  svc trigger -n ${namespace} compose::add worker=./workers/api\n` +
    `Start:         svc trigger -n ${namespace} compose::up\n`
  )
}

/**
 * Runs the daemon until it is asked to stop; resolves with the exit code (0 when stopped by a
 * signal or `compose::stop`; 130 for a second SIGINT).
 *
 * @throws {CliError} exit 2 for an invalid or missing compose file (`svc compose up`) or a blank
 *   namespace; exit 3 when the engine is unreachable; exit 1 for `DAEMON_ALREADY_SERVING` and for
 *   `PROJECT_DID_NOT_START` (message lists each failed container's code and message).
 */
export async function serveCompose(options: ServeOptions): Promise<number> {
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text))
  const emit = (event: Record<string, unknown>) => stdout(`${terminalJson(event)}\n`)
  const namespace = options.namespace ?? generateNamespace()
  if (namespace.trim() === '') {
    throw new CliError({ code: 'INVALID_ARGUMENT', message: 'The namespace is blank; pass -n <namespace>', exitCode: ExitCode.Usage })
  }
  const engineUrl = resolveEngineUrl({ flag: options.engine, env: options.env, cwd: options.cwd })
  const filePath = resolve(options.cwd, options.file ?? COMPOSE_FILE_NAME)

  // Check the file before anything runs, so a mistake exits 2 at once (cli.md §1.1).
  let keys: string[] = []
  if (options.up) {
    try {
      const file = loadComposeFile(filePath, { label: displayPath(filePath, options.cwd), env: options.env })
      if (file.namespace !== undefined && file.namespace !== namespace) {
        const place = file.namespacePlace
        throw new ComposeError(
          'WRONG_NAMESPACE',
          `${file.label}${place ? `:${place.line}:${place.column}` : ''}: namespace '${file.namespace}' differs from the daemon's namespace '${namespace}'; pass -n ${file.namespace}`,
        )
      }
      keys = file.startOrder
    } catch (err) {
      throw toComposeCliError(err)
    }
  }

  const log = consoleLogger('compose', undefined, options.json ? (record: LogRecord) => emit(logEvent(record)) : undefined)
  const signals = new SignalWatch(options.json, emit, stderr)
  let daemon: ComposeDaemon
  try {
    daemon = await ComposeDaemon.start({
      namespace,
      engineUrl,
      cwd: options.cwd,
      file: options.file,
      env: options.env,
      log,
      ...(options.supervise ? { supervise: options.supervise } : {}),
    })
  } catch (err) {
    signals.dispose()
    throw toComposeCliError(err)
  }

  if (options.json) emit({ event: 'compose_ready', namespace, engine_url: engineUrl, pid: process.pid, file: displayPath(daemon.defaultFile, options.cwd) })
  else stdout(formatDaemonBanner(namespace, engineUrl))

  const stopSignal = Promise.race([signals.requested, daemon.stopRequested.then(() => 'compose::stop')])

  if (options.up) {
    const result = await Promise.race([bringUp(daemon, keys, options, stdout), stopSignal.then(() => undefined)])
    if (result === undefined) return finish(daemon, signals, options.json, emit, 'interrupted')
    if (options.json) emit({ event: 'project_up', ...result })
    if (result.status === 'failed') {
      await daemon.stop()
      signals.dispose()
      const failed = result.containers.filter((c) => c.error)
      throw new CliError({
        code: 'PROJECT_DID_NOT_START',
        message: `PROJECT_DID_NOT_START: ${displayPath(filePath, options.cwd)} did not start: ${failed.map((c) => `${c.container} (${c.error!.code})`).join(', ')}`,
        details: failed.map((c) => `  ${c.container}: ${c.error!.code}: ${c.error!.message.split('\n').join('\n    ')}`).join('\n'),
        exitCode: ExitCode.Failure,
        hint: `see the logs in ${displayPath(resolve(options.cwd, '.svc', 'logs', namespace), options.cwd)}/`,
      })
    }
  }

  const reason = await stopSignal
  return finish(daemon, signals, options.json, emit, reason)
}

async function finish(
  daemon: ComposeDaemon,
  signals: SignalWatch,
  json: boolean,
  emit: (event: Record<string, unknown>) => void,
  reason: string,
): Promise<number> {
  signals.stopping()
  await daemon.stop()
  signals.dispose()
  if (json) emit({ event: 'stopped', namespace: daemon.namespace, reason })
  return signals.exitCode
}

/** `svc compose up`'s `up`, with one progress step per container (cli.md §6). */
async function bringUp(daemon: ComposeDaemon, keys: string[], options: ServeOptions, stdout: (text: string) => void): Promise<OpResult> {
  if (options.json || keys.length === 0) return daemon.upForCli()
  const waiters = new Map<string, { promise: Promise<ContainerResult>; resolve: (r: ContainerResult) => void }>()
  for (const key of keys) {
    let resolveResult!: (r: ContainerResult) => void
    const promise = new Promise<ContainerResult>((r) => (resolveResult = r))
    waiters.set(key, { promise, resolve: resolveResult })
  }
  const tasks = keys.map((key) => ({
    title: key,
    task: async (_ctx: unknown, task: { title: string }) => {
      const result = await waiters.get(key)!.promise
      if (result.state === 'failed') {
        // listr2 adds the error to the title; one line each, the details follow in the final error.
        throw new Error(`${result.error?.code ?? 'FAILED'}: ${firstLine(result.error?.message ?? '')}`)
      }
      task.title = describeResult(result)
    },
  }))
  const common = { concurrent: true, exitOnError: false, registerSignalListeners: false } as const
  const list = options.tty
    ? new Listr(tasks, { ...common, renderer: 'default', rendererOptions: { timer: undefined } })
    : new Listr(tasks, { ...common, renderer: 'simple', rendererOptions: { logger: new FinishedStepLogger() } })
  const shown = list.run().catch(() => undefined)
  let result: OpResult
  try {
    result = await daemon.upForCli((r) => waiters.get(r.container)?.resolve(r))
  } finally {
    for (const w of waiters.values()) w.resolve({ container: '', state: 'stopped', changed: false })
  }
  await shown
  const rolledBack = result.containers.filter((c) => c.rolled_back).map((c) => c.container)
  if (rolledBack.length > 0) stdout(`Stopped again after the failure: ${rolledBack.join(', ')}\n`)
  return result
}

function describeResult(r: ContainerResult): string {
  const pid = r.pid === undefined ? '' : ` (pid ${r.pid})`
  const note = r.detail ? ` — ${r.detail}` : ''
  return `${r.container} ${r.state}${r.changed ? '' : ', already running'}${pid}${note}`
}

/** listr2's simple renderer prints a line per finished step only (cli.md §6, not a TTY). */
class FinishedStepLogger extends ListrLogger<ListrLogLevels> {
  constructor() {
    super({ useIcons: true })
  }

  override log(level: ListrLogLevels, message: string | any[], options?: Parameters<ListrLogger['log']>[2]): void {
    if (level === ListrLogLevels.STARTED) return
    super.log(level, message, options)
  }
}

function firstLine(text: string): string {
  return text.split('\n')[0]!
}

function logEvent(record: LogRecord): Record<string, unknown> {
  const event: Record<string, unknown> = { event: 'log', time: record.time.toISOString(), level: record.level, message: record.message }
  if (record.data) event.data = record.data
  return event
}

/**
 * SIGINT/SIGTERM while the daemon runs: the first asks it to stop (exit 0 once every project is
 * down); a second SIGINT exits 130 at once (cli.md §1.1).
 */
class SignalWatch {
  exitCode: number = ExitCode.Success
  readonly requested: Promise<string>
  private resolveRequested!: (reason: string) => void
  private seen = false
  private readonly onSignal: (signal: NodeJS.Signals) => void

  constructor(json: boolean, emit: (event: Record<string, unknown>) => void, stderr: (text: string) => void) {
    this.requested = new Promise((r) => (this.resolveRequested = r))
    this.onSignal = (signal) => {
      if (this.seen) {
        if (signal === 'SIGINT') process.exit(ExitCode.Interrupted)
        return
      }
      this.seen = true
      if (json) emit({ event: 'shutdown', signal })
      else stderr(`\nReceived ${signal}; bringing every project down (press Ctrl-C again to exit at once)\n`)
      this.resolveRequested(signal)
    }
    process.on('SIGINT', this.onSignal)
    process.on('SIGTERM', this.onSignal)
  }

  /** A stop that did not come from a signal still lets a later SIGINT force the exit. */
  stopping(): void {
    this.seen = true
  }

  dispose(): void {
    process.off('SIGINT', this.onSignal)
    process.off('SIGTERM', this.onSignal)
  }
}

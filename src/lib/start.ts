/**
 * The engine lifecycle behind `svc start` (cli.md §3): locate and load config.yaml, lock the data
 * directory, start the engine, launch the local workers, announce it, and stop it all cleanly on
 * SIGINT/SIGTERM.
 */
import { builtinDescriptor, colourEnabled, consoleLogger, loadConfig, type LoadedBuiltinEntry, type LoadedConfig, type LoadedLocalWorkerEntry, type Logger, type LogLevel, type LogRecord, terminalJson } from '../../runtime/index.ts'
import { Engine, loadBuiltins, storeSeed } from '../../runtime/start.ts'
import { formatBanner, readyEvent } from './banner.ts'
import type { ReadyInfo } from './banner.ts'
import { consoleTokenOff, consoleUrl } from './console.ts'
import { invocationLogger } from './dev-log.ts'
import { InstallProgress } from './install-progress.ts'
import { watchRestartRequests } from './restart-requests.ts'
import { CliError, ExitCode, usageError } from './errors.ts'
import { lockDataDir } from './lock.ts'
import type { DataDirLock } from './lock.ts'
import { locateConfig } from './project.ts'
import { engineHoldingPort, projectName, recordEngine } from './engines.ts'
import { diffConfig, watchConfigFile } from './reload.ts'
import { existsSync } from 'node:fs'
import { join, resolve, sep } from 'node:path'
import { consoleWorkerSpec } from '../supervisor/launch.ts'
import { inProcessEngine } from '../supervisor/engine-view.ts'
import { Orchestrator } from '../supervisor/orchestrator.ts'
import { checkToken, CONSOLE_TOKEN_ENV, newToken } from 'svc-console/access'
import type { OutputLine, SupervisedWorker, WorkerLaunch, WorkerState } from '../supervisor/types.ts'

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const

/** What `svc start` was asked to do (its flags, plus the process context). */
export interface StartOptions {
  version: string
  cwd: string
  env: NodeJS.ProcessEnv
  /** `--config`. */
  config?: string | undefined
  port?: number | undefined
  host?: string | undefined
  dataDir?: string | undefined
  /** False with `--no-workers`. */
  workers: boolean
  /** False with `--no-watch`. */
  watch: boolean
  /** `--log-level`; undefined: the engine follows the `log_level` setting (info) and others print from info. */
  logLevel?: LogLevel | undefined
  /** `--json`: one JSON event per line on stdout. */
  json: boolean
  /** Where the banner and `--json` events go; default process.stdout. */
  stdout?: (text: string) => void
}

/** A started engine with its lock, until {@link RunningEngine.stop}. */
export interface RunningEngine {
  readonly engine: Engine
  readonly config: LoadedConfig
  readonly ready: ReadyInfo
  /** The supervised local workers (empty with `--no-workers`). */
  readonly workers: SupervisedWorker[]
  /** Stops every worker (in parallel), then the engine, and releases the lock. Idempotent. */
  stop(): Promise<void>
}

/**
 * How long the banner waits for freshly launched workers to register, so that it can say
 * `running` rather than `starting`; workers that take longer are reported as they are.
 */
const BANNER_WAIT_MS = 3000

/** Worker output lines held for the log store while the engine starts (see `startEngine`). */
const EARLY_OUTPUT_LINES = 1000

const noop = () => {}

/**
 * How long the built-ins' code may wait, after the worker listener accepts, for the launched
 * workers to leave `declared` (see `startEngine`), in ms.
 */
const BUILTINS_WAIT_MS = 250

/** Unwritten stdout bytes beyond which worker log records are not printed (counted instead). */
const CONSOLE_BACKLOG_BYTES = 1 << 20

/** Default ports of built-ins that listen, to name the owner of a port that is in use. */
const BUILTIN_DEFAULT_PORTS: Record<string, number> = { 'svc-http': 3111, 'svc-stream': 3112, console: 3113 }

/**
 * Loads the configuration, locks the data directory, starts the engine and supervises the enabled
 * local workers (unless `workers` is false); prints the banner (or the `engine_ready` event) once
 * every listener is bound and the workers have registered or 3 s have passed. Worker output is
 * logged under the worker's name (INFO for stdout, WARN for stderr); with `json`, every worker
 * transition is a `worker_state` event (`worker`, `state`, `pid?`, `error?`, `error_code?`).
 *
 * @throws {CliError} `Config file <path> not found` and invalid files (exit 2), a port in use or a
 *   locked data directory (exit 1)
 */
export async function startEngine(options: StartOptions): Promise<RunningEngine> {
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  // Events carry worker output and names: JSON a terminal cannot act on (issue 16).
  const emit = (event: Record<string, unknown>) => stdout(`${terminalJson(event)}\n`)
  const sink = options.json ? (record: LogRecord) => emit(logEvent(record)) : undefined
  const makeLogger = (source: string, level: LogLevel = options.logLevel ?? 'info'): Logger => consoleLogger(source, level, sink)
  const note = makeLogger('svc')

  const located = locateConfig(options.config, options.cwd)
  if (!located.path) note.info(`No config.yaml in ${options.cwd} or its parents; starting with built-in defaults`)
  const config = loadConfig(located.label, {
    cwd: options.cwd,
    env: options.env,
    overrides: { port: options.port, host: options.host, dataDir: options.dataDir },
  })

  // The console entry's access token, one per svc run so that the banner's address stays valid
  // when the console restarts: SVC_CONSOLE_TOKEN, else a random one (issue 16 item 1). A bad
  // SVC_CONSOLE_TOKEN fails before anything starts.
  let consoleToken: string | undefined
  const tokenForConsole = () => (consoleToken ??= consoleTokenOf(options.env))
  if (options.workers && config.builtins.console?.enabled) tokenForConsole()

  const lock: DataDirLock = lockDataDir(config.data_dir)
  // The engine filters its own records (the log_level setting, or the flag when given).
  // The built-ins' code loads once each launched worker has left `declared` (its process spawned,
  // or an install, a build or a failure under way), at most BUILTINS_WAIT_MS after the listener
  // accepts: evaluating their modules held up the workers' last steps before their spawn (the
  // file watcher's first scan), and the workers, not the built-ins, are what svc waits for (issue 20).
  let workersUnderway: Promise<unknown> = Promise.resolve()
  const builtins = async () => {
    await workersUnderway
    return loadBuiltins(config)
  }
  const engine = new Engine(config, { log: makeLogger('engine', 'trace'), builtins, ...(options.logLevel !== undefined ? { logLevel: options.logLevel } : {}) })
  // Worker log records (engine::log::*, LOGS frames) printed under the worker's name
  // (logs_console_output). A flood must not queue without bound behind a slow terminal or pipe:
  // while stdout holds more than CONSOLE_BACKLOG_BYTES unwritten, lines are skipped and counted.
  const recordLoggers = new Map<string, Logger>()
  let skipped = 0
  engine.telemetry.consoleLevel = options.logLevel ?? 'info'
  engine.telemetry.console = (service, level, message) => {
    if (process.stdout.writableLength > CONSOLE_BACKLOG_BYTES) {
      skipped++
      return
    }
    if (skipped > 0) {
      note.warn(`${skipped} worker log records not printed (the console was behind); engine::logs::list has them`)
      skipped = 0
    }
    let logger = recordLoggers.get(service)
    if (logger === undefined) {
      if (recordLoggers.size >= 256) recordLoggers.clear()
      recordLoggers.set(service, (logger = makeLogger(service)))
    }
    logger[level](message)
  }
  // One line per invocation at debug (engine-internal calls too at trace), issue 11.
  if (options.logLevel === 'debug' || options.logLevel === 'trace') {
    engine.telemetry.addInterceptor(
      invocationLogger({ log: makeLogger('engine'), internal: options.logLevel === 'trace', isInternal: (id, ns) => engine.telemetry.isInternal(id, ns) }),
    )
  }
  // Installs before the banner run behind one spinner line on a terminal.
  const progress = new InstallProgress({ tty: !options.json && options.stdout === undefined && process.stdout.isTTY === true, colour: colourEnabled(process.stdout) })
  // Worker output is also a log record of the observability worker (builtins.md §12.2, cli.md
  // §5.6). The workers start while the built-ins do (issue 20): lines that come before the engine
  // finished starting wait here (at most EARLY_OUTPUT_LINES, the oldest dropped) for its sink.
  let early: Array<[string, 'stdout' | 'stderr', string]> | undefined = []
  const record = (worker: string, stream: 'stdout' | 'stderr', text: string) => {
    if (early === undefined) return engine.telemetry.output(worker, stream, text)
    if (early.length >= EARLY_OUTPUT_LINES) early.shift()
    early.push([worker, stream, text])
  }

  // cli.md §3 step 5: launch the enabled local workers (§5) through the orchestrator, with this
  // engine in-process: registration read from its sessions and reported by it
  // (Engine.watchRegistrations), reloads drained beside the old process. They start as soon as the
  // worker listener accepts, while the built-ins start (issue 20): the engine opens their sessions
  // once the built-ins are up, so their first calls find them.
  let launched: Orchestrator | undefined
  let starts: Promise<unknown> | undefined
  // The configuration in effect: config.yaml reloads replace it.
  let current = config
  const context = (name: string): LaunchContext => ({
    record,
    orchestrator: launched!,
    projectRoot: current.project_root,
    ignoredPaths: (directory) => pathsInside(current, directory),
    watch: options.watch,
    output: makeLogger(name),
    emit: options.json ? emit : undefined,
    progress,
  })
  const launch = (entry: LoadedLocalWorkerEntry): SupervisedWorker => launchLocalWorker(entry, context(entry.name))
  const onListening = () => {
    const engineUrl = engine.workerUrls[0] ?? 'ws://127.0.0.1:49134'
    launched = new Orchestrator({ engine: inProcessEngine(engine, engineUrl, note), log: note })
    if (!options.workers) return
    for (const entry of config.local_workers) if (entry.enabled) launch(entry)
    // The console entry (cli.md §4.3): a separate process, supervised like a local worker.
    const consoleEntry = config.builtins.console
    if (consoleEntry?.enabled) launchConsole(consoleEntry, context('console'), tokenForConsole())
    starts = Promise.all(launched.workers.map((w) => w.start()))
    // Rejections are awaited below, once the engine started.
    starts.catch(noop)
    workersUnderway = underway(launched.workers, BUILTINS_WAIT_MS)
  }
  try {
    await engine.start({ onListening })
  } catch (err) {
    progress.close()
    await launched?.stopAll().catch((stopError: unknown) => note.error(`stopping the workers: ${(stopError as Error).message}`))
    lock.release()
    throw portInUse(err, config, options.env) ?? err
  }
  const orchestrator = launched!
  for (const [worker, stream, text] of early) engine.telemetry.output(worker, stream, text)
  early = undefined
  // Issue 11: commands run in this project find this engine, and other projects' commands and
  // engines can name it.
  const portOf = (url: string) => Number(new URL(url).port)
  const unrecord = recordEngine({
    pid: process.pid,
    project_root: config.project_root,
    project_name: projectName(config.project_root),
    config_file: config.file ?? null,
    engine_urls: engine.workerUrls,
    max_message_bytes: config.listeners.map((l) => l.max_message_bytes),
    ports: [...engine.workerUrls, ...engine.listenUrls('svc-http'), ...engine.listenUrls('svc-stream')].map(portOf).filter((p) => p > 0),
    started_at_ms: Date.now(),
  }, options.env)

  if (options.workers) {
    await starts
    await orchestrator.settled(BANNER_WAIT_MS)
  }

  // cli.md §2.1 Reload: local worker entries and built-in settings apply while svc runs; enabling or
  // disabling a built-in and listener changes need a restart.
  const reloader =
    options.watch && config.file
      ? watchConfigFile(config.file, {
          load: () =>
            loadConfig(located.label, { cwd: options.cwd, env: options.env, overrides: { port: options.port, host: options.host, dataDir: options.dataDir } }),
          onReload: async (next) => {
            const changes = diffConfig(current, next)
            const previous = current
            current = next
            if (options.workers) {
              const stopping = [...changes.stopped, ...changes.restarted.map((e) => e.name)]
              await Promise.all(stopping.map((name) => orchestrator.stop(name).catch((err: unknown) => note.error(`${name}: ${(err as Error).message}`))))
              await Promise.all([...changes.started, ...changes.restarted].map((entry) => launch(entry).start()))
            }
            for (const name of changes.builtins) await applyBuiltinChange(engine, name, previous.builtins[name], next.builtins[name], note)
            // The console entry is a process svc supervises: an added, enabled, changed or removed
            // entry starts, restarts or stops it now (svc worker add console says so).
            if (options.workers && changes.builtins.includes('console')) {
              await orchestrator.stop('console').catch((err: unknown) => note.error(`console: ${(err as Error).message}`))
              const entry = next.builtins.console
              if (entry?.enabled) await launchConsole(entry, context('console'), tokenForConsole()).start()
            }
            if (changes.listeners) note.warn('config.yaml: a svc-worker-manager entry changed; restart svc to apply it')
            const summary = {
              started: changes.started.map((e) => e.name),
              stopped: changes.stopped,
              restarted: changes.restarted.map((e) => e.name),
            }
            if (options.json) emit({ event: 'config_reloaded', ...summary })
            else note.info('config.yaml reloaded', summary)
          },
          onError: (err) => {
            const problem = err instanceof Error ? err.message : String(err)
            if (options.json) emit({ event: 'config_error', error: problem })
            note.error(`${problem}; keeping the previous configuration`)
          },
        })
      : undefined

  const workers = config.local_workers.map((w) => ({
    name: w.name,
    state: orchestrator.get(w.name)?.state ?? (w.enabled ? 'skipped' : 'disabled'),
  }))
  progress.close()
  // svc worker restart <name> (issue 11).
  const restarts = options.workers
    ? watchRestartRequests(config.project_root, (name) => {
        if (!orchestrator.get(name)) return note.warn(`svc worker restart ${name}: no worker of that name is running here`)
        note.info(`${name}: restart requested`)
        orchestrator.restart(name).catch((err: unknown) => note.error(`${name}: ${(err as Error).message}`))
      })
    : undefined
  const ready: ReadyInfo = {
    version: options.version,
    // From process start to the moment the banner can say ready: the engine listens and the
    // workers have registered (or the banner says what they are doing).
    readyMs: Math.round(performance.now()),
    engineUrls: engine.workerUrls,
    httpUrls: engine.listenUrls('svc-http'),
    streamUrls: engine.listenUrls('svc-stream'),
    workers,
    consoleUrl: orchestrator.get('console')
      ? consoleUrl(config.builtins.console?.config, consoleTokenOff(config.builtins.console?.config) ? undefined : consoleToken)
      : undefined,
    fleet: fleetLine(engine),
    configFile: config.file,
    dataDir: config.data_dir,
  }
  if (options.json) emit(readyEvent(ready))
  else stdout(formatBanner(ready))

  let stopped: Promise<void> | undefined
  return {
    engine,
    config,
    ready,
    get workers() {
      return orchestrator.workers
    },
    stop() {
      restarts?.close()
      stopped ??= Promise.resolve(reloader?.close())
        .then(() => orchestrator.stopAll())
        .then(() => engine.stop())
        .finally(() => {
          unrecord()
          lock.release()
        })
      return stopped
    },
  }
}

/**
 * A built-in's config.yaml entry changed while svc runs: a changed `config` block becomes the
 * value of its settings entry (configuration::set, through the kit's seed rule); `enabled` needs a
 * restart. Failures (a block the schema refuses) are logged and change nothing.
 */
async function applyBuiltinChange(
  engine: Engine,
  name: string,
  before: LoadedBuiltinEntry | undefined,
  after: LoadedBuiltinEntry | undefined,
  note: Logger,
): Promise<void> {
  if (name !== 'console' && (before?.enabled ?? true) !== (after?.enabled ?? true)) {
    note.warn(`config.yaml: ${name} was ${after?.enabled === false ? 'disabled' : 'enabled'}; restart svc to apply it`)
  }
  const id = builtinDescriptor(name)?.configurationId
  if (!id || JSON.stringify(before?.raw_config ?? null) === JSON.stringify(after?.raw_config ?? null)) return
  if (after?.raw_config === undefined) {
    note.info(`config.yaml: the ${name} config block was removed; config/${id}.yaml keeps its settings`)
    return
  }
  try {
    await storeSeed((request) => engine.inject(request), id, after.raw_config)
    note.info(`config.yaml: applied the ${name} config block to config/${id}.yaml`)
  } catch (err) {
    note.error(`config.yaml: the ${name} config block was not applied: ${(err as Error).message}; the previous settings stay in effect`)
  }
}

/**
 * Resolves once every one of `workers` has left `declared` (spawned, installing, building or
 * failed), or after `timeoutMs` (ms); never rejects. `svc` loads the built-ins' code then.
 */
export function underway(workers: readonly SupervisedWorker[], timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const left = (worker: SupervisedWorker) => (worker.state !== 'declared' ? undefined : new Promise<void>((resolve) => worker.once('state', () => resolve())))
  const all = Promise.all(workers.map(left))
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs)
    timer.unref()
  })
  return Promise.race([all, bound]).then(() => clearTimeout(timer))
}

/** What {@link launchLocalWorker} and {@link launchConsole} need from `svc start`. */
interface LaunchContext {
  /** Records a line of a worker's output in the engine's log store (`TelemetryHub.output`). */
  record: (worker: string, stream: 'stdout' | 'stderr', text: string) => void
  /** Launches, restarts and stops the workers; its log is the supervisor's (source `svc`). */
  orchestrator: Orchestrator
  projectRoot: string
  /** Paths inside a worker directory its watcher ignores (see {@link pathsInside}). */
  ignoredPaths: (directory: string) => readonly string[]
  /** False with `--no-watch`. */
  watch: boolean
  /** The worker's own output lines (source = the worker's name): INFO for stdout, WARN for stderr. */
  output: Logger
  /** Set with `--json`: `worker_state` events. */
  emit: ((event: Record<string, unknown>) => void) | undefined
  /** The spinner line of installs before the banner. */
  progress: InstallProgress
}

/** Lines of install output kept to show when the install fails. */
const INSTALL_OUTPUT_LINES = 2000

/**
 * Prints a worker's own output under its name (INFO for stdout, WARN for stderr), except the
 * output of its setup, install and build steps, which is kept and printed only when the step fails
 * before the worker first runs (issue 11: a first run's npm output buried the banner). Every line is
 * in the worker's log file.
 */
function printOutput(worker: SupervisedWorker, context: LaunchContext): void {
  let folded: OutputLine[] = []
  let installing = false
  worker.on('output', (line: OutputLine) => {
    if (line.phase === 'install' || line.phase === 'setup' || line.phase === 'build') {
      // A compiled worker's rebuild runs while it serves (not `installing`): its output stays in the
      // log file, and the supervisor reports a failure with the compiler's first error.
      if (installing && folded.length < INSTALL_OUTPUT_LINES) folded.push(line)
      return
    }
    if (line.stream === 'stderr') context.output.warn(line.text)
    else context.output.info(line.text)
  })
  worker.on('state', (state: WorkerState) => {
    if (state === 'installing') {
      if (!installing) context.progress.begin(worker.name, worker.manifest?.scripts.install ?? 'install')
      installing = true
      folded = []
      return
    }
    if (!installing) return
    installing = false
    const code = worker.failure?.code
    const failed = state === 'failed' && (code === 'INSTALL_FAILED' || code === 'SETUP_FAILED' || code === 'BUILD_FAILED')
    context.progress.end(worker.name, !failed)
    if (failed) for (const line of folded) context.output.warn(line.text)
    folded = []
  })
}

/**
 * Supervises one local worker entry of config.yaml (cli.md §5, environment base `engine`). The
 * worker counts as registered once the engine has a connection announced under the entry's name
 * in the entry's namespace, opened after the current process was started.
 */
function launchLocalWorker(entry: LoadedLocalWorkerEntry, context: LaunchContext): SupervisedWorker {
  const spec: WorkerLaunch = {
    name: entry.name,
    directory: entry.worker_path,
    namespace: entry.namespace ?? 'default',
    projectRoot: context.projectRoot,
    envBase: 'engine',
    env: entry.env,
    watch: context.watch && entry.watch,
  }
  if (entry.config !== undefined) spec.config = entry.config
  if (entry.isolation !== undefined) spec.isolation = entry.isolation
  const ignoredPaths = context.ignoredPaths
  spec.ignoredPaths = () => ignoredPaths(entry.worker_path)
  const worker = context.orchestrator.launch(spec)
  printOutput(worker, context)
  worker.on('output', (line: OutputLine) => {
    // Also a log record of the observability worker (builtins.md §12.2, cli.md §5.6).
    context.record(entry.name, line.stream, line.text)
  })
  emitStates(worker, context)
  return worker
}

/**
 * With `--json`, every transition of `worker` is a `worker_state` event (`worker`, `state`, `pid?`,
 * and `error`, `error_code` when it failed or crashed): the same for local workers and the console.
 */
function emitStates(worker: SupervisedWorker, context: LaunchContext): void {
  const emit = context.emit
  if (!emit) return
  worker.on('state', (state: WorkerState) => {
    const event: Record<string, unknown> = { event: 'worker_state', worker: worker.name, state }
    if (worker.pid !== undefined) event.pid = worker.pid
    if ((state === 'failed' || state === 'crashed') && worker.lastError) {
      event.error = worker.lastError
      if (worker.failure) event.error_code = worker.failure.code
    }
    emit(event)
  })
}

/**
 * The access token of a console svc launches: `SVC_CONSOLE_TOKEN` of svc's environment when set,
 * else a random one.
 * @throws {CliError} exit 2 when `SVC_CONSOLE_TOKEN` is set but not 16 to 512 of `A-Z a-z 0-9 . _ ~ -`
 */
function consoleTokenOf(env: NodeJS.ProcessEnv): string {
  const given = env[CONSOLE_TOKEN_ENV]
  if (given === undefined || given === '') return newToken()
  try {
    return checkToken(given)
  } catch (err) {
    throw usageError(`${CONSOLE_TOKEN_ENV}: ${(err as Error).message}`, `unset ${CONSOLE_TOKEN_ENV} to get a random token`)
  }
}

/**
 * Supervises the `console` entry of config.yaml: `svc console --no-open --engine <url>` (port,
 * host, allowed hosts and `--no-token` from the entry's `config`) run from `.svc/console/`,
 * registered once `svc-console` connects; its access token travels in `SVC_CONSOLE_TOKEN` (the
 * environment, not the command line other users can read). Crashes restart it by the policy of
 * cli.md §5.5; nothing is watched or installed.
 */
function launchConsole(entry: LoadedBuiltinEntry, context: LaunchContext, token: string): SupervisedWorker {
  const worker = context.orchestrator.launch(
    consoleWorkerSpec({
      name: 'console',
      directory: join(context.projectRoot, '.svc', 'console'),
      engineUrl: context.orchestrator.engineUrl,
      projectRoot: context.projectRoot,
      envBase: 'engine',
      config: entry.config,
      token: consoleTokenOff(entry.config) ? undefined : token,
    }),
  )
  printOutput(worker, context)
  emitStates(worker, context)
  return worker
}

/** {@link pathsInside} per configuration and worker directory: the watcher asks for every path it sees. */
const insideCache = new WeakMap<LoadedConfig, Map<string, readonly string[]>>()

/**
 * What a worker's watcher ignores besides cli.md §5.4's list (issue 21, no restart storms): the
 * paths of `config` inside `directory` that are not its own source — other local workers'
 * directories (a worker at the project root, as in the `starter` template, holds them all), the
 * data directory (SQLite files and the engine's `.lock`) and the settings directory of the
 * configuration worker. Absolute paths.
 */
export function pathsInside(config: LoadedConfig, directory: string): readonly string[] {
  let byDirectory = insideCache.get(config)
  if (!byDirectory) insideCache.set(config, (byDirectory = new Map()))
  const known = byDirectory.get(directory)
  if (known) return known
  const settings = (config.builtins.configuration?.config as { directory?: unknown } | undefined)?.directory
  const candidates = [
    config.data_dir,
    resolve(config.project_root, typeof settings === 'string' ? settings : 'config'),
    ...config.local_workers.map((w) => resolve(w.worker_path)),
  ]
  const inside = [...new Set(candidates.filter((p) => p.startsWith(directory + sep)))]
  byDirectory.set(directory, inside)
  return inside
}

function logEvent(record: LogRecord): Record<string, unknown> {
  const event: Record<string, unknown> = {
    event: 'log',
    time: record.time.toISOString(),
    source: record.source,
    level: record.level,
    message: record.message,
  }
  if (record.data) event.data = record.data
  return event
}

/**
 * The message of cli.md §3 step 4 for a port that is already bound, or undefined for other errors.
 * It names the other project when the port is held by a running svc engine (issue 11), and the
 * hint names what really sets that port: the config.yaml entry's `port` (and its placeholder
 * variable; a changed block is applied over the settings file at start), else the built-in's
 * settings file when it exists, else how to add an entry.
 */
export function portInUse(err: unknown, config: LoadedConfig, env: NodeJS.ProcessEnv = process.env): CliError | undefined {
  let cause: unknown = err
  while (cause instanceof Error && (cause as NodeJS.ErrnoException).code !== 'EADDRINUSE') cause = cause.cause
  if (!(cause instanceof Error)) return undefined
  const port = (cause as { port?: unknown }).port
  if (typeof port !== 'number') return undefined
  const holder = engineHoldingPort(port, env)
  const make = (owner: string, advice: string) =>
    new CliError({
      code: 'PORT_IN_USE',
      message: holder
        ? `Port ${port} (${owner}) is already in use by the svc engine of project ${holder.project_name} (${holder.project_root}, pid ${holder.pid})`
        : `Port ${port} is already in use (${owner}). Is another svc running?`,
      hint: holder ? `stop that engine, or give this project its own ports: ${advice}` : advice,
      exitCode: ExitCode.Failure,
      cause: err,
    })
  if (config.listeners.some((l) => l.port === port)) {
    return make('svc-worker-manager', 'set port in the svc-worker-manager entry of config.yaml or pass --port (svc project init --ports auto picks free ports)')
  }
  for (const [name, entry] of Object.entries(config.builtins)) {
    const seeded = (entry.config as { port?: unknown } | undefined)?.port
    if (seeded === port || (seeded === undefined && BUILTIN_DEFAULT_PORTS[name] === port)) return make(name, portAdvice(name, entry, config))
  }
  return make('unknown owner', 'change the port in config.yaml or in the settings files under config/')
}

/** Where the port of built-in `name` is set, as a hint. */
function portAdvice(name: string, entry: LoadedBuiltinEntry, config: LoadedConfig): string {
  const id = builtinDescriptor(name)?.configurationId
  const directory = (config.builtins.configuration?.config as { directory?: unknown } | undefined)?.directory
  const settingsDir = typeof directory === 'string' ? directory : 'config'
  const settingsFile = id ? join(config.project_root, settingsDir, `${id}.yaml`) : undefined
  // A config.yaml block wins: a changed block is applied over the settings file at start.
  const raw = (entry.raw_config as { port?: unknown } | undefined)?.port
  const variable = typeof raw === 'string' ? /\$\{([A-Za-z_][A-Za-z0-9_]*)/.exec(raw)?.[1] : undefined
  if (variable !== undefined) return `set ${variable}, or port in the ${name} entry of config.yaml`
  if (raw !== undefined) return `change port in the ${name} entry of config.yaml`
  if (settingsFile !== undefined && existsSync(settingsFile)) return `change port in ${join(settingsDir, `${id}.yaml`)}`
  return `add an entry to config.yaml: - name: ${name} with config: { port: <n> }`
}

/** Shutdown on SIGINT/SIGTERM, installed before the engine starts (see {@link handleSignals}). */
export interface SignalHandling {
  /** Resolves with the exit code (0) once `running` has stopped after a signal. */
  attach(running: RunningEngine): Promise<number>
  /** Removes the handlers (after a failed start). */
  dispose(): void
}

/**
 * Installs the shutdown handlers of cli.md §3 (Shutdown). Install them before anything is printed:
 * a process without a handler is killed by the signal's default action, with no clean stop.
 * The first SIGINT or SIGTERM stops the engine (at once, or as soon as it is attached when the
 * signal comes during start-up) and `attach` resolves 0; a second SIGINT exits 130 at once; a stop
 * that takes over 10 s exits 0 anyway with a warning. Once the engine has stopped the handlers are
 * removed, so a signal while the process exits has its default action.
 */
export function handleSignals(options: {
  json: boolean
  stdout?: (text: string) => void
  stderr?: (text: string) => void
  exit?: (code: number) => never
}): SignalHandling {
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  const stderr = options.stderr ?? ((text: string) => void process.stderr.write(text))
  const exit = options.exit ?? ((code: number) => process.exit(code))
  let running: RunningEngine | undefined
  let requested = false
  let stopping = false
  let finish!: (code: number) => void
  const done = new Promise<number>((resolve) => (finish = resolve))

  // Once the engine has stopped, a signal takes its default action again: Node's own exit can
  // hang after the last line of JavaScript (its platform shutdown waiting on a V8 compile thread,
  // nodejs/node#54918), and a process that still handled SIGINT and SIGTERM then outlived Ctrl-C.
  const release = () => {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  const stop = (engine: RunningEngine) => {
    if (stopping) return
    stopping = true
    const deadline = setTimeout(() => {
      stderr('svc did not stop within 10 s; exiting anyway\n')
      release()
      exit(ExitCode.Success)
    }, 10_000)
    deadline.unref()
    engine.stop().then(
      () => {
        clearTimeout(deadline)
        release()
        finish(ExitCode.Success)
      },
      (err: unknown) => {
        clearTimeout(deadline)
        stderr(`Error while stopping: ${(err as Error).message}\n`)
        release()
        finish(ExitCode.Success)
      },
    )
  }
  const onSignal = (signal: NodeJS.Signals) => {
    if (requested) {
      if (signal === 'SIGINT') exit(ExitCode.Interrupted)
      return
    }
    requested = true
    if (options.json) stdout(`${JSON.stringify({ event: 'shutdown', signal })}\n`)
    else stderr(`\nReceived ${signal}; stopping svc (press Ctrl-C again to exit at once)\n`)
    if (running) stop(running)
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  return {
    attach(engine) {
      running = engine
      if (requested) stop(engine)
      return done
    },
    dispose: release,
  }
}

/** The banner's fleet line (issue 19); undefined when the engine is alone. */
function fleetLine(engine: Engine): ReadyInfo['fleet'] {
  const fleet = engine.fleetList()
  if (fleet.fleet === null || fleet.engine === null) return undefined
  return { name: fleet.fleet, engine: fleet.engine, engines: fleet.engines.length, status: fleet.status === 'degraded' ? 'degraded' : 'healthy' }
}

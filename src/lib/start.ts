/**
 * The engine lifecycle behind `svc start` (cli.md §3): locate and load config.yaml, lock the data
 * directory, start the engine, announce it, and stop it cleanly on SIGINT/SIGTERM.
 */
import { loadConfig } from '../../runtime/config/loader.ts'
import type { LoadedConfig } from '../../runtime/config/loader.ts'
import { Engine } from '../../runtime/engine/engine.ts'
import { consoleLogger } from '../../runtime/engine/logger.ts'
import type { LogLevel, LogRecord } from '../../runtime/engine/logger.ts'
import type { Logger } from '../../runtime/engine/types.ts'
import { formatBanner, readyEvent } from './banner.ts'
import type { ReadyInfo } from './banner.ts'
import { CliError, ExitCode } from './errors.ts'
import { lockDataDir } from './lock.ts'
import type { DataDirLock } from './lock.ts'
import { locateConfig } from './project.ts'

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
  logLevel: LogLevel
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
  /** Stops the engine and releases the lock. Idempotent. */
  stop(): Promise<void>
}

/** Default ports of built-ins that listen, to name the owner of a port that is in use. */
const BUILTIN_DEFAULT_PORTS: Record<string, number> = { 'svc-http': 3111, 'svc-stream': 3112, console: 3113 }

/**
 * Loads the configuration, locks the data directory and starts the engine; prints the banner (or
 * the `engine_ready` event) once every listener is bound.
 *
 * @throws {CliError} `Config file <path> not found` and invalid files (exit 2), a port in use or a
 *   locked data directory (exit 1)
 */
export async function startEngine(options: StartOptions): Promise<RunningEngine> {
  const stdout = options.stdout ?? ((text: string) => void process.stdout.write(text))
  const emit = (event: Record<string, unknown>) => stdout(`${JSON.stringify(event)}\n`)
  const sink = options.json ? (record: LogRecord) => emit(logEvent(record)) : undefined
  const makeLogger = (source: string): Logger => consoleLogger(source, options.logLevel, sink)
  const note = makeLogger('svc')

  const located = locateConfig(options.config, options.cwd)
  if (!located.path) note.info(`No config.yaml in ${options.cwd} or its parents; starting with built-in defaults`)
  const config = loadConfig(located.label, {
    cwd: options.cwd,
    env: options.env,
    overrides: { port: options.port, host: options.host, dataDir: options.dataDir },
  })

  const lock: DataDirLock = lockDataDir(config.data_dir)
  const engine = new Engine(config, { log: makeLogger('engine') })
  try {
    await engine.start()
  } catch (err) {
    lock.release()
    throw portInUse(err, config) ?? err
  }

  const workers = config.local_workers.map((w) => ({
    name: w.name,
    state: w.enabled ? (options.workers ? 'declared' : 'skipped') : 'disabled',
  }))
  const ready: ReadyInfo = {
    version: options.version,
    readyMs: Math.round(performance.now()),
    engineUrls: engine.workerUrls,
    httpUrls: engine.listenUrls('svc-http'),
    streamUrls: engine.listenUrls('svc-stream'),
    workers,
    configFile: config.file,
    dataDir: config.data_dir,
  }
  if (options.json) emit(readyEvent(ready))
  else stdout(formatBanner(ready))
  const pending = workers.filter((w) => w.state === 'declared').map((w) => w.name)
  if (pending.length > 0) {
    note.warn(`Local workers are not launched by this version of svc yet; start them yourself: ${pending.join(', ')}`)
  }

  let stopped: Promise<void> | undefined
  return {
    engine,
    config,
    ready,
    stop() {
      stopped ??= engine.stop().finally(() => lock.release())
      return stopped
    },
  }
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

/** The message of cli.md §3 step 4 for a port that is already bound, or undefined for other errors. */
export function portInUse(err: unknown, config: LoadedConfig): CliError | undefined {
  let cause: unknown = err
  while (cause instanceof Error && (cause as NodeJS.ErrnoException).code !== 'EADDRINUSE') cause = cause.cause
  if (!(cause instanceof Error)) return undefined
  const port = (cause as { port?: unknown }).port
  if (typeof port !== 'number') return undefined
  const make = (owner: string, advice: string) =>
    new CliError({
      code: 'PORT_IN_USE',
      message: `Port ${port} is already in use (${owner}). Is another svc running? ${advice}`,
      exitCode: ExitCode.Failure,
      cause: err,
    })
  if (config.listeners.some((l) => l.port === port)) {
    return make('svc-worker-manager', 'Set port in the svc-worker-manager entry of config.yaml or pass --port.')
  }
  for (const [name, entry] of Object.entries(config.builtins)) {
    const seeded = (entry.config as { port?: unknown } | undefined)?.port
    if (seeded === port || (seeded === undefined && BUILTIN_DEFAULT_PORTS[name] === port)) {
      return make(name, `Change port in config/${name}.yaml.`)
    }
  }
  return make('unknown owner', 'Change the port in config.yaml or in the settings files under config/.')
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
 * that takes over 10 s exits 0 anyway with a warning.
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

  const stop = (engine: RunningEngine) => {
    if (stopping) return
    stopping = true
    const deadline = setTimeout(() => {
      stderr('svc did not stop within 10 s; exiting anyway\n')
      exit(ExitCode.Success)
    }, 10_000)
    deadline.unref()
    engine.stop().then(
      () => {
        clearTimeout(deadline)
        finish(ExitCode.Success)
      },
      (err: unknown) => {
        clearTimeout(deadline)
        stderr(`Error while stopping: ${(err as Error).message}\n`)
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
    dispose() {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
    },
  }
}

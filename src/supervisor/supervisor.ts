/**
 * The worker supervisor (cli.md §5): installs, starts, watches and restarts one local worker.
 * Used by `svc start` for the local workers of config.yaml and by the compose daemon for path
 * containers.
 */
import { EventEmitter } from 'node:events'
import { statSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { watch } from 'chokidar'
import type { FSWatcher } from 'chokidar'
import type { Logger } from '../../runtime/index.ts'
import { buildWorkerEnv, reservedNamesIn } from './env.ts'
import { CompilerErrorScanner, startupErrorLine } from './compiler-output.ts'
import { CrashWindow, exitAction } from './crash-policy.ts'
import { MicrovmLauncher, MicrovmSetupError } from './microvm/launcher.ts'
import { checkKvm } from './microvm/probe.ts'
import { LogFile } from './log-file.ts'
import { isDependencyManifest, loadManifest, MANIFEST_FILE, ManifestError } from './manifest.ts'
import { describeExit, groupAlive, runShell, signalGroup, stopGroup } from './process.ts'
import type { CommandExit, ShellProcess } from './process.ts'
import { dependencyHash, logFilePath, StateFile, stateFilePath } from './state-file.ts'
import type {
  OutputLine,
  OutputPhase,
  RegistrationProbe,
  SupervisedWorker,
  SupervisorFailure,
  SupervisorOptions,
  SupervisorTimings,
  WorkerExit,
  WorkerManifest,
  WorkerSpec,
  WorkerState,
  WorkerStateRecord,
} from './types.ts'
import { ignoreMatcher } from './watch.ts'
import { primeCompileCache, type PrimeOutcome } from './prime.ts'

/** Timings of cli.md §5.3–§5.5 (see {@link SupervisorTimings}). */
export const SUPERVISOR_TIMINGS: Readonly<SupervisorTimings> = {
  debounceMs: 500,
  registrationPollMs: 200,
  registrationFallbackPollMs: 1000,
  backoffStartMs: 1000,
  backoffMaxMs: 30_000,
  crashWindowMs: 60_000,
  crashLimit: 5,
  healthyRunMs: 60_000,
  stopTimeoutMs: 5000,
  postRunTimeoutMs: 60_000,
  registrationNoteMs: 15_000,
  drainGraceMs: 10_000,
}

/**
 * How long after a spawn a change event may still be one the process started with (file system
 * events arrive late); later events always count.
 */
const STALE_EVENT_WINDOW_MS = 2000

/** A `waitUntilRunning` failure, or a failure of the worker (`code` as in {@link SupervisorFailure}). */
export class SupervisorError extends Error {
  override readonly name = 'SupervisorError'
  readonly code: string
  readonly hint: string | undefined

  constructor(code: string, message: string, hint?: string) {
    super(message)
    this.code = code
    this.hint = hint
  }
}

/**
 * Supervises one local worker (cli.md §5). Nothing happens until `start()`.
 *
 * @example
 * const worker = superviseWorker({
 *   name: 'math-worker', directory: '/app/workers/math-worker', namespace: 'default',
 *   engineUrl: 'ws://127.0.0.1:49134', projectRoot: '/app', envBase: 'engine', env: {}, watch: true,
 *   isRegistered: () => engineHasWorker('math-worker'),
 * }, { log })
 * worker.on('output', (line) => console.log(`${line.worker}: ${line.text}`))
 * await worker.start()
 * await worker.waitUntilRunning(120_000)
 */
export function superviseWorker(spec: WorkerSpec, options: SupervisorOptions): SupervisedWorker {
  return new WorkerSupervisor(spec, options)
}

/** What the state file keeps across runs. */
type InstallRecord = Pick<WorkerStateRecord, 'setup_command' | 'install_command' | 'install_hash' | 'installed_at'>

class WorkerSupervisor extends EventEmitter implements SupervisedWorker {
  readonly name: string
  readonly #spec: WorkerSpec
  readonly #log: Logger
  readonly #logFile: LogFile
  readonly #stateFile: StateFile
  readonly #stopTimeoutMs: number
  readonly #t: SupervisorTimings

  #state: WorkerState = 'declared'
  #failure: SupervisorFailure | undefined
  #lastError: string | undefined
  #manifest: WorkerManifest | undefined
  #install: InstallRecord
  /** The worker process: the one serving (or starting, when none serves). */
  #proc: ShellProcess | undefined
  /**
   * A process a reload started while `#proc` keeps serving (`WorkerSpec.drain`); it becomes `#proc`
   * once it registers, and `#proc` then drains and stops.
   */
  #candidate: ShellProcess | undefined
  /** Replaced processes finishing their calls before they stop, with the end of each. */
  #retiring = new Map<ShellProcess, Promise<void>>()
  /** Aborted by stop(): retiring processes stop at once. */
  #retireAbort = new AbortController()
  /** setup, install, pre_run or post_run while it runs (stop() kills it). */
  #task: ShellProcess | undefined
  /** Group of a process that exited on its own, signalled and checked before the next start. */
  #orphanGroup: number | undefined
  #active = false
  /** Bumped by stop(): queued and running actions of an older generation give up. */
  #generation = 0
  #chain: Promise<void> = Promise.resolve()
  #busy = 0
  #watcher: FSWatcher | undefined
  #watchKey: string | undefined
  #watcherReady: (() => void) | undefined
  /** Changed paths of the current burst, with when each event arrived. */
  #changes = new Map<string, number>()
  #debounce: NodeJS.Timeout | undefined
  /** The compile-cache prime running (#prime), if any. */
  #priming: Promise<PrimeOutcome> | undefined
  #backoff: NodeJS.Timeout | undefined
  #poll: NodeJS.Timeout | undefined
  /** The registration watch running (#watchRegistration), and how to end its engine subscription. */
  #registrationWatch: symbol | undefined
  #unwatchRegistrations: (() => void) | undefined
  /** Unrequested exits within the crash window and the backoff (cli.md §5.5). */
  readonly #crashes: CrashWindow
  #restarts: number
  #startedAt: Date | undefined
  /** Set after a failure that only a configuration change can clear (KVM, §5.7). */
  #waitForManifest = false
  #warnedNoInstall = false
  #stopping: Promise<void> | undefined
  /** The last lines each worker process printed (start-up failures quote them). */
  #tails = new WeakMap<ShellProcess, string[]>()
  /** The process that reached `running`; an exit of any other one is a start-up failure. */
  #registered: ShellProcess | undefined
  /** Signature of the previous start-up failure (exit plus its last output), until a change or a registration. */
  #startupFailure: string | undefined
  /** The microVM this worker's processes run in (`isolation: microvm`, cli.md §5.7); undefined for a process worker. */
  #microvm: MicrovmLauncher | undefined

  constructor(spec: WorkerSpec, options: SupervisorOptions) {
    super()
    this.name = spec.name
    this.#spec = spec
    this.#log = options.log
    this.#t = { ...SUPERVISOR_TIMINGS, ...options.timings }
    this.#stopTimeoutMs = spec.stopTimeoutMs ?? this.#t.stopTimeoutMs
    this.#crashes = new CrashWindow(this.#t)
    this.#restarts = spec.restarts ?? 0
    this.#logFile = new LogFile(spec.logFile ?? logFilePath(spec.projectRoot, spec.name), {
      onError: (err) => this.#log.warn(`${this.name}: cannot write its log file: ${err.message}`),
    })
    this.#stateFile = new StateFile(spec.stateFile ?? stateFilePath(spec.projectRoot, spec.name))
    const previous = this.#stateFile.read()
    this.#install = {}
    for (const key of ['setup_command', 'install_command', 'install_hash', 'installed_at'] as const) {
      if (typeof previous?.[key] === 'string') this.#install[key] = previous[key]
    }
  }

  get state(): WorkerState {
    return this.#state
  }

  get pid(): number | undefined {
    return this.#proc?.pid
  }

  get lastError(): string | undefined {
    return this.#lastError
  }

  get failure(): SupervisorFailure | undefined {
    return this.#failure
  }

  get manifest(): WorkerManifest | undefined {
    return this.#manifest
  }

  get restarts(): number {
    return this.#restarts
  }

  get startedAt(): Date | undefined {
    return this.#proc ? this.#startedAt : undefined
  }

  // ---- public lifecycle ----------------------------------------------------------------------

  async start(): Promise<void> {
    if (this.#stopping) await this.#stopping
    if (this.#active) return this.#chain
    this.#active = true
    const generation = ++this.#generation
    this.#crashes.reset()
    await this.#enqueue(generation, () => this.#launch(generation, true))
  }

  stop(): Promise<void> {
    this.#stopping ??= this.#stop().finally(() => (this.#stopping = undefined))
    return this.#stopping
  }

  async #stop(): Promise<void> {
    this.#active = false
    ++this.#generation
    for (const timer of [this.#debounce, this.#backoff]) clearTimeout(timer)
    this.#debounce = this.#backoff = undefined
    this.#stopRegistrationWatch()
    this.#changes.clear()
    await this.#closeWatcher()
    const task = this.#task
    if (task) await stopGroup(task, this.#stopTimeoutMs)
    // The running action sees the new generation after its current step and returns.
    await this.#chain
    this.#retireAbort.abort()
    this.#retireAbort = new AbortController()
    const candidate = this.#candidate
    this.#candidate = undefined
    const proc = this.#proc
    await Promise.all([
      candidate && this.#stopOther(candidate),
      ...[...this.#retiring.keys()].map((p) => this.#stopOther(p)),
      proc &&
        (async () => {
          await this.#stopProcess(proc)
          await this.#postRun(undefined)
        })(),
    ])
    await Promise.all(this.#retiring.values())
    this.#reapOrphans()
    await this.#microvm?.shutdown()
    this.#failure = undefined
    this.#waitForManifest = false
    this.#setState('stopped', 'stopped by svc')
    this.#log.info(`${this.name} stopped`)
    await this.#logFile.flush()
    await this.#stateFile.write(this.#record())
  }

  async restart(): Promise<void> {
    if (!this.#active) return this.start()
    const generation = this.#generation
    this.#resetCrashPolicy()
    this.#waitForManifest = false
    await this.#enqueue(generation, () => this.#launch(generation, true, 'restart requested'))
  }

  waitUntilRunning(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const cleanup = () => {
        clearTimeout(timer)
        this.off('state', onState)
        this.off('exit', onExit)
      }
      const fail = (error: SupervisorError) => {
        cleanup()
        reject(error)
      }
      const failureError = () => {
        const failure = this.#failure ?? { code: 'FAILED', message: this.#lastError ?? `${this.name} failed` }
        return new SupervisorError(failure.code, failure.message, failure.hint)
      }
      const onState = (state: WorkerState) => {
        if (state === 'running') {
          cleanup()
          resolve()
        } else if (state === 'failed' || state === 'crashed') fail(failureError())
        else if (state === 'stopped' && !this.#active) fail(new SupervisorError('STOPPED', `${this.name} was stopped before it registered`))
      }
      const onExit = (exit: WorkerExit) => {
        if (exit.requested) return
        fail(
          new SupervisorError(
            'CHILD_EXITED_BEFORE_REGISTRATION',
            `${this.name} ${describeExit({ code: exit.code, signal: exit.signal })} before it registered with the engine`,
            `see ${this.#logFile.path}`,
          ),
        )
      }
      const timer = setTimeout(() => {
        fail(
          new SupervisorError(
            'STARTUP_TIMEOUT',
            `${this.name} did not register within ${formatSeconds(timeoutMs)} (state: ${this.#state})`,
            `the worker must connect to SVC_URL with the name in SVC_WORKER_NAME and namespace SVC_NAMESPACE; see ${this.#logFile.path}`,
          ),
        )
      }, timeoutMs)
      this.on('state', onState)
      this.on('exit', onExit)
      if (this.#state === 'running') onState('running')
      else if (this.#busy === 0) {
        if (this.#state === 'failed' || this.#state === 'crashed') fail(failureError())
        else if (this.#state === 'stopped') {
          fail(new SupervisorError('STOPPED', `${this.name} is stopped (${this.#lastError ?? 'not started'})`))
        }
      }
    })
  }

  // ---- actions -------------------------------------------------------------------------------

  /** Runs `action` after the ones queued before it, unless stop() came in between. */
  #enqueue(generation: number, action: () => Promise<unknown>): Promise<void> {
    this.#busy++
    const run = this.#chain.then(() => (generation === this.#generation ? action() : undefined))
    this.#chain = run.then(
      () => void this.#busy--,
      (err: unknown) => {
        this.#busy--
        this.#log.error(`${this.name}: supervisor error: ${(err as Error).stack ?? String(err)}`)
      },
    )
    return this.#chain
  }

  /**
   * Brings the worker to a fresh process: (re-)reads the manifest when `reload`, runs setup and
   * install when needed, stops the current process (`restarting`), then starts a new one.
   */
  async #launch(generation: number, reload: boolean, reason?: string): Promise<void> {
    // A process an earlier change started that has not registered yet: this change replaces it.
    const abandoned = this.#candidate
    if (abandoned) {
      this.#candidate = undefined
      await this.#stopOther(abandoned)
      if (generation !== this.#generation) return
    }
    if (reload || !this.#manifest) {
      if (!(await this.#prepare(generation))) return
    }
    const installed = await this.#installIfNeeded(generation)
    if (installed === false || generation !== this.#generation) return
    if (!(await this.#buildIfNeeded(generation, installed === 'ran'))) return
    const proc = this.#proc
    if (proc && this.#overlaps(proc)) {
      // Issue 21: the new process starts beside the serving one, which stops once it registered.
      this.#restarts++
      this.#setState('restarting', reason)
      await this.#spawn(generation, proc)
      return
    }
    if (proc) {
      this.#restarts++
      this.#setState('restarting', reason)
      await this.#stopProcess(proc)
      await this.#postRun(generation)
      if (generation !== this.#generation) return
    }
    await this.#spawn(generation)
  }

  /** Validates the configuration and the manifest and sets up the watcher; false after a failure. */
  async #prepare(generation: number): Promise<boolean> {
    const spec = this.#spec
    this.#waitForManifest = false
    if (spec.envBase === 'compose') {
      const reserved = reservedNamesIn(spec.env)
      if (reserved.length > 0) {
        await this.#syncWatcher(generation)
        return this.#fail(generation, {
          code: 'RESERVED_ENV_OVERRIDE',
          message: `env_file or environment sets reserved variable${reserved.length > 1 ? 's' : ''} ${reserved.join(', ')}`,
          hint: 'svc sets SVC_* and III_* variables for every worker; remove them from env_file and environment',
        })
      }
    }
    // The host check comes before anything else when the entry asks for a microVM (§5.7).
    if (spec.isolation === 'microvm' && !(await this.#useMicrovm(generation))) return false
    if (spec.isolation === 'process') await this.#dropMicrovm()
    let manifest: WorkerManifest
    try {
      manifest = loadManifest(spec.directory, { requireStart: spec.startCommand === undefined, label: this.#directoryLabel() })
    } catch (err) {
      if (!(err instanceof ManifestError)) throw err
      this.#manifest = undefined
      await this.#syncWatcher(generation)
      const hint =
        err.code === 'UNKNOWN_WORKER'
          ? 'check worker_path'
          : `fix ${err.code === 'NO_START_SCRIPT' ? 'the directory' : MANIFEST_FILE}; svc retries after the next file change`
      return this.#fail(generation, { code: err.code, message: err.message, hint })
    }
    if (generation !== this.#generation) return false
    this.#manifest = manifest
    const env = buildWorkerEnv({ spec, manifest, isolation: 'process' })
    for (const ignored of env.ignored) this.#log.warn(`${this.name}: ${ignored}, which svc sets itself; ignoring it`)
    await this.#syncWatcher(generation)
    if (spec.isolation === undefined) {
      if (manifest.isolation === 'microvm') {
        if (!(await this.#useMicrovm(generation))) return false
      } else await this.#dropMicrovm()
    }
    return generation === this.#generation
  }

  /**
   * microVM isolation (§5.7): the usable-KVM probe; on success the worker's processes run in a
   * microVM from the next start, else the worker is `failed` until its configuration changes.
   */
  async #useMicrovm(generation: number): Promise<boolean> {
    const kvm = checkKvm()
    if (kvm.ok) {
      this.#microvm ??= new MicrovmLauncher({
        name: this.name,
        directory: this.#spec.directory,
        projectRoot: this.#spec.projectRoot,
        engineUrl: this.#spec.engineUrl,
        accel: kvm.accel,
        log: this.#log,
      })
      return true
    }
    await this.#dropMicrovm()
    this.#manifest = undefined
    await this.#syncWatcher(generation)
    this.#fail(generation, { code: kvm.code, message: kvm.message, hint: 'set isolation: process to run this worker now' })
    this.#waitForManifest = true
    return false
  }

  /** Powers off the microVM of a worker that no longer asks for one. */
  async #dropMicrovm(): Promise<void> {
    const launcher = this.#microvm
    this.#microvm = undefined
    if (!launcher) return
    const proc = this.#proc
    if (proc?.stop) await this.#stopProcess(proc)
    await launcher.shutdown()
  }

  /** Host RSS of the worker's microVM in bytes (QEMU and its virtiofs daemons); undefined for a process worker. */
  get vmRssBytes(): number | undefined {
    return this.#microvm?.hostRssBytes()
  }

  /**
   * §5.3 steps 1–2. False when a step failed (the worker is then `failed`, unless a compiled worker
   * keeps serving, see {@link #keepsServing}) or stop() came; `'ran'` when the install ran.
   */
  async #installIfNeeded(generation: number): Promise<boolean | 'ran'> {
    const manifest = this.#manifest!
    const setup = manifest.scripts.setup
    if (setup && this.#install.setup_command !== setup) {
      this.#setState('installing', 'setup')
      this.#log.info(`${this.name} setup: ${setup}`)
      const exit = await this.#runTask('setup', setup)
      if (generation !== this.#generation) return false
      if (exit.code !== 0) {
        return this.#fail(generation, {
          code: 'SETUP_FAILED',
          message: `setup '${setup}' ${describeExit(exit)}`,
          hint: `its output is in ${this.#logFile.path}; svc retries after the next file change`,
        })
      }
      this.#install.setup_command = setup
    }
    const install = manifest.scripts.install
    if (!install) {
      if (!this.#warnedNoInstall && !this.#spec.noInstall) {
        this.#log.warn(`${this.name}: no install step (scripts.install is not set and cannot be inferred); skipping it`)
        this.#warnedNoInstall = true
      }
      return true
    }
    if (!this.#installNeeded()) return true
    const serving = this.#keepsServing()
    if (!serving) this.#setState('installing', install)
    this.#log.info(`${this.name} installing: ${install}${serving ? ' (the running process keeps serving)' : ''}`)
    const started = Date.now()
    const exit = await this.#runTask('install', install)
    if (generation !== this.#generation) return false
    if (exit.code !== 0) {
      const failure: SupervisorFailure = {
        code: 'INSTALL_FAILED',
        message: `install '${install}' ${describeExit(exit)}${exit.firstErrorLine ? `: ${exit.firstErrorLine}` : ''}`,
        hint: `its output is in ${this.#logFile.path}; svc retries after the next file change`,
      }
      if (this.#keepsServing()) return this.#failedWhileServing('install', install, exit)
      return this.#fail(generation, failure)
    }
    this.#install.install_command = install
    this.#install.install_hash = dependencyHash(this.#spec.directory)
    this.#install.installed_at = new Date().toISOString()
    this.#log.info(`${this.name} installed in ${formatSeconds(Date.now() - started)}`)
    await this.#stateFile.write(this.#record())
    return 'ran'
  }

  /**
   * `scripts.build` (compiled workers, issue 18) before a start that follows a change; skipped when
   * the install that just ran was the same command. While a process serves, the build runs beside
   * it and a failure leaves it serving; without one a failure is `BUILD_FAILED`. False when the
   * start must not go on.
   */
  async #buildIfNeeded(generation: number, installRan: boolean): Promise<boolean> {
    const build = this.#manifest!.scripts.build
    if (!build || (installRan && this.#manifest!.scripts.install === build)) return true
    const serving = this.#keepsServing()
    if (!serving) this.#setState('installing', build)
    this.#log.info(`${this.name} building: ${build}${serving ? ' (the running process keeps serving)' : ''}`)
    const started = Date.now()
    const exit = await this.#runTask('build', build)
    if (generation !== this.#generation) return false
    if (exit.code !== 0) {
      if (this.#keepsServing()) return this.#failedWhileServing('build', build, exit)
      return this.#fail(generation, {
        code: 'BUILD_FAILED',
        message: `build '${build}' ${describeExit(exit)}${exit.firstErrorLine ? `: ${exit.firstErrorLine}` : ''}`,
        hint: `its output is in ${this.#logFile.path}; svc builds again after the next file change`,
      })
    }
    this.#log.info(`${this.name} built in ${formatSeconds(Date.now() - started)}`)
    return generation === this.#generation
  }

  /**
   * True when a failed install or build must leave the current process alone: the worker is
   * compiled (`scripts.build`), so the running process is the previous build's binary, which
   * neither step touches while it runs.
   */
  #keepsServing(): boolean {
    const proc = this.#proc
    return this.#manifest?.scripts.build !== undefined && proc !== undefined && !proc.exited
  }

  /** A compiled worker's install or build failed while its previous build serves: say so, keep it. Returns false. */
  #failedWhileServing(step: 'install' | 'build', command: string, exit: CommandExit & { firstError?: string; firstErrorLine?: string }): false {
    this.#lastError = `${step} '${command}' ${describeExit(exit)}${exit.firstErrorLine ? `: ${exit.firstErrorLine}` : ''}`
    const what = exit.firstError ? `:\n${exit.firstError}` : ` (its output is in ${this.#logFile.path})`
    this.#log.error(`${this.name}: ${step} failed (${command} ${describeExit(exit)}); the previous build keeps running${what}`)
    void this.#stateFile.write(this.#record())
    return false
  }

  /** True when the install command or the dependency-manifest hash differs from the last successful install. */
  #installNeeded(): boolean {
    const install = this.#manifest?.scripts.install
    if (!install) return false
    return this.#install.install_command !== install || this.#install.install_hash !== dependencyHash(this.#spec.directory)
  }

  /**
   * True when a change may start the new process beside `proc` (issue 21): svc passed
   * `WorkerSpec.drain`, and `proc` registered and still runs. Compose hooks (`pre_run`, `post_run`)
   * assume one process at a time, so a container with them is stopped first.
   */
  #overlaps(proc: ShellProcess): boolean {
    const spec = this.#spec
    // A microVM runs one worker process; its agent restarts it in place.
    return spec.drain !== undefined && !spec.preRun && !spec.postRun && this.#microvm === undefined && this.#registered === proc && !proc.exited
  }

  /**
   * Runs pre_run (compose), then the start command; state `starting` until it registers. With
   * `replacing`, the new process is the candidate of a reload and `replacing` keeps serving.
   */
  async #spawn(generation: number, replacing?: ShellProcess): Promise<void> {
    const spec = this.#spec
    const manifest = this.#manifest!
    clearTimeout(this.#backoff)
    this.#backoff = undefined
    this.#reapOrphans()
    if (spec.preRun) {
      this.#setState('starting', 'pre_run')
      const exit = await this.#runTask('pre_run', spec.preRun.command, spec.preRun.timeoutMs)
      if (generation !== this.#generation) return
      if (exit.code !== 0) {
        const what = exit.timedOut ? `did not finish within ${formatSeconds(spec.preRun.timeoutMs)}` : describeExit(exit)
        this.#fail(generation, {
          code: 'PRE_RUN_FAILED',
          message: `pre_run '${spec.preRun.command}' ${what}`,
          hint: `its output is in ${this.#logFile.path}`,
        })
        return
      }
    }
    const command = spec.startCommand ?? manifest.scripts.start
    if (!command) {
      this.#fail(generation, {
        code: 'NO_START_SCRIPT',
        message: `Cannot determine how to start ${this.#directoryLabel()}: add a svc.worker.yaml with scripts.start`,
      })
      return
    }
    this.#writeLog('svc', `$ ${command}`)
    const tail: string[] = []
    const onLine = (stream: 'stdout' | 'stderr', text: string) => {
      tail.push(text)
      if (tail.length > TAIL_LINES) tail.shift()
      this.#output(stream, text, 'run')
    }
    let proc: ShellProcess
    if (this.#microvm) {
      try {
        proc = await this.#microvm.run(command, this.#env(), manifest, onLine)
      } catch (err) {
        if (!(err instanceof MicrovmSetupError)) throw err
        this.#fail(generation, { code: err.code, message: err.message, ...(err.hint === undefined ? {} : { hint: err.hint }) })
        return
      }
      if (generation !== this.#generation) {
        await stopGroup(proc, this.#stopTimeoutMs)
        return
      }
    } else {
      await this.#prime(command)
      if (generation !== this.#generation) return
      proc = runShell(command, { cwd: spec.directory, env: this.#env(), exec: true, onLine })
    }
    this.#tails.set(proc, tail)
    if (replacing) this.#candidate = proc
    else {
      this.#proc = proc
      this.#startedAt = new Date(proc.startedAtMs)
    }
    this.#failure = undefined
    this.#setState('starting', proc.pid === undefined ? undefined : `pid ${proc.pid}`)
    const pid = proc.pid === undefined ? '' : ` (pid ${proc.pid})`
    const beside = replacing ? `; the previous process${replacing.pid === undefined ? '' : ` (pid ${replacing.pid})`} serves until it registers` : ''
    this.#log.info(`${this.name} starting: ${command}${pid}${beside}`)
    void proc.done.then((exit) => this.#onExit(proc, exit))
    this.#watchRegistration(proc)
  }

  /**
   * The candidate of a reload registered: it becomes the worker's process, and the previous one
   * drains (`WorkerSpec.drain`, at most `drainGraceMs`), then stops (§5.1).
   */
  #promote(next: ShellProcess): void {
    const previous = this.#proc
    this.#candidate = undefined
    this.#proc = next
    this.#startedAt = new Date(next.startedAtMs)
    this.#registered = next
    this.#startupFailure = undefined
    this.#setState('running')
    const after = formatSeconds(Date.now() - next.startedAtMs)
    if (!previous || previous.exited) {
      this.#log.info(`${this.name} running (registered after ${after})`)
      return
    }
    this.#log.info(`${this.name} running (registered after ${after}); the previous process${previous.pid === undefined ? '' : ` (pid ${previous.pid})`} finishes its calls, then stops`)
    // Its exit is no crash from now on.
    previous.requested = true
    const signal = this.#retireAbort.signal
    const retired = (async () => {
      try {
        const drained = this.#spec.drain?.(probeOf(previous), probeOf(next), { graceMs: this.#t.drainGraceMs, signal })
        if (drained) await Promise.race([drained, aborted(signal)])
      } catch (err) {
        this.#log.debug(`${this.name}: draining the previous process failed: ${(err as Error).message}`)
      }
      await this.#stopOther(previous)
    })().finally(() => this.#retiring.delete(previous))
    this.#retiring.set(previous, retired)
  }

  /** Stops a process that is not `#proc` (a replaced or abandoned one), warning when SIGKILL was needed. */
  async #stopOther(proc: ShellProcess): Promise<void> {
    const killed = await stopGroup(proc, this.#stopTimeoutMs)
    if (killed) this.#log.warn(`${this.name}: a previous process did not stop within ${formatSeconds(this.#stopTimeoutMs)}; killed it (SIGKILL)`)
  }

  /**
   * The candidate of a reload exited before it registered while the previous process serves: the
   * previous one keeps serving, and the failure is reported with its summary line (a syntax error:
   * `SyntaxError: … (src/index.ts:3)`). A new process that could not bind an address the previous
   * one holds (`EADDRINUSE`: a worker with a listener of its own) is started the usual way instead:
   * stop the previous process, then start.
   */
  async #candidateFailed(generation: number, proc: ShellProcess, exit: CommandExit): Promise<void> {
    // The exit event can come before the last lines were read from the pipes.
    await settledWithin(proc.drained, OUTPUT_DRAIN_MS)
    if (generation !== this.#generation || this.#candidate) return
    const serving = this.#proc
    const tail = this.#tails.get(proc) ?? []
    const description = describeExit(exit)
    const quoted = startupErrorLine(tail, this.#spec.directory)
    if (!serving || serving.exited) {
      this.#lastError = `${description} before it registered${quoted ? `: ${quoted}` : ''}`
      if (!this.#proc) await this.#afterExit(generation, proc, exit)
      return
    }
    if (tail.some((line) => /EADDRINUSE|address already in use/i.test(line))) {
      this.#log.warn(`${this.name}: the new process could not listen beside the previous one${quoted ? ` (${quoted})` : ''}; stopping the previous one first`)
      this.#setState('restarting', 'address in use')
      await this.#stopProcess(serving)
      if (generation !== this.#generation || this.#proc) return
      await this.#spawn(generation)
      return
    }
    this.#lastError = `the new process ${description} before it registered${quoted ? `: ${quoted}` : ''}`
    this.#setState('running', 'the previous process keeps serving')
    const where = this.#spec.watch && (this.#manifest?.watch.enabled ?? true) ? `waiting for a change to ${this.#directoryLabel()}` : `run svc worker restart ${this.name} after fixing it`
    this.#log.error(`${this.name}: the new process ${description} before it registered${quoted ? `: ${quoted}` : ''}; the previous process keeps serving (${where})`)
  }

  /**
   * Checks `isRegistered` while `proc` is `starting` (§5.3): on each registration change the
   * engine reports (`WorkerSpec.watchRegistrations`; one check per burst, on the next turn) and
   * every `registrationFallbackPollMs`, or every `registrationPollMs` (200) for an engine that
   * reports none. Replaces the watch of any earlier process.
   */
  #watchRegistration(proc: ShellProcess): void {
    this.#stopRegistrationWatch()
    let noted = false
    let checking = false
    let changed = false
    const current = () => (this.#proc === proc || this.#candidate === proc) && !proc.exited && this.#state === 'starting'
    const watch = this.#spec.watchRegistrations
    const pollMs = watch ? this.#t.registrationFallbackPollMs : this.#t.registrationPollMs
    // This watch, until a later one or #stopRegistrationWatch replaces it.
    const token = Symbol(this.name)
    const mine = () => this.#registrationWatch === token
    const check = async (): Promise<void> => {
      if (!mine()) return
      if (!current()) return this.#stopRegistrationWatch()
      if (checking) {
        changed = true
        return
      }
      checking = true
      let registered = false
      try {
        registered = await this.#spec.isRegistered({ pid: proc.pid, startedAtMs: proc.startedAtMs })
      } catch (err) {
        this.#log.debug(`${this.name}: registration check failed: ${(err as Error).message}`)
      } finally {
        checking = false
      }
      if (!mine() || !current()) return
      if (registered) {
        this.#stopRegistrationWatch()
        if (this.#candidate === proc) return this.#promote(proc)
        this.#registered = proc
        this.#startupFailure = undefined
        this.#setState('running')
        this.#log.info(`${this.name} running (registered after ${formatSeconds(Date.now() - proc.startedAtMs)})`)
        return
      }
      // A microVM worker's budget is longer (the runtime starts slowly in the guest); the note says so.
      const budget = this.#microvm?.registrationNote(this.#t.registrationNoteMs)
      if (!noted && Date.now() - proc.startedAtMs >= (budget?.ms ?? this.#t.registrationNoteMs)) {
        noted = true
        this.#log.warn(
          `${this.name} has not registered after ${formatSeconds(Date.now() - proc.startedAtMs)}${budget ? ` (${budget.label})` : ''}; it must connect to SVC_URL ` +
            `with the name in SVC_WORKER_NAME (${this.name}) and namespace SVC_NAMESPACE (${this.#spec.namespace})`,
        )
      }
      // A change reported while this check awaited counts: look again at once.
      if (changed) {
        changed = false
        return check()
      }
    }
    const tick = async () => {
      this.#poll = undefined
      await check()
      if (mine() && current() && this.#poll === undefined) this.#poll = setTimeout(tick, pollMs)
    }
    let pending: NodeJS.Immediate | undefined
    const unwatch = watch?.(() => {
      // Events come in bursts (an announce, then each function): one check after the burst.
      pending ??= setImmediate(() => {
        pending = undefined
        void check()
      })
    })
    this.#registrationWatch = token
    this.#unwatchRegistrations = () => {
      unwatch?.()
      if (pending !== undefined) clearImmediate(pending)
      pending = undefined
    }
    this.#poll = setTimeout(tick, pollMs)
  }

  /** Ends the registration watch of {@link #watchRegistration}: its poll and its engine subscription. */
  #stopRegistrationWatch(): void {
    clearTimeout(this.#poll)
    this.#poll = undefined
    this.#registrationWatch = undefined
    const unwatch = this.#unwatchRegistrations
    this.#unwatchRegistrations = undefined
    unwatch?.()
  }

  /** The worker process ended. Requested exits are handled by whoever asked; the rest follow §5.5. */
  #onExit(proc: ShellProcess, exit: CommandExit): void {
    const wasCandidate = this.#candidate === proc
    if (this.#proc === proc || wasCandidate) {
      if (wasCandidate) this.#candidate = undefined
      else this.#proc = undefined
      // The poll belongs to the process that is starting: the candidate while there is one.
      if (wasCandidate || !this.#candidate) this.#stopRegistrationWatch()
    }
    const description = describeExit(exit)
    this.#writeLog('svc', `process ${description}`)
    this.emit('exit', { code: exit.code, signal: exit.signal, requested: proc.requested } satisfies WorkerExit)
    if (proc.requested) return
    if (wasCandidate && this.#proc && !this.#proc.exited) {
      // What the new process left behind in its group must not outlive it.
      if (proc.pid !== undefined) signalGroup(proc.pid, 'SIGKILL')
      const generation = this.#generation
      void this.#enqueue(generation, () => this.#candidateFailed(generation, proc, exit))
      return
    }
    this.#lastError = description
    // What the worker left behind in its group (a dev server's children) must not outlive it.
    if (proc.pid !== undefined && !proc.stop && signalGroup(proc.pid, 'SIGTERM')) this.#orphanGroup = proc.pid
    const generation = this.#generation
    void this.#enqueue(generation, () => this.#afterExit(generation, proc, exit))
  }

  async #afterExit(generation: number, proc: ShellProcess, exit: CommandExit): Promise<void> {
    // A file change or restart() already started a new process.
    if (this.#proc || this.#candidate) return
    await this.#postRun(generation)
    if (generation !== this.#generation || this.#proc || this.#candidate) return
    const description = describeExit(exit)
    const action = exitAction(this.#spec.restartPolicy ?? 'on-failure', exit)
    if (action === 'spawn-failed') {
      // Not a crash of the worker: the shell never ran (the directory vanished, no shell).
      this.#fail(generation, { code: 'SPAWN_FAILED', message: `start command ${description}`, hint: 'svc retries after the next file change' })
      return
    }
    if (action === 'given-up') {
      this.#failure = { code: 'EXITED', message: `${description}; restart policy never`, hint: `see ${this.#logFile.path}` }
      this.#lastError = this.#failure.message
      this.#setState('failed', description)
      this.#log.warn(`${this.name} ${description}; not restarted (restart policy never)`)
      return
    }
    if (action === 'stopped') {
      this.#setState('stopped', description)
      this.#log.info(`${this.name} ${description}; it starts again on the next file change`)
      return
    }
    if (this.#registered !== proc && (await this.#repeatedStartupFailure(generation, proc, exit))) return
    if (generation !== this.#generation || this.#proc || this.#candidate) return
    const now = Date.now()
    const decision = this.#crashes.record(now, now - proc.startedAtMs)
    const { count, limit } = decision
    if (decision.crashed) {
      this.#failure = {
        code: 'CRASHED',
        message: `${description}; ${count} unrequested exits within ${formatSeconds(this.#t.crashWindowMs)}`,
        hint: `see ${this.#logFile.path}; svc starts it again after the next file change`,
      }
      this.#lastError = this.#failure.message
      this.#setState('crashed', description)
      this.#log.error(`${this.name} ${description}; crashed (${count}/${limit} exits within ${formatSeconds(this.#t.crashWindowMs)}), waiting for a file change`)
      return
    }
    const delay = decision.delayMs
    this.#setState('restarting', description)
    this.#log.warn(`${this.name} ${description}; restarting in ${formatSeconds(delay)} (${count}/${limit})`)
    this.#backoff = setTimeout(() => {
      this.#backoff = undefined
      void this.#enqueue(generation, async () => {
        if (this.#proc || this.#candidate || this.#state !== 'restarting') return
        this.#restarts++
        await this.#spawn(generation)
      })
    }, delay)
  }

  /**
   * cli.md §5.5 as issue 11 refines it: a process that exits before registering with the same exit
   * and the same last output as the previous attempt will not do better on a third try (a syntax
   * error, a missing module). The worker becomes `crashed` and waits for a file change, with one
   * line quoting what it printed. True when that happened.
   */
  async #repeatedStartupFailure(generation: number, proc: ShellProcess, exit: CommandExit): Promise<boolean> {
    // The exit event can come before the last lines were read from the pipes.
    await settledWithin(proc.drained, OUTPUT_DRAIN_MS)
    if (generation !== this.#generation || this.#proc || this.#candidate) return false
    const tail = this.#tails.get(proc) ?? []
    const signature = `${describeExit(exit)}\n${tail.map(normaliseLine).join('\n')}`
    const previous = this.#startupFailure
    this.#startupFailure = signature
    if (previous !== signature) return false
    const description = describeExit(exit)
    const quoted = startupErrorLine(tail, this.#spec.directory)
    const where = this.#spec.watch && (this.#manifest?.watch.enabled ?? true) ? `waiting for a change to ${this.#directoryLabel()}` : `run svc worker restart ${this.name} after fixing it`
    this.#failure = {
      code: 'STARTUP_FAILED',
      message: `${description} before it registered${quoted ? `: ${quoted}` : ''}`,
      hint: `the same failure twice in a row; see ${this.#logFile.path}; svc starts it again after the next file change`,
    }
    this.#lastError = this.#failure.message
    this.#setState('crashed', description)
    this.#log.error(`${this.name} cannot start (${description}, twice the same way)${quoted ? `: ${quoted}` : ''}; ${where}`)
    return true
  }

  /** Runs `post_run` (compose) after the worker process ended. */
  async #postRun(generation: number | undefined): Promise<void> {
    const command = this.#spec.postRun
    if (!command) return
    const exit = await this.#runTask('post_run', command, this.#t.postRunTimeoutMs, generation === undefined)
    if (exit.code !== 0 && (generation === undefined || generation === this.#generation)) {
      this.#log.warn(`${this.name}: post_run '${command}' ${exit.timedOut ? 'timed out' : describeExit(exit)}`)
    }
  }

  /** Puts the worker in `failed`, stopping its process if one runs. Always returns false. */
  #fail(generation: number, failure: SupervisorFailure): false {
    if (generation !== this.#generation) return false
    this.#failure = failure
    this.#lastError = failure.message
    const proc = this.#proc
    if (proc) {
      // Stopped in the background: the failure is reported now, not 5 s later.
      void this.#stopProcess(proc)
    }
    const candidate = this.#candidate
    this.#candidate = undefined
    if (candidate) void this.#stopOther(candidate)
    this.#setState('failed', failure.message)
    this.#log.error(`${this.name} failed: ${failure.message}${failure.hint ? ` (hint: ${failure.hint})` : ''}`)
    return false
  }

  async #stopProcess(proc: ShellProcess): Promise<void> {
    if (this.#proc === proc) this.#stopRegistrationWatch()
    const killed = await stopGroup(proc, this.#stopTimeoutMs)
    if (killed) this.#log.warn(`${this.name} did not stop within ${formatSeconds(this.#stopTimeoutMs)}; killed it (SIGKILL)`)
    if (this.#proc === proc) this.#proc = undefined
  }

  /** Kills what is left of a group whose leader exited on its own. */
  #reapOrphans(): void {
    const group = this.#orphanGroup
    this.#orphanGroup = undefined
    if (group !== undefined && groupAlive(group)) signalGroup(group, 'SIGKILL')
  }

  /** Runs setup, install or a hook to its end (or `timeoutMs`), output to the log; stop() kills it. */
  async #runTask(
    step: string,
    command: string,
    timeoutMs?: number,
    detached = false,
  ): Promise<CommandExit & { timedOut?: boolean; firstError?: string; firstErrorLine?: string }> {
    this.#writeLog('svc', `${step}: $ ${command}`)
    const scanner = new CompilerErrorScanner()
    const onLine = (stream: 'stdout' | 'stderr', text: string) => {
      scanner.push(text)
      this.#output(stream, text, step as OutputPhase)
    }
    // microVM guest installs (cli.md §5.7, SVC_MICROVM_INSTALL=guest): setup and install run in the VM, behind the registry proxy.
    const inGuest = this.#microvm?.guestInstall === true && (step === 'setup' || step === 'install') && this.#manifest !== undefined
    let task: ShellProcess
    if (inGuest) {
      try {
        task = await this.#microvm!.runTask(command, this.#env(), this.#manifest!, onLine)
      } catch (err) {
        if (!(err instanceof MicrovmSetupError)) throw err
        this.#writeLog('svc', `${step}: ${err.message}`)
        return { code: 1, signal: null, timedOut: false, firstError: err.message, firstErrorLine: err.message }
      }
    } else task = runShell(command, { cwd: this.#spec.directory, env: this.#env(), onLine })
    // post_run during stop() must not be killed by stop() itself.
    if (!detached) this.#task = task
    let timedOut = false
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true
            void stopGroup(task, this.#stopTimeoutMs)
          }, timeoutMs)
    const exit = await task.done
    clearTimeout(timer)
    if (this.#task === task) this.#task = undefined
    this.#writeLog('svc', `${step} ${describeExit(exit)}`)
    // The pipes may still hold the last lines when the leader's exit arrives; a grandchild holding
    // them open must not hold the step up, hence the bound.
    if (exit.code !== 0 && scanner.firstError === undefined) await settledWithin(task.drained, OUTPUT_DRAIN_MS)
    const firstError = scanner.firstError
    const firstErrorLine = scanner.oneLine
    return { ...exit, timedOut, ...(firstError === undefined ? {} : { firstError }), ...(firstErrorLine === undefined ? {} : { firstErrorLine }) }
  }

  #env(): Record<string, string> {
    return buildWorkerEnv({ spec: this.#spec, manifest: this.#manifest, isolation: 'process' }).env
  }

  // ---- watching ------------------------------------------------------------------------------

  /** Creates, replaces or removes the watcher to match the entry and the manifest (§5.4). */
  async #syncWatcher(generation: number): Promise<void> {
    const manifest = this.#manifest
    const enabled = this.#spec.watch && (manifest?.watch.enabled ?? true)
    const patterns = manifest?.watch.ignore ?? []
    const key = enabled ? JSON.stringify(patterns) : undefined
    if (key === this.#watchKey && (key === undefined || this.#watcher)) return
    await this.#closeWatcher()
    if (key === undefined || generation !== this.#generation) return
    const spec = this.#spec
    const root = spec.projectRoot
    const logPath = this.#logFile.path
    const ignored = ignoreMatcher({
      directory: spec.directory,
      patterns,
      paths: [
        join(root, 'config.yaml'),
        join(root, 'worker-compose.yaml'),
        join(root, 'config'),
        logPath,
        `${logPath}.1`,
        `${logPath}.2`,
        this.#stateFile.path,
      ],
    })
    const stateTemp = `${this.#stateFile.path}.`
    const more = spec.ignoredPaths
    const ignoredElsewhere = (path: string) => {
      if (!more) return false
      const absolute = resolve(spec.directory, path)
      return more().some((p) => absolute === p || absolute.startsWith(p + sep))
    }
    const watcher = watch(spec.directory, {
      ignoreInitial: true,
      ignored: (path: string) => ignored(path) || path.startsWith(stateTemp) || ignoredElsewhere(path),
    })
    this.#watcher = watcher
    this.#watchKey = key
    watcher.on('all', (event, path) => {
      if (event === 'addDir') return
      this.#onFileChange(path)
    })
    watcher.on('error', (err) => this.#log.warn(`${this.name}: file watcher error: ${(err as Error).message}`))
    // Changes count from the moment the watcher has scanned the directory; a watcher closed by
    // stop() before that never gets ready, so closing releases the wait too.
    await new Promise<void>((resolve) => {
      this.#watcherReady = resolve
      watcher.once('ready', () => resolve())
    })
    this.#watcherReady = undefined
  }

  async #closeWatcher(): Promise<void> {
    const watcher = this.#watcher
    this.#watcher = undefined
    this.#watchKey = undefined
    this.#watcherReady?.()
    this.#watcherReady = undefined
    if (watcher) await watcher.close()
  }

  #onFileChange(path: string): void {
    if (!this.#active) return
    this.#changes.set(path, Date.now())
    // The prime of the start this change leads to runs during the debounce, not after it (#prime).
    const command = this.#spec.startCommand ?? this.#manifest?.scripts.start
    if (command && !this.#priming && this.#microvm === undefined) void this.#prime(command)
    clearTimeout(this.#debounce)
    this.#debounce = setTimeout(() => {
      this.#debounce = undefined
      const changes = new Map(this.#changes)
      this.#changes.clear()
      const generation = this.#generation
      void this.#enqueue(generation, () => this.#onChanges(generation, changes))
    }, this.#t.debounceMs)
  }

  /**
   * Strips a TypeScript entry's types into the compile cache without running it (prime.ts), so the
   * worker does not load amaro (~17 MiB of RSS for its whole life) at its first start after a
   * change. One prime at a time: a call while one runs waits for it, then checks the record again
   * (a start after a change finds the prime the change began already done, or a short one to finish).
   */
  #prime(command: string): Promise<PrimeOutcome> {
    const run = async (): Promise<PrimeOutcome> => {
      const startedAt = Date.now()
      let outcome: PrimeOutcome
      try {
        outcome = await primeCompileCache(command, { cwd: this.#spec.directory, env: this.#env() })
      } catch {
        outcome = 'failed'
      }
      if (outcome === 'primed' || outcome === 'failed') this.#log.debug(`${this.name}: compile cache ${outcome} in ${Date.now() - startedAt} ms`)
      return outcome
    }
    const next = (this.#priming ?? Promise.resolve()).then(run, run)
    this.#priming = next
    void next.finally(() => {
      if (this.#priming === next) this.#priming = undefined
    })
    return next
  }

  /** One debounced burst of changes (§5.4). */
  async #onChanges(generation: number, changes: Map<string, number>): Promise<void> {
    const dir = this.#spec.directory
    // The newest process: a reload's candidate, else the serving one.
    const proc = this.#candidate ?? this.#proc
    // Changes the running process already started with: files written by setup or install, whose
    // events arrive after the spawn. An event that arrived before the spawn is one; so is one that
    // arrived shortly after it for a file last modified before it.
    const paths = [...changes]
      .filter(([path, arrivedAt]) => !proc || !this.#startedWith(proc, path, arrivedAt))
      .map(([path]) => path)
    if (paths.length === 0) return
    const isManifest = (p: string) => p === join(dir, MANIFEST_FILE)
    const isDependency = (p: string) => dirname(p) === dir && isDependencyManifest(basename(p))
    const manifestChanged = paths.some(isManifest)
    const sourceChanged = paths.some((p) => !isManifest(p) && !isDependency(p))
    if (this.#waitForManifest && !manifestChanged) return
    if (proc) {
      // Only dependency manifests, with the hash that was installed: e.g. the lockfile written by
      // the install itself. Nothing to do.
      if (!manifestChanged && !sourceChanged && !this.#installNeeded()) return
    }
    this.#resetCrashPolicy()
    const names = paths.map((p) => relative(dir, p) || p)
    const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ')
    this.#log.info(`${this.name}: ${shown} changed; ${proc ? 'restarting' : 'starting'}`)
    const reload = manifestChanged || !this.#manifest || this.#state === 'failed'
    await this.#launch(generation, reload, `${shown} changed`)
  }

  #startedWith(proc: ShellProcess, path: string, arrivedAt: number): boolean {
    if (arrivedAt < proc.startedAtMs) return true
    if (arrivedAt - proc.startedAtMs > STALE_EVENT_WINDOW_MS) return false
    try {
      return statSync(path).mtimeMs < proc.startedAtMs
    } catch {
      return false
    }
  }

  #resetCrashPolicy(): void {
    this.#crashes.reset()
    this.#startupFailure = undefined
    clearTimeout(this.#backoff)
    this.#backoff = undefined
  }

  // ---- output and state ----------------------------------------------------------------------

  #output(stream: 'stdout' | 'stderr', text: string, phase: OutputPhase): void {
    this.#writeLog(stream, text)
    this.emit('output', { worker: this.name, stream, text, phase } satisfies OutputLine)
  }

  #writeLog(stream: 'stdout' | 'stderr' | 'svc', text: string): void {
    this.#logFile.write(`${new Date().toISOString()} ${stream} ${text}`)
  }

  #setState(state: WorkerState, detail?: string): void {
    if (state !== 'failed' && state !== 'crashed' && state !== 'stopped') {
      if (state !== 'restarting') this.#failure = undefined
    }
    const changed = state !== this.#state
    this.#state = state
    if (changed) this.#writeLog('svc', `state ${state}${detail ? ` (${detail})` : ''}`)
    void this.#stateFile.write(this.#record())
    if (changed) this.emit('state', state, detail)
  }

  #record(): WorkerStateRecord {
    const proc = this.#proc
    return {
      name: this.name,
      namespace: this.#spec.namespace,
      directory: this.#spec.directory,
      state: this.#state,
      pid: proc?.pid ?? null,
      supervisor_pid: process.pid,
      started_at: proc && this.#startedAt ? this.#startedAt.toISOString() : null,
      restarts: this.#restarts,
      last_error: this.#lastError ?? null,
      last_error_code: this.#failure?.code ?? null,
      updated_at: new Date().toISOString(),
      ...(this.#microvm ? { isolation: 'microvm' as const, vm_pids: this.#microvm.hostPids() } : {}),
      ...this.#install,
    }
  }

  /** The worker directory as shown in messages: relative to the project root when inside it. */
  #directoryLabel(): string {
    const rel = relative(this.#spec.projectRoot, this.#spec.directory)
    if (rel === '') return '.'
    return rel.startsWith('..') || isAbsolute(rel) ? this.#spec.directory : rel
  }
}

/** Lines of a worker's own output kept to compare and quote start-up failures. */
const TAIL_LINES = 40

/** Digits vary between two runs of the same failure (pids, times, ports); they do not count. */
function normaliseLine(line: string): string {
  return line.replace(/\d+/g, '#').trim()
}

/** `2 s`, `1.5 s`, `200 ms`. */
function formatSeconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  const seconds = ms / 1000
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`
}

/** How long a failed step's output may lag its exit before the first compiler error is read (ms). */
const OUTPUT_DRAIN_MS = 2000

/** What `isRegistered` and `drain` get to know about a process. */
function probeOf(proc: ShellProcess): RegistrationProbe {
  return { pid: proc.pid, startedAtMs: proc.startedAtMs }
}

/** Resolves when `signal` aborts. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve()
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))
}

/** Resolves when `promise` settles or after `ms`, whichever is first. */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([promise.catch(() => {}), new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

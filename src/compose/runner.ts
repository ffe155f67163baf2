/**
 * The project runner of the compose daemon (cli.md §4.7, container lifecycle): starts the containers
 * of compose files in dependency order (independent ones concurrently), waits for each to register,
 * rolls a failed `up` back, and stops projects in reverse order. Path containers and the console
 * are launched, restarted and stopped by the orchestrator `svc` uses too (src/supervisor/
 * orchestrator.ts, the supervisor of cli.md §5), over an engine view read through
 * `engine::workers::list`; built-in containers are checked against the engine.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, isAbsolute, join, resolve } from 'node:path'
import { builtinDescriptor, type Logger } from '../../runtime/index.ts'
import type { Supervise, SupervisedWorker, SupervisorTimings, WorkerLaunch, WorkerState } from '../supervisor/types.ts'
import { consoleTokenOff, consoleUrl } from '../lib/console.ts'
import { newToken } from 'svc-console/access'
import { consoleWorkerSpec } from '../supervisor/launch.ts'
import type { ListedConnection } from '../supervisor/launch.ts'
import { listedEngine } from '../supervisor/engine-view.ts'
import { Orchestrator } from '../supervisor/orchestrator.ts'
import { isSignalTarget } from '../supervisor/process.ts'
import { displayPath } from '../lib/project.ts'
import { EnvFileError, parseEnvFile } from './env-file.ts'
import { ComposeError, errorBody } from './errors.ts'
import type { ErrorBody } from './errors.ts'
import { RESERVED_ENV_NAMES } from './file.ts'
import type { BuiltinContainer, ComposeFile, ContainerSpec, PathContainer } from './file.ts'
import type { ContainerResult, ContainerState, ContainerStatus, OpResult, ProjectState, WorkerSummary } from './types.ts'

/** What the runner needs from the engine connection of the daemon. */
export interface EngineAccess {
  /** The engine's WebSocket URL, exported to containers as SVC_URL. */
  readonly url: string
  /** `engine::workers::list` with the given filter (protocol.md §11.1). */
  listWorkers(filter?: { namespace?: string; runtime?: string }): Promise<WorkerSummary[]>
  /**
   * The functions the connection `id` holds, as `<namespace>/<function id>` (`engine::workers::info
   * {id}`, protocol.md §11.1): a reload's new process counts as registered once it holds the
   * previous one's. Optional (tests).
   */
  workerFunctions?(id: string): Promise<string[]>
  /**
   * `engine::workers::drain {id}` (issue 21): marks the connection draining and resolves with the
   * calls it still runs; rejects with `code: 'NOT_FOUND'` once it is gone. Without it, a reload of
   * a path container stops the old process before starting the new one.
   */
  drainWorker?(id: string): Promise<number>
  /**
   * Deep-merges `config` into the stored settings entry `id` and stores the result with
   * `configuration::set` (cli.md §2.3); rejects with the configuration worker's error.
   */
  configure(id: string, config: unknown): Promise<void>
  /**
   * A void `engine::log::<level>` call (builtins.md §12.2); `source` names the output stream of a
   * container line (attribute `log.source`, as for the engine's own workers). Must never throw.
   */
  log(level: 'info' | 'warn', message: string, serviceName: string, source?: 'stdout' | 'stderr'): void
}

export type { Supervise } from '../supervisor/types.ts'

export interface RunnerOptions {
  /** The daemon's namespace: every container registers here (SVC_NAMESPACE). */
  namespace: string
  /** The daemon's working directory: `.svc/` lives here and it is SVC_PROJECT_ROOT. */
  cwd: string
  engine: EngineAccess
  /** Default `superviseWorker` of src/supervisor. */
  supervise?: Supervise
  /** Overrides of the supervisor's timings (tests). */
  timings?: Partial<SupervisorTimings>
  log: Logger
  /** Called after every change of a container's state (to persist state.json). */
  onChange?: () => void
}

/** Called as each container of an `up` reaches its outcome (for progress output). */
export type ContainerListener = (result: ContainerResult) => void

/** How many of a container's last output lines a start failure quotes. */
const QUOTED_LINES = 20

/** A container the runner knows, running or not. */
interface Container {
  key: string
  /** Absolute path of the compose file it belongs to. */
  project: string
  worker: string
  kind: 'path' | 'builtin'
  state: ContainerState
  pid: number | undefined
  startedAt: number | undefined
  restarts: number
  lastError: ErrorBody | undefined
  detail: string | undefined
  supervised: SupervisedWorker | undefined
  /** True for a process left by a previous daemon and re-adopted (cli.md §4.7): stoppable, not restartable. */
  adopted: boolean
  /** Set while the runner stops it, so the supervisor's transitions are not read as crashes. */
  stopping: boolean
  /** The last lines it printed, for failure messages. */
  output: string[]
}

interface Project {
  path: string
  label: string
  /** The file as last read. */
  file: ComposeFile | undefined
  /** True between a successful `up` and the next `down` (for an empty project's list state). */
  active: boolean
}

/** Persisted per container in state.json. */
export interface ContainerRecord extends ContainerStatus {
  project: string
  kind: 'path' | 'builtin'
}

const RUNNING: ReadonlySet<ContainerState> = new Set(['starting', 'ready', 'restarting'])

/** `op_` and 4 hex digits (cli.md §4.7). */
export function operationId(): string {
  return `op_${randomBytes(2).toString('hex')}`
}

/**
 * Runs the containers of one daemon. Not safe for overlapping operations: the daemon serializes
 * `up`, `down`, `restart`, `add` and `remove`.
 */
export class ProjectRunner {
  readonly namespace: string
  readonly cwd: string
  private readonly engine: EngineAccess
  /** Launches, restarts and stops the path containers and the console (as it does for `svc`). */
  private readonly orchestrator: Orchestrator
  private readonly log: Logger
  private readonly onChange: () => void
  private readonly containers = new Map<string, Container>()
  private readonly projects = new Map<string, Project>()

  constructor(options: RunnerOptions) {
    this.namespace = options.namespace
    this.cwd = options.cwd
    this.engine = options.engine
    this.log = options.log
    const engine = options.engine
    this.orchestrator = new Orchestrator({
      engine: listedEngine(engine.url, {
        list: async (namespace) => (await engine.listWorkers({ namespace })).map(listed),
        ...(engine.workerFunctions ? { functionsOf: (id: string) => engine.workerFunctions!(id) } : {}),
        ...(engine.drainWorker ? { drain: (id: string) => engine.drainWorker!(id) } : {}),
        log: options.log,
      }),
      log: options.log,
      ...(options.supervise ? { supervise: options.supervise } : {}),
      ...(options.timings ? { timings: options.timings } : {}),
    })
    this.onChange = options.onChange ?? (() => {})
  }

  /** The log file of a container: `<cwd>/.svc/logs/<namespace>/<container>.log` (cli.md §4.7). */
  logFile(key: string): string {
    return join(this.cwd, '.svc', 'logs', this.namespace, `${key}.log`)
  }

  /** True when the container runs (starting, ready or restarting). */
  isRunning(key: string): boolean {
    const c = this.containers.get(key)
    return c !== undefined && RUNNING.has(c.state)
  }

  // -- up ----------------------------------------------------------------------------------------

  /**
   * Brings a project up: every container of `file` that does not run is started once all its
   * dependencies are ready; independent containers start concurrently. With `only`, just those
   * containers and the dependencies they need. If any container fails, the containers this call
   * started are stopped again in reverse start order.
   *
   * Container errors: `UNKNOWN_WORKER`, `INVALID_MANIFEST`, `NO_START_SCRIPT`, `KVM_NOT_ACCESSIBLE`,
   * `RESERVED_ENV_OVERRIDE`, `PRE_RUN_FAILED`, `STARTUP_TIMEOUT`, `CHILD_EXITED_BEFORE_REGISTRATION`,
   * `BUILTIN_DISABLED`, `DEPENDENCY_FAILED`, `CONTAINER_CONFLICT` (the key runs for another file).
   */
  async up(path: string, file: ComposeFile, options: { only?: string[]; onContainer?: ContainerListener } = {}): Promise<OpResult> {
    const project = this.projectFor(path, file)
    const byKey = new Map(file.containers.map((c) => [c.key, c]))
    const results = new Map<string, ContainerResult>()
    const startedHere = new Set<string>()
    const outcomes = new Map<string, Promise<boolean>>()
    const report = (result: ContainerResult) => {
      results.set(result.container, result)
      options.onContainer?.(result)
    }

    const ensure = (key: string): Promise<boolean> => {
      let outcome = outcomes.get(key)
      if (!outcome) {
        outcome = this.bring(byKey.get(key)!, project, file, ensure, report, startedHere)
        outcomes.set(key, outcome)
      }
      return outcome
    }

    const targets = options.only ? withDependencies(options.only, byKey) : file.startOrder
    await Promise.all(targets.map(ensure))

    const failed = [...results.values()].some((r) => r.state === 'failed')
    if (failed && startedHere.size > 0) {
      for (const key of [...file.startOrder].reverse()) {
        if (!startedHere.has(key)) continue
        await this.stopContainer(key, file.stopTimeoutMs)
        const previous = results.get(key)!
        results.set(key, { container: key, state: 'stopped', changed: false, rolled_back: true, ...(previous.detail ? { detail: previous.detail } : {}) })
      }
    }
    if (!failed) project.active = true
    const containers = file.startOrder.filter((k) => results.has(k)).map((k) => results.get(k)!)
    return {
      operation_id: operationId(),
      status: failed ? 'failed' : 'ok',
      changed: containers.some((c) => c.changed),
      containers,
    }
  }

  /** One container of an `up`: wait for its dependencies, then start it unless it runs. */
  private async bring(
    spec: ContainerSpec,
    project: Project,
    file: ComposeFile,
    ensure: (key: string) => Promise<boolean>,
    report: (result: ContainerResult) => void,
    startedHere: Set<string>,
  ): Promise<boolean> {
    const deps = await Promise.all(spec.dependsOn.map(ensure))
    const current = this.containers.get(spec.key)
    if (current && RUNNING.has(current.state)) {
      if (current.project !== project.path) {
        const error = new ComposeError(
          'CONTAINER_CONFLICT',
          `container ${spec.key} already runs in namespace ${this.namespace} for ${displayPath(current.project, this.cwd)}; container keys must be unique within a namespace`,
        )
        report({ container: spec.key, state: 'failed', changed: false, error: error.toBody() })
        return false
      }
      report(resultOf(current, false))
      return true
    }
    const failedDep = spec.dependsOn.find((_, i) => !deps[i])
    if (failedDep !== undefined) {
      const c = this.record(spec, project)
      c.state = 'failed'
      c.lastError = { code: 'DEPENDENCY_FAILED', message: `${spec.key} depends on ${failedDep}, which did not start` }
      this.onChange()
      report(resultOf(c, false))
      return false
    }
    const ok = await this.startContainer(spec, project, file)
    if (ok) startedHere.add(spec.key)
    report(resultOf(this.containers.get(spec.key)!, true))
    return ok
  }

  /** A fresh record for a start, keeping the restart count of an earlier run. */
  private record(spec: ContainerSpec, project: Project): Container {
    const c: Container = {
      key: spec.key,
      project: project.path,
      worker: spec.worker,
      kind: spec.kind,
      state: 'starting',
      pid: undefined,
      startedAt: undefined,
      restarts: this.orchestrator.restarts(spec.key),
      lastError: undefined,
      detail: undefined,
      supervised: undefined,
      adopted: false,
      stopping: false,
      output: [],
    }
    this.containers.set(spec.key, c)
    return c
  }

  private async startContainer(spec: ContainerSpec, project: Project, file: ComposeFile): Promise<boolean> {
    // A crashed or failed container still has a supervisor waiting for file changes: end it first.
    const previous = this.containers.get(spec.key)
    if (previous?.supervised) await this.disposeSupervised(previous)
    const c = this.record(spec, project)
    c.startedAt = Date.now()
    this.onChange()
    try {
      if (spec.kind === 'builtin') await this.startBuiltin(c, spec)
      else await this.startPath(c, spec, project, file)
      c.state = 'ready'
      return true
    } catch (err) {
      c.state = 'failed'
      c.lastError = errorBody(err)
      if (c.supervised) await this.disposeSupervised(c)
      c.pid = undefined
      this.log.warn(`${spec.key} failed to start: ${c.lastError.code}: ${c.lastError.message.split('\n')[0]}`)
      return false
    } finally {
      this.onChange()
    }
  }

  /**
   * Ready when the engine runs the built-in (builtins.md §1); its `config` is deep-merged into the
   * settings entry and applies live (cli.md §2.3).
   */
  private async startBuiltin(c: Container, spec: BuiltinContainer): Promise<void> {
    if (spec.builtin === 'console') return this.startConsole(c, spec)
    const builtins = await this.engine.listWorkers({ runtime: 'builtin' })
    if (!builtins.some((w) => w.name === spec.builtin)) {
      throw new ComposeError(
        'BUILTIN_DISABLED',
        `${spec.key}: the engine does not run the built-in worker ${spec.builtin} (disabled in its config.yaml, or not available in this engine)`,
      )
    }
    const id = builtinDescriptor(spec.builtin)?.configurationId
    if (spec.config !== undefined && id) {
      try {
        await this.engine.configure(id, spec.config)
      } catch (err) {
        const { code, message } = errorBody(err)
        throw new ComposeError(code, `${spec.key}: config not applied to settings entry ${id}: ${message}`)
      }
      c.detail = `config applied to settings entry ${id}`
    }
  }

  private async startPath(c: Container, spec: PathContainer, project: Project, file: ComposeFile): Promise<void> {
    const fileDir = dirname(project.path)
    const workerDir = resolvePath(fileDir, spec.path)
    if (!isDirectory(workerDir)) {
      throw new ComposeError('UNKNOWN_WORKER', `${spec.key}: worker directory ${spec.path} does not exist (relative to ${displayPath(fileDir, this.cwd) || '.'})`)
    }
    let directory = workerDir
    if (spec.workingDir !== undefined) {
      directory = resolvePath(fileDir, spec.workingDir)
      if (!isDirectory(directory)) throw new ComposeError('UNKNOWN_WORKER', `${spec.key}: working_dir ${spec.workingDir} does not exist`)
    }
    const env = { ...this.readEnvFiles(spec, project, fileDir), ...spec.environment }
    const before = await this.listOwnNamespace()
    const namespace = this.namespace

    const workerSpec: WorkerLaunch = {
      name: spec.key,
      directory,
      namespace,
      projectRoot: this.cwd,
      envBase: 'compose',
      env,
      watch: spec.watch,
      stopTimeoutMs: file.stopTimeoutMs,
      logFile: this.logFile(spec.key),
      stateFile: join(this.cwd, '.svc', 'compose', namespace, 'workers', `${spec.key}.json`),
    }
    if (spec.config !== undefined) workerSpec.config = spec.config
    if (spec.isolation !== undefined) workerSpec.isolation = spec.isolation
    workerSpec.restartPolicy = spec.restart
    if (spec.scripts.run !== undefined) workerSpec.startCommand = spec.scripts.run
    if (spec.scripts.preRun !== undefined) workerSpec.preRun = { command: spec.scripts.preRun, timeoutMs: spec.scripts.preRunTimeoutMs }
    if (spec.scripts.postRun !== undefined) workerSpec.postRun = spec.scripts.postRun

    const supervised = this.orchestrator.launch(workerSpec)
    this.attach(c, supervised, spec.key)

    try {
      await supervised.start()
      await supervised.waitUntilRunning(spec.startupTimeoutMs)
    } catch (err) {
      throw await this.startFailure(c, supervised, spec, err, before)
    }
    c.pid = supervised.pid
  }

  /** Makes `supervised` the process of `c`: its output is quoted and logged under `key`, its states followed. */
  private attach(c: Container, supervised: SupervisedWorker, key: string): void {
    c.supervised = supervised
    supervised.on('output', (line: { stream: 'stdout' | 'stderr'; text: string }) => {
      c.output.push(line.text)
      if (c.output.length > QUOTED_LINES) c.output.shift()
      this.engine.log(line.stream === 'stdout' ? 'info' : 'warn', line.text, key, line.stream)
    })
    supervised.on('state', (state: WorkerState) => this.onSupervisorState(c, supervised, state))
  }

  /**
   * `builtin://console` (cli.md §4.7): runs `svc console --no-open --engine <url>` (port, host,
   * allowed hosts and `token: false` from the container's `config`) and is ready when `svc-console`
   * registers. Its access token is drawn here and passed in `SVC_CONSOLE_TOKEN`, so that it stays
   * out of the container's log (which reaches the engine's); the daemon prints the address with
   * the token on its own terminal. A console that is already connected (started by svc or by
   * hand) counts as this container and is left alone.
   */
  private async startConsole(c: Container, spec: BuiltinContainer): Promise<void> {
    const running = await this.engine.listWorkers({ namespace: 'default' })
    if (running.some((w) => w.name === 'svc-console')) return
    const token = consoleTokenOff(spec.config) ? undefined : newToken()
    let consoleSpec: WorkerLaunch
    try {
      consoleSpec = consoleWorkerSpec({
        name: spec.key,
        directory: join(this.cwd, '.svc', 'compose', this.namespace, 'console'),
        engineUrl: this.engine.url,
        projectRoot: this.cwd,
        envBase: 'compose',
        config: spec.config,
        token,
        logFile: this.logFile(spec.key),
        stateFile: join(this.cwd, '.svc', 'compose', this.namespace, 'workers', `${spec.key}.json`),
      })
    } catch (err) {
      throw new ComposeError('INVALID_COMPOSE_FILE', `${spec.key}: ${(err as Error).message.replace(/^config\.yaml: /, '')}`)
    }
    const supervised = this.orchestrator.launch(consoleSpec)
    this.attach(c, supervised, spec.key)
    try {
      await supervised.start()
      await supervised.waitUntilRunning(spec.startupTimeoutMs)
    } catch (err) {
      const tail = c.output.slice(-5).join('\n')
      const reason = supervised.failure?.message ?? supervised.lastError ?? (err as Error).message
      throw new ComposeError('STARTUP_TIMEOUT', `${spec.key}: the console did not register as svc-console (${reason})${tail ? `\n${tail}` : ''}`)
    }
    c.pid = supervised.pid
    this.log.info(`${spec.key}: svc console → ${consoleUrl(spec.config, token)}`)
  }

  /** env_file files in order (cli.md §5.2); a reserved name fails with RESERVED_ENV_OVERRIDE. */
  private readEnvFiles(spec: PathContainer, project: Project, fileDir: string): Record<string, string> {
    const env: Record<string, string> = {}
    for (const entry of spec.envFiles) {
      const where = `${project.label}:${entry.place.line}:${entry.place.column}`
      const path = resolvePath(fileDir, entry.path)
      let text: string
      try {
        text = readFileSync(path, 'utf8')
      } catch (err) {
        const missing = (err as NodeJS.ErrnoException).code === 'ENOENT'
        throw new ComposeError('INVALID_COMPOSE_FILE', `${where}: env_file ${entry.path} ${missing ? 'does not exist' : `cannot be read (${(err as Error).message})`}`)
      }
      const label = displayPath(path, this.cwd)
      try {
        for (const v of parseEnvFile(text)) {
          if (RESERVED_ENV_NAMES.includes(v.name)) {
            throw new ComposeError('RESERVED_ENV_OVERRIDE', `${label}:${v.line}: env_file of container ${spec.key} sets ${v.name}, which svc sets itself (cli.md §5.2); remove it`)
          }
          env[v.name] = v.value
        }
      } catch (err) {
        if (err instanceof EnvFileError) throw new ComposeError('INVALID_COMPOSE_FILE', `${label}:${err.line}: ${err.message} (env_file of container ${spec.key})`)
        throw err
      }
    }
    return env
  }

  /** The error of a path container that did not become ready, with the details cli.md §4.7 asks for. */
  private async startFailure(c: Container, supervised: SupervisedWorker, spec: PathContainer, err: unknown, before: Set<string>): Promise<ComposeError> {
    const own = (err as { code?: unknown }).code
    const failure = supervised.failure
    const code = typeof own === 'string' ? own : (failure?.code ?? 'START_FAILED')
    const log = displayPath(this.logFile(spec.key), this.cwd)
    if (code === 'STARTUP_TIMEOUT') {
      let message = `${spec.key} did not register within ${seconds(spec.startupTimeoutMs)} (state: ${supervised.state})`
      const strangers = await this.newStrangers(before)
      if (strangers.length > 0) {
        message += `; a worker named ${strangers.map((n) => `'${n}'`).join(', ')} connected to namespace ${this.namespace} instead: the worker must use SVC_WORKER_NAME (${spec.key}) as its name`
      }
      return new ComposeError('STARTUP_TIMEOUT', `${message}. See ${log}`)
    }
    const reason = typeof own === 'string' ? (err as Error).message : (failure?.message ?? supervised.lastError ?? String(err))
    let message = reason.startsWith(spec.key) ? reason : `${spec.key}: ${reason}`
    if (code === 'CHILD_EXITED_BEFORE_REGISTRATION' || code === 'PRE_RUN_FAILED' || code === 'INSTALL_FAILED' || code === 'SETUP_FAILED') {
      if (c.output.length > 0) message += `\n${c.output.join('\n')}`
      message += `\nSee ${log}`
    }
    return new ComposeError(code, message, { cause: err })
  }

  /** Named workers that joined the namespace since `before` and are not containers or the daemon. */
  private async newStrangers(before: Set<string>): Promise<string[]> {
    let workers: WorkerSummary[]
    try {
      workers = await this.engine.listWorkers({ namespace: this.namespace })
    } catch {
      return []
    }
    const known = new Set([...this.containers.keys(), 'compose'])
    for (const p of this.projects.values()) for (const c of p.file?.containers ?? []) known.add(c.key)
    return [...new Set(workers.filter((w) => !before.has(w.id) && w.name !== null && !known.has(w.name)).map((w) => w.name!))]
  }

  private async listOwnNamespace(): Promise<Set<string>> {
    try {
      return new Set((await this.engine.listWorkers({ namespace: this.namespace })).map((w) => w.id))
    } catch {
      return new Set()
    }
  }

  /** Follows a supervised container after it was ready: crash restarts, file-change restarts, crashes. */
  private onSupervisorState(c: Container, supervised: SupervisedWorker, state: WorkerState): void {
    if (c.supervised !== supervised || c.stopping || c.state === 'starting') return
    const before = c.state
    // The supervisor's count, as svc worker list shows it: every restart, also those of a crash loop
    // that never reaches running again.
    c.restarts = supervised.restarts
    switch (state) {
      case 'running':
        c.state = 'ready'
        c.pid = supervised.pid
        c.startedAt = supervised.startedAt?.getTime() ?? c.startedAt
        break
      case 'restarting':
      case 'installing':
      case 'starting':
        c.state = 'restarting'
        break
      case 'crashed':
      case 'failed':
        c.state = 'failed'
        c.pid = undefined
        c.lastError = { code: supervised.failure?.code ?? 'CRASHED', message: supervised.failure?.message ?? supervised.lastError ?? `${c.key} ${state}` }
        break
      case 'stopped':
        c.state = 'stopped'
        c.pid = undefined
        if (supervised.lastError) c.lastError = { code: 'EXITED', message: supervised.lastError }
        break
      default:
        return
    }
    if (c.state !== before) this.log.info(`${c.key} ${c.state}${c.lastError && c.state === 'failed' ? `: ${c.lastError.message}` : ''}`)
    this.onChange()
  }

  // -- down --------------------------------------------------------------------------------------

  /**
   * Stops the running containers of a project in reverse dependency order (containers no longer in
   * the file first), each within the file's `stop_timeout`. `file` is the file as read now; when
   * undefined (the file is gone), the file as last read is used.
   */
  async down(path: string, file: ComposeFile | undefined, only?: string[]): Promise<OpResult> {
    if (!this.projects.has(path)) {
      // Nothing of this file ever ran here.
      const keys = (file?.startOrder ?? []).filter((k) => only === undefined || only.includes(k))
      return { operation_id: operationId(), status: 'ok', changed: false, containers: keys.map((k) => ({ container: k, state: 'stopped', changed: false })) }
    }
    const project = this.projectFor(path, file)
    const known = project.file
    const declared = known?.startOrder ?? []
    const owned = [...this.containers.values()].filter((c) => c.project === path).map((c) => c.key)
    const orphans = owned.filter((k) => !declared.includes(k))
    const order = [...orphans, ...[...declared].reverse()].filter((k) => only === undefined || only.includes(k))
    const stopTimeout = known?.stopTimeoutMs ?? 10_000
    const results: ContainerResult[] = []
    for (const key of order) {
      const c = this.containers.get(key)
      const mine = c !== undefined && c.project === path
      const wasRunning = mine && RUNNING.has(c.state)
      if (mine && (wasRunning || c.supervised || c.adopted)) await this.stopContainer(key, stopTimeout)
      results.push({ container: key, state: 'stopped', changed: wasRunning })
    }
    if (only === undefined) project.active = false
    results.reverse()
    return {
      operation_id: operationId(),
      status: 'ok',
      changed: results.some((r) => r.changed),
      containers: results,
    }
  }

  /** Stops every project, most recently created first (SIGINT, SIGTERM, `compose::stop`). */
  async downAll(): Promise<void> {
    for (const project of [...this.projects.values()].reverse()) {
      try {
        await this.down(project.path, undefined)
      } catch (err) {
        this.log.error(`stopping ${project.label} failed: ${(err as Error).message}`)
      }
    }
  }

  private async stopContainer(key: string, stopTimeoutMs: number): Promise<void> {
    const c = this.containers.get(key)
    if (!c) return
    c.stopping = true
    try {
      if (c.supervised) await this.disposeSupervised(c)
      else await this.orchestrator.stop(key, stopTimeoutMs)
    } catch (err) {
      this.log.warn(`stopping ${key} failed: ${(err as Error).message}`)
    }
    c.adopted = false
    c.state = 'stopped'
    c.pid = undefined
    c.stopping = false
    this.onChange()
  }

  private async disposeSupervised(c: Container): Promise<void> {
    const supervised = c.supervised
    if (!supervised) return
    c.stopping = true
    try {
      await this.orchestrator.stop(c.key)
    } finally {
      c.restarts = supervised.restarts
      c.supervised = undefined
      c.stopping = false
    }
  }

  // -- status ------------------------------------------------------------------------------------

  /** `compose::status` containers: those declared in `file`, then running ones no longer declared. */
  status(path: string, file: ComposeFile): ContainerStatus[] {
    // Only `up`, `down` and edits make a project known; a status query does not.
    const project = this.projects.get(path)
    if (project) project.file = file
    const out: ContainerStatus[] = []
    for (const spec of file.containers) {
      const c = this.containers.get(spec.key)
      if (c && c.project === path) out.push(statusOf(c))
      else out.push({ container: spec.key, worker: spec.worker, state: 'stopped', pid: null, started_at: null, restarts: 0, last_error: null })
    }
    for (const c of this.containers.values()) {
      if (c.project === path && RUNNING.has(c.state) && !file.containers.some((s) => s.key === c.key)) out.push(statusOf(c))
    }
    return out
  }

  /** `compose::list` projects. */
  list(): Array<{ file: string; containers: string[]; state: ProjectState }> {
    return [...this.projects.values()].map((p) => {
      const keys = new Set(p.file?.startOrder ?? [])
      for (const c of this.containers.values()) if (c.project === p.path && RUNNING.has(c.state)) keys.add(c.key)
      const states = [...keys].map((k) => {
        const c = this.containers.get(k)
        return c && c.project === p.path ? c.state : 'stopped'
      })
      let state: ProjectState
      if (states.length === 0) state = p.active ? 'up' : 'down'
      else if (states.every((s) => s === 'ready')) state = 'up'
      else if (states.some((s) => RUNNING.has(s))) state = 'partial'
      else state = states.some((s) => s === 'failed') ? 'failed' : 'down'
      return { file: p.label, containers: [...keys], state }
    })
  }

  /** Everything state.json records. */
  snapshot(): Array<{ file: string; containers: ContainerRecord[] }> {
    return [...this.projects.values()].map((p) => ({
      file: p.path,
      containers: [...this.containers.values()].filter((c) => c.project === p.path).map((c) => ({ ...statusOf(c), project: p.path, kind: c.kind })),
    }))
  }

  /**
   * Takes over a container process recorded by a previous daemon that is still alive and still
   * registered (cli.md §4.7). It counts as ready; it can be stopped (SIGTERM to its process group,
   * SIGKILL after the stop timeout) but is not restarted by a crash policy until it is started again.
   * False, and nothing taken over, for a record whose pid no signal may go to (`isSignalTarget`:
   * 0, 1 or a negative number would reach the daemon's own group or every process) or whose
   * container runs already.
   */
  adopt(path: string, label: string, record: ContainerRecord): boolean {
    const pid = record.pid
    if (!isSignalTarget(pid) || this.containers.has(record.container)) return false
    const restarts = Number.isSafeInteger(record.restarts) && record.restarts >= 0 ? record.restarts : 0
    const c: Container = {
      key: record.container,
      project: path,
      worker: record.worker,
      kind: record.kind,
      state: 'ready',
      pid,
      startedAt: startedAtOf(record.started_at),
      restarts,
      lastError: undefined,
      detail: 'adopted after a daemon restart',
      supervised: undefined,
      adopted: true,
      stopping: false,
      output: [],
    }
    this.orchestrator.adopt(c.key, pid, {
      restarts,
      onExit: () => {
        if (!c.adopted || c.stopping) return
        c.adopted = false
        c.state = 'failed'
        c.pid = undefined
        c.lastError = { code: 'CRASHED', message: `${c.key} (pid ${pid}, adopted after a daemon restart) exited; run compose::up to start it again` }
        this.log.warn(c.lastError.message)
        this.onChange()
      },
    })
    this.projects.set(path, this.projects.get(path) ?? { path, label, file: undefined, active: true })
    this.containers.set(c.key, c)
    return true
  }

  /** True when an operation ran on the project at `path`. */
  knows(path: string): boolean {
    return this.projects.has(path)
  }

  /** Records `file` as the current content of the project at `path` (after an edit). */
  remember(path: string, file: ComposeFile): void {
    if (this.projects.has(path)) this.projectFor(path, file)
  }

  private projectFor(path: string, file: ComposeFile | undefined): Project {
    let project = this.projects.get(path)
    if (!project) {
      project = { path, label: file?.label ?? displayPath(path, this.cwd), file, active: false }
      this.projects.set(path, project)
    }
    if (file) {
      project.file = file
      project.label = file.label
    }
    return project
  }
}

function resultOf(c: Container, changed: boolean): ContainerResult {
  const result: ContainerResult = { container: c.key, state: c.state, changed }
  if (c.pid !== undefined) result.pid = c.pid
  if (c.state === 'failed' && c.lastError) result.error = c.lastError
  if (c.detail) result.detail = c.detail
  return result
}

function statusOf(c: Container): ContainerStatus {
  const status: ContainerStatus = {
    container: c.key,
    worker: c.worker,
    state: c.state,
    pid: c.pid ?? null,
    started_at: c.startedAt === undefined ? null : new Date(c.startedAt).toISOString(),
    restarts: c.restarts,
    last_error: c.lastError ?? null,
  }
  // The same figure as `svc worker list`: VmRSS of QEMU and its daemons, read now.
  const vmRss = c.supervised?.vmRssBytes
  if (vmRss !== undefined) {
    status.isolation = 'microvm'
    status.vm_rss_bytes = vmRss
  }
  return status
}

/** A recorded `started_at` as ms since the epoch; undefined for null or anything that is no time (a hand-edited state.json). */
function startedAtOf(recorded: unknown): number | undefined {
  if (typeof recorded !== 'string') return undefined
  const ms = Date.parse(recorded)
  return Number.isFinite(ms) ? ms : undefined
}

/** `keys` and everything they depend on, transitively, in no particular order. */
function withDependencies(keys: string[], byKey: Map<string, ContainerSpec>): string[] {
  const out = new Set<string>()
  const visit = (key: string) => {
    if (out.has(key) || !byKey.has(key)) return
    out.add(key)
    for (const dep of byKey.get(key)!.dependsOn) visit(dep)
  }
  for (const key of keys) visit(key)
  return [...out]
}

/** A path from a compose file: `~` is the home directory; relative paths resolve against the file's directory. */
export function resolvePath(base: string, path: string): string {
  if (path === '~' || path.startsWith('~/')) return join(homedir(), path.slice(1))
  return isAbsolute(path) ? path : resolve(base, path)
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}

/** A worker of `engine::workers::list` as the registration check reads it. */
function listed(w: WorkerSummary): ListedConnection {
  return { id: w.id, name: w.name, namespace: w.namespace, connectedAtMs: w.connected_at_ms, pid: w.pid ?? undefined }
}

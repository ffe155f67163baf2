/**
 * The compose daemon (cli.md §4.7): a worker named `compose` that serves `compose::*` in its
 * namespace and runs the containers of worker-compose.yaml files there.
 */
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { registerWorker, TriggerAction } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { BUILTIN_NAMES, canonicalBuiltinName, type Env, type Logger } from '../../runtime/index.ts'
import { CliError, ExitCode } from '../lib/errors.ts'
import { processAlive } from '../lib/processes.ts'
import { jsonParse } from 'svc-protocol/json'
import type { WorkerDrainResult, WorkerInfoResult } from 'svc-protocol'
import { isSignalTarget } from '../supervisor/process.ts'
import { displayPath } from '../lib/project.ts'
import { unreachableError } from '../lib/trigger.ts'
import { loadManifest } from '../supervisor/manifest.ts'
import { addContainerText, removeContainerText, writeFileAtomic } from './edit.ts'
import { ComposeError } from './errors.ts'
import { composeFileSchema } from './schema.ts'
import { COMPOSE_FILE_NAME, ComposeFileError, CONTAINER_KEY_PATTERN, loadComposeFile, parseComposeFile, readComposeText } from './file.ts'
import type { ComposeFile } from './file.ts'
import { operationId, ProjectRunner, resolvePath } from './runner.ts'
import type { ContainerListener, ContainerRecord, EngineAccess, Supervise } from './runner.ts'
import type { AddResult, ListResult, OpResult, RemoveResult, StatusResult, ValidateResult, WorkerSummary } from './types.ts'

/** The daemon's worker name (cli.md §4.7). */
export const DAEMON_WORKER_NAME = 'compose'
/** How long the engine may take to answer at start before the daemon exits 3 (cli.md §4.7). */
export const ENGINE_CONNECT_TIMEOUT_MS = 10_000
/** Deadline of the daemon's own engine calls (`engine::workers::list`), ms. */
const ENGINE_CALL_TIMEOUT_MS = 10_000

/** The functions the daemon serves, in its namespace (cli.md §4.7). */
export const COMPOSE_FUNCTIONS = ['up', 'down', 'restart', 'status', 'list', 'validate', 'add', 'remove', 'stop', 'schema'] as const

export interface DaemonOptions {
  /** The namespace served; containers register here. */
  namespace: string
  /** `ws://…` of the engine. */
  engineUrl: string
  /** Working directory: default file, relative paths, `.svc/compose/<ns>/` and `.svc/logs/<ns>/`. Default `process.cwd()`. */
  cwd?: string
  /** The file used when a payload names none (`-f`), relative to `cwd`; default `worker-compose.yaml`. */
  file?: string
  /** Environment for placeholders in compose files; default `process.env`. */
  env?: Env
  /** Daemon and supervisor messages. */
  log: Logger
  /** Default: `superviseWorker` of src/supervisor (the orchestrator's). */
  supervise?: Supervise
  /** Default {@link ENGINE_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number
}

type Payload = Record<string, unknown>

/**
 * A running compose daemon. Start it with {@link ComposeDaemon.start}; it serves until
 * {@link ComposeDaemon.stop} (SIGINT, SIGTERM or `compose::stop`), which brings every project down.
 */
export class ComposeDaemon {
  readonly namespace: string
  readonly engineUrl: string
  readonly cwd: string
  readonly pid = process.pid
  /** Absolute path of the default compose file. */
  readonly defaultFile: string
  /** Resolves once {@link stop} has finished (projects down, connection closed). */
  readonly stopped: Promise<void>
  /** Resolves when `compose::stop` asks the daemon to stop. */
  readonly stopRequested: Promise<void>

  private readonly client: SvcClient
  private readonly env: Env
  private readonly log: Logger
  private readonly runner: ProjectRunner
  private readonly stateFile: string
  private queue: Promise<unknown> = Promise.resolve()
  private inFlight = new Set<Promise<unknown>>()
  private stopping: Promise<void> | undefined
  private resolveStopped!: () => void
  private resolveStopRequested!: () => void
  private persistTimer: NodeJS.Timeout | undefined

  private constructor(options: DaemonOptions, client: SvcClient) {
    this.namespace = options.namespace
    this.engineUrl = options.engineUrl
    this.cwd = options.cwd ?? process.cwd()
    this.defaultFile = resolve(this.cwd, options.file ?? COMPOSE_FILE_NAME)
    this.env = options.env ?? process.env
    this.log = options.log
    this.client = client
    this.stateFile = join(this.cwd, '.svc', 'compose', this.namespace, 'state.json')
    this.stopped = new Promise((r) => (this.resolveStopped = r))
    this.stopRequested = new Promise((r) => (this.resolveStopRequested = r))
    this.runner = new ProjectRunner({
      namespace: this.namespace,
      cwd: this.cwd,
      engine: this.engineAccess(),
      ...(options.supervise ? { supervise: options.supervise } : {}),
      log: this.log,
      onChange: () => this.schedulePersist(),
    })
  }

  /**
   * Connects as the worker `compose` in `namespace`, refuses to run beside another daemon of the
   * namespace, re-adopts containers of a crashed predecessor, and registers `compose::*`.
   *
   * @throws {CliError} `ENGINE_UNREACHABLE` (exit 3) when the engine does not answer within 10 s;
   *   `DAEMON_ALREADY_SERVING` (exit 1) with the other daemon's pid; exit 2 for a bad URL.
   */
  static async start(options: DaemonOptions): Promise<ComposeDaemon> {
    let client: SvcClient
    try {
      client = registerWorker(options.engineUrl, {
        workerName: DAEMON_WORKER_NAME,
        workerDescription: `svc compose daemon (namespace ${options.namespace})`,
        namespace: options.namespace,
      })
    } catch (err) {
      throw new CliError({ code: 'INVALID_ARGUMENT', message: `Invalid engine URL or namespace: ${(err as Error).message}`, exitCode: ExitCode.Usage, cause: err })
    }
    try {
      await connected(client, options.engineUrl, options.connectTimeoutMs ?? ENGINE_CONNECT_TIMEOUT_MS)
      const daemon = new ComposeDaemon(options, client)
      await daemon.refuseSecondDaemon()
      await daemon.readopt()
      daemon.registerFunctions()
      // Frames are applied in order: once this answers, the registrations above are in place.
      await daemon.listWorkers({ namespace: daemon.namespace })
      daemon.persistNow()
      return daemon
    } catch (err) {
      await client.shutdown()
      throw err
    }
  }

  // -- start-up ------------------------------------------------------------------------------------

  private async refuseSecondDaemon(): Promise<void> {
    const daemons = (await this.listWorkers({ namespace: this.namespace })).filter((w) => w.name === DAEMON_WORKER_NAME)
    const self = daemons.find((w) => w.id === this.client.getWorkerId()) ?? daemons.find((w) => w.pid === process.pid)
    // Two daemons starting at once both see each other: the older connection stays.
    const other = daemons.find(
      (w) => w !== self && (self === undefined || w.connected_at_ms < self.connected_at_ms || (w.connected_at_ms === self.connected_at_ms && w.id < self.id)),
    )
    if (other) {
      throw new CliError({
        code: 'DAEMON_ALREADY_SERVING',
        message: `DAEMON_ALREADY_SERVING: a compose daemon already serves namespace ${this.namespace} (pid ${other.pid ?? 'unknown'})`,
        exitCode: ExitCode.Failure,
        hint: `use that daemon (svc trigger -n ${this.namespace} compose::status), or start this one with another -n`,
      })
    }
  }

  /** Re-adopts container processes of a previous daemon that are alive and still registered. */
  private async readopt(): Promise<void> {
    let text: string
    try {
      text = readFileSync(this.stateFile, 'utf8')
    } catch {
      return
    }
    const state = readDaemonState(text)
    if (state.daemonPid !== undefined && state.daemonPid !== process.pid && processAlive(state.daemonPid)) {
      // Its daemon still runs (disconnected from the engine): its containers are not ours to take.
      return
    }
    if (state.records.length === 0) return
    const registered = new Set((await this.listWorkers({ namespace: this.namespace })).map((w) => w.name))
    for (const { file, record } of state.records) {
      if (!processAlive(record.pid) || !registered.has(record.container)) continue
      if (!this.runner.adopt(file, displayPath(file, this.cwd), record)) continue
      this.log.info(`re-adopted ${record.container} (pid ${record.pid}) of ${displayPath(file, this.cwd)}`)
    }
  }

  private registerFunctions(): void {
    const serve = (name: (typeof COMPOSE_FUNCTIONS)[number], description: string, handler: (p: Payload) => unknown, exclusive: boolean) => {
      this.client.registerFunction(
        `compose::${name}`,
        async (input: unknown) => {
          try {
            const payload = payloadObject(input)
            if (name !== 'stop' && name !== 'list' && name !== 'validate' && name !== 'schema') this.checkDaemon(payload)
            if (this.stopping && exclusive) {
              throw new ComposeError('DAEMON_STOPPING', `the compose daemon of namespace ${this.namespace} is stopping`)
            }
            return await (exclusive ? this.exclusive(() => handler(payload)) : handler(payload))
          } catch (err) {
            // A plain {code, message} leaves out the stack trace, which says nothing to a caller.
            if (err instanceof ComposeError || err instanceof ComposeFileError) throw err.toBody()
            throw err
          }
        },
        { description },
      )
    }
    serve('up', 'Start the containers of a compose file (cli.md §4.7)', (p) => this.up(p), true)
    serve('down', 'Stop the containers of a compose file', (p) => this.down(p), true)
    serve('restart', 'Restart one container, or down and up with the file re-read', (p) => this.restart(p), true)
    serve('status', 'Containers of a compose file and their states', (p) => this.status(p), false)
    serve('list', 'Projects run by this daemon', () => this.list(), false)
    serve('validate', 'Validate a compose file and give its start order', (p) => this.validate(p), false)
    serve('add', 'Declare a worker in a compose file and bring the project up', (p) => this.add(p), true)
    serve('remove', 'Stop a container and remove it from its compose file', (p) => this.remove(p), true)
    serve('stop', 'Bring every project down and stop the daemon', () => this.requestStop(), false)
    serve('schema', 'The JSON Schema (draft 2020-12) of worker-compose.yaml', () => composeFileSchema(), false)
  }

  // -- functions -----------------------------------------------------------------------------------

  /**
   * `compose::up` `{file?, namespace?}` → OpResult.
   * @throws {ComposeError} NO_COMPOSE_FILE, INVALID_COMPOSE_FILE, RESERVED_WORKER, WRONG_NAMESPACE
   */
  async up(payload: Payload = {}, onContainer?: ContainerListener): Promise<OpResult> {
    const { path, file } = this.load(payload)
    return this.runner.up(path, file, onContainer ? { onContainer } : {})
  }

  /** `svc compose up`: {@link up} of the default file, in turn with the functions' operations. */
  upForCli(onContainer?: ContainerListener): Promise<OpResult> {
    return this.exclusive(() => this.up({}, onContainer))
  }

  /** `compose::down` `{file?, namespace?}` → OpResult (a project still known runs down even if its file is gone). */
  async down(payload: Payload = {}): Promise<OpResult> {
    const path = this.filePath(payload)
    let file: ComposeFile | undefined
    try {
      file = this.load(payload).file
    } catch (err) {
      if (!(err instanceof ComposeError && err.code === 'NO_COMPOSE_FILE' && this.runner.knows(path))) throw err
    }
    return this.runner.down(path, file)
  }

  /** `compose::restart` `{file?, container?, namespace?}` → OpResult. @throws UNKNOWN_CONTAINER */
  async restart(payload: Payload = {}): Promise<OpResult> {
    const container = optionalString(payload, 'container')
    if (container === undefined) {
      const path = this.filePath(payload)
      const down = await this.runner.down(path, undefined)
      const { file } = this.load(payload)
      return mergeResults(down, await this.runner.up(path, file))
    }
    const { path, file } = this.load(payload)
    if (!file.containers.some((c) => c.key === container)) {
      throw new ComposeError('UNKNOWN_CONTAINER', `${file.label} declares no container '${container}'`)
    }
    const down = await this.runner.down(path, file, [container])
    return mergeResults(down, await this.runner.up(path, file, { only: [container] }))
  }

  /** `compose::status` `{file?, namespace?}`. */
  status(payload: Payload = {}): StatusResult {
    const { path, file } = this.load(payload)
    return { namespace: this.namespace, file: file.label, daemon_pid: this.pid, containers: this.runner.status(path, file) }
  }

  /** `compose::list` `{}`. */
  list(): ListResult {
    return { namespace: this.namespace, daemon_pid: this.pid, projects: this.runner.list() }
  }

  /** `compose::validate` `{file?}`: the file's own namespace is reported, not checked. */
  validate(payload: Payload = {}): ValidateResult {
    const path = this.filePath(payload)
    const file = loadComposeFile(path, { label: displayPath(path, this.cwd), env: this.env })
    return { valid: true, namespace: file.namespace ?? this.namespace, start_order: file.startOrder }
  }

  /**
   * `compose::add` `{worker, file?, name?, namespace?}` → AddResult: declares the worker in the file
   * (created when missing, edited in place, validated before writing), then brings the project up.
   *
   * @throws {ComposeError} INVALID_ARGUMENTS (`worker is required`, bad `name`, key taken by another
   *   worker), UNKNOWN_WORKER, RESERVED_WORKER, INVALID_MANIFEST, INVALID_COMPOSE_FILE
   */
  async add(payload: Payload = {}): Promise<AddResult> {
    const worker = optionalString(payload, 'worker')
    if (worker === undefined) throw new ComposeError('INVALID_ARGUMENTS', 'worker is required')
    const name = optionalString(payload, 'name')
    if (name !== undefined && !CONTAINER_KEY_PATTERN.test(name)) {
      throw new ComposeError('INVALID_ARGUMENTS', `name '${name}' is not a valid container key: use lower-case letters, digits, '_' and '-', starting with a letter or digit, at most 64 characters`)
    }
    const path = this.filePath(payload)
    const label = displayPath(path, this.cwd)
    const text = existsSync(path) ? readComposeText(path, label) : undefined
    const current = text === undefined ? undefined : parseComposeFile(text, { label, env: this.env })
    if (current) this.checkNamespace(current)

    const target = this.addTarget(worker, name, dirname(path))
    const existing = current?.containers.find((c) => c.key === target.key)
    let changed = false
    let detail: string
    if (existing) {
      if (!this.sameWorker(existing.worker, target.worker, dirname(path))) {
        throw new ComposeError(
          'INVALID_ARGUMENTS',
          `a container named '${target.key}' is already declared in ${label} for ${existing.worker}; pass name to add ${target.worker} under another key`,
        )
      }
      detail = 'already declared'
    } else {
      const next = addContainerText(text, target.key, target.worker, label)
      const file = parseComposeFile(next, { label, env: this.env })
      this.checkNamespace(file)
      mkdirSync(dirname(path), { recursive: true })
      writeFileAtomic(path, next)
      changed = true
      detail = `added ${target.key} (${target.worker})`
      this.log.info(`${detail} to ${label}`)
    }
    const up = await this.up(payload.file === undefined ? {} : { file: payload.file })
    return { status: up.status, container: target.key, changed, detail, up }
  }

  /** `compose::remove` `{container, file?, namespace?}`: stops the container, then removes it from the file. */
  async remove(payload: Payload = {}): Promise<RemoveResult> {
    const container = optionalString(payload, 'container')
    if (container === undefined) throw new ComposeError('INVALID_ARGUMENTS', 'container is required')
    const { path, file } = this.load(payload)
    if (!file.containers.some((c) => c.key === container)) {
      throw new ComposeError('UNKNOWN_CONTAINER', `${file.label} declares no container '${container}'`)
    }
    const dependents = file.containers.filter((c) => c.dependsOn.includes(container)).map((c) => c.key)
    if (dependents.length > 0) {
      throw new ComposeError('INVALID_ARGUMENTS', `cannot remove ${container}: ${dependents.join(', ')} ${dependents.length === 1 ? 'depends' : 'depend'} on it; remove ${dependents.length === 1 ? 'that container' : 'those containers'} first`)
    }
    const next = removeContainerText(readComposeText(path, file.label), container, file.label)
    const nextFile = parseComposeFile(next, { label: file.label, env: this.env })
    const down = await this.runner.down(path, file, [container])
    writeFileAtomic(path, next)
    this.runner.remember(path, nextFile)
    this.log.info(`removed ${container} from ${file.label}`)
    return { status: down.status, container, changed: true, down }
  }

  /** `compose::stop`: answers `{stopping: true}`, then stops the daemon. */
  requestStop(): { stopping: true } {
    // Let the answer leave before the connection closes.
    setTimeout(() => this.resolveStopRequested(), 50).unref()
    return { stopping: true }
  }

  /**
   * Brings every project down (reverse dependency order, each container within its stop timeout),
   * records the state and closes the engine connection. Idempotent.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.runner.downAll()
      // An operation that was running may have started containers after the first pass.
      await Promise.allSettled([...this.inFlight])
      await this.runner.downAll()
      if (this.persistTimer) clearTimeout(this.persistTimer)
      this.persistNow()
      await this.client.shutdown()
      this.resolveStopped()
    })()
    return this.stopping
  }

  // -- helpers -------------------------------------------------------------------------------------

  /** Runs operations that start or stop containers one at a time. */
  private exclusive<T>(work: () => T | Promise<T>): Promise<T> {
    // state.json is written before the answer leaves, so a daemon killed right after still re-adopts.
    const settle = async () => {
      try {
        return await work()
      } finally {
        this.persistNow()
      }
    }
    const run = this.queue.then(settle, settle)
    this.queue = run.catch(() => undefined)
    this.inFlight.add(run)
    void run.finally(() => this.inFlight.delete(run)).catch(() => undefined)
    return run
  }

  private checkDaemon(payload: Payload): void {
    const ns = optionalString(payload, 'namespace')
    if (ns !== undefined && ns !== this.namespace) {
      throw new ComposeError('WRONG_DAEMON', `this compose daemon serves namespace ${this.namespace}, not ${ns}; call it with svc trigger -n ${ns}`)
    }
  }

  private checkNamespace(file: ComposeFile): void {
    if (file.namespace !== undefined && file.namespace !== this.namespace) {
      const place = file.namespacePlace
      throw new ComposeError(
        'WRONG_NAMESPACE',
        `${file.label}${place ? `:${place.line}:${place.column}` : ''}: namespace '${file.namespace}' differs from the daemon's namespace '${this.namespace}'; start a daemon with -n ${file.namespace} or change the file`,
      )
    }
  }

  private filePath(payload: Payload): string {
    const file = optionalString(payload, 'file')
    return file === undefined ? this.defaultFile : resolvePath(this.cwd, file)
  }

  /** Reads the payload's file and checks its namespace. */
  private load(payload: Payload): { path: string; file: ComposeFile } {
    const path = this.filePath(payload)
    const file = loadComposeFile(path, { label: displayPath(path, this.cwd), env: this.env })
    this.checkNamespace(file)
    return { path, file }
  }

  /** The container `compose::add` declares for `worker` (cli.md §4.2 path rule, §4.7). */
  private addTarget(worker: string, name: string | undefined, fileDir: string): { key: string; worker: string } {
    const canonical = canonicalBuiltinName(worker)
    const looksLikePath =
      worker.startsWith('.') || worker.startsWith('/') || worker.startsWith('~') || worker.includes('/') || worker.includes(sep) ||
      (canonical === undefined && isDirectory(resolvePath(this.cwd, worker)))
    if (!looksLikePath) {
      if (canonical === 'svc-observability') throw new ComposeError('RESERVED_WORKER', 'svc-observability is injected by the engine and cannot be added')
      if (canonical === 'configuration') throw new ComposeError('RESERVED_WORKER', 'configuration always runs inside the engine and cannot be added')
      if (canonical === undefined) {
        const names = BUILTIN_NAMES.filter((n) => n !== 'configuration' && n !== 'svc-observability')
        throw new ComposeError(
          'UNKNOWN_WORKER',
          `Unknown worker '${worker}'. Built-in workers: ${names.join(', ')}. To add a local worker, pass a path such as ./workers/${worker}`,
        )
      }
      return { key: name ?? canonical, worker: `builtin://${canonical}` }
    }
    const dir = resolvePath(this.cwd, worker)
    if (!isDirectory(dir)) throw new ComposeError('UNKNOWN_WORKER', `Worker directory ${worker} does not exist`)
    let key = name
    if (key === undefined) {
      try {
        key = loadManifest(dir, { requireStart: false, label: worker }).name
      } catch (err) {
        const code = (err as { code?: unknown }).code
        throw new ComposeError(typeof code === 'string' ? code : 'INVALID_MANIFEST', (err as Error).message, { cause: err })
      }
    }
    if (!CONTAINER_KEY_PATTERN.test(key)) {
      throw new ComposeError('INVALID_ARGUMENTS', `'${key}' (from ${worker}) is not a valid container key; pass name`)
    }
    return { key, worker: `path://${relativeWorkerPath(fileDir, dir)}` }
  }

  private sameWorker(a: string, b: string, fileDir: string): boolean {
    if (a === b) return true
    if (a.startsWith('path://') && b.startsWith('path://')) {
      return resolvePath(fileDir, a.slice('path://'.length)) === resolvePath(fileDir, b.slice('path://'.length))
    }
    if (a.startsWith('builtin://') && b.startsWith('builtin://')) {
      return canonicalBuiltinName(a.slice('builtin://'.length)) === canonicalBuiltinName(b.slice('builtin://'.length))
    }
    return false
  }

  private listWorkers(filter: { namespace?: string; runtime?: string }): Promise<WorkerSummary[]> {
    return this.client
      .trigger<unknown, { workers: WorkerSummary[] }>({ function_id: 'engine::workers::list', payload: filter, timeoutMs: ENGINE_CALL_TIMEOUT_MS })
      .then((r) => r.workers)
  }

  private engineAccess(): EngineAccess {
    return {
      url: this.engineUrl,
      listWorkers: (filter = {}) => this.listWorkers(filter),
      workerFunctions: async (id) => {
        const info = await this.client.trigger<unknown, WorkerInfoResult>({ function_id: 'engine::workers::info', payload: { id }, timeoutMs: ENGINE_CALL_TIMEOUT_MS })
        return info.functions.map((f) => `${f.namespace}/${f.function_id}`)
      },
      drainWorker: async (id) =>
        (await this.client.trigger<unknown, WorkerDrainResult>({ function_id: 'engine::workers::drain', payload: { id }, timeoutMs: ENGINE_CALL_TIMEOUT_MS })).active_invocations,
      configure: async (id, config) => {
        const call = <T>(function_id: string, payload: unknown) => this.client.trigger<unknown, T>({ function_id, payload, timeoutMs: ENGINE_CALL_TIMEOUT_MS })
        const stored = await call<{ value: unknown }>('configuration::get', { id, raw: true })
        await call('configuration::set', { id, value: deepMerge(stored.value, config) })
      },
      log: (level, message, serviceName, source) => {
        const payload: Record<string, unknown> = { message, service_name: serviceName }
        if (source) payload.source = source
        // A void call: nothing comes back, and a missing observability worker costs nothing.
        this.client.trigger({ function_id: `engine::log::${level}`, payload, action: TriggerAction.Void() }).catch(() => undefined)
      },
    }
  }

  private schedulePersist(): void {
    if (this.persistTimer) return
    this.persistTimer = setTimeout(() => {
      this.persistTimer = undefined
      this.persistNow()
    }, 50)
    this.persistTimer.unref()
  }

  /** `.svc/compose/<namespace>/state.json`: what a restarted daemon re-adopts. */
  private persistNow(): void {
    const state = {
      namespace: this.namespace,
      daemon_pid: this.pid,
      engine_url: this.engineUrl,
      updated_at: new Date().toISOString(),
      projects: this.runner.snapshot(),
    }
    try {
      mkdirSync(dirname(this.stateFile), { recursive: true })
      writeFileAtomic(this.stateFile, `${JSON.stringify(state, null, 2)}\n`)
    } catch (err) {
      this.log.warn(`cannot write ${displayPath(this.stateFile, this.cwd)}: ${(err as Error).message}`)
    }
  }
}

/** What a daemon takes from a previous daemon's state.json (cli.md §4.7). */
export interface DaemonState {
  /** The previous daemon's pid, when it is one. */
  daemonPid: number | undefined
  /** Containers that were running (`ready`, `restarting`, `starting`) with a pid a signal may go to. */
  records: Array<{ file: string; record: ContainerRecord }>
}

/**
 * Reads the text of `.svc/compose/<namespace>/state.json` as written by `persistNow`, keeping only
 * what re-adoption can act on: entries of the wrong shape (a hand-edited or truncated file, another
 * version's fields) are left out, never thrown over, so a daemon always starts. At most 10 000
 * containers are read.
 *
 * @example readDaemonState('{"daemon_pid": 12, "projects": []}') // { daemonPid: 12, records: [] }
 */
export function readDaemonState(text: string): DaemonState {
  let parsed: unknown
  try {
    parsed = jsonParse(text)
  } catch {
    return { daemonPid: undefined, records: [] }
  }
  const object = (v: unknown): Record<string, unknown> | undefined => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined)
  const state = object(parsed)
  const daemonPid = state && isSignalTarget(state.daemon_pid) ? state.daemon_pid : undefined
  const records: DaemonState['records'] = []
  const projects = Array.isArray(state?.projects) ? state.projects : []
  for (const p of projects) {
    const project = object(p)
    if (!project || typeof project.file !== 'string' || !Array.isArray(project.containers)) continue
    for (const c of project.containers) {
      const record = object(c)
      if (!record || records.length >= MAX_READOPTED) continue
      if (typeof record.container !== 'string' || typeof record.worker !== 'string' || !isSignalTarget(record.pid)) continue
      if (record.state !== 'ready' && record.state !== 'restarting' && record.state !== 'starting') continue
      records.push({
        file: project.file,
        record: {
          container: record.container,
          worker: record.worker,
          state: record.state,
          pid: record.pid,
          started_at: typeof record.started_at === 'string' ? record.started_at : null,
          restarts: Number.isSafeInteger(record.restarts) && (record.restarts as number) >= 0 ? (record.restarts as number) : 0,
          last_error: null,
          project: project.file,
          kind: record.kind === 'builtin' ? 'builtin' : 'path',
        },
      })
    }
  }
  return { daemonPid, records }
}

/** Containers read from one state.json at most. */
const MAX_READOPTED = 10_000

/** Waits for the first `connected`; rejects with the exit-3 error after `timeoutMs`. */
function connected(client: SvcClient, url: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let remove = () => {}
    const timer = setTimeout(() => {
      remove()
      reject(unreachableError(url, client.getLastError()))
    }, timeoutMs)
    remove = client.addConnectionStateListener((state) => {
      if (state === 'connected') {
        clearTimeout(timer)
        queueMicrotask(() => remove())
        resolve()
      } else if (state === 'failed') {
        clearTimeout(timer)
        queueMicrotask(() => remove())
        reject(unreachableError(url, client.getLastError()))
      }
    })
  })
}

function payloadObject(input: unknown): Payload {
  if (input === undefined || input === null) return {}
  if (typeof input !== 'object' || Array.isArray(input)) throw new ComposeError('INVALID_ARGUMENTS', 'payload must be an object')
  return input as Payload
}

function optionalString(payload: Payload, field: string): string | undefined {
  const value = payload[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.trim() === '') throw new ComposeError('INVALID_ARGUMENTS', `${field} must be a non-empty string`)
  return value
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** `./workers/api` style: relative to the file's directory, POSIX separators. */
function relativeWorkerPath(fileDir: string, dir: string): string {
  let rel = relative(fileDir, dir)
  if (isAbsolute(rel)) return rel.split(sep).join('/')
  rel = rel.split(sep).join('/')
  if (rel === '') return '.'
  return rel.startsWith('../') || rel === '..' ? rel : `./${rel}`
}

/** A restart as one OpResult: the `up` result, with containers the `down` stopped marked changed. */
function mergeResults(down: OpResult, up: OpResult): OpResult {
  const stopped = new Set(down.containers.filter((c) => c.changed).map((c) => c.container))
  const containers = up.containers.map((c) => (stopped.has(c.container) ? { ...c, changed: true } : c))
  return { operation_id: operationId(), status: up.status, changed: down.changed || up.changed, containers }
}

/** `patch` merged into `base`: objects key by key, recursively; anything else replaces (cli.md §2.3). */
function deepMerge(base: unknown, patch: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (!isObject(base) || !isObject(patch)) return patch
  const out: Record<string, unknown> = { ...base }
  for (const [key, value] of Object.entries(patch)) out[key] = deepMerge(base[key], value)
  return out
}

/**
 * `worker-compose.yaml` (cli.md §2.3): parsing with positions, validation, placeholder expansion and
 * the start order. Every problem in the file is a {@link ComposeFileError} (the YAML readers' one
 * located error, runtime/yaml) whose message names the place and the key,
 * `worker-compose.yaml:7:5: unknown key 'enviroment' in container 'api' (did you mean 'environment'?)`.
 */
import { isMap, isScalar, isSeq } from 'yaml'
import type { Node, Pair, YAMLMap } from 'yaml'
import { BUILTIN_NAMES, type BuiltinName, canonicalBuiltinName, CONFIG_FILE_LIMITS, didYouMean, type Env, ExpandError, expandPlaceholders, expandString, type Place, readTextFileSync, YamlError, YamlReader } from '../../runtime/index.ts'
import { RESERVED_ENV } from '../supervisor/env.ts'
import { ComposeError } from './errors.ts'
import type { ComposeErrorCode } from './errors.ts'

/** Codes of a problem in a compose file (cli.md §4.7). */
export type ComposeFileErrorCode = Extract<ComposeErrorCode, 'INVALID_COMPOSE_FILE' | 'RESERVED_WORKER' | 'RESERVED_ENV_OVERRIDE'>

/**
 * A compose file svc refuses, at `file:line:column`: the YAML readers' located error with the
 * compose codes (`INVALID_COMPOSE_FILE`, `RESERVED_WORKER`, `RESERVED_ENV_OVERRIDE`). A compose
 * call answers it as `{code, message}` (`toBody`), `svc compose` exits 2 (cli.md §1.1).
 */
export class ComposeFileError extends YamlError {
  override readonly name = 'ComposeFileError'
  declare readonly code: ComposeFileErrorCode

  constructor(file: string, place: Place | undefined, problem: string, code: ComposeFileErrorCode = 'INVALID_COMPOSE_FILE') {
    super(file, place, problem, { code })
  }
}

/** The file the daemon reads when a payload names none (cli.md §4.7). */
export const COMPOSE_FILE_NAME = 'worker-compose.yaml'
/** Defaults of cli.md §2.3, ms. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 60_000
export const DEFAULT_STOP_TIMEOUT_MS = 10_000
export const DEFAULT_PRE_RUN_TIMEOUT_MS = 60_000
/** Container keys (cli.md §2.3); the same rule as worker names (§2.2). */
export const CONTAINER_KEY_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/
/** Variables the launcher sets itself (cli.md §5.2); `env_file`/`environment` may not set them. */
export const RESERVED_ENV_NAMES: readonly string[] = RESERVED_ENV
/** builtins.md §1: the explanation given when `svc-observability` is declared in a compose file. */
export const OBSERVABILITY_IN_COMPOSE_MESSAGE =
  'svc-observability is injected by the engine and must not be declared in worker-compose.yaml; change its settings in config/svc-observability.yaml'

export const TOP_KEYS = ['namespace', 'startup_timeout', 'stop_timeout', 'containers'] as const
export const PATH_KEYS = [
  'worker',
  'depends_on',
  'startup_timeout',
  'working_dir',
  'environment',
  'env_file',
  'isolation',
  'watch',
  'restart',
  'config',
  'scripts',
] as const
/** Restart policies of a path container (`restart`, default `on-failure`): see {@link PathContainer.restart}. */
export const RESTART_POLICIES = ['always', 'on-failure', 'never'] as const
export type RestartPolicy = (typeof RESTART_POLICIES)[number]
export const BUILTIN_KEYS = ['worker', 'depends_on', 'config'] as const
const SCRIPT_KEYS = ['pre_run', 'pre_run_timeout', 'run', 'post_run'] as const

/** A 1-based place in the file: the YAML reader's. */
export type { Place }

interface ContainerBase {
  /** The container key: the worker's SVC_WORKER_NAME. */
  key: string
  /** The `worker` value as expanded, e.g. `path://./workers/api`. */
  worker: string
  /** Keys of containers started first, without duplicates, in the order written. */
  dependsOn: string[]
  /** ms; the container's value, else the file's. */
  startupTimeoutMs: number
}

/** A `path://` container: a local worker launched by the supervisor (cli.md §5). */
export interface PathContainer extends ContainerBase {
  kind: 'path'
  /** The directory after `path://`, as written (relative to the file's directory unless absolute). */
  path: string
  /** As written; relative to the file's directory. */
  workingDir?: string
  environment: Record<string, string>
  /** Files read in order at start, relative to the file's directory; `place` points at the entry. */
  envFiles: Array<{ path: string; place: Place }>
  isolation?: 'process' | 'microvm'
  /** Default `true`. */
  watch: boolean
  /**
   * What happens when the process exits unasked after it was ready (default `on-failure`, the crash
   * policy of cli.md §5.5): `on-failure` restarts after a non-zero exit or a signal; `always` also after
   * exit 0; `never` leaves it `stopped` (exit 0) or `failed` (otherwise).
   */
  restart: RestartPolicy
  /** Expanded; passed as JSON in SVC_WORKER_CONFIG. */
  config?: unknown
  scripts: { preRun?: string; preRunTimeoutMs: number; run?: string; postRun?: string }
}

/** A `builtin://` container: a built-in worker of the engine (builtins.md §1). */
export interface BuiltinContainer extends ContainerBase {
  kind: 'builtin'
  /** Canonical catalogue name (aliases resolved). */
  builtin: BuiltinName
  /** Stored unexpanded (cli.md §2.3): the engine expands built-in settings when it reads them. */
  config?: Record<string, unknown>
}

export type ContainerSpec = PathContainer | BuiltinContainer

/** A validated compose file. */
export interface ComposeFile {
  /** How the file is named in messages. */
  label: string
  /** The file's `namespace`, when it has one (must equal the daemon's). */
  namespace?: string
  /** Where `namespace` is written, for WRONG_NAMESPACE messages. */
  namespacePlace?: Place
  startupTimeoutMs: number
  stopTimeoutMs: number
  /** Containers in the order written. */
  containers: ContainerSpec[]
  /** Topological order of the container keys; ties keep the order written (see {@link startOrder}). */
  startOrder: string[]
}

export interface ParseOptions {
  /** How the file is named in messages; default `worker-compose.yaml`. */
  label?: string
  /** Environment for placeholders; default `process.env`. */
  env?: Env
}

/**
 * Reads and validates a compose file.
 *
 * @throws {ComposeError} `NO_COMPOSE_FILE` (`No compose file at <label>`) when it does not exist;
 *   otherwise as {@link parseComposeFile}.
 */
export function loadComposeFile(path: string, options: ParseOptions = {}): ComposeFile {
  const label = options.label ?? path
  return parseComposeFile(readComposeText(path, label), { ...options, label })
}

/**
 * The text of a compose file, at most {@link CONFIG_FILE_LIMITS}`.maxBytes` (1 MiB) read.
 *
 * @throws {ComposeError} `NO_COMPOSE_FILE` when it does not exist; {@link ComposeFileError}
 *   `INVALID_COMPOSE_FILE` when it cannot be read or is larger than the limit.
 */
export function readComposeText(path: string, label: string): string {
  try {
    return readTextFileSync(path, { file: label, maxBytes: CONFIG_FILE_LIMITS.maxBytes })
  } catch (err) {
    if (err instanceof YamlError) throw new ComposeFileError(err.file, err.place, err.problem)
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ENOENT' || code === 'ENOTDIR') {
      throw new ComposeError('NO_COMPOSE_FILE', `No compose file at ${label}`)
    }
    throw new ComposeFileError(label, undefined, `cannot be read (${(err as Error).message})`)
  }
}

/**
 * Validates compose text (cli.md §2.3): unknown or duplicate keys, container keys, `worker` values
 * (`path://<dir>` or a catalogue `builtin://<name>`), keys a built-in container may not have,
 * `depends_on` targets, self-references and cycles, durations, types; expands placeholders in every
 * string except the `config` of built-in containers.
 *
 * @throws {ComposeFileError} `INVALID_COMPOSE_FILE` for any of these; `RESERVED_WORKER` for
 *   `builtin://configuration`; `RESERVED_ENV_OVERRIDE` for a reserved variable in `environment`.
 *   Messages start `<label>:<line>:<col>: `.
 * @example
 * parseComposeFile('containers:\n  api:\n    worker: path://./workers/api\n').startOrder // ['api']
 */
export function parseComposeFile(text: string, options: ParseOptions = {}): ComposeFile {
  return new Reader(text, options.label ?? COMPOSE_FILE_NAME, options.env ?? process.env).read()
}

/**
 * Parses a duration of cli.md §2.3: a non-negative integer (ms), or a string of digits with an
 * optional unit `ms`, `s`, `m` or `h`. Returns ms, or undefined when the value is not a duration.
 *
 * @example parseDuration('2m') // 120000
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined
  if (typeof value !== 'string') return undefined
  const match = /^\s*(\d+)\s*(ms|s|m|h)?\s*$/.exec(value)
  if (!match) return undefined
  const n = Number(match[1])
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 'ms') as 'ms' | 's' | 'm' | 'h']
  const ms = n * factor
  return Number.isSafeInteger(ms) ? ms : undefined
}

/**
 * The start order: every container after its dependencies; among containers whose dependencies are
 * all placed, the one written first goes first (so the order is stable under edits elsewhere).
 * Assumes no cycles (the parser rejects them).
 */
export function startOrder(containers: ReadonlyArray<Pick<ContainerSpec, 'key' | 'dependsOn'>>): string[] {
  const placed = new Set<string>()
  const order: string[] = []
  const pending = [...containers]
  while (pending.length > 0) {
    const index = pending.findIndex((c) => c.dependsOn.every((d) => placed.has(d) || !containers.some((o) => o.key === d)))
    if (index < 0) throw new Error('startOrder: dependency cycle')
    const [next] = pending.splice(index, 1)
    placed.add(next!.key)
    order.push(next!.key)
  }
  return order
}

// ---------------------------------------------------------------------------------------------

type AnyPair = Pair<Node | null, Node | null>

/** Walks the YAML syntax tree so that every error names its line and column. */
class Reader extends YamlReader {
  private readonly label: string
  private readonly env: Env

  constructor(text: string, label: string, env: Env) {
    // Duplicate keys are found while walking so the message can name the key.
    super(text, { file: label, uniqueKeys: false }, (file, place, problem, code) => new ComposeFileError(file, place, problem, code as ComposeFileErrorCode | undefined))
    this.label = label
    this.env = env
  }

  read(): ComposeFile {
    const top = this.deref(this.doc.contents)
    if (top === null || (isScalar(top) && top.value === null)) {
      throw new ComposeFileError(this.label, { line: 1, column: 1 }, "the file is empty; a project with no workers is written 'containers: {}'")
    }
    if (!isMap(top)) this.fail(top, 'the top level must be a mapping with a containers key')
    const pairs = this.pairs(top, 'top-level', TOP_KEYS)

    const file: ComposeFile = {
      label: this.label,
      startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
      stopTimeoutMs: DEFAULT_STOP_TIMEOUT_MS,
      containers: [],
      startOrder: [],
    }
    const ns = pairs.get('namespace')
    if (ns) {
      const value = this.string(ns, 'namespace')
      if (value.trim() === '') this.fail(ns.value ?? ns.key, 'namespace must be a non-blank string')
      file.namespace = value
      file.namespacePlace = this.source.placeOf(ns.value ?? ns.key)
    }
    const startup = pairs.get('startup_timeout')
    if (startup) file.startupTimeoutMs = this.duration(startup, 'startup_timeout', 1)
    const stop = pairs.get('stop_timeout')
    if (stop) file.stopTimeoutMs = this.duration(stop, 'stop_timeout', 0)

    const containersPair = pairs.get('containers')
    if (!containersPair) this.fail(top, "containers is required (write 'containers: {}' for a project with no workers)")
    const containersNode = this.deref(containersPair.value)
    // `containers:` with nothing after it reads as null: treat it like `{}`.
    if (containersNode !== null && !(isScalar(containersNode) && containersNode.value === null)) {
      if (!isMap(containersNode)) this.fail(containersNode, `containers must be a mapping of container keys to containers${describe(containersNode)}`)
      const seen = new Set<string>()
      for (const pair of containersNode.items as AnyPair[]) {
        const key = this.keyOf(pair)
        if (seen.has(key)) this.failKey(pair, `duplicate container key '${key}'`)
        seen.add(key)
        if (!CONTAINER_KEY_PATTERN.test(key)) {
          this.failKey(pair, `container key '${key}' is invalid: use lower-case letters, digits, '_' and '-', starting with a letter or digit, at most 64 characters`)
        }
        file.containers.push(this.container(key, pair, file))
      }
    }
    this.checkDependencies(file.containers)
    file.startOrder = startOrder(file.containers)
    return file
  }

  // -- containers ------------------------------------------------------------------------------

  private container(key: string, owner: AnyPair, file: ComposeFile): ContainerSpec {
    const node = this.deref(owner.value)
    if (node === null || !isMap(node)) this.fail(node ?? owner.key, `container '${key}' must be a mapping with a worker key${describe(node)}`)
    const pairs = this.pairs(node, `container '${key}'`, PATH_KEYS)
    const workerPair = pairs.get('worker')
    if (!workerPair) this.failKey(owner, `container '${key}' has no worker (path://<dir> or builtin://<name>)`)
    const worker = this.string(workerPair, 'worker').trim()
    const workerNode = workerPair.value ?? workerPair.key
    const dependsOn = this.dependsOn(pairs.get('depends_on'), key)

    if (worker.startsWith('builtin://')) {
      const name = worker.slice('builtin://'.length)
      const builtin = canonicalBuiltinName(name)
      if (builtin === 'svc-observability') this.fail(workerNode, OBSERVABILITY_IN_COMPOSE_MESSAGE)
      if (builtin === 'configuration') {
        this.fail(workerNode, 'configuration always runs inside the engine and cannot be a container', 'RESERVED_WORKER')
      }
      if (builtin === undefined) {
        const names = BUILTIN_NAMES.filter((n) => n !== 'configuration' && n !== 'svc-observability')
        this.fail(workerNode, `unknown built-in worker '${name}'${didYouMean(name, names)}; built-in workers: ${names.join(', ')}`)
      }
      for (const [k, pair] of pairs) {
        if (!(BUILTIN_KEYS as readonly string[]).includes(k)) {
          this.failKey(pair, `${k} is not allowed in built-in container '${key}' (builtin:// containers accept only worker, depends_on and config)`)
        }
      }
      const container: BuiltinContainer = { kind: 'builtin', key, worker, builtin, dependsOn, startupTimeoutMs: file.startupTimeoutMs }
      const configPair = pairs.get('config')
      if (configPair) {
        const configNode = this.deref(configPair.value)
        if (configNode !== null && !(isScalar(configNode) && configNode.value === null)) {
          if (!isMap(configNode)) this.fail(configNode, `config of built-in container '${key}' must be a mapping of settings${describe(configNode)}`)
          this.checkUniqueKeys(configNode)
          container.config = this.source.toJS(configNode) as Record<string, unknown>
        }
      }
      return container
    }

    if (!worker.startsWith('path://')) {
      this.fail(workerNode, `worker of container '${key}' must be path://<dir> or builtin://<name>, got '${worker}'`)
    }
    const path = worker.slice('path://'.length)
    if (path.trim() === '') this.fail(workerNode, `worker of container '${key}' names no directory: write path://./workers/${key}`)
    const container: PathContainer = {
      kind: 'path',
      key,
      worker,
      path,
      dependsOn,
      startupTimeoutMs: file.startupTimeoutMs,
      environment: {},
      envFiles: [],
      watch: true,
      restart: 'on-failure',
      scripts: { preRunTimeoutMs: DEFAULT_PRE_RUN_TIMEOUT_MS },
    }
    const startup = pairs.get('startup_timeout')
    if (startup) container.startupTimeoutMs = this.duration(startup, 'startup_timeout', 1)
    const workingDir = pairs.get('working_dir')
    if (workingDir) {
      const value = this.string(workingDir, 'working_dir')
      if (value.trim() === '') this.fail(workingDir.value ?? workingDir.key, 'working_dir must be a non-empty path')
      container.workingDir = value
    }
    const environment = pairs.get('environment')
    if (environment) container.environment = this.environment(environment, key)
    const envFile = pairs.get('env_file')
    if (envFile) container.envFiles = this.envFiles(envFile)
    const isolation = pairs.get('isolation')
    if (isolation) {
      const value = this.string(isolation, 'isolation')
      if (value !== 'process' && value !== 'microvm') {
        this.fail(isolation.value ?? isolation.key, `isolation must be process or microvm, got '${value}'`)
      }
      container.isolation = value
    }
    const watch = pairs.get('watch')
    if (watch) container.watch = this.boolean(watch, 'watch')
    const restart = pairs.get('restart')
    if (restart) {
      const value = this.string(restart, 'restart')
      if (!(RESTART_POLICIES as readonly string[]).includes(value)) {
        this.fail(restart.value ?? restart.key, `restart must be always, on-failure or never, got '${value}'`)
      }
      container.restart = value as RestartPolicy
    }
    const config = pairs.get('config')
    if (config) {
      const configNode = this.deref(config.value)
      if (configNode !== null && !(isScalar(configNode) && configNode.value === null)) {
        if (isMap(configNode)) this.checkUniqueKeys(configNode)
        container.config = this.expandValue(configNode)
      }
    }
    const scripts = pairs.get('scripts')
    if (scripts) this.scripts(scripts, key, container)
    return container
  }

  private dependsOn(pair: AnyPair | undefined, key: string): string[] {
    if (!pair) return []
    const node = this.deref(pair.value)
    if (node === null || (isScalar(node) && node.value === null)) return []
    if (!isSeq(node)) this.fail(node, `depends_on must be a list of container keys, e.g. [database]${describe(node)}`)
    const out: string[] = []
    for (const item of node.items as Array<Node | null>) {
      const n = this.deref(item)
      if (n === null || !isScalar(n) || typeof n.value !== 'string') this.fail(n ?? node, 'each depends_on entry must be a container key')
      const dep = this.expand(n.value as string, n)
      if (dep === key) this.fail(n, `container '${key}' depends on itself`)
      this.dependencyPlaces.set(`${key}\0${dep}`, n)
      if (!out.includes(dep)) out.push(dep)
    }
    return out
  }

  private readonly dependencyPlaces = new Map<string, Node>()

  /** Unknown targets, then cycles, named in the order the containers are written. */
  private checkDependencies(containers: ContainerSpec[]): void {
    const keys = containers.map((c) => c.key)
    for (const c of containers) {
      for (const dep of c.dependsOn) {
        if (!keys.includes(dep)) {
          this.fail(this.dependencyPlaces.get(`${c.key}\0${dep}`)!, `container '${c.key}' depends on unknown container '${dep}'${didYouMean(dep, keys)}`)
        }
      }
    }
    const byKey = new Map(containers.map((c) => [c.key, c]))
    const state = new Map<string, 'visiting' | 'done'>()
    const stack: string[] = []
    const visit = (key: string): void => {
      state.set(key, 'visiting')
      stack.push(key)
      for (const dep of byKey.get(key)!.dependsOn) {
        const s = state.get(dep)
        if (s === 'visiting') {
          const cycle = [...stack.slice(stack.indexOf(dep)), dep]
          this.fail(this.dependencyPlaces.get(`${cycle[0]}\0${cycle[1]}`)!, `dependency cycle: ${cycle.join(' -> ')}`)
        }
        if (s === undefined) visit(dep)
      }
      stack.pop()
      state.set(key, 'done')
    }
    for (const c of containers) if (!state.has(c.key)) visit(c.key)
  }

  private environment(pair: AnyPair, key: string): Record<string, string> {
    const node = this.deref(pair.value)
    if (node === null || (isScalar(node) && node.value === null)) return {}
    if (!isMap(node)) this.fail(node, `environment must be a mapping of NAME: value${describe(node)}`)
    const out: Record<string, string> = {}
    const seen = new Set<string>()
    for (const item of node.items as AnyPair[]) {
      const name = this.keyOf(item)
      if (seen.has(name)) this.failKey(item, `duplicate key '${name}' in environment`)
      seen.add(name)
      if (name === '' || name.includes('=') || name.includes('\0')) this.failKey(item, `'${name}' is not a valid environment variable name`)
      if (RESERVED_ENV_NAMES.includes(name)) {
        this.failKey(item, `environment of container '${key}' sets ${name}, which svc sets itself (cli.md §5.2); remove it`, 'RESERVED_ENV_OVERRIDE')
      }
      const value = this.deref(item.value)
      if (value === null || !isScalar(value) || value.value === null || typeof value.value === 'object') {
        this.fail(value ?? item.key ?? node, `environment ${name} must be a string, number or boolean`)
      }
      out[name] = typeof value.value === 'string' ? this.expand(value.value, value) : String(value.value)
    }
    return out
  }

  private envFiles(pair: AnyPair): Array<{ path: string; place: Place }> {
    const node = this.deref(pair.value)
    if (node === null || (isScalar(node) && node.value === null)) return []
    const items = isSeq(node) ? (node.items as Array<Node | null>) : [node]
    const out: Array<{ path: string; place: Place }> = []
    for (const item of items) {
      const n = this.deref(item)
      if (n === null || !isScalar(n) || typeof n.value !== 'string' || n.value.trim() === '') {
        this.fail(n ?? node, 'env_file must be a file path or a list of file paths')
      }
      out.push({ path: this.expand(n.value as string, n), place: this.source.placeOf(n) })
    }
    return out
  }

  private scripts(pair: AnyPair, key: string, container: PathContainer): void {
    const node = this.deref(pair.value)
    if (node === null || (isScalar(node) && node.value === null)) return
    if (!isMap(node)) this.fail(node, `scripts must be a mapping with pre_run, run and post_run${describe(node)}`)
    const pairs = this.pairs(node, `scripts of container '${key}'`, SCRIPT_KEYS)
    for (const [k, p] of pairs) {
      if (k === 'pre_run_timeout') {
        container.scripts.preRunTimeoutMs = this.duration(p, 'pre_run_timeout', 1)
        continue
      }
      const command = this.string(p, k)
      if (command.trim() === '') this.fail(p.value ?? p.key, `scripts.${k} must be a non-empty command`)
      if (k === 'pre_run') container.scripts.preRun = command
      else if (k === 'run') container.scripts.run = command
      else container.scripts.postRun = command
    }
  }

  // -- values ----------------------------------------------------------------------------------

  /** The pairs of a mapping by key; unknown and duplicate keys fail. */
  private pairs(map: YAMLMap, where: string, allowed: readonly string[]): Map<string, AnyPair> {
    const out = new Map<string, AnyPair>()
    for (const pair of map.items as AnyPair[]) {
      const key = this.keyOf(pair)
      if (out.has(key)) this.failKey(pair, `duplicate key '${key}'${where === 'top-level' ? '' : ` in ${where}`}`)
      if (!allowed.includes(key)) {
        this.failKey(pair, `unknown ${where === 'top-level' ? 'top-level key' : 'key'} '${key}'${where === 'top-level' ? '' : ` in ${where}`}${didYouMean(key, allowed)}`)
      }
      out.set(key, pair)
    }
    return out
  }

  /** Rejects duplicate keys anywhere inside a free-form value (`config`). */
  private checkUniqueKeys(node: Node): void {
    if (isMap(node)) {
      const seen = new Set<unknown>()
      for (const pair of node.items as AnyPair[]) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key
        if (seen.has(key)) this.failKey(pair, `duplicate key '${String(key)}'`)
        seen.add(key)
        const value = this.deref(pair.value)
        if (value) this.checkUniqueKeys(value)
      }
    } else if (isSeq(node)) {
      for (const item of node.items as Array<Node | null>) {
        const value = this.deref(item)
        if (value) this.checkUniqueKeys(value)
      }
    }
  }

  /** A string with its placeholders expanded. */
  protected override string(pair: AnyPair, name: string): string {
    const node = this.deref(pair.value)
    if (node === null || !isScalar(node) || typeof node.value !== 'string') {
      this.fail(node ?? pair.key ?? this.doc.contents!, `${name} must be a string${describe(node)}`)
    }
    return this.expand(node.value as string, node)
  }

  private boolean(pair: AnyPair, name: string): boolean {
    const node = this.deref(pair.value)
    if (node !== null && isScalar(node)) {
      if (typeof node.value === 'boolean') return node.value
      if (typeof node.value === 'string') {
        const text = this.expand(node.value, node).trim().toLowerCase()
        if (text === 'true') return true
        if (text === 'false') return false
      }
    }
    this.fail(node ?? pair.key!, `${name} must be true or false${describe(node)}`)
  }

  private duration(pair: AnyPair, name: string, min: number): number {
    const node = this.deref(pair.value)
    let raw: unknown = node !== null && isScalar(node) ? node.value : undefined
    if (typeof raw === 'string') raw = this.expand(raw, node!)
    const ms = parseDuration(raw)
    if (ms === undefined || ms < min) {
      const shown = raw === undefined ? describe(node).replace(/^, got /, '') : JSON.stringify(raw)
      this.fail(
        node ?? pair.key!,
        `${name} must be a duration${min > 0 ? ' greater than 0' : ''}: milliseconds (5000) or a number with ms, s, m or h (500ms, 30s, 2m, 1h); got ${shown}`,
      )
    }
    return ms
  }

  private expand(text: string, node: Node): string {
    try {
      return expandString(text, this.env)
    } catch (err) {
      if (err instanceof ExpandError) this.fail(node, err.message)
      throw err
    }
  }

  /** A free-form value as JSON with every string expanded; a failure points at the string. */
  private expandValue(node: Node): unknown {
    const value = this.source.toJS(node)
    try {
      return expandPlaceholders(value, this.env)
    } catch (err) {
      if (err instanceof ExpandError) {
        const at = err.path.length === 0 ? node : ((node as YAMLMap).getIn?.(err.path, true) as Node | undefined)
        this.fail(at ?? node, err.message)
      }
      throw err
    }
  }

}

/** `, got a list` style suffix for type errors. */
function describe(node: Node | null): string {
  if (node === null) return ', got nothing'
  if (isMap(node)) return ', got a mapping'
  if (isSeq(node)) return ', got a list'
  if (isScalar(node)) {
    if (node.value === null) return ', got nothing'
    return `, got ${JSON.stringify(node.value)}`
  }
  return ''
}

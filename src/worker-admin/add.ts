/**
 * `svc worker add` (cli.md §4.2): declare local workers and built-ins in config.yaml and, when
 * the engine applies the change, follow each local worker until it registers.
 */
import { existsSync, realpathSync, statSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join, relative, resolve, sep } from 'node:path'
import { expandString } from '../../runtime/index.ts'
import { CliError, ExitCode, toCliError } from '../lib/errors.ts'
import { checkKvm as defaultCheckKvm } from '../supervisor/microvm/probe.ts'
import type { KvmCheck } from '../supervisor/microvm/probe.ts'
import { loadManifest as defaultLoadManifest, ManifestError } from '../supervisor/manifest.ts'
import type { WorkerManifest, WorkerState } from '../supervisor/types.ts'
import { appendEntry, readConfigText, readEntries, replaceEntry, setEnabled, writeConfigText } from './config-file.ts'
import type { ConfigEntry } from './config-file.ts'
import type { EngineAccess, EngineSession } from './engine.ts'
import { followWorker, WorkerFollower } from './follow.ts'
import { jsonError } from './output.ts'
import type { Output } from './output.ts'
import type { StepRunner } from './progress.ts'
import { shown } from './project.ts'
import type { WorkerProject } from './project.ts'
import { cannotAddMessage, isListenerName, LOCAL_WORKER_NAME, lookupBuiltin, suggestBuiltin, unknownWorkerMessage } from './registry.ts'
import type { BuiltinInfo } from './registry.ts'
import { logFilePath, readWorkerState } from './state-files.ts'

/** Default `--timeout`: how long to wait for a worker to register, ms. */
export const DEFAULT_ADD_TIMEOUT_MS = 120_000

/** What `svc worker add` was asked (its arguments and flags). */
export interface AddRequest {
  /** WORKER arguments: paths, built-in names or aliases. */
  workers: string[]
  /** `--name`; only with a single WORKER. */
  name?: string | undefined
  /** `--namespace` for local workers. */
  namespace?: string | undefined
  /** `--isolation` for local workers. */
  isolation?: 'process' | 'microvm' | undefined
  force: boolean
  /** False with `--no-wait`. */
  wait: boolean
  /** `--timeout` in ms. */
  timeoutMs: number
}

/** Where `svc worker add` runs and how it reports. */
export interface AddContext {
  project: WorkerProject
  env: NodeJS.ProcessEnv
  output: Output
  steps: StepRunner
  engine: EngineAccess
  /** Injection points for tests of paths this host cannot take (e.g. a failing KVM check). */
  loadManifest?: (dir: string, options: { label: string }) => WorkerManifest
  checkKvm?: () => KvmCheck
}

/** One element of the `--json` result of cli.md §4.2. */
export interface AddResult {
  name: string
  kind: 'local' | 'builtin'
  /** `worker_path` as written to config.yaml (local workers). */
  path?: string
  /** True when config.yaml was modified. */
  changed: boolean
  state: WorkerState
  pid?: number
  functions: string[]
  /** Time from the config.yaml change to registration, ms, when followed. */
  ready_ms?: number
  error?: { code: string; message: string }
}

export interface AddReport {
  workers: AddResult[]
  /** The highest exit code of all arguments (cli.md §4.2). */
  exitCode: number
}

/**
 * Processes each WORKER in order; a failing one is reported (through `context.output`) and does
 * not stop the others.
 *
 * @throws {CliError} exit 2 for a `--name` given with several WORKER arguments, and for a
 *   config.yaml that cannot be read or parsed (checked before any argument is processed)
 */
export async function addWorkers(request: AddRequest, context: AddContext): Promise<AddReport> {
  if (request.name !== undefined && request.workers.length > 1) {
    throw new CliError({ code: 'INVALID_ARGUMENT', message: '--name can only be used with a single WORKER', exitCode: ExitCode.Usage })
  }
  // A config.yaml that cannot be edited fails the whole command, before any argument.
  const { project } = context
  readEntries(readConfigText(project.configPath, project.configLabel), project.configLabel)
  const report: AddReport = { workers: [], exitCode: ExitCode.Success }
  for (const worker of request.workers) {
    let result: AddResult
    try {
      result = await addOne(worker, request, context)
    } catch (err) {
      const error = err instanceof FailedAfterChange ? err.error : toCliError(err)
      context.output.error(error)
      const builtin = lookupBuiltin(worker)
      const failed: AddResult =
        err instanceof FailedAfterChange
          ? err.result
          : { name: builtin?.name ?? worker, kind: builtin ? 'builtin' : 'local', changed: false, state: 'declared', functions: [] }
      result = { ...failed, error: jsonError(error) }
      report.exitCode = Math.max(report.exitCode, error.exitCode)
    }
    report.workers.push(result)
  }
  return report
}

/** How a WORKER argument is read (cli.md §4.2). */
export type WorkerArgument = { kind: 'path'; directory: string } | { kind: 'builtin'; builtin: BuiltinInfo } | { kind: 'unknown' }

/**
 * A path when it starts with `.`, `/` or `~`, contains a path separator, or is not a built-in name
 * but an existing directory; otherwise a built-in name or alias; otherwise unknown.
 */
export function classifyWorker(argument: string, cwd: string): WorkerArgument {
  const looksLikePath = /^[./~]/.test(argument) || argument.includes('/') || argument.includes(sep)
  if (looksLikePath) return { kind: 'path', directory: expandHome(argument, cwd) }
  const builtin = lookupBuiltin(argument)
  if (builtin) return { kind: 'builtin', builtin }
  const candidate = resolve(cwd, argument)
  if (existsSync(candidate) && statSync(candidate).isDirectory()) return { kind: 'path', directory: candidate }
  return { kind: 'unknown' }
}

async function addOne(argument: string, request: AddRequest, context: AddContext): Promise<AddResult> {
  const target = classifyWorker(argument, context.project.cwd)
  if (target.kind === 'unknown') {
    const suggestion = suggestBuiltin(argument)
    throw new CliError({
      code: 'UNKNOWN_WORKER',
      message: unknownWorkerMessage(argument),
      exitCode: ExitCode.Usage,
      ...(suggestion === undefined ? {} : { hint: `did you mean ${suggestion}? (svc worker add ${suggestion})` }),
    })
  }
  if (target.kind === 'builtin') return addBuiltin(target.builtin, request, context)
  return addLocal(argument, target.directory, request, context)
}

// -- local workers ---------------------------------------------------------------------------------

async function addLocal(argument: string, directory: string, request: AddRequest, context: AddContext): Promise<AddResult> {
  const { project } = context
  const load = context.loadManifest ?? defaultLoadManifest
  let manifest: WorkerManifest
  try {
    manifest = load(directory, { label: argument })
  } catch (err) {
    if (err instanceof ManifestError) throw new CliError({ code: err.code, message: err.message, exitCode: ExitCode.Usage, cause: err })
    throw err
  }

  // The KVM check comes before any edit, so a host without KVM leaves config.yaml as it was (§5.7).
  const isolation = request.isolation ?? manifest.isolation
  if (isolation === 'microvm') {
    const kvm = (context.checkKvm ?? defaultCheckKvm)()
    if (!kvm.ok) throw new CliError({ code: kvm.code, message: kvm.message, exitCode: ExitCode.Failure })
  }

  const name = request.name ?? manifest.name
  if (!LOCAL_WORKER_NAME.test(name)) {
    throw new CliError({
      code: 'INVALID_ARGUMENT',
      message: `Invalid worker name '${name}': use 1-64 characters a-z, 0-9, '_' and '-', starting with a letter or digit`,
      hint: request.name === undefined ? 'pass --name <name>' : undefined,
      exitCode: ExitCode.Usage,
    })
  }
  if (lookupBuiltin(name) || isListenerName(name)) {
    throw new CliError({
      code: 'INVALID_ARGUMENT',
      message: `'${name}' is the name of a built-in worker; give the local worker another name with --name`,
      exitCode: ExitCode.Usage,
    })
  }

  const workerPath = entryPath(project.root, directory)
  const namespace = request.namespace ?? 'default'
  const fields: Array<readonly [string, string]> = [['name', name], ['worker_path', workerPath]]
  if (request.namespace !== undefined) fields.push(['namespace', request.namespace])
  if (request.isolation !== undefined) fields.push(['isolation', request.isolation])

  const text = readConfigText(project.configPath, project.configLabel)
  const { entries } = readEntries(text, project.configLabel)
  const existing = entries.find((e) => !e.builtin && !e.listener && e.name === name)
  const base: AddResult = { name, kind: 'local', path: workerPath, changed: false, state: 'declared', functions: [] }

  let updated: string
  let verb: 'Added' | 'Replaced' | 'Enabled'
  if (existing && !request.force) {
    if (!samePath(project.root, existing, directory, context.env)) {
      throw new CliError({
        code: 'WORKER_EXISTS',
        message: `A worker named '${name}' is already declared for ${existing.workerPath ?? '(no worker_path)'}; pass --force to replace it`,
        exitCode: ExitCode.Failure,
      })
    }
    if (existing.enabled) {
      context.output.line(`${name} is already declared in ${project.configLabel} (${existing.workerPath})`)
      return describeCurrent({ ...base, path: existing.workerPath ?? workerPath }, existing.namespace ?? 'default', context)
    }
    updated = setEnabled(text, existing.index, true)
    verb = 'Enabled'
  } else if (existing) {
    updated = replaceEntry(text, existing.index, fields)
    verb = 'Replaced'
  } else {
    updated = appendEntry(text, fields)
    verb = 'Added'
  }

  if (updated === text) {
    // --force with the same path and flags: nothing to replace.
    context.output.line(`${name} is already declared in ${project.configLabel} (${existing?.workerPath ?? workerPath})`)
    return describeCurrent(base, namespace, context)
  }
  const since = Date.now()
  writeConfigText(project.configPath, updated)
  const result: AddResult = { ...base, changed: true }
  if (verb === 'Enabled') result.path = existing!.workerPath ?? workerPath
  const entryNamespace = verb === 'Enabled' ? (existing!.namespace ?? 'default') : namespace

  const session = await context.engine.get()
  if (!session) {
    context.output.line(`${verb} ${name}; it will start with svc`)
    return result
  }
  if (!request.wait) {
    context.output.line(`${verb} ${name}; svc is starting it (see svc worker list)`)
    return result
  }

  const logPath = logFilePath(project.root, name)
  const logLabel = shown(project, logPath)
  const follower = new WorkerFollower({
    session,
    projectRoot: project.root,
    name,
    namespace: entryNamespace,
    timeoutMs: request.timeoutMs,
    since,
    logLabel,
    logPath,
    installCommand: manifest.scripts.install,
  })
  try {
    const outcome = await followWorker(follower, context.steps, { name, since, installCommand: manifest.scripts.install })
    context.output.line(`${name} ready in ${(outcome.readyMs / 1000).toFixed(1)} s (logs: ${logLabel})`)
    const ready: AddResult = { ...result, state: outcome.state, functions: outcome.functions, ready_ms: outcome.readyMs }
    if (outcome.pid !== undefined) ready.pid = outcome.pid
    return ready
  } catch (err) {
    const seen = follower.current
    const partial: AddResult = { ...result, state: seen.state ?? 'declared' }
    if (seen.pid !== undefined) partial.pid = seen.pid
    throw new FailedAfterChange(toCliError(err), partial)
  }
}

/** A worker that was declared but did not get ready: the result so far travels with the error. */
class FailedAfterChange extends Error {
  readonly error: CliError
  readonly result: AddResult

  constructor(error: CliError, result: AddResult) {
    super(error.message)
    this.error = error
    this.result = result
  }
}

/**
 * `worker_path` for config.yaml: relative to the project root with `/` separators (`./workers/x`,
 * `../shared/x`), so the project can move; absolute only when no relative path exists (another
 * drive on Windows).
 */
export function entryPath(root: string, directory: string): string {
  const rel = relative(root, directory)
  if (rel === '') return '.'
  if (isAbsolute(rel)) return directory
  const posix = rel.split(sep).join('/')
  return posix.startsWith('../') || posix === '..' ? posix : `./${posix}`
}

function expandHome(argument: string, cwd: string): string {
  if (argument === '~') return homedir()
  if (argument.startsWith('~/') || argument.startsWith(`~${sep}`)) return join(homedir(), argument.slice(2))
  return resolve(cwd, argument)
}

/** Whether an entry's `worker_path` (placeholders expanded when possible) is `directory`. */
function samePath(root: string, entry: ConfigEntry, directory: string, env: NodeJS.ProcessEnv): boolean {
  if (entry.workerPath === undefined) return false
  let written = entry.workerPath
  try {
    written = expandString(written, env)
  } catch {
    /* compare as written */
  }
  return canonical(resolve(root, written)) === canonical(directory)
}

function canonical(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return resolve(path)
  }
}

/** Fills state, pid and functions of an unchanged worker from the engine or its state file. */
async function describeCurrent(result: AddResult, namespace: string, context: AddContext): Promise<AddResult> {
  const session = await context.engine.get()
  const described = { ...result }
  if (!session) return described
  // The supervisor's pid (the process group leader) first, as svc worker list shows it.
  const record = readWorkerState(context.project.root, result.name)
  const live = record && !record.stale ? record : undefined
  const listed = (await session.listWorkers({ namespace })).find((w) => w.name === result.name)
  if (listed) {
    described.state = 'running'
    described.functions = (await session.listFunctions({ worker: result.name, namespace })).map((f) => f.function_id)
  } else if (live?.state) {
    described.state = live.state
  }
  const pid = live?.pid ?? listed?.pid ?? undefined
  if (pid !== undefined && pid !== null) described.pid = pid
  return described
}

// -- built-ins -----------------------------------------------------------------------------------

async function addBuiltin(builtin: BuiltinInfo, request: AddRequest, context: AddContext): Promise<AddResult> {
  if (builtin.mode === 'mandatory') {
    throw new CliError({ code: 'CANNOT_ADD', message: cannotAddMessage(builtin.name), exitCode: ExitCode.Failure })
  }
  for (const [flag, value] of [['--name', request.name], ['--namespace', request.namespace], ['--isolation', request.isolation]] as const) {
    if (value !== undefined) context.output.warn(`${flag} applies to local workers only; ignored for ${builtin.name}`)
  }
  const { project } = context
  const text = readConfigText(project.configPath, project.configLabel)
  const { entries } = readEntries(text, project.configLabel)
  const entry = entries.find((e) => e.builtin?.name === builtin.name)
  const result: AddResult = { name: builtin.name, kind: 'builtin', changed: false, state: 'declared', functions: [] }

  let message: string
  let startsLater = false
  if (entry && !entry.enabled) {
    writeConfigText(project.configPath, setEnabled(text, entry.index, true))
    result.changed = true
    message = `Enabled ${builtin.name}`
    startsLater = true
  } else if (entry) {
    message = `${builtin.name} is already enabled`
  } else if (builtin.mode === 'default') {
    writeConfigText(project.configPath, appendEntry(text, [['name', builtin.name]]))
    result.changed = true
    message = `${builtin.name} is built in and already enabled; added an entry to config.yaml, configure it in config/${builtin.name}.yaml`
  } else {
    writeConfigText(project.configPath, appendEntry(text, [['name', builtin.name]]))
    result.changed = true
    message = `Added ${builtin.name}`
    startsLater = true
  }

  const session = await context.engine.get()
  if (startsLater) {
    if (!session) message += '; it will start with svc'
    // A running svc reloads config.yaml and starts the console entry (unless it runs with
    // --no-watch); a re-enabled built-in inside the engine needs a restart.
    else if (builtin.name === 'console') message += '; the running svc starts it (svc worker list shows its state; with svc --no-watch, restart svc)'
    else message += '; restart svc to start it'
  }
  context.output.line(message)
  if (session) await describeBuiltin(result, builtin, session)
  return result
}

async function describeBuiltin(result: AddResult, builtin: BuiltinInfo, session: EngineSession): Promise<void> {
  const listed = (await session.listWorkers()).find((w) => w.name === builtin.engineName)
  if (!listed) return
  result.state = 'running'
  result.functions = (await session.listFunctions({ worker: builtin.engineName })).map((f) => f.function_id)
}

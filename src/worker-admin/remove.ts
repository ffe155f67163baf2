/**
 * `svc worker remove` (cli.md §4.4): take local workers and `console` out of config.yaml, turn
 * default built-ins off with `enabled: false`. Files in the worker directory and `.svc/logs` stay.
 */
import { CliError, ExitCode, toCliError } from '../lib/errors.ts'
import { appendEntry, readConfigText, readEntries, removeEntry, setEnabled, writeConfigText } from './config-file.ts'
import type { ConfigEntry } from './config-file.ts'
import type { EngineAccess } from './engine.ts'
import { jsonError } from './output.ts'
import type { Output } from './output.ts'
import type { WorkerProject } from './project.ts'
import { disabledMessage, isListenerName, lookupBuiltin } from './registry.ts'
import type { BuiltinInfo } from './registry.ts'
import { readWorkerState } from './state-files.ts'

export interface RemoveContext {
  project: WorkerProject
  output: Output
  engine: EngineAccess
  /**
   * Asks `Stop and remove <name>? (Y/n)`; given only in interactive runs (cli.md §1), otherwise
   * the default (yes) applies.
   */
  confirm?: (message: string) => Promise<boolean>
}

/** One element of the `--json` result: `{"workers": [...]}`. */
export interface RemoveResult {
  name: string
  kind: 'local' | 'builtin'
  /** `removed`: entry deleted; `disabled`: `enabled: false` set; `none`: nothing changed. */
  action: 'removed' | 'disabled' | 'none'
  /** True when config.yaml was modified. */
  changed: boolean
  /** True when the worker was running when it was removed. */
  was_running?: boolean
  error?: { code: string; message: string }
}

export interface RemoveReport {
  workers: RemoveResult[]
  /** The highest exit code of all names. */
  exitCode: number
}

/**
 * Processes each NAME in order; a failing one is reported and does not stop the others.
 *
 * @throws {CliError} exit 2 when config.yaml cannot be read or parsed (checked before any name)
 */
export async function removeWorkers(names: string[], context: RemoveContext): Promise<RemoveReport> {
  // A config.yaml that cannot be edited fails the whole command, before any name.
  const { project } = context
  readEntries(readConfigText(project.configPath, project.configLabel), project.configLabel)
  const report: RemoveReport = { workers: [], exitCode: ExitCode.Success }
  for (const name of names) {
    try {
      report.workers.push(await removeOne(name, context))
    } catch (err) {
      const error = toCliError(err)
      context.output.error(error)
      const builtin = lookupBuiltin(name)
      report.workers.push({ name: builtin?.name ?? name, kind: builtin ? 'builtin' : 'local', action: 'none', changed: false, error: jsonError(error) })
      report.exitCode = Math.max(report.exitCode, error.exitCode)
    }
  }
  return report
}

async function removeOne(name: string, context: RemoveContext): Promise<RemoveResult> {
  const { project, output } = context
  if (isListenerName(name)) {
    throw new CliError({
      code: 'CANNOT_REMOVE',
      message: `${name} is the engine's worker listener, not a worker; edit ${project.configLabel} to change it`,
      exitCode: ExitCode.Failure,
    })
  }
  const builtin = lookupBuiltin(name)
  if (builtin?.mode === 'mandatory') {
    throw new CliError({ code: 'CANNOT_REMOVE', message: `${builtin.name} cannot be removed`, exitCode: ExitCode.Failure })
  }
  const text = readConfigText(project.configPath, project.configLabel)
  const { entries } = readEntries(text, project.configLabel)

  if (builtin?.mode === 'default') return disableBuiltin(builtin, text, entries, context)

  const entry = builtin
    ? entries.find((e) => e.builtin?.name === builtin.name)
    : entries.find((e) => !e.builtin && !e.listener && e.name === name)
  const shownName = builtin?.name ?? name
  if (!entry) {
    throw new CliError({ code: 'WORKER_NOT_DECLARED', message: `Worker '${shownName}' is not declared in ${project.configLabel}`, exitCode: ExitCode.Failure })
  }
  const kind = builtin ? 'builtin' : 'local'
  const running = entry.enabled && (await isRunning(entry, builtin, context))
  if (running && context.confirm && !(await context.confirm(`Stop and remove ${shownName}?`))) {
    output.line(`Kept ${shownName}`)
    return { name: shownName, kind, action: 'none', changed: false, was_running: true }
  }
  writeConfigText(project.configPath, removeEntry(text, entry.index))
  let message = `Removed ${shownName} from ${project.configLabel}`
  if (running) message += '; svc stops it'
  output.line(message)
  return { name: shownName, kind, action: 'removed', changed: true, was_running: running }
}

async function disableBuiltin(builtin: BuiltinInfo, text: string, entries: ConfigEntry[], context: RemoveContext): Promise<RemoveResult> {
  const { project, output } = context
  const entry = entries.find((e) => e.builtin?.name === builtin.name)
  if (entry && !entry.enabled) {
    output.line(`${builtin.name} is already disabled`)
    return { name: builtin.name, kind: 'builtin', action: 'none', changed: false }
  }
  const updated = entry ? setEnabled(text, entry.index, false) : appendEntry(text, [['name', builtin.name], ['enabled', false]])
  writeConfigText(project.configPath, updated)
  output.line(disabledMessage(builtin))
  const session = await context.engine.get()
  // A running svc reloads local worker entries only; built-in changes apply at its next start.
  if (session) output.line('svc is running: restart it to apply the change')
  return { name: builtin.name, kind: 'builtin', action: 'disabled', changed: true }
}

/** The engine is running and the worker is registered, or its live supervisor reports it installing, starting or running. */
async function isRunning(entry: ConfigEntry, builtin: BuiltinInfo | undefined, context: RemoveContext): Promise<boolean> {
  const session = await context.engine.get()
  if (!session) return false
  const engineName = builtin?.engineName ?? entry.name
  const namespace = entry.namespace ?? 'default'
  const listed = await session.listWorkers()
  if (listed.some((w) => w.name === engineName && (builtin !== undefined || w.namespace === namespace))) return true
  const record = readWorkerState(context.project.root, entry.name)
  return record !== undefined && !record.stale && (record.state === 'installing' || record.state === 'starting' || record.state === 'running' || record.state === 'restarting')
}

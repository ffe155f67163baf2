/**
 * `svc worker list` (cli.md §4.5): config.yaml, the supervisor state files and, when the engine
 * is reachable, `engine::workers::list` merged into one table.
 */
import { readFileSync } from 'node:fs'
import { expandString, terminalText } from '../../runtime/index.ts'
import { readConfigText, readEntries } from './config-file.ts'
import type { ConfigEntry } from './config-file.ts'
import { engineStartedAtMs } from './engine.ts'
import type { EngineAccess, EngineFunction, EngineWorker } from './engine.ts'
import type { WorkerProject } from './project.ts'
import { BUILTIN_REGISTRY } from './registry.ts'
import type { BuiltinInfo } from './registry.ts'
import { readWorkerState, residentBytes } from './state-files.ts'
import type { WorkerState } from '../supervisor/types.ts'
import type { WorkerStateView } from './state-files.ts'

/** Status values of cli.md §4.5: the supervisor's states, plus two only a listing knows. */
export type ListStatus = WorkerState | 'disabled' | 'engine not running'

/** One row; also the `--json` shape of cli.md §4.5. */
export interface ListedWorker {
  name: string
  kind: 'builtin' | 'local' | 'external'
  namespace: string
  status: ListStatus
  pid: number | null
  /** Ids of the functions it has registered (internal ones hidden). */
  functions: string[]
  /** `built-in`, the entry's `worker_path`, or null for external workers. */
  source: string | null
  last_error?: string
  /** `microvm` for a worker running in a microVM (cli.md §5.7); absent for a process worker. */
  isolation?: 'microvm'
  /** Host RSS of its microVM (QEMU and the virtiofs daemons) in bytes, read when listed. */
  vm_rss_bytes?: number
}

export interface WorkerListing {
  engine_running: boolean
  workers: ListedWorker[]
}

export interface ListContext {
  project: WorkerProject
  env: NodeJS.ProcessEnv
  engine: EngineAccess
}

/**
 * Builds the listing: default built-ins in catalogue order (plus `console` when declared), then
 * local workers in config.yaml order; with `all`, also `console` when not declared, the mandatory
 * built-ins, and connected workers config.yaml does not declare (kind `external`, sorted by name).
 *
 * @throws {CliError} exit 2 when config.yaml cannot be read or parsed
 */
export async function listWorkers(options: { all: boolean }, context: ListContext): Promise<WorkerListing> {
  const { project } = context
  const { entries } = readEntries(readConfigText(project.configPath, project.configLabel), project.configLabel)
  const session = await context.engine.get()
  const engineWorkers = session ? await session.listWorkers() : []
  const engineFunctions = session ? await session.listFunctions() : []
  const view = new EngineView(session !== undefined, engineWorkers, engineFunctions)

  const rows: ListedWorker[] = []
  const claimed = new Set<EngineWorker>()
  for (const builtin of BUILTIN_REGISTRY) {
    const entry = entries.find((e) => e.builtin?.name === builtin.name)
    if (builtin.mode === 'mandatory' && !options.all) continue
    if (builtin.mode === 'optional' && !entry && !options.all) continue
    rows.push(builtinRow(builtin, entry, view, context, claimed))
  }
  for (const entry of entries) {
    if (entry.builtin || entry.listener) continue
    rows.push(localRow(entry, view, context, claimed))
  }
  if (options.all) {
    const external = engineWorkers
      .filter((w) => w.runtime !== 'builtin' && !claimed.has(w))
      .sort((a, b) => (a.name ?? a.id).localeCompare(b.name ?? b.id) || a.namespace.localeCompare(b.namespace))
    for (const worker of external) {
      rows.push({
        name: worker.name ?? worker.id,
        kind: 'external',
        namespace: worker.namespace,
        status: 'running',
        pid: worker.pid,
        functions: view.functionsOf(worker.name, worker.namespace),
        source: null,
      })
    }
  }
  return { engine_running: view.running, workers: rows }
}

/** What the engine reported, with lookups. */
class EngineView {
  readonly running: boolean
  private readonly workers: EngineWorker[]
  private readonly functions: EngineFunction[]
  /** Engine start (ms since the epoch): state records older than this are from an earlier run. */
  readonly startedAtMs: number | undefined

  constructor(running: boolean, workers: EngineWorker[], functions: EngineFunction[]) {
    this.running = running
    this.workers = workers
    this.functions = functions
    this.startedAtMs = engineStartedAtMs(workers)
  }

  /** The most recent connection (or built-in) with this name, in `namespace` when given. */
  find(name: string, namespace?: string): EngineWorker | undefined {
    return this.workers
      .filter((w) => w.name === name && (namespace === undefined || w.namespace === namespace))
      .sort((a, b) => b.connected_at_ms - a.connected_at_ms)[0]
  }

  all(name: string, namespace?: string): EngineWorker[] {
    return this.workers.filter((w) => w.name === name && (namespace === undefined || w.namespace === namespace))
  }

  functionsOf(name: string | null, namespace: string): string[] {
    if (name === null) return []
    return this.functions.filter((f) => f.worker_name === name && f.namespace === namespace).map((f) => f.function_id)
  }
}

function builtinRow(builtin: BuiltinInfo, entry: ConfigEntry | undefined, view: EngineView, context: ListContext, claimed: Set<EngineWorker>): ListedWorker {
  const row: ListedWorker = {
    name: builtin.name,
    kind: 'builtin',
    namespace: 'default',
    status: 'engine not running',
    pid: null,
    functions: [],
    source: 'built-in',
  }
  const listed = view.find(builtin.engineName, 'default')
  for (const w of view.all(builtin.engineName, 'default')) claimed.add(w)
  if (builtin.mode === 'optional') {
    // console is a separate process the engine launches like a local worker.
    if (!entry || !entry.enabled) return { ...row, status: 'disabled' }
    if (!view.running) return row
    const record = currentRecord(context, entry.name, view)
    row.status = listed ? 'running' : (record?.state ?? 'declared')
    row.pid = record?.pid ?? listed?.pid ?? null
    row.functions = view.functionsOf(builtin.engineName, 'default')
    if (record?.lastError && isTroubled(row.status)) row.last_error = record.lastError
    return row
  }
  if (entry && !entry.enabled) return { ...row, status: 'disabled' }
  if (!view.running) return row
  row.status = listed ? 'running' : 'stopped'
  row.functions = view.functionsOf(builtin.engineName, 'default')
  return row
}

function localRow(entry: ConfigEntry, view: EngineView, context: ListContext, claimed: Set<EngineWorker>): ListedWorker {
  const namespace = expanded(entry.namespace, context.env) ?? 'default'
  const row: ListedWorker = {
    name: entry.name,
    kind: 'local',
    namespace,
    status: 'engine not running',
    pid: null,
    functions: [],
    source: entry.workerPath ?? null,
  }
  for (const w of view.all(entry.name, namespace)) claimed.add(w)
  if (!entry.enabled) return { ...row, status: 'disabled' }
  if (!view.running) return row
  const listed = view.find(entry.name, namespace)
  const record = currentRecord(context, entry.name, view)
  // Registration is the engine's to say; the supervisor knows the rest of the life cycle.
  row.status = listed && (record?.state === undefined || record.state === 'starting' || record.state === 'running') ? 'running' : (record?.state ?? (listed ? 'running' : 'declared'))
  row.pid = record?.pid ?? listed?.pid ?? null
  row.functions = view.functionsOf(entry.name, namespace)
  if (record?.lastError && isTroubled(row.status)) row.last_error = record.lastError
  if (record?.isolation === 'microvm') {
    row.isolation = 'microvm'
    row.vm_rss_bytes = residentBytes(record.vmPids ?? [])
  }
  return row
}

/** The state record of `name` when it belongs to the running engine's supervisor. */
function currentRecord(context: ListContext, name: string, view: EngineView): WorkerStateView | undefined {
  const record = readWorkerState(context.project.root, name)
  if (!record || record.stale) return undefined
  if (view.startedAtMs !== undefined && record.updatedAtMs < view.startedAtMs - 1000) return undefined
  return record
}

function isTroubled(status: ListStatus): boolean {
  return status === 'failed' || status === 'crashed' || status === 'stopped' || status === 'restarting'
}

function expanded(value: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (value === undefined) return undefined
  try {
    return expandString(value, env)
  } catch {
    return value
  }
}

/**
 * The table of cli.md §4.5: columns separated by at least two spaces, the STATUS column at least
 * as wide as `restarting` so it does not shift as workers change state; `-` for no PID, and for
 * FUNCTIONS of a worker that is disabled or whose engine is not running.
 */
export function formatTable(workers: readonly ListedWorker[]): string {
  const header = ['NAME', 'KIND', 'NAMESPACE', 'STATUS', 'PID', 'FUNCTIONS', 'SOURCE']
  // Names and namespaces of connected workers are what they announced: each cell one escaped line.
  const rows = workers.map((w) => [
    w.name,
    w.kind,
    w.namespace,
    w.status,
    w.pid === null ? '-' : String(w.pid),
    w.status === 'disabled' || w.status === 'engine not running' ? '-' : String(w.functions.length),
    `${w.source ?? '-'}${w.isolation === 'microvm' ? ` (microvm, ${Math.round((w.vm_rss_bytes ?? 0) / 1048576)} MiB)` : ''}`,
  ].map(terminalText))
  const minimum = [0, 0, 0, 'restarting'.length, 0, 0, 0]
  const widths = header.map((h, i) => Math.max(h.length, minimum[i]!, ...rows.map((r) => r[i]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]! + 2)))
      .join('')
      .trimEnd()
  return [header, ...rows].map(line).join('\n') + '\n'
}

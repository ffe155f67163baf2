/**
 * Reading the supervisor's per-worker state files, `.svc/state/workers/<name>.json` (cli.md §2,
 * §5.3). The supervisor owns their format; the worker commands read only a few fields and accept
 * anything else (a missing, partial, older or newer file is never an error here).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import { processAlive } from '../lib/processes.ts'
import { stateFilePath } from '../supervisor/state-file.ts'
import type { WorkerState } from '../supervisor/types.ts'

export { logFilePath, stateFilePath } from '../supervisor/state-file.ts'

/** All supervisor states (cli.md §4.5). */
export const WORKER_STATES: readonly WorkerState[] = ['declared', 'installing', 'starting', 'running', 'restarting', 'crashed', 'stopped', 'failed']

/**
 * What the worker commands take from a state file (supervisor `WorkerStateRecord`, types.ts).
 * Every field but `updatedAtMs` may be missing.
 */
export interface WorkerStateView {
  state?: WorkerState
  /** Process id of the running start command. */
  pid?: number
  /** Why the worker failed, crashed or last exited. */
  lastError?: string
  /** Pid of the svc process supervising the worker. */
  supervisorPid?: number
  /** `microvm` for a worker whose processes run in a microVM (cli.md §5.7). */
  isolation?: 'microvm'
  /** Host pids of that microVM (QEMU and its virtiofs daemons). */
  vmPids?: number[]
  /** True when the supervising process is gone: the record describes an earlier run. */
  stale: boolean
  /** When the supervisor last wrote the file (ms since the epoch): `updated_at`, else the file's mtime. */
  updatedAtMs: number
}

/**
 * Reads the state file of `name`; undefined when there is none or it is not a JSON object.
 * Unknown or mistyped fields are ignored; a timestamp may be ms or ISO text.
 */
export function readWorkerState(projectRoot: string, name: string): WorkerStateView | undefined {
  const path = stateFilePath(projectRoot, name)
  let text: string
  let mtimeMs: number
  try {
    mtimeMs = statSync(path).mtimeMs
    text = readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    // Caught mid-write, or not ours: no information.
    return undefined
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined
  const raw = data as Record<string, unknown>
  const record: WorkerStateView = { stale: false, updatedAtMs: timestamp(raw.updated_at) ?? mtimeMs }
  if (typeof raw.state === 'string' && (WORKER_STATES as readonly string[]).includes(raw.state)) record.state = raw.state as WorkerState
  if (isPid(raw.pid)) record.pid = raw.pid
  if (typeof raw.last_error === 'string' && raw.last_error !== '') record.lastError = raw.last_error
  if (raw.isolation === 'microvm') record.isolation = 'microvm'
  if (Array.isArray(raw.vm_pids)) record.vmPids = raw.vm_pids.filter(isPid).slice(0, 8)
  if (isPid(raw.supervisor_pid)) {
    record.supervisorPid = raw.supervisor_pid
    record.stale = !processAlive(raw.supervisor_pid)
  }
  return record
}

/**
 * The project's workers that run in a microVM (cli.md §5.7), from the supervisor's state files
 * (`.svc/state/workers/*.json`, the source of `svc worker list`): name and host RSS of the VM's
 * pids, bytes. Records of a supervisor that is gone are left out; at most 256 files are read.
 */
export function microvmWorkers(projectRoot: string): Array<{ name: string; vm_rss_bytes: number }> {
  const dir = dirname(stateFilePath(projectRoot, 'x'))
  let files: string[]
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort().slice(0, 256)
  } catch {
    return []
  }
  const found: Array<{ name: string; vm_rss_bytes: number }> = []
  for (const file of files) {
    const name = file.slice(0, -'.json'.length)
    const record = readWorkerState(projectRoot, name)
    if (!record || record.stale || record.isolation !== 'microvm') continue
    found.push({ name, vm_rss_bytes: residentBytes(record.vmPids ?? []) })
  }
  return found
}

/** Sum of VmRSS of `pids` (Linux `/proc/<pid>/status`), bytes; 0 for pids that are gone. */
export function residentBytes(pids: readonly number[]): number {
  let total = 0
  for (const pid of pids) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
      if (m) total += Number(m[1]) * 1024
    } catch {}
  }
  return total
}

function isPid(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0
}

function timestamp(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value
  if (typeof value === 'string') {
    const ms = Date.parse(value)
    if (Number.isFinite(ms)) return ms
  }
  return undefined
}

/** The last `count` lines of a log file (empty when it cannot be read); reads at most the last 64 KiB. */
export function tailLines(path: string, count: number): string[] {
  let text: string
  try {
    const buffer = readFileSync(path)
    text = buffer.subarray(Math.max(0, buffer.length - 65536)).toString('utf8')
  } catch {
    return []
  }
  const lines = text.split(/\r?\n/)
  if (lines.at(-1) === '') lines.pop()
  return lines.slice(-count)
}

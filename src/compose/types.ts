/**
 * Results of the compose daemon's functions (cli.md §4.7). Field names are the wire's.
 */
import type { ErrorBody } from './errors.ts'

/** Container states of cli.md §4.7. */
export type ContainerState = 'starting' | 'ready' | 'restarting' | 'failed' | 'stopped'

/** One container in an {@link OpResult}. */
export interface ContainerResult {
  container: string
  state: ContainerState
  /** True when this operation started, stopped or restarted it. */
  changed: boolean
  pid?: number
  /** Present when `state` is `failed`. */
  error?: ErrorBody
  /** Extra information, e.g. that a built-in's `config` is not applied yet. */
  detail?: string
  /** True when a failed `up` stopped it again (cli.md §4.7: rollback). */
  rolled_back?: boolean
}

/** Result of `compose::up`, `compose::down` and `compose::restart`. */
export interface OpResult {
  /** `op_` and 4 hex digits. */
  operation_id: string
  status: 'ok' | 'failed'
  changed: boolean
  containers: ContainerResult[]
}

/** Result of `compose::add`. */
export interface AddResult {
  status: 'ok' | 'failed'
  container: string
  changed: boolean
  /** `added api (path://./workers/api)` or `already declared`. */
  detail: string
  up: OpResult
}

/** Result of `compose::remove`. */
export interface RemoveResult {
  status: 'ok' | 'failed'
  container: string
  changed: boolean
  down: OpResult
}

/** One container in `compose::status`. */
export interface ContainerStatus {
  container: string
  worker: string
  state: ContainerState
  pid: number | null
  /** ISO 8601 time of the last start, or null. */
  started_at: string | null
  restarts: number
  last_error: ErrorBody | null
  /** `microvm` for a container running in a microVM (cli.md §5.7); absent for a process. */
  isolation?: 'microvm'
  /** Host RSS of its microVM (QEMU and the virtiofs daemons) in bytes, read when asked. */
  vm_rss_bytes?: number
}

/** Result of `compose::status`. */
export interface StatusResult {
  namespace: string
  /** The file as named in messages (relative to the daemon's working directory when below it). */
  file: string
  daemon_pid: number
  containers: ContainerStatus[]
}

/** Overall state of a project in `compose::list`: every container ready, some, or none running. */
export type ProjectState = 'up' | 'partial' | 'down' | 'failed'

/** Result of `compose::list`. */
export interface ListResult {
  namespace: string
  daemon_pid: number
  projects: Array<{ file: string; containers: string[]; state: ProjectState }>
}

/** Result of `compose::validate`. */
export interface ValidateResult {
  valid: true
  namespace: string
  start_order: string[]
}

export type { WorkerSummary } from 'svc-protocol'

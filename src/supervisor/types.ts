/**
 * Contracts of the worker supervisor (cli.md §5): how `svc` (config.yaml `worker_path` entries) and
 * the compose daemon (path containers) install, start, watch and restart local workers.
 * Implementation: `supervisor.ts`; manifests: `manifest.ts`; KVM check: `kvm.ts`.
 */
import type { EventEmitter } from 'node:events'

/** Supervisor states (cli.md §4.5, §5.3–§5.5). */
export type WorkerState =
  | 'declared'
  | 'installing'
  | 'starting'
  | 'running'
  | 'restarting'
  | 'crashed'
  | 'stopped'
  | 'failed'

/** A validated `svc.worker.yaml` (cli.md §2.2), or what detection inferred for a directory. */
export interface WorkerManifest {
  name: string
  description?: string
  runtime: {
    kind?: 'typescript' | 'javascript' | 'bun' | 'python' | 'rust'
    package_manager?: 'npm' | 'pnpm' | 'yarn' | 'bun'
    entry?: string
    base_image?: string
  }
  scripts: { setup?: string; install?: string; start: string }
  env: Record<string, string>
  isolation: 'process' | 'microvm'
  resources?: { cpus?: number; memory_mib?: number }
  watch: { enabled: boolean; ignore: string[] }
  /** Absolute path of the manifest file; undefined when the directory was detected. */
  file?: string
}

/** Everything needed to run one local worker. */
export interface WorkerSpec {
  /** Config entry name or compose container key; exported as SVC_WORKER_NAME. */
  name: string
  /** Absolute worker directory (or compose `working_dir`). */
  directory: string
  /** Exported as SVC_NAMESPACE; default `default`. */
  namespace: string
  /** Exported as SVC_URL (and III_URL). */
  engineUrl: string
  /** Exported as SVC_PROJECT_ROOT; `.svc/` lives here. */
  projectRoot: string
  /**
   * Environment layering (cli.md §5.2): `engine` = the engine's environment, then manifest env, then
   * `env`, then reserved variables; `compose` = the baseline variables, then `env` (env_file and
   * environment, already merged by compose), then manifest env, then reserved variables.
   */
  envBase: 'engine' | 'compose'
  env: Record<string, string>
  /** Exported as JSON in SVC_WORKER_CONFIG when present. */
  config?: unknown
  /** Entry/container value; wins over the manifest's (cli.md §5.7). */
  isolation?: 'process' | 'microvm'
  /** False disables watching (entry/container `watch: false`, `svc --no-watch`). */
  watch: boolean
  /** Replaces the manifest's start command (compose `scripts.run`). */
  startCommand?: string
  /** Compose `scripts.pre_run`, run before each start; must exit 0 within `timeoutMs`. */
  preRun?: { command: string; timeoutMs: number }
  /** Compose `scripts.post_run`, run after each stop. */
  postRun?: string
  /** SIGTERM → SIGKILL delay, ms (default 5000; compose `stop_timeout`). */
  stopTimeoutMs?: number
  /** Log file, default `<projectRoot>/.svc/logs/<name>.log`. */
  logFile?: string
  /** Supervisor state file, default `<projectRoot>/.svc/state/workers/<name>.json`. */
  stateFile?: string
  /**
   * True once the worker appears in the engine under its name and namespace; polled every 200 ms
   * while `starting` to move to `running` (cli.md §5.3).
   */
  isRegistered: () => boolean | Promise<boolean>
}

export interface OutputLine {
  worker: string
  stream: 'stdout' | 'stderr'
  text: string
}

/**
 * One supervised worker. Events: `state` (state: WorkerState, detail?: string) on every transition,
 * `output` (line: OutputLine) for every line the process prints.
 */
export interface SupervisedWorker extends EventEmitter {
  readonly name: string
  readonly state: WorkerState
  readonly pid: number | undefined
  /** The error that put the worker in `failed` or `crashed`, or the last exit description. */
  readonly lastError: string | undefined
  /** Validates the manifest, installs when needed, starts the process and the watcher. */
  start(): Promise<void>
  /** Stops watching and the process (SIGTERM to the group, then SIGKILL after the stop timeout). */
  stop(): Promise<void>
  /** Stop then start (state `restarting`). */
  restart(): Promise<void>
  /** Resolves when the worker reaches `running`; rejects when it fails, crashes or exits first, or after `timeoutMs`. */
  waitUntilRunning(timeoutMs: number): Promise<void>
}

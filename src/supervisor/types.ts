/**
 * Contracts of the worker supervisor (cli.md §5): how `svc` (config.yaml `worker_path` entries) and
 * the compose daemon (path containers) install, start, watch and restart local workers.
 * Implementation: `supervisor.ts`; manifests: `manifest.ts`; usable-KVM probe: `microvm/probe.ts`.
 */
import type { EventEmitter } from 'node:events'
import type { Logger } from '../../runtime/index.ts'
import type { RestartPolicy } from './crash-policy.ts'

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
  /**
   * `build` (svc's addition for compiled workers, issue 18): runs before every start that follows a
   * change, after `install` when that ran with another command; the running process keeps serving
   * meanwhile and stays when it fails.
   */
  scripts: { setup?: string; install?: string; build?: string; start: string }
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
  /**
   * Absolute paths the watcher ignores with everything below them, besides those of §5.4: other
   * workers' directories inside this one (a worker at the project root), the engine's data
   * directory and settings directory. Called for every path the watcher sees, so it reflects
   * config.yaml reloads; keep it cheap.
   */
  ignoredPaths?: () => readonly string[]
  /** Replaces the manifest's start command (compose `scripts.run`). */
  startCommand?: string
  /** True for svc's own processes (the console): nothing to install, so no "no install step" warning. */
  noInstall?: boolean
  /** Compose `scripts.pre_run`, run before each start; must exit 0 within `timeoutMs`. */
  preRun?: { command: string; timeoutMs: number }
  /** Compose `scripts.post_run`, run after each stop. */
  postRun?: string
  /**
   * After an unrequested exit (default `on-failure`, cli.md §5.5): `on-failure` restarts after a
   * non-zero exit or a signal, `always` after exit 0 too, `never` never (state `stopped` after exit 0,
   * `failed` otherwise). Compose container key `restart`.
   */
  restartPolicy?: RestartPolicy
  /**
   * Restarts counted before this supervisor: the orchestrator relaunched a worker of this name
   * (a config.yaml change, `compose::restart`, a daemon that re-adopted it). `restarts` and the
   * state file count on from here. Default 0.
   */
  restarts?: number
  /** SIGTERM → SIGKILL delay, ms (default 5000; compose `stop_timeout`). */
  stopTimeoutMs?: number
  /** Log file, default `<projectRoot>/.svc/logs/<name>.log`. */
  logFile?: string
  /** Supervisor state file, default `<projectRoot>/.svc/state/workers/<name>.json`. */
  stateFile?: string
  /**
   * True once the worker appears in the engine under its name and namespace; polled every 200 ms
   * while `starting` to move to `running` (cli.md §5.3). `probe` describes the process being
   * started, so a connection older than `probe.startedAtMs` (the previous process, not yet
   * disconnected) need not count.
   */
  isRegistered: (probe: RegistrationProbe) => boolean | Promise<boolean>
  /**
   * Present when the engine says when a registration may have changed (`svc`'s in-process engine,
   * `Engine.watchRegistrations`): calls `onChange` after each such change until the returned
   * function is called. While `starting`, the supervisor then checks {@link isRegistered} on each
   * change (once per burst) and polls only every `registrationFallbackPollMs`; without it, every
   * `registrationPollMs`.
   */
  watchRegistrations?: (onChange: () => void) => () => void
  /**
   * Set to reload without a gap (issue 21; cli.md §5.4 refined): on a change, a new process starts
   * while the registered one keeps serving; once the new one registers ({@link isRegistered}),
   * `drain` is called for the previous one and the previous process is stopped (§5.1: SIGTERM,
   * then SIGKILL after the stop timeout) when it resolves. It should tell the engine the previous
   * process's connections are draining (new calls go to the new one) and resolve once they execute
   * no invocation, or after `graceMs` (ms), or when `signal` aborts (svc stops the worker). A new
   * process that exits before it registers leaves the previous one serving. Without `drain`, a
   * change stops the process first, then starts the new one (the console; an engine without
   * `engine::workers::drain`).
   */
  drain?: (previous: RegistrationProbe, next: RegistrationProbe, options: { graceMs: number; signal: AbortSignal }) => Promise<void>
}

/** The process a {@link WorkerSpec.isRegistered} poll is about. */
export interface RegistrationProbe {
  /** Pid of the process group leader (the shell running the start command). */
  pid: number | undefined
  /** `Date.now()` just before the start command was spawned. */
  startedAtMs: number
}

/** Options of `superviseWorker`. */
export interface SupervisorOptions {
  /** Transitions and warnings (`math-worker exited with code 1; restarting in 2 s (2/5)`). */
  log: Logger
  /** Overrides of the timings of cli.md §5.3–§5.5 (tests; default `SUPERVISOR_TIMINGS`). */
  timings?: Partial<SupervisorTimings>
}

/** Timings of the supervisor, in ms (defaults in `SUPERVISOR_TIMINGS`, supervisor.ts). */
export interface SupervisorTimings {
  /** Quiet time after the last change of a burst before one action runs (§5.4: 500). */
  debounceMs: number
  /** Registration poll while `starting` (§5.3: 200). */
  registrationPollMs: number
  /**
   * Registration poll while `starting` when the engine reports changes
   * (`WorkerSpec.watchRegistrations`): what no event announces — a reload's new process that has
   * been connected `REGISTRATION_SETTLE_MS` without a function the old one holds, the note after
   * `registrationNoteMs` (1000).
   */
  registrationFallbackPollMs: number
  /** First crash-restart delay, doubled per consecutive crash up to `backoffMaxMs` (§5.5: 1000, 30000). */
  backoffStartMs: number
  backoffMaxMs: number
  /** Unrequested exits counted in this window; `crashLimit` of them make the worker `crashed` (§5.5: 60000, 5). */
  crashWindowMs: number
  crashLimit: number
  /** A process that ran this long before exiting starts the backoff over (60000). */
  healthyRunMs: number
  /** Default SIGTERM → SIGKILL delay (§5.1: 5000); `WorkerSpec.stopTimeoutMs` wins. */
  stopTimeoutMs: number
  /** Upper bound for `post_run`, which has no timeout of its own (60000). */
  postRunTimeoutMs: number
  /**
   * When a worker that has not registered gets a note saying what it must do (15000); a microVM
   * worker gets `REGISTRATION_NOTE_FACTOR` times as long (microvm/launcher.ts: 2× with KVM, 8× under TCG).
   */
  registrationNoteMs: number
  /**
   * How long a process replaced by a reload may take to finish its calls before it is stopped
   * (10000; {@link WorkerSpec.drain}).
   */
  drainGraceMs: number
}

/**
 * Why a worker is `failed` or `crashed`. Codes: `INVALID_MANIFEST`, `NO_START_SCRIPT`,
 * `UNKNOWN_WORKER` (manifest.ts), `KVM_NOT_ACCESSIBLE` (the usable-KVM probe, cli.md §5.7),
 * `INVALID_ARGUMENT` (a `SVC_MICROVM_ACCEL` other than `kvm`/`tcg`), `MICROVM_RUNTIME_NOT_FOUND` (no QEMU or
 * virtiofsd), `MICROVM_SETUP_FAILED` (the guest assets could not be fetched or built), `MICROVM_BOOT_FAILED`,
 * `RESERVED_ENV_OVERRIDE` (compose env, §5.2), `SETUP_FAILED`, `INSTALL_FAILED` (§5.3),
 * `BUILD_FAILED` (`scripts.build` failed with no previous build running), `PRE_RUN_FAILED` (compose `pre_run`), `SPAWN_FAILED` (the shell could not be started),
 * `CRASHED` (§5.5), `STARTUP_FAILED` (exited before registering the same way twice in a row).
 */
export interface SupervisorFailure {
  code: string
  message: string
  hint?: string
}

/** Payload of the `exit` event: the worker process ended. */
export interface WorkerExit {
  /** Exit code, null when killed by a signal. */
  code: number | null
  signal: NodeJS.Signals | null
  /** True when svc stopped it (stop, restart, file change). */
  requested: boolean
}

/**
 * Content of `.svc/state/workers/<name>.json` (JSON, written on every transition): what
 * `svc worker list` reads, and the install/setup records of cli.md §5.3. Fields may be added.
 */
export interface WorkerStateRecord {
  name: string
  namespace: string
  directory: string
  state: WorkerState
  /** Pid of the worker's process group leader while it runs, else null. */
  pid: number | null
  /** Pid of the svc process supervising it; the record is stale when that process is gone. */
  supervisor_pid: number
  /** ISO time the current process started, else null. */
  started_at: string | null
  /** Restarts since the worker was first launched (crash restarts, file-change restarts, restart requests). */
  restarts: number
  last_error: string | null
  last_error_code: string | null
  updated_at: string
  /** `microvm` while the worker's processes run in a microVM (cli.md §5.7); absent for a process worker. */
  isolation?: 'microvm'
  /** Host pids of the worker's microVM (QEMU first, then its virtiofs daemons), for the host RSS `svc worker list` shows. */
  vm_pids?: number[]
  /** `scripts.setup` text that last succeeded (setup runs again only when it changes). */
  setup_command?: string
  /** `scripts.install` text and dependency-manifest hash after the last successful install. */
  install_command?: string
  install_hash?: string
  installed_at?: string
}

/** What printed a line: the worker process (`run`) or one of the steps around it. */
export type OutputPhase = 'run' | 'setup' | 'install' | 'build' | 'pre_run' | 'post_run'

export interface OutputLine {
  worker: string
  stream: 'stdout' | 'stderr'
  text: string
  /** Which command printed it; `install`, `setup` and `build` output is folded on the svc console (issue 11). */
  phase?: OutputPhase
}

/**
 * One supervised worker. Events: `state` (state: WorkerState, detail?: string) on every transition,
 * `output` (line: OutputLine) for every line the process prints (setup, install and hooks too),
 * `exit` (exit: WorkerExit) whenever the worker process ends.
 */
export interface SupervisedWorker extends EventEmitter {
  readonly name: string
  readonly state: WorkerState
  readonly pid: number | undefined
  /** The error that put the worker in `failed` or `crashed`, or the last exit description. */
  readonly lastError: string | undefined
  /** Code and hint of the error that put the worker in `failed` or `crashed`; undefined otherwise. */
  readonly failure: SupervisorFailure | undefined
  /** The manifest in use (undefined until read, or when it is invalid). */
  readonly manifest: WorkerManifest | undefined
  /**
   * Restarts since the worker was first launched (crash restarts, file-change restarts, `restart()`;
   * from `WorkerSpec.restarts` on).
   */
  readonly restarts: number
  /** When the current process started. */
  readonly startedAt: Date | undefined
  /**
   * Host RSS of the worker's microVM in bytes (QEMU and its virtiofs daemons, `/proc/<pid>/status`
   * VmRSS, read when asked; 0 before it boots); undefined for a process worker (cli.md §5.7).
   * Optional for stand-ins.
   */
  readonly vmRssBytes?: number | undefined
  /** Validates the manifest, installs when needed, starts the process and the watcher. */
  start(): Promise<void>
  /** Stops watching and the process (SIGTERM to the group, then SIGKILL after the stop timeout). */
  stop(): Promise<void>
  /** Stop then start (state `restarting`). */
  restart(): Promise<void>
  /**
   * Resolves when the worker reaches `running`; rejects when it fails, crashes or exits first, or
   * after `timeoutMs`. The rejection is a `SupervisorError` whose `code` is the failure's code,
   * `CHILD_EXITED_BEFORE_REGISTRATION`, `STARTUP_TIMEOUT` or `STOPPED`.
   */
  waitUntilRunning(timeoutMs: number): Promise<void>
}

/** Who a launched worker registers as with the engine (cli.md §5.3). */
export interface Registrant {
  /** The announced name: the entry or container name, or `svc-console` for the console. */
  name: string
  namespace: string
  /**
   * True when a connection announcing the started process's pid counts too (an engine that lists
   * connections, compose); false when the announce carries another pid (the console, which the
   * launcher may re-run under another Node).
   */
  byPid: boolean
}

/**
 * The engine as the orchestrator needs it: where workers connect, and whether the process a probe
 * describes has registered. `svc` passes its in-process engine (`inProcessEngine`), the compose
 * daemon one it reaches over its connection (`listedEngine`); see `engine-view.ts`.
 */
export interface EngineView {
  /** The worker WebSocket URL, exported to workers as SVC_URL. */
  readonly url: string
  /** True once the process `probe` describes registered as `who` (cli.md §5.3). Must not throw. */
  isRegistered(who: Registrant, probe: RegistrationProbe): boolean | Promise<boolean>
  /**
   * Present when the engine can send new calls away from a process (issue 21): `WorkerSpec.drain`
   * of every worker launched with `overlap` not false. Without it, a reload stops the process first.
   */
  drain?(who: Registrant, previous: RegistrationProbe, next: RegistrationProbe, options: { graceMs: number; signal: AbortSignal }): Promise<void>
  /**
   * Present when the engine reports registration changes as they happen (`svc`'s in-process
   * engine): `WorkerSpec.watchRegistrations` of every worker launched.
   */
  watchRegistrations?(onChange: () => void): () => void
}

/**
 * A worker as `svc` and `svc compose` hand it to the orchestrator: a {@link WorkerSpec} without
 * what the orchestrator fills in from its {@link EngineView} (the URL, the registration check, the
 * drain) and the restart count it carries across launches of the same name.
 */
export type WorkerLaunch = Omit<WorkerSpec, 'engineUrl' | 'isRegistered' | 'watchRegistrations' | 'drain' | 'restarts'> & {
  /** Default `{ name, namespace, byPid: true }`. */
  registersAs?: Registrant
  /**
   * False: a reload stops the process before starting the next one, even where the engine view can
   * drain (the console, which would find its port taken). Default true.
   */
  overlap?: boolean
}

/** `superviseWorker`, or a stand-in (tests). */
export type Supervise = (spec: WorkerSpec, options: SupervisorOptions) => SupervisedWorker

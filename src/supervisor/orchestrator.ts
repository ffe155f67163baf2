/**
 * The one orchestrator of worker processes (issue 21): `svc` (src/lib/start.ts: config.yaml's local
 * workers and console, one engine in-process) and the compose daemon (src/compose/runner.ts: path
 * containers and `builtin://console`) launch, restart, stop and reap workers through it. Each
 * worker runs under a supervisor (`supervisor.ts`: install, start, watch, reload beside the serving
 * process, the crash policy of `crash-policy.ts`, log capture); the two commands differ only in the
 * {@link EngineView} they pass and in how they present the workers' events.
 */
import type { Logger } from '../../runtime/index.ts'
import { processAlive } from '../lib/processes.ts'
import { isSignalTarget, stopPid } from './process.ts'
import { superviseWorker } from './supervisor.ts'
import type { EngineView, Supervise, SupervisedWorker, SupervisorTimings, WorkerLaunch, WorkerSpec } from './types.ts'

/** Options of an {@link Orchestrator}. */
export interface OrchestratorOptions {
  /** The engine the workers connect to and register with. */
  engine: EngineView
  /** Supervisor transitions and warnings (`math-worker exited with code 1; restarting in 2 s (2/5)`). */
  log: Logger
  /** Overrides of the supervisor's timings (tests; default `SUPERVISOR_TIMINGS`). */
  timings?: Partial<SupervisorTimings>
  /** Default `superviseWorker`. */
  supervise?: Supervise
}

/** A process a previous compose daemon started, taken over after a restart (cli.md §4.7). */
interface Adopted {
  pid: number
  timer: NodeJS.Timeout
}

/** How often an adopted process is checked for being alive (ms). */
const ADOPTED_POLL_MS = 1000

/**
 * The workers of one `svc` or one compose daemon, by name. A name runs at most one worker at a
 * time; its restart count carries over to the next launch of the same name (`WorkerSpec.restarts`),
 * so `svc worker list` and `compose::status` count restarts the same way whatever caused them.
 *
 * @example
 * const orchestrator = new Orchestrator({ engine: inProcessEngine(engine, url, log), log })
 * const worker = orchestrator.launch({ name: 'math-worker', directory, namespace: 'default',
 *   projectRoot, envBase: 'engine', env: {}, watch: true })
 * worker.on('output', (line) => print(line))
 * await worker.start()
 * await orchestrator.stopAll()
 */
export class Orchestrator {
  readonly #engine: EngineView
  readonly #log: Logger
  readonly #timings: Partial<SupervisorTimings> | undefined
  readonly #supervise: Supervise
  readonly #workers = new Map<string, SupervisedWorker>()
  readonly #adopted = new Map<string, Adopted>()
  /** Restarts of workers that are no longer launched, by name. */
  readonly #restarts = new Map<string, number>()

  constructor(options: OrchestratorOptions) {
    this.#engine = options.engine
    this.#log = options.log
    this.#timings = options.timings
    this.#supervise = options.supervise ?? superviseWorker
  }

  /** The engine's worker URL (SVC_URL of every worker). */
  get engineUrl(): string {
    return this.#engine.url
  }

  /**
   * Creates the supervised worker of `launch` (not started: call its `start()`), registered by
   * `launch.registersAs` through the engine view, drained on reloads where the view can drain and
   * `launch.overlap` is not false.
   *
   * @throws {Error} when a worker of that name is launched or adopted (stop it first)
   */
  launch(launch: WorkerLaunch): SupervisedWorker {
    const { registersAs, overlap, ...rest } = launch
    if (this.#workers.has(launch.name) || this.#adopted.has(launch.name)) throw new Error(`${launch.name} is already launched; stop it first`)
    const who = registersAs ?? { name: launch.name, namespace: launch.namespace, byPid: true }
    const engine = this.#engine
    const spec: WorkerSpec = {
      ...rest,
      engineUrl: engine.url,
      restarts: this.#restarts.get(launch.name) ?? 0,
      isRegistered: (probe) => engine.isRegistered(who, probe),
    }
    const watch = engine.watchRegistrations
    if (watch) spec.watchRegistrations = (onChange) => watch.call(engine, onChange)
    const drain = engine.drain
    if (drain && overlap !== false) spec.drain = (previous, next, options) => drain.call(engine, who, previous, next, options)
    const worker = this.#supervise(spec, this.#timings ? { log: this.#log, timings: this.#timings } : { log: this.#log })
    this.#workers.set(launch.name, worker)
    this.#restarts.delete(launch.name)
    return worker
  }

  /** The launched worker of that name. */
  get(name: string): SupervisedWorker | undefined {
    return this.#workers.get(name)
  }

  /** Every launched worker, in launch order. */
  get workers(): SupervisedWorker[] {
    return [...this.#workers.values()]
  }

  /** Restarts of the worker of that name since it was first launched (or adopted); 0 for an unknown name. */
  restarts(name: string): number {
    return this.#workers.get(name)?.restarts ?? this.#restarts.get(name) ?? 0
  }

  /**
   * Gives the worker a new process (state `restarting`; its crash window starts over). False when
   * no worker of that name is launched (an adopted process is not restarted: launch it anew).
   */
  async restart(name: string): Promise<boolean> {
    const worker = this.#workers.get(name)
    if (!worker) return false
    await worker.restart()
    return true
  }

  /**
   * Stops the worker of that name and forgets it, keeping its restart count for the next launch:
   * a supervised worker stops as `SupervisedWorker.stop` does (SIGTERM to its process group, SIGKILL
   * after its stop timeout, hooks, microVM power-off) and its listeners are removed; an adopted
   * process gets SIGTERM, then SIGKILL after `adoptedStopTimeoutMs` (ms, default 5000). Resolves
   * when it is gone; nothing happens for an unknown name.
   */
  async stop(name: string, adoptedStopTimeoutMs = 5000): Promise<void> {
    const adopted = this.#adopted.get(name)
    if (adopted) {
      this.#adopted.delete(name)
      clearInterval(adopted.timer)
      if (await stopPid(adopted.pid, adoptedStopTimeoutMs)) this.#log.warn(`${name} (pid ${adopted.pid}) did not stop within ${adoptedStopTimeoutMs} ms; killed it (SIGKILL)`)
    }
    const worker = this.#workers.get(name)
    if (!worker) return
    try {
      await worker.stop()
    } finally {
      if (this.#workers.get(name) === worker) {
        this.#workers.delete(name)
        this.#restarts.set(name, worker.restarts)
      }
      worker.removeAllListeners('output')
      worker.removeAllListeners('state')
      worker.removeAllListeners('exit')
    }
  }

  /** Stops every worker and adopted process at once; a failure is logged, the others still stop. */
  async stopAll(): Promise<void> {
    const names = [...new Set([...this.#workers.keys(), ...this.#adopted.keys()])]
    await Promise.all(names.map((name) => this.stop(name).catch((err: unknown) => this.#log.error(`${name}: ${(err as Error).message}`))))
  }

  /**
   * Takes over `pid`, a worker process a previous compose daemon started (cli.md §4.7): it can be
   * stopped ({@link stop}) but is not restarted; `onExit` is called once if it exits on its own
   * (checked every second). `restarts` is its count so far.
   *
   * @throws {Error} when a worker of that name is launched or adopted, or when `pid` is no
   *   `isSignalTarget` (0, 1, negative: stopping it would signal svc's own group or every process)
   */
  adopt(name: string, pid: number, options: { restarts: number; onExit: () => void }): void {
    if (!isSignalTarget(pid)) throw new Error(`${name}: ${String(pid)} is not a pid svc can adopt`)
    if (this.#workers.has(name) || this.#adopted.has(name)) throw new Error(`${name} is already launched; stop it first`)
    this.#restarts.set(name, options.restarts)
    const timer = setInterval(() => {
      if (processAlive(pid)) return
      clearInterval(timer)
      if (this.#adopted.get(name)?.timer !== timer) return
      this.#adopted.delete(name)
      options.onExit()
    }, ADOPTED_POLL_MS)
    timer.unref()
    this.#adopted.set(name, { pid, timer })
  }

  /** True while `name` is an adopted process. */
  isAdopted(name: string): boolean {
    return this.#adopted.has(name)
  }

  /**
   * Resolves once no launched worker is `declared`, `starting` or `restarting`, or after
   * `timeoutMs` (ms), whichever is first (svc's banner waits for this).
   */
  settled(timeoutMs: number): Promise<void> {
    const workers = this.workers
    const busy = () => workers.some((w) => w.state === 'declared' || w.state === 'starting' || w.state === 'restarting')
    if (!busy()) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        for (const w of workers) w.off('state', check)
        resolve()
      }
      const check = () => {
        if (!busy()) done()
      }
      const timer = setTimeout(done, timeoutMs)
      for (const w of workers) w.on('state', check)
    })
  }
}

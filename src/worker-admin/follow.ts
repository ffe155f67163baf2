/**
 * Following a worker the engine is starting until it registers (cli.md §4.2 step 5, §5.3, §6
 * Readiness): the supervisor's state file says whether it is installing or starting and its pid;
 * `engine::workers::list` says when it has registered.
 */
import { CliError, ExitCode } from '../lib/errors.ts'
import type { WorkerState } from '../supervisor/types.ts'
import type { EngineSession, EngineWorker } from './engine.ts'
import type { StepRunner } from './progress.ts'
import { readWorkerState, tailLines } from './state-files.ts'

/** Poll interval of the readiness wait, ms (cli.md §5.3 polls registration every 200 ms). */
export const POLL_INTERVAL_MS = 200

/** Lines of worker output shown when it fails before registering (cli.md §4.2). */
export const FAILURE_TAIL_LINES = 20

export interface FollowOptions {
  session: EngineSession
  projectRoot: string
  name: string
  /** Namespace the worker registers in (entry `namespace`, default `default`). */
  namespace: string
  /** How long to wait for registration, ms (`--timeout`, default 120 s). */
  timeoutMs: number
  /** When config.yaml was written (ms since the epoch): state records older than this are an earlier run's. */
  since: number
  /** The log file as shown to the user (`.svc/logs/math-worker.log`). */
  logLabel: string
  /** Absolute path of the log file, for the failure tail. */
  logPath: string
  /** Install command from the manifest, shown in the install step. */
  installCommand?: string | undefined
  pollMs?: number
}

/** One look at the worker. */
export interface Observation {
  /** Supervisor state from a current state record; undefined before the supervisor wrote one. */
  state?: WorkerState
  pid?: number
  lastError?: string
  /** The engine's entry for the worker once it has registered. */
  registered?: EngineWorker
}

/** Where the worker got to: the fields of the `--json` result. */
export interface FollowOutcome {
  state: WorkerState
  pid?: number
  functions: string[]
  /** From writing config.yaml to registration, ms. */
  readyMs: number
}

/** States in which a worker that has not registered will not register without a change. */
const DEAD_STATES: readonly WorkerState[] = ['failed', 'crashed', 'stopped']

/** Polls the state file and the engine for one worker. */
export class WorkerFollower {
  private readonly options: FollowOptions
  private readonly deadline: number
  private last: Observation = {}
  private sawInstall = false

  constructor(options: FollowOptions) {
    this.options = options
    this.deadline = performance.now() + options.timeoutMs
  }

  /** The latest observation. */
  get current(): Observation {
    return this.last
  }

  /** Reads the state file and asks the engine once. */
  async observe(): Promise<Observation> {
    const { projectRoot, name, namespace, since, session } = this.options
    const observation: Observation = {}
    const record = readWorkerState(projectRoot, name)
    if (record && !record.stale && record.updatedAtMs >= since - 100) {
      if (record.state !== undefined) observation.state = record.state
      if (record.pid !== undefined) observation.pid = record.pid
      if (record.lastError !== undefined) observation.lastError = record.lastError
    }
    const listed = (await session.listWorkers({ namespace })).filter((w) => w.name === name && w.namespace === namespace)
    const newest = listed.sort((a, b) => b.connected_at_ms - a.connected_at_ms)[0]
    if (newest) observation.registered = newest
    if (observation.state === 'installing') this.sawInstall = true
    this.last = observation
    return observation
  }

  /**
   * Polls until `done(observation)` holds.
   *
   * @throws {CliError} exit 1 when the worker fails, crashes or stops before registering (with the
   *   last lines of its log); exit 4 `<name> did not register within <s> s (state: <state>). See <log>`
   *   when the timeout passes; exit 3 when the engine goes away
   */
  async until(done: (observation: Observation) => boolean): Promise<Observation> {
    for (;;) {
      const observation = await this.observe()
      if (done(observation)) return observation
      if (!observation.registered && observation.state !== undefined && (DEAD_STATES.includes(observation.state) || this.exitedBeforeRegistering(observation))) {
        // The supervisor writes the state before the log file has the process's last lines.
        await sleep(250)
        throw this.failure(observation)
      }
      if (performance.now() >= this.deadline) throw this.timeout(observation)
      await sleep(Math.min(this.options.pollMs ?? POLL_INTERVAL_MS, Math.max(0, this.deadline - performance.now())))
    }
  }

  /**
   * The functions of the registered worker, once their number has stopped changing between two
   * polls (a worker may register functions just after it announces itself), at most 5 polls.
   */
  async functions(): Promise<string[]> {
    const { session, name, namespace } = this.options
    let previous: string[] | undefined
    for (let attempt = 0; attempt < 5; attempt++) {
      const ids = (await session.listFunctions({ worker: name, namespace })).map((f) => f.function_id).sort()
      if (previous !== undefined && ids.length === previous.length) return ids
      previous = ids
      await sleep(this.options.pollMs ?? POLL_INTERVAL_MS)
    }
    return previous ?? []
  }

  /**
   * cli.md §4.2: a worker that exits before registering is a failure of `svc worker add`, even
   * though svc restarts it. A crash restart is `restarting` with no process; a restart for a file
   * change still has one.
   */
  private exitedBeforeRegistering(observation: Observation): boolean {
    return observation.state === 'restarting' && observation.pid === undefined && observation.lastError !== undefined
  }

  private failure(observation: Observation): CliError {
    const { name, logLabel, logPath } = this.options
    const what =
      observation.state === 'failed' && this.sawInstall && observation.pid === undefined
        ? 'failed to install'
        : this.exitedBeforeRegistering(observation)
          ? 'exited before registering'
          : `${observation.state} before registering`
    const tail = tailLines(logPath, FAILURE_TAIL_LINES)
    return new CliError({
      code: 'WORKER_FAILED',
      message: `${name} ${what}${observation.lastError ? ` (${observation.lastError})` : ''}`,
      exitCode: ExitCode.Failure,
      details: tail.length > 0 ? `Last ${tail.length} lines of ${logLabel}:\n${tail.join('\n')}` : `${logLabel} is empty`,
      hint: `see ${logLabel}`,
    })
  }

  private timeout(observation: Observation): CliError {
    const { name, logLabel, timeoutMs } = this.options
    return new CliError({
      code: 'TIMEOUT',
      message: `${name} did not register within ${formatSeconds(timeoutMs)} s (state: ${observation.state ?? 'declared'}). See ${logLabel}`,
      exitCode: ExitCode.Timeout,
    })
  }
}

/**
 * Follows the worker through the steps of cli.md §4.2 (declared, installing, started, registered),
 * one progress step each, and returns where it got to.
 *
 * @throws {CliError} as {@link WorkerFollower.until}
 * @example
 * const outcome = await followWorker(new WorkerFollower(options), createStepRunner('plain'))
 */
export async function followWorker(follower: WorkerFollower, steps: StepRunner, options: Pick<FollowOptions, 'name' | 'since' | 'installCommand'>): Promise<FollowOutcome> {
  await steps(`Declared ${options.name} in config.yaml`)
  let seen = await follower.until((o) => o.registered !== undefined || (o.state !== undefined && o.state !== 'declared'))
  if (seen.state === 'installing' && !seen.registered) {
    const command = options.installCommand
    await steps(`Installing dependencies${command ? ` (${command})` : ''}`, async () => {
      const started = performance.now()
      seen = await follower.until((o) => o.registered !== undefined || o.state !== 'installing')
      return `Installed dependencies (${command ? `${command}, ` : ''}${formatSeconds(performance.now() - started)} s)`
    })
  }
  await steps('Starting', async () => {
    seen = await follower.until((o) => o.registered !== undefined || (o.pid !== undefined && (o.state === 'starting' || o.state === 'running')))
    const pid = seen.pid ?? seen.registered?.pid ?? undefined
    return pid === undefined ? 'Started' : `Started (pid ${pid})`
  })
  let functions: string[] = []
  await steps('Registering with the engine', async () => {
    seen = await follower.until((o) => o.registered !== undefined)
    functions = await follower.functions()
    return `Registered with the engine: ${functions.length > 0 ? functions.join(', ') : '(no functions yet)'}`
  })
  const outcome: FollowOutcome = { state: 'running', functions, readyMs: Math.max(0, Date.now() - options.since) }
  const pid = seen.pid ?? seen.registered?.pid ?? undefined
  if (pid !== undefined) outcome.pid = pid
  return outcome
}

/** `120`, `8.4`, `0.5`: seconds with at most one decimal. */
export function formatSeconds(ms: number): string {
  return String(Math.round(ms / 100) / 10)
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

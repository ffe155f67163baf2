/**
 * The crash policy of cli.md §5.5, as decisions without processes or timers: what an unrequested
 * exit leads to under a restart policy, and when a run of crashes makes a worker `crashed`. The
 * supervisor (`supervisor.ts`) acts on these decisions for every worker the orchestrator runs, so
 * `svc` and `svc compose` restart and give up the same way.
 */

/** After an unrequested exit (cli.md §5.5; compose container key `restart`). */
export type RestartPolicy = 'always' | 'on-failure' | 'never'

/** How an unrequested exit ended, as the policy reads it. */
export interface ExitFacts {
  /** Exit code; null when killed by a signal or never started. */
  code: number | null
  /** Set when the start command could not be spawned at all. */
  spawnError?: string | undefined
}

/**
 * What an unrequested exit leads to before the crash window is counted:
 * - `spawn-failed`: the shell never ran; no crash of the worker (`SPAWN_FAILED`, waits for a change)
 * - `given-up`: restart policy `never` and a non-zero exit or a signal (`failed`, code `EXITED`)
 * - `stopped`: exit 0 under `on-failure` or `never` (`stopped`, starts again on the next change)
 * - `crash`: a restart is due; {@link CrashWindow.record} says when, or that the worker crashed
 *
 * @example exitAction('on-failure', { code: 0 }) // 'stopped'
 * @example exitAction('always', { code: 0 }) // 'crash'
 */
export function exitAction(policy: RestartPolicy, exit: ExitFacts): 'spawn-failed' | 'given-up' | 'stopped' | 'crash' {
  if (exit.spawnError !== undefined) return 'spawn-failed'
  if (policy === 'never' && exit.code !== 0) return 'given-up'
  if (exit.code === 0 && policy !== 'always') return 'stopped'
  return 'crash'
}

/** Limits of the crash window, ms and counts (the supervisor's `SupervisorTimings`). */
export interface CrashWindowLimits {
  /** First restart delay, doubled per consecutive quick exit (§5.5: 1000 ms). */
  backoffStartMs: number
  /** The largest delay (§5.5: 30 000 ms). */
  backoffMaxMs: number
  /** Unrequested exits are counted within this window (§5.5: 60 000 ms). */
  crashWindowMs: number
  /** This many exits within the window make the worker `crashed` (§5.5: 5). */
  crashLimit: number
  /** A process that ran at least this long before exiting starts the backoff over (60 000 ms). */
  healthyRunMs: number
}

/** What one more unrequested exit means: a restart after `delayMs`, or `crashed`. */
export type CrashDecision =
  | { crashed: false; delayMs: number; count: number; limit: number }
  | { crashed: true; count: number; limit: number }

/**
 * The sliding window of cli.md §5.5 for one worker: `crashLimit` unrequested exits within
 * `crashWindowMs` make it `crashed`; before that, each restart waits `backoffStartMs`, doubled per
 * consecutive quick exit up to `backoffMaxMs`. A run of `healthyRunMs` or more starts the backoff
 * over; a file change or a requested restart clears everything ({@link reset}).
 *
 * @example
 * const window = new CrashWindow(SUPERVISOR_TIMINGS)
 * window.record(Date.now(), 200) // { crashed: false, delayMs: 1000, count: 1, limit: 5 }
 */
export class CrashWindow {
  readonly #limits: CrashWindowLimits
  /** Times of the exits still inside the window, ms since the epoch. */
  #exits: number[] = []
  /** Consecutive quick exits (drives the backoff). */
  #streak = 0

  constructor(limits: CrashWindowLimits) {
    this.#limits = limits
  }

  /**
   * Counts an unrequested exit at `nowMs` of a process that ran `ranMs`.
   * @returns `crashed` once the window holds `crashLimit` exits, else the delay before the restart (ms)
   */
  record(nowMs: number, ranMs: number): CrashDecision {
    const t = this.#limits
    this.#streak = ranMs >= t.healthyRunMs ? 1 : this.#streak + 1
    this.#exits = this.#exits.filter((at) => nowMs - at < t.crashWindowMs)
    this.#exits.push(nowMs)
    const count = this.#exits.length
    if (count >= t.crashLimit) return { crashed: true, count, limit: t.crashLimit }
    const delayMs = Math.min(t.backoffStartMs * 2 ** (this.#streak - 1), t.backoffMaxMs)
    return { crashed: false, delayMs, count, limit: t.crashLimit }
  }

  /** Forgets every exit (a file change, `restart()`, a new `start()`). */
  reset(): void {
    this.#exits = []
    this.#streak = 0
  }
}

/**
 * Whether every CPU of the machine has other work to run: the signal the Node `ws` transport
 * (`ws.ts`) reads once per turn of the event loop to choose how a turn's frames leave. On a machine
 * with an idle CPU, the first frames of a turn go out at once ({@link FIRST_WRITE_FRAMES} in
 * `ws.ts`) so the peer wakes on that CPU and works while the rest of the turn is built; when every
 * CPU is taken, the woken peer has nowhere to run but in this process's place, so the early write
 * only adds a syscall and a wake-up per turn, and the turn leaves in whole batches instead
 * (issue 20: at 8 calls in flight on a loaded 2-CPU machine, 2 → 16 frames in the first write cut
 * the write syscalls per call by half in caller, engine and callee).
 *
 * Linux: the number of runnable threads in `/proc/loadavg` (its fourth field, `runnable/total`;
 * the reading thread itself is one of them), read when a turn asks and the last reading is
 * {@link SAMPLE_MS} ms old or more (no timer: an idle process reads nothing), and smoothed;
 * contended while the smoothed count of *other* runnable threads is at least the CPUs this process
 * may run on (`os.availableParallelism()`). Elsewhere (no `/proc/loadavg`) never contended: the
 * transport keeps its early write.
 *
 * @example
 * const probe = new CpuContention()
 * if (probe.contended) {
 *   // whole batches
 * }
 */
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'

/** Milliseconds a reading of the runnable count is used for. */
export const SAMPLE_MS = 100
/** Weight of a new reading in the smoothed count (an exponential moving average over readings). */
export const SMOOTHING = 0.25
/** Readings further apart than this many ms start the average afresh (a process idle meanwhile). */
export const STALE_MS = 10 * SAMPLE_MS

/** Reads `/proc/loadavg`; undefined where it does not exist. */
function readLoadavg(): string | undefined {
  try {
    return readFileSync('/proc/loadavg', 'latin1')
  } catch {
    return undefined
  }
}

/** The runnable count of a `/proc/loadavg` text (`0.52 0.58 0.59 3/612 4242`), or undefined. */
export function runnableOf(loadavg: string): number | undefined {
  const field = loadavg.split(' ')[3]
  const slash = field === undefined ? -1 : field.indexOf('/')
  if (slash <= 0) return undefined
  const runnable = Number(field!.slice(0, slash))
  return Number.isInteger(runnable) && runnable >= 0 ? runnable : undefined
}

/** A sampled view of whether the machine's CPUs are all busy with other work. */
export class CpuContention {
  #contended = false
  #smoothed = 0
  /** When the last reading was taken (ms, the injected clock); -Infinity before the first. */
  #readAt = Number.NEGATIVE_INFINITY
  #unavailable = false
  readonly #read: () => string | undefined
  readonly #cpus: number
  readonly #now: () => number

  /**
   * `read`: returns the text of `/proc/loadavg` (undefined: not available, never read again);
   * `cpus`: the CPUs this process may run on; `now`: a clock in ms. All injectable for tests.
   */
  constructor(read: () => string | undefined = readLoadavg, cpus: number = availableParallelism(), now: () => number = performance.now.bind(performance)) {
    this.#read = read
    this.#cpus = Math.max(1, cpus)
    this.#now = now
  }

  /**
   * True while the smoothed count of other runnable threads is at least the number of CPUs. Reads
   * `/proc/loadavg` first when the last reading is {@link SAMPLE_MS} ms old or more (~10 µs).
   */
  get contended(): boolean {
    if (this.#unavailable) return false
    const now = this.#now()
    const age = now - this.#readAt
    if (age >= SAMPLE_MS) this.#sample(now, age >= STALE_MS)
    return this.#contended
  }

  #sample(now: number, fresh: boolean): void {
    this.#readAt = now
    const text = this.#read()
    const runnable = text === undefined ? undefined : runnableOf(text)
    if (runnable === undefined) {
      this.#unavailable = true
      this.#contended = false
      return
    }
    // The thread reading is runnable itself: the others are the rest.
    const others = Math.max(0, runnable - 1)
    this.#smoothed = fresh ? others : this.#smoothed + SMOOTHING * (others - this.#smoothed)
    this.#contended = this.#smoothed >= this.#cpus
  }
}

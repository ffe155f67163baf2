/**
 * Switching a built-in's storage adapter while it serves (builtins.md §2.9): the new adapter is
 * opened first (by the caller), then installed; operations already running, and holders such as
 * a stream client connection (§6.1), finish on the adapter they started on, which is closed once
 * the last of them is done.
 */
import { Errors, SvcError } from 'svc-protocol/errors'
import type { Logger } from '../../engine/types.ts'

/** What every adapter offers to be retired. */
export interface Closable {
  close(): Promise<void>
}

/** One adapter in use, with what still runs on it. */
export interface AdapterSlot<A extends Closable> {
  readonly adapter: A
  /** Equal for two entries that open the same store (`builtin:/path/state.db`, `memory`). */
  readonly identity: string
}

interface Slot<A extends Closable> extends AdapterSlot<A> {
  inFlight: number
  holders: number
  retired: boolean
  closed: boolean
  detach: () => void
}

/**
 * The current adapter of one worker and the replaced ones still in use.
 *
 * @example
 * const slots = new AdapterSlots<StateAdapter>('svc-state', log)
 * slots.install(await openStateAdapter(spec, context), identity, (adapter) => adapter.subscribe(onChange))
 * await slots.run('state::get', (adapter) => adapter.get(scope, key))
 */
export class AdapterSlots<A extends Closable> {
  private slot: Slot<A> | null = null
  private readonly worker: string
  private readonly log: Logger

  /** `worker` names the worker in errors and log lines (`svc-state`). */
  constructor(worker: string, log: Logger) {
    this.worker = worker
    this.log = log
  }

  /** Identity of the current adapter; undefined before the first install and after close. */
  get identity(): string | undefined {
    return this.slot?.identity
  }

  /**
   * The current adapter; null before the first install and after close. For reads that need no
   * pin (a listing); an operation that must finish on the adapter it started on goes through
   * {@link run} or {@link hold}. Compare a held slot with it to learn whether it was replaced.
   */
  get current(): AdapterSlot<A> | null {
    return this.slot
  }

  /**
   * Makes `adapter` current. `attach` (e.g. subscribing to its change feed) runs now and returns
   * what undoes it when the adapter retires. The previous adapter retires: it closes as soon as
   * no operation and no holder uses it.
   */
  install(adapter: A, identity: string, attach?: (adapter: A, slot: AdapterSlot<A>) => () => void): AdapterSlot<A> {
    const slot: Slot<A> = { adapter, identity, inFlight: 0, holders: 0, retired: false, closed: false, detach: () => {} }
    if (attach) slot.detach = attach(adapter, slot)
    const previous = this.slot
    this.slot = slot
    if (previous) void this.retire(previous)
    return slot
  }

  /**
   * Runs one operation on `on` while it is open, else on the current adapter. Errors the worker
   * raised on purpose (`SvcError`) pass through; anything else is an adapter failure.
   * @throws SvcError `STORAGE_ERROR` `<functionId> failed: <reason>`, also when the worker is stopped.
   */
  run<T>(functionId: string, operation: (adapter: A) => Promise<T>, on?: AdapterSlot<A>): Promise<T> {
    const chosen = on as Slot<A> | undefined
    const slot = chosen && !chosen.closed ? chosen : this.slot
    if (!slot) return Promise.reject(Errors.storageError(`${functionId} failed: the ${this.worker} worker is stopped`))
    slot.inFlight++
    // Not an async function: on the path of every queued message and state call, its suspended
    // frame and the promises of its await were garbage per operation, and kept alive while an
    // enqueue waits for its store (with QueueFunctions' layers, 1-2 KB per queued message).
    let pending: Promise<T>
    try {
      pending = operation(slot.adapter)
    } catch (error) {
      this.finished(slot)
      return Promise.reject(adapterFailure(functionId, error))
    }
    if (!(pending instanceof Promise)) pending = Promise.resolve(pending)
    return pending.then(
      (value) => {
        this.finished(slot)
        return value
      },
      (error: unknown) => {
        this.finished(slot)
        throw adapterFailure(functionId, error)
      },
    )
  }

  /** One operation of {@link run} ended: a retired adapter closes once the last one has. */
  private finished(slot: Slot<A>): void {
    slot.inFlight--
    if (slot.retired && slot.inFlight === 0) void this.retire(slot)
  }

  /**
   * Pins an adapter for a holder (a client connection, a delivery): `on` (one the caller started
   * with, e.g. the adapter a message was reserved from), else the current one; null when there is
   * none. Each hold is ended by one {@link release}.
   */
  hold(on?: AdapterSlot<A> | null): AdapterSlot<A> | null {
    const slot = (on ?? this.slot) as Slot<A> | null
    if (slot) slot.holders++
    return slot
  }

  /** Ends a {@link hold}; a retired adapter closes once its last user is gone. */
  release(held: AdapterSlot<A> | null): void {
    const slot = held as Slot<A> | null
    if (!slot) return
    slot.holders--
    if (slot.retired) void this.retire(slot)
  }

  /** Retires the current adapter without a successor, ignoring holders (their transport is gone). */
  async close(): Promise<void> {
    const slot = this.slot
    this.slot = null
    if (!slot) return
    slot.holders = 0
    await this.retire(slot)
  }

  private async retire(slot: Slot<A>): Promise<void> {
    slot.retired = true
    if (slot.inFlight > 0 || slot.holders > 0 || slot.closed) return
    slot.closed = true
    slot.detach()
    try {
      await slot.adapter.close()
    } catch (error) {
      this.log.warn(`${this.worker}: closing the old adapter failed`, { error: String(error) })
    }
  }
}

/** What {@link AdapterSlots.run} rejects with: a worker's own `SvcError` as it is, anything else as `STORAGE_ERROR`. */
function adapterFailure(functionId: string, error: unknown): unknown {
  if (error instanceof SvcError) return error
  return Errors.storageError(`${functionId} failed: ${(error as Error)?.message ?? String(error)}`, error)
}

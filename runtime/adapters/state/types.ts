/**
 * The storage seam of the state worker (builtins.md §4, §13). The worker validates payloads,
 * enforces `max_value_bytes`, applies update operations and fans events out to triggers; an adapter
 * only stores values and reports what changed. The worker never touches a datastore client.
 *
 * Every adapter must pass `runStateAdapterConformance` (./conformance.ts).
 */

/**
 * Values are JSON values, `null` included. An adapter stores a snapshot: later changes to the
 * object passed to {@link StateAdapter.set} do not affect what is stored, and every read returns a
 * value decoded afresh. Values an adapter hands out with a write's result and with its change
 * report may be the same object (or the caller's own input), so recipients treat them as
 * read-only. Anything `JSON.stringify` cannot encode faithfully (`undefined`, functions, `NaN`) is
 * outside the contract.
 */
export type StateValue = unknown

/** Trace context of the write that caused a change, carried to its events (builtins.md §2.5 rule 7). */
export interface StateWriteOrigin {
  traceparent?: string
  baggage?: string
}

/**
 * One committed change, reported to {@link StateAdapter.subscribe} listeners.
 * `old_value` is undefined when the key was absent; `new_value` is undefined after a delete.
 */
export interface StateChange {
  scope: string
  key: string
  old_value: StateValue | undefined
  new_value: StateValue | undefined
  origin?: StateWriteOrigin
}

export type StateChangeListener = (change: StateChange) => void

/**
 * What an update's function decides, given the current value (undefined when the key is absent),
 * which it must not mutate. Throwing from it aborts the update: nothing is written and the error
 * reaches the caller of {@link StateAdapter.update} unchanged.
 */
export type StateUpdateFn = (current: StateValue | undefined) => StateValue

/** Page request of {@link StateAdapter.listKeys} and {@link StateAdapter.listEntries}. */
export interface StatePageRequest {
  /** Only keys that start with this string (compared by UTF-8 bytes, case-sensitive). */
  prefix?: string
  /** Matching keys to skip, ≥ 0. */
  offset: number
  /** Keys to return at most, ≥ 0. */
  limit: number
}

export interface StatePage<T> {
  items: T[]
  /** Every key of the scope that matches the prefix, regardless of offset and limit. */
  total: number
}

export interface StateEntry {
  key: string
  value: StateValue
}

/**
 * A state store. Semantics every adapter guarantees (builtins.md §13.2–§13.4):
 *
 * - **Addressing.** A value is addressed by `(scope, key)`, both non-empty strings (the worker
 *   checks that). Scopes and keys are compared and ordered by the bytes of their UTF-8 encoding
 *   (equivalently, by Unicode code point), never by locale or UTF-16 code unit.
 * - **Durability.** A write's promise resolves only after the write is committed; for a persistent
 *   adapter, committed means it survives a crash of the process from then on.
 * - **Atomicity.** Each write is atomic; {@link update} reads, decides and writes as one unit, so no
 *   other write to any key lands between its read and its write.
 * - **Changes.** Every committed write that created, replaced or removed a value is reported to
 *   {@link subscribe} listeners exactly once, in commit order, before the write's promise
 *   resolves. A delete of an absent key reports nothing. A set or update always reports, even when
 *   the value is unchanged. Listeners must not throw and must not write (they run inside the
 *   write's call stack); errors they throw are the adapter's to swallow.
 * - **Failures.** Operational failures (disk full, corrupt file, connection lost) reject with the
 *   underlying error; the worker maps them to `STORAGE_ERROR` or `ADAPTER_UNAVAILABLE`.
 *
 * Not part of the contract: payload validation, size limits, update-operation semantics, trigger
 * matching and delivery. Those belong to the worker so every adapter behaves the same.
 */
export interface StateAdapter {
  /** The stored value, or undefined when the key is absent. */
  get(scope: string, key: string): Promise<StateValue | undefined>

  /** Stores `value`; resolves with the previous value, undefined when the key was new. */
  set(scope: string, key: string, value: StateValue, origin?: StateWriteOrigin): Promise<StateValue | undefined>

  /** Removes the key; resolves with the removed value, undefined (and no change) when it was absent. */
  delete(scope: string, key: string, origin?: StateWriteOrigin): Promise<StateValue | undefined>

  /**
   * Atomic read-modify-write: calls `fn` with the current value (undefined when absent) and stores
   * what it returns. `fn` runs exactly once and must be synchronous and free of side effects other
   * than computing the value. Resolves with both values; rejects with what `fn` threw, storing
   * nothing.
   */
  update(
    scope: string,
    key: string,
    fn: StateUpdateFn,
    origin?: StateWriteOrigin,
  ): Promise<{ old_value: StateValue | undefined; new_value: StateValue }>

  /** Every value of the scope, ordered by key; `[]` for an unknown scope. */
  list(scope: string): Promise<StateValue[]>

  /** A page of the scope's keys, ordered, filtered by prefix. */
  listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>>

  /** A page of the scope's entries, ordered by key, filtered by prefix. */
  listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>>

  /** The scopes that hold at least one key, ordered. */
  listGroups(): Promise<string[]>

  /** Registers a change listener; returns the function that removes it. */
  subscribe(listener: StateChangeListener): () => void

  /**
   * Releases files and connections. Afterwards every method rejects. Calling it twice is harmless.
   */
  close(): Promise<void>
}

/** Options an adapter factory receives besides its own `config` block. */
export interface StateAdapterContext {
  /** The engine's absolute data directory (`builtin` keeps `state.db` there by default). */
  dataDir: string
}

/**
 * Compares two strings by the bytes of their UTF-8 encoding, which for well-formed strings is
 * Unicode code point order. JavaScript's `<` compares UTF-16 code units, which puts U+FFFD after
 * U+1F600; SQLite's BINARY collation and Redis put it before.
 */
export function compareUtf8(a: string, b: string): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x === y) continue
    // Below the surrogate range, and above it, UTF-16 order already matches code point order.
    // A surrogate (0xD800–0xDFFF) stands for a code point ≥ 0x10000, above every BMP unit.
    const xs = x >= 0xd800 && x <= 0xdfff
    const ys = y >= 0xd800 && y <= 0xdfff
    if (xs === ys) return x < y ? -1 : 1
    return xs ? 1 : -1
  }
  return a.length - b.length
}

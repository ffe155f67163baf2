/**
 * The storage seam of the state worker (builtins.md §4, §5, §13), version 2. The worker validates
 * payloads and fans events out to triggers; an adapter stores values, applies update operations
 * atomically where the data lives (a SQLite transaction, one Redis Lua script) and reports every
 * committed change. The worker never touches a datastore client.
 *
 * Every adapter must pass `runStateAdapterConformance` (./conformance.ts).
 */
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'

export type { UpdateOp, UpdateOpError }

/**
 * Values are JSON values, `null` included. An adapter stores a snapshot: later changes to the
 * object passed to {@link StateAdapter.set} do not affect what is stored, and every read returns a
 * value decoded afresh. Values an adapter hands out with a write's result and with its change
 * report may be the same object (or the caller's own input), so recipients treat them as
 * read-only. A value reads back exactly as `JSON.parse(JSON.stringify(value))`: empty arrays stay
 * arrays, numbers keep their double value. Anything `JSON.stringify` cannot encode faithfully
 * (`undefined`, functions, `NaN`) is outside the contract.
 */
export type StateValue = unknown

/** Trace context of the write that caused a change, carried to its events (builtins.md §2.5 rule 7). */
export interface StateWriteOrigin {
  traceparent?: string
  baggage?: string
}

/** Options of {@link StateAdapter.set} and {@link StateAdapter.update}. */
export interface StateWriteOptions {
  /** Trace context handed to the change report. */
  origin?: StateWriteOrigin
  /**
   * `max_value_bytes` (builtins.md §4.1): when set, a write whose stored JSON encoding (UTF-8
   * bytes of `JSON.stringify` of the value) is larger fails with `VALUE_TOO_LARGE`
   * (`value of N bytes exceeds max_value_bytes M`) and stores and reports nothing. Null or
   * undefined means no limit.
   */
  maxValueBytes?: number | null
  /** How the `VALUE_TOO_LARGE` message names the limit; default `max_value_bytes` (the stream worker passes `max_item_bytes`). */
  maxValueSetting?: string
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

/** What {@link StateAdapter.update} resolves with (builtins.md §5.3). */
export interface StateUpdateResult {
  /** The value before the update; undefined when the key was absent. */
  old_value: StateValue | undefined
  /** The stored value; `{}` when the key was absent and no operation produced a value. */
  new_value: StateValue
  /** The skipped operations in `ops` order; empty when every operation applied. */
  errors: UpdateOpError[]
}

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
 *   (equivalently, by Unicode code point), never by locale or UTF-16 code unit. Lone surrogates
 *   are stored as U+FFFD, as UTF-8 storage does.
 * - **Durability.** A write's promise resolves only after the write is committed; for a persistent
 *   adapter, committed means it survives a crash of the process from then on (for `redis`: as far
 *   as the server's persistence settings go). A read sees every write that resolved before it
 *   started, whichever engine made it.
 * - **Atomicity.** Each write is atomic. {@link update} applies the operations of builtins.md §5
 *   to the current value with exactly the semantics, codes and messages of `runtime/update-ops`
 *   (`applyUpdateOps`), as one unit: no other write to any key lands between its read and its
 *   write.
 * - **Size limit.** With `maxValueBytes`, `set` and `update` check the encoding of the value they
 *   would store and fail with `VALUE_TOO_LARGE` before storing anything. The check belongs to the
 *   adapter because only it sees the result of an update before committing it.
 * - **Change feed.** Every committed write that created, replaced or removed a value in the store
 *   (by this process or, for a shared store, by any other engine) is reported to every
 *   {@link subscribe} listener exactly once, in commit order, with the writer's `origin`. A delete
 *   of an absent key reports nothing; a set or update always reports, even when the value is
 *   unchanged. Local adapters (`memory`, `builtin`) report synchronously, before the write's
 *   promise resolves; remote adapters (`redis`) report asynchronously, possibly after the write
 *   resolved, and only while connected (a change committed while this engine was disconnected
 *   from the store is not reported; the adapter logs that it missed changes). Listeners must not
 *   throw and must not write; errors they throw are the adapter's to swallow.
 * - **Failures.** A remote store that cannot be reached makes calls reject with `SvcError`
 *   `ADAPTER_UNAVAILABLE` within 5 s. Other operational failures (disk full, corrupt file, a
 *   closed adapter) reject with the underlying error or `STORAGE_ERROR`; the worker maps errors
 *   that are not `SvcError` to `STORAGE_ERROR` naming the function. A malformed `ops` value
 *   rejects with `INVALID_ARGUMENTS` before anything is read.
 *
 * Not part of the contract: payload validation, trigger matching and delivery. Those belong to the
 * worker so every adapter behaves the same.
 */
export interface StateAdapter {
  /** The stored value, or undefined when the key is absent. */
  get(scope: string, key: string): Promise<StateValue | undefined>

  /**
   * Stores `value`; resolves with the previous value, undefined when the key was new.
   * @throws SvcError `VALUE_TOO_LARGE` when `options.maxValueBytes` is exceeded (nothing stored).
   */
  set(scope: string, key: string, value: StateValue, options?: StateWriteOptions): Promise<StateValue | undefined>

  /**
   * Removes the key; resolves with the removed value, undefined (and no change) when it was absent.
   */
  delete(scope: string, key: string, options?: Pick<StateWriteOptions, 'origin'>): Promise<StateValue | undefined>

  /**
   * Applies update operations (builtins.md §5) atomically and stores the result, even when some
   * operations were skipped (they are listed in `errors`). An absent key starts out missing and a
   * value still missing after the last operation is stored as `{}`.
   *
   * @throws SvcError `INVALID_ARGUMENTS` for a malformed `ops` value (nothing read or stored),
   *   `VALUE_TOO_LARGE` when the result exceeds `options.maxValueBytes` (nothing stored).
   * @example
   * await adapter.update('users', 'u1', [{ type: 'increment', path: 'visits' }])
   * // => { old_value: { visits: 1 }, new_value: { visits: 2 }, errors: [] }
   */
  update(scope: string, key: string, ops: UpdateOp[], options?: StateWriteOptions): Promise<StateUpdateResult>

  /** Every value of the scope, ordered by key; `[]` for an unknown scope. */
  list(scope: string): Promise<StateValue[]>

  /** A page of the scope's keys, ordered, filtered by prefix. */
  listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>>

  /** A page of the scope's entries, ordered by key, filtered by prefix. */
  listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>>

  /** The scopes that hold at least one key, ordered. */
  listGroups(): Promise<string[]>

  /** Registers a change listener (see the change feed above); returns the function that removes it. */
  subscribe(listener: StateChangeListener): () => void

  /**
   * Releases files and connections and stops the change feed. Afterwards every method rejects.
   * Calling it twice is harmless.
   */
  close(): Promise<void>
}

/** Where adapters write their operational messages (the engine's logger fits). */
export interface StateAdapterLogger {
  info(message: string, data?: Record<string, unknown>): void
  warn(message: string, data?: Record<string, unknown>): void
  error(message: string, data?: Record<string, unknown>): void
}

/** Options an adapter factory receives besides its own `config` block. */
export interface StateAdapterContext {
  /** The engine's absolute data directory (`builtin` keeps `state.db` there by default). */
  dataDir: string
  /** Connection warnings and errors of remote adapters; silent when absent. */
  log?: StateAdapterLogger
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

/**
 * The storage seam of the stream worker (builtins.md §6, §13). A stream adapter stores items
 * addressed by `(stream_name, group_id, item_id)`, applies update operations (§5) atomically where
 * the data lives, and reports every committed change and every transient `send` event on one
 * change feed, so that a store shared by several engines can report changes made elsewhere.
 *
 * Every adapter must pass `runStreamAdapterConformance` (./conformance.ts).
 */
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'
import type { StateAdapterLogger } from '../state/types.ts'

export type { UpdateOp, UpdateOpError }

/** Trace context of the write that caused a change (builtins.md §2.5 rule 7). */
export interface StreamWriteOrigin {
  traceparent?: string
  baggage?: string
}

/** Options of {@link StreamAdapter.set} and {@link StreamAdapter.update}. */
export interface StreamWriteOptions {
  origin?: StreamWriteOrigin
  /**
   * `max_item_bytes` (builtins.md §6.1): a write whose JSON encoding (UTF-8 bytes) is larger fails
   * with `VALUE_TOO_LARGE` (`value of N bytes exceeds max_item_bytes M`) and stores and reports
   * nothing. Null or undefined: no limit.
   */
  maxItemBytes?: number | null
}

/** A committed change of one item. `old_value` undefined: the item was new; `new_value` undefined: deleted. */
export interface StreamItemChange {
  kind: 'item'
  stream_name: string
  group_id: string
  item_id: string
  old_value: unknown
  new_value: unknown
  origin?: StreamWriteOrigin | undefined
}

/** A transient event of `stream::send` (§6.2); nothing is stored. */
export interface StreamSendChange {
  kind: 'send'
  stream_name: string
  group_id: string
  /** The send's `id`, or null. */
  id: string | null
  type: string
  data: unknown
  origin?: StreamWriteOrigin | undefined
}

export type StreamAdapterChange = StreamItemChange | StreamSendChange
export type StreamChangeListener = (change: StreamAdapterChange) => void

/** What {@link StreamAdapter.update} resolves with (builtins.md §5.3). */
export interface StreamUpdateOutcome {
  /** Undefined when the item was absent. */
  old_value: unknown
  new_value: unknown
  errors: UpdateOpError[]
}

/** One stream with its groups, as `stream::list_all` lists it. */
export interface StreamGroups {
  stream_name: string
  /** Sorted byte-wise. */
  groups: string[]
}

/**
 * A stream store. Semantics every adapter guarantees (builtins.md §13.2–§13.3):
 *
 * - **Addressing.** Names are non-empty, well-formed strings (the worker checks that); items and
 *   groups are ordered by the bytes of their UTF-8 encoding.
 * - **Durability and atomicity** as for state adapters: a write resolves after it committed;
 *   {@link update} reads, applies `runtime/update-ops` and writes as one unit.
 * - **Change feed.** Every committed set, update and delete of an existing item, and every
 *   {@link publish}ed send event, is reported once to every listener, in commit order, before the
 *   call resolves (local adapters). A delete of an absent item reports nothing.
 * - **Failures.** Operational failures reject; the worker maps errors that are not `SvcError` to
 *   `STORAGE_ERROR`.
 *
 * Not part of the contract: payload validation, custom streams, trigger matching and client
 * delivery; those belong to the worker.
 */
export interface StreamAdapter {
  /** The item's data, or undefined when absent. */
  get(stream: string, group: string, item: string): Promise<unknown>
  /**
   * Stores `data`; resolves with the previous data, undefined when the item was new.
   * @throws SvcError `VALUE_TOO_LARGE` when `options.maxItemBytes` is exceeded.
   */
  set(stream: string, group: string, item: string, data: unknown, options?: StreamWriteOptions): Promise<unknown>
  /** Removes the item; resolves with its data, undefined (and no change) when it was absent. */
  delete(stream: string, group: string, item: string, options?: Pick<StreamWriteOptions, 'origin'>): Promise<unknown>
  /**
   * Applies update operations (§5) atomically.
   * @throws SvcError `INVALID_ARGUMENTS` for malformed `ops`, `VALUE_TOO_LARGE` as for set.
   */
  update(stream: string, group: string, item: string, ops: UpdateOp[], options?: StreamWriteOptions): Promise<StreamUpdateOutcome>
  /** The data of the group's items ordered by item id; `[]` when the group is unknown. */
  list(stream: string, group: string): Promise<unknown[]>
  /** The stream's groups holding at least one item, sorted. */
  listGroups(stream: string): Promise<string[]>
  /** Every stream with its groups, sorted by name. */
  listAll(): Promise<StreamGroups[]>
  /** Reports a transient send event on the change feed (a shared store reports it to every engine). */
  publish(event: Omit<StreamSendChange, 'kind'>): Promise<void>
  /** Registers a change listener; returns the function that removes it. Listeners must not throw. */
  subscribe(listener: StreamChangeListener): () => void
  /** Releases files and connections; afterwards every method rejects. Idempotent. */
  close(): Promise<void>
}

/** Options an adapter factory receives besides its own `config` block. */
export interface StreamAdapterContext {
  /** The engine's absolute data directory (`builtin` keeps `stream.db` there by default). */
  dataDir: string
  /** Where `redis` warns about an unreachable Redis (§13.4). */
  log?: StateAdapterLogger | undefined
}

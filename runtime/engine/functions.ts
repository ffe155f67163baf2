/**
 * The function registry: `(namespace, function_id)` → replica set (protocol.md §5.1, §6.1).
 * Each replica is owned by one peer; a function exists while it has at least one replica.
 */
import { svcAlias, type FormatSchema, type HttpInvocationConfig } from 'svc-protocol'
import type { Peer } from './peer.ts'
import type { Invocation } from './invocation.ts'

/**
 * Executes invocations for one replica kind (the dispatch stage of `pipeline.ts`): a remote
 * session, an in-process handler, an HTTP request. A new way to reach a replica implements this.
 */
export interface Callee {
  /** The worker that owns the replica. */
  readonly peer: Peer
  /** Bytes waiting to be sent to the callee (backpressure, §3.5); 0 for in-process callees. */
  readonly pendingBytes: number
  /**
   * True for replicas on another engine of the fleet (issue 19): replica selection prefers the
   * others, and calls served for another engine never go to them.
   */
  readonly remote?: boolean
  dispatch(invocation: Invocation, target: FunctionEntry, replica: Replica): void
}

/** One peer's registration of a function. */
export interface Replica {
  readonly peer: Peer
  /** Executes calls routed to this replica: the session, an in-process handler or an HTTP request. */
  readonly callee: Callee
  /** The id as the worker sent it (§5.8, §13.5): the handler span the engine records names it (handler-spans.ts). */
  readonly wireId: string
  /** {@link wireId} as JSON: frames to the worker keep it. */
  readonly wireIdJson: string
  description?: string
  request_format?: FormatSchema
  response_format?: FormatSchema
  metadata?: Record<string, unknown>
  /** Present for HTTP-invoked registrations (§6.8), for listings. */
  invocation?: HttpInvocationConfig
  /** An in-process handler that records its own span: no `execute` span around it (builtins.md §12.7). */
  ownSpan?: true
}

export class FunctionEntry {
  readonly namespace: string
  readonly id: string
  readonly replicas: Replica[] = []
  /** The JSON encoding of `id`, computed once for frame building on the hot path. */
  readonly idJson: string
  /** `svc.function.id=<id>,iii.function.id=<id>`: the baggage added when the caller sent none. */
  readonly baggage: string
  /** The JSON encoding of {@link baggage}. */
  readonly baggageJson: string
  private cursor = 0
  private remoteCursor = 0

  constructor(namespace: string, id: string) {
    this.namespace = namespace
    this.id = id
    this.idJson = JSON.stringify(id)
    // toWellFormed: encodeURIComponent throws on a lone surrogate; ids are checked at the edge, but
    // a registry entry must never be the place that fails.
    const v = encodeURIComponent(id.toWellFormed())
    this.baggage = `svc.function.id=${v},iii.function.id=${v}`
    this.baggageJson = JSON.stringify(this.baggage)
  }

  /** The replica whose description and formats listings show: the most recent registration. */
  get latest(): Replica {
    return this.replicas[this.replicas.length - 1]!
  }

  /**
   * Picks a replica round-robin, skipping backpressured or dying peers; when every live replica is
   * backpressured, the one with the least unsent data (§6.1). A draining peer (a worker process
   * being replaced by a reload, {@link Peer.draining}) is picked only when no other live replica is
   * there. In a fleet, replicas of this engine come first and those on other engines are balanced
   * among themselves; `localOnly` (a call served for another engine) takes this engine's only.
   * Undefined when none is alive.
   */
  pick(backpressureBytes: number, localOnly = false): Replica | undefined {
    const replicas = this.replicas
    const n = replicas.length
    if (n === 1) {
      const only = replicas[0]!
      if (!only.peer.alive) return undefined
      if (only.callee.remote === true && localOnly) return undefined
      return only
    }
    let fallback: Replica | undefined
    let fallbackBytes = Infinity
    let draining: Replica | undefined
    let remotes = 0
    for (let i = 0; i < n; i++) {
      const index = (this.cursor + i) % n
      const replica = replicas[index]!
      if (!replica.peer.alive) continue
      if (replica.callee.remote === true) {
        remotes++
        continue
      }
      if (replica.peer.draining === true) {
        draining ??= replica
        continue
      }
      const bytes = replica.callee.pendingBytes
      if (bytes <= backpressureBytes) {
        this.cursor = (index + 1) % n
        return replica
      }
      if (bytes < fallbackBytes) {
        fallback = replica
        fallbackBytes = bytes
      }
    }
    if (remotes === 0 || localOnly) return fallback ?? draining
    for (let i = 0; i < n; i++) {
      const index = (this.remoteCursor + i) % n
      const replica = replicas[index]!
      if (!replica.peer.alive || replica.callee.remote !== true) continue
      this.remoteCursor = (index + 1) % n
      return replica
    }
    return fallback ?? draining
  }
}

/**
 * `(namespace, function_id)` → replica set. Entries are owned by `(peer, id)`; callers query it
 * through methods, never through its maps.
 */
export class FunctionRegistry {
  private readonly byNamespace = new Map<string, Map<string, FunctionEntry>>()

  get(namespace: string, id: string): FunctionEntry | undefined {
    return this.byNamespace.get(namespace)?.get(id)
  }

  /**
   * Resolution of §6.1 steps 2–3: `(namespace, id)`, else `('default', id)`; an `iii::` id not
   * registered under its exact spelling resolves as its `svc::` spelling.
   */
  resolve(namespace: string, id: string): FunctionEntry | undefined {
    const entry = this.byNamespace.get(namespace)?.get(id) ?? (namespace === 'default' ? undefined : this.byNamespace.get('default')?.get(id))
    if (entry !== undefined) return entry
    const alias = svcAlias(id)
    return alias === undefined ? undefined : this.resolve(namespace, alias)
  }

  /** The id a call of `id` targets when nothing is registered yet: its `svc::` spelling for `iii::` ids. */
  aliasTarget(id: string): string {
    return svcAlias(id) ?? id
  }

  /**
   * Adds or replaces `peer`'s replica of `(namespace, id)`. Returns true when the function is new
   * (the set of registered ids changed).
   */
  add(namespace: string, id: string, replica: Replica): boolean {
    let ids = this.byNamespace.get(namespace)
    if (!ids) {
      ids = new Map()
      this.byNamespace.set(namespace, ids)
    }
    let entry = ids.get(id)
    const created = entry === undefined
    if (!entry) {
      entry = new FunctionEntry(namespace, id)
      ids.set(id, entry)
    }
    const existing = entry.replicas.findIndex((r) => r.peer === replica.peer)
    if (existing >= 0) entry.replicas.splice(existing, 1)
    entry.replicas.push(replica)
    return created
  }

  /** Removes `peer`'s replica only. Returns true when the function disappeared. */
  remove(namespace: string, id: string, peer: Peer): boolean {
    const ids = this.byNamespace.get(namespace)
    const entry = ids?.get(id)
    if (!ids || !entry) return false
    const index = entry.replicas.findIndex((r) => r.peer === peer)
    if (index < 0) return false
    entry.replicas.splice(index, 1)
    if (entry.replicas.length > 0) return false
    ids.delete(id)
    if (ids.size === 0) this.byNamespace.delete(namespace)
    return true
  }

  /** Removes every replica owned by `peer`. Returns true when any function disappeared. */
  removePeer(peer: Peer): boolean {
    let changed = false
    for (const [namespace, ids] of this.byNamespace) {
      for (const id of [...ids.keys()]) {
        if (this.remove(namespace, id, peer)) changed = true
      }
    }
    return changed
  }

  /** Namespaces other than `except` in which `id` is registered, sorted. */
  namespacesOf(id: string, except?: string): string[] {
    const found: string[] = []
    for (const [namespace, ids] of this.byNamespace) {
      if (namespace !== except && ids.has(id)) found.push(namespace)
    }
    return found.sort()
  }

  *entries(): IterableIterator<FunctionEntry> {
    for (const ids of this.byNamespace.values()) yield* ids.values()
  }

  /** Every function, sorted by id then namespace. */
  list(): FunctionEntry[] {
    return [...this.entries()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0))
  }

  /** The functions `peer` holds a replica of. */
  ofPeer(peer: Peer): FunctionEntry[] {
    return [...this.entries()].filter((entry) => entry.replicas.some((r) => r.peer === peer))
  }

  /** Number of functions `peer` holds a replica of. */
  countFor(peer: Peer): number {
    let n = 0
    for (const entry of this.entries()) if (entry.replicas.some((r) => r.peer === peer)) n++
    return n
  }
}

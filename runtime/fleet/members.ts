/**
 * The other engines of the fleet as this engine sees them: a {@link Member} per engine instance
 * heard from, holding a {@link RemoteWorker} per worker connected there and the replicas of their
 * functions, kept in this engine's function registry so that resolution, access rules, listings
 * and replica selection treat them like local ones (protocol.md §6.1: local replicas preferred).
 */
import type { WorkerAnnounce, WorkerSummary } from 'svc-protocol'
import type { Callee, FunctionEntry, Replica } from '../engine/functions.ts'
import type { Invocation } from '../engine/invocation.ts'
import type { Peer } from '../engine/peer.ts'
import type { Binding, BindingInput } from '../engine/triggers.ts'
import type { Heartbeat, Snapshot, SnapshotTrigger } from './wire.ts'

/** How a {@link FleetCallee} reaches the member's engine (implemented by `FleetCalls`). */
export interface MemberLink {
  send(member: Member, invocation: Invocation, target: FunctionEntry, replica: Replica): void
}

/** A worker connected to another engine of the fleet. */
export class RemoteWorker implements Peer {
  readonly kind = 'connection' as const
  readonly workerId: string
  readonly member: Member
  readonly callee: FleetCallee
  alive = true
  summary: WorkerSummary
  announce: WorkerAnnounce = {}

  constructor(member: Member, summary: WorkerSummary, link: MemberLink) {
    this.workerId = summary.id
    this.member = member
    this.summary = summary
    this.callee = new FleetCallee(this, link)
    this.update(summary)
  }

  get engine(): string {
    return this.member.engine
  }

  get name(): string | null {
    return this.summary.name
  }

  get namespace(): string {
    return this.summary.namespace
  }

  get connectedAtMs(): number {
    return this.summary.connected_at_ms
  }

  get activeInvocations(): number {
    return this.summary.active_invocations
  }

  get ipAddress(): string | null {
    return this.summary.ip_address
  }

  update(summary: WorkerSummary): void {
    this.summary = summary
    const announce: WorkerAnnounce = {}
    if (summary.name !== null) announce.name = summary.name
    if (summary.description !== null) announce.description = summary.description
    if (summary.version !== null) announce.version = summary.version
    if (summary.runtime !== null) announce.runtime = summary.runtime
    if (summary.os !== null) announce.os = summary.os
    if (summary.pid !== null) announce.pid = summary.pid
    if (summary.isolation !== null) announce.isolation = summary.isolation
    announce.namespace = summary.namespace
    this.announce = announce
  }
}

/** The replicas of a {@link RemoteWorker}: each call goes over NATS to the member's engine. */
export class FleetCallee implements Callee {
  readonly peer: RemoteWorker
  readonly remote = true
  /** Unsent bytes are NATS's to buffer; replica selection balances remote replicas round-robin. */
  readonly pendingBytes = 0
  private readonly link: MemberLink

  constructor(peer: RemoteWorker, link: MemberLink) {
    this.peer = peer
    this.link = link
  }

  dispatch(invocation: Invocation, target: FunctionEntry, replica: Replica): void {
    this.link.send(this.peer.member, invocation, target, replica)
  }
}

/** One engine instance of the fleet. */
export class Member {
  readonly engine: string
  readonly instance: string
  urls: string[]
  startedAtMs: number
  /** Version of the snapshot applied; -1 before the first. */
  appliedVersion = -1
  /** Version the latest heartbeat announced. */
  announcedVersion: number
  /** Monotonic ms of the latest heartbeat. */
  lastSeen: number
  /** A snapshot request is in flight. */
  fetching = false
  /** A liveness probe is in flight. */
  probing = false
  /** This engine's reply subject for its calls to the member (built on first use). */
  replySubject: string | undefined
  readonly workers = new Map<string, RemoteWorker>()
  /** `namespace\0function_id\0worker_id` → the replica this member's snapshot added. */
  readonly replicas = new Map<string, { namespace: string; id: string; worker: RemoteWorker }>()
  /** The member's binding id → the id of the binding added here (`fleet:<instance>:<id>`). */
  readonly bindings = new Map<string, string>()
  /** The fleet-wide bindings of its latest snapshot (added here unless this engine has the same). */
  triggers: SnapshotTrigger[] = []

  constructor(beat: Heartbeat, now: number) {
    this.engine = beat.engine
    this.instance = beat.instance
    this.urls = beat.urls
    this.startedAtMs = beat.started_at_ms
    this.announcedVersion = beat.version
    this.lastSeen = now
  }

  heard(beat: Heartbeat, now: number): void {
    this.urls = beat.urls
    this.announcedVersion = Math.max(this.announcedVersion, beat.version)
    this.lastSeen = now
  }
}

/** What applying a snapshot needs from the registry (the engine's `FunctionRegistry`). */
export interface ReplicaRegistry {
  add(namespace: string, id: string, replica: Replica): boolean
  remove(namespace: string, id: string, peer: Peer): boolean
}

/** What applying a snapshot needs from the trigger registry (the engine's `TriggerRegistry`). */
export interface BindingRegistry {
  addBinding(input: BindingInput): Binding
  removeBinding(id: string): boolean
  allBindings(): Binding[]
}

/** What changed when a snapshot or a departure was applied. */
export interface Applied {
  /** A function id appeared or disappeared in this engine's registry. */
  functionsChanged: boolean
  connected: string[]
  disconnected: string[]
}

/**
 * Makes `member`'s replicas in `registry` those of `snapshot`: workers gone are dead and their
 * replicas removed, new ones added, the rest updated in place.
 */
export function applySnapshot(member: Member, snapshot: Snapshot, registry: ReplicaRegistry, link: MemberLink, triggers: BindingRegistry): Applied {
  const applied: Applied = { functionsChanged: false, connected: [], disconnected: [] }
  const workerIds = new Set<string>()
  for (const summary of snapshot.workers) {
    workerIds.add(summary.id)
    const known = member.workers.get(summary.id)
    if (known !== undefined) known.update(summary)
    else {
      member.workers.set(summary.id, new RemoteWorker(member, summary, link))
      applied.connected.push(summary.id)
    }
  }
  const wanted = new Set<string>()
  for (const f of snapshot.functions) {
    const worker = member.workers.get(f.worker_id)
    if (worker === undefined) continue
    const key = `${f.namespace}\0${f.function_id}\0${f.worker_id}`
    wanted.add(key)
    const replica: Replica = { peer: worker, callee: worker.callee, wireId: f.function_id, wireIdJson: JSON.stringify(f.function_id) }
    if (f.description !== undefined) replica.description = f.description
    if (f.metadata !== undefined) replica.metadata = f.metadata
    if (f.request_format !== undefined) replica.request_format = f.request_format
    if (f.response_format !== undefined) replica.response_format = f.response_format
    if (f.invocation !== undefined) replica.invocation = f.invocation
    if (registry.add(f.namespace, f.function_id, replica)) applied.functionsChanged = true
    member.replicas.set(key, { namespace: f.namespace, id: f.function_id, worker })
  }
  for (const [key, r] of member.replicas) {
    if (wanted.has(key)) continue
    member.replicas.delete(key)
    if (registry.remove(r.namespace, r.id, r.worker)) applied.functionsChanged = true
  }
  member.triggers = snapshot.triggers
  applyTriggers(member, triggers)
  for (const [id, worker] of member.workers) {
    if (workerIds.has(id)) continue
    worker.alive = false
    member.workers.delete(id)
    applied.disconnected.push(id)
  }
  member.appliedVersion = snapshot.version
  return applied
}

/**
 * Serves the member's fleet-wide bindings (its `http` routes) here too, owned by its worker. A
 * binding of the same function and config that this engine already has (the same route of a
 * worker replicated on several engines) is not added twice.
 */
export function applyTriggers(member: Member, triggers: BindingRegistry): void {
  const wanted = new Map(member.triggers.map((t) => [t.id, t]))
  for (const [remoteId, localId] of member.bindings) {
    if (wanted.has(remoteId)) continue
    member.bindings.delete(remoteId)
    triggers.removeBinding(localId)
  }
  const sameAs = (t: SnapshotTrigger) => `${t.trigger_type}\0${t.namespace}\0${t.function_id}\0${JSON.stringify(t.config)}`
  const existing = new Set(triggers.allBindings().filter((b) => !b.id.startsWith(`fleet:${member.instance}:`)).map((b) => sameAs(b)))
  for (const t of wanted.values()) {
    if (member.bindings.has(t.id)) continue
    if (existing.has(sameAs(t))) continue
    const worker = [...member.workers.values()].find((w) => member.replicas.has(`${t.namespace}\0${t.function_id}\0${w.workerId}`)) ?? member.workers.values().next().value
    if (worker === undefined) continue
    const localId = `fleet:${member.instance}:${t.id}`
    const input: BindingInput = { id: localId, trigger_type: t.trigger_type, function_id: t.function_id, namespace: t.namespace, config: t.config, owner: worker }
    if (t.metadata !== undefined) input.metadata = t.metadata
    triggers.addBinding(input)
    member.bindings.set(t.id, localId)
    existing.add(sameAs(t))
  }
}

/** Removes everything `member` added: it left the fleet. */
export function removeMember(member: Member, registry: ReplicaRegistry, triggers: BindingRegistry): Applied {
  const applied: Applied = { functionsChanged: false, connected: [], disconnected: [] }
  for (const localId of member.bindings.values()) triggers.removeBinding(localId)
  member.bindings.clear()
  member.triggers = []
  for (const r of member.replicas.values()) {
    if (registry.remove(r.namespace, r.id, r.worker)) applied.functionsChanged = true
  }
  member.replicas.clear()
  for (const worker of member.workers.values()) {
    worker.alive = false
    applied.disconnected.push(worker.workerId)
  }
  member.workers.clear()
  return applied
}

/**
 * One engine's membership of a fleet (issue 19, docs/guides/scale-out.md): several engines that
 * share a fleet name and NATS servers serve one project. This module connects to NATS, tells the
 * fleet this engine is alive and what its workers registered (heartbeats, snapshots), keeps the
 * other engines' workers and functions in this engine's registry ({@link Member}), carries calls
 * to them and serves theirs ({@link FleetCalls}).
 *
 * - **Membership**: a heartbeat on `svc.<fleet>.heartbeat` every `heartbeat_interval_ms`, and at
 *   once when this engine's workers or functions change. An engine heard from with a version this
 *   engine has not applied is asked for its snapshot. An engine not heard from for
 *   `heartbeat_timeout_ms` (or that NATS reports has no subscription) has left: its functions are
 *   removed and calls in flight to it end with `invocation_stopped`.
 * - **Calls**: see ./calls.ts. Calls served here run on this engine's own replicas only.
 * - **NATS down**: the client reconnects by itself; meanwhile calls to other engines fail with
 *   `ADAPTER_UNAVAILABLE`, health is `degraded`, and no member is dropped for silence (this engine
 *   cannot hear them). On reconnect the heartbeats resume and the views are brought up to date.
 */
import { randomBytes } from 'node:crypto'
import type { Msg, NatsConnection, Subscription } from 'nats'
import { decodeFrame, encodeResult, Errors, type FleetEngineInfo, type WorkerSummary } from 'svc-protocol'
import { PERMISSIVE } from '../engine/access/policy.ts'
import { CallIndex } from '../engine/call-index.ts'
import type { FleetConfig, Logger } from '../engine/config.ts'
import type { FunctionRegistry } from '../engine/functions.ts'
import { Flight, type FlightTable } from '../engine/flights.ts'
import type { Invocation } from '../engine/invocation.ts'
import type { Peer } from '../engine/peer.ts'
import { DiscardReply } from '../engine/pipeline.ts'
import { Batcher, eachFrame, FleetCalls, FleetReply, type BusState, type CallBus } from './calls.ts'
import { applySnapshot, applyTriggers, Member, removeMember, type Applied, type BindingRegistry } from './members.ts'
import { FleetSubjects } from './subjects.ts'
import { FLEET_TRIGGER_TYPES, readHeartbeat, readSnapshot, type Heartbeat, type Snapshot, type SnapshotFunction, type SnapshotTrigger } from './wire.ts'
import { loadOptional } from '../adapters/optional-package.ts'

/** What the fleet needs from its engine. */
export interface FleetHost {
  readonly functions: FunctionRegistry
  readonly triggers: BindingRegistry
  readonly log: Logger
  /** Runs an invocation through the engine's pipeline. */
  run(invocation: Invocation): void
  /** The engine's invocations in flight: calls served for other engines are listed and cancelled there. */
  readonly flights: FlightTable
  /** This engine's worker connections (not built-ins, not other engines' workers). */
  localWorkers(): Peer[]
  /** WorkerSummary of one of {@link localWorkers} (protocol.md §11.1). */
  workerSummary(peer: Peer): WorkerSummary
  workerUrls(): string[]
  /** A function id appeared or disappeared (`engine::functions-available`). */
  functionsChanged(): void
  /** A worker of another engine joined or left the fleet (`engine::workers-available`). */
  workerEvent(event: 'worker_connected' | 'worker_disconnected', workerId: string): void
}

/** The `fleet` component of `engine::health::check`. */
export interface FleetHealth {
  status: 'healthy' | 'degraded'
  detail: string
}

/** How long a snapshot request may take before it is asked again, ms (at least). */
const SNAPSHOT_TIMEOUT_MS = 2000
/**
 * Most engines one engine keeps track of: a NATS client that makes up heartbeats of ever new
 * engines cannot grow this engine's memory past it (they also leave after the timeout).
 */
export const MAX_MEMBERS = 1024
/** Changes within this many ms are announced in one heartbeat. */
const ANNOUNCE_DEBOUNCE_MS = 10
/**
 * Workers' `active_invocations` alone raise the snapshot's version at most this often (ms). Under
 * load the counts change at every heartbeat, and each new version makes every other engine fetch and
 * apply the whole snapshot: a cost growing with the functions and the square of the engines, for
 * a figure only listings show. Registrations still announce at once.
 */
export const ACTIVE_COUNTS_REFRESH_MS = 10_000

export class Fleet {
  readonly config: FleetConfig
  /** This run of the engine: subjects of its calls and replies carry it. */
  readonly instance: string
  private readonly host: FleetHost
  private readonly subjects: FleetSubjects
  private readonly members = new Map<string, Member>()
  private readonly startedAtMs = Date.now()
  private nc: NatsConnection | undefined
  private readonly subscriptions: Subscription[] = []
  private connected = false
  private maxPayload = 1024 * 1024
  private heartbeatTimer: NodeJS.Timeout | undefined
  private announceTimer: NodeJS.Timeout | undefined
  private version = 0
  private snapshotJson = ''
  private stopped = false
  private readonly calls: FleetCalls
  /** Engine names already warned about as used twice. */
  private readonly duplicateWarned = new Set<string>()

  constructor(config: FleetConfig, host: FleetHost) {
    this.config = config
    this.host = host
    this.instance = randomBytes(8).toString('hex')
    this.subjects = new FleetSubjects(config.name, this.instance)
    const bus: CallBus = { publish: (subject, payload, options) => this.publish(subject, payload, options) }
    const fleet = this
    const state: BusState = {
      get connected() {
        return fleet.connected
      },
      get maxPayload() {
        return fleet.maxPayload
      },
    }
    this.state = state
    this.batcher = new Batcher(bus, state)
    this.calls = new FleetCalls(this.batcher, state, this.subjects, host.log, (member) => this.leave(member, 'NATS found no subscription of it'))
  }

  private readonly state: BusState
  private readonly batcher: Batcher

  /** The link {@link RemoteWorker}s' callees send through. */
  get link(): FleetCalls {
    return this.calls
  }

  /**
   * Connects to NATS and joins the fleet. Waits up to `waitMs` for the first connection; without
   * one the engine runs degraded and keeps trying (health shows it).
   */
  async start(waitMs = 1500): Promise<void> {
    const servers = this.config.nats
    // nats loads only when a fleet is configured.
    const { connect } = await loadOptional(['nats'], 'a fleet (fleet.nats in config.yaml)', () => import('nats'))
    const connecting = connect({
      servers,
      name: `svc-engine ${this.config.engine}`,
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      pingInterval: Math.max(1000, this.config.heartbeat_interval_ms * 2),
      maxPingOut: 2,
      // This engine reads nothing it publishes itself: its own heartbeats came back at every
      // beat only to be dropped (an engine's call and reply subjects are never its own targets).
      noEcho: true,
    })
    let timer: NodeJS.Timeout | undefined
    const ready = await Promise.race([
      connecting.then((nc) => nc),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs))),
    ])
    clearTimeout(timer)
    if (ready === undefined) {
      this.host.log.warn(`fleet ${this.config.name}: NATS is not reachable yet (${servers.length} server${servers.length === 1 ? '' : 's'} in fleet.nats); this engine serves alone until it is, and keeps trying`)
      connecting.then(
        (nc) => this.attach(nc),
        (err: Error) => this.host.log.error(`fleet ${this.config.name}: cannot connect to NATS: ${err.message}`),
      )
    } else this.attach(ready)
    this.heartbeatTimer = setInterval(() => this.tick(), this.config.heartbeat_interval_ms)
    this.heartbeatTimer.unref()
  }

  /** Leaves the fleet: tells the others, ends the calls this engine made, closes NATS. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.heartbeatTimer)
    clearTimeout(this.announceTimer)
    this.calls.stopAll()
    const nc = this.nc
    if (nc === undefined || nc.isClosed()) return
    try {
      // Answers and cancels of this turn leave before the connection drains.
      if (this.connected) this.batcher.flush()
      if (this.connected) this.publish(this.subjects.heartbeat, JSON.stringify({ ...this.heartbeat(), leaving: true }))
      await nc.drain()
    } catch {
      await nc.close().catch(() => {})
    }
  }

  /** This engine's workers or functions may have changed: announce it soon. */
  localChanged(): void {
    if (this.stopped || this.announceTimer !== undefined) return
    this.announceTimer = setTimeout(() => {
      this.announceTimer = undefined
      this.reconcileTriggers()
      if (this.refreshSnapshot() && this.connected) this.publish(this.subjects.heartbeat, JSON.stringify(this.heartbeat()))
    }, ANNOUNCE_DEBOUNCE_MS)
  }

  /** The engines of the fleet, this one first. */
  list(): FleetEngineInfo[] {
    const now = performance.now()
    const own = this.localExport()
    const self: FleetEngineInfo = {
      engine: this.config.engine,
      instance: this.instance,
      self: true,
      urls: this.host.workerUrls(),
      started_at_ms: this.startedAtMs,
      last_heard_ms: 0,
      workers: own.workers.length,
      functions: own.functions.length,
    }
    const others = [...this.members.values()]
      .sort((a, b) => (a.engine < b.engine ? -1 : a.engine > b.engine ? 1 : 0))
      .map((m) => ({
        engine: m.engine,
        instance: m.instance,
        self: false,
        urls: m.urls,
        started_at_ms: m.startedAtMs,
        last_heard_ms: Math.round(now - m.lastSeen),
        workers: m.workers.size,
        functions: m.replicas.size,
      }))
    return [self, ...others]
  }

  /** The workers connected to other engines. */
  remoteWorkers(): Peer[] {
    const workers: Peer[] = []
    for (const member of this.members.values()) workers.push(...member.workers.values())
    return workers
  }

  health(): FleetHealth {
    const name = `fleet ${this.config.name}, engine ${this.config.engine}`
    if (!this.connected) return { status: 'degraded', detail: `${name}: NATS is not reachable; calls to other engines fail with ADAPTER_UNAVAILABLE until it is` }
    return { status: 'healthy', detail: `${name}: ${this.members.size + 1} engine${this.members.size === 0 ? '' : 's'}, ${this.calls.size} calls in flight to others` }
  }

  // ---- NATS ----------------------------------------------------------------------------------

  private attach(nc: NatsConnection): void {
    if (this.stopped) {
      void nc.close()
      return
    }
    this.nc = nc
    this.connected = true
    this.maxPayload = nc.info?.max_payload ?? this.maxPayload
    const sub = (subject: string, callback: (msg: Msg) => void) =>
      this.subscriptions.push(
        nc.subscribe(subject, {
          callback: (err, msg) => {
            if (err !== null) return this.host.log.warn(`fleet subscription ${subject} failed: ${err.message}`)
            try {
              callback(msg)
            } catch (error) {
              this.host.log.error('a fleet message could not be handled', { subject: msg.subject.slice(0, 200), error: error instanceof Error ? (error.stack ?? error.message) : String(error) })
            }
          },
        }),
      )
    sub(this.subjects.heartbeat, (msg) => this.onHeartbeat(msg))
    sub(this.subjects.snapshot(this.instance), (msg) => {
      this.refreshSnapshot()
      if (msg.reply) this.publish(msg.reply, this.snapshotJson)
    })
    sub(this.subjects.calls, (msg) => this.serve(msg))
    sub(this.subjects.replies, (msg) => this.calls.reply(msg.subject, msg.data, msg.headers?.code, (instance) => this.members.get(instance)))
    void this.watch(nc)
    this.refreshSnapshot()
    this.publish(this.subjects.heartbeat, JSON.stringify(this.heartbeat()))
    this.host.log.info(`joined fleet ${this.config.name} as engine ${this.config.engine}`)
  }

  /** Follows the connection's status: disconnected, reconnected, closed. */
  private async watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        this.connected = false
        this.host.log.warn(`fleet ${this.config.name}: lost the NATS connection; reconnecting`)
      } else if (status.type === 'reconnect') {
        this.connected = true
        this.maxPayload = nc.info?.max_payload ?? this.maxPayload
        // Silence while this engine was cut off says nothing about the others.
        const now = performance.now()
        for (const member of this.members.values()) member.lastSeen = now
        this.publish(this.subjects.heartbeat, JSON.stringify(this.heartbeat()))
        this.host.log.info(`fleet ${this.config.name}: NATS connection restored`)
      }
    }
    this.connected = false
  }

  private publish(subject: string, payload: string, options?: { reply?: string }): void {
    const nc = this.nc
    if (nc === undefined || nc.isClosed()) return
    try {
      nc.publish(subject, payload, options)
    } catch (err) {
      this.host.log.warn(`fleet: could not publish to NATS: ${(err as Error).message}`)
    }
  }

  // ---- membership ----------------------------------------------------------------------------

  private heartbeat(): Heartbeat {
    return { engine: this.config.engine, instance: this.instance, version: this.version, urls: this.host.workerUrls(), started_at_ms: this.startedAtMs }
  }

  private tick(): void {
    if (!this.connected) return
    this.refreshSnapshot()
    this.publish(this.subjects.heartbeat, JSON.stringify(this.heartbeat()))
    const now = performance.now()
    const interval = this.config.heartbeat_interval_ms
    // This engine's own event loop stalled (a long synchronous task, a paused process): the
    // heartbeats that arrived meanwhile are still unread, so the stall is not the others' silence.
    const stall = this.lastTick === undefined ? 0 : now - this.lastTick - interval
    this.lastTick = now
    if (stall > interval / 2) for (const member of this.members.values()) member.lastSeen += stall
    for (const member of [...this.members.values()]) {
      const silent = now - member.lastSeen
      if (silent > this.config.heartbeat_timeout_ms) this.leave(member, `no heartbeat for ${this.config.heartbeat_timeout_ms} ms`)
      else if (silent > interval * 1.5) void this.probe(member)
    }
  }

  /**
   * A member whose heartbeat is late: asks NATS whether it still has a subscription. An engine that
   * was killed has none, and NATS says so at once ("no responders"), long before the timeout.
   */
  private async probe(member: Member): Promise<void> {
    const nc = this.nc
    if (member.probing || nc === undefined) return
    member.probing = true
    try {
      await nc.request(this.subjects.snapshot(member.instance), '', { timeout: this.config.heartbeat_interval_ms })
    } catch (err) {
      if ((err as { code?: string }).code === '503' && this.connected) this.leave(member, 'NATS found no subscription of it')
    } finally {
      member.probing = false
    }
  }

  private onHeartbeat(msg: Msg): void {
    const beat = readHeartbeat(msg.data)
    if (beat === undefined || beat.instance === this.instance) return
    let member = this.members.get(beat.instance)
    if (beat.leaving === true) {
      if (member !== undefined) this.leave(member, 'it is stopping')
      return
    }
    const now = performance.now()
    if (member === undefined) {
      if (this.members.size >= MAX_MEMBERS) {
        if (!this.duplicateWarned.has('\0full')) {
          this.duplicateWarned.add('\0full')
          this.host.log.warn(`fleet ${this.config.name} has more than ${MAX_MEMBERS} engines; engine ${beat.engine} and later ones are ignored`)
        }
        return
      }
      if (beat.engine === this.config.engine && !this.duplicateWarned.has(beat.engine)) {
        this.duplicateWarned.add(beat.engine)
        this.host.log.warn(`another engine of fleet ${this.config.name} is also named ${beat.engine}: give each engine its own fleet.engine (or SVC_FLEET_ENGINE)`)
      }
      member = new Member(beat, now)
      this.members.set(beat.instance, member)
      this.host.log.info(`engine ${beat.engine} joined fleet ${this.config.name}`)
      // A newcomer learns about this engine from its next heartbeat; answer now to save a tick.
      this.publish(this.subjects.heartbeat, JSON.stringify(this.heartbeat()))
    } else member.heard(beat, now)
    if (member.appliedVersion < member.announcedVersion) void this.fetch(member)
  }

  /** Asks `member` for its snapshot and applies it; again while a newer version was announced meanwhile. */
  private async fetch(member: Member): Promise<void> {
    const nc = this.nc
    if (member.fetching || nc === undefined) return
    member.fetching = true
    try {
      while (this.members.get(member.instance) === member && member.appliedVersion < member.announcedVersion && this.connected) {
        let snapshot: Snapshot | undefined
        try {
          const answer = await nc.request(this.subjects.snapshot(member.instance), '', { timeout: Math.max(SNAPSHOT_TIMEOUT_MS, this.config.heartbeat_interval_ms * 2) })
          snapshot = readSnapshot(answer.data)
        } catch (err) {
          this.host.log.debug(`fleet: snapshot of engine ${member.engine} not received: ${(err as Error).message}`)
          return
        }
        if (snapshot === undefined || snapshot.instance !== member.instance) {
          this.host.log.warn(`fleet: engine ${member.engine} sent a snapshot of the wrong shape; its functions are not callable from here`)
          return
        }
        if (this.members.get(member.instance) !== member) return
        if (snapshot.version <= member.appliedVersion) return
        this.report(applySnapshot(member, snapshot, this.host.functions, this.calls, this.host.triggers))
        this.reconcileTriggers()
      }
    } finally {
      member.fetching = false
    }
  }

  /** `member` left the fleet: its functions go, its calls in flight end with `invocation_stopped`. */
  private leave(member: Member, why: string): void {
    if (this.members.get(member.instance) !== member) return
    this.members.delete(member.instance)
    this.host.log.info(`engine ${member.engine} left fleet ${this.config.name}: ${why}`)
    this.report(removeMember(member, this.host.functions, this.host.triggers))
    this.calls.memberGone(member)
    this.reconcileTriggers()
  }

  /**
   * Adds the fleet-wide bindings that were left out because an engine (this one, or one that left)
   * already had the same: when that one goes, another's takes its place.
   */
  private reconcileTriggers(): void {
    for (const member of this.members.values()) applyTriggers(member, this.host.triggers)
  }

  private report(applied: Applied): void {
    for (const id of applied.connected) this.host.workerEvent('worker_connected', id)
    for (const id of applied.disconnected) this.host.workerEvent('worker_disconnected', id)
    if (applied.functionsChanged) this.host.functionsChanged()
  }

  // ---- this engine's snapshot ------------------------------------------------------------------

  private localExport(): { workers: WorkerSummary[]; functions: SnapshotFunction[]; triggers: SnapshotTrigger[] } {
    const workers = this.host.localWorkers()
    const local = new Set<Peer>(workers)
    const functions: SnapshotFunction[] = []
    for (const entry of this.host.functions.entries()) {
      for (const replica of entry.replicas) {
        if (!local.has(replica.peer)) continue
        const f: SnapshotFunction = { namespace: entry.namespace, function_id: entry.id, worker_id: replica.peer.workerId }
        if (replica.description !== undefined) f.description = replica.description
        if (replica.metadata !== undefined) f.metadata = replica.metadata
        if (replica.request_format !== undefined) f.request_format = replica.request_format
        if (replica.response_format !== undefined) f.response_format = replica.response_format
        if (replica.invocation !== undefined) f.invocation = replica.invocation
        functions.push(f)
      }
    }
    const triggers: SnapshotTrigger[] = []
    for (const b of this.host.triggers.allBindings()) {
      if (b.owner === null || !local.has(b.owner) || !FLEET_TRIGGER_TYPES.has(b.trigger_type)) continue
      const t: SnapshotTrigger = { id: b.id, trigger_type: b.trigger_type, function_id: b.function_id, namespace: b.namespace, config: b.config }
      if (b.metadata !== undefined) t.metadata = b.metadata
      triggers.push(t)
    }
    return { workers: workers.map((w) => this.host.workerSummary(w)), functions, triggers }
  }

  /**
   * Rebuilds this engine's snapshot; true when it changed (its version is then raised). A snapshot
   * over NATS's `max_payload` leaves out the request and response formats, then the descriptions
   * and metadata, and says so in the log.
   */
  private refreshSnapshot(): boolean {
    const { workers, functions, triggers } = this.localExport()
    const rest = JSON.stringify({ functions, triggers }).slice(1)
    const body = `{"workers":${JSON.stringify(workers)},${rest}`
    if (body === this.lastBody) return false
    // What the workers serve, without how busy they are (ACTIVE_COUNTS_REFRESH_MS).
    const shape = `${JSON.stringify(workers.map((w) => ({ ...w, active_invocations: 0 })))}${rest}`
    const now = performance.now()
    if (shape === this.lastShape && now - this.lastVersionAt < ACTIVE_COUNTS_REFRESH_MS) return false
    this.lastShape = shape
    this.lastVersionAt = now
    this.lastBody = body
    this.version++
    let json = `{"instance":"${this.instance}","version":${this.version},${body.slice(1)}`
    if (Buffer.byteLength(json) > this.maxPayload) {
      const lean = functions.map(({ request_format: _a, response_format: _b, ...rest }) => rest)
      json = JSON.stringify({ instance: this.instance, version: this.version, workers, functions: lean, triggers })
      if (Buffer.byteLength(json) > this.maxPayload) {
        json = JSON.stringify({ instance: this.instance, version: this.version, workers, functions: functions.map((f) => ({ namespace: f.namespace, function_id: f.function_id, worker_id: f.worker_id })), triggers })
      }
      this.host.log.warn(`fleet: this engine's ${functions.length} functions do not fit NATS's max_payload ${this.maxPayload} with their formats; the other engines list them without`)
    }
    this.snapshotJson = json
    return true
  }

  /** Calls served here for other engines, by reply subject and leg id: what their cancels name. */
  private readonly served = new CallIndex<Flight>()

  private lastBody = ''
  private lastShape = ''
  /** Monotonic ms when the version was last raised. */
  private lastVersionAt = -Infinity
  /** Monotonic ms of the previous heartbeat tick. */
  private lastTick: number | undefined

  // ---- serving -------------------------------------------------------------------------------

  /**
   * A message on this engine's call subject: one or several `invokefunction` frames from another
   * engine, each run on this engine's own replicas and answered on the message's reply subject.
   */
  private serve(msg: Msg): void {
    eachFrame(msg.data, (frame) => this.serveFrame(frame, msg.reply))
  }

  private serveFrame(frame: Uint8Array, replySubject: string | undefined): void {
    const decoded = decodeFrame(frame, false)
    if (decoded.kind === 'message' && decoded.message.type === 'cancelinvocation') {
      // Only the engine that made the call can name it: its reply subject and the leg's id (which
      // starts with that engine's secret) are both part of the key.
      if (replySubject !== undefined) this.served.get(servedKey(replySubject, decoded.message.invocation_id))?.cancel(decoded.message.reason)
      return
    }
    if (decoded.kind !== 'message' || decoded.message.type !== 'invokefunction') {
      if (replySubject !== undefined) {
        const reason = decoded.kind === 'malformed' ? decoded.reason : 'not an invokefunction frame'
        this.batcher.add(replySubject, encodeResult('', '""', undefined, Errors.invalidMessage(`a call from another engine of the fleet was refused: ${reason}`).toErrorBody()))
      }
      return
    }
    const m = decoded.message
    const legId = m.invocation_id
    const answered = legId !== undefined && replySubject !== undefined && m.action?.type !== 'void'
    const reply = answered ? new FleetReply(this.batcher, this.state, replySubject, legId, JSON.stringify(m.function_id)) : new DiscardReply(m.function_id, this.host.log)
    const namespace = m.namespace ?? 'default'
    const flight = answered
      ? new Flight(this.host.flights, m.function_id, namespace, null, reply, this.served, servedKey(replySubject, legId))
      : new Flight(this.host.flights, m.function_id, namespace, null, reply)
    const invocation: Invocation = {
      requestedId: m.function_id,
      functionId: m.function_id,
      namespace,
      data: m.data,
      caller: null,
      access: PERMISSIVE,
      reply: flight,
      flight,
      localOnly: true,
    }
    if (m.metadata !== undefined) invocation.metadata = m.metadata
    if (m.traceparent !== undefined) invocation.traceparent = m.traceparent
    if (m.baggage !== undefined) invocation.baggage = m.baggage
    this.host.run(invocation)
  }
}

/** The key of a call served for another engine: its reply subject and its leg id. */
function servedKey(replySubject: string, legId: string): string {
  return `${replySubject} ${legId}`
}

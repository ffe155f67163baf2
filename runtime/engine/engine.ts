/**
 * The svc engine: worker listeners and the session protocol (protocol.md §2–§4, §13.2: accept,
 * authenticate, open, the inbound queue, frame dispatch, the announce, cleanup), and the lifecycle
 * of the built-in workers. It wires the parts that live in their own modules behind narrow
 * interfaces: {@link Registrations} (§5, §8.1, §13.5), {@link TriggerProviders} (§8.2–§8.4), the
 * engine functions (§11), the {@link InvocationPipeline} (§6) and the registries.
 * `docs/architecture.md` shows how the parts fit.
 *
 * Sessions run over any {@link Transport}: the listeners hand over WebSocket transports, and
 * {@link Engine.connect} accepts in-memory ones, so the whole session protocol runs without sockets
 * in tests. {@link Engine.inject} runs one invocation in-process (Fastify's `inject()` idea).
 *
 * @example
 * const engine = new Engine(config, { builtins: createBuiltins(config) })
 * await engine.start()
 * console.log(engine.workerUrls)          // ['ws://127.0.0.1:49134']
 * await engine.inject({ function_id: 'state::get', data: { scope: 'links', key: 'abc' } })
 * await engine.stop()
 */
import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { isIP } from 'node:net'
import {
  Codes,
  decodeFrame,
  encodeFrame,
  encodeTriggerResult,
  errorBody,
  errorBodyOf,
  Errors,
  HANDLER_SPANS_FEATURE,
  idProblem,
  RejectionMessages,
  type AuthInput,
  type Decoded,
  type ErrorBody,
  type FleetListResult,
  type InboundInvoke,
  type InboundMessage,
  type MalformedCode,
  type PeerInfo,
  type Connector,
  type Transport,
  type WorkerAnnounce,
} from 'svc-protocol'
import { memoryConnector } from 'svc-protocol/transport/memory'
import { AccessPolicy, ListenerAccess, PERMISSIVE, readAuthResult } from './access/policy.ts'
import { BuiltinPeer, type BuiltinHost } from './builtin-peer.ts'
import { ChannelRegistry } from './channels/index.ts'
import { DEFAULT_LEG_LIMITS, LegTable, RemoteCallee, type LegLimits } from './callees.ts'
import { registerEngineFunctions, visibleFunctionSummaries, workerSummary } from './engine-functions.ts'
import { EngineTriggers } from './engine-triggers.ts'
import { FunctionRegistry } from './functions.ts'
import { handlerSpanSource } from './handler-spans.ts'
import { Flight, FlightTable } from './flights.ts'
import { Keepalive } from './keepalive.ts'
import { Listener, type ChannelEndpoint, type LinkKind } from './listener.ts'
import { consoleLogger, type LogLevel } from './logger.ts'
import type { Peer } from './peer.ts'
import { DiscardReply, InvocationPipeline, PromiseReply, RelayReply, sendErrorFrame, type Invocation, type PipelineHost } from './pipeline.ts'
import { bytesOver, frameBytes, Session } from './session.ts'
import { TelemetryHub } from './telemetry.ts'
import { Registrations } from './registrations.ts'
import { TriggerProviders } from './trigger-providers.ts'
import { TriggerRegistry } from './triggers.ts'
import { Fleet } from '../fleet/fleet.ts'
import type { Clock } from '../workers/shared/clock.ts'
import type {
  BuiltinWorker,
  EngineConfig,
  ListenerConfig,
  LocalInvokeRequest,
  Logger,
} from './types.ts'

export const ENGINE_VERSION = '0.1.0'

/** `workerregistered.features` (svc addition): this engine records handler spans from their results' times (`handler-spans.ts`). */
const ENGINE_FEATURES = Object.freeze([HANDLER_SPANS_FEATURE]) as string[]

export interface EngineOptions {
  /**
   * Where the engine's own log records are printed; the engine filters them by the `log_level`
   * setting (§12.1) unless `logLevel` is given, and the observability worker stores them.
   */
  log?: Logger
  /** A threshold chosen by the operator (`svc --log-level`): the `log_level` setting then has no effect. */
  logLevel?: LogLevel
  /**
   * Built-in workers to run (the composition root passes them, e.g. `createBuiltins(config)`), or a
   * function that loads and makes them, called by {@link Engine.start} once the listeners accept:
   * `svc` loads the built-ins' code while its workers start (issue 20 "Engine start"); default none.
   * A rejection fails the start like a built-in that fails to start.
   */
  builtins?: BuiltinWorker[] | (() => Promise<BuiltinWorker[]>)
  /** Bounds on open invocations (defaults {@link DEFAULT_LEG_LIMITS}). */
  limits?: Partial<LegLimits>
  /** Clock of the channel sweep (protocol.md §9); default the real one. Tests move a manual one. */
  clock?: Clock
}

export class Engine implements BuiltinHost, PipelineHost {
  readonly config: EngineConfig
  readonly log: Logger
  readonly functions = new FunctionRegistry()
  readonly triggers: TriggerRegistry
  readonly pipeline: InvocationPipeline
  /** Spans of built-ins and telemetry frames go here; the observability worker attaches (§12). */
  readonly telemetry: TelemetryHub
  /** Channels (§9): `engine::channels::create`, the `/ws/channels/…` route, built-ins' in-process ends. */
  readonly channels: ChannelRegistry
  readonly internalTimeoutMs: number
  readonly backpressureBytes: number
  /** Registration of functions, trigger types and triggers by sessions and built-ins (§5, §8.1, §13.5). */
  readonly registrations: Registrations
  /** Invocations in flight: `cancelinvocation`, `engine::invocations::list` / `cancel`. */
  readonly flights = new FlightTable()
  private readonly sessions = new Map<string, Session>()
  private readonly builtinPeers = new Map<string, BuiltinPeer>()
  private readonly legs: LegTable
  private readonly listeners: Listener[] = []
  private readonly keepalives = new Map<ListenerConfig, Keepalive>()
  private readonly access = new Map<ListenerConfig, ListenerAccess>()
  private builtins: BuiltinWorker[] | (() => Promise<BuiltinWorker[]>)
  private readonly runningBuiltins: BuiltinWorker[] = []
  private readonly enginePeer: BuiltinPeer
  private engineTriggers: EngineTriggers | undefined
  /** This engine's membership of a fleet (`fleet` in config.yaml, issue 19); undefined when alone. */
  readonly fleet: Fleet | undefined
  private started = false
  private stopping = false
  /** {@link watchRegistrations}' callbacks. */
  private readonly registrationWatchers = new Set<() => void>()
  /** Settles once the built-ins started (or failed to): sessions open only then ({@link start}). */
  private builtinsStarting: Promise<void> | undefined

  constructor(config: EngineConfig, options: EngineOptions = {}) {
    this.config = config
    this.builtins = options.builtins ?? []
    this.internalTimeoutMs = config.internal_invocation_timeout_ms
    this.backpressureBytes = Math.min(...config.listeners.map((l) => l.backpressure_bytes), Infinity)
    this.legs = new LegTable({ ...DEFAULT_LEG_LIMITS, ...options.limits })
    this.pipeline = new InvocationPipeline(this)
    this.telemetry = new TelemetryHub(this.pipeline, this.functions, options.logLevel)
    this.legs.telemetry = this.telemetry
    this.log = this.telemetry.engineLogger(options.log ?? consoleLogger('engine', 'trace'))
    this.channels = new ChannelRegistry(options.clock === undefined ? { log: this.log } : { log: this.log, clock: options.clock })
    this.triggers = new TriggerRegistry(new TriggerProviders(this.log, (from, id, error) => this.triggers.providerAnswer(from, id, error)))
    this.registrations = new Registrations({
      functions: this.functions,
      triggers: this.triggers,
      callHook: (functionId, input) => this.invokeAs(null, { function_id: functionId, data: input, timeoutMs: this.internalTimeoutMs }),
      functionsChanged: () => this.engineTriggers?.functionsChanged(),
      replicasChanged: () => {
        this.fleet?.localChanged()
        this.registrationChanged()
      },
      httpFunctions: () => this.config.http_functions,
    })
    this.enginePeer = new BuiltinPeer(this, 'engine', ENGINE_VERSION, true)
    this.fleet =
      config.fleet === undefined
        ? undefined
        : new Fleet(config.fleet, {
            functions: this.functions,
            triggers: this.triggers,
            log: this.log,
            run: (invocation) => this.pipeline.run(invocation),
            flights: this.flights,
            localWorkers: () => [...this.sessions.values()],
            workerSummary: (peer) => workerSummary(peer, this.functions, this.engineName),
            workerUrls: () => this.workerUrls,
            functionsChanged: () => this.engineTriggers?.functionsChanged(),
            workerEvent: (event, workerId) => this.engineTriggers?.workerEvent(event, workerId),
          })
  }

  /** WebSocket URLs workers connect to, one per listener, with the ports actually bound. */
  get workerUrls(): string[] {
    return this.listeners.map((l) => l.url)
  }

  /** Addresses a built-in worker reported (e.g. `['http://127.0.0.1:3111']` for `svc-http`). */
  listenUrls(workerName: string): string[] {
    return this.builtinPeers.get(workerName)?.listenUrls ?? []
  }

  /**
   * Binds the listeners, then starts the engine functions and the built-in workers (cli.md §3).
   * Connections accepted while the built-ins start wait for them before their session opens
   * (§3.1: no `workerregistered` yet; their frames queue, bounded as while auth runs), so a
   * worker's first calls and trigger registrations find every built-in function and trigger type.
   *
   * @param options.onListening called once every listener accepts connections and before the
   *   built-ins start: `svc` starts its workers there, so they load while the built-ins start
   *   (issue 20). An exception it throws fails the start.
   * @throws the error of a listener that cannot bind or of a built-in that fails to start (the
   *   engine is stopped first)
   */
  async start(options: { onListening?: () => void } = {}): Promise<void> {
    if (this.started) throw new Error('engine already started')
    this.started = true
    await mkdir(this.config.data_dir, { recursive: true })
    for (const listener of this.config.listeners) {
      if (listener.rbac) this.access.set(listener, new ListenerAccess(listener.rbac, listener.middleware_function_id))
    }
    registerEngineFunctions(this, this.enginePeer)
    this.channels.start()
    this.engineTriggers = new EngineTriggers(this.enginePeer, this.log, (binding) => visibleFunctionSummaries(this.functions, this.accessOf(this.triggers.getBinding(binding.id)?.owner), this.engineName))
    try {
      for (const config of this.config.listeners) {
        const keepalive = new Keepalive({ pingIntervalMs: config.ping_interval_ms, idleTimeoutMs: config.idle_timeout_ms, drainTimeoutMs: config.drain_timeout_ms }, this.log)
        this.keepalives.set(config, keepalive)
        const listener = new Listener(config, this.log, (transport, kind, info) => this.accept(transport, kind, info, config), this.channelEndpoint(config, keepalive))
        await listener.start()
        this.listeners.push(listener)
        if (!config.rbac && !isLoopback(config.host)) {
          this.log.warn(
            `worker listener ${listener.url} accepts connections from other hosts and has no rbac block: any client can register and invoke every function`,
            { host: config.host },
          )
        }
      }
      if (this.fleet !== undefined) {
        const fleet = this.fleet
        this.telemetry.addHealthSource('fleet', () => fleet.health())
        await fleet.start()
      }
      let builtinsStarted!: () => void
      this.builtinsStarting = new Promise<void>((resolve) => (builtinsStarted = resolve))
      try {
        options.onListening?.()
        await this.startBuiltins()
      } finally {
        this.builtinsStarting = undefined
        builtinsStarted()
      }
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** The enabled built-in workers, one after the other in their configured order. */
  private async startBuiltins(): Promise<void> {
    if (typeof this.builtins === 'function') this.builtins = await this.builtins()
    for (const worker of this.builtins) {
      const entry = this.config.builtins[worker.name]
      if (entry && entry.enabled === false) continue
      const peer = new BuiltinPeer(this, worker.name, ENGINE_VERSION)
      this.builtinPeers.set(worker.name, peer)
      this.runningBuiltins.push(worker)
      await worker.start(
        { worker: peer, dataDir: this.config.data_dir, internalInvocationTimeoutMs: this.internalTimeoutMs, log: this.log, telemetry: this.telemetry },
        entry?.config,
      )
    }
  }

  /** Closes every session (code 1001), stops the built-ins and the listeners. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    await this.fleet?.stop()
    this.engineTriggers?.stop()
    for (const session of [...this.sessions.values()]) {
      session.transport.close(1001, 'engine shutting down')
      this.cleanup(session)
    }
    this.channels.stop()
    await Promise.all(this.listeners.map((l) => l.stop()))
    for (const keepalive of this.keepalives.values()) keepalive.stop()
    for (const worker of [...this.runningBuiltins].reverse()) {
      try {
        await worker.stop()
      } catch (err) {
        this.log.error(`${worker.name} failed to stop`, { error: (err as Error).message })
      }
      const peer = this.builtinPeers.get(worker.name)
      if (peer) this.removeBuiltinPeer(peer)
    }
  }

  /**
   * Runs one invocation in-process, without sockets (Fastify's `inject()` idea): the whole
   * pipeline with the routing, fallback and timeouts of an engine-originated call (§6.5).
   * @returns the result (undefined when none); a void action resolves at once.
   * @throws SvcError with the wire code of the failure.
   */
  inject(request: LocalInvokeRequest): Promise<unknown> {
    return this.invokeAs(null, request)
  }

  /**
   * Accepts a worker session over any transport, as if it had connected to a listener (the first
   * by default; its access rules apply). With an in-memory transport this runs the whole session
   * protocol without sockets. The transport enforces `max_message_bytes` (§2), as the listeners'
   * WebSocket server and {@link connector}'s transports do.
   */
  connect(transport: Transport, info: Partial<PeerInfo> = {}, listener: ListenerConfig = this.config.listeners[0]!): void {
    this.accept(transport, 'worker', { ip: info.ip ?? null, headers: info.headers ?? {}, query: info.query ?? {} }, listener)
  }

  /**
   * A {@link Connector} that connects clients (svc-sdk's `WorkerClient`, test workers) to this
   * engine through in-memory transports, as if to `listener` (the first by default): the in-process
   * harness for tests that need no real socket.
   */
  connector(listener: ListenerConfig = this.config.listeners[0]!): Connector {
    return memoryConnector((server, info) => this.connect(server, info, listener), { ip: '127.0.0.1' }, listener.max_message_bytes)
  }

  // ---- queries -------------------------------------------------------------------------------

  /** This engine's name in its fleet (`fleet.engine`); undefined when it is alone. */
  get engineName(): string | undefined {
    return this.config.fleet?.engine
  }

  /** `engine::fleet::list` (issue 19). */
  fleetList(): FleetListResult {
    const fleet = this.fleet
    if (fleet === undefined) return { fleet: null, engine: null, status: 'alone', engines: [] }
    const health = fleet.health()
    return { fleet: fleet.config.name, engine: fleet.config.engine, status: health.status, detail: health.detail, engines: fleet.list() }
  }

  /** Workers listed by `engine::workers::*`: open sessions, running built-ins, and in a fleet the other engines' workers. */
  listedPeers(): Peer[] {
    const local = [...this.sessions.values(), ...[...this.builtinPeers.values()].filter((p) => !p.internal)]
    return this.fleet === undefined ? local : [...local, ...this.fleet.remoteWorkers()]
  }

  peerById(workerId: string): Peer | undefined {
    return (
      this.sessions.get(workerId) ??
      [...this.builtinPeers.values()].find((p) => p.workerId === workerId && !p.internal) ??
      this.fleet?.remoteWorkers().find((p) => p.workerId === workerId)
    )
  }

  /**
   * `engine::workers::drain` (issue 21): marks the open connection `workerId` draining
   * (`Session.draining`: replica selection passes it over while another live replica is there) and
   * returns it; undefined when no open connection of this engine has that id.
   */
  drainSession(workerId: string): Session | undefined {
    const session = this.sessions.get(workerId)
    if (session === undefined || !session.alive) return undefined
    session.draining = true
    return session
  }

  /** Open sessions, most recent last. */
  openSessions(): Session[] {
    return [...this.sessions.values()]
  }

  /** The access rules a peer acts under: a session's own, permissive for built-ins. */
  accessOf(peer: Peer | null | undefined): AccessPolicy {
    return peer instanceof Session ? peer.access : PERMISSIVE
  }

  // ---- sessions ------------------------------------------------------------------------------

  /**
   * The `/ws/channels/…` route of one listener (§9): no session and no auth function; its frame
   * limit (`max_message_bytes`), keepalive and slow-consumer rule apply to the channel's sockets.
   */
  private channelEndpoint(listener: ListenerConfig, keepalive: Keepalive): ChannelEndpoint {
    const watch = (target: Parameters<Keepalive['track']>[0]) => ({ heard: keepalive.track(target), forget: () => keepalive.untrack(target) })
    return {
      find: (channelId, key, direction) => (this.stopping ? undefined : this.channels.find(channelId, key, direction)),
      attach: (ticket, ws, tcp) => this.channels.attachSocket(ticket, ws, tcp, { maxMessageBytes: listener.max_message_bytes, watch }),
    }
  }

  private accept(transport: Transport, kind: LinkKind, info: PeerInfo, listener: ListenerConfig): void {
    if (this.stopping) {
      transport.terminate()
      return
    }
    const keepalive = this.keepalives.get(listener)
    const touch = keepalive?.track(transport) ?? noop
    const listenerAccess = this.access.get(listener)
    if (kind === 'telemetry') return this.acceptTelemetry(transport, listenerAccess, info, touch, keepalive, listener)
    const session = new Session(transport, listener, info)
    transport.setHandlers({
      message: (data, isBinary) => {
        touch()
        this.receive(session, data, isBinary)
      },
      alive: touch,
      close: () => {
        keepalive?.untrack(transport)
        this.cleanup(session)
      },
      error: (err) => this.log.debug('worker socket error', { worker_id: session.workerId, error: err.message }),
    })
    const starting = this.builtinsStarting
    if (starting !== undefined) {
      // The built-ins are still starting (start()'s onListening): the session opens (and its auth
      // function runs) once they are up; its frames wait in its inbound queue meanwhile.
      void starting.then(() => this.admit(session, listenerAccess, info, listener))
      return
    }
    this.admit(session, listenerAccess, info, listener)
  }

  /** Opens an accepted session, after the listener's auth function when it has one (§3.1 step 1). */
  private admit(session: Session, listenerAccess: ListenerAccess | undefined, info: PeerInfo, listener: ListenerConfig): void {
    if (this.stopping) {
      session.transport.terminate()
      return
    }
    if (listenerAccess?.rbac.auth_function_id === undefined) {
      this.open(session, listenerAccess === undefined ? PERMISSIVE : new AccessPolicy(listenerAccess))
      return
    }
    this.authenticate(listenerAccess, info).then(
      (policy) => this.open(session, policy),
      (error: ErrorBody) => this.refuse(session.transport, error, () => session.retire(), listener.max_message_bytes),
    )
  }

  /**
   * Runs the listener's auth function (§3.1 step 1, §13.2) and builds the session's rules from its
   * result. Rejects with the AUTH_ERROR body to send.
   */
  private async authenticate(listenerAccess: ListenerAccess, info: PeerInfo): Promise<AccessPolicy> {
    const input: AuthInput = { headers: { ...info.headers }, query_params: { ...info.query }, ip_address: info.ip ?? '' }
    let result: unknown
    try {
      result = await this.invokeAs(null, { function_id: listenerAccess.rbac.auth_function_id!, data: input, timeoutMs: this.internalTimeoutMs })
    } catch (err) {
      throw Errors.authFailed(errorBodyOf(err).message).toErrorBody()
    }
    if (result === undefined || result === null) throw Errors.authNoResult().toErrorBody()
    const read = readAuthResult(result)
    if (typeof read === 'string') throw Errors.authInvalidResult(read).toErrorBody()
    return new AccessPolicy(listenerAccess, read)
  }

  /**
   * Sends the AUTH_ERROR frame and closes with 1008 (§3.1, §5.15); nothing is registered. An auth
   * function's message too large for the connection is not sent: its size is.
   */
  private refuse(transport: Transport, error: ErrorBody, retire: () => void, limit: number): void {
    retire()
    if (!transport.isOpen) return
    this.log.info(`connection refused by the auth function: ${error.message.slice(0, 1024)}`)
    let frame = encodeFrame({ type: 'error', error })
    const bytes = bytesOver(frame, limit)
    if (bytes !== undefined) frame = encodeFrame({ type: 'error', error: errorBody(Errors.authFailed, `the auth function's error of ${bytes} bytes exceeds max_message_bytes ${limit}`) })
    transport.send(frame)
    transport.close(1008, 'authentication failed')
  }

  /** Session start, steps 2–6 of §3.1. */
  private open(session: Session, access: AccessPolicy): void {
    if (session.state !== 'authenticating' || !session.transport.isOpen || this.stopping) return
    session.access = access
    session.state = 'open'
    session.callee = new RemoteCallee(session, this.legs)
    this.registrations.openSession(session)
    this.sessions.set(session.workerId, session)
    session.graceTimer = setTimeout(() => this.resolveNamespace(session, 'default'), this.config.registration_namespace_grace_ms)
    session.send(encodeFrame({ type: 'workerregistered', worker_id: session.workerId, reattach_token: session.reattachToken, features: ENGINE_FEATURES }))
    this.engineTriggers?.workerEvent('worker_connected', session.workerId)
    this.fleet?.localChanged()
    session.blocked = false
    this.drain(session)
  }

  /**
   * `/otel` (§10.2): authenticated like `/`, never registered; a JSON ping is answered, `OTLP`/`MTRC`/`LOGS`
   * frames go to {@link telemetry}. Frames that arrive before the link may be read (the built-ins,
   * the observability worker among them, still starting, or the listener's auth function not done)
   * wait, in order, and are handed over once it may: an SDK sends what it queued while disconnected
   * as soon as the socket opens. More than `max_inbound_bytes` waiting closes the link with 1008, as
   * a session's queue does; a refused link drops them.
   */
  private acceptTelemetry(transport: Transport, listenerAccess: ListenerAccess | undefined, info: PeerInfo, touch: () => void, keepalive: Keepalive | undefined, listener: ListenerConfig): void {
    const authenticated = listenerAccess?.rbac.auth_function_id === undefined
    let waiting: Uint8Array[] | undefined = authenticated && this.builtinsStarting === undefined ? undefined : []
    let waitingBytes = 0
    /** Refused (too many bytes waiting, or by the auth function): what waits and later frames are dropped. */
    let refused = false
    let closed = false
    const take = (data: Uint8Array) => {
      const decoded = decodeFrame(data, true)
      if (decoded.kind === 'telemetry') this.telemetry.frame(decoded.prefix, decoded.json, {})
    }
    transport.setHandlers({
      message: (data, isBinary) => {
        touch()
        if (refused) return
        if (isBinary) {
          const frame = typeof data === 'string' ? Buffer.from(data) : data
          if (waiting === undefined) return take(frame)
          waitingBytes += frame.byteLength
          if (waitingBytes > listener.max_inbound_bytes) {
            refused = true
            waiting = []
            this.log.warn('closing a telemetry link that sent too much before the engine could read it', { queued_bytes: waitingBytes })
            transport.close(1008, `more than ${listener.max_inbound_bytes} bytes of frames queued (max_inbound_bytes)`)
            return
          }
          waiting.push(frame)
          return
        }
        const text = typeof data === 'string' ? data : Buffer.from(data).toString()
        if (text.length < 64 && /"type"\s*:\s*"ping"/.test(text)) transport.send('{"type":"pong"}')
      },
      alive: touch,
      close: () => {
        closed = true
        keepalive?.untrack(transport)
      },
    })
    if (waiting === undefined) return
    // What a link sent before it closed is still taken, once the engine may (without an auth function).
    const open = () => {
      const held = refused ? [] : (waiting ?? [])
      waiting = undefined
      for (const frame of held) take(frame)
    }
    void (this.builtinsStarting ?? Promise.resolve()).then(() => {
      if (this.stopping || refused) return
      if (authenticated) return open()
      if (closed) return
      this.authenticate(listenerAccess!, info).then(open, (error: ErrorBody) => {
        refused = true
        waiting = []
        this.refuse(transport, error, noop, listener.max_message_bytes)
      })
    })
  }

  /**
   * An inbound frame: handled now, or queued behind an asynchronous step that is still running.
   * A full queue (frames or `max_inbound_bytes`, `Session.queue`) closes the connection with 1008
   * and frees what it held.
   */
  private receive(session: Session, data: string | Uint8Array, isBinary: boolean): void {
    if (session.state === 'closed' || !session.reading) return
    if (session.blocked || session.queued) {
      const refused = session.queue(data, isBinary)
      if (refused === undefined) return
      this.log.warn('closing a connection that sent too much while its session was busy', {
        worker_id: session.workerId,
        reason: refused,
        queued_bytes: session.inboundBytes,
      })
      session.stopReading()
      session.transport.close(1008, refused)
      return
    }
    this.process(session, decodeFrame(data, isBinary), data)
  }

  /** Takes queued frames in order until the queue is empty or a step blocks it again. */
  private drain(session: Session): void {
    while (!session.blocked && session.state !== 'closed') {
      const frame = session.nextQueued()
      if (frame === undefined) return
      if ('message' in frame) this.step(session, frame.message)
      else this.process(session, decodeFrame(frame.data, frame.isBinary), frame.data)
    }
  }

  /** The error boundary of one frame (`data` as received): whatever happens, the engine keeps running. */
  private process(session: Session, decoded: Decoded, data: string | Uint8Array): void {
    try {
      switch (decoded.kind) {
        case 'message':
          if (session.shouldHold(decoded.message)) {
            if (session.hold(decoded.message, frameBytes(data))) this.resolveNamespace(session, 'default')
            return
          }
          this.step(session, decoded.message)
          return
        case 'telemetry':
          this.telemetry.frame(decoded.prefix, decoded.json, { worker_id: session.workerId, ...(session.announce?.name ? { worker_name: session.announce.name } : {}) })
          return
        case 'ignored':
          if (decoded.reason) this.log.debug(`ignored frame: ${decoded.reason}`)
          return
        case 'malformed':
          this.onMalformed(session, decoded.reason, decoded.raw, decoded.code)
      }
    } catch (err) {
      this.frameFailed(session, err)
    }
  }

  /** Handles one message; an asynchronous handling (a hook) holds the session's later frames. */
  private step(session: Session, message: InboundMessage): void {
    let pending: Promise<void> | void
    try {
      pending = this.handleMessage(session, message)
    } catch (err) {
      this.frameFailed(session, err)
      return
    }
    if (pending === undefined) return
    session.blocked = true
    pending
      .catch((err: unknown) => this.frameFailed(session, err))
      .finally(() => {
        session.blocked = false
        this.drain(session)
      })
  }

  private frameFailed(session: Session, err: unknown): void {
    const errorId = randomBytes(6).toString('hex')
    this.log.error('a frame could not be handled; the connection stays open', {
      worker_id: session.workerId,
      error_id: errorId,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    })
  }

  /**
   * Answers malformed frames that owe a reply (§3.5), with `code`: `invalid_message`, or
   * `INVALID_ID` / `INVALID_NAMESPACE` for an id or a namespace that is not well-formed text; logs
   * the rest. A registration is refused with `registrationrejected`, whose code stays
   * `FUNCTION_NAMESPACE_CONFLICT` (§5.11: SDKs treat any other code as fatal).
   */
  private onMalformed(session: Session, reason: string, raw: Record<string, unknown> | undefined, code: MalformedCode): void {
    const type = raw?.type
    const invocationId = raw?.invocation_id
    const action = raw?.action as { type?: unknown } | undefined
    const isVoid = typeof action === 'object' && action !== null && action.type === 'void'
    const text = (v: unknown) => (typeof v === 'string' && idProblem(v) === undefined ? v : '')
    const answer = () => malformedAnswer(code, reason)
    if (typeof invocationId === 'string' && !isVoid && (type === 'invokefunction' || typeof type !== 'string')) {
      new RelayReply(session, invocationId, JSON.stringify(text(raw?.function_id))).error(answer())
      return
    }
    if (type === 'invocationresult' && typeof invocationId === 'string') {
      // A result the engine cannot forward still ends its call, so the caller is not left waiting.
      this.legs.complete(session, invocationId, undefined, Errors.invalidMessage(`result of the callee refused: ${reason}`).toErrorBody())
      return
    }
    if (type === 'registerfunction' || type === 'registertriggertype') {
      const id = raw?.id
      const field = type === 'registerfunction' ? 'function_id' : 'trigger_type_id'
      if (typeof id !== 'string' || id === '') {
        this.registrations.reject(session, 'invalid', RejectionMessages.invalid(), session.namespace, { [field]: '' })
        return
      }
      // The reason names the code a call would get (raw clients read why; svc-sdk checks first).
      const problem = idProblem(id)
      let text: string
      if (problem !== undefined) text = RejectionMessages.invalidId(type === 'registerfunction' ? 'function' : 'trigger type', problem)
      else if (code === Codes.InvalidNamespace) text = RejectionMessages.invalidNamespace(reason)
      else text = RejectionMessages.invalidFrame(reason)
      this.registrations.reject(session, 'invalid', text, session.namespace, { [field]: problem === undefined ? id : '' })
      return
    }
    if (type === 'registertrigger' && typeof raw?.id === 'string') {
      const ids = [text(raw.id), text(raw.trigger_type), text(raw.function_id)] as const
      sendErrorFrame(session, (error) => encodeTriggerResult(...ids, error), answer())
      return
    }
    this.log.warn(`malformed frame ignored: ${reason}`, { worker_id: session.workerId })
  }

  private resolveNamespace(session: Session, namespace: string): void {
    if (session.namespaceResolved || session.state !== 'open') return
    // Held frames go before anything that arrived later (§3.4), even if one of them blocks.
    if (session.resolveNamespace(namespace)) this.drain(session)
    this.registrationChanged()
  }

  /**
   * Calls `onChange` (synchronously, without arguments) after anything that can change what
   * {@link openSessions} and the function registry say a worker registered: a connection's
   * namespace resolved (its announce, §3.2–§3.4), a function replica added or removed (§5), a
   * connection closed. The supervisor of `svc` learns from it that a worker it started registered
   * (cli.md §5.3) instead of polling. `onChange` should only schedule work; an exception it throws
   * is logged and ignored.
   *
   * @returns a function that stops the calls
   */
  watchRegistrations(onChange: () => void): () => void {
    const watcher = () => onChange()
    this.registrationWatchers.add(watcher)
    return () => void this.registrationWatchers.delete(watcher)
  }

  private registrationChanged(): void {
    if (this.registrationWatchers.size === 0) return
    for (const watcher of [...this.registrationWatchers]) {
      try {
        watcher()
      } catch (err) {
        this.log.error('a registration watcher failed', { error: (err as Error).message })
      }
    }
  }

  private handleMessage(session: Session, message: InboundMessage): Promise<void> | void {
    switch (message.type) {
      case 'invokefunction':
        return this.invokeFromSession(session, message)
      case 'invocationresult':
        return this.legs.complete(session, message.invocation_id, message.result, message.error, message)
      case 'cancelinvocation':
        return this.cancelFromSession(session, message.invocation_id, message.reason)
      case 'registerfunction':
        return this.registrations.registerFunction(session, message)
      case 'unregisterfunction':
        return this.registrations.unregisterFunction(session, message)
      case 'registertriggertype':
        return this.registrations.registerTriggerType(session, message)
      case 'unregistertriggertype':
        return this.registrations.unregisterTriggerType(session, message)
      case 'registertrigger':
        return this.registrations.registerTrigger(session, message)
      case 'unregistertrigger':
        return this.registrations.unregisterTrigger(session, message)
      case 'triggerregistrationresult':
        return this.triggers.providerAnswer(session, message.id, message.error)
      case 'reattach':
        return this.reattach(session, message.previous_worker_id, message.reattach_token)
      case 'ping':
        return session.send('{"type":"pong"}')
      default:
        // pong, registerservice (console metadata, later), and E→W-only types sent by a worker.
        return
    }
  }

  /** Retires the worker's previous connection before the replay (§3.7). */
  private reattach(session: Session, previousWorkerId: string, token: string): void {
    if (previousWorkerId === session.workerId) return
    const previous = this.sessions.get(previousWorkerId)
    if (!previous || previous.reattachToken !== token) return
    previous.transport.terminate()
    this.cleanup(previous)
  }

  /** Disconnect cleanup, run once per session in the order of §3.6. */
  private cleanup(session: Session): void {
    const wasOpen = session.state === 'open'
    if (session.state === 'closed') return
    session.retire()
    if (!wasOpen) return
    this.registrations.removeFunctionsOf(session)
    // The calls it made and still awaits are cancelled: nobody is left to take their answers.
    if (session.requested.size > 0) for (const flight of session.requested.values()) flight.cancel('the caller disconnected')
    this.legs.sessionEnded(session)
    this.registrations.removeTriggersOf(session)
    this.sessions.delete(session.workerId)
    this.engineTriggers?.workerEvent('worker_disconnected', session.workerId)
    this.fleet?.localChanged()
    this.registrationChanged()
  }

  // ---- announce ------------------------------------------------------------------------------

  /** `engine::workers::register` (§3.2), called with the announcing peer. */
  announce(caller: Peer | undefined, payload: WorkerAnnounce): { success: true } {
    if (!(caller instanceof Session) || caller.state !== 'open') return { success: true }
    const session = caller
    if (payload.namespace !== undefined && payload.namespace !== null) {
      if (typeof payload.namespace !== 'string' || payload.namespace.trim() === '') throw Errors.invalidNamespace()
      const problem = idProblem(payload.namespace)
      if (problem !== undefined) throw Errors.namespaceNotText(`namespace ${problem}`)
      const denied = session.access.checkNamespace(payload.namespace)
      if (denied !== undefined) throw denied
    }
    const clean = (v: unknown) =>
      typeof v === 'string' ? v.replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g, '').trim().slice(0, 280).toWellFormed() : undefined
    const announce: WorkerAnnounce = { ...session.announce }
    for (const key of ['runtime', 'version', 'os', 'isolation'] as const) {
      const value = payload[key]
      if (typeof value === 'string') announce[key] = clean(value)!
      else if (value === null && key === 'isolation') announce.isolation = null
    }
    if (typeof payload.pid === 'number' && Number.isSafeInteger(payload.pid)) announce.pid = payload.pid
    const name = clean(payload.name)
    if (name !== undefined) announce.name = name
    const description = clean(payload.description)
    if (description !== undefined) announce.description = description
    if (payload.handler_spans !== undefined) session.handlerSpans = handlerSpanSource(payload.handler_spans)
    if (isRecord(payload.telemetry)) {
      const telemetry: NonNullable<WorkerAnnounce['telemetry']> = {}
      for (const key of ['language', 'project_name', 'framework'] as const) {
        const value = clean(payload.telemetry[key])
        if (value !== undefined) telemetry[key] = value
      }
      announce.telemetry = telemetry
    }
    if (!session.namespaceResolved) {
      if (typeof payload.namespace === 'string') announce.namespace = payload.namespace
      session.announce = announce
      this.resolveNamespace(session, payload.namespace ?? 'default')
    } else {
      if (payload.namespace !== undefined && payload.namespace !== session.namespace) {
        this.log.warn('ignoring namespace change in a later announce', { worker_id: session.workerId })
      }
      announce.namespace = session.namespace
      session.announce = announce
    }
    this.engineTriggers?.workerEvent('worker_metadata_updated', session.workerId)
    this.fleet?.localChanged()
    return { success: true }
  }

  // ---- invocation ----------------------------------------------------------------------------

  /**
   * A W→E `cancelinvocation`: the session cancels a call it made, by the `invocation_id` it sent.
   * In flight: answered with `cancelled` at once, its work stopped. Still held in the registration
   * buffer (§3.4): dropped, and answered. Unknown (ended, void, never sent): ignored.
   */
  private cancelFromSession(session: Session, invocationId: string, reason: string | undefined): void {
    const flight = session.requested.get(invocationId)
    if (flight !== undefined) {
      flight.cancel(reason)
      return
    }
    const held = session.dropHeld(invocationId)
    if (held !== undefined) new RelayReply(session, invocationId, session.idJson(held)).error(errorBody(Errors.cancelled, reason))
  }

  /** A W→E `invokefunction` (§6.2–§6.4): the hot path. */
  private invokeFromSession(session: Session, message: InboundInvoke): void {
    // The id is kept (flight index, reply) until the call ends: as its own string, not a slice
    // that keeps the frame's whole text alive that long (an enqueue waiting for its store).
    const invocationId = message.action?.type === 'void' || message.invocation_id === undefined ? undefined : ownString(message.invocation_id)
    const namespace = message.namespace ?? 'default'
    const reply =
      invocationId === undefined
        ? new DiscardReply(message.function_id, this.log)
        : new RelayReply(session, invocationId, session.idJson(message.function_id))
    const flight = new Flight(this.flights, message.function_id, namespace, session, reply, invocationId === undefined ? undefined : session.requested, invocationId)
    const invocation: Invocation = {
      requestedId: message.function_id,
      functionId: message.function_id,
      namespace,
      data: message.data,
      caller: session,
      access: session.access,
      reply: flight,
      flight,
    }
    if (message.metadata !== undefined) invocation.metadata = message.metadata
    if (message.action !== undefined) invocation.action = message.action
    if (message.traceparent !== undefined) invocation.traceparent = message.traceparent
    if (message.baggage !== undefined) invocation.baggage = message.baggage
    this.pipeline.run(invocation)
  }

  /**
   * An invocation made inside the engine process (built-ins, engine functions, auth, hooks,
   * {@link inject}): timed out by the engine (§6.5), under the caller's access rules.
   */
  invokeAs(caller: Peer | null, request: LocalInvokeRequest): Promise<unknown> {
    const isVoid = request.action?.type === 'void'
    const reply = isVoid ? new DiscardReply(request.function_id, this.log) : new PromiseReply()
    const namespace = request.namespace ?? 'default'
    const flight = new Flight(this.flights, request.function_id, namespace, caller, reply)
    const invocation: Invocation = {
      requestedId: request.function_id,
      functionId: request.function_id,
      namespace,
      data: request.data === undefined ? null : request.data,
      caller,
      access: this.accessOf(caller),
      timeoutMs: request.timeoutMs ?? this.internalTimeoutMs,
      reply: flight,
      flight,
    }
    if (request.metadata !== undefined) invocation.metadata = request.metadata
    if (request.action !== undefined) invocation.action = request.action
    if (request.traceparent !== undefined) invocation.traceparent = request.traceparent
    if (request.baggage !== undefined) invocation.baggage = request.baggage
    const signal = request.signal
    if (signal !== undefined) {
      if (signal.aborted) {
        flight.cancel(abortReason(signal))
        return reply instanceof PromiseReply ? reply.promise : Promise.resolve(undefined)
      }
      const onAbort = () => flight.cancel(abortReason(signal))
      signal.addEventListener('abort', onAbort, { once: true })
      if (reply instanceof PromiseReply) {
        const forget = () => signal.removeEventListener('abort', onAbort)
        reply.promise.then(forget, forget)
      }
    }
    this.pipeline.run(invocation)
    return reply instanceof PromiseReply ? reply.promise : Promise.resolve(undefined)
  }

  private removeBuiltinPeer(peer: BuiltinPeer): void {
    peer.alive = false
    this.channels.removeOwnedBy(peer)
    this.registrations.removeFunctionsOf(peer)
    this.registrations.removeTriggersOf(peer)
    this.builtinPeers.delete(peer.name)
  }
}

// ---- helpers ---------------------------------------------------------------------------------

const noop = () => {}

/** The error a malformed frame that owes a reply is answered with (§3.5). */
function malformedAnswer(code: MalformedCode, reason: string): ErrorBody {
  if (code === Codes.InvalidId) return errorBody(Errors.idNotText, reason)
  if (code === Codes.InvalidNamespace) return errorBody(Errors.namespaceNotText, reason)
  return errorBody(Errors.invalidMessage, reason)
}

/**
 * `text` as a string of its own: V8 makes a substring of 13 characters or more (a field the codec
 * cut out of a frame) a view that keeps its whole parent alive. Joined to one character and cut
 * again, it is copied from a flattened string of its own length plus one (as handler-spans.ts
 * does for span ids).
 */
function ownString(text: string): string {
  return (' ' + text).slice(1)
}

/** The text of an abort signal's reason: a string as it is, an error's message, else none. */
function abortReason(signal: AbortSignal): string | undefined {
  const reason: unknown = signal.reason
  if (typeof reason === 'string') return reason
  if (reason instanceof Error && reason.name !== 'AbortError') return reason.message
  return undefined
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** True for addresses only this host can reach. */
function isLoopback(host: string): boolean {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

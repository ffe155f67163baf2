/**
 * The svc engine: worker listeners, sessions, the function and trigger registries, the invocation
 * pipeline, access control and the lifecycle of the built-in workers (protocol.md §2–§8, §11, §13).
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
  encodeRegisterTrigger,
  encodeTriggerResult,
  ENGINE_PREFIX,
  errorBody,
  errorBodyOf,
  Errors,
  idProblem,
  RejectionMessages,
  RESERVED_FUNCTION_IDS,
  RESERVED_TRIGGER_TYPES,
  SvcError,
  type AuthInput,
  type Decoded,
  type ErrorBody,
  type InboundInvoke,
  type InboundMessage,
  type MalformedCode,
  type PeerInfo,
  type RegisterFunctionMessage,
  type RegisterTriggerMessage,
  type RegisterTriggerTypeMessage,
  type RejectionReason,
  type Connector,
  type Transport,
  type WorkerAnnounce,
} from 'svc-protocol'
import { memoryConnector } from 'svc-protocol/transport/memory'
import { AccessPolicy, ListenerAccess, PERMISSIVE, readAuthResult } from './access/policy.ts'
import { BuiltinPeer, type BuiltinHost } from './builtin-peer.ts'
import { ChannelRegistry } from './channels/index.ts'
import { DEFAULT_LEG_LIMITS, HttpCallee, LegTable, RemoteCallee, type LegLimits } from './callees.ts'
import { functionSummary, registerEngineFunctions } from './engine-functions.ts'
import { EngineTriggers } from './engine-triggers.ts'
import { FunctionRegistry, type Replica } from './functions.ts'
import { Keepalive } from './keepalive.ts'
import { Listener, type ChannelEndpoint, type LinkKind } from './listener.ts'
import { consoleLogger, type LogLevel } from './logger.ts'
import type { Peer } from './peer.ts'
import { DiscardReply, FrameTooLarge, InvocationPipeline, PromiseReply, RelayReply, sendErrorFrame, type Invocation, type PipelineHost } from './pipeline.ts'
import { bytesOver, frameBytes, Session } from './session.ts'
import { TelemetryHub } from './telemetry.ts'
import { TriggerRegistry, type Binding, type BindingInput, type ProviderEntry } from './triggers.ts'
import type { Clock } from '../workers/shared/clock.ts'
import type {
  BindingInfo,
  BuiltinWorker,
  EngineConfig,
  ListenerConfig,
  LocalInvokeRequest,
  LocalTriggerProvider,
  LocalTriggerRegistration,
  LocalTriggerTypeOptions,
  Logger,
} from './types.ts'

export const ENGINE_VERSION = '0.1.0'

export interface EngineOptions {
  /**
   * Where the engine's own log records are printed; the engine filters them by the `log_level`
   * setting (§12.1) unless `logLevel` is given, and the observability worker stores them.
   */
  log?: Logger
  /** A threshold chosen by the operator (`svc --log-level`): the `log_level` setting then has no effect. */
  logLevel?: LogLevel
  /** Built-in workers to run (the composition root passes them, e.g. `createBuiltins(config)`); default none. */
  builtins?: BuiltinWorker[]
  /** Bounds on open invocations (defaults {@link DEFAULT_LEG_LIMITS}). */
  limits?: Partial<LegLimits>
  /** Clock of the channel sweep (protocol.md §9); default the real one. Tests move a manual one. */
  clock?: Clock
}

/** A refusal by a registration hook (§13.5). */
class HookDenied extends Error {
  readonly hook: string
  readonly detail: string
  constructor(hook: string, detail: string) {
    super(RejectionMessages.hookDenied(hook, detail))
    this.hook = hook
    this.detail = detail
  }
}

/** Where a session's registrations ended up, so that unregistering by the sent id finds them. */
interface SessionIds {
  /** Sent function id → stored id (prefix and hook mapping applied). */
  functions: Map<string, string>
  /** Sent trigger id → stored trigger id. */
  triggers: Map<string, string>
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
  private readonly sessions = new Map<string, Session>()
  private readonly ids = new WeakMap<Session, SessionIds>()
  private readonly builtinPeers = new Map<string, BuiltinPeer>()
  private readonly legs: LegTable
  private readonly listeners: Listener[] = []
  private readonly keepalives = new Map<ListenerConfig, Keepalive>()
  private readonly access = new Map<ListenerConfig, ListenerAccess>()
  private readonly builtins: BuiltinWorker[]
  private readonly runningBuiltins: BuiltinWorker[] = []
  private readonly enginePeer: BuiltinPeer
  private engineTriggers: EngineTriggers | undefined
  private started = false
  private stopping = false

  constructor(config: EngineConfig, options: EngineOptions = {}) {
    this.config = config
    this.builtins = options.builtins ?? []
    this.internalTimeoutMs = config.internal_invocation_timeout_ms
    this.backpressureBytes = Math.min(...config.listeners.map((l) => l.backpressure_bytes), Infinity)
    this.legs = new LegTable({ ...DEFAULT_LEG_LIMITS, ...options.limits })
    this.pipeline = new InvocationPipeline(this)
    this.telemetry = new TelemetryHub(this.pipeline, this.functions, options.logLevel)
    this.log = this.telemetry.engineLogger(options.log ?? consoleLogger('engine', 'trace'))
    this.channels = new ChannelRegistry(options.clock === undefined ? { log: this.log } : { log: this.log, clock: options.clock })
    this.triggers = new TriggerRegistry({
      deliver: (provider, binding) => this.deliverBinding(provider, binding),
      withdraw: (provider, binding) => this.withdrawBinding(provider, binding),
      reportFailure: (binding, error) => this.reportBindingFailure(binding, error),
    })
    this.enginePeer = new BuiltinPeer(this, 'engine', ENGINE_VERSION, true)
  }

  /** WebSocket URLs workers connect to, one per listener, with the ports actually bound. */
  get workerUrls(): string[] {
    return this.listeners.map((l) => l.url)
  }

  /** Addresses a built-in worker reported (e.g. `['http://127.0.0.1:3111']` for `svc-http`). */
  listenUrls(workerName: string): string[] {
    return this.builtinPeers.get(workerName)?.listenUrls ?? []
  }

  /** Binds the listeners, then starts the engine functions and the built-in workers (cli.md §3). */
  async start(): Promise<void> {
    if (this.started) throw new Error('engine already started')
    this.started = true
    await mkdir(this.config.data_dir, { recursive: true })
    for (const listener of this.config.listeners) {
      if (listener.rbac) this.access.set(listener, new ListenerAccess(listener.rbac, listener.middleware_function_id))
    }
    registerEngineFunctions(this, this.enginePeer)
    this.channels.start()
    this.engineTriggers = new EngineTriggers(this.enginePeer, this.log, (binding) => this.functionsVisibleTo(binding))
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
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** Closes every session (code 1001), stops the built-ins and the listeners. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
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

  /** Workers listed by `engine::workers::*`: open sessions and running built-ins. */
  listedPeers(): Peer[] {
    return [...this.sessions.values(), ...[...this.builtinPeers.values()].filter((p) => !p.internal)]
  }

  peerById(workerId: string): Peer | undefined {
    return this.sessions.get(workerId) ?? [...this.builtinPeers.values()].find((p) => p.workerId === workerId && !p.internal)
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
    if (kind === 'telemetry') return this.acceptTelemetry(transport, listenerAccess, info, touch, keepalive, listener.max_message_bytes)
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
    this.ids.set(session, { functions: new Map(), triggers: new Map() })
    this.sessions.set(session.workerId, session)
    session.graceTimer = setTimeout(() => this.resolveNamespace(session, 'default'), this.config.registration_namespace_grace_ms)
    session.send(encodeFrame({ type: 'workerregistered', worker_id: session.workerId, reattach_token: session.reattachToken }))
    this.engineTriggers?.workerEvent('worker_connected', session.workerId)
    session.blocked = false
    this.drain(session)
  }

  /** `/otel` (§10.2): authenticated like `/`, never registered; a JSON ping is answered, `OTLP`/`MTRC`/`LOGS` frames go to {@link telemetry}. */
  private acceptTelemetry(
    transport: Transport,
    listenerAccess: ListenerAccess | undefined,
    info: PeerInfo,
    touch: () => void,
    keepalive: Keepalive | undefined,
    limit: number,
  ): void {
    let accepted = listenerAccess?.rbac.auth_function_id === undefined
    transport.setHandlers({
      message: (data, isBinary) => {
        touch()
        if (!accepted) return
        if (isBinary) {
          const decoded = decodeFrame(data, true)
          if (decoded.kind === 'telemetry') this.telemetry.frame(decoded.prefix, decoded.json, {})
          return
        }
        const text = typeof data === 'string' ? data : Buffer.from(data).toString()
        if (text.length < 64 && /"type"\s*:\s*"ping"/.test(text)) transport.send('{"type":"pong"}')
      },
      alive: touch,
      close: () => keepalive?.untrack(transport),
    })
    if (accepted) return
    this.authenticate(listenerAccess!, info).then(
      () => {
        accepted = true
      },
      (error: ErrorBody) => this.refuse(transport, error, noop, limit),
    )
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
        this.reject(session, 'invalid', RejectionMessages.invalid(), session.namespace, { [field]: '' })
        return
      }
      // The reason names the code a call would get (raw clients read why; svc-sdk checks first).
      const problem = idProblem(id)
      let text: string
      if (problem !== undefined) text = RejectionMessages.invalidId(type === 'registerfunction' ? 'function' : 'trigger type', problem)
      else if (code === Codes.InvalidNamespace) text = RejectionMessages.invalidNamespace(reason)
      else text = RejectionMessages.invalidFrame(reason)
      this.reject(session, 'invalid', text, session.namespace, { [field]: problem === undefined ? id : '' })
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
  }

  private handleMessage(session: Session, message: InboundMessage): Promise<void> | void {
    switch (message.type) {
      case 'invokefunction':
        return this.invokeFromSession(session, message)
      case 'invocationresult':
        return this.legs.complete(session, message.invocation_id, message.result, message.error)
      case 'registerfunction':
        return this.registerFunction(session, message)
      case 'unregisterfunction': {
        const ids = this.ids.get(session)!
        const stored = ids.functions.get(message.id) ?? session.access.stored(message.id)
        ids.functions.delete(message.id)
        if (this.functions.remove(session.namespace, stored, session)) this.engineTriggers?.functionsChanged()
        return
      }
      case 'registertriggertype':
        return this.registerTriggerType(session, message)
      case 'unregistertriggertype':
        return this.triggers.removeProvider(session, message.namespace ?? session.namespace, message.id)
      case 'registertrigger':
        return this.registerTrigger(session, message)
      case 'unregistertrigger': {
        const ids = this.ids.get(session)!
        const stored = ids.triggers.get(message.id) ?? message.id
        ids.triggers.delete(message.id)
        this.triggers.removeBinding(stored)
        return
      }
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

  private reject(
    session: Session,
    reason: RejectionReason,
    message: string,
    namespace: string,
    ids: { function_id?: string; trigger_type_id?: string },
  ): void {
    const frame = (text: string) =>
      encodeFrame({ type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT', reason, message: text, namespace, ...ids, owner_worker_id: '' })
    try {
      session.send(frame(message))
    } catch (err) {
      // A hook's message too large for the connection: its start is enough to read the reason.
      if (!(err instanceof FrameTooLarge)) throw err
      session.send(frame(`${message.slice(0, 1024)}… (cut to fit max_message_bytes ${err.limit})`))
    }
  }

  /** `registerfunction` (§5.1): gates and hook (§13.5), prefix, reserved ids, then the replica. */
  private registerFunction(session: Session, message: RegisterFunctionMessage): Promise<void> | void {
    const access = session.access
    const sentId = message.id
    if (!access.allowFunctionRegistration) {
      return this.reject(session, 'forbidden', RejectionMessages.functionsForbidden(), session.namespace, { function_id: sentId })
    }
    const hook = access.listener?.rbac.on_function_registration_function_id
    if (hook === undefined) return this.addFunction(session, message, sentId)
    return this.callHook(hook, {
      function_id: sentId,
      description: message.description ?? null,
      metadata: message.metadata ?? null,
      namespace: session.namespace,
      context: access.context,
    }).then(
      (mapped) => {
        const id = mappedString(mapped, 'function_id', sentId)
        const next: RegisterFunctionMessage = { ...message, id }
        if (Object.hasOwn(mapped, 'description')) {
          if (typeof mapped.description === 'string') next.description = mapped.description
          else delete next.description
        }
        if (Object.hasOwn(mapped, 'metadata')) {
          if (isRecord(mapped.metadata)) next.metadata = mapped.metadata
          else delete next.metadata
        }
        if (session.state === 'open') this.addFunction(session, next, sentId)
      },
      (err: unknown) => this.reject(session, 'hook_denied', hookMessage(hook, err), session.namespace, { function_id: sentId }),
    )
  }

  private addFunction(session: Session, message: RegisterFunctionMessage, sentId: string): void {
    const stored = session.access.stored(message.id)
    if (RESERVED_FUNCTION_IDS.has(stored)) {
      return this.reject(session, 'reserved_id', RejectionMessages.reservedId(stored), session.namespace, { function_id: sentId })
    }
    if (stored.startsWith(ENGINE_PREFIX) && session.namespace !== 'default') {
      return this.reject(session, 'reserved_id', RejectionMessages.engineIdOutsideDefault(), session.namespace, { function_id: sentId })
    }
    const callee = message.invocation ? new HttpCallee(session, message.invocation, () => this.config.http_functions) : session.callee
    const replica: Replica = { peer: session, callee, wireIdJson: JSON.stringify(sentId) }
    if (message.description !== undefined) replica.description = message.description
    if (message.request_format !== undefined) replica.request_format = message.request_format
    if (message.response_format !== undefined) replica.response_format = message.response_format
    if (message.metadata !== undefined) replica.metadata = message.metadata
    if (message.invocation !== undefined) replica.invocation = message.invocation
    const ids = this.ids.get(session)!
    const previous = ids.functions.get(sentId)
    if (previous !== undefined && previous !== stored && this.functions.remove(session.namespace, previous, session)) this.engineTriggers?.functionsChanged()
    ids.functions.set(sentId, stored)
    if (this.functions.add(session.namespace, stored, replica)) this.engineTriggers?.functionsChanged()
  }

  /** `registertriggertype` (§5.3): namespace, gate and hook, engine-owned ids, then the provider. */
  private registerTriggerType(session: Session, message: RegisterTriggerTypeMessage): Promise<void> | void {
    const namespace = message.namespace ?? session.namespace
    if (message.namespace !== undefined && message.namespace.trim() === '') {
      return this.reject(session, 'invalid', Errors.invalidNamespace().message, session.namespace, { trigger_type_id: message.id })
    }
    const access = session.access
    if (!access.allowTriggerTypeRegistration) {
      return this.reject(session, 'forbidden', RejectionMessages.triggerTypesForbidden(), namespace, { trigger_type_id: message.id })
    }
    const hook = access.listener?.rbac.on_trigger_type_registration_function_id
    if (hook === undefined) return this.addTriggerType(session, message, namespace)
    return this.callHook(hook, { trigger_type_id: message.id, description: message.description ?? '', context: access.context }).then(
      (mapped) => {
        const next: RegisterTriggerTypeMessage = {
          ...message,
          id: mappedString(mapped, 'trigger_type_id', message.id),
          description: typeof mapped.description === 'string' ? mapped.description : message.description,
        }
        if (session.state === 'open') this.addTriggerType(session, next, namespace)
      },
      (err: unknown) => this.reject(session, 'hook_denied', hookMessage(hook, err), namespace, { trigger_type_id: message.id }),
    )
  }

  private addTriggerType(session: Session, message: RegisterTriggerTypeMessage, namespace: string): void {
    if (RESERVED_TRIGGER_TYPES.has(message.id)) {
      return this.reject(session, 'reserved_id', RejectionMessages.reservedTriggerType(message.id), namespace, { trigger_type_id: message.id })
    }
    const entry: ProviderEntry = { peer: session, namespace, typeId: message.id, description: message.description ?? '' }
    if (message.trigger_request_format) entry.trigger_request_format = message.trigger_request_format
    if (message.call_request_format) entry.call_request_format = message.call_request_format
    this.triggers.addProvider(entry)
  }

  /** A W→E `registertrigger` (§8.1): failures are answered with `triggerregistrationresult`. */
  private registerTrigger(session: Session, message: RegisterTriggerMessage): Promise<void> | void {
    const fail = (error: SvcError) =>
      sendErrorFrame(session, (body) => encodeTriggerResult(message.id, message.trigger_type, message.function_id, body), error.toErrorBody())
    const prepared = this.prepareBinding(session.access, {
      id: message.id,
      trigger_type: message.trigger_type,
      function_id: message.function_id,
      config: message.config,
      metadata: message.metadata,
      namespace: message.namespace,
      trigger_namespace: message.trigger_namespace,
    })
    const store = (input: BindingInput | SvcError) => {
      if (input instanceof SvcError) return fail(input)
      if (session.state !== 'open') return
      input.owner = session
      this.ids.get(session)!.triggers.set(message.id, input.id)
      this.triggers.addBinding(input)
    }
    if (prepared instanceof Promise) return prepared.then(store)
    store(prepared)
  }

  /**
   * The session rules of §8.1 for a new binding, shared by `registertrigger` and
   * `engine::register_trigger`: blank namespaces, `allowed_trigger_types`, the trigger hook (which
   * may map id, type, target and config), the prefix, and whether the session may invoke the target.
   * @returns the binding to store (owner unset), or the error to report.
   */
  prepareBinding(
    access: AccessPolicy,
    request: { id: string; trigger_type: string; function_id: string; config: unknown; metadata?: unknown; namespace?: string | undefined; trigger_namespace?: string | undefined },
  ): BindingInput | SvcError | Promise<BindingInput | SvcError> {
    const blank = (v: string | undefined) => v !== undefined && v.trim() === ''
    if (blank(request.namespace) || blank(request.trigger_namespace)) return Errors.invalidNamespace()
    // Frames were checked by the codec; engine::register_trigger's input is checked here.
    for (const field of ['namespace', 'trigger_namespace'] as const) {
      const value = request[field]
      const problem = value === undefined ? undefined : idProblem(value)
      if (problem !== undefined) return Errors.namespaceNotText(`${field} ${problem}`)
    }
    for (const field of ['id', 'trigger_type', 'function_id'] as const) {
      const problem = idProblem(request[field])
      if (problem !== undefined) return Errors.idNotText(`${field} ${problem}`)
    }
    const typeDenied = access.checkTriggerType(request.trigger_type)
    if (typeDenied !== undefined) return typeDenied
    const finish = (id: string, type: string, functionId: string, config: unknown): BindingInput | SvcError => {
      const namespace = request.namespace ?? 'default'
      const stored = access.stored(functionId)
      if (access.restricted) {
        const target = this.functions.resolve(namespace, stored)
        const denial = access.checkInvoke(target?.id ?? stored, target?.namespace ?? namespace, target?.latest.metadata)
        if (denial !== undefined) return denial
      }
      const input: BindingInput = { id, trigger_type: type, function_id: stored, config, namespace, owner: null }
      if (request.metadata !== undefined && request.metadata !== null) input.metadata = request.metadata
      if (request.trigger_namespace !== undefined) input.trigger_namespace = request.trigger_namespace
      return input
    }
    const hook = access.listener?.rbac.on_trigger_registration_function_id
    if (hook === undefined) return finish(request.id, request.trigger_type, request.function_id, request.config)
    return this.callHook(hook, {
      trigger_id: request.id,
      trigger_type: request.trigger_type,
      function_id: request.function_id,
      config: request.config,
      metadata: request.metadata ?? null,
      namespace: request.namespace ?? 'default',
      context: access.context,
    }).then(
      (mapped) => {
        const type = mappedString(mapped, 'trigger_type', request.trigger_type)
        const denied = type === request.trigger_type ? undefined : access.checkTriggerType(type)
        if (denied !== undefined) return denied
        return finish(
          mappedString(mapped, 'trigger_id', request.id),
          type,
          mappedString(mapped, 'function_id', request.function_id),
          Object.hasOwn(mapped, 'config') ? mapped.config : request.config,
        )
      },
      (err: unknown) => Errors.forbiddenByHook(hook, hookDetail(err)),
    )
  }

  /**
   * Calls a registration hook (§13.5) in `default` with the internal timeout. Resolves with the
   * returned object; rejects with a {@link HookDenied} when it throws or returns a non-object.
   */
  private async callHook(hook: string, input: object): Promise<Record<string, unknown>> {
    let result: unknown
    try {
      result = await this.invokeAs(null, { function_id: hook, data: input, timeoutMs: this.internalTimeoutMs })
    } catch (err) {
      throw new HookDenied(hook, errorBodyOf(err).message)
    }
    if (result === undefined || result === null) throw new HookDenied(hook, 'the hook returned no result')
    if (!isRecord(result)) throw new HookDenied(hook, 'the hook returned a value that is not an object')
    for (const field of ['function_id', 'trigger_id', 'trigger_type', 'trigger_type_id']) {
      const value = result[field]
      if (value === undefined) continue
      if (typeof value !== 'string' || value === '' || idProblem(value) !== undefined) {
        throw new HookDenied(hook, `the hook returned an invalid ${field}`)
      }
    }
    return result
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
    if (this.functions.removePeer(session)) this.engineTriggers?.functionsChanged()
    this.legs.sessionEnded(session)
    this.triggers.removeBindingsOf(session)
    this.triggers.removeProviderPeer(session)
    this.sessions.delete(session.workerId)
    this.engineTriggers?.workerEvent('worker_disconnected', session.workerId)
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
    return { success: true }
  }

  // ---- invocation ----------------------------------------------------------------------------

  /** A W→E `invokefunction` (§6.2–§6.4): the hot path. */
  private invokeFromSession(session: Session, message: InboundInvoke): void {
    const invocationId = message.action?.type === 'void' ? undefined : message.invocation_id
    const invocation: Invocation = {
      requestedId: message.function_id,
      functionId: message.function_id,
      namespace: message.namespace ?? 'default',
      data: message.data,
      caller: session,
      access: session.access,
      reply:
        invocationId === undefined
          ? new DiscardReply(message.function_id, this.log)
          : new RelayReply(session, invocationId, session.idJson(message.function_id)),
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
    const invocation: Invocation = {
      requestedId: request.function_id,
      functionId: request.function_id,
      namespace: request.namespace ?? 'default',
      data: request.data === undefined ? null : request.data,
      caller,
      access: this.accessOf(caller),
      timeoutMs: request.timeoutMs ?? this.internalTimeoutMs,
      reply,
    }
    if (request.metadata !== undefined) invocation.metadata = request.metadata
    if (request.action !== undefined) invocation.action = request.action
    if (request.traceparent !== undefined) invocation.traceparent = request.traceparent
    if (request.baggage !== undefined) invocation.baggage = request.baggage
    this.pipeline.run(invocation)
    return reply instanceof PromiseReply ? reply.promise : Promise.resolve(undefined)
  }

  // ---- trigger delivery ----------------------------------------------------------------------

  private deliverBinding(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      const local = provider.local
      const info = bindingInfo(binding)
      Promise.resolve()
        .then(() => local.registerTrigger(info))
        .then(
          () => this.triggers.providerAnswer(provider.peer, binding.id, undefined),
          (err: unknown) => this.triggers.providerAnswer(provider.peer, binding.id, errorBodyOf(err)),
        )
        .catch((err: unknown) => this.log.error(`delivering trigger ${binding.id} failed`, { error: String(err) }))
      return
    }
    if (!(provider.peer instanceof Session)) return
    const peer = provider.peer
    try {
      peer.send(encodeRegisterTrigger(binding))
    } catch (err) {
      if (!(err instanceof FrameTooLarge)) throw err
      // The binding fails like a provider's refusal, after the caller had the chance to wait for the answer.
      const error = errorBody(Errors.frameTooLarge, 'trigger config', err.bytes, err.limit)
      queueMicrotask(() => this.triggers.providerAnswer(peer, binding.id, error))
    }
  }

  private withdrawBinding(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      const local = provider.local
      Promise.resolve()
        .then(() => local.unregisterTrigger(bindingInfo(binding)))
        .catch((err: unknown) => this.log.warn(`unregisterTrigger failed for ${binding.id}`, { error: String(err) }))
      return
    }
    if (provider.peer instanceof Session) {
      provider.peer.send(encodeFrame({ type: 'unregistertrigger', id: binding.id, trigger_type: binding.trigger_type, function_id: binding.function_id }))
    }
  }

  private reportBindingFailure(binding: Binding, error: ErrorBody): void {
    const owner = binding.owner
    if (!(owner instanceof Session)) {
      this.log.warn(`trigger ${binding.id} (${binding.trigger_type}) refused: ${error.code}: ${error.message}`)
      return
    }
    sendErrorFrame(owner, (body) => encodeTriggerResult(binding.id, binding.trigger_type, binding.function_id, body), error)
  }

  /** `functions` of an `engine::functions-available` fire: what the binding owner's session may see (§11.6). */
  private functionsVisibleTo(info: BindingInfo): unknown[] {
    const access = this.accessOf(this.triggers.getBinding(info.id)?.owner)
    return this.functions
      .list()
      .filter((e) => access.canSee(e.id, e.namespace, e.latest.metadata))
      .map(functionSummary)
  }

  // ---- BuiltinHost ---------------------------------------------------------------------------

  addReplica(namespace: string, id: string, replica: Replica): void {
    if (this.functions.add(namespace, id, replica)) this.engineTriggers?.functionsChanged()
  }

  removeReplica(peer: Peer, namespace: string, id: string): void {
    if (this.functions.remove(namespace, id, peer)) this.engineTriggers?.functionsChanged()
  }

  registerLocalTriggerType(peer: BuiltinPeer, options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void {
    const entry: ProviderEntry = { peer, namespace: 'default', typeId: options.id, description: options.description, local: provider }
    if (options.trigger_request_format) entry.trigger_request_format = options.trigger_request_format
    if (options.call_request_format) entry.call_request_format = options.call_request_format
    this.triggers.addProvider(entry)
  }

  unregisterLocalTriggerType(peer: BuiltinPeer, id: string): void {
    this.triggers.removeProvider(peer, 'default', id)
  }

  reportLocalTriggerResult(peer: BuiltinPeer, triggerId: string, error?: { code: string; message: string }): void {
    this.triggers.providerAnswer(peer, triggerId, error)
  }

  hasFunction(namespace: string, id: string): boolean {
    return this.functions.resolve(namespace, id) !== undefined
  }

  registerLocalTrigger(peer: BuiltinPeer, binding: LocalTriggerRegistration): void {
    const input: BindingInput = {
      id: binding.id,
      trigger_type: binding.trigger_type,
      function_id: binding.function_id,
      config: binding.config,
      namespace: 'default',
      owner: peer,
    }
    if (binding.metadata !== undefined && binding.metadata !== null) input.metadata = binding.metadata
    this.triggers.addBinding(input)
  }

  unregisterLocalTrigger(peer: BuiltinPeer, id: string): void {
    if (this.triggers.getBinding(id)?.owner === peer) this.triggers.removeBinding(id)
  }

  private removeBuiltinPeer(peer: BuiltinPeer): void {
    peer.alive = false
    this.channels.removeOwnedBy(peer)
    if (this.functions.removePeer(peer)) this.engineTriggers?.functionsChanged()
    this.triggers.removeBindingsOf(peer)
    this.triggers.removeProviderPeer(peer)
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A string field a hook returned, or the original when the hook left it out. */
function mappedString(mapped: Record<string, unknown>, field: string, original: string): string {
  const value = mapped[field]
  return typeof value === 'string' ? value : original
}

function hookDetail(err: unknown): string {
  return err instanceof HookDenied ? err.detail : errorBodyOf(err).message
}

function hookMessage(hook: string, err: unknown): string {
  return RejectionMessages.hookDenied(hook, hookDetail(err))
}

/** True for addresses only this host can reach. */
function isLoopback(host: string): boolean {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}

function bindingInfo(binding: Binding): BindingInfo {
  const info: BindingInfo = {
    id: binding.id,
    trigger_type: binding.trigger_type,
    function_id: binding.function_id,
    config: binding.config,
    namespace: binding.namespace,
  }
  if (binding.metadata !== undefined) info.metadata = binding.metadata
  return info
}


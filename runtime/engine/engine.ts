/**
 * The svc engine: worker listeners, the function and trigger registries, invocation routing and
 * the lifecycle of the built-in workers (protocol.md §2–§8, §11).
 *
 * @example
 * const engine = new Engine(config)
 * await engine.start()
 * console.log(engine.workerUrls)          // ['ws://127.0.0.1:49134']
 * await engine.invoke({ function_id: 'state::get', data: { scope: 'links', key: 'abc' } })
 * await engine.stop()
 */
import { randomUUID } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import type { ErrorBody, InvokeFunctionMessage, Message, WorkerAnnounce } from 'svc-protocol'
import { decodeFrame } from '../protocol/codec.ts'
import { SvcError, Errors, RejectionMessages, errorBodyOf } from 'svc-protocol/errors'
import { BuiltinPeer, type BuiltinHost } from './builtin-peer.ts'
import { Connection } from './connection.ts'
import { functionSummary, registerEngineFunctions } from './engine-functions.ts'
import { EngineTriggers } from './engine-triggers.ts'
import { FunctionRegistry, type FunctionEntry, type Replica } from './functions.ts'
import { invokeOverHttp } from './http-invoke.ts'
import { Listener } from './listener.ts'
import { consoleLogger } from './logger.ts'
import type { Peer } from './peer.ts'
import { TriggerRegistry, type Binding, type BindingInput, type ProviderEntry } from './triggers.ts'
import type {
  BuiltinWorker,
  EngineConfig,
  InvocationContext,
  LocalFunctionOptions,
  LocalHandler,
  LocalInvokeRequest,
  LocalTriggerProvider,
  LocalTriggerTypeOptions,
  Logger,
} from './types.ts'

export const ENGINE_VERSION = '0.1.0'

/** Ids served by the engine and its always-on workers; workers cannot register them (§6.9). */
const RESERVED_FUNCTION_IDS = new Set([
  'engine::functions::list',
  'engine::functions::info',
  'engine::triggers::list',
  'engine::triggers::info',
  'engine::registered-triggers::list',
  'engine::registered-triggers::info',
  'engine::workers::list',
  'engine::workers::info',
  'engine::workers::register',
  'engine::register_trigger',
  'engine::unregister_trigger',
  'engine::channels::create',
  'engine::log::info',
  'engine::log::warn',
  'engine::log::error',
  'engine::log::debug',
  'engine::log::trace',
  'engine::logs::list',
  'engine::logs::clear',
  'engine::traces::list',
  'engine::traces::tree',
  'engine::traces::clear',
  'engine::traces::group_by',
  'engine::metrics::list',
  'engine::baggage::get',
  'engine::baggage::set',
  'engine::baggage::get_all',
  'engine::health::check',
])
const RESERVED_TRIGGER_TYPES = new Set(['engine::functions-available', 'engine::workers-available'])

/** One leg of an invocation waiting for a worker's `invocationresult` (§6.2). */
interface Leg {
  readonly callee: Connection
  /** Remote caller to relay the result to; null for engine-originated and void calls. */
  readonly caller: Connection | null
  readonly callerInvocationId: string | undefined
  /** JSON of the function id the caller asked for, used in the relayed result. */
  readonly requestedIdJson: string
  resolve?: (value: unknown) => void
  reject?: (error: SvcError) => void
  timer?: NodeJS.Timeout
}

export interface EngineOptions {
  log?: Logger
  /** Built-in workers to run; default: every enabled worker of `createBuiltins()`. */
  builtins?: BuiltinWorker[]
}

export class Engine implements BuiltinHost {
  readonly config: EngineConfig
  readonly log: Logger
  readonly functions = new FunctionRegistry()
  readonly triggers: TriggerRegistry
  readonly connections = new Map<string, Connection>()
  readonly builtinPeers = new Map<string, BuiltinPeer>()
  private readonly legs = new Map<string, Leg>()
  private readonly listeners: Listener[] = []
  private readonly requestedBuiltins: BuiltinWorker[] | undefined
  private readonly runningBuiltins: BuiltinWorker[] = []
  private readonly enginePeer: BuiltinPeer
  private engineTriggers: EngineTriggers | undefined
  private readonly backpressureBytes: number
  private started = false
  private stopping = false

  constructor(config: EngineConfig, options: EngineOptions = {}) {
    this.config = config
    this.log = options.log ?? consoleLogger('engine')
    this.requestedBuiltins = options.builtins
    this.backpressureBytes = Math.min(...config.listeners.map((l) => l.backpressure_bytes), Infinity)
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
    registerEngineFunctions(this, this.enginePeer)
    this.engineTriggers = new EngineTriggers(this.enginePeer, this.log, () =>
      [...this.functions.entries()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(functionSummary),
    )
    try {
      for (const listenerConfig of this.config.listeners) {
        const listener = new Listener(listenerConfig, this.log, (socket, request) =>
          this.acceptConnection(socket, listenerConfig, request.socket.remoteAddress ?? null),
        )
        await listener.start()
        this.listeners.push(listener)
      }
      const workers = this.requestedBuiltins ?? (await defaultBuiltins(this.config))
      for (const worker of workers) {
        const entry = this.config.builtins[worker.name]
        if (entry && entry.enabled === false) continue
        const peer = new BuiltinPeer(this, worker.name, ENGINE_VERSION)
        this.builtinPeers.set(worker.name, peer)
        this.runningBuiltins.push(worker)
        await worker.start(
          {
            worker: peer,
            dataDir: this.config.data_dir,
            internalInvocationTimeoutMs: this.config.internal_invocation_timeout_ms,
            log: this.log,
          },
          entry?.config,
        )
      }
    } catch (err) {
      await this.stop()
      throw err
    }
  }

  /** Closes every connection (code 1001), stops the built-ins and the listeners. Idempotent. */
  async stop(): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.engineTriggers?.stop()
    for (const connection of [...this.connections.values()]) {
      connection.socket.close(1001, 'engine shutting down')
      this.cleanup(connection)
    }
    await Promise.all(this.listeners.map((l) => l.stop()))
    for (const worker of [...this.runningBuiltins].reverse()) {
      try {
        await worker.stop()
      } catch (err) {
        this.log.error(`${worker.name} failed to stop`, { error: (err as Error).message })
      }
      const peer = this.builtinPeers.get(worker.name)
      if (peer) this.removeBuiltinPeer(peer)
    }
    for (const leg of this.legs.values()) {
      if (leg.timer) clearTimeout(leg.timer)
      leg.reject?.(Errors.invocationStopped())
    }
    this.legs.clear()
  }

  /**
   * Runs one invocation in-process, like a worker's `trigger` (Fastify's `inject()` idea): routing,
   * fallback and timeouts are those of an engine-originated call (§6.5).
   * @throws SvcError with the wire code of the failure.
   */
  invoke(request: LocalInvokeRequest): Promise<unknown> {
    return this.invokeLocal(request, null)
  }

  // ---- connections ---------------------------------------------------------------------------

  private acceptConnection(socket: import('ws').WebSocket, listenerConfig: EngineConfig['listeners'][number], ip: string | null): void {
    const connection = new Connection(socket, listenerConfig, ip)
    this.connections.set(connection.workerId, connection)
    connection.graceTimer = setTimeout(() => this.resolveNamespace(connection, 'default'), this.config.registration_namespace_grace_ms)
    socket.on('message', (data, isBinary) => {
      if (!connection.alive) return
      this.onFrame(connection, decodeFrame(data as Buffer, isBinary))
    })
    socket.on('close', () => this.cleanup(connection))
    socket.on('error', (err) => {
      this.log.debug('worker socket error', { worker_id: connection.workerId, error: err.message })
    })
    connection.send(
      JSON.stringify({ type: 'workerregistered', worker_id: connection.workerId, reattach_token: connection.reattachToken }),
    )
    this.engineTriggers?.workerEvent('worker_connected', connection.workerId)
  }

  private onFrame(connection: Connection, decoded: ReturnType<typeof decodeFrame>): void {
    switch (decoded.kind) {
      case 'message':
        if (connection.shouldHold(decoded.message)) {
          if (connection.hold(decoded.message)) this.resolveNamespace(connection, 'default')
          return
        }
        this.handleMessage(connection, decoded.message)
        return
      case 'telemetry':
      case 'ignored':
        if (decoded.kind === 'ignored' && decoded.reason) this.log.debug(`ignored frame: ${decoded.reason}`)
        return
      case 'malformed':
        this.onMalformed(connection, decoded.reason, decoded.raw)
    }
  }

  /** Answers malformed frames that owe a reply (§3.5); logs the rest. */
  private onMalformed(connection: Connection, reason: string, raw: Record<string, unknown> | undefined): void {
    const type = raw?.type
    const invocationId = raw?.invocation_id
    const action = raw?.action as { type?: unknown } | undefined
    const isVoid = typeof action === 'object' && action !== null && action.type === 'void'
    if (typeof invocationId === 'string' && !isVoid && (type === 'invokefunction' || typeof type !== 'string')) {
      const functionId = typeof raw?.function_id === 'string' ? raw.function_id : ''
      connection.send(resultFrame(invocationId, JSON.stringify(functionId), undefined, Errors.invalidMessage(reason).toErrorBody()))
      return
    }
    if ((type === 'registerfunction' || type === 'registertriggertype') && (typeof raw?.id !== 'string' || raw.id === '')) {
      this.reject(connection, 'invalid', RejectionMessages.invalid(), type === 'registerfunction' ? { function_id: '' } : { trigger_type_id: '' })
      return
    }
    if (type === 'registertrigger' && typeof raw?.id === 'string') {
      connection.send(
        JSON.stringify({
          type: 'triggerregistrationresult',
          id: raw.id,
          trigger_type: typeof raw.trigger_type === 'string' ? raw.trigger_type : '',
          function_id: typeof raw.function_id === 'string' ? raw.function_id : '',
          error: Errors.invalidMessage(reason).toErrorBody(),
        }),
      )
      return
    }
    this.log.warn(`malformed frame ignored: ${reason}`, { worker_id: connection.workerId })
  }

  private resolveNamespace(connection: Connection, namespace: string): void {
    if (connection.namespaceResolved || !connection.alive) return
    for (const message of connection.resolveNamespace(namespace)) {
      if (!connection.alive) return
      this.handleMessage(connection, message)
    }
  }

  private handleMessage(connection: Connection, message: Message): void {
    switch (message.type) {
      case 'invokefunction':
        this.invokeFromConnection(connection, message)
        return
      case 'invocationresult':
        this.onInvocationResult(connection, message.invocation_id, message.result, message.error)
        return
      case 'registerfunction': {
        const { id } = message
        if (id === '') return this.reject(connection, 'invalid', RejectionMessages.invalid(), { function_id: '' })
        if (RESERVED_FUNCTION_IDS.has(id)) {
          return this.reject(connection, 'reserved_id', RejectionMessages.reservedId(id), { function_id: id })
        }
        if (id.startsWith('engine::') && connection.namespace !== 'default') {
          return this.reject(connection, 'reserved_id', RejectionMessages.engineIdOutsideDefault(), { function_id: id })
        }
        const replica: Replica = { peer: connection }
        if (message.description !== undefined) replica.description = message.description
        if (message.request_format !== undefined) replica.request_format = message.request_format
        if (message.response_format !== undefined) replica.response_format = message.response_format
        if (message.metadata !== undefined) replica.metadata = message.metadata
        if (message.invocation !== undefined) replica.invocation = message.invocation
        if (this.functions.add(connection.namespace, id, replica)) this.engineTriggers?.functionsChanged()
        return
      }
      case 'unregisterfunction':
        if (this.functions.remove(connection.namespace, message.id, connection)) this.engineTriggers?.functionsChanged()
        return
      case 'registertriggertype': {
        const { id } = message
        if (id === '') return this.reject(connection, 'invalid', RejectionMessages.invalid(), { trigger_type_id: '' })
        if (message.namespace !== undefined && message.namespace.trim() === '') {
          return this.reject(connection, 'invalid', Errors.invalidNamespace().message, { trigger_type_id: id })
        }
        if (RESERVED_TRIGGER_TYPES.has(id)) {
          return this.reject(connection, 'reserved_id', RejectionMessages.reservedTriggerType(id), { trigger_type_id: id })
        }
        const entry: ProviderEntry = {
          peer: connection,
          namespace: message.namespace ?? connection.namespace,
          typeId: id,
          description: message.description ?? '',
        }
        if (message.trigger_request_format) entry.trigger_request_format = message.trigger_request_format
        if (message.call_request_format) entry.call_request_format = message.call_request_format
        this.triggers.addProvider(entry)
        return
      }
      case 'unregistertriggertype':
        this.triggers.removeProvider(connection, message.namespace ?? connection.namespace, message.id)
        return
      case 'registertrigger': {
        const blank = (v: string | undefined) => v !== undefined && v.trim() === ''
        if (blank(message.namespace) || blank(message.trigger_namespace)) {
          connection.send(
            JSON.stringify({
              type: 'triggerregistrationresult',
              id: message.id,
              trigger_type: message.trigger_type,
              function_id: message.function_id,
              error: Errors.invalidNamespace().toErrorBody(),
            }),
          )
          return
        }
        const input: BindingInput = {
          id: message.id,
          trigger_type: message.trigger_type,
          function_id: message.function_id,
          config: message.config,
          namespace: message.namespace ?? 'default',
          owner: connection,
        }
        if (message.metadata !== undefined) input.metadata = message.metadata
        if (message.trigger_namespace !== undefined) input.trigger_namespace = message.trigger_namespace
        this.triggers.addBinding(input)
        return
      }
      case 'unregistertrigger':
        this.triggers.removeBinding(message.id)
        return
      case 'triggerregistrationresult':
        this.triggers.providerAnswer(connection, message.id, message.error)
        return
      case 'reattach':
        this.reattach(connection, message.previous_worker_id, message.reattach_token)
        return
      case 'ping':
        connection.send('{"type":"pong"}')
        return
      default:
        // pong, registerservice (console metadata, later), and E→W-only types sent by a worker.
        return
    }
  }

  private reject(
    connection: Connection,
    reason: 'reserved_id' | 'forbidden' | 'hook_denied' | 'invalid',
    message: string,
    ids: { function_id?: string; trigger_type_id?: string },
  ): void {
    connection.send(
      JSON.stringify({
        type: 'registrationrejected',
        code: 'FUNCTION_NAMESPACE_CONFLICT',
        reason,
        message,
        namespace: connection.namespace,
        ...ids,
        owner_worker_id: '',
      }),
    )
  }

  /** Retires the worker's previous connection before the replay (§3.7). */
  private reattach(connection: Connection, previousWorkerId: string, token: string): void {
    if (previousWorkerId === connection.workerId) return
    const previous = this.connections.get(previousWorkerId)
    if (!previous || previous.reattachToken !== token) return
    previous.socket.terminate()
    this.cleanup(previous)
  }

  /** Disconnect cleanup, run once per connection in the order of §3.6. */
  private cleanup(connection: Connection): void {
    if (!this.connections.has(connection.workerId)) return
    connection.retire()
    if (this.functions.removePeer(connection)) this.engineTriggers?.functionsChanged()
    for (const [legId, leg] of this.legs) {
      if (leg.callee === connection) {
        this.legs.delete(legId)
        if (leg.timer) clearTimeout(leg.timer)
        const stopped = Errors.invocationStopped()
        if (leg.caller && leg.callerInvocationId !== undefined) {
          leg.caller.send(resultFrame(leg.callerInvocationId, leg.requestedIdJson, undefined, stopped.toErrorBody()))
        }
        leg.reject?.(stopped)
      } else if (leg.caller === connection) {
        // The callee may still answer; the answer is then ignored (unknown leg).
        this.legs.delete(legId)
        leg.callee.activeInvocations--
      }
    }
    this.triggers.removeBindingsOf(connection)
    this.triggers.removeProviderPeer(connection)
    this.connections.delete(connection.workerId)
    this.engineTriggers?.workerEvent('worker_disconnected', connection.workerId)
  }

  // ---- announce ------------------------------------------------------------------------------

  /** `engine::workers::register` (§3.2), called with the announcing connection. */
  announce(workerId: string | undefined, payload: WorkerAnnounce): { success: true } {
    const connection = workerId ? this.connections.get(workerId) : undefined
    if (!connection) return { success: true }
    if (payload.namespace !== undefined && payload.namespace !== null) {
      if (typeof payload.namespace !== 'string' || payload.namespace.trim() === '') throw Errors.invalidNamespace()
    }
    const clean = (v: unknown) =>
      typeof v === 'string' ? v.replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069]/g, '').trim().slice(0, 280) : undefined
    const announce: WorkerAnnounce = { ...connection.announce, ...payload }
    const name = clean(payload.name)
    if (name !== undefined) announce.name = name
    const description = clean(payload.description)
    if (description !== undefined) announce.description = description
    if (announce.telemetry) delete announce.telemetry.amplitude_api_key
    if (!connection.namespaceResolved) {
      connection.announce = announce
      this.resolveNamespace(connection, payload.namespace ?? 'default')
    } else {
      if (payload.namespace !== undefined && payload.namespace !== connection.namespace) {
        this.log.warn('ignoring namespace change in a later announce', { worker_id: connection.workerId })
      }
      announce.namespace = connection.namespace
      connection.announce = announce
    }
    this.engineTriggers?.workerEvent('worker_metadata_updated', connection.workerId)
    return { success: true }
  }

  // ---- invocation ----------------------------------------------------------------------------

  /** Resolves `(namespace, id)` with the `iii::` alias and the `default` fallback (§6.1). */
  resolveFunction(namespace: string, functionId: string): FunctionEntry | undefined {
    let entry = this.functions.get(namespace, functionId)
    if (!entry && namespace !== 'default') entry = this.functions.get('default', functionId)
    if (!entry && functionId.startsWith('iii::')) return this.resolveFunction(namespace, `svc::${functionId.slice(5)}`)
    return entry
  }

  private notFound(namespace: string, functionId: string): SvcError {
    return Errors.functionNotFound(functionId, namespace, this.functions.namespacesOf(functionId, namespace))
  }

  /** A W→E `invokefunction` (§6.2–§6.4). The hot path: no closures or lookups beyond routing. */
  private invokeFromConnection(caller: Connection, message: InvokeFunctionMessage): void {
    const invocationId = message.action?.type === 'void' ? undefined : message.invocation_id
    const namespace = message.namespace ?? 'default'
    if (message.namespace !== undefined && namespace.trim() === '') {
      return this.failCall(caller, invocationId, message.function_id, Errors.invalidNamespace())
    }
    if (message.action?.type === 'enqueue') {
      this.enqueue(message).then(
        (result) => this.answerCall(caller, invocationId, message.function_id, result),
        (err: unknown) => this.failCall(caller, invocationId, message.function_id, err instanceof SvcError ? err : new SvcError('enqueue_error', String(err))),
      )
      return
    }
    const entry = this.resolveFunction(namespace, message.function_id)
    const replica = entry?.pick(pendingBytesOf, this.backpressureBytes)
    if (!entry || !replica) return this.failCall(caller, invocationId, message.function_id, this.notFound(namespace, message.function_id))
    const peer = replica.peer
    if (peer.kind === 'connection' && !replica.invocation) {
      const legId = randomUUID()
      const requestedIdJson = message.function_id === entry.id ? entry.idJson : JSON.stringify(message.function_id)
      this.legs.set(legId, { callee: peer as Connection, caller: invocationId !== undefined ? caller : null, callerInvocationId: invocationId, requestedIdJson })
      peer.activeInvocations++
      ;(peer as Connection).send(invokeFrame(legId, entry, message.data, message.metadata, message.traceparent, mergeBaggage(message.baggage, entry)))
      return
    }
    const context: InvocationContext = { function_id: entry.id, caller_worker_id: caller.workerId }
    if (message.metadata !== undefined) context.metadata = message.metadata
    if (message.traceparent !== undefined) context.traceparent = message.traceparent
    context.baggage = mergeBaggage(message.baggage, entry)
    this.runInProcess(replica, message.data, context).then(
      (result) => this.answerCall(caller, invocationId, message.function_id, result),
      (err: unknown) => this.failCall(caller, invocationId, message.function_id, err instanceof SvcError ? err : toEngineError(err)),
    )
  }

  private answerCall(caller: Connection, invocationId: string | undefined, functionId: string, result: unknown): void {
    if (invocationId !== undefined) caller.send(resultFrame(invocationId, JSON.stringify(functionId), result, undefined))
  }

  /** Reports a failed call to a synchronous caller; void calls only log (§6.3). */
  private failCall(caller: Connection, invocationId: string | undefined, functionId: string, error: SvcError): void {
    if (invocationId !== undefined) {
      const body = error.toErrorBody()
      const stack = (error as { stacktrace?: unknown }).stacktrace
      if (typeof stack === 'string') body.stacktrace = stack
      caller.send(resultFrame(invocationId, JSON.stringify(functionId), undefined, body))
    } else {
      this.log.debug(`void invocation of ${functionId} failed: ${error.message}`)
    }
  }

  /** Runs a replica the engine executes itself: a built-in handler or an HTTP-invoked function. */
  private async runInProcess(replica: Replica, data: unknown, context: InvocationContext): Promise<unknown> {
    const peer = replica.peer
    peer.activeInvocations++
    try {
      if (replica.invocation) return await invokeOverHttp(replica.invocation, context.function_id, data, context, this.config.http_functions)
      return await replica.handler!(data, context)
    } finally {
      peer.activeInvocations--
    }
  }

  private onInvocationResult(from: Connection, legId: string, result: unknown, error: unknown): void {
    const leg = this.legs.get(legId)
    if (!leg || leg.callee !== from) return
    this.legs.delete(legId)
    from.activeInvocations--
    if (leg.timer) clearTimeout(leg.timer)
    const errorBody = error === undefined ? undefined : normalizeError(error)
    if (leg.caller) {
      leg.caller.send(resultFrame(leg.callerInvocationId!, leg.requestedIdJson, result, errorBody))
    } else if (leg.resolve) {
      if (errorBody) leg.reject!(new SvcError(errorBody.code, errorBody.message))
      else leg.resolve(result ?? undefined)
    }
  }

  /** Invocation made inside the engine process (built-ins, engine functions, `engine.invoke`). */
  invokeLocal(request: LocalInvokeRequest, caller: Peer | null): Promise<unknown> {
    const namespace = request.namespace ?? 'default'
    if (request.namespace !== undefined && namespace.trim() === '') return Promise.reject(Errors.invalidNamespace())
    if (request.action?.type === 'enqueue') return this.enqueue({ ...request, type: 'invokefunction', data: request.data ?? null })
    const entry = this.resolveFunction(namespace, request.function_id)
    const replica = entry?.pick(pendingBytesOf, this.backpressureBytes)
    if (!entry || !replica) {
      const error = this.notFound(namespace, request.function_id)
      if (request.action?.type === 'void') {
        this.log.debug(`void invocation of ${request.function_id} failed: ${error.message}`)
        return Promise.resolve(undefined)
      }
      return Promise.reject(error)
    }
    const timeoutMs = request.timeoutMs ?? this.config.internal_invocation_timeout_ms
    const baggage = mergeBaggage(request.baggage, entry)
    const data = request.data === undefined ? null : request.data
    let promise: Promise<unknown>
    if (replica.peer.kind === 'connection' && !replica.invocation) {
      const callee = replica.peer as Connection
      promise = new Promise((resolve, reject) => {
        const legId = randomUUID()
        const leg: Leg = { callee, caller: null, callerInvocationId: undefined, requestedIdJson: entry.idJson, resolve, reject }
        leg.timer = setTimeout(() => {
          if (this.legs.delete(legId)) callee.activeInvocations--
          reject(Errors.timeout(timeoutMs))
        }, timeoutMs)
        this.legs.set(legId, leg)
        callee.activeInvocations++
        callee.send(invokeFrame(legId, entry, data, request.metadata, request.traceparent, baggage))
      })
    } else {
      const context: InvocationContext = { function_id: entry.id, baggage }
      if (caller) context.caller_worker_id = caller.workerId
      if (request.metadata !== undefined) context.metadata = request.metadata
      if (request.traceparent !== undefined) context.traceparent = request.traceparent
      promise = withTimeout(this.runInProcess(replica, data, context), timeoutMs)
    }
    if (request.action?.type === 'void') {
      promise.catch((err: unknown) => this.log.debug(`void invocation of ${request.function_id} failed: ${(err as Error).message}`))
      return Promise.resolve(undefined)
    }
    return promise.catch((err: unknown) => {
      throw err instanceof SvcError ? err : toEngineError(err)
    })
  }

  /** The enqueue action (§6.4): handed to `engine::queue::enqueue` when a queue worker provides it. */
  private async enqueue(message: InvokeFunctionMessage): Promise<unknown> {
    const action = message.action as { type: 'enqueue'; queue: string; delay_ms?: number; idempotency_key?: string }
    if (!this.functions.get('default', 'engine::queue::enqueue')) throw Errors.enqueueNoProvider()
    const payload: Record<string, unknown> = {
      queue: action.queue,
      function_id: message.function_id,
      data: message.data ?? null,
      messageReceiptId: randomUUID(),
    }
    if (message.namespace !== undefined && message.namespace !== 'default') payload.namespace = message.namespace
    if (message.metadata !== undefined) payload.metadata = message.metadata
    if (message.traceparent !== undefined) payload.traceparent = message.traceparent
    if (message.baggage !== undefined) payload.baggage = message.baggage
    if (action.delay_ms !== undefined) payload.delay_ms = action.delay_ms
    if (action.idempotency_key !== undefined) payload.idempotency_key = action.idempotency_key
    try {
      await this.invokeLocal({ function_id: 'engine::queue::enqueue', data: payload }, null)
    } catch (err) {
      const body = errorBodyOf(err)
      if (body.code === 'queue_not_found' || body.code === 'invalid_message_group') throw new SvcError(body.code, body.message)
      throw Errors.enqueueFailed(body.code, body.message)
    }
    return { messageReceiptId: payload.messageReceiptId }
  }

  // ---- trigger delivery ----------------------------------------------------------------------

  private deliverBinding(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      const info = bindingInfo(binding)
      Promise.resolve()
        .then(() => provider.local!.registerTrigger(info))
        .then(
          () => this.triggers.providerAnswer(provider.peer, binding.id, undefined),
          (err: unknown) => this.triggers.providerAnswer(provider.peer, binding.id, errorBodyOf(err)),
        )
      return
    }
    const frame: Record<string, unknown> = {
      type: 'registertrigger',
      id: binding.id,
      trigger_type: binding.trigger_type,
      function_id: binding.function_id,
      config: binding.config,
    }
    if (binding.metadata !== undefined) frame.metadata = binding.metadata
    if (binding.namespace !== 'default') frame.namespace = binding.namespace
    if (binding.trigger_namespace !== undefined && binding.trigger_namespace !== 'default') {
      frame.trigger_namespace = binding.trigger_namespace
    }
    ;(provider.peer as Connection).send(JSON.stringify(frame))
  }

  private withdrawBinding(provider: ProviderEntry, binding: Binding): void {
    if (provider.local) {
      Promise.resolve()
        .then(() => provider.local!.unregisterTrigger(bindingInfo(binding)))
        .catch((err: unknown) => this.log.warn(`unregisterTrigger failed for ${binding.id}`, { error: String(err) }))
      return
    }
    ;(provider.peer as Connection).send(
      JSON.stringify({ type: 'unregistertrigger', id: binding.id, trigger_type: binding.trigger_type, function_id: binding.function_id }),
    )
  }

  private reportBindingFailure(binding: Binding, error: ErrorBody): void {
    const owner = binding.owner
    if (!owner || owner.kind !== 'connection') {
      this.log.warn(`trigger ${binding.id} (${binding.trigger_type}) refused: ${error.code}: ${error.message}`)
      return
    }
    ;(owner as Connection).send(
      JSON.stringify({ type: 'triggerregistrationresult', id: binding.id, trigger_type: binding.trigger_type, function_id: binding.function_id, error }),
    )
  }

  // ---- BuiltinHost ---------------------------------------------------------------------------

  registerLocalFunction(peer: BuiltinPeer, id: string, handler: LocalHandler, options: LocalFunctionOptions): void {
    const replica: Replica = { peer, handler }
    if (options.description !== undefined) replica.description = options.description
    if (options.metadata !== undefined) replica.metadata = options.metadata
    if (options.request_format !== undefined) replica.request_format = options.request_format
    if (options.response_format !== undefined) replica.response_format = options.response_format
    if (this.functions.add('default', id, replica)) this.engineTriggers?.functionsChanged()
  }

  unregisterLocalFunction(peer: BuiltinPeer, id: string): void {
    if (this.functions.remove('default', id, peer)) this.engineTriggers?.functionsChanged()
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

  private removeBuiltinPeer(peer: BuiltinPeer): void {
    peer.alive = false
    if (this.functions.removePeer(peer)) this.engineTriggers?.functionsChanged()
    this.triggers.removeBindingsOf(peer)
    this.triggers.removeProviderPeer(peer)
    this.builtinPeers.delete(peer.name)
  }

  /** Peers listed by `engine::workers::*`: connections and running built-ins. */
  listedPeers(): Peer[] {
    return [...this.connections.values(), ...this.builtinPeers.values()]
  }

  peerById(workerId: string): Peer | undefined {
    return this.connections.get(workerId) ?? [...this.builtinPeers.values()].find((p) => p.workerId === workerId)
  }
}

// ---- helpers ---------------------------------------------------------------------------------

const pendingBytesOf = (peer: Peer): number => (peer.kind === 'connection' ? (peer as Connection).pendingBytes : 0)

async function defaultBuiltins(config: EngineConfig): Promise<BuiltinWorker[]> {
  const { createBuiltins } = await import('../workers/index.ts')
  return createBuiltins(config)
}

function bindingInfo(binding: Binding) {
  const info: import('./types.ts').BindingInfo = {
    id: binding.id,
    trigger_type: binding.trigger_type,
    function_id: binding.function_id,
    config: binding.config,
    namespace: binding.namespace,
  }
  if (binding.metadata !== undefined) info.metadata = binding.metadata
  return info
}

/** An `invokefunction` E→W frame, built by concatenation to avoid an intermediate object. */
function invokeFrame(legId: string, entry: FunctionEntry, data: unknown, metadata: unknown, traceparent: string | undefined, baggage: string): string {
  let frame = '{"type":"invokefunction","invocation_id":"' + legId + '","function_id":' + entry.idJson + ',"data":' + (JSON.stringify(data) ?? 'null')
  if (metadata !== undefined) frame += ',"metadata":' + JSON.stringify(metadata)
  if (traceparent !== undefined) frame += ',"traceparent":' + JSON.stringify(traceparent)
  return frame + ',"baggage":' + JSON.stringify(baggage) + '}'
}

/** An `invocationresult` frame; `error` wins over `result`, an undefined result is omitted (§5.9). */
function resultFrame(invocationId: string, functionIdJson: string, result: unknown, error: ErrorBody | undefined): string {
  let frame = '{"type":"invocationresult","invocation_id":' + JSON.stringify(invocationId) + ',"function_id":' + functionIdJson
  if (error !== undefined) frame += ',"error":' + JSON.stringify(error)
  else if (result !== undefined && result !== null) frame += ',"result":' + JSON.stringify(result)
  return frame + '}'
}

/** Sets `svc.function.id` (and `iii.function.id`) in W3C baggage, keeping other entries (§10.1). */
function mergeBaggage(baggage: string | undefined, entry: FunctionEntry): string {
  if (baggage === undefined || baggage === '') return entry.baggage
  const kept = baggage
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '' && !/^(svc|iii)\.function\.id\s*=/.test(s))
  kept.push(entry.baggage)
  return kept.join(',')
}

function normalizeError(error: unknown): ErrorBody {
  if (typeof error === 'object' && error !== null) {
    const e = error as Record<string, unknown>
    if (typeof e.code === 'string' && typeof e.message === 'string') {
      const body: ErrorBody = { code: e.code, message: e.message }
      if (typeof e.stacktrace === 'string') body.stacktrace = e.stacktrace
      return body
    }
  }
  let text: string
  try {
    text = JSON.stringify(error) ?? String(error)
  } catch {
    text = String(error)
  }
  return { code: 'UNKNOWN', message: text }
}

function toEngineError(err: unknown): SvcError {
  const body = errorBodyOf(err)
  const error = new SvcError(body.code, body.message)
  if (body.stacktrace) (error as SvcError & { stacktrace?: string }).stacktrace = body.stacktrace
  return error
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Errors.timeout(ms)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

/**
 * `ClientSession`: one worker session with the engine (protocol.md §3) over any {@link Transport},
 * with the semantics of sdk.md §3–§8 — the platform-free core every svc SDK is a facade over.
 *
 * It owns the connection state machine (connect, reconnect with backoff and jitter, `reattach`,
 * shutdown), the keepalive ({@link Heartbeat}), the call table with timeouts ({@link CallTable}),
 * the registration store replayed on every open ({@link RegistrationStore}), the provider side of
 * trigger types ({@link ProviderBindings}) and the connection state and registration error
 * listeners. Frames are read and written with the protocol codec (`decodeEngineFrame`,
 * `encodeInvokeFunction`, `encodeResult`, `encodeFrame`). What depends on the platform comes in:
 * the transport (a {@link Connector}), the announce payload, and {@link ClientHooks} (telemetry,
 * payload and result materialisation, worker gauges, ids).
 *
 * Hot path: `trigger` → `invocationresult`, and `invokefunction` → handler → `invocationresult`.
 * A synchronous call costs one call-table entry, one id and one frame encoding; each inbound frame
 * one JSON decode. What can be computed once (announce, registration frames) is.
 *
 * Imports nothing from Node and nothing but `svc-protocol` itself: it runs in browsers as is.
 *
 * @example
 * import { ClientSession } from 'svc-protocol/client'
 * const session = new ClientSession({
 *   address: 'ws://127.0.0.1:49134',
 *   connector: (url, options) => myTransport(url, options),
 *   announce: { runtime: 'browser', name: 'page' },
 * })
 * session.registerFunction('page::ping', () => 'pong')
 * await session.trigger({ function_id: 'math::add', payload: { a: 1, b: 2 } })
 */
import { CallIndex } from '../call-index.ts'
import { decodeEngineFrame, encodeCancel, encodeFrame, encodeInvokeFunction, encodeResultJson, encodeTriggerResult, idJson, type WorkerInboundRejection, type WorkerInboundResult } from '../codec.ts'
import { Codes, errorBody, Errors, type ErrorBody } from '../errors.ts'
import { HANDLER_SPANS_FEATURE, type InvokeFunctionMessage, type JsonValue, type RegisterTriggerMessage, type WorkerAnnounce } from '../messages.ts'
import type { ConnectOptions, Connector, Transport } from '../transport/types.ts'
import { AddressRotation, displayAddress, engineAddresses } from './addresses.ts'
import { backoffDelay, DEFAULT_RECONNECTION_CONFIG } from './backoff.ts'
import { ProviderBindings } from './bindings.ts'
import { createChannel, type Channel } from './channels/channels.ts'
import { CallIds } from './call-ids.ts'
import { CallTable } from './calls.ts'
import { ConnectionError, errorMessage, InvocationError, invocationError, RegistrationRejectedError, toErrorBody } from './errors.ts'
import { Heartbeat, type HeartbeatPeer } from './heartbeat.ts'
import { abortReason, HandlerRun } from './handler-context.ts'
import type { ClientHooks, ClientLog, ClientTelemetry, HandlerScope, Materializer } from './hooks.ts'
import { RegistrationStore, requestProblem, triggerTypeKey, type LocalTriggerType } from './registrations.ts'
import { systemTimers, type TimerHandle, type Timers } from './timers.ts'
import type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  FunctionRef,
  HttpInvocationConfig,
  ReconnectionConfig,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  RegistrationError,
  SvcClient,
  Trigger,
  TriggerHandler,
  TriggerRequest,
  TriggerTypeRef,
} from './types.ts'

/** Fixed durations of sdk.md §8 / protocol.md §3.3, ms. Only tests change them. */
export interface ClientTimings {
  /** Deadline for the opening handshake (the WebSocket upgrade). */
  handshakeTimeoutMs: number
  /** Interval of keepalive pings. */
  pingIntervalMs: number
  /** Reconnect after this long without any inbound frame, ping or pong. */
  idleTimeoutMs: number
  /** How long `shutdown()` waits for the closing handshake before dropping the connection. */
  closeTimeoutMs: number
}

export const DEFAULT_TIMINGS: Readonly<ClientTimings> = Object.freeze({
  handshakeTimeoutMs: 10000,
  pingIntervalMs: 20000,
  idleTimeoutMs: 60000,
  closeTimeoutMs: 2000,
})

/** Default timeout of synchronous and enqueue calls, ms (sdk.md §2). */
export const DEFAULT_INVOCATION_TIMEOUT_MS = 30000

/** Options of a {@link ClientSession}: already resolved by the facade (defaults, environment, checks). */
export interface ClientSessionOptions<Scope = unknown> {
  /**
   * The engine's `ws:`/`wss:` URL, passed to `connector` as is; or the URLs of several engines of
   * one fleet (issue 19 §3), tried in order: the first attempt goes to the first, each failed
   * attempt or dropped connection moves to the next (round-robin), and the backoff of sdk.md §2
   * waits only after a full round without an engine taking the worker.
   */
  address: string | readonly string[]
  /** Opens each connection to the engine. */
  connector: Connector
  /** Passed to every `connector` call (e.g. upgrade headers); the handshake deadline is added. */
  connectOptions?: Omit<ConnectOptions, 'handshakeTimeoutMs'>
  /** Payload of the announce sent on every open (`engine::workers::register`, protocol.md §3.2). */
  announce: WorkerAnnounce
  /** The worker's namespace (well-formed, non-blank: the facade checks it); calls and bindings default to it. */
  namespace?: string
  /** Default timeout of `trigger` calls, ms; default {@link DEFAULT_INVOCATION_TIMEOUT_MS}. */
  invocationTimeoutMs?: number
  /** Merged over {@link DEFAULT_RECONNECTION_CONFIG}. */
  reconnection?: Partial<ReconnectionConfig>
  /** Merged over {@link DEFAULT_TIMINGS}. */
  timings?: Partial<ClientTimings>
  /**
   * Keepalive pings as JSON `{"type":"ping"}` frames (answered by the engine with a `pong` frame)
   * instead of the transport's pings: for transports that cannot send ping frames or report pongs,
   * such as a browser's WebSocket (protocol.md §3.3). Default false.
   */
  pingFrames?: boolean
  /** Where warnings go; default `console.warn` with a `[svc]` prefix. */
  log?: ClientLog
  /** Source of the backoff's jitter, in [0, 1); default `Math.random`. */
  random?: () => number
  /** Clock and timers of the keepalive, the call timeouts and the backoff; default the platform's. */
  timers?: Timers
  hooks?: ClientHooks<Scope>
}

const PONG_FRAME = '{"type":"pong"}'
const PING_FRAME = '{"type":"ping"}'
const RESOLVED: Promise<undefined> = Promise.resolve(undefined)
const ENGINE_PREFIX = 'engine::'

const consoleLog: ClientLog = { warn: (message) => console.warn(`[svc] ${message}`) }

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function'
}

function hex(byte: number): string {
  return (byte + 0x100).toString(16).slice(1)
}

/** `crypto.randomUUID` where it exists (Node, browsers in secure contexts), else a v4 UUID from `crypto.getRandomValues`. */
function platformNewId(): () => string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string; getRandomValues?: (bytes: Uint8Array) => Uint8Array } }).crypto
  if (typeof crypto?.randomUUID === 'function') return () => crypto.randomUUID!()
  if (typeof crypto?.getRandomValues === 'function') {
    return () => {
      const b = crypto.getRandomValues!(new Uint8Array(16))
      b[6] = (b[6]! & 0x0f) | 0x40
      b[8] = (b[8]! & 0x3f) | 0x80
      let s = ''
      for (let i = 0; i < 16; i++) s += (i === 4 || i === 6 || i === 8 || i === 10 ? '-' : '') + hex(b[i]!)
      return s
    }
  }
  throw new TypeError('no crypto.randomUUID or crypto.getRandomValues on this platform: pass hooks.newId')
}

/**
 * A worker session with the engine. Connects at once and reconnects with backoff until
 * `shutdown()` or a terminal failure (sdk.md §8).
 */
export class ClientSession<Scope = unknown> implements SvcClient {
  readonly #rotation: AddressRotation
  /** The address of the last connection that opened, for the failover log line. */
  #openedAddress: string | undefined = undefined
  readonly #connector: Connector
  readonly #connectOptions: ConnectOptions
  readonly #namespace: string | undefined
  readonly #timeoutMs: number
  readonly #reconnection: ReconnectionConfig
  readonly #timings: ClientTimings
  readonly #log: ClientLog
  readonly #random: () => number
  readonly #timers: Timers
  readonly #announce: WorkerAnnounce
  /** The announce without `handler_spans`, encoded once. */
  readonly #announceFrame: string
  /** True when this connection's announce carried `handler_spans`. */
  #announcedHandlerSpans = false
  /**
   * True when the engine of this connection records handler spans from a result's times
   * (`workerregistered.features` has `handler_spans`) and the announce gave it their resource.
   */
  #engineRecordsSpans = false
  readonly #telemetry: ClientTelemetry<Scope> | undefined
  readonly #materialize: Materializer | undefined
  readonly #onWorkerRegistered: ((workerId: string) => void) | undefined
  /** Ids of bindings (UUID v4, sdk.md §5), and of calls when the host passes `hooks.newId`. */
  readonly #newId: () => string
  /** Ids of calls: {@link CallIds} unless the host passes `hooks.newId`. */
  readonly #nextCallId: () => string
  /** The function id of the last call whose id `requestProblem` accepted (without a namespace of its own). */
  #checkedFunctionId: string | undefined = undefined
  /** True when call ids need no escaping in JSON ({@link CallIds}): the frame takes them between quotes as they are. */
  readonly #plainCallIds: boolean
  readonly #pingFrames: boolean
  readonly #scope: HandlerScope | undefined
  /**
   * Handlers running, by the invocation id the engine sent: what its `cancelinvocation` names. A
   * `CallIndex`, not a `Map`: a settled call's objects die young (see `svc-protocol/call-index`).
   */
  readonly #running = new CallIndex<HandlerRun>()

  #state: ConnectionState = 'disconnected'
  /** The current connection, from the connector call until its `close`. */
  #transport: Transport | undefined = undefined
  /** True between the transport's open and close events; outbound frames are sent only then. */
  #connected = false
  /** Resolves `shutdown()`'s wait for the closing handshake. */
  #closeWaiter: (() => void) | undefined = undefined
  /** Set by `shutdown()` and by a move to `failed`: no more connecting, calls reject. */
  #terminal = false
  #shutdown: Promise<void> | undefined = undefined
  /** Reconnect attempts scheduled since the last successful open (sdk.md §2). */
  #retries = 0
  #reconnectTimer: TimerHandle | undefined = undefined
  /** Why the client itself dropped the current connection; errors that follow are its echo. */
  #dropReason: ConnectionError | undefined = undefined
  readonly #heartbeat: Heartbeat<HeartbeatPeer>
  /** The heartbeat's proof-of-life marker for the open connection. */
  #heard: () => void = () => {}

  #workerId: string | undefined = undefined
  #reattachToken: string | undefined = undefined
  #lastError: Error | undefined = undefined

  readonly #calls: CallTable
  readonly #registrations = new RegistrationStore()
  readonly #bindings: ProviderBindings
  readonly #stateListeners = new Set<(state: ConnectionState, address: string) => void>()
  readonly #registrationListeners = new Set<(error: RegistrationError) => void>()
  /** Sends on the open connection (bound once: the call table's sender). */
  readonly #sendNow = (text: string): void => {
    ;(this.#transport as Transport).send(text)
  }

  /** @throws TypeError when `address` is not one `ws:`/`wss:` URL or a non-empty list of them ({@link engineAddresses}). */
  constructor(options: ClientSessionOptions<Scope>) {
    this.#rotation = new AddressRotation(engineAddresses(options.address))
    this.#connector = options.connector
    this.#timings = { ...DEFAULT_TIMINGS, ...options.timings }
    this.#connectOptions = { ...options.connectOptions, handshakeTimeoutMs: this.#timings.handshakeTimeoutMs }
    this.#namespace = options.namespace
    this.#timeoutMs = options.invocationTimeoutMs ?? DEFAULT_INVOCATION_TIMEOUT_MS
    this.#reconnection = { ...DEFAULT_RECONNECTION_CONFIG }
    for (const [key, value] of Object.entries(options.reconnection ?? {})) {
      if (value !== undefined && key in this.#reconnection) (this.#reconnection as unknown as Record<string, number>)[key] = value
    }
    this.#log = options.log ?? consoleLog
    this.#random = options.random ?? Math.random
    this.#timers = options.timers ?? systemTimers
    this.#pingFrames = options.pingFrames === true
    const hooks = options.hooks ?? {}
    this.#telemetry = hooks.telemetry
    this.#materialize = hooks.materialize
    this.#onWorkerRegistered = hooks.onWorkerRegistered
    this.#newId = hooks.newId ?? platformNewId()
    if (hooks.newId !== undefined) {
      this.#nextCallId = hooks.newId
      this.#plainCallIds = false
    } else {
      const ids = new CallIds(this.#newId)
      this.#nextCallId = () => ids.next()
      this.#plainCallIds = true
    }
    this.#scope = hooks.handlerScope
    this.#announce = options.announce
    this.#announceFrame = encodeAnnounce(options.announce)
    // A call that timed out here is cancelled in the engine too: its worker need not run on for nobody.
    this.#calls = new CallTable(this.#timers, (call) => this.#sendIfConnected(encodeCancel(call.id, `timed out after ${call.timeoutMs}ms`)))
    this.#bindings = new ProviderBindings(this.#log)
    this.#heartbeat = new Heartbeat({
      pingIntervalMs: this.#timings.pingIntervalMs,
      idleTimeoutMs: this.#timings.idleTimeoutMs,
      timers: this.#timers,
      onIdle: () => {
        this.#dropReason = new ConnectionError(Codes.Timeout, `no frame from the engine for ${this.#timings.idleTimeoutMs}ms; reconnecting`)
        this.#lastError = this.#dropReason
      },
    })
    this.#connect()
  }

  // ---------------------------------------------------------------- connection (sdk.md §8)

  #connect(): void {
    this.#setState('connecting')
    // The transport enforces the handshake deadline: `error` (TIMEOUT), then `close` with 1006.
    let transport: Transport
    try {
      transport = this.#connector(this.#rotation.current, { ...this.#connectOptions })
    } catch (err) {
      this.#lastError = err as Error
      this.#scheduleReconnect()
      return
    }
    this.#transport = transport
    transport.setHandlers({
      open: () => {
        if (transport === this.#transport) this.#onOpen(transport)
      },
      message: (data) => {
        if (transport === this.#transport) this.#onFrame(transport, data)
      },
      alive: () => {
        if (transport === this.#transport) this.#heard()
      },
      error: (err) => {
        if (transport !== this.#transport || this.#terminal || this.#dropReason !== undefined) return
        // An AUTH_ERROR frame explains the close that follows better than the socket error does.
        if (this.#lastError instanceof ConnectionError && this.#lastError.code === Codes.AuthError) return
        const code = (err as { code?: unknown }).code
        this.#lastError = code === Codes.Timeout ? new ConnectionError(code, err.message) : err
      },
      close: () => {
        if (transport === this.#transport) this.#onClose()
      },
    })
  }

  #onOpen(transport: Transport): void {
    this.#connected = true
    this.#retries = 0
    // Order of protocol.md §3.1: reattach, announce, replay (trigger types, functions, triggers),
    // then calls queued while disconnected.
    if (this.#workerId !== undefined && this.#reattachToken !== undefined) {
      transport.send(encodeFrame({ type: 'reattach', previous_worker_id: this.#workerId, reattach_token: this.#reattachToken }))
    }
    // Handler spans are left to the engine only on a connection whose announce gave their resource
    // (known once telemetry started, which may be after this client was made).
    const handlerSpans = this.#telemetry?.handlerSpans?.()
    this.#announcedHandlerSpans = handlerSpans !== undefined
    this.#engineRecordsSpans = false
    transport.send(handlerSpans === undefined ? this.#announceFrame : encodeAnnounce({ ...this.#announce, handler_spans: handlerSpans }))
    this.#registrations.replay(this.#sendNow)
    this.#calls.flush(this.#sendNow)
    const address = this.#rotation.current
    const rotation = this.#rotation
    if (rotation.addresses.length > 1 && address !== this.#openedAddress && (this.#openedAddress !== undefined || rotation.index !== 0)) {
      this.#log.warn(`connected to ${displayAddress(address)} (engine address ${rotation.index + 1} of ${rotation.addresses.length})`)
    }
    this.#openedAddress = address
    const peer: HeartbeatPeer = this.#pingFrames ? { ping: () => transport.send(PING_FRAME), terminate: () => transport.terminate() } : transport
    this.#heard = this.#heartbeat.track(peer)
    this.#setState('connected')
  }

  #onClose(): void {
    this.#transport = undefined
    this.#dropReason = undefined
    const wasOpen = this.#connected
    this.#connected = false
    this.#heartbeat.stop()
    this.#heard = () => {}
    if (wasOpen) this.#calls.failSent((call) => invocationError(Errors.connectionLost(), call.functionId))
    // Handlers of that connection cannot answer any more (the engine ended their calls): they stop.
    if (this.#running.size > 0) {
      for (const run of this.#running.values()) run.abort('connection to the engine was lost')
      this.#running.clear()
    }
    // The engine has moved our bindings to another provider or parked them (protocol.md §3.6 step 5);
    // a reopened connection gets them delivered again.
    this.#bindings.releaseAll()
    const waiter = this.#closeWaiter
    this.#closeWaiter = undefined
    waiter?.()
    if (this.#terminal) return
    this.#scheduleReconnect()
  }

  /**
   * The attempt ended: the next goes to the next address at once, or, after a full round of the
   * addresses (every attempt with one address), after the backoff delay (sdk.md §2).
   */
  #scheduleReconnect(): void {
    if (!this.#rotation.advance()) {
      this.#setState('reconnecting')
      this.#reconnectTimer = this.#timers.setTimeout(() => {
        this.#reconnectTimer = undefined
        if (!this.#terminal) this.#connect()
      }, 0)
      return
    }
    const config = this.#reconnection
    if (config.maxRetries !== -1 && this.#retries >= config.maxRetries) {
      this.#fail(invocationError(Errors.notConnected()), true)
      return
    }
    const delay = backoffDelay(this.#retries, config, this.#random)
    this.#retries++
    this.#setState('reconnecting')
    this.#reconnectTimer = this.#timers.setTimeout(() => {
      this.#reconnectTimer = undefined
      if (!this.#terminal) this.#connect()
    }, delay)
  }

  /**
   * Enters the terminal `failed` state. `retriesExhausted` keeps the last connection error for
   * `getLastError()` and rejects queued calls with NOT_CONNECTED; otherwise `error` is the fatal
   * cause and every pending call rejects with it (sdk.md §7.3).
   */
  #fail(error: Error, retriesExhausted: boolean): void {
    if (this.#terminal) return
    this.#terminal = true
    this.#clearReconnect()
    if (retriesExhausted) {
      this.#lastError ??= error
      this.#calls.failAll((call) => this.#notConnected(call.functionId))
    } else {
      this.#lastError = error
      this.#calls.failAll(() => error)
    }
    const transport = this.#transport
    if (transport !== undefined) {
      this.#connected = false
      transport.close(1000)
    }
    this.#setState('failed')
  }

  #clearReconnect(): void {
    if (this.#reconnectTimer === undefined) return
    this.#timers.clearTimeout(this.#reconnectTimer)
    this.#reconnectTimer = undefined
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return
    this.#state = state
    const address = this.#rotation.current
    for (const listener of this.#stateListeners) {
      try {
        listener(state, address)
      } catch (err) {
        this.#log.warn(`connection state listener threw: ${errorMessage(err)}`)
      }
    }
  }

  #notConnected(functionId: string): InvocationError {
    return invocationError(Errors.notConnected(), functionId)
  }

  // ---------------------------------------------------------------- inbound frames

  #onFrame(transport: Transport, data: string | Uint8Array): void {
    this.#heard()
    const msg = decodeEngineFrame(data)
    if (msg === undefined) return // nothing to answer or act on (protocol.md §3.5)
    switch (msg.type) {
      case 'invocationresult':
        this.#onResult(msg)
        return
      case 'invokefunction':
        this.#onInvoke(transport, msg)
        return
      case 'cancelinvocation':
        this.#running.get(msg.invocation_id)?.abort(msg.reason)
        return
      case 'workerregistered':
        this.#workerId = msg.worker_id
        this.#reattachToken = msg.reattach_token
        this.#engineRecordsSpans = this.#announcedHandlerSpans && msg.features?.includes(HANDLER_SPANS_FEATURE) === true
        this.#rotation.settle()
        this.#onWorkerRegistered?.(msg.worker_id)
        return
      case 'registertrigger':
        this.#onDeliverBinding(transport, msg)
        return
      case 'unregistertrigger':
        this.#bindings.remove(msg.id)
        return
      case 'triggerregistrationresult':
        // E→W results are failure notices for bindings this client registered (protocol.md §5.7).
        if (msg.error !== undefined) this.#onTriggerFailed(msg.id, msg.trigger_type, msg.function_id, msg.error)
        return
      case 'registrationrejected':
        this.#onRejected(msg)
        return
      case 'ping':
        transport.send(PONG_FRAME)
        return
      case 'error':
        this.#lastError = new ConnectionError(msg.error.code, msg.error.message)
        return
      default:
        return // pong
    }
  }

  #onResult(msg: WorkerInboundResult): void {
    const call = this.#calls.settle(msg.invocation_id)
    if (call === undefined) return // late answer after a timeout, or not ours
    if (msg.error !== undefined) {
      call.reject(InvocationError.fromWire(msg.error, call.functionId))
      return
    }
    if (this.#materialize === undefined) {
      call.resolve(msg.result)
      return
    }
    try {
      call.resolve(this.#materialize(msg.result, 'result', call.functionId)) // a promise is adopted
    } catch (err) {
      call.reject(err instanceof Error ? err : new InvocationError({ code: Codes.InvocationFailed, message: errorMessage(err), function_id: call.functionId }))
    }
  }

  #onInvoke(transport: Transport, msg: InvokeFunctionMessage): void {
    const fn = this.#registrations.functions.get(msg.function_id)
    if (fn === undefined || fn.handler === undefined) {
      const error = fn === undefined ? Errors.functionNotHeld(msg.function_id) : Errors.functionNotInvokable(msg.function_id)
      this.#answer(transport, msg, undefined, error.toErrorBody(), undefined)
      return
    }
    // The handler starts now and the transport keeps reading: inbound invocations run concurrently.
    const run = new HandlerRun(msg.invocation_id ?? '', msg.function_id)
    if (msg.invocation_id !== undefined) this.#running.set(msg.invocation_id, run)
    const scope = this.#telemetry?.startHandler(msg.function_id, msg.data, msg.traceparent, msg.baggage, this.#engineRecordsSpans)
    if (this.#materialize === undefined) {
      this.#run(transport, msg, fn.handler, msg.data, scope, run)
      return
    }
    let data: unknown
    try {
      data = this.#materialize(msg.data, 'payload', msg.function_id)
    } catch (err) {
      this.#answer(transport, msg, undefined, toErrorBody(err), scope)
      return
    }
    if (isThenable(data)) {
      const handler = fn.handler
      data.then(
        (value) => this.#run(transport, msg, handler, value, scope, run),
        (err: unknown) => this.#answer(transport, msg, undefined, toErrorBody(err), scope),
      )
    } else {
      this.#run(transport, msg, fn.handler, data, scope, run)
    }
  }

  #run(transport: Transport, msg: InvokeFunctionMessage, handler: FunctionHandler, data: unknown, scope: Scope | undefined, run: HandlerRun): void {
    let value: unknown
    try {
      const metadata = msg.metadata as JsonValue | undefined
      // The handler's context stays current for the calls it makes, so they are cancelled with it.
      // (In one step when the telemetry hook runs the handler and enters the handler scope itself.)
      const handlerScope = this.#scope
      value =
        handlerScope === undefined || (this.#telemetry?.runsHandlerScope === true && this.#telemetryRuns(scope, msg))
          ? this.#call(handler, data, metadata, scope, msg, run)
          : handlerScope.run(run, this.#callBound, handler, data, metadata, scope, msg, run)
    } catch (err) {
      this.#answer(transport, msg, undefined, toErrorBody(err), scope)
      return
    }
    if (isThenable(value)) {
      value.then(
        (result) => this.#answer(transport, msg, result, undefined, scope),
        (err: unknown) => this.#answer(transport, msg, undefined, toErrorBody(err), scope),
      )
    } else {
      this.#answer(transport, msg, value, undefined, scope)
    }
  }

  /** Whether the telemetry hook runs this handler: it has a span, or an inbound trace context to run under. */
  #telemetryRuns(scope: Scope | undefined, msg: InvokeFunctionMessage): boolean {
    return this.#telemetry !== undefined && (scope !== undefined || msg.traceparent !== undefined)
  }

  /** Calls the handler: inside the telemetry scope when there is one or an inbound context, else plainly. */
  #call(handler: FunctionHandler, data: unknown, metadata: JsonValue | undefined, scope: Scope | undefined, msg: InvokeFunctionMessage, run: HandlerRun): unknown {
    return this.#telemetryRuns(scope, msg) ? this.#telemetry!.runHandler(scope, msg.traceparent, handler, data, metadata, run) : handler(data, metadata, run)
  }

  readonly #callBound = (handler: FunctionHandler, data: unknown, metadata: JsonValue | undefined, scope: Scope | undefined, msg: InvokeFunctionMessage, run: HandlerRun): unknown =>
    this.#call(handler, data, metadata, scope, msg, run)

  #answer(transport: Transport, msg: InvokeFunctionMessage, result: unknown, error: ErrorBody | undefined, scope: Scope | undefined): void {
    const id = msg.invocation_id
    if (id !== undefined) {
      const run = this.#running.take(id)
      if (run !== undefined) {
        // Cancelled: the engine answered the caller already and drops a late result; none is sent.
        if (run.cancelled) {
          if (scope !== undefined) this.#telemetry!.endHandler(scope, undefined, error ?? errorBody(Errors.cancelled), undefined)
          return
        }
      }
    }
    // The result is encoded before the span ends, so its payload event can reuse the text (and a
    // result that cannot be sent ends the span as the failure the caller gets).
    let json: string | undefined
    if (error === undefined && result !== undefined) {
      try {
        json = JSON.stringify(result)
      } catch (err) {
        error = { code: Codes.InvocationFailed, message: `result is not JSON-serialisable: ${errorMessage(err)}` }
      }
    }
    // The answer leaves first; the span ends (payload event, OTLP text) right after.
    if (transport === this.#transport && this.#connected && msg.invocation_id !== undefined) {
      const trace = scope === undefined ? undefined : this.#telemetry!.resultContext(scope, this.#engineRecordsSpans)
      let text: string
      try {
        text = encodeResultJson(msg.invocation_id, idJson(msg.function_id), json, error, trace?.traceparent, trace?.baggage, trace?.span)
      } catch (err) {
        const failed: ErrorBody = { code: Codes.InvocationFailed, message: `result is not JSON-serialisable: ${errorMessage(err)}` }
        text = encodeResultJson(msg.invocation_id, idJson(msg.function_id), undefined, failed)
      }
      transport.send(text)
    }
    if (scope !== undefined) this.#telemetry!.endHandler(scope, result, error, json)
  }

  #onRejected(msg: WorkerInboundRejection): void {
    if (msg.code !== Codes.FunctionNamespaceConflict) {
      // Any other code is fatal (protocol.md §5.11); svc engines never send one.
      const init: ConstructorParameters<typeof RegistrationRejectedError>[0] = {
        code: msg.code,
        message: msg.message,
        namespace: msg.namespace ?? 'default',
        owner_worker_id: msg.owner_worker_id,
      }
      if (msg.worker_name !== undefined) init.worker_name = msg.worker_name
      if (msg.function_id !== undefined) init.function_id = msg.function_id
      this.#fail(new RegistrationRejectedError(init), false)
      return
    }
    const isType = msg.function_id === undefined && msg.trigger_type_id !== undefined
    const error: RegistrationError = {
      kind: isType ? 'trigger_type' : 'function',
      id: (isType ? msg.trigger_type_id : msg.function_id) ?? '',
      code: msg.code,
      message: msg.message,
    }
    if (msg.reason !== undefined) error.reason = msg.reason
    if (msg.namespace !== undefined) error.namespace = msg.namespace
    if (msg.function_id !== undefined) error.function_id = msg.function_id
    this.#reportRegistrationError(error)
  }

  #onTriggerFailed(id: string, triggerType: string, functionId: string, body: ErrorBody): void {
    const error: RegistrationError = { kind: 'trigger', id, code: body.code, message: body.message, trigger_type: triggerType, function_id: functionId }
    const namespace = this.#registrations.triggers.get(id)?.namespace
    if (namespace !== undefined) error.namespace = namespace
    this.#reportRegistrationError(error)
  }

  #reportRegistrationError(error: RegistrationError): void {
    this.#log.warn(`registration of ${error.kind} '${error.id}' refused: ${error.code}: ${error.message}`)
    for (const listener of this.#registrationListeners) {
      try {
        listener(error)
      } catch (err) {
        this.#log.warn(`registration error listener threw: ${errorMessage(err)}`)
      }
    }
  }

  // ---------------------------------------------------------------- provider side (protocol.md §8.3)

  #onDeliverBinding(transport: Transport, msg: RegisterTriggerMessage): void {
    const answer = (error: ErrorBody | undefined): void => {
      if (transport === this.#transport && this.#connected) transport.send(encodeTriggerResult(msg.id, msg.trigger_type, msg.function_id, error))
    }
    const type = this.#registrations.findTriggerType(msg.trigger_type, msg.trigger_namespace)
    if (type === undefined) answer(Errors.triggerTypeNotFound().toErrorBody())
    else this.#bindings.deliver(msg, type, answer)
  }

  // ---------------------------------------------------------------- sending

  /** Sends a frame now when connected; otherwise drops it (registrations are replayed, not queued). */
  #sendIfConnected(text: string): void {
    if (this.#connected) (this.#transport as Transport).send(text)
  }

  /** The namespace calls and bindings get by default (protocol.md §3.4). */
  #defaultNamespace(functionId: string): string | undefined {
    return this.#namespace !== undefined && !functionId.startsWith(ENGINE_PREFIX) ? this.#namespace : undefined
  }

  readonly #defaultNamespaceOf = (functionId: string): string | undefined => this.#defaultNamespace(functionId)

  // ---------------------------------------------------------------- invocation (sdk.md §6)

  /**
   * Invokes a function (sdk.md §6). Rejects with an `InvocationError` (`TIMEOUT`,
   * `invocation_stopped`, `NOT_CONNECTED`, `SHUTDOWN`, or the remote code); at once, without
   * sending, with `invalid_arguments` for a missing id or a payload JSON cannot encode, and with
   * `INVALID_ID` / `INVALID_NAMESPACE` for an id or namespace the engine would refuse.
   */
  trigger<TIn = unknown, TOut = unknown>(request: TriggerRequest<TIn> & { action?: undefined }): Promise<TOut>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'void' } }): Promise<void>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'enqueue' } }): Promise<EnqueueResult>
  trigger(request: TriggerRequest<unknown>): Promise<unknown> {
    const functionId = request.function_id
    if (this.#terminal) return Promise.reject(this.#notConnected(functionId))
    if (typeof functionId !== 'string' || functionId === '') {
      return Promise.reject(invocationError(Errors.invalidArguments('function_id is required')))
    }
    // Callers call the same few functions over and over: the last id found well-formed is not checked again.
    if (functionId !== this.#checkedFunctionId || request.namespace !== undefined) {
      const refused = requestProblem(functionId, request.namespace)
      if (refused !== undefined) return Promise.reject(invocationError(refused, functionId))
      if (request.namespace === undefined) this.#checkedFunctionId = functionId
    }
    const action = request.action
    const id = action !== undefined && action.type === 'void' ? undefined : this.#nextCallId()
    // A call made inside a handler follows the handler's cancellation unless it is given its own.
    const signal = id === undefined ? undefined : (request.signal ?? this.#scope?.current()?.signal)
    if (signal?.aborted) return Promise.reject(invocationError(Errors.cancelled(abortReason(signal)), functionId))
    let text: string
    try {
      const trace = this.#telemetry?.outgoing()
      text = encodeInvokeFunction({
        type: 'invokefunction',
        invocation_id: id,
        function_id: functionId,
        data: request.payload === undefined ? null : request.payload,
        metadata: request.metadata,
        action,
        namespace: request.namespace ?? this.#defaultNamespace(functionId),
        traceparent: trace?.traceparent,
        baggage: trace?.baggage,
      }, id !== undefined && this.#plainCallIds ? '"' + id + '"' : undefined)
    } catch (err) {
      return Promise.reject(invocationError(Errors.invalidArguments(`payload is not JSON-serialisable: ${errorMessage(err)}`), functionId))
    }
    if (id === undefined) {
      if (this.#connected) (this.#transport as Transport).send(text)
      else this.#calls.queueVoid(text)
      return RESOLVED
    }
    const call = this.#calls.open(id, functionId, request.timeoutMs ?? this.#timeoutMs, text, this.#connected ? this.#sendNow : undefined)
    if (signal !== undefined) {
      const onAbort = (): void => this.#cancelCall(id, functionId, abortReason(signal))
      signal.addEventListener('abort', onAbort, { once: true })
      call.detach = () => signal.removeEventListener('abort', onAbort)
    }
    return call.promise
  }

  /**
   * Cancels a call of this client: it rejects with `cancelled` now; the engine is sent
   * `cancelinvocation` when it has the call (a call still queued is dropped unsent).
   */
  #cancelCall(id: string, functionId: string, reason: string | undefined): void {
    const call = this.#calls.cancel(id, invocationError(Errors.cancelled(reason), functionId))
    if (call?.sent === true) this.#sendIfConnected(encodeCancel(id, reason))
  }

  // ---------------------------------------------------------------- registration (sdk.md §4–§5)

  /**
   * Registers a function (sdk.md §4), sent now when connected and replayed on every open.
   * @throws as {@link SvcClient.registerFunction} says: TypeError, Error for a duplicate id, InvocationError `INVALID_ID`.
   */
  registerFunction<TIn = any, TOut = any>(id: string, handler: FunctionHandler<TIn, TOut>, options?: RegisterFunctionOptions): FunctionRef
  registerFunction(id: string, invocation: HttpInvocationConfig, options?: RegisterFunctionOptions): FunctionRef
  registerFunction(id: string, handlerOrInvocation: FunctionHandler | HttpInvocationConfig, options: RegisterFunctionOptions = {}): FunctionRef {
    const entry = this.#registrations.addFunction(id, handlerOrInvocation, options)
    this.#sendIfConnected(entry.frame)
    return {
      id,
      unregister: () => {
        if (this.#registrations.functions.get(id) !== entry) return
        this.#registrations.functions.delete(id)
        this.#sendIfConnected(encodeFrame({ type: 'unregisterfunction', id }))
      },
    }
  }

  /**
   * Binds a function to a trigger type (sdk.md §5) under a generated id, replayed with that id on every open.
   * @throws as {@link SvcClient.registerTrigger} says: TypeError, InvocationError `INVALID_ID` / `INVALID_NAMESPACE`.
   */
  registerTrigger<TConfig = unknown>(input: RegisterTriggerInput<TConfig>): Trigger {
    const entry = this.#registrations.addTrigger(this.#newId(), input, this.#defaultNamespaceOf)
    this.#sendIfConnected(entry.frame)
    const id = entry.id
    return {
      id,
      unregister: () => {
        if (this.#registrations.triggers.get(id) !== entry) return
        this.#registrations.triggers.delete(id)
        this.#sendIfConnected(encodeFrame({ type: 'unregistertrigger', id, trigger_type: entry.triggerType }))
      },
    }
  }

  /**
   * Provides a trigger type (sdk.md §5, protocol.md §8.3): bindings the engine delivers go to
   * `handler`. Registering the same type again replaces the handler (the old one lets go of its bindings).
   * @throws as {@link SvcClient.registerTriggerType} says: TypeError, InvocationError `INVALID_ID` / `INVALID_NAMESPACE`.
   */
  registerTriggerType<TConfig = unknown>(input: RegisterTriggerTypeInput, handler: TriggerHandler<TConfig>): TriggerTypeRef<TConfig> {
    const { entry, replaced } = this.#registrations.addTriggerType(input, handler, this.#namespace)
    // Registering a type again replaces its handler; bindings the old handler holds are let go.
    if (replaced !== undefined) this.#bindings.releaseAll(replaced)
    this.#sendIfConnected(entry.frame)

    const bind = (functionId: string, config: TConfig, metadata?: Record<string, JsonValue>): Trigger => {
      const trigger: RegisterTriggerInput<TConfig> = { type: input.id, function_id: functionId, config }
      if (metadata !== undefined) trigger.metadata = metadata
      if (input.namespace !== undefined) trigger.trigger_namespace = input.namespace
      return this.registerTrigger(trigger)
    }
    return {
      id: input.id,
      registerTrigger: bind,
      registerFunction: (functionId, fnHandler, config, metadata) => {
        const fn = this.registerFunction(functionId, fnHandler)
        let trigger: Trigger
        try {
          trigger = bind(functionId, config, metadata)
        } catch (err) {
          fn.unregister()
          throw err
        }
        return {
          id: functionId,
          unregister: () => {
            trigger.unregister()
            fn.unregister()
          },
        }
      },
      unregister: () => this.#unregisterTriggerType(entry),
    }
  }

  /** Stops providing a trigger type (`unregistertriggertype`, sdk.md §5); its bindings are let go. */
  unregisterTriggerType(input: { id: string; namespace?: string }): void {
    const entry = this.#registrations.triggerTypes.get(triggerTypeKey(input.namespace ?? this.#namespace ?? 'default', input.id))
    if (entry !== undefined) this.#unregisterTriggerType(entry)
  }

  #unregisterTriggerType(entry: LocalTriggerType): void {
    if (this.#registrations.triggerTypes.get(entry.key) !== entry) return
    this.#registrations.triggerTypes.delete(entry.key)
    // The engine sends no unregistertrigger for the bindings of a type we stop providing (§5.4).
    this.#bindings.releaseAll(entry)
    this.#sendIfConnected(
      encodeFrame(entry.namespace === undefined ? { type: 'unregistertriggertype', id: entry.id } : { type: 'unregistertriggertype', id: entry.id, namespace: entry.namespace }),
    )
  }

  // ---------------------------------------------------------------- accessors and shutdown

  getConnectionState(): ConnectionState {
    return this.#state
  }

  /**
   * Calls `listener(state, address)` now and on every change of state (sdk.md §8); `address` is
   * {@link getAddress} at that moment (on `connected`, the engine the session is connected to).
   */
  addConnectionStateListener(listener: (state: ConnectionState, address: string) => void): () => void {
    this.#stateListeners.add(listener)
    listener(this.#state, this.#rotation.current)
    return () => {
      this.#stateListeners.delete(listener)
    }
  }

  addRegistrationErrorListener(listener: (error: RegistrationError) => void): () => void {
    this.#registrationListeners.add(listener)
    return () => {
      this.#registrationListeners.delete(listener)
    }
  }

  getWorkerId(): string | undefined {
    return this.#workerId
  }

  /**
   * The address of the engine the session is connected to; while not connected, the one it tries
   * next. Always one of {@link getAddresses}, as given (credentials included: log it through
   * `displayAddress`).
   */
  getAddress(): string {
    return this.#rotation.current
  }

  /** Every engine address of this session, in the order they are tried (issue 19 §3). */
  getAddresses(): readonly string[] {
    return this.#rotation.addresses
  }

  getNamespace(): string | undefined {
    return this.#namespace
  }

  getLastError(): Error | undefined {
    return this.#lastError
  }

  /**
   * Creates a channel (sdk.md §9) through `engine::channels::create`. Needs a `materialize` hook
   * that turns channel refs into ends ({@link Channels}).
   * @throws (rejects) as {@link SvcClient.createChannel} says.
   */
  createChannel(bufferSize?: number): Promise<Channel> {
    return createChannel(this, bufferSize)
  }

  /** Rejects pending calls with `SHUTDOWN`, closes with code 1000 (dropped after `closeTimeoutMs`). Idempotent. */
  shutdown(): Promise<void> {
    this.#shutdown ??= this.#close()
    return this.#shutdown
  }

  async #close(): Promise<void> {
    this.#terminal = true
    this.#clearReconnect()
    this.#calls.failAll((call) => invocationError(Errors.shutdown(), call.functionId))
    const transport = this.#transport
    if (transport !== undefined) {
      // Still set means its `close` has not fired yet (#onClose clears it).
      this.#connected = false
      await new Promise<void>((resolve) => {
        const fallback = this.#timers.setTimeout(() => transport.terminate(), this.#timings.closeTimeoutMs)
        this.#closeWaiter = () => {
          this.#timers.clearTimeout(fallback)
          resolve()
        }
        transport.close(1000)
      })
    }
    this.#bindings.releaseAll()
    this.#setState('disconnected')
  }
}

/** The announce: a void call of engine::workers::register (protocol.md §3.2); engine:: ids live in `default`, so it carries no namespace. */
function encodeAnnounce(announce: WorkerAnnounce): string {
  return encodeInvokeFunction({ type: 'invokefunction', function_id: 'engine::workers::register', data: announce, action: { type: 'void' } })
}

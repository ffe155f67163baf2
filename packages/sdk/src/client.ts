/**
 * The worker client behind {@link SvcClient} (sdk.md §3–§8): one session with the engine
 * (protocol.md §3) over a {@link Transport} (a WebSocket unless a test or an in-process host gives
 * another {@link Connector}), the registration store replayed on every open, outbound invocations
 * and the handlers of inbound ones.
 *
 * Hot path: `trigger` → `invocationresult`, and `invokefunction` → handler → `invocationresult`.
 * Each synchronous call costs one pending-map entry, one timer and one `JSON.stringify`; each
 * inbound frame one `JSON.parse`. Everything that can be computed once (announce, registration
 * frames, timer callbacks) is.
 */
import { currentOtelConfig, registerWorkerGauges } from 'svc-helpers/observability'
import { getMeter } from 'svc-helpers/observability/internal'
import { endInvocationSpan, invocationHeaders, type InvocationSpan, isUnsampled, runInSpan, runUnsampled, startInvocationSpan, traceFields } from './tracing.ts'
import { randomUUID } from 'node:crypto'
import { Errors, type SvcError } from 'svc-protocol/errors'
import type { ConnectOptions, Connector, Transport } from 'svc-protocol/transport'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import { jsonParse } from 'svc-protocol/json'
import { idProblem } from 'svc-protocol/ids'
import {
  ErrorCode,
  InvocationError,
  RegistrationRejectedError,
  isErrorBody,
  toErrorBody,
  type InvocationErrorInit,
} from './errors.ts'
import { Deadlines, type DeadlineSlot } from './deadlines.ts'
import { backoffDelay, buildAnnounce, type ResolvedOptions } from './options.ts'
import type {
  ErrorBody,
  InvocationResultMessage,
  InvokeFunctionMessage,
  RegisterFunctionMessage,
  RegisterTriggerMessage,
  RegisterTriggerTypeMessage,
  RegistrationRejectedMessage,
  TriggerRegistrationResultMessage,
  UnregisterTriggerMessage,
} from './protocol.ts'
import type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  FunctionRef,
  HttpInvocationConfig,
  JsonValue,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  RegistrationError,
  SvcClient,
  Trigger,
  TriggerConfig,
  TriggerHandler,
  TriggerRequest,
  TriggerTypeRef,
} from './types.ts'

/** Fixed durations of sdk.md §8 / protocol.md §3.3, ms. Only tests change them. */
export interface ClientTimings {
  /** Deadline for the opening handshake (the WebSocket upgrade). */
  handshakeTimeoutMs: number
  /** Interval of WebSocket pings. */
  pingIntervalMs: number
  /** Reconnect after this long without any inbound frame. */
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

/** Where the client reports what the application should hear about but cannot catch. */
export interface ClientLog {
  warn(message: string): void
}

const consoleLog: ClientLog = {
  warn: (message) => console.warn(`[svc-sdk] ${message}`),
}

/** Seams for tests and in-process hosts (`svc-sdk/internal`); not part of the public API. */
export interface ClientInternals {
  timings?: Partial<ClientTimings>
  log?: ClientLog
  /** Source of jitter for the reconnect backoff, in [0, 1). */
  random?: () => number
  /**
   * Opens each connection to the engine: `connectWebSocket` by default; `memoryConnector` from
   * `svc-protocol/transport/memory` connects to an engine in the same process.
   */
  connector?: Connector
}

/**
 * A connection-level failure kept for `getLastError()`: `AUTH_ERROR` from the engine (protocol.md
 * §3.1), or `TIMEOUT` for a handshake or keepalive deadline. Transport errors (`ECONNREFUSED`, …)
 * are kept as they are.
 */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError'
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.code = code
  }
}

/** One synchronous or enqueue call awaiting its `invocationresult`. */
class PendingCall {
  readonly id: string
  readonly functionId: string
  readonly promise: Promise<unknown>
  resolve!: (value: unknown) => void
  reject!: (error: Error) => void
  /** The deadline slot holding this call until it completes or times out. */
  slot: DeadlineSlot<PendingCall> | undefined = undefined
  timeoutMs = 0
  /** The frame while the call waits in the outbound queue; cleared once sent. */
  frame: string | undefined = undefined
  sent = false

  constructor(id: string, functionId: string) {
    this.id = id
    this.functionId = functionId
    this.promise = new Promise<unknown>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }
}

interface LocalFunction {
  readonly id: string
  /** Undefined for HTTP-invoked functions. */
  readonly handler: FunctionHandler | undefined
  readonly frame: string
}

interface LocalTriggerType {
  readonly id: string
  /** The namespace given at registration (sent back in `unregistertriggertype`). */
  readonly namespace: string | undefined
  readonly key: string
  readonly handler: TriggerHandler<any>
  readonly frame: string
}

interface LocalTrigger {
  readonly id: string
  readonly triggerType: string
  readonly functionId: string
  readonly namespace: string | undefined
  readonly frame: string
}

/** A binding the engine delivered to this client as a provider. */
interface ProviderBinding {
  readonly type: LocalTriggerType
  readonly config: TriggerConfig<any>
  /** Settles with whether the handler accepted the binding. */
  ready: Promise<boolean>
}

const PONG_FRAME = '{"type":"pong"}'
const RESOLVED: Promise<undefined> = Promise.resolve(undefined)
const ENGINE_PREFIX = 'engine::'
const utf8 = new TextDecoder()

/** The public error of a catalogue error (sdk.md §7.1). */
function invocationError(error: SvcError, functionId?: string): InvocationError {
  const init: InvocationErrorInit = { code: error.code, message: error.message }
  if (functionId !== undefined) init.function_id = functionId
  return new InvocationError(init)
}

function errorMessage(thrown: unknown): string {
  if (thrown instanceof Error) return thrown.message
  if (isErrorBody(thrown)) return thrown.message
  return String(thrown)
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  )
}

function triggerTypeKey(namespace: string, id: string): string {
  return `${namespace}\u0000${id}`
}

/**
 * Refuses a namespace argument the engine would refuse, before anything is sent: blank (a
 * TypeError, sdk.md §5) or not well-formed text (protocol.md §3.5, the engine's own check).
 * @throws TypeError for a blank value; InvocationError `INVALID_NAMESPACE` naming the problem.
 */
function requireNamespace(value: string | undefined, field: string): void {
  if (value === undefined) return
  if (typeof value !== 'string' || value.trim() === '') throw new TypeError(`${field} is empty: give it a name, or omit it`)
  const problem = idProblem(value)
  if (problem !== undefined) throw invocationError(Errors.namespaceNotText(`${field} ${problem}`))
}

/**
 * Refuses an id the engine would refuse (protocol.md §3.5): a lone UTF-16 surrogate, a control
 * character, more than 1024 characters. `what` names the argument (`function id`).
 * @throws InvocationError `INVALID_ID`: `Invalid id: <what> contains a lone UTF-16 surrogate at index <n>`.
 */
function requireWellFormedId(id: string, what: string): void {
  const problem = idProblem(id)
  if (problem !== undefined) throw invocationError(Errors.idNotText(`${what} ${problem}`))
}

/** Why `trigger` cannot send `request`: an id or a namespace the engine would refuse; undefined when it can. */
function requestProblem(functionId: string, namespace: string | undefined): SvcError | undefined {
  const problem = idProblem(functionId)
  if (problem !== undefined) return Errors.idNotText(`function_id ${problem}`)
  if (namespace === undefined) return undefined
  if (typeof namespace !== 'string' || namespace.trim() === '') return Errors.invalidNamespace()
  const nsProblem = idProblem(namespace)
  return nsProblem === undefined ? undefined : Errors.namespaceNotText(`namespace ${nsProblem}`)
}

/**
 * The Node worker client. Create it with `registerWorker`; it connects at once and reconnects with
 * backoff until `shutdown()` or a terminal failure.
 */
export class WorkerClient implements SvcClient {
  readonly #address: string
  readonly #options: ResolvedOptions
  readonly #timings: ClientTimings
  readonly #log: ClientLog
  readonly #random: () => number
  readonly #connector: Connector
  readonly #namespace: string | undefined
  readonly #timeoutMs: number
  readonly #announceFrame: string

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
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined = undefined
  #keepaliveTimer: ReturnType<typeof setInterval> | undefined = undefined
  /** Why the client itself dropped the current connection; errors that follow are its echo. */
  #dropReason: ConnectionError | undefined = undefined
  /** Set by every inbound frame, ping or pong; the keepalive tick clears it. */
  #heard = false

  #workerId: string | undefined = undefined
  #reattachToken: string | undefined = undefined
  #lastError: Error | undefined = undefined

  readonly #pending = new Map<string, PendingCall>()
  readonly #idJsonCache = new Map<string, string>()
  /** Timeouts of the pending calls (sdk.md §6), grouped so that a call needs no timer of its own. */
  readonly #deadlines = new Deadlines<PendingCall>((call) => this.#onTimeout(call))
  /** Calls made while not connected: void frames as strings, the others as their pending entry. */
  #queue: Array<string | PendingCall> = []

  readonly #functions = new Map<string, LocalFunction>()
  readonly #triggerTypes = new Map<string, LocalTriggerType>()
  readonly #triggers = new Map<string, LocalTrigger>()
  readonly #bindings = new Map<string, ProviderBinding>()

  #gaugesStarted = false
  readonly #stateListeners = new Set<(state: ConnectionState) => void>()
  readonly #registrationListeners = new Set<(error: RegistrationError) => void>()

  constructor(address: string, options: ResolvedOptions, internals: ClientInternals = {}) {
    this.#address = address
    this.#options = options
    this.#timings = { ...DEFAULT_TIMINGS, ...internals.timings }
    this.#log = internals.log ?? consoleLog
    this.#random = internals.random ?? Math.random
    this.#connector = internals.connector ?? connectWebSocket
    this.#namespace = options.namespace
    this.#timeoutMs = options.invocationTimeoutMs
    // The announce is a void call of engine::workers::register (protocol.md §3.2); engine:: ids
    // live in `default`, so it carries no namespace.
    this.#announceFrame = JSON.stringify({
      type: 'invokefunction',
      function_id: 'engine::workers::register',
      data: buildAnnounce(options),
      action: { type: 'void' },
    })
    this.#connect()
  }

  // ---------------------------------------------------------------- connection (sdk.md §8)

  #connect(): void {
    this.#setState('connecting')
    // The transport enforces the handshake deadline: `error` (TIMEOUT), then `close` with 1006.
    const options: ConnectOptions = { handshakeTimeoutMs: this.#timings.handshakeTimeoutMs }
    if (this.#options.headers !== undefined) options.headers = this.#options.headers
    let transport: Transport
    try {
      transport = this.#connector(this.#address, options)
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
        this.#heard = true
      },
      error: (err) => {
        if (transport !== this.#transport || this.#terminal || this.#dropReason !== undefined) return
        // An AUTH_ERROR frame explains the close that follows better than the socket error does.
        if (this.#lastError instanceof ConnectionError && this.#lastError.code === ErrorCode.AuthError) return
        const code = (err as { code?: unknown }).code
        this.#lastError = code === ErrorCode.Timeout ? new ConnectionError(code, err.message) : err
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
      transport.send(
        JSON.stringify({
          type: 'reattach',
          previous_worker_id: this.#workerId,
          reattach_token: this.#reattachToken,
        }),
      )
    }
    transport.send(this.#announceFrame)
    for (const type of this.#triggerTypes.values()) transport.send(type.frame)
    for (const fn of this.#functions.values()) transport.send(fn.frame)
    for (const trigger of this.#triggers.values()) transport.send(trigger.frame)
    const queue = this.#queue
    this.#queue = []
    for (const item of queue) {
      if (typeof item === 'string') {
        transport.send(item)
      } else if (this.#pending.get(item.id) === item) {
        item.sent = true
        transport.send(item.frame as string)
        item.frame = undefined
      }
    }
    this.#startKeepalive(transport)
    this.#setState('connected')
  }

  #startKeepalive(transport: Transport): void {
    const { pingIntervalMs, idleTimeoutMs } = this.#timings
    // One coarse timer serves both duties; a tick of a quarter interval keeps the idle detection
    // within idleTimeoutMs + tick without touching the clock on every frame.
    const tick = Math.max(1, Math.min(pingIntervalMs, idleTimeoutMs) / 4)
    let quietMs = 0
    let sincePingMs = 0
    this.#heard = true
    this.#keepaliveTimer = setInterval(() => {
      if (this.#heard) {
        this.#heard = false
        quietMs = 0
      } else {
        quietMs += tick
        if (quietMs >= idleTimeoutMs) {
          this.#dropReason = new ConnectionError(
            ErrorCode.Timeout,
            `no frame from the engine for ${idleTimeoutMs}ms; reconnecting`,
          )
          this.#lastError = this.#dropReason
          transport.terminate()
          return
        }
      }
      sincePingMs += tick
      if (sincePingMs >= pingIntervalMs) {
        sincePingMs = 0
        transport.ping()
      }
    }, tick)
  }

  #onClose(): void {
    this.#transport = undefined
    this.#dropReason = undefined
    const wasOpen = this.#connected
    this.#connected = false
    clearInterval(this.#keepaliveTimer)
    this.#keepaliveTimer = undefined
    if (wasOpen) this.#rejectSent()
    // The engine has moved our bindings to another provider or parked them (protocol.md §3.6 step 5);
    // a reopened connection gets them delivered again.
    this.#releaseBindings(undefined)
    const waiter = this.#closeWaiter
    this.#closeWaiter = undefined
    waiter?.()
    if (this.#terminal) return
    this.#scheduleReconnect()
  }

  #scheduleReconnect(): void {
    const config = this.#options.reconnection
    if (config.maxRetries !== -1 && this.#retries >= config.maxRetries) {
      this.#fail(invocationError(Errors.notConnected()), true)
      return
    }
    const delay = backoffDelay(this.#retries, config, this.#random)
    this.#retries++
    this.#setState('reconnecting')
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined
      if (!this.#terminal) this.#connect()
    }, delay)
  }

  /** Calls sent on the lost connection may or may not have run (sdk.md §6). */
  #rejectSent(): void {
    for (const call of this.#pending.values()) {
      if (!call.sent) continue
      this.#pending.delete(call.id)
      this.#deadlines.cancel(call, call.slot)
      call.reject(invocationError(Errors.connectionLost(), call.functionId))
    }
  }

  /** Rejects every pending and queued call with `make(call)`; queued void calls are dropped. */
  #rejectAll(make: (call: PendingCall) => Error): void {
    for (const call of this.#pending.values()) {
      this.#deadlines.cancel(call, call.slot)
      call.frame = undefined
      call.reject(make(call))
    }
    this.#pending.clear()
    this.#deadlines.clear()
    this.#queue = []
  }

  /**
   * Enters the terminal `failed` state. `retriesExhausted` keeps the last connection error for
   * `getLastError()` and rejects queued calls with NOT_CONNECTED; otherwise `error` is the fatal
   * cause and every pending call rejects with it (sdk.md §7.3).
   */
  #fail(error: Error, retriesExhausted: boolean): void {
    if (this.#terminal) return
    this.#terminal = true
    clearTimeout(this.#reconnectTimer)
    this.#reconnectTimer = undefined
    if (retriesExhausted) {
      this.#lastError ??= error
      this.#rejectAll((call) => this.#notConnected(call.functionId))
    } else {
      this.#lastError = error
      this.#rejectAll(() => error)
    }
    const transport = this.#transport
    if (transport !== undefined) {
      this.#connected = false
      transport.close(1000)
    }
    this.#setState('failed')
  }

  #setState(state: ConnectionState): void {
    if (this.#state === state) return
    this.#state = state
    for (const listener of this.#stateListeners) {
      try {
        listener(state)
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
    this.#heard = true
    let msg: { type?: unknown; [key: string]: unknown }
    try {
      // The engine sends text frames; a binary one is read as UTF-8 JSON (protocol.md §3.5).
      msg = jsonParse(typeof data === 'string' ? data : utf8.decode(data)) as typeof msg
    } catch {
      return // empty, whitespace-only or broken frames carry nothing to answer (protocol.md §3.5)
    }
    if (msg === null || typeof msg !== 'object') return
    switch (msg.type) {
      case 'invocationresult':
        this.#onResult(msg as unknown as InvocationResultMessage)
        return
      case 'invokefunction':
        this.#onInvoke(transport, msg as unknown as InvokeFunctionMessage)
        return
      case 'workerregistered':
        if (typeof msg.worker_id === 'string') {
          this.#workerId = msg.worker_id
          this.#startGauges(msg.worker_id)
        }
        if (typeof msg.reattach_token === 'string') this.#reattachToken = msg.reattach_token
        return
      case 'registertrigger':
        this.#onDeliverBinding(transport, msg as unknown as RegisterTriggerMessage)
        return
      case 'unregistertrigger':
        this.#onRemoveBinding(msg as unknown as UnregisterTriggerMessage)
        return
      case 'triggerregistrationresult':
        this.#onTriggerResult(msg as unknown as TriggerRegistrationResultMessage)
        return
      case 'registrationrejected':
        this.#onRejected(msg as unknown as RegistrationRejectedMessage)
        return
      case 'ping':
        transport.send(PONG_FRAME)
        return
      case 'error':
        if (isErrorBody(msg.error)) this.#lastError = new ConnectionError(msg.error.code, msg.error.message)
        return
      default:
        return // pong and unknown types are ignored (protocol.md §3.5)
    }
  }

  /** Worker gauges once per client, after the first `workerregistered` (sdk.md §12.3). */
  #startGauges(workerId: string): void {
    if (this.#gaugesStarted || this.#options.enableMetricsReporting === false) return
    if (currentOtelConfig()?.metricsEnabled !== true) return
    this.#gaugesStarted = true
    registerWorkerGauges(getMeter(), { workerId, workerName: this.#options.workerName })
  }

  #onResult(msg: InvocationResultMessage): void {
    const call = this.#pending.get(msg.invocation_id)
    if (call === undefined) return // late answer after a timeout, or not ours
    this.#pending.delete(msg.invocation_id)
    this.#deadlines.cancel(call, call.slot)
    if (msg.error !== undefined && msg.error !== null) {
      call.reject(InvocationError.fromWire(msg.error, call.functionId))
    } else {
      call.resolve(msg.result ?? undefined)
    }
  }

  #onInvoke(transport: Transport, msg: InvokeFunctionMessage): void {
    const fn = this.#functions.get(msg.function_id)
    if (fn === undefined || fn.handler === undefined) {
      const error =
        fn === undefined ? Errors.functionNotHeld(msg.function_id) : Errors.functionNotInvokable(msg.function_id)
      this.#answer(transport, msg, undefined, error.toErrorBody())
      return
    }
    // The handler starts now and the transport keeps reading: inbound invocations run concurrently.
    const data = msg.data === undefined ? null : msg.data
    const span = this.#options.otelEnabled ? startInvocationSpan(msg.function_id, data, msg.traceparent, msg.baggage) : undefined
    const handler = fn.handler
    let value: unknown
    try {
      // Without telemetry no span and no closure: the handler is called directly (an unsampled
      // parent is still handed on to the calls it makes).
      const metadata = msg.metadata as JsonValue | undefined
      if (span !== undefined) value = runInSpan(span, () => handler(data, metadata))
      else if (isUnsampled(msg.traceparent)) value = runUnsampled(msg.traceparent, () => handler(data, metadata))
      else value = handler(data, metadata)
    } catch (err) {
      this.#answer(transport, msg, undefined, toErrorBody(err), span)
      return
    }
    if (isThenable(value)) {
      value.then(
        (result) => this.#answer(transport, msg, result, undefined, span),
        (err: unknown) => this.#answer(transport, msg, undefined, toErrorBody(err), span),
      )
    } else {
      this.#answer(transport, msg, value, undefined, span)
    }
  }

  #answer(transport: Transport, msg: InvokeFunctionMessage, result: unknown, error: ErrorBody | undefined, span?: InvocationSpan): void {
    // The result is serialized before the span ends, so its payload event can reuse the text (and
    // a result that cannot be sent ends the span as the failure the caller gets).
    let json: string | undefined
    if (error === undefined && result !== undefined) {
      try {
        json = JSON.stringify(result)
      } catch (err) {
        error = { code: ErrorCode.InvocationFailed, message: `result is not JSON-serialisable: ${errorMessage(err)}` }
      }
    }
    // The answer leaves first; the span ends (payload event, OTLP text) right after.
    if (transport === this.#transport && this.#connected && msg.invocation_id !== undefined) this.#sendResult(transport, msg, json, error, span)
    if (span !== undefined) endInvocationSpan(span, result, error, json)
  }

  /** Writes the `invocationresult` of `msg`: `json` (the result's JSON) or `error`, with the span's W3C headers. */
  #sendResult(transport: Transport, msg: InvokeFunctionMessage, json: string | undefined, error: ErrorBody | undefined, span: InvocationSpan | undefined): void {
    const trace = span === undefined ? undefined : invocationHeaders(span)
    let text: string
    try {
      let head = '{"type":"invocationresult","invocation_id":' + JSON.stringify(msg.invocation_id) + ',"function_id":' + this.#idJson(msg.function_id)
      if (trace?.traceparent !== undefined) head += ',"traceparent":' + JSON.stringify(trace.traceparent)
      if (trace?.baggage !== undefined) head += ',"baggage":' + JSON.stringify(trace.baggage)
      if (error !== undefined) {
        text = head + ',"error":' + JSON.stringify(error) + '}'
      } else {
        text = json === undefined ? head + '}' : head + ',"result":' + json + '}'
      }
    } catch (err) {
      text = JSON.stringify({
        type: 'invocationresult',
        invocation_id: msg.invocation_id,
        function_id: msg.function_id,
        error: { code: ErrorCode.InvocationFailed, message: `result is not JSON-serialisable: ${errorMessage(err)}` },
      })
    }
    transport.send(text)
  }

  #onRejected(msg: RegistrationRejectedMessage): void {
    if (msg.code !== ErrorCode.FunctionNamespaceConflict) {
      // Any other code is fatal (protocol.md §5.11); svc engines never send one.
      const init: ConstructorParameters<typeof RegistrationRejectedError>[0] = {
        code: String(msg.code),
        message: typeof msg.message === 'string' ? msg.message : `registration rejected: ${String(msg.code)}`,
        namespace: typeof msg.namespace === 'string' ? msg.namespace : 'default',
        owner_worker_id: typeof msg.owner_worker_id === 'string' ? msg.owner_worker_id : '',
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

  #onTriggerResult(msg: TriggerRegistrationResultMessage): void {
    // E→W results are failure notices for bindings this client registered (protocol.md §5.7).
    if (msg.error === undefined || msg.error === null) return
    const body = isErrorBody(msg.error) ? msg.error : { code: ErrorCode.Unknown, message: JSON.stringify(msg.error) }
    const error: RegistrationError = {
      kind: 'trigger',
      id: msg.id,
      code: body.code,
      message: body.message,
      trigger_type: msg.trigger_type,
      function_id: msg.function_id,
    }
    const namespace = this.#triggers.get(msg.id)?.namespace
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

  #findTriggerType(id: string, namespace: string | undefined): LocalTriggerType | undefined {
    const exact = this.#triggerTypes.get(triggerTypeKey(namespace ?? 'default', id))
    if (exact !== undefined) return exact
    for (const type of this.#triggerTypes.values()) if (type.id === id) return type
    return undefined
  }

  #onDeliverBinding(transport: Transport, msg: RegisterTriggerMessage): void {
    if (typeof msg.id !== 'string') return
    const answer: TriggerRegistrationResultMessage = {
      type: 'triggerregistrationresult',
      id: msg.id,
      trigger_type: msg.trigger_type,
      function_id: msg.function_id,
    }
    const type = this.#findTriggerType(msg.trigger_type, msg.trigger_namespace)
    if (type === undefined) {
      answer.error = Errors.triggerTypeNotFound().toErrorBody()
      this.#sendOn(transport, JSON.stringify(answer))
      return
    }
    const config: TriggerConfig<unknown> = {
      id: msg.id,
      function_id: msg.function_id,
      config: msg.config === undefined || msg.config === null ? {} : msg.config,
      // Explicit `default` so the provider's `trigger` does not fill in its own namespace instead.
      namespace: msg.namespace ?? 'default',
    }
    if (msg.metadata !== undefined && msg.metadata !== null) config.metadata = msg.metadata as Record<string, JsonValue>
    const previous = this.#bindings.get(msg.id)
    // A known id is a replacement (protocol.md §5.5); a handler of another type must let go of it.
    if (previous !== undefined && previous.type !== type) this.#releaseBinding(previous)
    const binding: ProviderBinding = { type, config, ready: RESOLVED as unknown as Promise<boolean> }
    this.#bindings.set(msg.id, binding)
    binding.ready = (async () => {
      try {
        await type.handler.registerTrigger(config)
      } catch (err) {
        if (this.#bindings.get(msg.id) === binding) this.#bindings.delete(msg.id)
        answer.error = Errors.triggerRegistrationFailed(errorMessage(err)).toErrorBody()
        this.#sendOn(transport, JSON.stringify(answer))
        return false
      }
      this.#sendOn(transport, JSON.stringify(answer))
      return true
    })()
  }

  #onRemoveBinding(msg: UnregisterTriggerMessage): void {
    const binding = this.#bindings.get(msg.id)
    if (binding === undefined) return
    this.#bindings.delete(msg.id)
    this.#releaseBinding(binding)
  }

  /** Calls the handler's `unregisterTrigger` with the stored binding once its registration settled. */
  #releaseBinding(binding: ProviderBinding): void {
    binding.ready
      .then((accepted) => (accepted ? binding.type.handler.unregisterTrigger(binding.config) : undefined))
      .catch((err: unknown) => {
        this.#log.warn(`unregisterTrigger of trigger type '${binding.type.id}' threw: ${errorMessage(err)}`)
      })
  }

  /** Releases the bindings of `type`, or all of them. */
  #releaseBindings(type: LocalTriggerType | undefined): void {
    if (this.#bindings.size === 0) return
    for (const [id, binding] of this.#bindings) {
      if (type !== undefined && binding.type !== type) continue
      this.#bindings.delete(id)
      this.#releaseBinding(binding)
    }
  }

  // ---------------------------------------------------------------- sending

  /** Sends on `transport` if it is still the open connection. */
  #sendOn(transport: Transport, text: string): void {
    if (transport === this.#transport && this.#connected) transport.send(text)
  }

  /** Sends a frame now when connected; otherwise drops it (registrations are replayed, not queued). */
  #sendIfConnected(text: string): void {
    if (this.#connected) (this.#transport as Transport).send(text)
  }

  /** The JSON encoding of a function id, cached for the few ids a worker calls and serves (bounded). */
  #idJson(id: string): string {
    let json = this.#idJsonCache.get(id)
    if (json === undefined) {
      json = JSON.stringify(id)
      if (this.#idJsonCache.size >= 1024) this.#idJsonCache.clear()
      this.#idJsonCache.set(id, json)
    }
    return json
  }

  /** The namespace calls and bindings get by default (protocol.md §3.4). */
  #defaultNamespace(functionId: string): string | undefined {
    return this.#namespace !== undefined && !functionId.startsWith(ENGINE_PREFIX) ? this.#namespace : undefined
  }

  // ---------------------------------------------------------------- invocation (sdk.md §6)

  trigger<TIn = unknown, TOut = unknown>(request: TriggerRequest<TIn> & { action?: undefined }): Promise<TOut>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'void' } }): Promise<void>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'enqueue' } }): Promise<EnqueueResult>
  trigger(request: TriggerRequest<unknown>): Promise<unknown> {
    const functionId = request.function_id
    if (this.#terminal) return Promise.reject(this.#notConnected(functionId))
    if (typeof functionId !== 'string' || functionId === '') {
      return Promise.reject(invocationError(Errors.invalidArguments('function_id is required')))
    }
    const refused = requestProblem(functionId, request.namespace)
    if (refused !== undefined) return Promise.reject(invocationError(refused, functionId))
    const action = request.action
    const isVoid = action !== undefined && action.type === 'void'
    const id = isVoid ? undefined : randomUUID()
    let text: string
    try {
      // Built by concatenation: the hot path of every call (no intermediate object).
      text = id === undefined ? '{"type":"invokefunction","function_id":' : '{"type":"invokefunction","invocation_id":"' + id + '","function_id":'
      text += this.#idJson(functionId) + ',"data":' + (JSON.stringify(request.payload === undefined ? null : request.payload) ?? 'null')
      const metadata = request.metadata === undefined ? undefined : JSON.stringify(request.metadata)
      if (metadata !== undefined) text += ',"metadata":' + metadata
      if (action !== undefined) text += ',"action":' + JSON.stringify(action)
      const namespace = request.namespace ?? this.#defaultNamespace(functionId)
      if (namespace !== undefined) text += ',"namespace":' + JSON.stringify(namespace)
      text += traceFields() + '}'
    } catch (err) {
      return Promise.reject(
        invocationError(Errors.invalidArguments(`payload is not JSON-serialisable: ${errorMessage(err)}`), functionId),
      )
    }
    if (id === undefined) {
      if (this.#connected) (this.#transport as Transport).send(text)
      else this.#queue.push(text)
      return RESOLVED
    }
    const call = new PendingCall(id, functionId)
    this.#pending.set(id, call)
    const timeoutMs = request.timeoutMs ?? this.#timeoutMs
    call.timeoutMs = timeoutMs
    call.slot = this.#deadlines.add(call, timeoutMs)
    const transport = this.#transport
    if (this.#connected && transport !== undefined) {
      call.sent = true
      transport.send(text)
    } else {
      call.frame = text
      this.#queue.push(call)
    }
    return call.promise
  }

  #onTimeout(call: PendingCall): void {
    if (this.#pending.get(call.id) !== call) return
    this.#pending.delete(call.id)
    call.frame = undefined // a queued call that expired is skipped when the queue is flushed
    call.reject(invocationError(Errors.timeout(call.timeoutMs), call.functionId))
  }

  // ---------------------------------------------------------------- registration (sdk.md §4–§5)

  registerFunction<TIn = any, TOut = any>(
    id: string,
    handler: FunctionHandler<TIn, TOut>,
    options?: RegisterFunctionOptions,
  ): FunctionRef
  registerFunction(id: string, invocation: HttpInvocationConfig, options?: RegisterFunctionOptions): FunctionRef
  registerFunction(
    id: string,
    handlerOrInvocation: FunctionHandler | HttpInvocationConfig,
    options: RegisterFunctionOptions = {},
  ): FunctionRef {
    if (typeof id !== 'string' || id.trim() === '') throw new TypeError('function id is required')
    requireWellFormedId(id, 'function id')
    if (this.#functions.has(id)) throw new Error(`function id already registered: ${id}`)
    const message: RegisterFunctionMessage = { type: 'registerfunction', id }
    if (options.description !== undefined) message.description = options.description
    if (options.request_format !== undefined) message.request_format = options.request_format
    if (options.response_format !== undefined) message.response_format = options.response_format
    if (options.metadata !== undefined) message.metadata = options.metadata
    let handler: FunctionHandler | undefined
    if (typeof handlerOrInvocation === 'function') {
      handler = handlerOrInvocation
    } else if (
      handlerOrInvocation !== null &&
      typeof handlerOrInvocation === 'object' &&
      typeof handlerOrInvocation.url === 'string'
    ) {
      message.invocation = handlerOrInvocation
    } else {
      throw new TypeError(`function ${id}: expected a handler function or an HttpInvocationConfig with a url`)
    }
    const entry: LocalFunction = { id, handler, frame: JSON.stringify(message) }
    this.#functions.set(id, entry)
    this.#sendIfConnected(entry.frame)
    return {
      id,
      unregister: () => {
        if (this.#functions.get(id) !== entry) return
        this.#functions.delete(id)
        this.#sendIfConnected(JSON.stringify({ type: 'unregisterfunction', id }))
      },
    }
  }

  registerTrigger<TConfig = unknown>(input: RegisterTriggerInput<TConfig>): Trigger {
    if (typeof input.type !== 'string' || input.type.trim() === '') throw new TypeError('trigger type is required')
    if (typeof input.function_id !== 'string' || input.function_id.trim() === '') {
      throw new TypeError('function id is required')
    }
    requireWellFormedId(input.type, 'trigger type')
    requireWellFormedId(input.function_id, 'function_id')
    requireNamespace(input.namespace, 'namespace')
    requireNamespace(input.trigger_namespace, 'trigger_namespace')
    const id = randomUUID()
    const namespace = input.namespace ?? this.#defaultNamespace(input.function_id)
    const message: RegisterTriggerMessage = {
      type: 'registertrigger',
      id,
      trigger_type: input.type,
      function_id: input.function_id,
      config: input.config === undefined ? {} : input.config,
    }
    if (input.metadata !== undefined) message.metadata = input.metadata
    if (namespace !== undefined) message.namespace = namespace
    if (input.trigger_namespace !== undefined) message.trigger_namespace = input.trigger_namespace
    const entry: LocalTrigger = {
      id,
      triggerType: input.type,
      functionId: input.function_id,
      namespace,
      frame: JSON.stringify(message),
    }
    this.#triggers.set(id, entry)
    this.#sendIfConnected(entry.frame)
    return {
      id,
      unregister: () => {
        if (this.#triggers.get(id) !== entry) return
        this.#triggers.delete(id)
        this.#sendIfConnected(JSON.stringify({ type: 'unregistertrigger', id, trigger_type: input.type }))
      },
    }
  }

  registerTriggerType<TConfig = unknown>(
    input: RegisterTriggerTypeInput,
    handler: TriggerHandler<TConfig>,
  ): TriggerTypeRef<TConfig> {
    if (typeof input.id !== 'string' || input.id.trim() === '') throw new TypeError('trigger type id is required')
    requireWellFormedId(input.id, 'trigger type id')
    requireNamespace(input.namespace, 'namespace')
    if (
      handler === null ||
      typeof handler !== 'object' ||
      typeof handler.registerTrigger !== 'function' ||
      typeof handler.unregisterTrigger !== 'function'
    ) {
      throw new TypeError(`trigger type ${input.id}: handler needs registerTrigger and unregisterTrigger functions`)
    }
    const message: RegisterTriggerTypeMessage = {
      type: 'registertriggertype',
      id: input.id,
      description: input.description ?? '',
    }
    if (input.trigger_request_format !== undefined) message.trigger_request_format = input.trigger_request_format
    if (input.call_request_format !== undefined) message.call_request_format = input.call_request_format
    if (input.namespace !== undefined) message.namespace = input.namespace
    const key = triggerTypeKey(input.namespace ?? this.#namespace ?? 'default', input.id)
    const previous = this.#triggerTypes.get(key)
    // Registering a type again replaces its handler; bindings the old handler holds are let go.
    if (previous !== undefined) this.#releaseBindings(previous)
    const entry: LocalTriggerType = {
      id: input.id,
      namespace: input.namespace,
      key,
      handler,
      frame: JSON.stringify(message),
    }
    this.#triggerTypes.set(key, entry)
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

  unregisterTriggerType(input: { id: string; namespace?: string }): void {
    const entry = this.#triggerTypes.get(triggerTypeKey(input.namespace ?? this.#namespace ?? 'default', input.id))
    if (entry !== undefined) this.#unregisterTriggerType(entry)
  }

  #unregisterTriggerType(entry: LocalTriggerType): void {
    if (this.#triggerTypes.get(entry.key) !== entry) return
    this.#triggerTypes.delete(entry.key)
    // The engine sends no unregistertrigger for the bindings of a type we stop providing (§5.4).
    this.#releaseBindings(entry)
    const message: { type: 'unregistertriggertype'; id: string; namespace?: string } = {
      type: 'unregistertriggertype',
      id: entry.id,
    }
    if (entry.namespace !== undefined) message.namespace = entry.namespace
    this.#sendIfConnected(JSON.stringify(message))
  }

  // ---------------------------------------------------------------- accessors and shutdown

  getConnectionState(): ConnectionState {
    return this.#state
  }

  addConnectionStateListener(listener: (state: ConnectionState) => void): () => void {
    this.#stateListeners.add(listener)
    listener(this.#state)
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

  getAddress(): string {
    return this.#address
  }

  getNamespace(): string | undefined {
    return this.#namespace
  }

  getLastError(): Error | undefined {
    return this.#lastError
  }

  shutdown(): Promise<void> {
    this.#shutdown ??= this.#close()
    return this.#shutdown
  }

  async #close(): Promise<void> {
    this.#terminal = true
    clearTimeout(this.#reconnectTimer)
    this.#reconnectTimer = undefined
    this.#rejectAll((call) => invocationError(Errors.shutdown(), call.functionId))
    const transport = this.#transport
    if (transport !== undefined) {
      // Still set means its `close` has not fired yet (#onClose clears it).
      this.#connected = false
      await new Promise<void>((resolve) => {
        const fallback = setTimeout(() => transport.terminate(), this.#timings.closeTimeoutMs)
        this.#closeWaiter = () => {
          clearTimeout(fallback)
          resolve()
        }
        transport.close(1000)
      })
    }
    this.#releaseBindings(undefined)
    this.#setState('disconnected')
  }
}

/**
 * The worker client behind {@link SvcClient} (sdk.md §3–§8): a thin Node facade over the client
 * core's {@link ClientSession} (`svc-protocol/client`), which owns the session with the engine
 * (protocol.md §3) — state machine, reconnect, keepalive, call table, registration replay, trigger
 * type bindings — and speaks the protocol through the codec. This file adds what is Node's: the
 * `ws` transport (unless a test or an in-process host gives another {@link Connector}), the
 * announce of `options.ts` (`node:os`, `process`), and the OpenTelemetry hooks of
 * `tracing.ts` and worker gauges from svc-helpers.
 */
import { currentOtelConfig } from 'svc-helpers/observability'
import { currentHandler, runInHandler, startWorkerGauges } from 'svc-helpers/observability/internal'
import {
  Channels,
  ClientSession,
  ConnectionError,
  type HandlerContext,
  type HandlerScope,
  createChannel,
  DEFAULT_TIMINGS,
  type ChannelLimits,
  type ChannelSocketFactory,
  type ClientHooks,
  type ClientLog,
  type ClientTimings,
} from 'svc-protocol/client'
import type { Connector } from 'svc-protocol/transport'
import { connectWebSocket } from 'svc-protocol/transport/ws'
import { ChannelReader, ChannelWriter, nodeChannelSocket, type Channel } from './channel.ts'
import { buildAnnounce, type ResolvedOptions } from './options.ts'
import { callTelemetry, handlerTelemetry, type InvocationSpan } from './tracing.ts'
import type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  FunctionRef,
  HttpInvocationConfig,
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

export { ConnectionError, DEFAULT_TIMINGS }
export type { ClientLog, ClientTimings }

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
  /** Opens channel ends' sockets (sdk.md §9): Node `ws` by default. */
  channelSocket?: ChannelSocketFactory
  /** Byte bounds of channel ends (backpressure marks, frame size, `readAll`'s default). */
  channelLimits?: Partial<ChannelLimits>
}

/** Worker gauges once per client, after the first `workerregistered` (sdk.md §12.3). */
function gaugeStarter(options: ResolvedOptions): ((workerId: string) => void) | undefined {
  if (options.enableMetricsReporting === false) return undefined
  let started = false
  return (workerId) => {
    if (started || currentOtelConfig()?.metricsEnabled !== true) return
    started = true
    startWorkerGauges({ workerId, workerName: options.workerName })
  }
}

/**
 * The running handler's context, found again by the calls it makes (`trigger` inside a handler
 * follows the handler's cancellation, sdk.md §6): one store for every client of the process.
 */
const HANDLER_SCOPE: HandlerScope = Object.freeze({
  // svc-helpers' store, shared with its OpenTelemetry context manager: the telemetry hooks
  // (`runsHandlerScope`) enter handler and span in one step.
  run: <A extends unknown[], T>(context: HandlerContext, fn: (...args: A) => T, ...args: A): T => runInHandler(context, undefined, fn, ...args),
  current: () => currentHandler() as HandlerContext | undefined,
})

/**
 * The Node worker client. Create it with `registerWorker`; it connects at once and reconnects with
 * backoff until `shutdown()` or a terminal failure.
 */
export class WorkerClient implements SvcClient {
  readonly #session: ClientSession<InvocationSpan>
  readonly #channels: Channels<ChannelReader, ChannelWriter>

  /**
   * @param address one engine URL or several (issue 19 §3), checked by the session.
   * @throws TypeError for an address list `engineAddresses` refuses.
   */
  constructor(address: string | readonly string[], options: ResolvedOptions, internals: ClientInternals = {}) {
    const hooks: ClientHooks<InvocationSpan> = {
      // Handler spans only when this client has telemetry on; calls carry the active context either way.
      telemetry: options.otelEnabled ? handlerTelemetry : callTelemetry,
      handlerScope: HANDLER_SCOPE,
    }
    // Channel refs in payloads and results become live ends (sdk.md §9) that connect to the engine
    // this client is connected to when the ref arrives (one of its addresses), whatever the payload says.
    const log = internals.log ?? consoleLog
    const channels = (this.#channels = new Channels<ChannelReader, ChannelWriter>({
      address: () => this.#session.getAddress(),
      socket: internals.channelSocket ?? nodeChannelSocket,
      reader: ChannelReader,
      writer: ChannelWriter,
      log,
      limits: internals.channelLimits,
    }))
    hooks.materialize = channels.materialize
    const gauges = gaugeStarter(options)
    if (gauges !== undefined) hooks.onWorkerRegistered = gauges
    this.#session = new ClientSession<InvocationSpan>({
      address,
      connector: internals.connector ?? connectWebSocket,
      connectOptions: options.headers === undefined ? {} : { headers: options.headers },
      announce: buildAnnounce(options),
      namespace: options.namespace,
      invocationTimeoutMs: options.invocationTimeoutMs,
      reconnection: options.reconnection,
      timings: internals.timings,
      log,
      random: internals.random,
      hooks,
    })
  }

  trigger<TIn = unknown, TOut = unknown>(request: TriggerRequest<TIn> & { action?: undefined }): Promise<TOut>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'void' } }): Promise<void>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'enqueue' } }): Promise<EnqueueResult>
  trigger(request: TriggerRequest<unknown>): Promise<unknown> {
    return this.#session.trigger(request as TriggerRequest<unknown> & { action?: undefined })
  }

  registerFunction<TIn = any, TOut = any>(id: string, handler: FunctionHandler<TIn, TOut>, options?: RegisterFunctionOptions): FunctionRef
  registerFunction(id: string, invocation: HttpInvocationConfig, options?: RegisterFunctionOptions): FunctionRef
  registerFunction(id: string, handlerOrInvocation: FunctionHandler | HttpInvocationConfig, options?: RegisterFunctionOptions): FunctionRef {
    return this.#session.registerFunction(id, handlerOrInvocation as FunctionHandler, options)
  }

  registerTrigger<TConfig = unknown>(input: RegisterTriggerInput<TConfig>): Trigger {
    return this.#session.registerTrigger(input)
  }

  registerTriggerType<TConfig = unknown>(input: RegisterTriggerTypeInput, handler: TriggerHandler<TConfig>): TriggerTypeRef<TConfig> {
    return this.#session.registerTriggerType(input, handler)
  }

  unregisterTriggerType(input: { id: string; namespace?: string }): void {
    this.#session.unregisterTriggerType(input)
  }

  getConnectionState(): ConnectionState {
    return this.#session.getConnectionState()
  }

  addConnectionStateListener(listener: (state: ConnectionState, address: string) => void): () => void {
    return this.#session.addConnectionStateListener(listener)
  }

  addRegistrationErrorListener(listener: (error: RegistrationError) => void): () => void {
    return this.#session.addRegistrationErrorListener(listener)
  }

  getWorkerId(): string | undefined {
    return this.#session.getWorkerId()
  }

  getAddress(): string {
    return this.#session.getAddress()
  }

  getAddresses(): readonly string[] {
    return this.#session.getAddresses()
  }

  getNamespace(): string | undefined {
    return this.#session.getNamespace()
  }

  getLastError(): Error | undefined {
    return this.#session.getLastError()
  }

  /** Also ends this client's open channel ends: writers aborted, readers closed (sdk.md §8, §9). */
  shutdown(): Promise<void> {
    this.#channels.closeAll()
    return this.#session.shutdown()
  }

  /**
   * Creates a channel (`engine::channels::create`, sdk.md §9): its live Node ends and their refs.
   * Keep one end and pass the other's ref in a payload or result.
   * @param bufferSize items the engine holds before it stops reading the writer: 1–1024, default 64.
   * @throws (rejects) InvocationError `INVALID_ARGUMENTS` (bufferSize out of range),
   *   `TOO_MANY_CHANNELS`, or the call's own failures (`NOT_CONNECTED`, `TIMEOUT`…).
   * @example
   * const { reader, writerRef } = await client.createChannel()
   * await client.trigger({ function_id: 'report::render', payload: { out: writerRef }, action: TriggerAction.Void() })
   * const pdf = await reader.readAll()
   */
  createChannel(bufferSize?: number): Promise<Channel> {
    return createChannel<ChannelReader, ChannelWriter>(this.#session, bufferSize)
  }
}

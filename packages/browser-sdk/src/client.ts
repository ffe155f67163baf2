/**
 * The browser worker client behind {@link SvcClient} (sdk.md §13): a thin facade over the client
 * core's {@link ClientSession} (`svc-protocol/client`), which owns the session with the engine —
 * state machine, reconnect, keepalive, call table, registration replay, trigger type bindings.
 * This file adds what is the browser's: the WebSocket transport (`transport.ts`), keepalive by JSON
 * `ping` frames (a page cannot send ping frames), channel ends over the page's `WebSocket`, the
 * announce of `options.ts`, and no telemetry.
 */
import {
  Channels,
  ClientSession,
  createChannel,
  webSocketChannels,
  type Channel,
  type ChannelLimits,
  type ChannelSocketFactory,
  type ClientLog,
  type ClientTimings,
  type Connector,
} from 'svc-protocol/client'
import type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  FunctionRef,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  RegistrationError,
  Trigger,
  TriggerHandler,
  TriggerRequest,
  TriggerTypeRef,
} from 'svc-protocol/client'
import { buildAnnounce, type ResolvedOptions } from './options.ts'
import { connectBrowserWebSocket } from './transport.ts'
import type { SvcClient } from './types.ts'

const consoleLog: ClientLog = { warn: (message) => console.warn(`[svc-browser-sdk] ${message}`) }

/** Seams for tests and other hosts; not part of the public API. */
export interface ClientInternals {
  timings?: Partial<ClientTimings>
  log?: ClientLog
  /** Source of jitter for the reconnect backoff, in [0, 1). */
  random?: () => number
  /** Opens each connection: the global `WebSocket` by default (`browserConnector` for another). */
  connector?: Connector
  /** Opens channel ends' sockets (sdk.md §9, §13): the global `WebSocket` by default. */
  channelSocket?: ChannelSocketFactory
  /** Byte bounds of channel ends (backpressure marks, frame size, `readAll`'s default). */
  channelLimits?: Partial<ChannelLimits>
}

/**
 * The browser worker client. Create it with `registerWorker`; it connects at once and reconnects
 * with backoff until `shutdown()` or a terminal failure (sdk.md §8).
 */
export class BrowserClient implements SvcClient {
  readonly #session: ClientSession
  readonly #channels: Channels

  /**
   * @param address one engine URL or several (issue 19 §3), checked by the session.
   * @throws TypeError for an address list `engineAddresses` refuses.
   */
  constructor(address: string | readonly string[], options: ResolvedOptions, internals: ClientInternals = {}) {
    const log = internals.log ?? consoleLog
    if (options.headersIgnored) {
      log.warn('the headers option is ignored in browsers: pass credentials as query parameters in the address (wss://…/?token=…) or with cookies')
    }
    // Channel refs in payloads and results become live ends (sdk.md §9) that connect to the engine
    // this client is connected to when the ref arrives (one of its addresses), whatever the payload says.
    this.#channels = new Channels({
      address: () => this.#session.getAddress(),
      socket: internals.channelSocket ?? webSocketChannels(globalThis.WebSocket),
      log,
      limits: internals.channelLimits,
    })
    this.#session = new ClientSession({
      address,
      connector: internals.connector ?? connectBrowserWebSocket,
      announce: buildAnnounce(options),
      namespace: options.namespace,
      invocationTimeoutMs: options.invocationTimeoutMs,
      reconnection: options.reconnection,
      timings: internals.timings,
      // A page's WebSocket cannot send pings or see pongs (protocol.md §3.3).
      pingFrames: true,
      log,
      random: internals.random,
      hooks: { materialize: this.#channels.materialize },
    })
  }

  trigger<TIn = unknown, TOut = unknown>(request: TriggerRequest<TIn> & { action?: undefined }): Promise<TOut>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'void' } }): Promise<void>
  trigger<TIn = unknown>(request: TriggerRequest<TIn> & { action: { type: 'enqueue' } }): Promise<EnqueueResult>
  trigger(request: TriggerRequest<unknown>): Promise<unknown> {
    return this.#session.trigger(request as TriggerRequest<unknown> & { action?: undefined })
  }

  registerFunction<TIn = any, TOut = any>(id: string, handler: FunctionHandler<TIn, TOut>, options?: RegisterFunctionOptions): FunctionRef {
    // HTTP-invoked functions (an HttpInvocationConfig) are the Node SDK's; a page serves its own.
    if (typeof handler !== 'function') throw new TypeError(`registerFunction('${id}') takes a handler function in a browser`)
    return this.#session.registerFunction(id, handler, options)
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

  /**
   * Creates a channel (`engine::channels::create`, sdk.md §9, §13): its live ends and their refs.
   * @param bufferSize items the engine holds before it stops reading the writer: 1–1024, default 64.
   * @throws (rejects) InvocationError `INVALID_ARGUMENTS` for a bad `bufferSize`,
   *   `TOO_MANY_CHANNELS`, or the call's own failures (`NOT_CONNECTED`, `TIMEOUT`…).
   * @example
   * const { reader, writerRef } = await svc.createChannel()
   * void svc.trigger({ function_id: 'logs::tail', payload: { out: writerRef } })
   * reader.onMessage((line) => console.log(line))
   */
  createChannel(bufferSize?: number): Promise<Channel> {
    return createChannel(this.#session, bufferSize)
  }

  /** Also ends this client's open channel ends: writers aborted, readers closed (sdk.md §8, §9). */
  shutdown(): Promise<void> {
    this.#channels.closeAll()
    return this.#session.shutdown()
  }
}

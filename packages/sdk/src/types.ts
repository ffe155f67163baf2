/**
 * Public types of `svc-sdk` (sdk.md §1–§8). The client API is the client core's
 * (`svc-protocol/client`, shared with `svc-browser-sdk`); the Node options and the typed configs of
 * the built-in trigger types are here. The implementation is in `client.ts`.
 */
import type { OtelConfig } from 'svc-helpers/observability'
import type { ReconnectionConfig, SvcClient as CoreClient } from 'svc-protocol/client'
import type { Channel } from './channel.ts'

export type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  HandlerContext,
  FunctionRef,
  HttpAuthConfig,
  HttpInvocationConfig,
  JsonValue,
  ReconnectionConfig,
  RegisterFunctionFormat,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  RegistrationError,
  Trigger,
  TriggerActionValue,
  TriggerConfig,
  TriggerHandler,
  TriggerRequest,
  TriggerTypeRef,
} from 'svc-protocol/client'
export type { HttpRequest, HttpResponse, HttpTriggerInfo } from 'svc-protocol/payloads/http'
export type { Channel, StreamChannelRef } from './channel.ts'

/** A connection to the engine (sdk.md §3); channels come with Node ends (`stream`, `readAll(): Buffer`). */
export interface SvcClient extends CoreClient {
  /**
   * Creates a channel (`engine::channels::create`, sdk.md §9): its live writer and reader and their
   * refs. `bufferSize`: items the engine holds, 1–1024, default 64.
   * @throws (rejects) InvocationError `INVALID_ARGUMENTS`, `TOO_MANY_CHANNELS`, or the call's own failures.
   */
  createChannel(bufferSize?: number): Promise<Channel>
}

/** Worker metadata sent in the announce's `telemetry` field (sdk.md §2). All optional. */
export interface TelemetryOptions {
  /** Default: `typescript` when the entry script ends in `.ts`/`.mts`/`.cts`, else `javascript`. */
  language?: string
  /** Default: `name` of the nearest `package.json` above the working directory, else its base name. */
  project_name?: string
  /** Default `svc-node`. */
  framework?: string
  /** Accepted for compatibility; the engine discards it. */
  amplitude_api_key?: string
}

/**
 * Options of {@link registerWorker} (sdk.md §2).
 */
export interface InitOptions {
  /** Name reported in the announce; a label, need not be unique. Default env `SVC_WORKER_NAME`, else `<hostname>:<pid>`. */
  workerName?: string
  /** One-line summary shown by `engine::workers::list`. */
  workerDescription?: string
  /** Namespace of the worker. Default env `SVC_NAMESPACE` (empty counts as unset), else none (`default`). Blank throws. */
  namespace?: string
  /** Default timeout of synchronous and enqueue `trigger` calls, ms. Default 30000. */
  invocationTimeoutMs?: number
  /** Merged over the defaults of {@link ReconnectionConfig}. */
  reconnectionConfig?: Partial<ReconnectionConfig>
  /** Extra HTTP headers on the WebSocket upgrade (input of the listener's auth function, protocol.md §13.2). */
  headers?: Record<string, string>
  /** Worker metadata for the announce. */
  telemetry?: TelemetryOptions
  /** Worker resource gauges (sdk.md §12.3). Default true. */
  enableMetricsReporting?: boolean
  /** Telemetry (sdk.md §12.1), on by default; `engineWsUrl` is always the worker address. */
  otel?: Omit<OtelConfig, 'engineWsUrl'>
}

/**
 * Trigger configs and payloads of the built-in pub/sub and cron workers (builtins.md §8, §9):
 * svc-protocol's own types, re-exported so a worker imports them from svc-sdk.
 *
 * @example
 * client.registerTrigger<CronTriggerConfig>({ type: 'cron', function_id: 'reports::daily', config: { expression: '0 0 2 * * *' } })
 */
export type { CronTriggerConfig, CronTriggerPayload, SubscribeTriggerConfig } from 'svc-protocol'

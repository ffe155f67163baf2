/**
 * Public types of `svc-browser-sdk` (sdk.md §13). The client API is the client core's
 * (`svc-protocol/client`, shared with `svc-sdk`); what differs in a browser is here: the options of
 * `registerWorker`, and `registerFunction` taking handlers only.
 */
import type { FunctionHandler, FunctionRef, RegisterFunctionOptions, ReconnectionConfig, SvcClient as CoreClient } from 'svc-protocol/client'

export type {
  ConnectionState,
  EnqueueResult,
  FunctionHandler,
  HandlerContext,
  FunctionRef,
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

/** Options of `registerWorker` in a browser (sdk.md §13). All optional; no environment fallbacks. */
export interface InitOptions {
  /** Name reported in the announce; a label, need not be unique. Default `browser:<8 random hex digits>`. */
  workerName?: string
  /** One-line summary shown by `engine::workers::list`. */
  workerDescription?: string
  /** Namespace of the worker. Default none (the engine uses `default`). Blank throws. */
  namespace?: string
  /** Default timeout of synchronous and enqueue `trigger` calls, ms. Default 30000. */
  invocationTimeoutMs?: number
  /** Merged over the defaults of {@link ReconnectionConfig} (sdk.md §2). */
  reconnectionConfig?: Partial<ReconnectionConfig>
  /**
   * **Ignored**: a browser cannot set headers on a WebSocket upgrade. Pass credentials as query
   * parameters in the address (`wss://host/?token=…`) or with cookies (protocol.md §13.2). Giving
   * it logs a warning once.
   */
  headers?: Record<string, string>
}

/**
 * A connection to the engine from a browser (sdk.md §3, §13): the client of `svc-sdk`, except that
 * `registerFunction` takes a handler only (a page cannot be the target of an HTTP-invoked function).
 */
export interface SvcClient extends Omit<CoreClient, 'registerFunction'> {
  /**
   * Registers a function served by `handler` in this page (sdk.md §4).
   * @throws TypeError when `handler` is not a function; Error `function id is required` for an
   *   empty id, `function id already registered: <id>` when this client already holds it;
   *   InvocationError `INVALID_ID` for an id the engine would refuse (protocol.md §3.5).
   */
  registerFunction<TIn = any, TOut = any>(id: string, handler: FunctionHandler<TIn, TOut>, options?: RegisterFunctionOptions): FunctionRef
}

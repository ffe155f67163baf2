/**
 * Interfaces of the engine core that built-in workers and the CLI program against.
 *
 * Built-in workers run inside the engine process but register functions and trigger types through
 * {@link LocalWorker}, the in-process equivalent of a worker connection (style.md: "each registers
 * its functions and trigger types through the same interface an external worker uses").
 */
import type { FormatSchema, TriggerActionValue } from 'svc-protocol'
import type { AccessPolicy } from './access/policy.ts'
import type { LocalChannels } from './channels/index.ts'
import type { Peer } from './peer.ts'
import type { TelemetryHub } from './telemetry.ts'
import type { Logger } from './config.ts'

export * from './config.ts'

/** What an in-process handler learns about the invocation it serves. */
export interface InvocationContext {
  /** Function id as invoked (after alias resolution). */
  function_id: string
  /** Per-invocation metadata (protocol.md §5.8), undefined when the caller sent none. */
  metadata?: unknown
  traceparent?: string
  baggage?: string
  /** Worker id of the calling connection or built-in; undefined for engine-originated calls. */
  caller_worker_id?: string
  /** The calling worker; undefined for engine-originated calls. */
  caller?: Peer
  /** The caller's access rules: listings show only what the caller may invoke (protocol.md §11). */
  access: AccessPolicy
  /**
   * Aborts when the invocation is cancelled (`cancelinvocation`, `engine::invocations::cancel`)
   * or its engine timeout passes; `reason` is the `SvcError` (`cancelled` or `TIMEOUT`). Long
   * handlers stop their work on it; pass it on to the calls they make
   * (`worker.invoke({ …, signal: context.signal })`). Made on first use.
   */
  readonly signal: AbortSignal
}

/**
 * An in-process function handler. Return the result (undefined means "no result"); throw an
 * `SvcError` (or any error with a string `code`) to fail with that code.
 */
export type LocalHandler = (data: unknown, context: InvocationContext) => unknown

export interface LocalFunctionOptions {
  description?: string
  metadata?: Record<string, unknown>
  request_format?: FormatSchema
  response_format?: FormatSchema
  /**
   * The handler records the span of its work itself (builtins.md §12.7: the queue provider's
   * `enqueue <queue>`), so the engine records no `execute <function_id>` span around it.
   */
  ownSpan?: boolean
}

/** A binding as a provider sees it (protocol.md §8.3: `{id, function_id, config, metadata, namespace}`). */
export interface BindingInfo {
  id: string
  trigger_type: string
  function_id: string
  config: unknown
  metadata?: unknown
  /** Namespace to invoke `function_id` in (the binding's target namespace, `default` when omitted). */
  namespace: string
}

/**
 * The provider side of an in-process trigger type. `registerTrigger` validates and activates a
 * binding; throwing an error with a `code` (`INVALID_TRIGGER_CONFIG`, `ROUTE_CONFLICT`, …) refuses
 * it and the engine reports that code to the registering worker (protocol.md §8.3). A provider may
 * later accept a refused binding with {@link LocalWorker.reportTriggerResult}.
 */
export interface LocalTriggerProvider {
  registerTrigger(binding: BindingInfo): void | Promise<void>
  unregisterTrigger(binding: BindingInfo): void | Promise<void>
}

export interface LocalTriggerTypeOptions {
  id: string
  description: string
  trigger_request_format?: FormatSchema
  call_request_format?: FormatSchema
}

/** An invocation made from inside the engine (protocol.md §6). */
export interface LocalInvokeRequest {
  function_id: string
  /** The payload: a value, or a `RawJson` holding its JSON text (encoded once for the frame and the handler span). */
  data: unknown
  /** Target namespace; omitted means `default`, with the fallback of §6.1. */
  namespace?: string
  metadata?: unknown
  action?: TriggerActionValue
  /** Engine-originated calls time out in the engine (§6.5); default `internal_invocation_timeout_ms`. */
  timeoutMs?: number
  traceparent?: string
  baggage?: string
  /**
   * Cancels the call when it aborts (svc-http: the HTTP client went away): the callee stops and
   * the call rejects with `cancelled` (`SvcError`), the signal's reason as its message when it is
   * a string.
   */
  signal?: AbortSignal
}

/** A trigger a built-in registers for itself; its function is resolved in `default`. */
export interface LocalTriggerRegistration {
  id: string
  trigger_type: string
  function_id: string
  config: unknown
  metadata?: unknown
}

/**
 * The handle a built-in worker uses to take part in the protocol. Everything it registers is owned
 * by this worker and removed when it stops.
 */
export interface LocalWorker {
  readonly name: string
  registerFunction(id: string, handler: LocalHandler, options?: LocalFunctionOptions): void
  unregisterFunction(id: string): void
  registerTriggerType(options: LocalTriggerTypeOptions, provider: LocalTriggerProvider): void
  unregisterTriggerType(id: string): void
  /**
   * Whether `id` resolves to a registered function in `namespace` (default `default`, with the
   * fallback of protocol.md §6.1): a cheap check before an optional call (custom streams, §6.2).
   */
  hasFunction(id: string, namespace?: string): boolean
  /**
   * Whether an invocation of `id` made now would be served by another engine of the fleet
   * (issue 19): it resolves, and no live replica is this engine's own, so replica selection can
   * only pick one on another engine (protocol.md §6.1, local replicas first). False outside a
   * fleet, for a function this engine serves itself, and for one that does not resolve. svc-http
   * gives such a handler no channels: their ends could only be opened on this engine.
   */
  servedElsewhere(id: string, namespace?: string): boolean
  /**
   * Invokes a function by id. Resolves with its result (undefined when none); rejects with an
   * `SvcError` carrying the wire code (`function_not_found`, `TIMEOUT`, `invocation_stopped`,
   * the handler's own code, …). A `void` action resolves at once with undefined.
   */
  invoke(request: LocalInvokeRequest): Promise<unknown>
  /**
   * Registers a trigger owned by this worker (a built-in watching its settings entry with a
   * `configuration` trigger, builtins.md §2.7). A provider's refusal is logged. Removed by
   * {@link unregisterTrigger} or when the worker stops.
   */
  registerTrigger(binding: LocalTriggerRegistration): void
  unregisterTrigger(id: string): void
  /** Reports a late provider answer for a binding, e.g. a refused route promoted later (§8.3). */
  reportTriggerResult(triggerId: string, error?: { code: string; message: string }): void
  /** Addresses this worker listens on, shown as `listen_urls` by `engine::workers::info`. */
  setListenUrls(urls: string[]): void
  /**
   * The last settings apply that failed (`<key>: <problem>`), shown as `last_config_error` by
   * `engine::workers::info` (builtins.md §2.7); undefined once an apply succeeds.
   */
  setLastConfigError(message: string | undefined): void
  /**
   * Channels (protocol.md §9) with one end held in-process and the other claimed by a worker over
   * its socket, e.g. svc-http's streamed request and response bodies (builtins.md §3.4, §3.7).
   * Channels created here are removed when this worker stops.
   */
  readonly channels: LocalChannels
}

/** What a built-in worker receives when the engine starts it. */
export interface BuiltinContext {
  worker: LocalWorker
  /** Absolute data directory (`data_dir`, default `<project>/.svc/data`), created by the engine. */
  dataDir: string
  /** `internal_invocation_timeout_ms` (protocol.md §12.2), for trigger deliveries and conditions. */
  internalInvocationTimeoutMs: number
  log: Logger
  /**
   * The engine's telemetry seam (spans of built-ins, `/otel` frames, the pipeline's interceptors);
   * the observability worker attaches to it. Absent in unit tests that build a context by hand.
   */
  telemetry?: TelemetryHub
  /**
   * Set by the kit's `configured()`: `applyLatest()` reads the worker's settings entry and applies
   * it, serialised with the applications of configuration changes, so a value read before a write
   * is never applied after the write's own (a worker that writes its own entry, like `queue::define`,
   * uses it to apply at once). Rejects with the worker's refusal.
   */
  settings?: { applyLatest(): Promise<void> }
}

/**
 * A worker built into the engine (builtins.md §1). `applySettings` is the one place a worker's
 * settings take effect: at start with the config.yaml seed and, once the configuration worker
 * exists, on every change. It must validate and either apply everything or throw and keep the
 * previous settings (builtins.md §2.7).
 */
export interface BuiltinWorker {
  /** Worker name as listed by `engine::workers::list`, e.g. `svc-http`. */
  readonly name: string
  start(context: BuiltinContext, settings: unknown): Promise<void>
  applySettings(settings: unknown): Promise<void>
  stop(): Promise<void>
}

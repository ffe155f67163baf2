/**
 * `svc-sdk`: connect a Node process to the svc engine as a worker, register functions, trigger
 * types and triggers, and invoke functions by id (sdk.md §1–§8).
 *
 * @example
 * import { registerWorker, TriggerAction } from 'svc-sdk'
 *
 * const client = registerWorker()           // SVC_URL, else ws://127.0.0.1:49134
 * client.registerFunction('math::add', ({ a, b }: { a: number; b: number }) => ({ c: a + b }))
 * const { c } = await client.trigger<{ a: number; b: number }, { c: number }>({
 *   function_id: 'math::add', payload: { a: 2, b: 3 },
 * })
 * await client.trigger({ function_id: 'audit::record', payload: { c }, action: TriggerAction.Void() })
 * await client.shutdown()
 */
import { initOtel, isOtelInitialized, type OtelConfig, shutdownOtel, stopWorkerGauges } from 'svc-helpers/observability'
import { WorkerClient } from './client.ts'
import { captureConsole } from './console.ts'
import { resolveAddress, resolveOptions } from './options.ts'
import type { InitOptions, SvcClient } from './types.ts'

export { ChannelError, InvocationError, NonRetryableError, RegistrationRejectedError, RetryAfterError } from './errors.ts'
export { ChannelReader, ChannelWriter } from './channel.ts'
export { DEFAULT_ENGINE_URL } from './options.ts'
export { flushOtel, getLogger, initOtel, Logger, shutdownOtel } from 'svc-helpers/observability'
export type { OtelConfig } from 'svc-helpers/observability'
export { TriggerAction } from './trigger-action.ts'
export { defineQueue } from './queue.ts'
export type { DefineQueueResult, FifoQueueSettings, QueueSettings, StandardQueueSettings } from './queue.ts'
export type {
  Channel,
  ConnectionState,
  CronTriggerConfig,
  CronTriggerPayload,
  EnqueueResult,
  FunctionHandler,
  HandlerContext,
  FunctionRef,
  HttpAuthConfig,
  HttpInvocationConfig,
  HttpRequest,
  HttpResponse,
  InitOptions,
  JsonValue,
  ReconnectionConfig,
  RegisterFunctionFormat,
  RegisterFunctionOptions,
  RegisterTriggerInput,
  RegisterTriggerTypeInput,
  RegistrationError,
  StreamChannelRef,
  SubscribeTriggerConfig,
  SvcClient,
  TelemetryOptions,
  Trigger,
  TriggerActionValue,
  TriggerConfig,
  TriggerHandler,
  TriggerRequest,
  TriggerTypeRef,
} from './types.ts'

/**
 * Creates a worker client and starts connecting (sdk.md §2). Returns at once; connection failures
 * never throw, they are retried with backoff (watch them with `addConnectionStateListener`).
 *
 * Address: `address`, else env `SVC_URL`, else {@link DEFAULT_ENGINE_URL}. Several engines of a
 * fleet (issue 19 §3): a list, or `SVC_URL` with commas (`ws://a:49134,ws://b:49134`); the first
 * attempt goes to the first, a failed attempt or a lost connection moves on to the next at once
 * (registrations replayed there), and the backoff waits only after a full round. `getAddress()`
 * and the connection state listener's second argument tell which engine the client is on.
 * Several clients may live in one process, each with its own connection.
 *
 * Telemetry is on by default (sdk.md §12.1): the first client starts it (`initOtel` with the
 * `otel` options, a second socket to `<address>/otel`, handler spans, worker gauges) unless
 * `otel.enabled` is false or env `OTEL_ENABLED` is false/0/no/off; the last of the clients that
 * share it stops it in `shutdown()`. Telemetry the application set up itself is left to it.
 *
 * @throws TypeError when an address is empty or not a `ws:`/`wss:` URL (named by position, never
 *   with its credentials), for a blank `namespace`, or for
 *   header names or values HTTP cannot carry; InvocationError `INVALID_NAMESPACE` for a namespace
 *   that is not well-formed text (protocol.md §3.5), which the engine would refuse.
 *
 * @example
 * const client = registerWorker('ws://127.0.0.1:49134', { workerName: 'billing', namespace: 'prod' })
 * client.addConnectionStateListener((state) => console.log('engine:', state))
 * @example
 * // a fleet: rotates to the next engine when one goes away
 * const worker = registerWorker(['ws://10.0.0.1:49134', 'ws://10.0.0.2:49134'])
 * worker.addConnectionStateListener((state, address) => console.log(state, new URL(address).host))
 */
export function registerWorker(address?: string | readonly string[], options?: InitOptions): SvcClient {
  const resolvedAddress = resolveAddress(address)
  const resolved = resolveOptions(options)
  const client = new WorkerClient(resolvedAddress, resolved)
  // On by default (sdk.md §12.1): `otel.enabled`, else env OTEL_ENABLED (false/0/no/off disables).
  if (resolved.otelEnabled) {
    // The telemetry socket (svc-helpers) takes one address: the first engine's.
    const otel: OtelConfig = { ...options?.otel, engineWsUrl: resolvedAddress[0]! }
    if (resolved.headers !== undefined) otel.headers = resolved.headers
    if (initOtel(otel)) otelOwners = 0
    // console.* in a handler carries the invocation's trace to the log store (issue 21).
    if (isOtelInitialized()) captureConsole(resolved.workerName)
    if (isOtelInitialized() && otelOwners !== undefined) {
      otelOwners++
      const shutdown = client.shutdown.bind(client)
      client.shutdown = async () => {
        await shutdown()
        if (otelOwners !== undefined && --otelOwners === 0) {
          otelOwners = undefined
          stopWorkerGauges()
          await shutdownOtel()
        }
      }
    }
  }
  return client
}

/**
 * Clients sharing the telemetry that `registerWorker` initialised; the last one to shut down
 * shuts telemetry down. Undefined when telemetry was set up by the application (left to it).
 */
let otelOwners: number | undefined

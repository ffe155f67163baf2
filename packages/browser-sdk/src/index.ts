/**
 * `svc-browser-sdk` (sdk.md §13): a web page as an svc worker. The same client API and wire
 * behaviour as `svc-sdk` — register functions, trigger types and triggers, invoke functions by id,
 * watch the connection — over the browser's `WebSocket`, as one self-contained ES module (no
 * bundler needed, no Node built-ins, no OpenTelemetry).
 *
 * A page should connect to a listener with `rbac` (protocol.md §13), never the trusted one, and
 * authenticate with query parameters in the address or with cookies: a browser cannot set
 * headers on a WebSocket upgrade.
 *
 * @example
 * <script type="module">
 *   import { registerWorker, TriggerAction } from '/svc-browser-sdk.js'
 *
 *   const svc = registerWorker(`ws://${location.hostname}:49135/?token=${token}`, { workerName: 'checkout-page' })
 *   svc.registerFunction('browser::notify', ({ text }) => { show(text); return { shown: true } })
 *   const { total } = await svc.trigger({ function_id: 'cart::total', payload: { items } })
 *   svc.addConnectionStateListener((state) => badge.textContent = state)
 * </script>
 */
import { EngineTriggers as AllEngineTriggers } from 'svc-protocol/ids'
import { BrowserClient } from './client.ts'
import { resolveAddress, resolveOptions } from './options.ts'
import type { InitOptions, SvcClient } from './types.ts'

export {
  ErrorCode,
  InvocationError,
  isErrorBody,
  NonRetryableError,
  RegistrationRejectedError,
  RetryAfterError,
  TriggerAction,
} from 'svc-protocol/client'
export type { ErrorBody, ErrorCodeValue, InvocationErrorInit } from 'svc-protocol/client'
export { EngineFunctions } from 'svc-protocol/ids'
export type { EngineFunctionId } from 'svc-protocol/ids'
export type { FunctionSummary, WorkerSummary } from 'svc-protocol/payloads/engine'
export { createStream } from 'svc-protocol/client'
export type { IStream } from 'svc-protocol/client'
// Channels (sdk.md §9, §13): the client core's ends, as svc-sdk has them minus the Node streams.
export { ChannelDirection, ChannelError, ChannelItem, ChannelReader, ChannelWriter, extractChannelRefs, isChannelRef } from 'svc-protocol/client'
export type { Channel, ReadAllOptions, StreamChannelRef } from 'svc-protocol/client'
export { createChannel } from './helpers.ts'
export type * from './types.ts'
export type * from './rbac.ts'

/**
 * Trigger types the engine serves that a page can bind (sdk.md §13): `engine::functions-available`
 * and `engine::workers-available`. (`log` and `trace`, the observability worker's, are for
 * workers that receive telemetry; svc-sdk has them.)
 *
 * @example
 * svc.registerTrigger({ type: EngineTriggers.FUNCTIONS_AVAILABLE, function_id: 'browser::refresh', config: {} })
 */
export const EngineTriggers = {
  FUNCTIONS_AVAILABLE: AllEngineTriggers.FUNCTIONS_AVAILABLE,
  WORKERS_AVAILABLE: AllEngineTriggers.WORKERS_AVAILABLE,
} as const

/**
 * Creates a worker client in this page and starts connecting (sdk.md §2, §13). Returns at once;
 * connection failures never throw, they are retried with backoff (watch them with
 * `addConnectionStateListener`; `getLastError()` holds an `AUTH_ERROR` when the listener's auth
 * function refused the connection).
 *
 * `address` is required (no environment in a browser): a `ws:`/`wss:` URL of a listener, normally
 * one with `rbac`, carrying the credentials its auth function reads as query parameters
 * (`wss://svc.example.com/?token=…`); cookies for its host are sent too. `options.headers` is
 * ignored, with a warning: browsers cannot set upgrade headers. Several engines of a fleet
 * (issue 19 §3): a list of addresses, tried in order; a failed attempt or a lost connection moves
 * on to the next at once, and the backoff waits only after a full round.
 *
 * @throws TypeError when `address` is missing, an empty list, or an entry is empty or not a
 *   `ws:`/`wss:` URL (never shown with its credentials), for a blank `namespace`
 *   or `workerName`, or out-of-range numbers; InvocationError `INVALID_NAMESPACE` for a namespace
 *   that is not well-formed text (protocol.md §3.5).
 *
 * @example
 * const svc = registerWorker('wss://svc.example.com/browser?token=' + encodeURIComponent(token), {
 *   workerName: 'dashboard', reconnectionConfig: { maxDelayMs: 5000 },
 * })
 * @example
 * const fleet = registerWorker(['wss://a.svc.example.com/?token=t', 'wss://b.svc.example.com/?token=t'])
 * fleet.addConnectionStateListener((state, address) => console.log(state, new URL(address).host))
 */
export function registerWorker(address: string | readonly string[], options?: InitOptions): SvcClient {
  return new BrowserClient(resolveAddress(address), resolveOptions(options))
}

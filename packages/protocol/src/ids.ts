/**
 * Ids of the functions and trigger types the engine and its always-on workers serve
 * (protocol.md §11). Key names follow iii-sdk where it has them (`LIST_FUNCTIONS`,
 * `LIST_WORKERS`, `REGISTER_WORKER`, `FUNCTIONS_AVAILABLE`, `LOG`) so ported code keeps working.
 *
 * @example
 * import { EngineFunctions } from 'svc-protocol/ids'
 * const { functions } = await client.trigger({ function_id: EngineFunctions.LIST_FUNCTIONS, payload: {} })
 */
export const EngineFunctions = {
  // §11.1 introspection
  LIST_FUNCTIONS: 'engine::functions::list',
  FUNCTION_INFO: 'engine::functions::info',
  LIST_TRIGGERS: 'engine::triggers::list',
  TRIGGER_INFO: 'engine::triggers::info',
  LIST_REGISTERED_TRIGGERS: 'engine::registered-triggers::list',
  REGISTERED_TRIGGER_INFO: 'engine::registered-triggers::info',
  LIST_WORKERS: 'engine::workers::list',
  WORKER_INFO: 'engine::workers::info',
  /** svc addition (issue 21): send new calls away from a connection a reload replaces. */
  DRAIN_WORKER: 'engine::workers::drain',
  // invocations in flight and their cancellation (svc addition, docs/reference/protocol.md)
  LIST_INVOCATIONS: 'engine::invocations::list',
  CANCEL_INVOCATION: 'engine::invocations::cancel',
  // §11.2 registration helpers and the announce
  REGISTER_WORKER: 'engine::workers::register',
  REGISTER_TRIGGER: 'engine::register_trigger',
  UNREGISTER_TRIGGER: 'engine::unregister_trigger',
  // §11.3 channels
  CREATE_CHANNEL: 'engine::channels::create',
  // §11.4 logging and observability
  LOG_INFO: 'engine::log::info',
  LOG_WARN: 'engine::log::warn',
  LOG_ERROR: 'engine::log::error',
  LOG_DEBUG: 'engine::log::debug',
  LOG_TRACE: 'engine::log::trace',
  LIST_LOGS: 'engine::logs::list',
  CLEAR_LOGS: 'engine::logs::clear',
  LIST_TRACES: 'engine::traces::list',
  TRACE_TREE: 'engine::traces::tree',
  CLEAR_TRACES: 'engine::traces::clear',
  GROUP_TRACES: 'engine::traces::group_by',
  LIST_METRICS: 'engine::metrics::list',
  BAGGAGE_GET: 'engine::baggage::get',
  BAGGAGE_SET: 'engine::baggage::set',
  BAGGAGE_GET_ALL: 'engine::baggage::get_all',
  HEALTH_CHECK: 'engine::health::check',
  /** A function's recent runs from its `execute` spans (issue 21: the console's run history). */
  LIST_RUNS: 'engine::runs::list',
  // §11.5 queue worker
  QUEUE_ENQUEUE: 'engine::queue::enqueue',
  QUEUE_LIST_TOPICS: 'engine::queue::list_topics',
  QUEUE_TOPIC_STATS: 'engine::queue::topic_stats',
  QUEUE_DLQ_TOPICS: 'engine::queue::dlq_topics',
  QUEUE_DLQ_MESSAGES: 'engine::queue::dlq_messages',
  DURABLE_PUBLISH: 'svc::durable::publish',
  QUEUE_REDRIVE: 'svc::queue::redrive',
  QUEUE_REDRIVE_MESSAGE: 'svc::queue::redrive_message',
  QUEUE_DISCARD_MESSAGE: 'svc::queue::discard_message',
} as const
export type EngineFunctionId = (typeof EngineFunctions)[keyof typeof EngineFunctions]

/**
 * Trigger types served by the engine (§11.6) and the observability worker (builtins.md §12.6).
 *
 * @example
 * client.registerTrigger({ type: EngineTriggers.FUNCTIONS_AVAILABLE, function_id: 'ui::refresh', config: {} })
 */
export const EngineTriggers = {
  FUNCTIONS_AVAILABLE: 'engine::functions-available',
  WORKERS_AVAILABLE: 'engine::workers-available',
  LOG: 'log',
  TRACE: 'trace',
} as const
export type EngineTriggerType = (typeof EngineTriggers)[keyof typeof EngineTriggers]

/** Prefix of the engine's own ids; they live only in namespace `default` (protocol.md §3.4). */
export const ENGINE_PREFIX = 'engine::'

/**
 * Ids served by the engine and the observability worker it always runs (protocol.md §11.1–§11.4);
 * workers cannot register them (§6.9).
 */
export const RESERVED_FUNCTION_IDS: ReadonlySet<string> = new Set([
  EngineFunctions.LIST_FUNCTIONS,
  EngineFunctions.FUNCTION_INFO,
  EngineFunctions.LIST_TRIGGERS,
  EngineFunctions.TRIGGER_INFO,
  EngineFunctions.LIST_REGISTERED_TRIGGERS,
  EngineFunctions.REGISTERED_TRIGGER_INFO,
  EngineFunctions.LIST_WORKERS,
  EngineFunctions.WORKER_INFO,
  EngineFunctions.LIST_INVOCATIONS,
  EngineFunctions.CANCEL_INVOCATION,
  EngineFunctions.REGISTER_WORKER,
  EngineFunctions.REGISTER_TRIGGER,
  EngineFunctions.UNREGISTER_TRIGGER,
  EngineFunctions.CREATE_CHANNEL,
  EngineFunctions.LOG_INFO,
  EngineFunctions.LOG_WARN,
  EngineFunctions.LOG_ERROR,
  EngineFunctions.LOG_DEBUG,
  EngineFunctions.LOG_TRACE,
  EngineFunctions.LIST_LOGS,
  EngineFunctions.CLEAR_LOGS,
  EngineFunctions.LIST_TRACES,
  EngineFunctions.TRACE_TREE,
  EngineFunctions.CLEAR_TRACES,
  EngineFunctions.GROUP_TRACES,
  EngineFunctions.LIST_METRICS,
  EngineFunctions.BAGGAGE_GET,
  EngineFunctions.BAGGAGE_SET,
  EngineFunctions.BAGGAGE_GET_ALL,
  EngineFunctions.HEALTH_CHECK,
  EngineFunctions.LIST_RUNS,
])

/** Trigger types the engine owns; workers cannot register them (protocol.md §5.3). */
export const RESERVED_TRIGGER_TYPES: ReadonlySet<string> = new Set([EngineTriggers.FUNCTIONS_AVAILABLE, EngineTriggers.WORKERS_AVAILABLE])

/**
 * The infrastructure set of protocol.md §13.3 step 4: functions every RBAC session may invoke,
 * because SDK connection set-up and logging depend on them.
 */
export const INFRASTRUCTURE_FUNCTIONS: ReadonlySet<string> = new Set([
  EngineFunctions.CREATE_CHANNEL,
  EngineFunctions.REGISTER_WORKER,
  EngineFunctions.LOG_INFO,
  EngineFunctions.LOG_WARN,
  EngineFunctions.LOG_ERROR,
  EngineFunctions.LOG_DEBUG,
  EngineFunctions.LOG_TRACE,
  EngineFunctions.BAGGAGE_GET,
  EngineFunctions.BAGGAGE_SET,
  EngineFunctions.BAGGAGE_GET_ALL,
])

/**
 * True for ids hidden from default listings (protocol.md §11.1): `engine::` ids other than
 * `engine::queue::*`.
 */
export function isInternalId(id: string): boolean {
  return id.startsWith(ENGINE_PREFIX) && !id.startsWith('engine::queue::')
}

/**
 * The `svc::` spelling of an `iii::` id (protocol.md §6.9), or undefined for other ids. The engine
 * uses it only when no function is registered under the exact `iii::` id.
 */
export function svcAlias(id: string): string | undefined {
  return id.startsWith('iii::') ? `svc::${id.slice(5)}` : undefined
}

/** Longest id (function id, trigger type id, trigger id) or namespace accepted, in UTF-16 code units. */
export const MAX_ID_LENGTH = 1024

/** With the `u` flag a surrogate pair reads as one code point, so `\p{Cs}` matches lone surrogates only. */
const LONE_SURROGATE = /\p{Cs}/u
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/

/**
 * Why `id` cannot name a function, trigger type, trigger or namespace, or undefined when it can:
 * it must be well-formed Unicode (no lone UTF-16 surrogate, which no UTF-8 peer could receive) of
 * at most {@link MAX_ID_LENGTH} code units, without control characters (U+0000–U+001F, U+007F).
 * Emptiness is checked by the callers, whose messages differ. The one check of the engine's codec
 * (`INVALID_ID`, `INVALID_NAMESPACE`) and of svc-sdk before it sends anything.
 *
 * @returns the problem, to follow the field's name: `contains a lone UTF-16 surrogate at index
 *   <n>`, `contains a control character (U+<hex>) at index <n>`, `is longer than 1024 characters
 *   (<length>)`; indexes count UTF-16 code units from 0.
 * @example
 * idProblem('orders::validate') // undefined
 * idProblem('orders::\ud800')   // 'contains a lone UTF-16 surrogate at index 8'
 */
export function idProblem(id: string): string | undefined {
  if (id.length > MAX_ID_LENGTH) return `is longer than ${MAX_ID_LENGTH} characters (${id.length})`
  if (!id.isWellFormed()) return `contains a lone UTF-16 surrogate at index ${LONE_SURROGATE.exec(id)!.index}`
  const control = CONTROL.exec(id)
  if (control !== null) return `contains a control character (U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}) at index ${control.index}`
  return undefined
}

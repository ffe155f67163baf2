/**
 * Ids of the functions and trigger types the engine and its always-on workers serve
 * (protocol.md §11). Key names follow iii-sdk where it has them (`LIST_FUNCTIONS`,
 * `LIST_WORKERS`, `REGISTER_WORKER`, `FUNCTIONS_AVAILABLE`, `LOG`) so ported code keeps working.
 *
 * @example
 * import { EngineFunctions } from 'svc-sdk/engine'
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

/** An entry of `engine::functions::list` (protocol.md §11.1 FunctionSummary). */
export interface FunctionSummary {
  function_id: string
  namespace: string
  /** Name of the most recent replica's worker (the built-in's name for engine-served ids). */
  worker_name: string | null
  description?: string
  metadata?: Record<string, unknown>
  replica_count: number
}

/** An entry of `engine::workers::list` (protocol.md §11.1 WorkerSummary). */
export interface WorkerSummary {
  id: string
  /** Null for a connection that never announced. */
  name: string | null
  description: string | null
  version: string | null
  namespace: string
  /** `node`, `python`, …; `builtin` for workers inside the engine. */
  runtime: string | null
  os: string | null
  pid: number | null
  isolation: string | null
  ip_address: string | null
  /** `connected` for connections, `available` for built-ins inside the engine. */
  status: 'connected' | 'available'
  function_count: number
  connected_at_ms: number
  active_invocations: number
}

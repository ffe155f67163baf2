/**
 * Result shapes of the engine's introspection functions (protocol.md §11.1).
 */
/** An entry of `engine::functions::list` (protocol.md §11.1 FunctionSummary). */
export interface FunctionSummary {
  function_id: string
  namespace: string
  /** Name of the most recent replica's worker (the built-in's name for engine-served ids). */
  worker_name: string | null
  description?: string
  metadata?: Record<string, unknown>
  replica_count: number
  /** In a fleet: the engines its replicas' workers are connected to, sorted (an svc addition, issue 19). */
  engines?: string[]
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
  /** In a fleet: the engine the worker is connected to (`fleet.engine`; an svc addition, issue 19). */
  engine?: string
  /**
   * Present while the connection drains (`engine::workers::drain`, a reload replacing its process;
   * an svc addition, issue 21): new calls go to the other replicas, running ones finish here.
   */
  draining?: true
}

/** FunctionSummary plus what `engine::functions::info` tells (protocol.md §11.1 FunctionDetail). */
export interface FunctionDetail extends FunctionSummary {
  /** The latest replica's `request_format`. */
  request_schema?: unknown
  /** The latest replica's `response_format`. */
  response_schema?: unknown
  /** Set for HTTP-invoked functions (§6.8): where the engine sends the request. */
  invocation?: { url: string; method: string }
  /** `engine`: in a fleet, the engine each replica's worker is connected to (issue 19). */
  replicas: { worker_id: string; worker_name: string | null; engine?: string }[]
  /** Bindings that target this function (any status). */
  registered_triggers: { id: string; trigger_type: string; config: unknown; status: RegisteredTriggerStatus }[]
}

/** An entry of `engine::triggers::list`: a trigger type (protocol.md §11.1 TriggerTypeSummary). */
export interface TriggerTypeSummary {
  id: string
  namespace: string
  worker_name: string | null
  description: string
}

/** The result of `engine::triggers::info` (protocol.md §11.1 TriggerTypeDetail). */
export interface TriggerTypeDetail extends TriggerTypeSummary {
  /** The provider's `trigger_request_format`: the schema of a binding's `config`. */
  configuration_schema?: unknown
  /** The provider's `call_request_format`: the schema of what a fire sends. */
  request_schema?: unknown
  /** Bindings the type's active provider holds. */
  instance_count: number
}

/** A binding's state (protocol.md §8.2–§8.3): delivered, parked without a provider, or refused. */
export type RegisteredTriggerStatus = 'active' | 'pending' | 'failed'

/** An entry of `engine::registered-triggers::list` (protocol.md §11.1 RegisteredTriggerSummary). */
export interface RegisteredTriggerSummary {
  id: string
  trigger_type: string
  function_id: string
  namespace: string
  /** The owning worker's name; null for bindings of `engine::register_trigger` and unnamed workers. */
  worker_name: string | null
  status: RegisteredTriggerStatus
  config: unknown
  /** JSON of `config` cut to 80 characters, `…` appended when cut. */
  config_summary: string
}

/** The result of `engine::registered-triggers::info` (protocol.md §11.1). */
export interface RegisteredTriggerDetail extends RegisteredTriggerSummary {
  metadata?: unknown
  /** The type of the provider holding the binding; null while none does. */
  trigger: TriggerTypeDetail | null
  /** The target, when registered and visible to the caller. */
  function: FunctionDetail | null
}

/** The `worker` of `engine::workers::info` (protocol.md §11.1 WorkerDetail). */
export interface WorkerDetail extends WorkerSummary {
  internal: boolean
  latest_metrics?: Record<string, number>
  /** Built-ins: the addresses actually bound, e.g. `http://127.0.0.1:3111`. */
  listen_urls?: string[]
  /** Built-ins: why the latest settings were refused (builtins.md §2.7). */
  last_config_error?: string
}

/** The result of `engine::functions::list` (protocol.md §11.1). */
export interface FunctionsListResult {
  functions: FunctionSummary[]
}

/** One entry of a batch `engine::functions::info`: the detail, or why there is none. */
export type FunctionInfoEntry = FunctionDetail | { function_id: string; error: 'not_found' | 'forbidden' }

/** The result of a batch `engine::functions::info` (`function_ids`, protocol.md §11.1). */
export interface FunctionsInfoBatchResult {
  functions: FunctionInfoEntry[]
}

/** The result of `engine::triggers::list` (protocol.md §11.1). */
export interface TriggerTypesListResult {
  triggers: TriggerTypeSummary[]
}

/** The result of `engine::registered-triggers::list` (protocol.md §11.1). */
export interface RegisteredTriggersListResult {
  registered_triggers: RegisteredTriggerSummary[]
}

/** The result of `engine::workers::list` (protocol.md §11.1). */
export interface WorkersListResult {
  workers: WorkerSummary[]
}

/**
 * The result of `engine::workers::drain` (protocol.md §11.1, an svc addition for reloads without
 * a gap, issue 21): the connection `id` is draining — new calls go to the other live replicas of
 * its functions, calls already running there finish. Calling it again only reads the count, so a
 * supervisor polls it until `active_invocations` is 0.
 */
export interface WorkerDrainResult {
  /** The worker (connection) id, as `engine::workers::list` gives it. */
  id: string
  draining: true
  /** Invocations the connection still executes. */
  active_invocations: number
}

/** The result of `engine::workers::info` (protocol.md §11.1). */
export interface WorkerInfoResult {
  worker: WorkerDetail
  functions: FunctionSummary[]
  trigger_types: TriggerTypeSummary[]
  registered_triggers: RegisteredTriggerSummary[]
  /** Every connection the name matched, most recent first. */
  matching_ids: string[]
}

/** The result of `engine::register_trigger` (protocol.md §11.2). */
export interface RegisterTriggerResult {
  id: string
}

/** The result of `engine::unregister_trigger` (protocol.md §11.2). */
export interface UnregisterTriggerResult {
  removed: boolean
}

/**
 * One end of a channel (protocol.md §9): plain JSON that may travel anywhere in a payload or
 * result. `access_key` is the end's credential: whoever holds the ref can claim the end.
 */
export interface ChannelRef {
  channel_id: string
  access_key: string
  direction: 'read' | 'write'
}

/** The result of `engine::channels::create` (protocol.md §11.3): both ends share `channel_id`. */
export interface CreateChannelResult {
  writer: ChannelRef
  reader: ChannelRef
}

/** One engine of a fleet in `engine::fleet::list` (an svc addition, issue 19). */
export interface FleetEngineInfo {
  /** `fleet.engine` of that engine. */
  engine: string
  /** Its current run (a new one at each start). */
  instance: string
  /** True for the engine that answered. */
  self: boolean
  /** Its worker listener URLs. */
  urls: string[]
  /** Unix ms of its start. */
  started_at_ms: number
  /** Ms since its last heartbeat reached the answering engine; 0 for itself. */
  last_heard_ms: number
  /** Worker connections on it. */
  workers: number
  /** Function replicas its workers registered. */
  functions: number
}

/** The result of `engine::fleet::list`: the fleet this engine belongs to, null when it is alone. */
export interface FleetListResult {
  fleet: string | null
  /** This engine's name in the fleet; null when it is alone. */
  engine: string | null
  /** `healthy`, or `degraded` while NATS is unreachable; `alone` without a fleet. */
  status: 'healthy' | 'degraded' | 'alone'
  detail?: string
  /** The answering engine first, then the others by name. */
  engines: FleetEngineInfo[]
}

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

/**
 * What engines of a fleet tell each other over NATS, besides calls (which are protocol frames):
 * the heartbeat and the snapshot of an engine's workers and functions. Everything read from NATS
 * is checked here first — a message of the wrong shape is dropped, never half applied.
 */
import { idProblem, jsonParse, type FormatSchema, type HttpInvocationConfig, type WorkerSummary } from 'svc-protocol'

/** Published on `svc.<fleet>.heartbeat` every `heartbeat_interval_ms`, and at once on a change. */
export interface Heartbeat {
  /** The engine's name (`fleet.engine`). */
  engine: string
  /** This run of the engine: a new one at each start, so a restarted engine is a new member. */
  instance: string
  /** Increases whenever what the snapshot holds changed. */
  version: number
  /** Worker listener URLs of the engine. */
  urls: string[]
  /** Unix ms of the engine's start. */
  started_at_ms: number
  /** The engine is stopping: the others drop it now rather than after the timeout. */
  leaving?: true
}

/** One function replica an engine's worker registered. */
export interface SnapshotFunction {
  namespace: string
  function_id: string
  worker_id: string
  description?: string
  metadata?: Record<string, unknown>
  request_format?: FormatSchema
  response_format?: FormatSchema
  invocation?: HttpInvocationConfig
}

/**
 * A trigger binding of an engine's worker that every engine serves: an `http` route, so that a
 * request through any engine's HTTP listener reaches the function (issue 19). Other trigger types
 * fire where their events are (shared storage feeds every engine), so they stay with their engine.
 */
export interface SnapshotTrigger {
  id: string
  trigger_type: string
  function_id: string
  namespace: string
  config: unknown
  metadata?: unknown
}

/** Trigger types whose bindings every engine of the fleet serves. */
export const FLEET_TRIGGER_TYPES: ReadonlySet<string> = new Set(['http'])

/** The answer on `svc.<fleet>.snapshot.<instance>`. */
export interface Snapshot {
  instance: string
  version: number
  workers: WorkerSummary[]
  functions: SnapshotFunction[]
  triggers: SnapshotTrigger[]
}

/** Names and instance ids: one subject token. */
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/
/** Bounds on what one snapshot may hold (a hostile or broken engine cannot grow another's memory past them). */
export const SNAPSHOT_LIMITS = { workers: 10_000, functions: 100_000, triggers: 100_000 } as const

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isText = (v: unknown, max = 1024): v is string => typeof v === 'string' && v.length <= max && idProblem(v) === undefined

/** A heartbeat, or undefined when `data` is not one. */
export function readHeartbeat(data: Uint8Array): Heartbeat | undefined {
  const value = parse(data)
  if (!isRecord(value)) return undefined
  const { engine, instance, version, urls, started_at_ms, leaving } = value
  if (typeof engine !== 'string' || !TOKEN.test(engine) || typeof instance !== 'string' || !TOKEN.test(instance)) return undefined
  if (!Number.isSafeInteger(version) || !Number.isSafeInteger(started_at_ms)) return undefined
  if (!Array.isArray(urls) || urls.length > 64 || !urls.every((u) => isText(u, 2048))) return undefined
  const beat: Heartbeat = { engine, instance, version: version as number, urls: urls as string[], started_at_ms: started_at_ms as number }
  if (leaving === true) beat.leaving = true
  return beat
}

/** A snapshot, or undefined when `data` is not one; entries of the wrong shape are left out. */
export function readSnapshot(data: Uint8Array): Snapshot | undefined {
  const value = parse(data)
  if (!isRecord(value)) return undefined
  const { instance, version, workers, functions } = value
  const triggers = value.triggers ?? []
  if (typeof instance !== 'string' || !TOKEN.test(instance) || !Number.isSafeInteger(version)) return undefined
  if (!Array.isArray(workers) || !Array.isArray(functions) || !Array.isArray(triggers)) return undefined
  if (workers.length > SNAPSHOT_LIMITS.workers || functions.length > SNAPSHOT_LIMITS.functions || triggers.length > SNAPSHOT_LIMITS.triggers) return undefined
  const snapshot: Snapshot = { instance, version: version as number, workers: [], functions: [], triggers: [] }
  for (const t of triggers) {
    if (!isRecord(t) || !isText(t.id, 256) || typeof t.trigger_type !== 'string' || !FLEET_TRIGGER_TYPES.has(t.trigger_type)) continue
    if (!isText(t.function_id) || !isText(t.namespace) || !('config' in t)) continue
    const trigger: SnapshotTrigger = { id: t.id, trigger_type: t.trigger_type, function_id: t.function_id, namespace: t.namespace, config: t.config }
    if (t.metadata !== undefined) trigger.metadata = t.metadata
    snapshot.triggers.push(trigger)
  }
  for (const w of workers) {
    const worker = readWorker(w)
    if (worker !== undefined) snapshot.workers.push(worker)
  }
  for (const f of functions) {
    if (!isRecord(f) || !isText(f.namespace) || !isText(f.function_id) || !isText(f.worker_id, 64)) continue
    const entry: SnapshotFunction = { namespace: f.namespace, function_id: f.function_id, worker_id: f.worker_id }
    if (typeof f.description === 'string') entry.description = f.description
    if (isRecord(f.metadata)) entry.metadata = f.metadata
    if (isRecord(f.request_format)) entry.request_format = f.request_format as FormatSchema
    if (isRecord(f.response_format)) entry.response_format = f.response_format as FormatSchema
    if (isRecord(f.invocation) && typeof f.invocation.url === 'string') entry.invocation = f.invocation as unknown as HttpInvocationConfig
    snapshot.functions.push(entry)
  }
  return snapshot
}

const nullableText = (v: unknown, max = 1024): string | null => (typeof v === 'string' && v.length <= max && v.isWellFormed() ? v : null)
const count = (v: unknown): number => (Number.isSafeInteger(v) && (v as number) >= 0 ? (v as number) : 0)

function readWorker(w: unknown): WorkerSummary | undefined {
  if (!isRecord(w) || !isText(w.id, 64) || !isText(w.namespace)) return undefined
  return {
    id: w.id,
    name: nullableText(w.name, 280),
    description: nullableText(w.description, 280),
    version: nullableText(w.version, 280),
    namespace: w.namespace,
    runtime: nullableText(w.runtime, 280),
    os: nullableText(w.os, 280),
    pid: Number.isSafeInteger(w.pid) ? (w.pid as number) : null,
    isolation: nullableText(w.isolation, 280),
    ip_address: nullableText(w.ip_address, 280),
    status: 'connected',
    function_count: count(w.function_count),
    connected_at_ms: count(w.connected_at_ms),
    active_invocations: count(w.active_invocations),
  }
}

function parse(data: Uint8Array): unknown {
  try {
    return jsonParse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'))
  } catch {
    return undefined
  }
}

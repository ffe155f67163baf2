/**
 * The engine's configuration (protocol.md §12) and its logger: plain shapes every part of the
 * engine core may import. A leaf module: it imports nothing from the engine, so no import circle
 * can run through it (`runtime/engine/imports.test.ts`). `types.ts` re-exports it.
 */

/** Engine logger; the observability worker will collect these later. */
export interface Logger {
  debug(message: string, data?: Record<string, unknown>): void
  info(message: string, data?: Record<string, unknown>): void
  warn(message: string, data?: Record<string, unknown>): void
  error(message: string, data?: Record<string, unknown>): void
}

/**
 * A rule of `expose_functions` (protocol.md §13.3): a pattern string, bare or `match("…")`, or a map
 * with `match` or `metadata` and an optional `namespace`.
 */
export type ExposeRule =
  | string
  | { match: string; namespace?: string }
  | { metadata: Record<string, unknown>; namespace?: string }

/** The `rbac` block of a listener (protocol.md §13.1). */
export interface RbacConfig {
  auth_function_id?: string
  expose_functions: ExposeRule[]
  on_function_registration_function_id?: string
  on_trigger_registration_function_id?: string
  on_trigger_type_registration_function_id?: string
}

/** One `svc-worker-manager` entry (protocol.md §12.3), defaults applied. */
export interface ListenerConfig {
  host: string
  /** 0 picks a free port. */
  port: number
  handshake_timeout_ms: number
  ping_interval_ms: number
  idle_timeout_ms: number
  max_message_bytes: number
  backpressure_bytes: number
  max_outbound_bytes: number
  /**
   * A connection with unsent data of which nothing leaves for this long stopped reading and is
   * terminated (the slow-consumer rule, protocol.md §3.5; an svc addition), ms.
   */
  drain_timeout_ms: number
  /**
   * Bytes of frames a connection may have waiting to be handled: queued while its session is busy
   * (the auth function, a registration hook, a reattach; past it the connection is closed with
   * 1008) and held in the registration buffer (past it the namespace resolves at once, §3.4).
   * The bound of §3.4/§3.5 in bytes, an svc addition; one frame always fits.
   */
  max_inbound_bytes: number
  /** Diverts this listener's invocations to a function (§13.4). */
  middleware_function_id?: string
  /** Access control of this listener (§13); absent: every connection is unrestricted. */
  rbac?: RbacConfig
}

/** A built-in worker's entry of config.yaml: whether it runs and the seed of its settings. */
export interface BuiltinEntry {
  enabled: boolean
  /** The `config` block, placeholders already expanded; undefined when absent. */
  config?: unknown
}

/** A local worker entry of config.yaml (launched by the CLI supervisor, cli.md §5). */
export interface LocalWorkerEntry {
  name: string
  worker_path: string
  enabled: boolean
  namespace?: string
  env: Record<string, string>
  config?: unknown
  watch: boolean
}

/** `http_functions` of config.yaml (protocol.md §12.4): the URL policy of HTTP-invoked functions. */
export interface HttpFunctionsPolicy {
  /** Host names or IPs (`*.example.com` allowed) exempt from the two rules below. */
  url_allowlist: string[]
  /** Refuse URLs whose host resolves to a loopback, private, link-local or unique-local address. */
  block_private_ips: boolean
  /** Refuse `http:` URLs. */
  require_https: boolean
}

export const HTTP_FUNCTIONS_DEFAULTS: HttpFunctionsPolicy = { url_allowlist: [], block_private_ips: true, require_https: true }

/**
 * The `fleet` section of config.yaml (issue 19; docs/guides/scale-out.md): this engine is one of
 * several serving one project, found and called over NATS. Absent: the engine is alone.
 */
export interface FleetConfig {
  /** The fleet's name `[A-Za-z0-9_-]{1,64}`: the first tokens of every NATS subject it uses. */
  name: string
  /** This engine's name `[A-Za-z0-9_-]{1,64}`, unique in the fleet; default `<host name>-<pid>`. */
  engine: string
  /** NATS server URLs (`nats://host:4222`, credentials allowed in the URL; never logged). */
  nats: string[]
  /** How often this engine tells the fleet it is alive, ms. Default 1000. */
  heartbeat_interval_ms: number
  /**
   * An engine not heard from for this long has left the fleet: its functions are removed and the
   * calls in flight to its workers end with `invocation_stopped`, ms. Default 3000.
   */
  heartbeat_timeout_ms: number
}

export const FLEET_DEFAULTS = { heartbeat_interval_ms: 1000, heartbeat_timeout_ms: 3000 } as const

/** The validated engine configuration (protocol.md §12), every default applied. */
export interface EngineConfig {
  listeners: ListenerConfig[]
  registration_namespace_grace_ms: number
  internal_invocation_timeout_ms: number
  /** Absolute path. */
  data_dir: string
  /** Keyed by canonical built-in name (`svc-http`, `svc-state`, …). */
  builtins: Record<string, BuiltinEntry>
  local_workers: LocalWorkerEntry[]
  /** Default {@link HTTP_FUNCTIONS_DEFAULTS}. */
  http_functions?: HttpFunctionsPolicy
  /** Present when this engine is one of a fleet. */
  fleet?: FleetConfig
}

export const LISTENER_DEFAULTS: ListenerConfig = {
  host: '127.0.0.1',
  port: 49134,
  handshake_timeout_ms: 10000,
  ping_interval_ms: 30000,
  idle_timeout_ms: 90000,
  max_message_bytes: 64 * 1024 * 1024,
  backpressure_bytes: 1024 * 1024,
  max_outbound_bytes: 64 * 1024 * 1024,
  drain_timeout_ms: 10000,
  max_inbound_bytes: 64 * 1024 * 1024,
}

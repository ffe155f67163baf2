/**
 * Every key config.yaml accepts outside the `config` blocks of built-in workers (protocol.md §12,
 * cli.md §2.1), as one structured description. The loader takes its key lists and integer bounds
 * from here, and `docs/reference/config.yaml.md` is generated from it, so the reference cannot
 * list a key the loader refuses or miss one it accepts. Built-in `config` blocks are described by
 * the worker descriptors (`docs/reference/workers.md`).
 */
import { FLEET_DEFAULTS, LISTENER_DEFAULTS } from '../engine/types.ts'

/** One key of a config.yaml block. */
export interface ConfigKey {
  readonly key: string
  /** Type as the reference shows it: `string`, `integer`, `boolean`, `string[]`, `mapping`, `list`, `any`. */
  readonly type: string
  /** Default as YAML text; undefined when there is none. */
  readonly default?: string
  /** Required in its block. */
  readonly required?: boolean
  /** Integer bounds the loader enforces (inclusive). */
  readonly min?: number
  readonly max?: number
  /** What the key does, one or two sentences. */
  readonly description: string
}

/** One block of config.yaml: where it sits and the keys it takes. */
export interface ConfigBlock {
  /** Where the block sits, e.g. `workers[]` or `workers[].config` of `svc-worker-manager`. */
  readonly path: string
  readonly title: string
  /** Shown above the table of keys. */
  readonly intro: string
  readonly keys: readonly ConfigKey[]
}

const ms = (n: number) => String(n)

/** The blocks of config.yaml in the order the reference lists them. */
export const CONFIG_BLOCKS = {
  top: {
    path: '',
    title: 'Top level',
    intro: 'Any other top-level key is an error that names the closest known key.',
    keys: [
      { key: 'workers', type: 'list', default: '[]', description: 'Listeners, built-in worker entries and local workers; see the blocks below.' },
      { key: 'data_dir', type: 'string', default: '.svc/data', description: "Where built-in workers keep their data; relative to the file's directory. `svc --data-dir` overrides it." },
      { key: 'registration_namespace_grace_ms', type: 'integer', default: '250', min: 0, description: 'How long a call waits for a function that is being registered in its namespace (protocol.md §3.4). `SVC_NAMESPACE_GRACE_MS` overrides it.' },
      { key: 'internal_invocation_timeout_ms', type: 'integer', default: '30000', min: 1, description: 'Timeout of calls the engine itself makes (triggers, hooks, HTTP-invoked functions), ms (protocol.md §6.5).' },
      { key: 'http_functions', type: 'mapping', description: 'Policy for the URLs of HTTP-invoked functions; see `http_functions`.' },
      { key: 'fleet', type: 'mapping', description: 'Makes this engine one of several serving the project, over NATS; see `fleet`. Without it the engine is alone.' },
    ],
  },
  entry: {
    path: 'workers[]',
    title: 'Worker entries (every kind)',
    intro:
      'Each `workers` entry is a listener (`name: svc-worker-manager`, may appear several times), a built-in worker by name or alias (workers.md), or a local worker (an entry with `worker_path`). Names other than `svc-worker-manager` are unique in the file.',
    keys: [
      { key: 'name', type: 'string', required: true, description: '`svc-worker-manager`, a built-in name or alias, or a local worker name `[a-z0-9][a-z0-9_-]{0,63}`.' },
      { key: 'enabled', type: 'boolean', default: 'true', description: '`false` turns a listener, built-in or local worker off; built-ins that always run cannot be disabled (workers.md).' },
      { key: 'config', type: 'any', description: 'Listener: see `svc-worker-manager`. Built-in: the seed of its settings entry (workers.md). Local worker: exported as JSON in `SVC_WORKER_CONFIG`.' },
    ],
  },
  local: {
    path: 'workers[] (local workers)',
    title: 'Local worker entries',
    intro: 'Further keys of an entry with `worker_path`. They are refused on listener and built-in entries.',
    keys: [
      { key: 'worker_path', type: 'string', required: true, description: "The worker's directory, relative to the file's directory; its `svc.worker.yaml` says how to install and start it (svc.worker.yaml.md)." },
      { key: 'namespace', type: 'string', default: 'default', description: 'Namespace the worker registers in, exported as `SVC_NAMESPACE`.' },
      { key: 'env', type: 'mapping', default: '{}', description: 'Extra environment variables; values are strings, numbers or booleans, placeholders expanded.' },
      { key: 'isolation', type: '`process` or `microvm`', description: "Overrides the manifest's `isolation`; default the manifest value, else `process` (cli.md §5.7)." },
      { key: 'watch', type: 'boolean', default: 'true', description: 'Restart the worker when its files change (cli.md §5.4).' },
    ],
  },
  listener: {
    path: 'workers[].config of svc-worker-manager',
    title: '`svc-worker-manager` (a listener)',
    intro: 'A WebSocket listener workers and clients connect to. Without any `svc-worker-manager` entry the engine listens on `127.0.0.1:49134`; the CLI uses the first one.',
    keys: [
      { key: 'host', type: 'string', default: LISTENER_DEFAULTS.host, description: 'Bind address; `0.0.0.0` accepts workers from other hosts or containers. `svc --host` overrides it.' },
      { key: 'port', type: 'integer', default: String(LISTENER_DEFAULTS.port), min: 0, max: 65535, description: '`0` picks a free port. `svc --port` overrides it.' },
      { key: 'handshake_timeout_ms', type: 'integer', default: ms(LISTENER_DEFAULTS.handshake_timeout_ms), min: 1, description: 'Time a new connection has to complete its handshake (protocol.md §2).' },
      { key: 'ping_interval_ms', type: 'integer', default: ms(LISTENER_DEFAULTS.ping_interval_ms), min: 1, description: 'Interval of keep-alive pings (protocol.md §3.3).' },
      { key: 'idle_timeout_ms', type: 'integer', default: ms(LISTENER_DEFAULTS.idle_timeout_ms), min: 1, description: 'A connection silent this long is closed (protocol.md §3.3).' },
      { key: 'max_message_bytes', type: 'integer', default: String(LISTENER_DEFAULTS.max_message_bytes), min: 1, description: 'Largest frame accepted, bytes (protocol.md §2).' },
      { key: 'backpressure_bytes', type: 'integer', default: String(LISTENER_DEFAULTS.backpressure_bytes), min: 1, description: 'Outbound buffer size above which the engine pauses sending, bytes (protocol.md §3.5).' },
      { key: 'max_outbound_bytes', type: 'integer', default: String(LISTENER_DEFAULTS.max_outbound_bytes), min: 1, description: 'Outbound buffer size at which the connection is closed, bytes (protocol.md §3.5).' },
      { key: 'drain_timeout_ms', type: 'integer', default: ms(LISTENER_DEFAULTS.drain_timeout_ms), min: 1, description: 'A connection with unsent data of which nothing leaves for this long has stopped reading and is closed; its open calls fail with `invocation_stopped` (protocol.md §3.5).' },
      { key: 'max_inbound_bytes', type: 'integer', default: String(LISTENER_DEFAULTS.max_inbound_bytes), min: 1, description: 'Bytes of frames a connection may have waiting: queued while its auth function, a registration hook or a reattach runs (past it the connection is closed with 1008), or held in the registration buffer (past it the buffer is applied at once) (protocol.md §3.4, §3.5). A single frame always fits.' },
      { key: 'middleware_function_id', type: 'string', description: 'Function that sees every invocation from this listener first (protocol.md §13.4).' },
      { key: 'rbac', type: 'mapping', description: 'Access control of the listener; see `rbac`. Without it the listener is unrestricted.' },
    ],
  },
  rbac: {
    path: 'workers[].config.rbac of svc-worker-manager',
    title: '`rbac`',
    intro: 'Access control of one listener (protocol.md §13).',
    keys: [
      { key: 'auth_function_id', type: 'string', description: 'Function that authenticates each new connection and returns what it may do (protocol.md §13.2).' },
      { key: 'expose_functions', type: 'list', default: '[]', description: 'Functions sessions may invoke: pattern strings (`match("api::*")` or an exact id) or rules; see `expose_functions` rules.' },
      { key: 'on_function_registration_function_id', type: 'string', description: 'Hook asked before a function registration is accepted (protocol.md §13.5).' },
      { key: 'on_trigger_registration_function_id', type: 'string', description: 'Hook asked before a trigger registration is accepted (protocol.md §13.5).' },
      { key: 'on_trigger_type_registration_function_id', type: 'string', description: 'Hook asked before a trigger type registration is accepted (protocol.md §13.5).' },
    ],
  },
  exposeRule: {
    path: 'workers[].config.rbac.expose_functions[]',
    title: '`expose_functions` rules',
    intro: 'A rule that is a mapping takes exactly one of `match` and `metadata`.',
    keys: [
      { key: 'match', type: 'string', description: 'Function id pattern; `*` matches any run of characters.' },
      { key: 'metadata', type: 'mapping', description: 'Exposes functions whose registration metadata has all these values.' },
      { key: 'namespace', type: 'string', description: 'Limits the rule to one namespace.' },
    ],
  },
  httpFunctions: {
    path: 'http_functions',
    title: '`http_functions`',
    intro: 'Policy for functions registered with an HTTP URL instead of a worker (protocol.md §12.4).',
    keys: [
      { key: 'url_allowlist', type: 'string[]', default: '[]', description: 'Host names or IP addresses (`*.example.com` allowed) exempt from the two rules below.' },
      { key: 'block_private_ips', type: 'boolean', default: 'true', description: 'Refuse URLs whose host resolves to a loopback, private, link-local or unique-local address.' },
      { key: 'require_https', type: 'boolean', default: 'true', description: 'Refuse `http:` URLs.' },
    ],
  },
  fleet: {
    path: 'fleet',
    title: '`fleet`',
    intro:
      'Several engines serving one project (docs/guides/scale-out.md): each engine with the same `name` and NATS servers finds the others, every function registered on any of them is callable from all, and their listings show the whole fleet. Give each engine its own `data_dir`; put what the built-ins store on shared storage (`adapter: {name: redis}`).',
    keys: [
      { key: 'name', type: 'string', required: true, description: 'The fleet, `[A-Za-z0-9_-]{1,64}`: engines with the same name and NATS servers form one fleet.' },
      { key: 'engine', type: 'string', default: '<host name>-<pid>', description: "This engine's name in the fleet, `[A-Za-z0-9_-]{1,64}`; listings show it beside each worker. `SVC_FLEET_ENGINE` overrides it." },
      { key: 'nats', type: 'string or string[]', required: true, description: 'NATS server URL or URLs (`nats://127.0.0.1:4222`); credentials may be given in the URL and are never printed.' },
      { key: 'heartbeat_interval_ms', type: 'integer', default: String(FLEET_DEFAULTS.heartbeat_interval_ms), min: 50, description: 'How often this engine tells the fleet it is alive, ms.' },
      { key: 'heartbeat_timeout_ms', type: 'integer', default: String(FLEET_DEFAULTS.heartbeat_timeout_ms), min: 100, description: 'An engine silent this long has left the fleet: its functions are removed and calls in flight to its workers end with `invocation_stopped`, ms. At least twice the interval.' },
    ],
  },
} as const satisfies Record<string, ConfigBlock>

/** The key names of a block, in reference order (what the loader accepts there). */
export function keysOf(block: ConfigBlock): string[] {
  return block.keys.map((k) => k.key)
}

/** Integer keys of a block with their bounds, keyed by name. */
export function integerRules(block: ConfigBlock): Record<string, { min: number; max?: number }> {
  const rules: Record<string, { min: number; max?: number }> = {}
  for (const k of block.keys) {
    if (k.type !== 'integer') continue
    rules[k.key] = k.max === undefined ? { min: k.min ?? 0 } : { min: k.min ?? 0, max: k.max }
  }
  return rules
}

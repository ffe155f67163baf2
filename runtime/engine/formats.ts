/**
 * Request and result schemas of the engine's own functions and trigger types (protocol.md §11.1,
 * §11.2, §11.6), registered with them and reported by `engine::functions::info` /
 * `engine::triggers::info` and docs/reference/functions.md. Registration-time data only: nothing
 * here is consulted when a function is invoked.
 */
import type { FormatSchema } from 'svc-protocol'

const STRING = { type: 'string' } as const
const NULLABLE_STRING = { type: ['string', 'null'] } as const
const INCLUDE_INTERNAL = { type: 'boolean', default: false, description: 'also show engine:: ids and functions marked internal' } as const
const SEARCH = { type: 'string', description: 'case-insensitive substring of the id or description' } as const

/** An object schema; `required` lists the fields that are always present (results) or must be given (payloads). */
function object(properties: Record<string, unknown>, required: string[] = [], extra: Record<string, unknown> = {}): FormatSchema {
  return { type: 'object', ...(required.length > 0 ? { required } : {}), properties, ...extra }
}

/** `{<field>: item[]}`. */
function listOf(field: string, item: FormatSchema): FormatSchema {
  return object({ [field]: { type: 'array', items: item } }, [field])
}

/** FunctionSummary (§11.1). */
export const FUNCTION_SUMMARY = object(
  {
    function_id: STRING,
    namespace: STRING,
    worker_name: { ...NULLABLE_STRING, description: 'of the most recent replica; the built-in worker for engine-served ids' },
    description: STRING,
    metadata: { type: 'object' },
    replica_count: { type: 'integer', minimum: 1 },
    engines: { type: 'array', items: STRING, description: 'in a fleet: the engines its replicas run on' },
  },
  ['function_id', 'namespace', 'worker_name', 'replica_count'],
)

const BINDING_STATUS = { type: 'string', enum: ['active', 'pending', 'failed'] } as const

/** FunctionDetail (§11.1): FunctionSummary plus schemas, HTTP invocation, replicas and triggers. */
export const FUNCTION_DETAIL = object(
  {
    ...FUNCTION_SUMMARY.properties,
    request_schema: { type: 'object', description: 'the request_format given at registration' },
    response_schema: { type: 'object', description: 'the response_format given at registration' },
    invocation: object({ url: STRING, method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] } }, ['url', 'method'], { description: 'functions the engine invokes by HTTP' }),
    replicas: { type: 'array', items: object({ worker_id: STRING, worker_name: NULLABLE_STRING, engine: { type: 'string', description: 'in a fleet: the engine of its worker' } }, ['worker_id', 'worker_name']) },
    registered_triggers: {
      type: 'array',
      items: object({ id: STRING, trigger_type: STRING, config: {}, status: BINDING_STATUS }, ['id', 'trigger_type', 'config', 'status']),
    },
  },
  [...FUNCTION_SUMMARY.required!, 'replicas', 'registered_triggers'],
)

/** TriggerTypeSummary (§11.1). */
export const TRIGGER_TYPE_SUMMARY = object(
  { id: STRING, namespace: STRING, worker_name: NULLABLE_STRING, description: STRING },
  ['id', 'namespace', 'worker_name', 'description'],
)

/** TriggerTypeDetail (§11.1). */
export const TRIGGER_TYPE_DETAIL = object(
  {
    ...TRIGGER_TYPE_SUMMARY.properties,
    configuration_schema: { type: 'object', description: 'the trigger_request_format: the config a trigger of this type takes' },
    request_schema: { type: 'object', description: 'the call_request_format: the payload its functions receive' },
    instance_count: { type: 'integer', minimum: 0 },
  },
  [...TRIGGER_TYPE_SUMMARY.required!, 'instance_count'],
)

/** RegisteredTriggerSummary (§11.1). */
export const REGISTERED_TRIGGER_SUMMARY = object(
  {
    id: STRING,
    trigger_type: STRING,
    function_id: STRING,
    namespace: STRING,
    worker_name: { ...NULLABLE_STRING, description: 'null for triggers owned by no connection' },
    status: BINDING_STATUS,
    config: {},
    config_summary: { type: 'string', description: 'JSON of config cut to 80 characters, … appended when cut' },
  },
  ['id', 'trigger_type', 'function_id', 'namespace', 'worker_name', 'status', 'config', 'config_summary'],
)

/** WorkerSummary (§11.1). */
export const WORKER_SUMMARY = object(
  {
    id: STRING,
    name: { ...NULLABLE_STRING, description: 'null until the connection announces itself' },
    description: NULLABLE_STRING,
    version: NULLABLE_STRING,
    namespace: STRING,
    runtime: { ...NULLABLE_STRING, description: '"builtin" for built-in workers' },
    os: NULLABLE_STRING,
    pid: { type: ['integer', 'null'] },
    isolation: NULLABLE_STRING,
    ip_address: NULLABLE_STRING,
    status: { type: 'string', enum: ['connected', 'available'], description: 'available for built-in workers running inside the engine' },
    function_count: { type: 'integer', minimum: 0 },
    connected_at_ms: { type: 'integer', description: 'Unix milliseconds' },
    active_invocations: { type: 'integer', minimum: 0 },
    engine: { type: 'string', description: 'in a fleet: the engine the worker is connected to' },
    draining: { type: 'boolean', const: true, description: 'present while the connection drains (engine::workers::drain): new calls go to other replicas' },
  },
  ['id', 'name', 'description', 'version', 'namespace', 'runtime', 'os', 'pid', 'isolation', 'ip_address', 'status', 'function_count', 'connected_at_ms', 'active_invocations'],
)

/** WorkerDetail (§11.1). */
export const WORKER_DETAIL = object(
  {
    ...WORKER_SUMMARY.properties,
    internal: { type: 'boolean' },
    latest_metrics: { type: 'object', description: 'metric name → latest value' },
    listen_urls: { type: 'array', items: STRING, description: 'built-in workers: the addresses actually bound' },
    last_config_error: { type: 'string', description: 'built-in workers: the last settings apply that failed (builtins.md §2.7)' },
  },
  [...WORKER_SUMMARY.required!, 'internal'],
)

/** ChannelRef (§9): one end of a channel; `access_key` is its credential. */
const CHANNEL_REF = (direction: 'read' | 'write') =>
  object(
    {
      channel_id: { type: 'string', format: 'uuid' },
      access_key: { type: 'string', format: 'uuid', description: 'the credential of this end: whoever holds it can claim the end' },
      direction: { type: 'string', const: direction },
    },
    ['channel_id', 'access_key', 'direction'],
  )

/** Request and result of each function of §11.1–§11.3, by id. */
export const ENGINE_FUNCTION_FORMATS: Record<string, { request_format: FormatSchema; response_format: FormatSchema }> = {
  'engine::functions::list': {
    request_format: object(
      {
        search: SEARCH,
        prefix: { type: 'string', description: 'function id prefix' },
        worker: { type: 'string', description: 'worker name' },
        workers: { type: 'array', items: STRING, description: 'worker names, any of' },
        namespace: STRING,
        include_internal: INCLUDE_INTERNAL,
      },
      [],
      { examples: [{}] },
    ),
    response_format: { ...listOf('functions', FUNCTION_SUMMARY), description: 'sorted by id' },
  },
  'engine::functions::info': {
    request_format: object(
      {
        function_id: STRING,
        function_ids: { type: 'array', items: STRING, minItems: 1, maxItems: 32 },
        namespace: { type: 'string', description: 'strict when given; else default, else a unique other namespace' },
      },
      [],
      { description: 'exactly one of function_id or function_ids', oneOf: [{ required: ['function_id'] }, { required: ['function_ids'] }], examples: [{ function_id: 'engine::functions::list' }] },
    ),
    response_format: {
      description: 'FunctionDetail for function_id; {functions} for function_ids',
      oneOf: [
        FUNCTION_DETAIL,
        listOf('functions', {
          oneOf: [FUNCTION_DETAIL, object({ function_id: STRING, error: { type: 'string', enum: ['not_found', 'forbidden'] } }, ['function_id', 'error'])],
        }),
      ],
    },
  },
  'engine::triggers::list': {
    request_format: object(
      { search: SEARCH, prefix: { type: 'string', description: 'trigger type id prefix' }, worker: { type: 'string', description: 'worker name' }, include_internal: { ...INCLUDE_INTERNAL, description: 'also show engine:: trigger types' } },
      [],
      { examples: [{}] },
    ),
    response_format: { ...listOf('triggers', TRIGGER_TYPE_SUMMARY), description: 'trigger types, sorted by id' },
  },
  'engine::triggers::info': {
    request_format: object({ id: { type: 'string', description: 'trigger type id' }, namespace: { type: 'string', default: 'default' } }, ['id']),
    response_format: TRIGGER_TYPE_DETAIL,
  },
  'engine::registered-triggers::list': {
    request_format: object(
      {
        search: { type: 'string', description: 'case-insensitive substring of the trigger id, function id or trigger type' },
        trigger_type: STRING,
        function_id: STRING,
        worker: { type: 'string', description: 'name of the owning worker' },
        status: BINDING_STATUS,
        include_internal: { ...INCLUDE_INTERNAL, description: 'also show triggers of internal functions (engine::…, or marked metadata.internal)' },
      },
      [],
      { examples: [{}] },
    ),
    response_format: { ...listOf('registered_triggers', REGISTERED_TRIGGER_SUMMARY), description: 'trigger instances, sorted by id' },
  },
  'engine::registered-triggers::info': {
    request_format: object({ id: { type: 'string', description: 'registered trigger id' } }, ['id']),
    response_format: object(
      {
        ...REGISTERED_TRIGGER_SUMMARY.properties,
        metadata: {},
        trigger: { ...TRIGGER_TYPE_DETAIL, type: ['object', 'null'], description: 'null while no provider serves the type' },
        function: { ...FUNCTION_DETAIL, type: ['object', 'null'], description: 'null while the function is not registered or not visible' },
      },
      [...REGISTERED_TRIGGER_SUMMARY.required!, 'trigger', 'function'],
    ),
  },
  'engine::workers::list': {
    request_format: object(
      { search: { type: 'string', description: 'case-insensitive substring of the name or description' }, runtime: STRING, status: WORKER_SUMMARY.properties!.status, namespace: STRING },
      [],
      { examples: [{}] },
    ),
    response_format: { ...listOf('workers', WORKER_SUMMARY), description: 'sorted by name, then id' },
  },
  'engine::fleet::list': {
    request_format: object({}, [], { examples: [{}] }),
    response_format: object(
      {
        fleet: { ...NULLABLE_STRING, description: 'the fleet name; null when the engine is alone' },
        engine: { ...NULLABLE_STRING, description: "this engine's name in the fleet" },
        status: { type: 'string', enum: ['healthy', 'degraded', 'alone'], description: 'degraded while NATS is unreachable' },
        detail: STRING,
        engines: {
          type: 'array',
          description: 'the answering engine first, then the others by name',
          items: object(
            {
              engine: STRING,
              instance: { type: 'string', description: 'the engine run' },
              self: { type: 'boolean' },
              urls: { type: 'array', items: STRING },
              started_at_ms: { type: 'integer', description: 'Unix milliseconds' },
              last_heard_ms: { type: 'integer', minimum: 0, description: 'ms since its last heartbeat' },
              workers: { type: 'integer', minimum: 0 },
              functions: { type: 'integer', minimum: 0 },
            },
            ['engine', 'instance', 'self', 'urls', 'started_at_ms', 'last_heard_ms', 'workers', 'functions'],
          ),
        },
      },
      ['fleet', 'engine', 'status', 'engines'],
    ),
  },
  'engine::invocations::list': {
    request_format: object(
      {
        limit: { type: 'integer', minimum: 0, maximum: 1000, default: 100, description: 'most invocations returned, oldest first' },
        function_id: { type: 'string', description: 'only invocations of this function' },
        include_internal: { ...INCLUDE_INTERNAL, description: 'also show calls of engine:: functions (this listing among them)' },
      },
      [],
      { examples: [{}] },
    ),
    response_format: object(
      {
        invocations: {
          type: 'array',
          items: object(
            {
              invocation_id: { type: 'string', description: 'engine-assigned; what engine::invocations::cancel takes, and the id the serving worker knows the call by' },
              function_id: STRING,
              namespace: STRING,
              worker: { ...NULLABLE_STRING, description: 'worker id serving the call; null while it waits in the engine' },
              worker_name: NULLABLE_STRING,
              caller: { ...NULLABLE_STRING, description: 'worker id of the caller; null for the engine (HTTP routes, cron, queues, inject)' },
              caller_name: NULLABLE_STRING,
              started_at: { type: 'integer', description: 'Unix milliseconds when the call entered the engine' },
              trace_id: { ...NULLABLE_STRING, description: '32 hex digits of its W3C trace' },
            },
            ['invocation_id', 'function_id', 'namespace', 'worker', 'worker_name', 'caller', 'caller_name', 'started_at', 'trace_id'],
          ),
        },
        total: { type: 'integer', minimum: 0, description: 'invocations in flight that this session may see' },
      },
      ['invocations', 'total'],
    ),
  },
  'engine::invocations::cancel': {
    request_format: object(
      {
        invocation_id: { type: 'string', description: 'an invocation_id of engine::invocations::list' },
        reason: { type: 'string', maxLength: 1024, description: 'passed to the handler and to the caller in the `cancelled` error' },
      },
      ['invocation_id'],
    ),
    response_format: object({ cancelled: { type: 'boolean', description: 'false when no such invocation is in flight (it ended, or never was)' } }, ['cancelled']),
  },
  'engine::workers::info': {
    request_format: object(
      { id: { type: 'string', description: 'worker (connection) id' }, name: STRING, namespace: { type: 'string', description: 'with name' } },
      [],
      { description: 'id, or name with an optional namespace', anyOf: [{ required: ['id'] }, { required: ['name'] }], examples: [{ name: 'svc-http' }] },
    ),
    response_format: object(
      {
        worker: { ...WORKER_DETAIL, description: 'the most recently connected match' },
        functions: { type: 'array', items: FUNCTION_SUMMARY },
        trigger_types: { type: 'array', items: TRIGGER_TYPE_SUMMARY },
        registered_triggers: { type: 'array', items: REGISTERED_TRIGGER_SUMMARY },
        matching_ids: { type: 'array', items: STRING, description: 'every connection the name matches' },
      },
      ['worker', 'functions', 'trigger_types', 'registered_triggers', 'matching_ids'],
    ),
  },
  'engine::workers::drain': {
    request_format: object({ id: { type: 'string', description: 'worker (connection) id, from engine::workers::list' } }, ['id'], {
      description: 'marks the connection draining: new calls go to the other live replicas of its functions; calling again only reads the count',
      examples: [{ id: '6f1c0d2e-8a8b-4c39-9d54-2b7f0e1a3c55' }],
    }),
    response_format: object(
      {
        id: STRING,
        draining: { type: 'boolean', const: true },
        active_invocations: { type: 'integer', minimum: 0, description: 'invocations the connection still executes; poll until 0' },
      },
      ['id', 'draining', 'active_invocations'],
    ),
  },
  'engine::workers::register': {
    request_format: object(
      {
        name: STRING,
        description: STRING,
        version: STRING,
        runtime: STRING,
        os: STRING,
        pid: { type: 'integer' },
        isolation: NULLABLE_STRING,
        namespace: { type: 'string', description: 'namespace of the connection' },
        telemetry: object({ language: STRING, project_name: STRING, framework: STRING }),
        handler_spans: object(
          {
            resource: { type: 'object', additionalProperties: { type: 'string' }, description: 'the worker\'s OpenTelemetry resource attributes' },
            payloads: { type: 'boolean', description: 'false: no payload span events' },
            payload_max_bytes: { type: ['integer', 'null'], minimum: 0, description: 'byte cap of a payload span event' },
          },
          ['resource'],
          { description: 'handler spans the engine records for this worker (docs/reference/protocol.md)' },
        ),
      },
      [],
      { description: 'the worker announce (protocol.md §3.2)' },
    ),
    response_format: object({ success: { type: 'boolean', const: true } }, ['success']),
  },
  'engine::register_trigger': {
    request_format: object(
      {
        trigger_type: STRING,
        function_id: STRING,
        config: { type: 'object', default: {}, description: 'the trigger type\'s config' },
        metadata: {},
        namespace: { type: 'string', description: 'namespace of the function' },
        trigger_namespace: { type: 'string', description: 'namespace of the trigger type' },
      },
      ['trigger_type', 'function_id'],
    ),
    response_format: object({ id: { type: 'string', description: 'the registered trigger id' } }, ['id']),
  },
  'engine::unregister_trigger': {
    request_format: object({ id: { type: 'string', description: 'registered trigger id' }, trigger_type: STRING }, ['id']),
    response_format: object({ removed: { type: 'boolean', description: 'false when no such trigger existed' } }, ['removed']),
  },
  'engine::channels::create': {
    request_format: object(
      { buffer_size: { type: 'integer', minimum: 1, maximum: 1024, default: 64, description: 'items the channel holds before it stops reading the writer (also bounded at 1 MiB)' } },
      [],
      { examples: [{}, { buffer_size: 16 }] },
    ),
    response_format: object(
      {
        writer: { ...CHANNEL_REF('write'), description: 'connect to /ws/channels/<channel_id>?key=<access_key>&dir=write on the worker listener' },
        reader: { ...CHANNEL_REF('read'), description: 'connect to /ws/channels/<channel_id>?key=<access_key>&dir=read' },
      },
      ['writer', 'reader'],
    ),
  },
}

/** Trigger types the engine provides (§11.6): their config is ignored. */
export const ENGINE_TRIGGER_FORMATS: Record<string, { trigger_request_format: FormatSchema; call_request_format: FormatSchema }> = {
  'engine::workers-available': {
    trigger_request_format: object({}, [], { description: 'ignored' }),
    call_request_format: object(
      { event: { type: 'string', enum: ['worker_connected', 'worker_metadata_updated', 'worker_disconnected'] }, worker_id: STRING },
      ['event', 'worker_id'],
    ),
  },
  'engine::functions-available': {
    trigger_request_format: object({}, [], { description: 'ignored' }),
    call_request_format: object(
      {
        event: { type: 'string', const: 'functions_changed' },
        functions: { type: 'array', items: FUNCTION_SUMMARY, description: 'every function the owner\'s session may see, all namespaces, internal ones included' },
      },
      ['event', 'functions'],
    ),
  },
}

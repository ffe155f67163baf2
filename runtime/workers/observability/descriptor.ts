/** Descriptor of the observability worker (builtins.md §12). */
import type { BuiltinDescriptor } from '../descriptor.ts'

export const OBSERVABILITY_DESCRIPTOR = {
  name: 'svc-observability',
  aliases: [],
  mode: 'mandatory',
  engineName: 'svc-observability',
  title: 'Observability',
  description: 'Collects, stores, queries and exports traces, metrics and logs',
  spec: 'builtins.md §12',
  declarationRefused:
    'svc-observability is injected by the engine and must not be declared in config.yaml; change its settings in config/svc-observability.yaml',
  configurationId: 'svc-observability',
  settingsSource: 'settings-file',
  settings: {
    type: 'object',
    properties: {
      enabled: { type: 'boolean', default: true, description: 'false stops ingest and storage; query functions return empty results' },
      service_name: { type: 'string', minLength: 1, default: 'svc', description: 'service name of engine spans and logs' },
      store: { type: 'string', enum: ['builtin', 'memory', 'none'], default: 'builtin' },
      retention_seconds: { type: 'integer', minimum: 60, default: 604800, description: 'age limit of stored spans and logs' },
      max_disk_bytes: { type: 'integer', minimum: 1, default: 1073741824, description: 'builtin store size cap' },
      memory_max_spans: { type: 'integer', minimum: 1000, default: 100000, description: 'in-memory window (both stores)' },
      memory_max_logs: { type: 'integer', minimum: 1000, default: 20000 },
      sampling_ratio: { type: 'number', minimum: 0, maximum: 1, default: 1, description: 'head sampling of traces the engine starts' },
      logs_enabled: { type: 'boolean', default: true },
      logs_console_output: { type: 'boolean', default: true, description: 'the engine prints worker log records on its console' },
      log_level: { type: 'string', enum: ['trace', 'debug', 'info', 'warn', 'error'], default: 'info' },
      attribute_value_length_limit: { type: 'integer', minimum: 64, default: 65536, description: 'UTF-8 bytes of an attribute value (of its JSON when structured) and of other sender-chosen strings; longer ones keep their start and end with …[truncated N bytes]' },
      attribute_count_limit: { type: 'integer', minimum: 0, default: 128, description: 'attributes per span, event, link, log record, resource and metric point; later ones are dropped' },
      span_event_count_limit: { type: 'integer', minimum: 0, default: 128, description: 'events per span; later ones are dropped' },
      span_link_count_limit: { type: 'integer', minimum: 0, default: 128, description: 'links per span; later ones are dropped' },
      log_body_length_limit: { type: 'integer', minimum: 64, default: 65536, description: 'UTF-8 bytes of a log body; longer ones are truncated with a marker' },
      record_size_limit: { type: 'integer', minimum: 1024, default: 262144, description: 'estimated JSON bytes of a span or log record; attributes, events and links that no longer fit are dropped (counted in dropped_*_count)' },
      exporter: { type: 'string', enum: ['memory', 'otlp', 'both'], description: 'compatibility spelling of store and otlp.enabled' },
      otlp: {
        type: 'object',
        properties: {
          enabled: { type: 'boolean', default: false },
          endpoint: { type: 'string', minLength: 1, default: '${OTEL_EXPORTER_OTLP_ENDPOINT:http://localhost:4318}' },
          protocol: { type: 'string', enum: ['http/protobuf', 'http/json', 'grpc'], default: 'http/protobuf' },
          headers: { type: 'object', additionalProperties: { type: 'string' }, default: {} },
          signals: {
            type: 'array',
            items: { type: 'string', enum: ['traces', 'metrics', 'logs'] },
            default: ['traces', 'metrics', 'logs'],
          },
        },
      },
    },
  },
  adapters: ['builtin', 'memory'],
  functions: ['engine::log::*', 'engine::logs::*', 'engine::traces::*', 'engine::metrics::list', 'engine::baggage::*', 'engine::health::check'],
  triggerTypes: ['log', 'trace'],
  runsIn: 'engine',
  implemented: true,
  listOrder: 9,
} as const satisfies BuiltinDescriptor

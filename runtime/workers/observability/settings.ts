/**
 * Settings of the observability worker (builtins.md §12.1): defaults and validation, the size
 * limits of stored telemetry (./limits.ts) and the `otlp` export block (§12.8) included.
 */
import { DEFAULT_MAX_LOG_BYTES, DEFAULT_MAX_SPAN_BYTES, MIN_WINDOW_BYTES } from '../../adapters/observability/store.ts'
import { resolveOtlpSettings, type OtlpSettings } from './otlp-settings.ts'
import { DEFAULT_TELEMETRY_LIMITS, MIN_LENGTH_LIMIT, MIN_RECORD_SIZE_LIMIT, type TelemetryLimits } from './limits.ts'

/** The severity number of each log level (§12.2): `engine::log::<level>` and `log_level`. */
export const LOG_LEVELS = { trace: 1, debug: 5, info: 9, warn: 13, error: 17 } as const

/**
 * The §12.1 settings this release acts on, defaults applied (`exporter` folded into `store`), and
 * the size limits of stored telemetry ({@link TelemetryLimits}).
 */
export interface ObservabilitySettings extends TelemetryLimits {
  enabled: boolean
  service_name: string
  store: 'builtin' | 'memory' | 'none'
  retention_seconds: number
  max_disk_bytes: number
  memory_max_spans: number
  memory_max_logs: number
  /** Bytes of spans the in-memory window holds at most (estimated, see `TelemetryStore.windowBytes`). */
  memory_max_span_bytes: number
  /** Bytes of log records the in-memory window holds at most. */
  memory_max_log_bytes: number
  sampling_ratio: number
  logs_enabled: boolean
  /** The engine prints worker log records on its console (§12.1). */
  logs_console_output: boolean
  /** Threshold of the engine's own log. */
  log_level: 'trace' | 'debug' | 'info' | 'warn' | 'error'
  /** §12.8, with `OTEL_EXPORTER_OTLP_*` filling what the block leaves out. */
  otlp: OtlpSettings
}

/**
 * Validates a settings value (§12.1) and applies the defaults.
 * @throws Error starting with the offending key (`store must be builtin, memory or none`).
 */
export function parseObservabilitySettings(value: unknown): ObservabilitySettings {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  const bool = (k: string, d: boolean): boolean => {
    if (v[k] === undefined) return d
    if (typeof v[k] !== 'boolean') throw new Error(`${k} must be a boolean`)
    return v[k]
  }
  const int = (k: string, d: number, min: number): number => {
    if (v[k] === undefined) return d
    const n = v[k]
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min) throw new Error(`${k} must be an integer ≥ ${min}`)
    return n
  }
  if (v.exporter !== undefined && v.exporter !== 'memory' && v.exporter !== 'otlp' && v.exporter !== 'both') throw new Error('exporter must be memory, otlp or both')
  const store = v.store ?? (v.exporter === 'otlp' ? 'none' : 'builtin')
  if (store !== 'builtin' && store !== 'memory' && store !== 'none') throw new Error('store must be builtin, memory or none')
  const ratio = v.sampling_ratio ?? 1
  if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) throw new Error('sampling_ratio must be a number from 0 to 1')
  const service = v.service_name ?? 'svc'
  if (typeof service !== 'string' || service === '') throw new Error('service_name must be a non-empty string')
  return {
    enabled: bool('enabled', true),
    service_name: service,
    store,
    retention_seconds: int('retention_seconds', 604800, 60),
    max_disk_bytes: int('max_disk_bytes', 1073741824, 1),
    memory_max_spans: int('memory_max_spans', 100000, 1000),
    memory_max_logs: int('memory_max_logs', 20000, 1000),
    memory_max_span_bytes: int('memory_max_span_bytes', DEFAULT_MAX_SPAN_BYTES, MIN_WINDOW_BYTES),
    memory_max_log_bytes: int('memory_max_log_bytes', DEFAULT_MAX_LOG_BYTES, MIN_WINDOW_BYTES),
    sampling_ratio: ratio,
    logs_enabled: bool('logs_enabled', true),
    logs_console_output: bool('logs_console_output', true),
    log_level: levelOf(v.log_level),
    otlp: otlpOf(v),
    attribute_value_length_limit: int('attribute_value_length_limit', DEFAULT_TELEMETRY_LIMITS.attribute_value_length_limit, MIN_LENGTH_LIMIT),
    attribute_count_limit: int('attribute_count_limit', DEFAULT_TELEMETRY_LIMITS.attribute_count_limit, 0),
    span_event_count_limit: int('span_event_count_limit', DEFAULT_TELEMETRY_LIMITS.span_event_count_limit, 0),
    span_link_count_limit: int('span_link_count_limit', DEFAULT_TELEMETRY_LIMITS.span_link_count_limit, 0),
    log_body_length_limit: int('log_body_length_limit', DEFAULT_TELEMETRY_LIMITS.log_body_length_limit, MIN_LENGTH_LIMIT),
    record_size_limit: int('record_size_limit', DEFAULT_TELEMETRY_LIMITS.record_size_limit, MIN_RECORD_SIZE_LIMIT),
  }
}

function levelOf(value: unknown): ObservabilitySettings['log_level'] {
  if (value === undefined) return 'info'
  if (typeof value === 'string' && Object.hasOwn(LOG_LEVELS, value)) return value as ObservabilitySettings['log_level']
  throw new Error('log_level must be trace, debug, info, warn or error')
}

/** The `otlp` block; the compatibility key `exporter: otlp | both` turns export on (§12.1). */
function otlpOf(v: Record<string, unknown>): OtlpSettings {
  const block = v.otlp
  if (v.exporter !== 'otlp' && v.exporter !== 'both') return resolveOtlpSettings(block)
  const base = typeof block === 'object' && block !== null && !Array.isArray(block) ? block : {}
  return resolveOtlpSettings({ enabled: true, ...base })
}

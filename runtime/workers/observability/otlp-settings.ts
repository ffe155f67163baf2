/**
 * The `otlp` settings of the observability worker (builtins.md §12.1), checked without loading the
 * exporter or OpenTelemetry: config.yaml is validated at load, `./export.ts` opens only when an
 * export is turned on.
 */

/** `otlp` settings of §12.1 after defaults and environment variables. */
export interface OtlpSettings {
  enabled: boolean
  /** Base endpoint (`http://host:4318` for HTTP, `http://host:4317` for gRPC); signal paths are added for HTTP. */
  endpoint: string
  protocol: 'http/protobuf' | 'http/json' | 'grpc'
  headers: Record<string, string>
  signals: Array<'traces' | 'metrics' | 'logs'>
}

export const PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'] as const
export const SIGNALS = ['traces', 'metrics', 'logs'] as const

/**
 * The `otlp` block of §12.1 with its defaults. `OTEL_EXPORTER_OTLP_PROTOCOL`,
 * `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_EXPORTER_OTLP_HEADERS` fill the keys the block leaves
 * out; with `grpc` and no endpoint at all the gRPC port 4317 is used.
 * @throws Error naming the key (`otlp.protocol must be http/protobuf, http/json or grpc`).
 */
export function resolveOtlpSettings(value: unknown, env: NodeJS.ProcessEnv = process.env): OtlpSettings {
  if (value !== undefined && (typeof value !== 'object' || value === null || Array.isArray(value))) throw new Error('otlp must be an object')
  const v = (value ?? {}) as Record<string, unknown>
  const enabled = v.enabled ?? false
  if (typeof enabled !== 'boolean') throw new Error('otlp.enabled must be a boolean')
  const protocol = v.protocol ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf'
  if (!PROTOCOLS.includes(protocol as never)) throw new Error('otlp.protocol must be http/protobuf, http/json or grpc')
  const given: unknown = v.endpoint ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined) ?? (protocol === 'grpc' ? 'http://localhost:4317' : 'http://localhost:4318')
  if (typeof given !== 'string' || given === '') throw new Error('otlp.endpoint must be a non-empty string')
  let endpoint: string
  try {
    endpoint = new URL(given).href.replace(/\/+$/, '')
  } catch {
    throw new Error(`otlp.endpoint must be a URL (got ${JSON.stringify(given)})`)
  }
  const headers: Record<string, string> = parseHeaderList(env.OTEL_EXPORTER_OTLP_HEADERS)
  if (v.headers !== undefined) {
    if (typeof v.headers !== 'object' || v.headers === null || Array.isArray(v.headers)) throw new Error('otlp.headers must be a map of strings')
    for (const [k, h] of Object.entries(v.headers as Record<string, unknown>)) {
      if (typeof h !== 'string') throw new Error(`otlp.headers.${k} must be a string`)
      headers[k] = h
    }
  }
  const signals = v.signals ?? [...SIGNALS]
  if (!Array.isArray(signals) || signals.some((s) => !SIGNALS.includes(s as never))) throw new Error('otlp.signals must be a list of traces, metrics, logs')
  return { enabled, endpoint, protocol: protocol as OtlpSettings['protocol'], headers, signals: [...new Set(signals)] as OtlpSettings['signals'] }
}

/** `k1=v1,k2=v2` (the `OTEL_EXPORTER_OTLP_HEADERS` format, values percent-decoded); bad members skipped. */
function parseHeaderList(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const member of (text ?? '').split(',')) {
    const eq = member.indexOf('=')
    if (eq <= 0) continue
    try {
      out[decodeURIComponent(member.slice(0, eq).trim())] = decodeURIComponent(member.slice(eq + 1).trim())
    } catch {
      // not valid percent-encoding: skipped
    }
  }
  return out
}

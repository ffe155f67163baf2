/**
 * Redaction of payloads recorded in telemetry (sdk.md §12.2): the rules live in `svc-protocol/redact`
 * (the engine records handler spans with them too); the payload settings read from the
 * environment are the SDK's.
 */
export {
  CIRCULAR,
  isSensitiveKey,
  MAX_REDACT_DEPTH,
  MAX_REDACT_NODES,
  noSensitiveKeys,
  redact,
  redactAndTruncate,
  redactAndTruncateJson,
  REDACTED_PLACEHOLDER,
  redactedJson,
  type RedactedPayload,
  safeStringify,
  TRUNCATION_SUFFIX,
  UNSERIALIZABLE,
} from 'svc-protocol/redact'

/**
 * The payload byte cap from env `SVC_TRACE_PAYLOAD_MAX_BYTES` (protocol.md §10.1): a non-negative
 * integer, else `null` (uncapped; an unparsable value counts as unset).
 */
export function resolveMaxBytesFromEnv(env: Record<string, string | undefined> = process.env): number | null {
  const raw = env['SVC_TRACE_PAYLOAD_MAX_BYTES']?.trim()
  if (raw === undefined || !/^\d+$/.test(raw)) return null
  const n = Number(raw)
  return Number.isSafeInteger(n) ? n : null
}

/** True when env `SVC_DISABLE_TRACE_PAYLOADS` is `1` or `true` (no payload span events). */
export function tracePayloadsDisabled(env: Record<string, string | undefined> = process.env): boolean {
  const raw = env['SVC_DISABLE_TRACE_PAYLOADS']?.trim().toLowerCase()
  return raw === '1' || raw === 'true'
}

/**
 * Frame decoding with the lenient rules of protocol.md §3.5: missing optional fields take their
 * defaults (`data` → null, `config` → {}, `description` → ""), `null` in an optional field counts
 * as omitted, unknown fields are ignored, and a malformed frame is reported with enough of its
 * content for the engine to owe the right reply.
 */
import type { Message } from 'svc-protocol'

export type Decoded =
  | { kind: 'message'; message: Message }
  /** Empty or whitespace-only text, or a known type the engine ignores when a worker sends it. */
  | { kind: 'ignored'; reason?: string }
  /** OTLP / MTRC / LOGS binary frame (§10.2). */
  | { kind: 'telemetry' }
  | { kind: 'malformed'; reason: string; raw: Record<string, unknown> | undefined }

const TELEMETRY_PREFIXES = new Set(['OTLP', 'MTRC', 'LOGS'])

const KNOWN_TYPES = new Set([
  'registerfunction',
  'unregisterfunction',
  'registertriggertype',
  'unregistertriggertype',
  'registertrigger',
  'unregistertrigger',
  'triggerregistrationresult',
  'invokefunction',
  'invocationresult',
  'workerregistered',
  'registrationrejected',
  'reattach',
  'registerservice',
  'ping',
  'pong',
  'error',
])

/** Decodes one WebSocket frame from a worker. Never throws. */
export function decodeFrame(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): Decoded {
  const buffer = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data)
  if (isBinary && buffer.length >= 4 && TELEMETRY_PREFIXES.has(buffer.toString('latin1', 0, 4))) {
    return { kind: 'telemetry' }
  }
  const text = buffer.toString('utf8')
  return decodeText(text)
}

export function decodeText(text: string): Decoded {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    if (text.trim() === '') return { kind: 'ignored' }
    return { kind: 'malformed', reason: `not JSON (${(err as Error).message})`, raw: undefined }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { kind: 'malformed', reason: 'frame is not a JSON object', raw: undefined }
  }
  const raw = parsed as Record<string, unknown>
  const type = raw.type
  if (typeof type !== 'string') return { kind: 'malformed', reason: 'type must be a string', raw }
  if (!KNOWN_TYPES.has(type)) return { kind: 'ignored', reason: `unknown type '${type}'` }
  const problem = normalize(type, raw)
  if (problem !== undefined) return { kind: 'malformed', reason: problem, raw }
  return { kind: 'message', message: raw as unknown as Message }
}


/** Optional fields per message type; `null` in them counts as omitted (§1 conventions). */
const INVOKE_OPTIONAL = ['invocation_id', 'metadata', 'action', 'namespace', 'traceparent', 'baggage'] as const
const RESULT_OPTIONAL = ['result', 'error', 'traceparent', 'baggage', 'function_id'] as const
const FUNCTION_OPTIONAL = ['description', 'request_format', 'response_format', 'metadata', 'invocation'] as const
const TRIGGER_TYPE_OPTIONAL = ['description', 'trigger_request_format', 'call_request_format', 'namespace'] as const
const NAMESPACE_OPTIONAL = ['namespace'] as const
const TRIGGER_OPTIONAL = ['metadata', 'namespace', 'trigger_namespace'] as const
const UNREGISTER_TRIGGER_OPTIONAL = ['trigger_type', 'function_id'] as const
const ERROR_OPTIONAL = ['error'] as const

function dropNulls(raw: Record<string, unknown>, fields: readonly string[]): void {
  for (const f of fields) if (raw[f] === null) delete raw[f]
}

function requireString(raw: Record<string, unknown>, field: string): string | undefined {
  const v = raw[field]
  if (v === undefined) return `${field} is required`
  if (typeof v !== 'string') return `${field} must be a string`
  return undefined
}

function optionalString(raw: Record<string, unknown>, field: string): string | undefined {
  const v = raw[field]
  if (v !== undefined && typeof v !== 'string') return `${field} must be a string`
  return undefined
}

function optionalObject(raw: Record<string, unknown>, field: string): string | undefined {
  const v = raw[field]
  if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) return `${field} must be an object`
  return undefined
}

/** Applies defaults in place; returns a reason when the frame is still malformed. */
function normalize(type: string, raw: Record<string, unknown>): string | undefined {
  switch (type) {
    case 'invokefunction': {
      dropNulls(raw, INVOKE_OPTIONAL)
      if (raw.data === undefined) raw.data = null
      const action = raw.action
      if (action !== undefined) {
        if (typeof action !== 'object' || action === null || Array.isArray(action)) return 'action must be an object'
        const a = action as Record<string, unknown>
        if (a.type !== 'void' && a.type !== 'enqueue') return "action.type must be 'void' or 'enqueue'"
        if (a.type === 'enqueue' && typeof a.queue !== 'string') return 'action.queue must be a string'
      }
      return (
        optionalString(raw, 'invocation_id') ??
        requireString(raw, 'function_id') ??
        optionalString(raw, 'namespace') ??
        optionalString(raw, 'traceparent') ??
        optionalString(raw, 'baggage')
      )
    }
    case 'invocationresult':
      dropNulls(raw, RESULT_OPTIONAL)
      return requireString(raw, 'invocation_id') ?? optionalString(raw, 'function_id')
    case 'registerfunction':
      dropNulls(raw, FUNCTION_OPTIONAL)
      return (
        requireString(raw, 'id') ??
        optionalString(raw, 'description') ??
        optionalObject(raw, 'metadata') ??
        optionalObject(raw, 'request_format') ??
        optionalObject(raw, 'response_format') ??
        validateInvocation(raw.invocation)
      )
    case 'unregisterfunction':
      return requireString(raw, 'id')
    case 'registertriggertype':
      dropNulls(raw, TRIGGER_TYPE_OPTIONAL)
      if (raw.description === undefined) raw.description = ''
      return requireString(raw, 'id') ?? optionalString(raw, 'description') ?? optionalString(raw, 'namespace')
    case 'unregistertriggertype':
      dropNulls(raw, NAMESPACE_OPTIONAL)
      return requireString(raw, 'id') ?? optionalString(raw, 'namespace')
    case 'registertrigger':
      dropNulls(raw, TRIGGER_OPTIONAL)
      if (raw.config === undefined || raw.config === null) raw.config = {}
      return (
        requireString(raw, 'id') ??
        requireString(raw, 'trigger_type') ??
        requireString(raw, 'function_id') ??
        optionalString(raw, 'namespace') ??
        optionalString(raw, 'trigger_namespace')
      )
    case 'unregistertrigger':
      dropNulls(raw, UNREGISTER_TRIGGER_OPTIONAL)
      return requireString(raw, 'id')
    case 'triggerregistrationresult':
      dropNulls(raw, ERROR_OPTIONAL)
      return requireString(raw, 'id')
    case 'reattach':
      return requireString(raw, 'previous_worker_id') ?? requireString(raw, 'reattach_token')
    case 'registerservice':
      return requireString(raw, 'id')
    default:
      return undefined
  }
}

function validateInvocation(value: unknown): string | undefined {
  if (value === undefined) return undefined
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'invocation must be an object'
  const v = value as Record<string, unknown>
  if (typeof v.url !== 'string') return 'invocation.url must be a string'
  if (v.method !== undefined && !['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(v.method as string)) {
    return 'invocation.method must be one of GET, POST, PUT, PATCH, DELETE'
  }
  return undefined
}

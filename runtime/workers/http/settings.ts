/**
 * Settings of the HTTP worker (builtins.md §3.1): defaults, validation and the JSON Schema the
 * worker will register with the configuration worker.
 */
import { Errors, type SvcError } from 'svc-protocol/errors'
import type { JsonSchema } from '../descriptor.ts'

/** Worker name and configuration id of the HTTP worker (builtins.md §1). */
export const HTTP_WORKER_NAME = 'svc-http'

/** CORS settings (§3.1); absent or null `cors` means no CORS headers are ever added. */
export interface CorsSettings {
  /** Exact origins; `"*"` allows any origin. */
  allowed_origins: string[]
  /** Upper case; empty means the methods routed on the path. */
  allowed_methods: string[]
  /** Empty means: echo `Access-Control-Request-Headers`. */
  allowed_headers: string[]
  allow_credentials: boolean
  /** Preflight cache lifetime, seconds. */
  max_age_seconds: number
}

/** A global middleware entry (§3.8). Only `phase: "preHandler"` entries run. */
export interface MiddlewareEntry {
  function_id: string
  phase: string
  priority: number
}

/** The effective settings of `svc-http`, every default applied (§3.1). */
export interface HttpSettings {
  /** 0–65535; 0 binds an ephemeral port. */
  port: number
  host: string
  /** Whole-request budget in ms, until response headers are sent. */
  default_timeout: number
  /** Requests processed at once; more wait for a slot. */
  concurrency_request_limit: number
  /** Largest accepted request body, bytes. */
  max_body_bytes: number
  cors: CorsSettings | null
  middleware: MiddlewareEntry[]
}

/** Defaults of every key (§3.1); they are applied on read and never written to the settings file. */
export const HTTP_SETTINGS_DEFAULTS: Readonly<HttpSettings> = Object.freeze({
  port: 3111,
  host: '127.0.0.1',
  default_timeout: 30000,
  concurrency_request_limit: 1024,
  max_body_bytes: 10 * 1024 * 1024,
  cors: null,
  middleware: [],
})

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function integer(source: Record<string, unknown>, key: string, name: string, min: number, max: number, fallback: number): number {
  const value = source[key]
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`
    throw invalid(`${name} must be an integer ${range}, got ${JSON.stringify(value)}`)
  }
  return value
}

function stringList(source: Record<string, unknown>, key: string, name: string): string[] {
  const value = source[key]
  if (value === undefined || value === null) return []
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && v !== '')) {
    throw invalid(`${name} must be an array of non-empty strings`)
  }
  return [...value] as string[]
}

function parseCors(value: unknown): CorsSettings | null {
  if (value === undefined || value === null) return null
  if (!isObject(value)) throw invalid('cors must be an object or null')
  const credentials = value.allow_credentials
  if (credentials !== undefined && credentials !== null && typeof credentials !== 'boolean') {
    throw invalid('cors.allow_credentials must be a boolean')
  }
  return {
    allowed_origins: stringList(value, 'allowed_origins', 'cors.allowed_origins'),
    allowed_methods: stringList(value, 'allowed_methods', 'cors.allowed_methods').map((m) => m.toUpperCase()),
    allowed_headers: stringList(value, 'allowed_headers', 'cors.allowed_headers'),
    allow_credentials: credentials === true,
    max_age_seconds: integer(value, 'max_age_seconds', 'cors.max_age_seconds', 0, Number.MAX_SAFE_INTEGER, 600),
  }
}

function parseMiddleware(value: unknown): MiddlewareEntry[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw invalid('middleware must be an array')
  return value.map((entry, i): MiddlewareEntry => {
    const name = `middleware[${i}]`
    if (!isObject(entry)) throw invalid(`${name} must be an object`)
    const { function_id: id, phase, priority } = entry
    if (typeof id !== 'string' || id === '') throw invalid(`${name}.function_id must be a non-empty string`)
    if (phase !== undefined && phase !== null && typeof phase !== 'string') throw invalid(`${name}.phase must be a string`)
    if (priority !== undefined && priority !== null && (typeof priority !== 'number' || !Number.isFinite(priority))) {
      throw invalid(`${name}.priority must be a number`)
    }
    return { function_id: id, phase: (phase as string | null | undefined) ?? 'preHandler', priority: (priority as number | null | undefined) ?? 0 }
  })
}

/**
 * Validates a settings value and applies the defaults of §3.1. `undefined` and `null` give the
 * defaults; a key set to `null` takes its default; unknown keys are ignored.
 *
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key, e.g.
 *   `port must be an integer from 0 to 65535, got 70000` or `middleware[0].function_id must be a non-empty string`.
 * @example parseHttpSettings({ port: 0 }).host // '127.0.0.1'
 */
export function parseHttpSettings(value: unknown): HttpSettings {
  if (value === undefined || value === null) return { ...HTTP_SETTINGS_DEFAULTS, middleware: [] }
  if (!isObject(value)) throw invalid('svc-http settings must be an object')
  const d = HTTP_SETTINGS_DEFAULTS
  const host = value.host
  if (host !== undefined && host !== null && (typeof host !== 'string' || host.trim() === '')) {
    throw invalid('host must be a non-empty string')
  }
  const max = Number.MAX_SAFE_INTEGER
  return {
    port: integer(value, 'port', 'port', 0, 65535, d.port),
    host: typeof host === 'string' ? host.trim() : d.host,
    default_timeout: integer(value, 'default_timeout', 'default_timeout', 1, 2147483647, d.default_timeout),
    concurrency_request_limit: integer(value, 'concurrency_request_limit', 'concurrency_request_limit', 1, max, d.concurrency_request_limit),
    max_body_bytes: integer(value, 'max_body_bytes', 'max_body_bytes', 1, max, d.max_body_bytes),
    cors: parseCors(value.cors),
    middleware: parseMiddleware(value.middleware),
  }
}

const stringArray = (description: string): JsonSchema => ({ type: 'array', items: { type: 'string', minLength: 1 }, default: [], description })

/**
 * JSON Schema of the `svc-http` configuration entry (§2.7, §3.1), for `configuration::register`
 * and the worker catalogue. {@link parseHttpSettings} enforces the same rules.
 */
export const HTTP_SETTINGS_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    port: { type: 'integer', minimum: 0, maximum: 65535, default: 3111, description: '0 binds an ephemeral port (shown in listen_urls)' },
    host: { type: 'string', minLength: 1, default: '127.0.0.1', description: '0.0.0.0 listens on every interface' },
    default_timeout: {
      type: 'integer',
      minimum: 1,
      maximum: 2147483647,
      default: 30000,
      description: 'ms; whole-request budget until response headers are sent, middleware and condition included',
    },
    concurrency_request_limit: { type: 'integer', minimum: 1, default: 1024, description: 'requests beyond the limit wait for a slot' },
    max_body_bytes: { type: 'integer', minimum: 1, default: 10485760, description: 'larger request bodies get 413' },
    cors: {
      type: ['object', 'null'],
      default: null,
      description: 'null: no CORS headers are ever added',
      properties: {
        allowed_origins: stringArray('exact origins; "*" allows any origin'),
        allowed_methods: stringArray('empty: the methods routed on the path'),
        allowed_headers: stringArray('empty: echo Access-Control-Request-Headers'),
        allow_credentials: { type: 'boolean', default: false },
        max_age_seconds: { type: 'integer', minimum: 0, default: 600, description: 'preflight cache lifetime' },
      },
    },
    middleware: {
      type: 'array',
      default: [],
      description: 'global middleware, run in ascending priority (§3.8)',
      items: {
        type: 'object',
        required: ['function_id'],
        properties: {
          function_id: { type: 'string', minLength: 1 },
          phase: { type: 'string', default: 'preHandler', description: 'entries with another phase are ignored' },
          priority: { type: 'number', default: 0 },
        },
      },
    },
  },
}

// ---- settings, compiled ------------------------------------------------------------------------

/** The `cors` settings as a request reads them (§3.1). */
export interface CompiledCors {
  anyOrigin: boolean
  origins: Set<string>
  /** `Access-Control-Allow-Methods` value, or null to use the path's `Allow`. */
  methods: string | null
  /** `Access-Control-Allow-Headers` value, or null to echo the request's. */
  headers: string | null
  credentials: boolean
  maxAge: string
}

/** Settings plus what is derived from them once per apply. */
export interface CompiledHttpSettings {
  readonly settings: HttpSettings
  readonly cors: CompiledCors | null
  /** Global `preHandler` middleware ids in run order (ascending priority, ties in list order). */
  readonly middleware: readonly string[]
}

/**
 * Derives what requests read from validated settings, once per apply: the CORS lookups and the
 * global `preHandler` middleware in run order.
 * @example compileHttpSettings(parseHttpSettings({ port: 0 })).middleware // []
 */
export function compileHttpSettings(settings: HttpSettings): CompiledHttpSettings {
  const c = settings.cors
  const cors: CompiledCors | null = c && {
    anyOrigin: c.allowed_origins.includes('*'),
    origins: new Set(c.allowed_origins),
    methods: c.allowed_methods.length > 0 ? c.allowed_methods.join(', ') : null,
    headers: c.allowed_headers.length > 0 ? c.allowed_headers.join(', ') : null,
    credentials: c.allow_credentials,
    maxAge: String(c.max_age_seconds),
  }
  const middleware = settings.middleware
    .map((entry, index) => ({ entry, index }))
    .filter(({ entry }) => entry.phase === 'preHandler')
    .sort((a, b) => a.entry.priority - b.entry.priority || a.index - b.index)
    .map(({ entry }) => entry.function_id)
  return { settings, cors, middleware }
}

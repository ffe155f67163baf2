/**
 * Settings of the database worker (builtins.md §10.1): validation and defaults. The JSON Schema
 * registered with the configuration worker is in ./descriptor.ts.
 */
import { Errors, type SvcError } from 'svc-protocol/errors'
import { driverOf, isLocalUrl, RESULT_LIMIT_DEFAULTS, type DriverKind, type PoolSettings, type TlsMode } from '../../adapters/database/index.ts'
import { isReservedKeyName } from '../shared/names.ts'

/** One configured database, every default applied. */
export interface DatabaseConfig {
  url: string
  driver: DriverKind
  pool: PoolSettings
  /** Default per-call timeout in ms. */
  statement_timeout_ms: number
  /** `mode` defaults to `disable` for localhost and SQLite, `require` for remote hosts. */
  tls: { mode: TlsMode; ca_file?: string }
  /** Most rows in one call's result (svc addition); default 100,000. */
  max_rows: number
  /** Most bytes of row JSON in one call's result (svc addition); default 32 MiB. */
  max_result_bytes: number
  /** SQLite: ATTACH, DETACH and VACUUM INTO allowed (svc addition); default false. */
  allow_attach: boolean
}

/** The effective settings of `database`. */
export interface DatabaseSettings {
  /** By name (`[A-Za-z0-9_-]{1,64}`, not `__proto__`, `constructor` or `prototype`), in the order configured. */
  databases: Record<string, DatabaseConfig>
}

export const POOL_DEFAULTS: PoolSettings = { max: 10, acquire_timeout_ms: 5000, idle_timeout_ms: 30000 }
export const STATEMENT_TIMEOUT_DEFAULT_MS = 30000
const NAME = /^[A-Za-z0-9_-]{1,64}$/
const MAX_MS = 2_147_483_647
/** Upper bounds of the result limits: 10 million rows, 1 GiB (far beyond any frame a caller can take). */
const MAX_ROWS_LIMIT = 10_000_000
const MAX_RESULT_BYTES_LIMIT = 1024 * 1024 * 1024
const TLS_MODES: readonly TlsMode[] = ['disable', 'require', 'verify-full']

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function integer(value: unknown, key: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw invalid(`${key} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * Validates a settings value and applies the defaults of §10.1. `undefined`, `null` and `{}` give
 * no databases; unknown keys are ignored.
 *
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key
 *   (`databases.main.pool.max must be an integer from 1 to 1000, got 0`), or `CONFIG_ERROR` for a URL
 *   with an unsupported scheme (`databases.main.url has an unsupported scheme: …`).
 * @example parseDatabaseSettings({ databases: { primary: { url: 'sqlite:./app.db' } } })
 */
export function parseDatabaseSettings(value: unknown): DatabaseSettings {
  if (value === undefined || value === null) return { databases: {} }
  if (!isObject(value)) throw invalid('database settings must be an object')
  const raw = value.databases
  if (raw === undefined || raw === null) return { databases: {} }
  if (!isObject(raw)) throw invalid('databases must be an object')
  const databases: Record<string, DatabaseConfig> = {}
  for (const [name, entry] of Object.entries(raw)) {
    if (!NAME.test(name)) throw invalid(`databases.${name} is not a valid name: use 1 to 64 of A-Z, a-z, 0-9, _ and -`)
    if (isReservedKeyName(name)) throw invalid(`databases.${name} is a reserved name: __proto__, constructor and prototype cannot name a database`)
    const key = `databases.${name}`
    if (!isObject(entry)) throw invalid(`${key} must be an object`)
    if (typeof entry.url !== 'string' || entry.url === '') throw invalid(`${key}.url must be a non-empty string`)
    const driver = driverOf(entry.url, `${key}.url`)
    const pool = entry.pool ?? {}
    if (!isObject(pool)) throw invalid(`${key}.pool must be an object`)
    const tls = entry.tls ?? {}
    if (!isObject(tls)) throw invalid(`${key}.tls must be an object`)
    if (tls.mode !== undefined && tls.mode !== null && !TLS_MODES.includes(tls.mode as TlsMode)) {
      throw invalid(`${key}.tls.mode must be one of ${TLS_MODES.join(', ')}`)
    }
    if (tls.ca_file !== undefined && tls.ca_file !== null && (typeof tls.ca_file !== 'string' || tls.ca_file === '')) {
      throw invalid(`${key}.tls.ca_file must be a non-empty string`)
    }
    const mode = (tls.mode as TlsMode | undefined) ?? (driver === 'sqlite' || isLocalUrl(entry.url) ? 'disable' : 'require')
    const allowAttach = entry.allow_attach ?? false
    if (typeof allowAttach !== 'boolean') throw invalid(`${key}.allow_attach must be a boolean`)
    if (allowAttach && driver !== 'sqlite') throw invalid(`${key}.allow_attach applies to SQLite databases only`)
    databases[name] = {
      url: entry.url,
      driver,
      pool: {
        max: integer(pool.max, `${key}.pool.max`, 1, 1000, POOL_DEFAULTS.max),
        acquire_timeout_ms: integer(pool.acquire_timeout_ms, `${key}.pool.acquire_timeout_ms`, 1, MAX_MS, POOL_DEFAULTS.acquire_timeout_ms),
        idle_timeout_ms: integer(pool.idle_timeout_ms, `${key}.pool.idle_timeout_ms`, 0, MAX_MS, POOL_DEFAULTS.idle_timeout_ms),
      },
      statement_timeout_ms: integer(entry.statement_timeout_ms, `${key}.statement_timeout_ms`, 1, MAX_MS, STATEMENT_TIMEOUT_DEFAULT_MS),
      tls: typeof tls.ca_file === 'string' ? { mode, ca_file: tls.ca_file } : { mode },
      max_rows: integer(entry.max_rows, `${key}.max_rows`, 1, MAX_ROWS_LIMIT, RESULT_LIMIT_DEFAULTS.maxRows),
      max_result_bytes: integer(entry.max_result_bytes, `${key}.max_result_bytes`, 1, MAX_RESULT_BYTES_LIMIT, RESULT_LIMIT_DEFAULTS.maxBytes),
      allow_attach: allowAttach,
    }
  }
  return { databases }
}

/**
 * Payload validation of the `database::*` functions (builtins.md §2.1, §10.2): `sql`, `params`,
 * `timeout_ms`, `statements` and `isolation`. Every failure is `INVALID_ARGUMENTS` naming the field.
 */
import { Errors, type SvcError } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { firstKeyword, toParameter, type Isolation, type Parameter, type Statement } from '../../adapters/database/index.ts'
import type { DriverKind } from '../../adapters/database/index.ts'

export type Payload = Record<string, unknown>

/** Statements that control transactions, refused outside `database::transaction` (§10.2). */
const TRANSACTION_CONTROL = new Set(['BEGIN', 'COMMIT', 'ROLLBACK', 'SAVEPOINT', 'RELEASE', 'START', 'END', 'ABORT'])
const ISOLATIONS: readonly Isolation[] = ['read_committed', 'repeatable_read', 'serializable']
const MAX_TIMEOUT_MS = 2_147_483_647

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

/** The payload as an object; a missing payload reads as `{}`. */
export function payloadOf(data: unknown): Payload {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw invalid('payload must be an object')
  return data as Payload
}

/** `db` when given: a non-empty string. */
export function dbOf(p: Payload): string | undefined {
  const db = p.db
  if (db === undefined || db === null) return undefined
  if (typeof db !== 'string' || db === '') throw invalid('db must be a non-empty string')
  return db
}

/** `timeout_ms` when given: an integer from 1 to 2147483647. */
export function timeoutOf(p: Payload): number | undefined {
  const value = p.timeout_ms
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw invalid(`timeout_ms must be an integer from 1 to ${MAX_TIMEOUT_MS}`)
  }
  return value
}

/** `isolation` when given: `read_committed`, `repeatable_read` or `serializable`. */
export function isolationOf(p: Payload): Isolation | undefined {
  const value = p.isolation
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || !ISOLATIONS.includes(value as Isolation)) throw invalid(`isolation must be one of ${ISOLATIONS.join(', ')}`)
  return value as Isolation
}

/**
 * `{sql, params?}` as a statement for `driver`: `sql` a non-empty string that is not
 * transaction control; `params` a JSON array or a string holding one, mapped per §10.3.
 * `field` prefixes messages (`statements[2].sql is required`).
 */
export function statementOf(p: Payload, driver: DriverKind, functionId: string, field = ''): Statement {
  const sql = p.sql
  if (sql === undefined || sql === null) throw invalid(`${field}sql is required`)
  if (typeof sql !== 'string' || sql.trim() === '') throw invalid(`${field}sql must be a non-empty string`)
  const keyword = firstKeyword(sql)
  if (keyword === '') throw invalid(`${field}sql holds no statement`)
  if (TRANSACTION_CONTROL.has(keyword)) throw invalid(`${field}sql: ${keyword} is not allowed in ${functionId}; use database::transaction`)
  return { sql, params: paramsOf(p.params, driver, `${field}params`) }
}

function paramsOf(value: unknown, driver: DriverKind, field: string): Parameter[] {
  if (value === undefined || value === null) return []
  let list = value
  if (typeof value === 'string') {
    try {
      list = jsonParse(value) as typeof list
    } catch {
      throw invalid(`${field} must be a JSON array`)
    }
  }
  if (!Array.isArray(list)) throw invalid(`${field} must be an array`)
  const dialect = { booleansAsIntegers: driver === 'sqlite' }
  return list.map((item, index) => {
    try {
      return toParameter(item, dialect)
    } catch {
      throw invalid(`${field}[${index}] cannot be written as JSON (nested too deeply)`)
    }
  })
}

/** `statements`: a non-empty array of `{sql, params?}`. */
export function statementsOf(p: Payload, driver: DriverKind): Statement[] {
  const list = p.statements
  if (list === undefined || list === null) throw invalid('statements is required')
  if (!Array.isArray(list) || list.length === 0) throw invalid('statements must be a non-empty array')
  return list.map((item, index) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw invalid(`statements[${index}] must be an object`)
    return statementOf(item as Payload, driver, 'database::transaction', `statements[${index}].`)
  })
}

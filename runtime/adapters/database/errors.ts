/**
 * Errors of the SQL drivers (builtins.md §10.4), shared by every implementation.
 */
import { Codes, Errors, SvcError } from 'svc-protocol/errors'
import type { DriverFailure, TransactionError } from './types.ts'

const FAILURE = Symbol('driverFailure')

/** `DRIVER_ERROR` `<driver code>: <driver message>`, keeping both parts for the transaction result. */
export function driverError(driverCode: string, driverMessage: string): SvcError {
  const error = Errors.driverError(driverCode, driverMessage)
  Object.defineProperty(error, FAILURE, { value: { driverCode, driverMessage } satisfies DriverFailure })
  return error
}

/** The driver code and message of a {@link driverError}, undefined for any other error. */
export function driverFailureOf(error: unknown): DriverFailure | undefined {
  return typeof error === 'object' && error !== null ? ((error as Record<symbol, DriverFailure | undefined>)[FAILURE] ?? undefined) : undefined
}

/** The `error` object of a rolled-back transaction (§10.2). */
export function transactionErrorOf(error: unknown): TransactionError {
  const failure = driverFailureOf(error)
  if (failure) return { code: Codes.DriverError, driver_code: failure.driverCode, message: failure.driverMessage }
  if (error instanceof SvcError) return { code: error.code, message: error.message }
  return { code: Codes.DriverError, message: String((error as Error)?.message ?? error) }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'PROTOCOL_CONNECTION_LOST'])

/**
 * Why a connection failed (§10.4 `CONNECTION_FAILED`): `tls` for certificate and TLS handshake
 * errors, `auth` for the given authentication codes, else `network`.
 */
export function connectionCause(error: unknown, authCodes: ReadonlySet<string>): 'network' | 'auth' | 'tls' {
  const e = error as { code?: unknown; message?: unknown } | null
  const code = typeof e?.code === 'string' || typeof e?.code === 'number' ? String(e.code) : ''
  const message = typeof e?.message === 'string' ? e.message : ''
  if (authCodes.has(code)) return 'auth'
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HANDSHAKE_NO_SSL)/.test(code) || /\b(SSL|TLS|certificate|secure connection)\b/i.test(message)) return 'tls'
  return 'network'
}

/** True when a driver error means the connection itself broke (not the statement). */
export function isNetworkError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && NETWORK_CODES.has(code)
}

/** A message of something thrown, never `[object Object]`. */
export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message
  return typeof error === 'string' ? error : JSON.stringify(error) ?? String(error)
}

/**
 * Settings of the stream worker (builtins.md §6.1): defaults and validation. The JSON Schema is
 * the descriptor's (./descriptor.ts).
 */
import { parseStreamAdapterEntry, type StreamAdapterSpec } from '../../adapters/stream/index.ts'
import { Errors, type SvcError } from 'svc-protocol/errors'
import { STREAM_DESCRIPTOR } from './descriptor.ts'

/** The effective settings of `svc-stream`, every default applied (§6.1). */
export interface StreamSettings {
  /** Client WebSocket port, 0–65535; 0 binds an ephemeral port. Default 3112. */
  port: number
  /** Default `127.0.0.1`. */
  host: string
  /** Function called before each upgrade (§6.6); null: every connection is accepted. */
  auth_function: string | null
  /** Budget of one auth call, ms. Default 10 000. */
  auth_timeout_ms: number
  /** Unsent messages a client may have before it is closed with 1013. Default 1024. */
  client_buffer_messages: number
  /**
   * Unsent bytes (UTF-8 of its frames: ws's buffer, the client's queue, frames held until `sync`)
   * a client may have before it is closed with 1013. Default {@link DEFAULT_CLIENT_BUFFER_BYTES}.
   */
  client_buffer_bytes: number
  /** Largest accepted JSON encoding of an item, UTF-8 bytes; null (default): no limit. */
  max_item_bytes: number | null
  /** Canonical adapter entry. Default `{name: "builtin"}`; `memory` and `redis` (shared by every engine on one server) are the others. */
  adapter: StreamAdapterSpec
}

/**
 * Default `client_buffer_bytes`, 16 MiB: a reading client on a slow link catches up with a burst of
 * large events or a few `sync`s of 1 MiB groups, while a client that stopped reading is closed after
 * about 16 such syncs instead of holding hundreds (800 joins of a 1 MiB group held ~870 MiB).
 */
export const DEFAULT_CLIENT_BUFFER_BYTES = 16 * 1024 * 1024

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

function integer(source: Record<string, unknown>, key: string, min: number, max: number, fallback: number): number {
  const value = source[key]
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`
    throw invalid(`${key} must be an integer ${range}, got ${JSON.stringify(value)}`)
  }
  return value
}

/**
 * Validates a settings value and applies the defaults of §6.1. `undefined`/`null` give the
 * defaults; a key set to `null` takes its default; unknown top-level keys are ignored.
 *
 * @throws SvcError `INVALID_ARGUMENTS` whose message starts with the offending key, e.g.
 *   `port must be an integer from 0 to 65535, got 70000`.
 * @example parseStreamSettings({ port: 0 }).client_buffer_messages // 1024
 */
export function parseStreamSettings(value: unknown): StreamSettings {
  if (value === undefined || value === null) value = {}
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('svc-stream settings must be an object')
  const source = value as Record<string, unknown>

  const host = source.host ?? '127.0.0.1'
  if (typeof host !== 'string' || host === '') throw invalid(`host must be a non-empty string, got ${JSON.stringify(host)}`)
  const auth = source.auth_function ?? null
  if (auth !== null && (typeof auth !== 'string' || auth === '')) {
    throw invalid(`auth_function must be a non-empty string or null, got ${JSON.stringify(auth)}`)
  }
  const max = source.max_item_bytes
  if (max !== undefined && max !== null && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)) {
    throw invalid(`max_item_bytes must be an integer >= 1 or null, got ${JSON.stringify(max)}`)
  }
  let adapter: StreamAdapterSpec
  try {
    adapter = parseStreamAdapterEntry(source.adapter)
  } catch (error) {
    throw invalid((error as Error).message)
  }
  return {
    port: integer(source, 'port', 0, 65535, 3112),
    host,
    auth_function: auth as string | null,
    auth_timeout_ms: integer(source, 'auth_timeout_ms', 1, Number.MAX_SAFE_INTEGER, 10_000),
    client_buffer_messages: integer(source, 'client_buffer_messages', 1, Number.MAX_SAFE_INTEGER, 1024),
    client_buffer_bytes: integer(source, 'client_buffer_bytes', 1, Number.MAX_SAFE_INTEGER, DEFAULT_CLIENT_BUFFER_BYTES),
    max_item_bytes: (max as number | null | undefined) ?? null,
    adapter,
  }
}

/** JSON Schema of the `svc-stream` configuration entry (§2.7, §6.1). */
export const STREAM_SETTINGS_SCHEMA = STREAM_DESCRIPTOR.settings

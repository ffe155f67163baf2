/**
 * The functions of the state worker (builtins.md §4.2): `state::get`, `::set`, `::delete`,
 * `::update`, `::list`, `::list_keys`, `::list_entries` and `::list_groups`. Payloads are
 * validated here (§2.1); storage, update operations (§5) and the `max_value_bytes` check happen in
 * the adapter, reached through the worker's {@link AdapterSlots} (an operation finishes on the
 * adapter it started on, §2.9).
 */
import type { FormatSchema } from 'svc-protocol'
import { Errors, SvcError } from 'svc-protocol/errors'
import type { StateAdapter, StateWriteOptions } from '../../adapters/state/index.ts'
import type { InvocationContext, LocalFunctionOptions, LocalWorker } from '../../engine/types.ts'
import { assertUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOpError } from '../../update-ops/types.ts'
import type { AdapterSlots } from '../shared/adapter-slots.ts'
import { traceOriginOf } from '../shared/fanout.ts'
import { CHANGE_RESULT, DELETE_RESULT, pageResult, UPDATE_RESULT } from '../shared/formats.ts'

/** `limit` of `list_keys` / `list_entries` when omitted, and its maximum (§4.2). */
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 1000

type Payload = Record<string, unknown>

/** What the functions need of the worker. */
export interface StateHost {
  /** The worker's adapters; every operation runs on the current one. */
  readonly adapters: AdapterSlots<StateAdapter>
  /** `max_value_bytes` of the settings in effect (§4.1); null: no limit. */
  maxValueBytes(): number | null
}

/**
 * Registers the `state::*` functions on `worker`.
 * @example registerStateFunctions(context.worker, { adapters, maxValueBytes: () => 1048576 })
 */
export function registerStateFunctions(worker: LocalWorker, host: StateHost): void {
  const functions = new StateFunctions(host)
  const scopeKey = { scope: { type: 'string' }, key: { type: 'string' } }
  const page: FormatSchema = {
    type: 'object',
    required: ['scope'],
    properties: {
      scope: { type: 'string' },
      prefix: { type: 'string' },
      offset: { type: 'integer', minimum: 0, default: 0 },
      limit: { type: 'integer', minimum: 0, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
    },
  }
  const register = (id: string, handler: (p: Payload, c: InvocationContext) => unknown, options: LocalFunctionOptions) =>
    worker.registerFunction(id, (data, context) => handler(payloadOf(data), context), options)

  register('state::get', (p) => functions.get(p), {
    description: 'Read a value; no result when the key is absent',
    request_format: { type: 'object', required: ['scope', 'key'], properties: scopeKey },
    response_format: { description: 'the stored value; no result when the key is absent' },
  })
  register('state::set', (p, c) => functions.set(p, c), {
    description: 'Store a value; returns {old_value, new_value}',
    request_format: { type: 'object', required: ['scope', 'key', 'value'], properties: { ...scopeKey, value: {} } },
    response_format: CHANGE_RESULT,
  })
  register('state::delete', (p, c) => functions.delete(p, c), {
    description: 'Remove a key; returns {old_value}, or {} when it was absent',
    request_format: { type: 'object', required: ['scope', 'key'], properties: scopeKey },
    response_format: DELETE_RESULT,
  })
  register('state::update', (p, c) => functions.update(p, c), {
    description: 'Apply update operations atomically; returns {old_value, new_value, errors?}',
    request_format: {
      type: 'object',
      required: ['scope', 'key', 'ops'],
      properties: { ...scopeKey, ops: { type: 'array', items: { type: 'object', required: ['type'] } } },
    },
    response_format: UPDATE_RESULT,
  })
  register('state::list', (p) => functions.list(p), {
    description: "The scope's values ordered by key",
    request_format: { type: 'object', required: ['scope'], properties: { scope: { type: 'string' } } },
    response_format: { type: 'array', description: "the scope's values, ordered by key", items: {} },
  })
  register('state::list_keys', (p) => functions.listKeys(p), {
    description: "A page of the scope's keys: {keys, total, offset, limit}",
    request_format: page,
    response_format: pageResult('keys', { type: 'string' }),
  })
  register('state::list_entries', (p) => functions.listEntries(p), {
    description: "A page of the scope's entries: {entries: [{key, value}], total, offset, limit}",
    request_format: page,
    response_format: pageResult('entries', { type: 'object', required: ['key', 'value'], properties: { key: { type: 'string' }, value: {} } }),
  })
  register('state::list_groups', () => functions.listGroups(), {
    description: 'The scopes that hold at least one key: {groups}',
    request_format: { type: 'object', properties: {} },
    response_format: { type: 'object', required: ['groups'], properties: { groups: { type: 'array', items: { type: 'string' } } } },
  })
}

/** The handlers, one per function. */
class StateFunctions {
  private readonly host: StateHost

  constructor(host: StateHost) {
    this.host = host
  }

  get(p: Payload): Promise<unknown> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    return this.host.adapters.run('state::get', (adapter) => adapter.get(scope, key))
  }

  async set(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown }> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    const value = p.value !== undefined ? p.value : p.data
    if (value === undefined) throw invalid('value is required')
    const options = this.writeOptions(context)
    const old = await this.host.adapters.run('state::set', (adapter) => adapter.set(scope, key, value, options))
    return { old_value: old ?? null, new_value: value }
  }

  async delete(p: Payload, context: InvocationContext): Promise<{ old_value?: unknown }> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    const origin = traceOriginOf(context)
    const old = await this.host.adapters.run('state::delete', (adapter) => adapter.delete(scope, key, origin ? { origin } : {}))
    return old === undefined ? {} : { old_value: old }
  }

  async update(
    p: Payload,
    context: InvocationContext,
  ): Promise<{ old_value: unknown; new_value: unknown; errors?: UpdateOpError[] }> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    if (p.ops === undefined || p.ops === null) throw invalid('ops is required')
    const ops = p.ops
    // Refuse a malformed ops list before touching storage.
    assertUpdateOps(ops)
    const options = this.writeOptions(context)
    const { old_value, new_value, errors } = await this.host.adapters.run('state::update', (adapter) =>
      adapter.update(scope, key, ops, options),
    )
    const result: { old_value: unknown; new_value: unknown; errors?: UpdateOpError[] } = {
      old_value: old_value ?? null,
      new_value,
    }
    if (errors.length > 0) result.errors = errors
    return result
  }

  /** Origin and `max_value_bytes` (§4.1) of a write. */
  private writeOptions(context: InvocationContext): StateWriteOptions {
    const options: StateWriteOptions = { maxValueBytes: this.host.maxValueBytes() }
    const origin = traceOriginOf(context)
    if (origin) options.origin = origin
    return options
  }

  list(p: Payload): Promise<unknown[]> {
    const scope = requiredString(p, 'scope')
    return this.host.adapters.run('state::list', (adapter) => adapter.list(scope))
  }

  async listKeys(p: Payload): Promise<{ keys: string[]; total: number; offset: number; limit: number }> {
    const { scope, request } = pageOf(p)
    const page = await this.host.adapters.run('state::list_keys', (adapter) => adapter.listKeys(scope, request))
    return { keys: page.items, total: page.total, offset: request.offset, limit: request.limit }
  }

  async listEntries(
    p: Payload,
  ): Promise<{ entries: Array<{ key: string; value: unknown }>; total: number; offset: number; limit: number }> {
    const { scope, request } = pageOf(p)
    const page = await this.host.adapters.run('state::list_entries', (adapter) => adapter.listEntries(scope, request))
    return { entries: page.items, total: page.total, offset: request.offset, limit: request.limit }
  }

  async listGroups(): Promise<{ groups: string[] }> {
    return { groups: await this.host.adapters.run('state::list_groups', (adapter) => adapter.listGroups()) }
  }
}

// ---------------------------------------------------------------------------------------------
// Payload validation (builtins.md §2.1)

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

function payloadOf(data: unknown): Payload {
  // A missing payload reads as {} so that `state::list_groups` may be called without one.
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw invalid('payload must be an object')
  return data as Payload
}

function requiredString(p: Payload, field: string): string {
  const value = p[field]
  if (value === undefined || value === null) throw invalid(`${field} is required`)
  if (typeof value !== 'string' || value === '') throw invalid(`${field} must be a non-empty string`)
  return value
}

function optionalInteger(p: Payload, field: string, fallback: number, max: number): number {
  const value = p[field]
  if (value === undefined || value === null) return fallback
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
    throw invalid(
      max === Number.MAX_SAFE_INTEGER
        ? `${field} must be a non-negative integer`
        : `${field} must be an integer from 0 to ${max}`,
    )
  }
  return value
}

function pageOf(p: Payload): { scope: string; request: { prefix?: string; offset: number; limit: number } } {
  const scope = requiredString(p, 'scope')
  const prefix = p.prefix
  if (prefix !== undefined && prefix !== null && typeof prefix !== 'string') throw invalid('prefix must be a string')
  const request: { prefix?: string; offset: number; limit: number } = {
    offset: optionalInteger(p, 'offset', 0, Number.MAX_SAFE_INTEGER),
    limit: optionalInteger(p, 'limit', DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT),
  }
  if (typeof prefix === 'string' && prefix !== '') request.prefix = prefix
  return { scope, request }
}


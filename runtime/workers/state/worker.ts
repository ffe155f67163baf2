/**
 * The built-in state worker `svc-state` (builtins.md §4): a key-value store addressed by scope
 * and key, with the `state::*` functions and the `state` trigger type.
 *
 * The worker validates payloads and fans changes out to triggers (./triggers.ts); storage,
 * update operations (§5) and the `max_value_bytes` check happen in the adapter
 * (runtime/adapters/state/), so that a shared store applies them atomically where the data lives.
 * Change events come from the adapter's change feed rather than from the handlers, so that an
 * adapter shared by several engines (redis) reports writes made elsewhere too.
 */
import {
  describeStateAdapter,
  openStateAdapter,
  stateAdapterIdentity,
  type StateAdapter,
  type StateWriteOptions,
  type StateWriteOrigin,
} from '../../adapters/state/index.ts'
import type { FormatSchema } from 'svc-protocol'
import { CHANGE_RESULT, DELETE_RESULT, pageResult, UPDATE_RESULT } from '../shared/formats.ts'
import type { BuiltinContext, BuiltinWorker, InvocationContext, LocalFunctionOptions } from '../../engine/types.ts'
import { Errors, SvcError } from 'svc-protocol/errors'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { traceOriginOf } from '../shared/fanout.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { assertUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOpError } from '../../update-ops/types.ts'
import { parseStateSettings, type StateSettings } from './settings.ts'
import { StateTriggers } from './triggers.ts'

export const STATE_WORKER_NAME = 'svc-state'

/** `limit` of `list_keys` / `list_entries` when omitted, and its maximum (§4.2). */
export const DEFAULT_PAGE_LIMIT = 100
export const MAX_PAGE_LIMIT = 1000

type Payload = Record<string, unknown>

/**
 * `svc-state`. Settings (§4.1) take effect only through {@link StateWorker.applySettings}, which
 * validates the whole value first and either applies all of it or throws and keeps the previous
 * settings. An adapter change opens the new adapter first; operations already running finish on
 * the old one, which is closed once they have.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new StateWorker()] })
 * await engine.start()
 * await engine.inject({ function_id: 'state::set', data: { scope: 'users', key: 'u1', value: { name: 'Al' } } })
 */
export class StateWorker implements BuiltinWorker {
  readonly name = STATE_WORKER_NAME
  private context: BuiltinContext | null = null
  private settings: StateSettings | null = null
  private adapters: AdapterSlots<StateAdapter> | null = null
  private triggers: StateTriggers | null = null
  /** Applies run one after another and keep the previous settings on failure (§2.7). */
  private applier: SettingsApplier<StateSettings> | null = null

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.adapters = new AdapterSlots<StateAdapter>(STATE_WORKER_NAME, context.log)
    this.applier = createSettingsApplier<StateSettings>({
      worker: STATE_WORKER_NAME,
      log: context.log,
      parse: parseStateSettings,
      apply: (next) => this.apply(next),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    this.triggers = new StateTriggers({
      worker: context.worker,
      log: context.log,
      timeoutMs: context.internalInvocationTimeoutMs,
      ...(context.telemetry ? { telemetry: context.telemetry } : {}),
    })
    await this.applySettings(settings)
    this.registerFunctions()
    context.worker.registerTriggerType(
      {
        id: 'state',
        description: 'Fires on every change of a state key (state:created, state:updated, state:deleted)',
        trigger_request_format: {
          type: 'object',
          properties: {
            scope: { type: 'string', description: 'exact scope; absent matches every scope' },
            key: { type: 'string', description: 'exact key; absent matches every key' },
            condition_function_id: { type: 'string' },
          },
        },
        call_request_format: {
          type: 'object',
          required: ['type', 'message_type', 'event_type', 'scope', 'key', 'old_value', 'new_value'],
          properties: {
            type: { type: 'string' },
            message_type: { type: 'string' },
            event_type: { type: 'string', enum: ['state:created', 'state:updated', 'state:deleted'] },
            scope: { type: 'string' },
            key: { type: 'string' },
            old_value: {},
            new_value: {},
          },
        },
      },
      this.triggers,
    )
  }

  /**
   * Validates and applies settings (§4.1). Serialised with other applies.
   * @throws SvcError `INVALID_ARGUMENTS` for invalid settings, `STORAGE_ERROR` when the new
   *   adapter cannot be opened; in both cases the previous settings stay in effect. A `redis`
   *   adapter whose server is unreachable still opens (it logs a warning and answers
   *   `ADAPTER_UNAVAILABLE` until the server is back, builtins.md §13.4).
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${STATE_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.triggers?.stop()
    await this.adapters?.close()
  }

  private async apply(next: StateSettings): Promise<void> {
    const context = this.context!
    const adapterContext = { dataDir: context.dataDir, log: context.log }
    const identity = stateAdapterIdentity(next.adapter, adapterContext)

    if (this.adapters!.identity !== identity) {
      let adapter: StateAdapter
      try {
        // Opened before anything changes: on failure the old adapter stays in use (§2.9).
        adapter = await openStateAdapter(next.adapter, adapterContext)
      } catch (error) {
        throw withSettingsKey(Errors.storageError(`cannot open the ${next.adapter.name} state adapter: ${(error as Error).message}`, error), 'adapter')
      }
      const triggers = this.triggers!
      this.adapters!.install(adapter, identity, (opened) => opened.subscribe((change) => triggers.publish(change)))
      context.log.info(`${STATE_WORKER_NAME} uses the ${next.adapter.name} adapter`, {
        adapter: describeStateAdapter(next.adapter, adapterContext),
      })
    }
    this.triggers!.setEnabled(next.triggers_enabled)
    this.settings = next
  }

  /** Runs one adapter operation; failures other than SvcError are `STORAGE_ERROR` naming the function. */
  private withAdapter<T>(functionId: string, operation: (adapter: StateAdapter) => Promise<T>): Promise<T> {
    return this.adapters!.run(functionId, operation)
  }

  private registerFunctions(): void {
    const worker = this.context!.worker
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

    register('state::get', (p) => this.get(p), {
      description: 'Read a value; no result when the key is absent',
      request_format: { type: 'object', required: ['scope', 'key'], properties: scopeKey },
      response_format: { description: 'the stored value; no result when the key is absent' },
    })
    register('state::set', (p, c) => this.set(p, c), {
      description: 'Store a value; returns {old_value, new_value}',
      request_format: { type: 'object', required: ['scope', 'key', 'value'], properties: { ...scopeKey, value: {} } },
      response_format: CHANGE_RESULT,
    })
    register('state::delete', (p, c) => this.delete(p, c), {
      description: 'Remove a key; returns {old_value}, or {} when it was absent',
      request_format: { type: 'object', required: ['scope', 'key'], properties: scopeKey },
      response_format: DELETE_RESULT,
    })
    register('state::update', (p, c) => this.update(p, c), {
      description: 'Apply update operations atomically; returns {old_value, new_value, errors?}',
      request_format: {
        type: 'object',
        required: ['scope', 'key', 'ops'],
        properties: { ...scopeKey, ops: { type: 'array', items: { type: 'object', required: ['type'] } } },
      },
      response_format: UPDATE_RESULT,
    })
    register('state::list', (p) => this.list(p), {
      description: "The scope's values ordered by key",
      request_format: { type: 'object', required: ['scope'], properties: { scope: { type: 'string' } } },
      response_format: { type: 'array', description: "the scope's values, ordered by key", items: {} },
    })
    register('state::list_keys', (p) => this.listKeys(p), {
      description: "A page of the scope's keys: {keys, total, offset, limit}",
      request_format: page,
      response_format: pageResult('keys', { type: 'string' }),
    })
    register('state::list_entries', (p) => this.listEntries(p), {
      description: "A page of the scope's entries: {entries: [{key, value}], total, offset, limit}",
      request_format: page,
      response_format: pageResult('entries', { type: 'object', required: ['key', 'value'], properties: { key: { type: 'string' }, value: {} } }),
    })
    register('state::list_groups', () => this.listGroups(), {
      description: 'The scopes that hold at least one key: {groups}',
      request_format: { type: 'object', properties: {} },
      response_format: { type: 'object', required: ['groups'], properties: { groups: { type: 'array', items: { type: 'string' } } } },
    })
  }

  private get(p: Payload): Promise<unknown> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    return this.withAdapter('state::get', (adapter) => adapter.get(scope, key))
  }

  private async set(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown }> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    const value = p.value !== undefined ? p.value : p.data
    if (value === undefined) throw invalid('value is required')
    const options = this.writeOptions(context)
    const old = await this.withAdapter('state::set', (adapter) => adapter.set(scope, key, value, options))
    return { old_value: old ?? null, new_value: value }
  }

  private async delete(p: Payload, context: InvocationContext): Promise<{ old_value?: unknown }> {
    const scope = requiredString(p, 'scope')
    const key = requiredString(p, 'key')
    const origin = traceOriginOf(context)
    const old = await this.withAdapter('state::delete', (adapter) => adapter.delete(scope, key, origin ? { origin } : {}))
    return old === undefined ? {} : { old_value: old }
  }

  private async update(
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
    const { old_value, new_value, errors } = await this.withAdapter('state::update', (adapter) =>
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
    const options: StateWriteOptions = { maxValueBytes: this.settings?.max_value_bytes ?? null }
    const origin = traceOriginOf(context)
    if (origin) options.origin = origin
    return options
  }

  private list(p: Payload): Promise<unknown[]> {
    const scope = requiredString(p, 'scope')
    return this.withAdapter('state::list', (adapter) => adapter.list(scope))
  }

  private async listKeys(p: Payload): Promise<{ keys: string[]; total: number; offset: number; limit: number }> {
    const { scope, request } = pageOf(p)
    const page = await this.withAdapter('state::list_keys', (adapter) => adapter.listKeys(scope, request))
    return { keys: page.items, total: page.total, offset: request.offset, limit: request.limit }
  }

  private async listEntries(
    p: Payload,
  ): Promise<{ entries: Array<{ key: string; value: unknown }>; total: number; offset: number; limit: number }> {
    const { scope, request } = pageOf(p)
    const page = await this.withAdapter('state::list_entries', (adapter) => adapter.listEntries(scope, request))
    return { entries: page.items, total: page.total, offset: request.offset, limit: request.limit }
  }

  private async listGroups(): Promise<{ groups: string[] }> {
    return { groups: await this.withAdapter('state::list_groups', (adapter) => adapter.listGroups()) }
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


/**
 * The functions of the stream worker (builtins.md §6.2): `stream::get`, `::set`, `::delete`,
 * `::update`, `::list`, `::list_groups`, `::list_all` and `::send`. Payloads are validated here
 * (§2.1); storage, update operations (§5) and the `max_item_bytes` check happen in the adapter,
 * reached through the worker's {@link AdapterSlots} (an operation finishes on the adapter it
 * started on, §2.9). A custom stream (§6.2) is served by its `stream::<op>(<name>)` functions
 * instead, and the change events of its writes are built from their results.
 */
import type { StreamAdapter, StreamWriteOptions } from '../../adapters/stream/index.ts'
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import type { InvocationContext, LocalFunctionOptions, LocalWorker } from '../../engine/types.ts'
import type { AdapterSlot, AdapterSlots } from '../shared/adapter-slots.ts'
import { CHANGE_RESULT, DELETE_RESULT, NO_RESULT, UPDATE_RESULT } from '../shared/formats.ts'
import { traceOriginOf, type TraceOrigin } from '../shared/fanout.ts'
import { applyUpdateOps, assertUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'
import { checkValueSize } from '../../adapters/state/codec.ts'

type Payload = Record<string, unknown>

/** An adapter in use; client connections hold the one current when they opened (§2.9, §6.1). */
export type StreamAdapterSlot = AdapterSlot<StreamAdapter>

/** A custom stream function's answer, or `absent` when no such function is registered. */
type CustomOutcome = { found: true; result: unknown } | { found: false }

/** What the functions need of the worker. */
export interface StreamFunctionsHost {
  /** Where custom stream functions are looked up and called (§6.2). */
  readonly worker: Pick<LocalWorker, 'hasFunction' | 'invoke'>
  /** The worker's adapters; every operation runs on the current one unless given a slot. */
  readonly adapters: AdapterSlots<StreamAdapter>
  /** `max_item_bytes` of the settings in effect (§6.1), bytes of the item's JSON; null: no limit. */
  maxItemBytes(): number | null
  /**
   * Publishes the §6.3 event of a custom stream's item change to the triggers and clients;
   * `newValue` undefined means deleted.
   */
  emitItem(stream: string, group: string, item: string, oldValue: unknown, newValue: unknown, origin?: TraceOrigin): void
}

/**
 * Registers the `stream::*` functions on `worker`, answered by `functions`.
 * @example registerStreamFunctions(context.worker, new StreamFunctions({ worker: context.worker, adapters, maxItemBytes: () => null, emitItem }))
 */
export function registerStreamFunctions(worker: LocalWorker, functions: StreamFunctions): void {
  const item = { stream_name: { type: 'string' }, group_id: { type: 'string' }, item_id: { type: 'string' } }
  const itemKeys = ['stream_name', 'group_id', 'item_id']
  const register = (id: string, handler: (p: Payload, c: InvocationContext) => unknown, options: LocalFunctionOptions) =>
    worker.registerFunction(id, (data, context) => handler(payloadOf(data), context), options)

  register('stream::get', (p) => functions.get(p), {
    description: "An item's data; no result when absent",
    request_format: { type: 'object', required: itemKeys, properties: item },
    response_format: { description: "the item's data; no result when absent" },
  })
  register('stream::set', (p, c) => functions.set(p, c), {
    description: 'Store an item; returns {old_value, new_value}',
    request_format: { type: 'object', required: [...itemKeys, 'data'], properties: { ...item, data: {} } },
    response_format: CHANGE_RESULT,
  })
  register('stream::delete', (p, c) => functions.delete(p, c), {
    description: 'Remove an item; returns {old_value}, or {} when absent',
    request_format: { type: 'object', required: itemKeys, properties: item },
    response_format: DELETE_RESULT,
  })
  register('stream::update', (p, c) => functions.update(p, c), {
    description: 'Apply update operations to an item; returns {old_value, new_value, errors?}',
    request_format: { type: 'object', required: [...itemKeys, 'ops'], properties: { ...item, ops: { type: 'array', items: { type: 'object', required: ['type'] } } } },
    response_format: UPDATE_RESULT,
  })
  register('stream::list', (p) => functions.list(p), {
    description: "The data of a group's items ordered by item_id",
    request_format: { type: 'object', required: ['stream_name', 'group_id'], properties: { stream_name: item.stream_name, group_id: item.group_id } },
    response_format: { type: 'array', description: "the items' data, ordered by item_id", items: {} },
  })
  register('stream::list_groups', (p) => functions.listGroups(p), {
    description: "A stream's group ids, sorted",
    request_format: { type: 'object', required: ['stream_name'], properties: { stream_name: item.stream_name } },
    response_format: { type: 'array', items: { type: 'string' } },
  })
  register('stream::list_all', () => functions.listAll(), {
    description: 'Every stream with its groups: {streams: [{stream_name, groups}], count}',
    request_format: { type: 'object', properties: {} },
    response_format: {
      type: 'object',
      required: ['streams', 'count'],
      properties: {
        streams: { type: 'array', items: { type: 'object', required: ['stream_name', 'groups'], properties: { stream_name: { type: 'string' }, groups: { type: 'array', items: { type: 'string' } } } } },
        count: { type: 'integer' },
      },
    },
  })
  register('stream::send', (p, c) => functions.send(p, c), {
    description: 'Push a transient event to the group; nothing is stored',
    request_format: {
      type: 'object',
      required: ['stream_name', 'group_id', 'type', 'data'],
      properties: { stream_name: item.stream_name, group_id: item.group_id, type: { type: 'string' }, data: {}, id: { type: 'string' } },
    },
    response_format: NO_RESULT,
  })
}

/**
 * The handlers, one per function; `get` and `list` also serve the client listener's `sync` (§6.6)
 * on the adapter the client holds.
 * @throws SvcError `INVALID_ARGUMENTS` naming the field of a malformed payload, the adapter's
 *   errors (`STORAGE_ERROR`, `ADAPTER_UNAVAILABLE`, `VALUE_TOO_LARGE`), and a custom stream
 *   function's errors unchanged.
 */
export class StreamFunctions {
  private readonly host: StreamFunctionsHost

  constructor(host: StreamFunctionsHost) {
    this.host = host
  }

  /**
   * Calls `stream::<op>(<name>)` in `default` when it is registered (§6.2 custom streams); its
   * errors pass through unchanged.
   */
  private async custom(op: string, stream: string, payload: Payload): Promise<CustomOutcome> {
    const functionId = `stream::${op}(${stream})`
    if (!this.host.worker.hasFunction(functionId)) return { found: false }
    try {
      return { found: true, result: await this.host.worker.invoke({ function_id: functionId, data: payload }) }
    } catch (error) {
      const body = errorBodyOf(error)
      if (body.code === 'function_not_found' && body.message === Errors.functionNotFound(functionId).message) return { found: false }
      throw error
    }
  }

  async get(p: Payload, slot?: StreamAdapterSlot): Promise<unknown> {
    const { stream, group, item } = itemOf(p)
    const custom = await this.custom('get', stream, p)
    if (custom.found) return custom.result ?? undefined
    return this.host.adapters.run('stream::get', (adapter) => adapter.get(stream, group, item), slot)
  }

  async set(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown }> {
    const { stream, group, item } = itemOf(p)
    const data = p.data
    if (data === undefined) throw Errors.invalidArguments('data is required')
    const custom = await this.customWrite('set', stream, p, data)
    if (custom.found) {
      const result = (custom.result ?? {}) as { old_value?: unknown; new_value?: unknown }
      this.host.emitItem(stream, group, item, result.old_value ?? null, result.new_value === undefined ? data : result.new_value, traceOriginOf(context))
      return custom.result as { old_value: unknown; new_value: unknown }
    }
    const options = this.writeOptions(context)
    const old = await this.host.adapters.run('stream::set', (adapter) => adapter.set(stream, group, item, data, options))
    return { old_value: old ?? null, new_value: data }
  }

  async delete(p: Payload, context: InvocationContext): Promise<{ old_value?: unknown }> {
    const { stream, group, item } = itemOf(p)
    const custom = await this.custom('delete', stream, p)
    if (custom.found) {
      const result = custom.result
      if (typeof result === 'object' && result !== null && 'old_value' in result) {
        this.host.emitItem(stream, group, item, (result as { old_value: unknown }).old_value, undefined, traceOriginOf(context))
      }
      return result as { old_value?: unknown }
    }
    const origin = traceOriginOf(context)
    const old = await this.host.adapters.run('stream::delete', (adapter) => adapter.delete(stream, group, item, origin ? { origin } : {}))
    return old === undefined ? {} : { old_value: old }
  }

  async update(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown; errors?: UpdateOpError[] }> {
    const { stream, group, item } = itemOf(p)
    if (p.ops === undefined || p.ops === null) throw Errors.invalidArguments('ops is required')
    const ops = p.ops
    assertUpdateOps(ops)
    const custom = await this.customUpdate(stream, group, item, ops as UpdateOp[], p, context)
    if (custom) return custom
    const options = this.writeOptions(context)
    const outcome = await this.host.adapters.run('stream::update', (adapter) => adapter.update(stream, group, item, ops as UpdateOp[], options))
    const result: { old_value: unknown; new_value: unknown; errors?: UpdateOpError[] } = { old_value: outcome.old_value ?? null, new_value: outcome.new_value }
    if (outcome.errors.length > 0) result.errors = outcome.errors
    return result
  }

  /** `stream::update` on a custom stream: read through get, apply the ops, write through set (§6.2). */
  private async customUpdate(stream: string, group: string, item: string, ops: UpdateOp[], p: Payload, context: InvocationContext) {
    const key = { stream_name: stream, group_id: group, item_id: item }
    const read = await this.custom('get', stream, key)
    if (!read.found) return null
    const { value, errors } = applyUpdateOps(read.result ?? undefined, ops)
    const written = await this.customWrite('set', stream, { ...key, data: value }, value)
    if (!written.found) throw Errors.functionNotFound(`stream::set(${stream})`)
    const answer = (written.result ?? {}) as { old_value?: unknown; new_value?: unknown }
    const oldValue = read.result === undefined ? null : read.result
    this.host.emitItem(stream, group, item, oldValue, answer.new_value === undefined ? value : answer.new_value, traceOriginOf(context))
    void p
    const result: { old_value: unknown; new_value: unknown; errors?: UpdateOpError[] } = { old_value: oldValue, new_value: answer.new_value === undefined ? value : answer.new_value }
    if (errors.length > 0) result.errors = errors
    return result
  }

  /** A custom write, after the `max_item_bytes` check (§6.1 applies to custom streams too). */
  private async customWrite(op: string, stream: string, payload: Payload, data: unknown): Promise<CustomOutcome> {
    const limit = this.host.maxItemBytes()
    if (limit !== null && limit !== undefined) {
      const text = JSON.stringify(data)
      if (text !== undefined) checkValueSize(text, limit, 'max_item_bytes')
    }
    return this.custom(op, stream, payload)
  }

  async list(p: Payload, slot?: StreamAdapterSlot): Promise<unknown[]> {
    const stream = requiredString(p, 'stream_name')
    const group = requiredString(p, 'group_id')
    const custom = await this.custom('list', stream, p)
    if (custom.found) return custom.result as unknown[]
    return this.host.adapters.run('stream::list', (adapter) => adapter.list(stream, group), slot)
  }

  async listGroups(p: Payload): Promise<string[]> {
    const stream = requiredString(p, 'stream_name')
    const custom = await this.custom('list_groups', stream, p)
    if (custom.found) return custom.result as string[]
    return this.host.adapters.run('stream::list_groups', (adapter) => adapter.listGroups(stream))
  }

  async listAll(): Promise<{ streams: Array<{ stream_name: string; groups: string[] }>; count: number }> {
    const streams = await this.host.adapters.run('stream::list_all', (adapter) => adapter.listAll())
    return { streams, count: streams.length }
  }

  async send(p: Payload, context: InvocationContext): Promise<undefined> {
    const stream = requiredString(p, 'stream_name')
    const group = requiredString(p, 'group_id')
    const type = requiredString(p, 'type')
    if (p.data === undefined) throw Errors.invalidArguments('data is required')
    const id = p.id
    if (id !== undefined && id !== null && (typeof id !== 'string' || id === '')) throw Errors.invalidArguments('id must be a non-empty string')
    const event = { stream_name: stream, group_id: group, id: typeof id === 'string' ? wellFormed(id) : null, type, data: p.data, origin: traceOriginOf(context) }
    await this.host.adapters.run('stream::send', (adapter) => adapter.publish(event))
    return undefined
  }

  private writeOptions(context: InvocationContext): StreamWriteOptions {
    const options: StreamWriteOptions = { maxItemBytes: this.host.maxItemBytes() }
    const origin = traceOriginOf(context)
    if (origin) options.origin = origin
    return options
  }
}

// ---------------------------------------------------------------------------------------------
// Payload validation (builtins.md §2.1)

function payloadOf(data: unknown): Payload {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidArguments('payload must be an object')
  return data as Payload
}

function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed()
}

function requiredString(p: Payload, field: string): string {
  const value = p[field]
  if (value === undefined || value === null) throw Errors.invalidArguments(`${field} is required`)
  if (typeof value !== 'string' || value === '') throw Errors.invalidArguments(`${field} must be a non-empty string`)
  return wellFormed(value)
}

function itemOf(p: Payload): { stream: string; group: string; item: string } {
  return { stream: requiredString(p, 'stream_name'), group: requiredString(p, 'group_id'), item: requiredString(p, 'item_id') }
}


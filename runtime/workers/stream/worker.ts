/**
 * The built-in stream worker `svc-stream` (builtins.md §6): the `stream::*` functions, the
 * `stream`, `stream:join` and `stream:leave` trigger types, and the client WebSocket (./clients.ts).
 *
 * Storage sits behind a stream adapter (runtime/adapters/stream/); change events come from the
 * adapter's change feed, except for custom streams (§6.2), whose events are built from the results
 * their functions return. Each event goes to the `stream` triggers (ordered fan-out, §2.5) and to
 * the matching WebSocket subscriptions.
 */
import {
  describeStreamAdapter,
  openStreamAdapter,
  streamAdapterIdentity,
  type StreamAdapter,
  type StreamAdapterChange,
  type StreamWriteOptions,
} from '../../adapters/stream/index.ts'
import type { StreamChangeEvent, StreamJoinLeaveEvent } from 'svc-protocol'
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import type { BuiltinContext, BuiltinWorker, InvocationContext, LocalFunctionOptions } from '../../engine/types.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { AdapterSlots, type AdapterSlot as KitAdapterSlot } from '../shared/adapter-slots.ts'
import { ListeningServer, type ServerTimeouts } from '../shared/listening-server.ts'
import { CHANGE_RESULT, DELETE_RESULT, NO_RESULT, UPDATE_RESULT } from '../shared/formats.ts'
import { JOIN_LEAVE_PAYLOAD, STREAM_CHANGE_EVENT } from './formats.ts'
import { traceOriginOf, type TraceOrigin } from '../shared/fanout.ts'
import { applyUpdateOps, assertUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'
import { checkValueSize } from '../../adapters/state/codec.ts'
import { StreamClients, type StreamClientHost, type StreamClientStats } from './clients.ts'
import type { MetricSeries } from '../../adapters/observability/records.ts'
import { DEFAULT_CLIENT_BUFFER_BYTES, parseStreamSettings, type StreamSettings } from './settings.ts'
import { JoinLeaveHooks, StreamTriggers } from './triggers.ts'

export const STREAM_WORKER_NAME = 'svc-stream'

type Payload = Record<string, unknown>

/** An adapter in use; client connections hold the one current when they opened (§2.9, §6.1). */
type AdapterSlot = KitAdapterSlot<StreamAdapter>

/**
 * Timing of the client keepalive (defaults: §6.6, 30 s / 60 s) and the listener's transport
 * timeouts for upgrade requests (default the kit's `SERVER_TIMEOUTS`); tests shorten them.
 */
export interface StreamWorkerOptions {
  pingIntervalMs?: number
  idleTimeoutMs?: number
  timeouts?: Partial<ServerTimeouts>
}

/** A custom stream function's answer, or `absent` when no such function is registered. */
type CustomOutcome = { found: true; result: unknown } | { found: false }

/**
 * `svc-stream`. Settings (§6.1) take effect only through {@link StreamWorker.applySettings}:
 * a `host`/`port` change rebinds the client listener (new address first), an adapter change opens
 * the new adapter first, and operations running on the old adapter finish there.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new StreamWorker()] })
 * await engine.start()
 * await engine.inject({ function_id: 'stream::set', data: { stream_name: 'presence', group_id: 'room-1', item_id: 'u1', data: { online: true } } })
 */
export class StreamWorker implements BuiltinWorker, StreamClientHost {
  readonly name = STREAM_WORKER_NAME
  private context: BuiltinContext | null = null
  private settings: StreamSettings | null = null
  private adapters: AdapterSlots<StreamAdapter> | null = null
  private triggers: StreamTriggers | null = null
  private joinHooks: JoinLeaveHooks | null = null
  private leaveHooks: JoinLeaveHooks | null = null
  private clients: StreamClients | null = null
  private listener: ListeningServer | null = null
  private applier: SettingsApplier<StreamSettings> | null = null
  private removeMetricSource: (() => void) | undefined
  private readonly options: StreamWorkerOptions

  constructor(options: StreamWorkerOptions = {}) {
    this.options = options
  }

  /** The client WebSocket URLs, e.g. `['ws://127.0.0.1:3112']`; empty before start. */
  get urls(): string[] {
    return this.listener?.urls ?? []
  }

  /** Connected WebSocket clients. */
  get clientCount(): number {
    return this.clients?.size ?? 0
  }

  /** What the client listener holds now (clients, subscriptions, unsent frames); zeros before start. */
  get clientStats(): StreamClientStats {
    return this.clients?.stats() ?? { clients: 0, subscriptions: 0, groups: 0, unsent_messages: 0, unsent_bytes: 0, slow_clients_closed: 0 }
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.adapters = new AdapterSlots<StreamAdapter>(STREAM_WORKER_NAME, context.log)
    const deps = { worker: context.worker, log: context.log, timeoutMs: context.internalInvocationTimeoutMs, telemetry: context.telemetry }
    this.triggers = new StreamTriggers(deps)
    this.joinHooks = new JoinLeaveHooks('stream:join', deps)
    this.leaveHooks = new JoinLeaveHooks('stream:leave', deps)
    this.clients = new StreamClients(this, context.log, this.options)
    const clients = this.clients
    this.listener = new ListeningServer({
      name: STREAM_WORKER_NAME,
      scheme: 'ws',
      log: context.log,
      createServer: (options) => clients.createServer(options),
      timeouts: this.options.timeouts ?? {},
      onListenUrls: (urls) => context.worker.setListenUrls(urls),
    })
    this.applier = createSettingsApplier<StreamSettings>({
      worker: STREAM_WORKER_NAME,
      log: context.log,
      parse: parseStreamSettings,
      apply: (next, previous) => this.apply(next, previous),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applySettings(settings)
    this.registerFunctions()
    this.registerTriggerTypes()
    this.removeMetricSource = context.telemetry?.addMetricSource((now) => this.metricSeries(now))
  }

  /**
   * `engine::metrics::list` series of the client listener: `svc.stream.clients`,
   * `svc.stream.subscriptions` (gauges), `svc.stream.unsent_bytes` (gauge, bytes not yet taken by
   * the clients' sockets) and `svc.stream.slow_clients_closed` (sum since start: clients closed
   * with 1013 for exceeding `client_buffer_messages` or `client_buffer_bytes`).
   */
  private metricSeries(now: number): MetricSeries[] {
    const stats = this.clientStats
    const point = (value: number) => [{ time_unix_nano: now, value, attributes: {} }]
    return [
      { name: 'svc.stream.clients', type: 'gauge', unit: '{client}', description: 'connected stream WebSocket clients', points: point(stats.clients) },
      { name: 'svc.stream.subscriptions', type: 'gauge', unit: '{subscription}', description: 'open subscriptions of stream clients', points: point(stats.subscriptions) },
      { name: 'svc.stream.unsent_bytes', type: 'gauge', unit: 'By', description: 'bytes of frames not yet taken by the clients\' sockets', points: point(stats.unsent_bytes) },
      { name: 'svc.stream.slow_clients_closed', type: 'sum', unit: '{client}', description: 'clients closed with 1013 (client_buffer_messages, client_buffer_bytes)', points: point(stats.slow_clients_closed) },
    ]
  }

  /**
   * Validates and applies settings (§6.1, §2.7); applies are serialised.
   * @throws SvcError `INVALID_ARGUMENTS` naming the key, `STORAGE_ERROR` when the new adapter
   *   cannot be opened (an unreachable Redis is not that: it opens with a warning, §13.4), or the
   *   bind error of a new `host`/`port`; in every case the previous settings stay in effect.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${STREAM_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.removeMetricSource?.()
    this.triggers?.stop()
    this.clients?.stop()
    await this.listener?.stop()
    // The clients are gone with the listener; their close events may come later.
    await this.adapters?.close()
  }

  // ---- StreamClientHost ------------------------------------------------------------------------

  get authFunction(): string | null {
    return this.settings?.auth_function ?? null
  }

  get clientBufferMessages(): number {
    return this.settings?.client_buffer_messages ?? 1024
  }

  get clientBufferBytes(): number {
    return this.settings?.client_buffer_bytes ?? DEFAULT_CLIENT_BUFFER_BYTES
  }

  async authenticate(input: unknown): Promise<unknown> {
    const settings = this.settings!
    const result = await this.context!.worker.invoke({
      function_id: settings.auth_function!,
      data: input,
      timeoutMs: settings.auth_timeout_ms,
    })
    if (typeof result !== 'object' || result === null || Array.isArray(result)) {
      throw new Error('the auth function did not return an object')
    }
    return (result as Record<string, unknown>).context
  }

  join(payload: StreamJoinLeaveEvent<unknown>): Promise<boolean> {
    return this.joinHooks!.run(payload)
  }

  leave(payload: StreamJoinLeaveEvent<unknown>): void {
    void this.leaveHooks!.run(payload)
  }

  async sync(streamName: string, groupId: string, id: string | null, source: object | null): Promise<unknown> {
    const slot = (source as AdapterSlot | null) ?? undefined
    return id === null
      ? this.list({ stream_name: streamName, group_id: groupId }, slot)
      : this.get({ stream_name: streamName, group_id: groupId, item_id: id }, slot)
  }

  attach(): object | null {
    return this.adapters?.hold() ?? null
  }

  detach(source: object | null): void {
    this.adapters?.release(source as AdapterSlot | null)
  }

  // ---- settings --------------------------------------------------------------------------------

  private async apply(next: StreamSettings, previous: StreamSettings | undefined): Promise<void> {
    const context = this.context!
    const adapterContext = { dataDir: context.dataDir, log: context.log }
    const identity = streamAdapterIdentity(next.adapter, adapterContext)
    let opened: StreamAdapter | null = null
    if (this.adapters!.identity !== identity) {
      try {
        opened = await openStreamAdapter(next.adapter, adapterContext)
      } catch (error) {
        throw withSettingsKey(Errors.storageError(`cannot open the ${next.adapter.name} stream adapter: ${(error as Error).message}`, error), 'adapter')
      }
    }
    try {
      await this.listener!.listen(next.host, next.port)
    } catch (error) {
      await opened?.close()
      throw withSettingsKey(error, previous && previous.port === next.port ? 'host' : 'port')
    }
    if (opened) {
      this.adapters!.install(opened, identity, (adapter, slot) => adapter.subscribe((change) => this.onChange(change, slot)))
      context.log.info(`${STREAM_WORKER_NAME} uses the ${next.adapter.name} adapter`, { adapter: describeStreamAdapter(next.adapter, adapterContext) })
    }
    this.settings = next
  }

  private withAdapter<T>(functionId: string, operation: (adapter: StreamAdapter) => Promise<T>, on?: AdapterSlot): Promise<T> {
    return this.adapters!.run(functionId, operation, on)
  }

  // ---- events ----------------------------------------------------------------------------------

  private onChange(change: StreamAdapterChange, slot: AdapterSlot): void {
    if (change.kind === 'send') {
      this.emit(
        { type: 'stream', timestamp: Date.now(), streamName: change.stream_name, groupId: change.group_id, id: change.id, event: { type: 'event', event: { type: change.type, data: change.data } } },
        change.origin,
        slot,
      )
      return
    }
    this.emitItem(change.stream_name, change.group_id, change.item_id, change.old_value, change.new_value, change.origin, slot)
  }

  /**
   * The §6.3 event of an item change; `newValue` undefined means deleted. `slot`: the adapter it
   * comes from (only that adapter's connections get it); absent for custom streams.
   */
  private emitItem(stream: string, group: string, item: string, oldValue: unknown, newValue: unknown, origin?: TraceOrigin, slot?: AdapterSlot): void {
    const event =
      newValue === undefined
        ? { type: 'delete' as const, data: oldValue ?? null }
        : { type: oldValue === undefined || oldValue === null ? ('create' as const) : ('update' as const), data: newValue }
    this.emit({ type: 'stream', timestamp: Date.now(), streamName: stream, groupId: group, id: item, event }, origin, slot)
  }

  private emit(event: StreamChangeEvent<unknown>, origin: TraceOrigin | undefined, slot: AdapterSlot | undefined): void {
    this.triggers?.publish(event, origin)
    this.clients?.publish(event, slot)
  }

  // ---- functions -------------------------------------------------------------------------------

  private registerFunctions(): void {
    const worker = this.context!.worker
    const item = { stream_name: { type: 'string' }, group_id: { type: 'string' }, item_id: { type: 'string' } }
    const itemKeys = ['stream_name', 'group_id', 'item_id']
    const register = (id: string, handler: (p: Payload, c: InvocationContext) => unknown, options: LocalFunctionOptions) =>
      worker.registerFunction(id, (data, context) => handler(payloadOf(data), context), options)

    register('stream::get', (p) => this.get(p), {
      description: "An item's data; no result when absent",
      request_format: { type: 'object', required: itemKeys, properties: item },
      response_format: { description: "the item's data; no result when absent" },
    })
    register('stream::set', (p, c) => this.set(p, c), {
      description: 'Store an item; returns {old_value, new_value}',
      request_format: { type: 'object', required: [...itemKeys, 'data'], properties: { ...item, data: {} } },
      response_format: CHANGE_RESULT,
    })
    register('stream::delete', (p, c) => this.delete(p, c), {
      description: 'Remove an item; returns {old_value}, or {} when absent',
      request_format: { type: 'object', required: itemKeys, properties: item },
      response_format: DELETE_RESULT,
    })
    register('stream::update', (p, c) => this.update(p, c), {
      description: 'Apply update operations to an item; returns {old_value, new_value, errors?}',
      request_format: { type: 'object', required: [...itemKeys, 'ops'], properties: { ...item, ops: { type: 'array', items: { type: 'object', required: ['type'] } } } },
      response_format: UPDATE_RESULT,
    })
    register('stream::list', (p) => this.list(p), {
      description: "The data of a group's items ordered by item_id",
      request_format: { type: 'object', required: ['stream_name', 'group_id'], properties: { stream_name: item.stream_name, group_id: item.group_id } },
      response_format: { type: 'array', description: "the items' data, ordered by item_id", items: {} },
    })
    register('stream::list_groups', (p) => this.listGroups(p), {
      description: "A stream's group ids, sorted",
      request_format: { type: 'object', required: ['stream_name'], properties: { stream_name: item.stream_name } },
      response_format: { type: 'array', items: { type: 'string' } },
    })
    register('stream::list_all', () => this.listAll(), {
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
    register('stream::send', (p, c) => this.send(p, c), {
      description: 'Push a transient event to the group; nothing is stored',
      request_format: {
        type: 'object',
        required: ['stream_name', 'group_id', 'type', 'data'],
        properties: { stream_name: item.stream_name, group_id: item.group_id, type: { type: 'string' }, data: {}, id: { type: 'string' } },
      },
      response_format: NO_RESULT,
    })
  }

  private registerTriggerTypes(): void {
    const worker = this.context!.worker
    const joinLeaveFormat = {
      trigger_request_format: {
        type: 'object',
        properties: { stream_name: { type: 'string' }, group_id: { type: 'string' }, condition_function_id: { type: 'string' } },
      },
      call_request_format: JOIN_LEAVE_PAYLOAD,
    } as const
    worker.registerTriggerType(
      {
        id: 'stream',
        description: 'Fires on every change of a stream item (create, update, delete) and on stream::send',
        trigger_request_format: {
          type: 'object',
          required: ['stream_name'],
          properties: { stream_name: { type: 'string' }, group_id: { type: 'string' }, item_id: { type: 'string' }, condition_function_id: { type: 'string' } },
        },
        call_request_format: STREAM_CHANGE_EVENT,
      },
      this.triggers!,
    )
    worker.registerTriggerType({ id: 'stream:join', description: 'Runs before a WebSocket client joins a stream group; may refuse the join', ...joinLeaveFormat }, this.joinHooks!)
    worker.registerTriggerType({ id: 'stream:leave', description: 'Runs after a WebSocket client left a stream group', ...joinLeaveFormat }, this.leaveHooks!)
  }

  /**
   * Calls `stream::<op>(<name>)` in `default` when it is registered (§6.2 custom streams); its
   * errors pass through unchanged.
   */
  private async custom(op: string, stream: string, payload: Payload): Promise<CustomOutcome> {
    const functionId = `stream::${op}(${stream})`
    if (!this.context!.worker.hasFunction(functionId)) return { found: false }
    try {
      return { found: true, result: await this.context!.worker.invoke({ function_id: functionId, data: payload }) }
    } catch (error) {
      const body = errorBodyOf(error)
      if (body.code === 'function_not_found' && body.message === Errors.functionNotFound(functionId).message) return { found: false }
      throw error
    }
  }

  private async get(p: Payload, slot?: AdapterSlot): Promise<unknown> {
    const { stream, group, item } = itemOf(p)
    const custom = await this.custom('get', stream, p)
    if (custom.found) return custom.result ?? undefined
    return this.withAdapter('stream::get', (adapter) => adapter.get(stream, group, item), slot)
  }

  private async set(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown }> {
    const { stream, group, item } = itemOf(p)
    const data = p.data
    if (data === undefined) throw Errors.invalidArguments('data is required')
    const custom = await this.customWrite('set', stream, p, data)
    if (custom.found) {
      const result = (custom.result ?? {}) as { old_value?: unknown; new_value?: unknown }
      this.emitItem(stream, group, item, result.old_value ?? null, result.new_value === undefined ? data : result.new_value, traceOriginOf(context))
      return custom.result as { old_value: unknown; new_value: unknown }
    }
    const options = this.writeOptions(context)
    const old = await this.withAdapter('stream::set', (adapter) => adapter.set(stream, group, item, data, options))
    return { old_value: old ?? null, new_value: data }
  }

  private async delete(p: Payload, context: InvocationContext): Promise<{ old_value?: unknown }> {
    const { stream, group, item } = itemOf(p)
    const custom = await this.custom('delete', stream, p)
    if (custom.found) {
      const result = custom.result
      if (typeof result === 'object' && result !== null && 'old_value' in result) {
        this.emitItem(stream, group, item, (result as { old_value: unknown }).old_value, undefined, traceOriginOf(context))
      }
      return result as { old_value?: unknown }
    }
    const origin = traceOriginOf(context)
    const old = await this.withAdapter('stream::delete', (adapter) => adapter.delete(stream, group, item, origin ? { origin } : {}))
    return old === undefined ? {} : { old_value: old }
  }

  private async update(p: Payload, context: InvocationContext): Promise<{ old_value: unknown; new_value: unknown; errors?: UpdateOpError[] }> {
    const { stream, group, item } = itemOf(p)
    if (p.ops === undefined || p.ops === null) throw Errors.invalidArguments('ops is required')
    const ops = p.ops
    assertUpdateOps(ops)
    const custom = await this.customUpdate(stream, group, item, ops as UpdateOp[], p, context)
    if (custom) return custom
    const options = this.writeOptions(context)
    const outcome = await this.withAdapter('stream::update', (adapter) => adapter.update(stream, group, item, ops as UpdateOp[], options))
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
    this.emitItem(stream, group, item, oldValue, answer.new_value === undefined ? value : answer.new_value, traceOriginOf(context))
    void p
    const result: { old_value: unknown; new_value: unknown; errors?: UpdateOpError[] } = { old_value: oldValue, new_value: answer.new_value === undefined ? value : answer.new_value }
    if (errors.length > 0) result.errors = errors
    return result
  }

  /** A custom write, after the `max_item_bytes` check (§6.1 applies to custom streams too). */
  private async customWrite(op: string, stream: string, payload: Payload, data: unknown): Promise<CustomOutcome> {
    const limit = this.settings?.max_item_bytes
    if (limit !== null && limit !== undefined) {
      const text = JSON.stringify(data)
      if (text !== undefined) checkValueSize(text, limit, 'max_item_bytes')
    }
    return this.custom(op, stream, payload)
  }

  private async list(p: Payload, slot?: AdapterSlot): Promise<unknown[]> {
    const stream = requiredString(p, 'stream_name')
    const group = requiredString(p, 'group_id')
    const custom = await this.custom('list', stream, p)
    if (custom.found) return custom.result as unknown[]
    return this.withAdapter('stream::list', (adapter) => adapter.list(stream, group), slot)
  }

  private async listGroups(p: Payload): Promise<string[]> {
    const stream = requiredString(p, 'stream_name')
    const custom = await this.custom('list_groups', stream, p)
    if (custom.found) return custom.result as string[]
    return this.withAdapter('stream::list_groups', (adapter) => adapter.listGroups(stream))
  }

  private async listAll(): Promise<{ streams: Array<{ stream_name: string; groups: string[] }>; count: number }> {
    const streams = await this.withAdapter('stream::list_all', (adapter) => adapter.listAll())
    return { streams, count: streams.length }
  }

  private async send(p: Payload, context: InvocationContext): Promise<undefined> {
    const stream = requiredString(p, 'stream_name')
    const group = requiredString(p, 'group_id')
    const type = requiredString(p, 'type')
    if (p.data === undefined) throw Errors.invalidArguments('data is required')
    const id = p.id
    if (id !== undefined && id !== null && (typeof id !== 'string' || id === '')) throw Errors.invalidArguments('id must be a non-empty string')
    const event = { stream_name: stream, group_id: group, id: typeof id === 'string' ? wellFormed(id) : null, type, data: p.data, origin: traceOriginOf(context) }
    await this.withAdapter('stream::send', (adapter) => adapter.publish(event))
    return undefined
  }

  private writeOptions(context: InvocationContext): StreamWriteOptions {
    const options: StreamWriteOptions = { maxItemBytes: this.settings?.max_item_bytes ?? null }
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


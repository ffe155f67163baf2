/**
 * The built-in stream worker `svc-stream` (builtins.md §6): the `stream::*` functions, the
 * `stream`, `stream:join` and `stream:leave` trigger types, and the client WebSocket (./clients.ts).
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./functions.ts (`stream::*`),
 * ./triggers.ts (`stream`, `stream:join`, `stream:leave`), and this file, the lifecycle: start,
 * settings, adapters, the client listener, stop.
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
} from '../../adapters/stream/index.ts'
import type { StreamChangeEvent, StreamJoinLeaveEvent } from 'svc-protocol'
import { Errors } from 'svc-protocol/errors'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { ListeningServer, type ServerTimeouts } from '../shared/listening-server.ts'
import type { TraceOrigin } from '../shared/fanout.ts'
import { clientMetricSeries, StreamClients, type StreamClientHost, type StreamClientStats } from './clients.ts'
import { registerStreamFunctions, StreamFunctions, type StreamAdapterSlot } from './functions.ts'
import { DEFAULT_CLIENT_BUFFER_BYTES, parseStreamSettings, type StreamSettings } from './settings.ts'
import {
  changeEventOf,
  itemChangeEvent,
  JoinLeaveHooks,
  STREAM_JOIN_TRIGGER_TYPE,
  STREAM_LEAVE_TRIGGER_TYPE,
  STREAM_TRIGGER_TYPE,
  StreamTriggers,
} from './triggers.ts'

export const STREAM_WORKER_NAME = 'svc-stream'

/**
 * Timing of the client keepalive (defaults: §6.6, 30 s / 60 s) and the listener's transport
 * timeouts for upgrade requests (default the kit's `SERVER_TIMEOUTS`); tests shorten them.
 */
export interface StreamWorkerOptions {
  pingIntervalMs?: number
  idleTimeoutMs?: number
  timeouts?: Partial<ServerTimeouts>
}

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
  private functions: StreamFunctions | null = null
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
    this.functions = new StreamFunctions({
      worker: context.worker,
      adapters: this.adapters,
      maxItemBytes: () => this.settings?.max_item_bytes ?? null,
      emitItem: (stream, group, item, oldValue, newValue, origin) => this.emit(itemChangeEvent(stream, group, item, oldValue, newValue), origin, undefined),
    })
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
    registerStreamFunctions(context.worker, this.functions)
    context.worker.registerTriggerType(STREAM_TRIGGER_TYPE, this.triggers)
    context.worker.registerTriggerType(STREAM_JOIN_TRIGGER_TYPE, this.joinHooks)
    context.worker.registerTriggerType(STREAM_LEAVE_TRIGGER_TYPE, this.leaveHooks)
    this.removeMetricSource = context.telemetry?.addMetricSource((now) => clientMetricSeries(this.clientStats, now))
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
    const slot = (source as StreamAdapterSlot | null) ?? undefined
    return id === null
      ? this.functions!.list({ stream_name: streamName, group_id: groupId }, slot)
      : this.functions!.get({ stream_name: streamName, group_id: groupId, item_id: id }, slot)
  }

  attach(): object | null {
    return this.adapters?.hold() ?? null
  }

  detach(source: object | null): void {
    this.adapters?.release(source as StreamAdapterSlot | null)
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

  // ---- events ----------------------------------------------------------------------------------

  private onChange(change: StreamAdapterChange, slot: StreamAdapterSlot): void {
    this.emit(changeEventOf(change), change.origin, slot)
  }

  /**
   * Sends a §6.3 event to the `stream` triggers and the matching client subscriptions. `slot`: the
   * adapter it comes from (only that adapter's connections get it); absent for custom streams.
   */
  private emit(event: StreamChangeEvent<unknown>, origin: TraceOrigin | undefined, slot: StreamAdapterSlot | undefined): void {
    this.triggers?.publish(event, origin)
    this.clients?.publish(event, slot)
  }
}

/**
 * The `redis` stream adapter (builtins.md §6, §13.4): several engines pointing at the same Redis
 * and key prefix share one stream store and one change feed, so a stream client connected to
 * engine A hears of writes and sends made through engine B.
 *
 * Keys (../redis-scopes.ts, kind `stream`): one hash of item id → data as JSON text per group with
 * a sorted index of its ids, the set of groups holding an item, the counter of changes and sends,
 * and the channel `P stream:events`. A group's scope is the JSON text of `[stream_name, group_id]`
 * (./state-backed.ts {@link groupScope}; distinct pairs never collide).
 *
 * Writes run the state adapter's Lua scripts (../state/redis/scripts.ts) on these keys, so items
 * get the same atomic update operations (§5), JSON fidelity and size accounting as state values,
 * and a write, its indexes and its event commit together. A send is one script that takes the next
 * sequence number and PUBLISHes, so sends and item changes share one order.
 *
 * Change feed (../redis-feed.ts, shared with the state adapter): each adapter subscribes to the
 * channel on its own connection and reports every message, its own included, once and in order (the counter drops anything not newer than what it
 * already reported). A write or send resolves only after its own event has been reported to this
 * adapter's listeners, as with the local adapters (types.ts); if the event does not come back
 * within {@link CALL_TIMEOUT_MS} (the subscription is down), the call resolves anyway — the write
 * has committed — and the event is lost for this engine, as for every engine while disconnected.
 *
 * Availability (shared with every redis adapter, ../redis.ts): calls fail with
 * `ADAPTER_UNAVAILABLE` within 5 s when Redis is unreachable, the clients reconnect with backoff,
 * and opening never fails because Redis is down.
 */
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { assertUpdateOps } from '../../update-ops/index.ts'
import { checkValueSize, decodeStateValue as decode, encodeStateValue as encode } from '../state/codec.ts'
import { encodeOps } from '../state/redis/redis.ts'
import { SEQUENCED_WRITE_SCRIPT } from '../state/redis/scripts.ts'
import { compareUtf8, type StateAdapterLogger } from '../state/types.ts'
import type { CALL_TIMEOUT_MS, RedisConfig } from '../redis.ts'
import { RedisScopes } from '../redis-scopes.ts'
import { ChangeListeners } from '../changes.ts'
import { groupScope, parseGroupScope } from './state-backed.ts'
import type {
  StreamAdapter,
  StreamAdapterChange,
  StreamChangeListener,
  StreamGroups,
  StreamSendChange,
  StreamUpdateOutcome,
  StreamWriteOptions,
  StreamWriteOrigin,
  UpdateOp,
  UpdateOpError,
} from './types.ts'

const LIMIT_SETTING = 'max_item_bytes'

/**
 * Publishes a send. KEYS: 1 the counter. ARGV: 1 channel, 2 the send as JSON text.
 * PUBLISHes `{"seq":n,"send":…}` and returns n.
 */
const SEND_SCRIPT = String.raw`
local seq = redis.call('INCR', KEYS[1])
redis.call('PUBLISH', ARGV[1], '{"seq":' .. seq .. ',"send":' .. ARGV[2] .. '}')
return seq
`

/** A message on the channel: an item change (written by the state write script) or a send. */
interface EventMessage {
  seq: number
  scope?: string
  key?: string
  old?: unknown
  new?: unknown
  origin?: StreamWriteOrigin
  send?: Omit<StreamSendChange, 'kind'>
}

/** The send script, as ioredis exposes it after `defineCommand`. */
interface SendScript {
  svcStreamSend(...args: Array<string | Buffer | number>): Promise<number>
}

/** Options of {@link RedisStreamAdapter.open} besides the config block. */
export interface RedisStreamAdapterContext {
  /** Where the adapter warns about an unreachable Redis and about events missed while disconnected. */
  log?: StateAdapterLogger | undefined
}

const silent: StateAdapterLogger = { info() {}, warn() {}, error() {} }

/**
 * @example
 * const streams = await RedisStreamAdapter.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' })
 * streams.subscribe((change) => console.log(change.kind, change.stream_name))
 * await streams.set('presence', 'room-1', 'u1', { online: true })
 */
export class RedisStreamAdapter implements StreamAdapter {
  readonly config: RedisConfig
  private readonly store: RedisScopes<EventMessage>
  private readonly sendScript: SendScript
  private readonly changes = new ChangeListeners<StreamAdapterChange>()

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to `<prefix>stream:events`.
   * Resolves even when Redis is unreachable: a warning is logged and the clients keep trying.
   */
  static async open(config: RedisConfig, context: RedisStreamAdapterContext = {}): Promise<RedisStreamAdapter> {
    const adapter = new RedisStreamAdapter(config, context.log ?? silent)
    await adapter.store.open()
    return adapter
  }

  private constructor(config: RedisConfig, log: StateAdapterLogger) {
    this.config = config
    this.store = new RedisScopes<EventMessage>('stream', config, {
      writeScript: SEQUENCED_WRITE_SCRIPT,
      log,
      missed: "stream changes made while disconnected were not delivered to this engine's clients and triggers",
      onMessage: (event) => {
        const change = toChange(event)
        if (change) this.changes.emit(change)
      },
    })
    this.store.client.defineCommand('svcStreamSend', { numberOfKeys: 1, lua: SEND_SCRIPT })
    this.sendScript = this.store.client as unknown as SendScript
  }

  async get(stream: string, group: string, item: string): Promise<unknown> {
    const text = await this.store.call('get', () => this.store.client.hget(this.store.hashKey(groupScope(stream, group)), item))
    return text === null ? undefined : decode(text)
  }

  async set(stream: string, group: string, item: string, data: unknown, options: StreamWriteOptions = {}): Promise<unknown> {
    this.store.assertOpen()
    const text = encode(data as never)
    checkValueSize(text, options.maxItemBytes, LIMIT_SETTING)
    const [seq, old] = (await this.store.call('set', () => this.store.write('set', groupScope(stream, group), item, options.origin, text))) as [number, string | null]
    await this.store.feed.reported(seq)
    return old === null ? undefined : decode(old)
  }

  async delete(stream: string, group: string, item: string, options: Pick<StreamWriteOptions, 'origin'> = {}): Promise<unknown> {
    const reply = (await this.store.call('delete', () => this.store.write('delete', groupScope(stream, group), item, options.origin))) as [number, string] | null
    if (reply === null) return undefined
    await this.store.feed.reported(reply[0])
    return decode(reply[1])
  }

  async update(stream: string, group: string, item: string, ops: UpdateOp[], options: StreamWriteOptions = {}): Promise<StreamUpdateOutcome> {
    this.store.assertOpen()
    assertUpdateOps(ops)
    const { text, nonfinite } = encodeOps(ops)
    const limit = options.maxItemBytes ?? null
    const reply = (await this.store.call('update', () =>
      this.store.write('update', groupScope(stream, group), item, options.origin, text, limit === null ? '' : String(limit), nonfinite),
    )) as ['too_large', number] | [number, [string, string | null, string, string]]
    if (reply[0] === 'too_large') throw Errors.valueTooLarge(reply[1] as number, limit!, LIMIT_SETTING)
    const [seq, [, old, next, errors]] = reply as [number, [string, string | null, string, string]]
    await this.store.feed.reported(seq)
    return {
      old_value: old === null ? undefined : decode(old),
      new_value: decode(next),
      errors: jsonParse(errors) as UpdateOpError[],
    }
  }

  async list(stream: string, group: string): Promise<unknown[]> {
    const [, , values] = await this.store.call('list', () => this.store.page(groupScope(stream, group), '', 0, -1, true))
    return values.filter((text): text is string => text !== null).map(decode)
  }

  async listGroups(stream: string): Promise<string[]> {
    // Every group of `stream` is `["<stream>",…]`: a lexical range over that prefix. Valid UTF-8
    // never contains 0xFF, so `prefix + 0xFF` bounds it.
    const prefix = `[${JSON.stringify(stream)},`
    const max = Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])
    const scopes = await this.store.call('list_groups', () => this.store.client.zrangebylex(this.store.keys.groups, `[${prefix}`, max))
    const groups: string[] = []
    for (const scope of scopes) {
      const pair = parseGroupScope(scope)
      if (pair && pair[0] === stream) groups.push(pair[1])
    }
    return groups.sort(compareUtf8)
  }

  async listAll(): Promise<StreamGroups[]> {
    const scopes = await this.store.call('list_all', () => this.store.client.zrange(this.store.keys.groups, '0', '-1'))
    const streams = new Map<string, string[]>()
    for (const scope of scopes) {
      const pair = parseGroupScope(scope)
      if (!pair) continue
      let groups = streams.get(pair[0])
      if (!groups) streams.set(pair[0], (groups = []))
      groups.push(pair[1])
    }
    return [...streams.keys()].sort(compareUtf8).map((stream_name) => ({ stream_name, groups: streams.get(stream_name)!.sort(compareUtf8) }))
  }

  async publish(event: Omit<StreamSendChange, 'kind'>): Promise<void> {
    this.store.assertOpen()
    const send: Omit<StreamSendChange, 'kind'> = {
      stream_name: event.stream_name,
      group_id: event.group_id,
      id: event.id,
      type: event.type,
      data: event.data,
    }
    if (event.origin) send.origin = event.origin
    const text = JSON.stringify(send)
    const seq = await this.store.call('send', () => this.sendScript.svcStreamSend(this.store.keys.seq, this.store.keys.channel, text))
    await this.store.feed.reported(seq)
  }

  subscribe(listener: StreamChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    if (this.store.close()) this.changes.clear()
  }
}

/** The change an event message stands for; undefined for a message this adapter did not write. */
function toChange(event: EventMessage): StreamAdapterChange | undefined {
  if (event.send !== undefined) {
    const send = event.send
    if (typeof send !== 'object' || send === null || typeof send.stream_name !== 'string' || typeof send.group_id !== 'string') return undefined
    const change: StreamSendChange = {
      kind: 'send',
      stream_name: send.stream_name,
      group_id: send.group_id,
      id: typeof send.id === 'string' ? send.id : null,
      type: String(send.type),
      data: send.data,
    }
    if (send.origin !== undefined) change.origin = send.origin
    return change
  }
  const pair = typeof event.scope === 'string' ? parseGroupScope(event.scope) : undefined
  if (!pair || typeof event.key !== 'string') return undefined
  const change: StreamAdapterChange = {
    kind: 'item',
    stream_name: pair[0],
    group_id: pair[1],
    item_id: event.key,
    old_value: Object.hasOwn(event, 'old') ? event.old : undefined,
    new_value: Object.hasOwn(event, 'new') ? event.new : undefined,
  }
  if (event.origin !== undefined) change.origin = event.origin
  return change
}

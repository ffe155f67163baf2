/**
 * The `redis` stream adapter (builtins.md §6, §13.4): several engines pointing at the same Redis
 * and key prefix share one stream store and one change feed, so a stream client connected to
 * engine A hears of writes and sends made through engine B.
 *
 * Key layout, for prefix `P` (default `svc:`), where `<group>` is the JSON text of
 * `[stream_name, group_id]` (./state-backed.ts {@link groupScope}; distinct pairs never collide):
 * - `P stream:h:<group>`: hash, item id → data as JSON text (one hash per group, §13.1);
 * - `P stream:k:<group>`: sorted set of the group's item ids, every score 0 (byte order);
 * - `P stream:groups`: sorted set (scores 0) of the groups holding at least one item;
 * - `P stream:seq`: counter of reported changes and sends;
 * - channel `P stream:events`: one message per committed change or send, in commit order.
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
import type { Redis } from 'ioredis'
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { assertUpdateOps } from '../../update-ops/index.ts'
import { checkValueSize, decodeStateValue as decode, encodeStateValue as encode } from '../state/codec.ts'
import { encodeOps } from '../state/redis/redis.ts'
import { PAGE_SCRIPT, SEQUENCED_WRITE_SCRIPT } from '../state/redis/scripts.ts'
import { compareUtf8, type StateAdapterLogger } from '../state/types.ts'
import { CALL_TIMEOUT_MS, connectRedis, redactRedisUrl, redisCallError, waitReady, type RedisConfig } from '../redis.ts'
import { RedisChangeFeed } from '../redis-feed.ts'
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

interface StreamScripts {
  svcStreamWrite(...args: Array<string | Buffer | number>): Promise<unknown>
  svcStreamPage(...args: Array<string | Buffer | number>): Promise<[number, string[], Array<string | null>]>
  svcStreamSend(...args: Array<string | Buffer | number>): Promise<number>
}

type ScriptedRedis = Redis & StreamScripts

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
  private readonly client: ScriptedRedis
  private readonly feed: RedisChangeFeed<EventMessage>
  private readonly log: StateAdapterLogger
  private readonly changes = new ChangeListeners<StreamAdapterChange>()
  private readonly keys: { groups: string; seq: string; channel: string }
  private readonly where: string
  private closed = false

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to `<prefix>stream:events`.
   * Resolves even when Redis is unreachable: a warning is logged and the clients keep trying.
   */
  static async open(config: RedisConfig, context: RedisStreamAdapterContext = {}): Promise<RedisStreamAdapter> {
    const adapter = new RedisStreamAdapter(config, context.log ?? silent)
    const [commands, subscribed] = await Promise.all([waitReady(adapter.client, CALL_TIMEOUT_MS), adapter.feed.open()])
    if (!commands || !subscribed) {
      adapter.log.warn(
        `redis stream adapter: ${adapter.where} is unreachable; stream calls fail with ADAPTER_UNAVAILABLE until it is back`,
        { url: adapter.where },
      )
    }
    return adapter
  }

  private constructor(config: RedisConfig, log: StateAdapterLogger) {
    this.config = config
    this.log = log
    this.where = redactRedisUrl(config.url)
    const prefix = config.key_prefix
    this.keys = { groups: `${prefix}stream:groups`, seq: `${prefix}stream:seq`, channel: `${prefix}stream:events` }
    this.client = connectRedis(config.url) as ScriptedRedis
    this.client.defineCommand('svcStreamWrite', { numberOfKeys: 4, lua: SEQUENCED_WRITE_SCRIPT })
    this.client.defineCommand('svcStreamPage', { numberOfKeys: 2, lua: PAGE_SCRIPT })
    this.client.defineCommand('svcStreamSend', { numberOfKeys: 1, lua: SEND_SCRIPT })
    this.feed = new RedisChangeFeed<EventMessage>({
      url: config.url,
      where: this.where,
      channel: this.keys.channel,
      kind: 'stream',
      missed: "stream changes made while disconnected were not delivered to this engine's clients and triggers",
      log,
      onMessage: (event) => {
        const change = toChange(event)
        if (change) this.changes.emit(change)
      },
    })
  }

  async get(stream: string, group: string, item: string): Promise<unknown> {
    const text = await this.call('get', () => this.client.hget(this.hashKey(groupScope(stream, group)), item))
    return text === null ? undefined : decode(text)
  }

  async set(stream: string, group: string, item: string, data: unknown, options: StreamWriteOptions = {}): Promise<unknown> {
    this.assertOpen()
    const text = encode(data as never)
    checkValueSize(text, options.maxItemBytes, LIMIT_SETTING)
    const [seq, old] = (await this.call('set', () => this.write('set', stream, group, item, options.origin, text))) as [number, string | null]
    await this.feed.reported(seq)
    return old === null ? undefined : decode(old)
  }

  async delete(stream: string, group: string, item: string, options: Pick<StreamWriteOptions, 'origin'> = {}): Promise<unknown> {
    const reply = (await this.call('delete', () => this.write('delete', stream, group, item, options.origin))) as [number, string] | null
    if (reply === null) return undefined
    await this.feed.reported(reply[0])
    return decode(reply[1])
  }

  async update(stream: string, group: string, item: string, ops: UpdateOp[], options: StreamWriteOptions = {}): Promise<StreamUpdateOutcome> {
    this.assertOpen()
    assertUpdateOps(ops)
    const { text, nonfinite } = encodeOps(ops)
    const limit = options.maxItemBytes ?? null
    const reply = (await this.call('update', () =>
      this.write('update', stream, group, item, options.origin, text, limit === null ? '' : String(limit), nonfinite),
    )) as ['too_large', number] | [number, [string, string | null, string, string]]
    if (reply[0] === 'too_large') throw Errors.valueTooLarge(reply[1] as number, limit!, LIMIT_SETTING)
    const [seq, [, old, next, errors]] = reply as [number, [string, string | null, string, string]]
    await this.feed.reported(seq)
    return {
      old_value: old === null ? undefined : decode(old),
      new_value: decode(next),
      errors: jsonParse(errors) as UpdateOpError[],
    }
  }

  async list(stream: string, group: string): Promise<unknown[]> {
    const scope = groupScope(stream, group)
    const [, , values] = await this.call('list', () => this.client.svcStreamPage(this.hashKey(scope), this.indexKey(scope), '-', '+', '0', '-1', '1'))
    return values.filter((text): text is string => text !== null).map(decode)
  }

  async listGroups(stream: string): Promise<string[]> {
    // Every group of `stream` is `["<stream>",…]`: a lexical range over that prefix. Valid UTF-8
    // never contains 0xFF, so `prefix + 0xFF` bounds it.
    const prefix = `[${JSON.stringify(stream)},`
    const max = Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])
    const scopes = await this.call('list_groups', () => this.client.zrangebylex(this.keys.groups, `[${prefix}`, max))
    const groups: string[] = []
    for (const scope of scopes) {
      const pair = parseGroupScope(scope)
      if (pair && pair[0] === stream) groups.push(pair[1])
    }
    return groups.sort(compareUtf8)
  }

  async listAll(): Promise<StreamGroups[]> {
    const scopes = await this.call('list_all', () => this.client.zrange(this.keys.groups, '0', '-1'))
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
    this.assertOpen()
    const send: Omit<StreamSendChange, 'kind'> = {
      stream_name: event.stream_name,
      group_id: event.group_id,
      id: event.id,
      type: event.type,
      data: event.data,
    }
    if (event.origin) send.origin = event.origin
    const text = JSON.stringify(send)
    const seq = await this.call('send', () => this.client.svcStreamSend(this.keys.seq, this.keys.channel, text))
    await this.feed.reported(seq)
  }

  subscribe(listener: StreamChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.changes.clear()
    this.client.disconnect()
    this.feed.close()
  }

  private hashKey(scope: string): string {
    return `${this.config.key_prefix}stream:h:${scope}`
  }

  private indexKey(scope: string): string {
    return `${this.config.key_prefix}stream:k:${scope}`
  }

  private write(mode: 'set' | 'delete' | 'update', stream: string, group: string, item: string, origin: StreamWriteOrigin | undefined, ...rest: string[]) {
    const scope = groupScope(stream, group)
    const originText = origin && (origin.traceparent !== undefined || origin.baggage !== undefined) ? JSON.stringify(origin) : ''
    return this.client.svcStreamWrite(this.hashKey(scope), this.indexKey(scope), this.keys.groups, this.keys.seq, mode, scope, item, this.keys.channel, originText, ...rest)
  }

  /** Runs one Redis call; a failure becomes `STORAGE_ERROR` or `ADAPTER_UNAVAILABLE` (../redis.ts). */
  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.assertOpen()
    try {
      return await run()
    } catch (error) {
      throw redisCallError(error, this.where, `stream ${operation}`)
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`redis stream adapter for ${this.where} is closed`)
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

/**
 * The `redis` state adapter (builtins.md §13.4): several engines pointing at the same Redis and
 * key prefix share one store and one change feed.
 *
 * Key layout, for prefix `P` (default `svc:`):
 * - `P state:h:<scope>`: hash, key → value as JSON text (one hash per scope, §13.1);
 * - `P state:k:<scope>`: sorted set of the scope's keys, every score 0, so that Redis orders them by
 *   their bytes (ZRANGEBYLEX/ZLEXCOUNT give ordered, prefix-filtered pages without reading the
 *   whole scope);
 * - `P state:groups`: sorted set (scores 0) of the scopes holding at least one key;
 * - `P state:seq`: counter of committed changes;
 * - channel `P state:events`: one message per committed change.
 *
 * Every write is one Lua script (./scripts.ts) that updates the hash and both indexes, INCRs the
 * counter and PUBLISHes the change, so a write, its index entries and its event commit together
 * and events are published in commit order. Each adapter subscribes to the channel on its own
 * connection (../../redis-feed.ts) and reports every message, its own writes included, exactly once and in order (the
 * counter lets it drop anything not newer than what it already reported).
 *
 * Availability: commands are never queued while disconnected (`enableOfflineQueue: false`), an
 * unanswered command fails after {@link CALL_TIMEOUT_MS}, and the client reconnects with backoff
 * (1 s doubling to 30 s). Such failures reject with `ADAPTER_UNAVAILABLE`. Opening never fails
 * because Redis is down: the adapter logs a warning and works as soon as Redis is reachable.
 */
import type { Redis } from 'ioredis'
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { assertUpdateOps } from '../../../update-ops/index.ts'
import { ChangeListeners } from '../../changes.ts'
import { checkValueSize, decodeStateValue as decode, encodeStateValue as encode } from '../codec.ts'
import type {
  StateAdapter,
  StateAdapterContext,
  StateAdapterLogger,
  StateChange,
  StateChangeListener,
  StateEntry,
  StatePage,
  StatePageRequest,
  StateUpdateResult,
  StateValue,
  StateWriteOptions,
  UpdateOp,
  UpdateOpError,
} from '../types.ts'
import { PAGE_SCRIPT, WRITE_SCRIPT } from './scripts.ts'
import { CALL_TIMEOUT_MS, connectRedis, redactRedisUrl, redisCallError, waitReady, type RedisConfig } from '../../redis.ts'
import { RedisChangeFeed } from '../../redis-feed.ts'

/** The message published for each change (see WRITE_SCRIPT). */
interface ChangeMessage {
  seq: number
  scope: string
  key: string
  old?: StateValue
  new?: StateValue
  origin?: { traceparent?: string; baggage?: string }
}

/** The scripts, as ioredis exposes them after `defineCommand`. */
interface StateScripts {
  svcStateWrite(...args: Array<string | Buffer | number>): Promise<unknown>
  svcStatePage(...args: Array<string | Buffer | number>): Promise<[number, string[], Array<string | null>]>
}

type ScriptedRedis = Redis & StateScripts

const silent: StateAdapterLogger = { info() {}, warn() {}, error() {} }

/**
 * @example
 * const adapter = await RedisStateAdapter.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' }, { dataDir })
 * adapter.subscribe((change) => console.log(change.scope, change.key))
 * await adapter.update('counters', 'visits', [{ type: 'increment' }])
 */
export class RedisStateAdapter implements StateAdapter {
  readonly config: RedisConfig
  private readonly client: ScriptedRedis
  private readonly feed: RedisChangeFeed<ChangeMessage>
  private readonly log: StateAdapterLogger
  private readonly changes = new ChangeListeners<StateChange>()
  private readonly keys: { groups: string; seq: string; channel: string }
  private readonly where: string
  private closed = false

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to the change channel.
   * Resolves even when Redis is unreachable: a warning is logged and the client keeps trying.
   */
  static async open(config: RedisConfig, context: StateAdapterContext): Promise<RedisStateAdapter> {
    const adapter = new RedisStateAdapter(config, context.log ?? silent)
    const [commands, subscribed] = await Promise.all([waitReady(adapter.client, CALL_TIMEOUT_MS), adapter.feed.open()])
    if (!commands || !subscribed) {
      adapter.log.warn(
        `redis state adapter: ${adapter.where} is unreachable; state calls fail with ADAPTER_UNAVAILABLE until it is back`,
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
    this.keys = { groups: `${prefix}state:groups`, seq: `${prefix}state:seq`, channel: `${prefix}state:events` }
    this.client = connectRedis(config.url) as ScriptedRedis
    this.client.defineCommand('svcStateWrite', { numberOfKeys: 4, lua: WRITE_SCRIPT })
    this.client.defineCommand('svcStatePage', { numberOfKeys: 2, lua: PAGE_SCRIPT })
    this.feed = new RedisChangeFeed<ChangeMessage>({
      url: config.url,
      where: this.where,
      channel: this.keys.channel,
      kind: 'state',
      missed: 'state changes committed while disconnected were not reported to triggers',
      log,
      onMessage: (change) => this.receive(change),
    })
  }

  async get(scope: string, key: string): Promise<StateValue | undefined> {
    const text = await this.call('get', () => this.client.hget(this.hashKey(scope), key))
    return text === null ? undefined : decode(text)
  }

  async set(scope: string, key: string, value: StateValue, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.assertOpen()
    const text = encode(value)
    checkValueSize(text, options.maxValueBytes, options.maxValueSetting)
    const old = await this.call('set', () => this.write('set', scope, key, options, text))
    return old === null ? undefined : decode(old as string)
  }

  async delete(scope: string, key: string, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    const old = await this.call('delete', () => this.write('delete', scope, key, options))
    return old === null ? undefined : decode(old as string)
  }

  async update(scope: string, key: string, ops: UpdateOp[], options: StateWriteOptions = {}): Promise<StateUpdateResult> {
    this.assertOpen()
    assertUpdateOps(ops)
    const { text, nonfinite } = encodeOps(ops)
    const limit = options.maxValueBytes ?? null
    const reply = (await this.call('update', () =>
      this.write('update', scope, key, options, text, limit === null ? '' : String(limit), nonfinite),
    )) as [string, string | null, string, string] | [string, number]
    if (reply[0] === 'too_large') throw Errors.valueTooLarge(reply[1] as number, limit!)
    const [, old, next, errors] = reply as [string, string | null, string, string]
    return {
      old_value: old === null ? undefined : decode(old),
      new_value: decode(next),
      errors: jsonParse(errors) as UpdateOpError[],
    }
  }

  async list(scope: string): Promise<StateValue[]> {
    const [, , values] = await this.call('list', () => this.page(scope, '', 0, -1, true))
    return values.filter((text): text is string => text !== null).map(decode)
  }

  async listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>> {
    const [total, keys] = await this.call('list_keys', () =>
      this.page(scope, page.prefix ?? '', page.offset, page.limit, false),
    )
    return { items: keys, total: Number(total) }
  }

  async listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>> {
    const [total, keys, values] = await this.call('list_entries', () =>
      this.page(scope, page.prefix ?? '', page.offset, page.limit, true),
    )
    const items: StateEntry[] = []
    keys.forEach((key, i) => {
      const text = values[i]
      if (text !== null && text !== undefined) items.push({ key, value: decode(text) })
    })
    return { items, total: Number(total) }
  }

  async listGroups(): Promise<string[]> {
    return this.call('list_groups', () => this.client.zrange(this.keys.groups, '0', '-1'))
  }

  subscribe(listener: StateChangeListener): () => void {
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
    return `${this.config.key_prefix}state:h:${scope}`
  }

  private indexKey(scope: string): string {
    return `${this.config.key_prefix}state:k:${scope}`
  }

  private write(mode: 'set' | 'delete' | 'update', scope: string, key: string, options: StateWriteOptions, ...rest: string[]) {
    const origin = options.origin && (options.origin.traceparent !== undefined || options.origin.baggage !== undefined)
      ? JSON.stringify(options.origin)
      : ''
    return this.client.svcStateWrite(
      this.hashKey(scope),
      this.indexKey(scope),
      this.keys.groups,
      this.keys.seq,
      mode,
      scope,
      key,
      this.keys.channel,
      origin,
      ...rest,
    )
  }

  /** One page of a scope: `[total, keys, values]` (values only when asked for). */
  private page(scope: string, prefix: string, offset: number, limit: number, values: boolean) {
    // Valid UTF-8 never contains the byte 0xFF, so `prefix + 0xFF` bounds every key with the prefix.
    const min = prefix === '' ? '-' : `[${prefix}`
    const max = prefix === '' ? '+' : Buffer.concat([Buffer.from(`(${prefix}`), Buffer.from([0xff])])
    return this.client.svcStatePage(this.hashKey(scope), this.indexKey(scope), min, max, String(offset), String(limit), values ? '1' : '0')
  }

  /** Runs one Redis call; a failure becomes `STORAGE_ERROR` or `ADAPTER_UNAVAILABLE` ({@link redisCallError}). */
  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    this.assertOpen()
    try {
      return await run()
    } catch (error) {
      throw redisCallError(error, this.where, `state ${operation}`)
    }
  }

  /** Reports one change of the feed (every engine's, in commit order) to the listeners. */
  private receive(change: ChangeMessage): void {
    const report: Parameters<StateChangeListener>[0] = {
      scope: change.scope,
      key: change.key,
      old_value: Object.hasOwn(change, 'old') ? change.old : undefined,
      new_value: Object.hasOwn(change, 'new') ? change.new : undefined,
    }
    if (change.origin !== undefined) report.origin = change.origin
    this.changes.emit(report)
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`redis state adapter for ${this.where} is closed`)
  }
}

/**
 * The ops as JSON for the write script, plus the indexes of ops whose `by` is a non-finite number
 * (JSON has no NaN or Infinity; the script must still refuse them as `invalid_by`).
 */
export function encodeOps(ops: UpdateOp[]): { text: string; nonfinite: string } {
  const nonfinite: number[] = []
  ops.forEach((op, i) => {
    const by = (op as { by?: unknown }).by
    if (typeof by === 'number' && !Number.isFinite(by)) nonfinite.push(i)
  })
  return { text: JSON.stringify(ops), nonfinite: nonfinite.join(',') }
}

/**
 * The `redis` state adapter (builtins.md §13.4): several engines pointing at the same Redis and
 * key prefix share one store and one change feed.
 *
 * Keys (../../redis-scopes.ts, kind `state`): one hash of key → value as JSON text per scope with a
 * sorted index of its keys (ordered, prefix-filtered pages without reading the whole scope), the
 * set of scopes holding a key, the change counter, and the channel `P state:events`.
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
import { WRITE_SCRIPT } from './scripts.ts'
import type { CALL_TIMEOUT_MS, RedisConfig } from '../../redis.ts'
import { RedisScopes } from '../../redis-scopes.ts'

/** The message published for each change (see WRITE_SCRIPT). */
interface ChangeMessage {
  seq: number
  scope: string
  key: string
  old?: StateValue
  new?: StateValue
  origin?: { traceparent?: string; baggage?: string }
}

const silent: StateAdapterLogger = { info() {}, warn() {}, error() {} }

/**
 * @example
 * const adapter = await RedisStateAdapter.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' }, { dataDir })
 * adapter.subscribe((change) => console.log(change.scope, change.key))
 * await adapter.update('counters', 'visits', [{ type: 'increment' }])
 */
export class RedisStateAdapter implements StateAdapter {
  readonly config: RedisConfig
  private readonly store: RedisScopes<ChangeMessage>
  private readonly changes = new ChangeListeners<StateChange>()

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to the change channel.
   * Resolves even when Redis is unreachable: a warning is logged and the client keeps trying.
   */
  static async open(config: RedisConfig, context: StateAdapterContext): Promise<RedisStateAdapter> {
    const adapter = new RedisStateAdapter(config, context.log ?? silent)
    await adapter.store.open()
    return adapter
  }

  private constructor(config: RedisConfig, log: StateAdapterLogger) {
    this.config = config
    this.store = new RedisScopes<ChangeMessage>('state', config, {
      writeScript: WRITE_SCRIPT,
      log,
      missed: 'state changes committed while disconnected were not reported to triggers',
      onMessage: (change) => this.receive(change),
    })
  }

  async get(scope: string, key: string): Promise<StateValue | undefined> {
    const text = await this.store.call('get', () => this.store.client.hget(this.store.hashKey(scope), key))
    return text === null ? undefined : decode(text)
  }

  async set(scope: string, key: string, value: StateValue, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.store.assertOpen()
    const text = encode(value)
    checkValueSize(text, options.maxValueBytes, options.maxValueSetting)
    const old = await this.store.call('set', () => this.store.write('set', scope, key, options.origin, text))
    return old === null ? undefined : decode(old as string)
  }

  async delete(scope: string, key: string, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    const old = await this.store.call('delete', () => this.store.write('delete', scope, key, options.origin))
    return old === null ? undefined : decode(old as string)
  }

  async update(scope: string, key: string, ops: UpdateOp[], options: StateWriteOptions = {}): Promise<StateUpdateResult> {
    this.store.assertOpen()
    assertUpdateOps(ops)
    const { text, nonfinite } = encodeOps(ops)
    const limit = options.maxValueBytes ?? null
    const reply = (await this.store.call('update', () =>
      this.store.write('update', scope, key, options.origin, text, limit === null ? '' : String(limit), nonfinite),
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
    const [, , values] = await this.store.call('list', () => this.store.page(scope, '', 0, -1, true))
    return values.filter((text): text is string => text !== null).map(decode)
  }

  async listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>> {
    const [total, keys] = await this.store.call('list_keys', () =>
      this.store.page(scope, page.prefix ?? '', page.offset, page.limit, false),
    )
    return { items: keys, total: Number(total) }
  }

  async listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>> {
    const [total, keys, values] = await this.store.call('list_entries', () =>
      this.store.page(scope, page.prefix ?? '', page.offset, page.limit, true),
    )
    const items: StateEntry[] = []
    keys.forEach((key, i) => {
      const text = values[i]
      if (text !== null && text !== undefined) items.push({ key, value: decode(text) })
    })
    return { items, total: Number(total) }
  }

  async listGroups(): Promise<string[]> {
    return this.store.call('list_groups', () => this.store.client.zrange(this.store.keys.groups, '0', '-1'))
  }

  subscribe(listener: StateChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    if (this.store.close()) this.changes.clear()
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

/**
 * The `redis` cron slot store (builtins.md §13.4 "cron"): each slot of a schedule runs once
 * fleet-wide and never while another run of the schedule is in progress.
 *
 * - Slot lock `<prefix>cron:<schedule>:<slot>` (`SET NX`, kept 24 h), taken in one script with
 *   `<prefix>cron:<schedule>:last`, so a slot at or before the last claimed one is refused too.
 * - Run lock `<prefix>cron:<schedule>:run` with a 30 s TTL, refreshed every 10 s while the run
 *   lasts and released (only by its holder) when it ends.
 * - While Redis is unreachable, claims and locks fail within the call timeout; the worker skips
 *   those slots (cron pauses) and the client reconnects with backoff.
 */
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { CALL_TIMEOUT_MS, connectRedis, redactRedisUrl, waitReady, type RedisConfig } from '../../redis.ts'
import type { CronSlotStore } from '../types.ts'

/** How long a slot lock is kept, ms (§13.4: 24 h). */
export const SLOT_LOCK_MS = 24 * 60 * 60 * 1000
/** TTL of a run lock, ms, and how often a held one is refreshed. */
export const RUN_LOCK_MS = 30_000
export const RUN_LOCK_REFRESH_MS = 10_000

/** KEYS: slot lock, last slot. ARGV: slot ms, holder, slot lock TTL. 1 when claimed. */
const CLAIM_SCRIPT = `
local last = tonumber(redis.call('GET', KEYS[2]) or '-1')
if last >= tonumber(ARGV[1]) then return 0 end
if not redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
return 1`

/** KEYS: run lock. ARGV: holder, TTL (0: release). 1 when the holder still had it. */
const RUN_LOCK_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1`

/**
 * @example
 * const store = await RedisCronSlotStore.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:' })
 * const release = await store.lockRun(schedule)
 * if (release && (await store.claim(schedule, slot))) { … } ; await release?.()
 */
export class RedisCronSlotStore implements CronSlotStore {
  private readonly client: Redis
  private readonly prefix: string
  private readonly holder = randomUUID()
  readonly where: string

  /** Connects (waiting at most {@link CALL_TIMEOUT_MS}); resolves even when Redis is unreachable, with a warning. */
  static async open(config: RedisConfig, log?: { warn(message: string, data?: Record<string, unknown>): void }): Promise<RedisCronSlotStore> {
    const store = new RedisCronSlotStore(config)
    if (!(await waitReady(store.client, CALL_TIMEOUT_MS))) {
      log?.warn(`redis cron store: ${store.where} is unreachable; cron slots are skipped until it is back`, { url: store.where })
    }
    return store
  }

  private constructor(config: RedisConfig) {
    this.prefix = `${config.key_prefix}cron:`
    this.where = redactRedisUrl(config.url)
    this.client = connectRedis(config.url)
  }

  async claim(schedule: string, slotMs: number): Promise<boolean> {
    const keys = [`${this.prefix}${schedule}:${slotMs}`, `${this.prefix}${schedule}:last`]
    return (await this.client.eval(CLAIM_SCRIPT, 2, ...keys, String(slotMs), this.holder, String(SLOT_LOCK_MS))) === 1
  }

  async lockRun(schedule: string): Promise<(() => Promise<void>) | null> {
    const key = `${this.prefix}${schedule}:run`
    const token = `${this.holder}:${randomUUID()}`
    if ((await this.client.set(key, token, 'PX', RUN_LOCK_MS, 'NX')) !== 'OK') return null
    const refresh = setInterval(() => {
      this.client.eval(RUN_LOCK_SCRIPT, 1, key, token, String(RUN_LOCK_MS)).catch(() => {})
    }, RUN_LOCK_REFRESH_MS)
    refresh.unref()
    return async () => {
      clearInterval(refresh)
      // If Redis is away, the lock expires by itself within RUN_LOCK_MS.
      await this.client.eval(RUN_LOCK_SCRIPT, 1, key, token, '0').catch(() => {})
    }
  }

  async lastSlot(schedule: string): Promise<number | undefined> {
    const value = await this.client.get(`${this.prefix}${schedule}:last`)
    return value === null ? undefined : Number(value)
  }

  async close(): Promise<void> {
    this.client.disconnect()
  }
}

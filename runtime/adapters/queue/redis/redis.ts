/**
 * The `redis` queue backend (builtins.md §7, §13.4, issue 19 §2): messages in Redis, so that the
 * queue workers of several engines pointing at the same Redis and key prefix share every queue,
 * its DLQ and its subscriber records, and each message is started by one engine at a time.
 *
 * Every operation is one Lua script (./scripts.ts, where the key layout is), so it is atomic on
 * the server: reserve honours fifo groups (one head per group, retried in place), concurrency keys
 * and delays exactly as the in-process index does, and skips, without a write, messages whose
 * target the caller's `startable` refuses (the script is handed the verdicts for the targets it
 * meets; a target it has no verdict for is reported back, asked about, and the call repeated).
 *
 * Leases (several engines): reserve records this backend's owner id and a lease deadline on the
 * Redis server's clock (`lease_ms`, default {@link DEFAULT_LEASE_MS}); a timer renews the leases of
 * the messages this backend holds every `lease_ms / 3`. {@link RedisQueueBackend.recoverExpired},
 * which the queue worker calls every {@link RedisQueueBackend.leaseCheckMs}, returns messages whose
 * lease expired (their engine crashed or lost Redis for longer than the lease) to pending with their
 * attempt kept, or to the DLQ (`delivery_interrupted`) when exhausted. `recover` at open does the
 * same and also takes back, at once, what this engine's earlier processes held: owner ids start
 * with a key of the host name and the data directory (one engine per data directory), and a
 * restarted engine claims those of its key that no backend of its live process holds. Lease times are the server's
 * (`TIME`), so the engines' clocks need not agree; the message times (`ready_at`…) stay the
 * caller's.
 *
 * Waking: changes that make messages of a queue startable (enqueue, release, redrive, recovery, a
 * fifo head or concurrency key freed) PUBLISH `<owner>\n<queue>` on `<prefix>queue:wake`; each
 * backend subscribes on its own connection and tells {@link RedisQueueBackend.onWake} listeners
 * about other owners' messages (its own are ignored: its worker pumps already). A reconnected
 * subscription wakes every queue, since messages may have been missed.
 *
 * Batching: the enqueues of one event-loop turn are one ENQUEUE call; its acks ride with its first
 * reserve in one ACK_RESERVE call ("finish and fetch": the acks run first, so what they free starts
 * in the same call). Acks of a turn without a reserve wait, while a reserve of this backend is on
 * its way back, for the reserve the worker makes when it lands (at most one round trip), and
 * otherwise go as one ACK call. Reserves overlap ({@link RedisQueueBackend.reservesOverlap}): the
 * slots that the results of one socket read free reserve at once, with those results' acks, while
 * an earlier reserve is still on its way. Each call is written to the socket when its turn ends,
 * not through ioredis's auto-pipelining (the batching above already makes a turn one or two calls).
 *
 * Durability: a call resolves once Redis executed its script; surviving a Redis crash is Redis's
 * persistence setting (`appendonly yes`; `appendfsync always` for no loss at all).
 *
 * Availability (shared with every redis adapter, ../../redis.ts): calls fail with
 * `ADAPTER_UNAVAILABLE` within 5 s when Redis is unreachable, the clients reconnect with backoff,
 * and opening never fails because Redis is down.
 */
import { createHash, randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { resolve } from 'node:path'
import type { Redis } from 'ioredis'
import { Redis as RedisClient } from 'ioredis'
import { Errors } from 'svc-protocol/errors'
import { jsonParse } from 'svc-protocol/json'
import { CALL_TIMEOUT_MS, connectRedis, redisClientOptions, redactRedisUrl, redisCallError, waitReady, type RedisConfig } from '../../redis.ts'
import type { StateAdapterLogger } from '../../state/types.ts'
import { decodeBody, encodeBody, storedPayload } from '../body.ts'
import {
  targetKey,
  type EnqueueOutcome,
  type QueueBackend,
  type QueueCounts,
  type QueueError,
  type QueueMessage,
  type QueueMessageInput,
  type RecoverOutcome,
  type ReserveRequest,
  type SubscriberRecord,
  type WakeListener,
} from '../types.ts'
import { callScript, LuaScript, type ScriptArg } from './script-call.ts'
import * as scripts from './scripts.ts'
import type { RedisQueueConfig } from './config.ts'

export { DEFAULT_LEASE_MS, MAX_LEASE_MS, MIN_LEASE_MS, parseRedisQueueConfig, type RedisQueueConfig } from './config.ts'

/** Most pending entries one reserve looks at (skipped busy keys, unstartable targets) before it stops. */
export const RESERVE_SCAN_BUDGET = 2_000
/** When a reserve ran out of its scan budget, the worker looks again after this many ms. */
const RESCAN_MS = 250
/** Most items (messages, ids) of one batched script call, so that one call never holds Redis long. */
const MAX_BATCH = 256
/** Most distinct targets whose `startable` verdict is remembered per backend. */
const MAX_TARGET_VERDICTS = 1024
/**
 * Fields a message body holds (the parts that never change) besides its payload, whose text is
 * spliced in as it arrived (../body.ts), as the SQLite backend stores them.
 */
const BODY_FIELDS = ['function_id', 'namespace', 'metadata', 'traceparent', 'baggage', 'group', 'key', 'enqueued_at', 'size_bytes'] as const
/** A message's fields that its body holds only when they are set. */
const OPTIONAL_FIELDS = ['metadata', 'traceparent', 'baggage', 'group', 'key'] as const
const INTERRUPTED: QueueError = { code: 'delivery_interrupted', message: 'the engine stopped while the last attempt was in flight' }

/** A script call: ARGV after the prefix and owner (lists are sent flattened, see ./script-call.ts). */
type Script = (...args: Array<ScriptArg | readonly ScriptArg[]>) => Promise<unknown>
/** RESERVE's (and ACK_RESERVE's) reply: more, unknown targets, taken messages, next, resume offsets, acked flags. */
type ReserveReply = [number, string[], Array<string | number>, string | null, number, number, number[]]
type ScriptName =
  | 'enqueue'
  | 'reserve'
  | 'ack'
  | 'ackReserve'
  | 'release'
  | 'deadLetter'
  | 'deadLetterQueue'
  | 'redrive'
  | 'redriveOne'
  | 'discard'
  | 'counts'
  | 'deadLetters'
  | 'nextReady'
  | 'recoverScan'
  | 'recoverApply'
  | 'renew'
  | 'get'
const SCRIPTS: Record<ScriptName, string> = {
  enqueue: scripts.ENQUEUE,
  reserve: scripts.RESERVE,
  ack: scripts.ACK,
  ackReserve: scripts.ACK_RESERVE,
  release: scripts.RELEASE,
  deadLetter: scripts.DEAD_LETTER,
  deadLetterQueue: scripts.DEAD_LETTER_QUEUE,
  redrive: scripts.REDRIVE,
  redriveOne: scripts.REDRIVE_ONE,
  discard: scripts.DISCARD,
  counts: scripts.COUNTS,
  deadLetters: scripts.DEAD_LETTERS,
  nextReady: scripts.NEXT_READY,
  recoverScan: scripts.RECOVER_SCAN,
  recoverApply: scripts.RECOVER_APPLY,
  renew: scripts.RENEW,
  get: scripts.GET,
}

/**
 * A name as it goes into a Redis key or member. Redis keeps bytes and strings travel as UTF-8,
 * where every lone surrogate becomes U+FFFD: two names svc tells apart ('a\ud800', 'a\udc00') would
 * name one queue, group or message. Such a name (and any starting with U+0001) is stored as U+0001
 * followed by its JSON text, which escapes lone surrogates; every other name as it is. Injective.
 */
export function enc(name: string): string {
  return name.isWellFormed() && !name.startsWith('\u0001') ? name : `\u0001${JSON.stringify(name)}`
}

/** The name {@link enc} stored. */
export function dec(stored: string): string {
  return stored.startsWith('\u0001') ? (JSON.parse(stored.slice(1)) as string) : stored
}

/**
 * Calls made during one event-loop turn, sent as one script call at its end (the script is atomic
 * for the whole batch, and handles the items in call order, as separate calls would).
 */
class TurnBatch<I, R> {
  private items: I[] = []
  private waiters: Array<TurnWaiter<R>> = []

  private readonly send: (items: I[]) => Promise<R[]>

  /** `send` gets every item of the turn and answers one result per item, in order. */
  constructor(send: (items: I[]) => Promise<R[]>) {
    this.send = send
  }

  /**
   * Adds one call's items (never split across script calls); a batch past {@link MAX_BATCH} items
   * leaves at once. Resolves with what `finish` makes of the call's results (`results[from]` to
   * `results[from + count - 1]`), or rejects with what it throws: one promise per call.
   */
  add<T>(items: readonly I[], finish: (results: R[], from: number, count: number) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.items.length > 0 && this.items.length + items.length > MAX_BATCH) this.flush()
      if (this.waiters.length === 0) process.nextTick(() => this.flush())
      for (const item of items) this.items.push(item)
      this.waiters.push({ count: items.length, finish, resolve: resolve as (value: unknown) => void, reject })
    })
  }

  private flush(): void {
    const items = this.items
    const waiters = this.waiters
    if (waiters.length === 0) return
    this.items = []
    this.waiters = []
    this.send(items).then(
      (results) => {
        let at = 0
        for (const waiter of waiters) {
          try {
            waiter.resolve(waiter.finish(results, at, waiter.count))
          } catch (error) {
            waiter.reject(error)
          }
          at += waiter.count
        }
      },
      (error) => {
        for (const waiter of waiters) waiter.reject(error)
      },
    )
  }
}

/** One call of a {@link TurnBatch}: how many items it added, and what its caller gets. */
interface TurnWaiter<R> {
  count: number
  finish: (results: R[], from: number, count: number) => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/** An ack waiting for its answer. */
interface AckWaiter {
  /** The message id as stored ({@link enc}). */
  id: string
  resolve: (acked: boolean) => void
  reject: (error: unknown) => void
}

/** Options of {@link RedisQueueBackend.open} besides the config block. */
export interface RedisQueueContext {
  /** Where the backend warns about an unreachable Redis. */
  log?: StateAdapterLogger | undefined
  /**
   * The engine's data directory: with the host name, the engine's identity across restarts (one
   * engine per data directory), so that `recover` at open takes back at once what this engine's
   * earlier process held, without waiting for its leases to run out.
   */
  dataDir?: string | undefined
}

/** Owner ids of the backends open in this process (an adapter switch keeps the old one serving). */
const liveOwners = new Set<string>()

/** `<16 hex digits>/`: the owner prefix of the engine at `dataDir` on this host. */
function enginePrefix(dataDir: string): string {
  return `${createHash('sha256').update(`${hostname()}\u0000${resolve(dataDir)}`).digest('hex').slice(0, 16)}/`
}

const silent: StateAdapterLogger = { info() {}, warn() {}, error() {} }

/**
 * @example
 * const backend = await RedisQueueBackend.open({ url: 'redis://127.0.0.1:6379', key_prefix: 'svc:', lease_ms: 30000 })
 * backend.onWake((queue) => console.log('work in', queue ?? 'every queue'))
 * const [message] = await backend.reserve('emails', { now: Date.now(), limit: 1 })
 */
export class RedisQueueBackend implements QueueBackend {
  readonly name = 'redis'
  /** Each reserve is one atomic script: a slot freed while a reserve is on its way reserves at once, without waiting for it. */
  readonly reservesOverlap = true
  readonly config: RedisQueueConfig
  /** How often the worker calls {@link recoverExpired}: half a lease. */
  readonly leaseCheckMs: number
  /** This backend's owner id in Redis: `<engine prefix><uuid>`, one per open backend. */
  readonly owner: string
  /** The owner prefix of this engine's backends, past and present ('' without a data directory). */
  private readonly engine: string
  private readonly client: Redis
  private readonly subscriber: Redis
  private readonly log: StateAdapterLogger
  private readonly where: string
  private readonly prefix: string
  private readonly channel: string
  private readonly run: Record<ScriptName, Script>
  /** Ids this backend holds in flight (their leases are renewed). */
  private readonly held = new Set<string>()
  private readonly wakeListeners = new Set<WakeListener>()
  /** Remembered `startable` verdicts, refreshed at every reserve. */
  private readonly verdicts = new Map<string, { namespace: string; functionId: string }>()
  /**
   * Per queue, from this backend's last reserve: its `now`, whether it ran out of scan budget, the
   * earliest ready_at after `now` it saw (null: none; undefined: not asked, the limit was filled),
   * and where the next scans of groups and standard messages resume.
   */
  private readonly lastReserve = new Map<string, { now: number; more: boolean; next: number | null | undefined; resume: { group: number; standard: number } }>()
  /** Enqueues of one turn go to Redis as one script call. */
  private readonly enqueues = new TurnBatch<Array<string | number>, EnqueueOutcome | null>((items) => this.sendEnqueues(items))
  /**
   * Acks and first reserve rounds of the current turn, sent together at its end ({@link flushTurn}):
   * the acks ride along with a reserve in one ACK_RESERVE call (finish and fetch), or go alone as
   * one ACK call when no reserve was asked for.
   */
  private turnAcks: string[] = []
  /** One per entry of {@link turnAcks}: its id (as stored) and its caller. */
  private turnAckWaiters: AckWaiter[] = []
  private turnReserves: Array<{ args: Array<string | number>; resolve: (reply: ReserveReply) => void; reject: (error: unknown) => void }> = []
  private turnScheduled = false
  /** Turn reserves sent and not answered yet (acks wait for them, see {@link flushTurn}). */
  private turnReservesInFlight = 0
  private renewTimer: NodeJS.Timeout | undefined
  private renewing = false
  private subscribedOnce = false
  private opened = false
  private closed = false

  /**
   * Connects (waiting at most {@link CALL_TIMEOUT_MS}) and subscribes to `<prefix>queue:wake`.
   * Resolves even when Redis is unreachable: a warning is logged and the clients keep trying.
   */
  static async open(config: RedisQueueConfig, context: RedisQueueContext = {}): Promise<RedisQueueBackend> {
    const backend = new RedisQueueBackend(config, context.log ?? silent, context.dataDir === undefined ? '' : enginePrefix(context.dataDir))
    const [commands, events] = await Promise.all([waitReady(backend.client, CALL_TIMEOUT_MS), waitReady(backend.subscriber, CALL_TIMEOUT_MS)])
    backend.opened = true
    const subscribed = events && backend.subscriber.status === 'ready' && (await backend.subscribeChannel())
    if (!commands || !subscribed) {
      backend.log.warn(`redis queue adapter: ${backend.where} is unreachable; queue calls fail with ADAPTER_UNAVAILABLE until it is back`, { url: backend.where })
    }
    return backend
  }

  private constructor(config: RedisQueueConfig, log: StateAdapterLogger, engine: string) {
    this.engine = engine
    this.owner = `${engine}${randomUUID()}`
    liveOwners.add(this.owner)
    this.config = config
    this.log = log
    this.where = redactRedisUrl(config.url)
    this.prefix = `${config.key_prefix}queue:`
    this.channel = `${this.prefix}wake`
    this.leaseCheckMs = Math.max(500, Math.floor(config.lease_ms / 2))
    // The shared options, without ioredis's auto-pipelining: the backend batches a turn's enqueues,
    // and its acks with its reserve, itself (one script call each), and the pipeline ioredis would
    // build per turn for those one or two commands cost more CPU than their separate writes
    // (bench/queue-redis-adapter.ts: 18–25 → 13–14 µs per consumed message).
    const client = new RedisClient(config.url, redisClientOptions())
    client.on('error', () => {})
    this.client = client
    const run = {} as Record<ScriptName, Script>
    const fixed = [this.prefix, this.owner]
    for (const [name, lua] of Object.entries(SCRIPTS) as Array<[ScriptName, string]>) {
      const script = new LuaScript(lua)
      run[name] = (...args) => callScript(client, script, fixed, args)
    }
    this.run = run
    this.subscriber = connectRedis(config.url, 'subscriber')
    this.subscriber.on('messageBuffer', (_channel: Buffer, message: Buffer) => this.receive(message.toString('utf8')))
    this.subscriber.on('ready', () => {
      if (this.opened && !this.closed) void this.subscribeChannel()
    })
    const renewEvery = Math.max(100, Math.floor(config.lease_ms / 3))
    this.renewTimer = setInterval(() => void this.renew(), renewEvery)
    this.renewTimer.unref()
  }

  enqueue(messages: readonly QueueMessageInput[]): Promise<EnqueueOutcome[]> {
    if (messages.length === 0) return Promise.resolve([])
    const args: Array<Array<string | number>> = []
    try {
      // Indexed loop: for-of allocates an iterator result per step until the code is optimized.
      for (let m = 0; m < messages.length; m++) args.push(this.enqueueArgs(messages[m]!))
    } catch (error) {
      // As an async function answers a throw (a payload JSON refuses: TypeError).
      return Promise.reject(error)
    }
    // Not an async function: its suspended frame and extra promises were a third of what an
    // enqueued message allocated here. The callback holds `args` (the call holds them anyway
    // until Redis answers), not `messages`: a message's payload and the frame text it is a view
    // of are garbage once its arguments are made.
    return this.enqueues.add(args, (outcomes, from, count) => {
      const mine = count === outcomes.length ? outcomes : outcomes.slice(from, from + count)
      for (let m = 0; m < count; m++) {
        if (mine[m] === null) throw Errors.storageError(`queue enqueue: message id ${dec(args[m]![0] as string)} is already stored in redis at ${this.where}`)
      }
      return mine as EnqueueOutcome[]
    })
  }

  /** ENQUEUE's 9 arguments for one message (./scripts.ts). */
  private enqueueArgs(input: QueueMessageInput): Array<string | number> {
    const data = storedPayload(input.data)
    const body: Record<string, unknown> = {}
    const source = input as unknown as Record<string, unknown>
    for (let f = 0; f < BODY_FIELDS.length; f++) {
      const field = BODY_FIELDS[f]!
      if (source[field] !== undefined) body[field] = source[field]
    }
    body.size_bytes = Buffer.byteLength(data.text)
    const idem = input.idempotency
    // Redis forgets the key a minute after its window (the window itself is checked in the script).
    const ttl = idem ? Math.min(Math.max(idem.expires_at - input.enqueued_at, 1), 1e12) + 60_000 : 0
    // Group and key marked, so that an empty name is a name; the free-form part of a packed field last.
    return [
      enc(input.id),
      enc(input.queue),
      enc(targetKey(input.namespace, input.function_id)),
      input.group !== undefined ? `g${enc(input.group)}` : '',
      input.key !== undefined ? `k${enc(input.key)}` : '',
      input.ready_at,
      idem ? `${idem.expires_at}|${Math.floor(ttl)}|${input.enqueued_at}|${enc(idem.key)}` : '',
      input.dead ? `${input.enqueued_at}|${JSON.stringify({ code: input.dead.code, message: input.dead.message })}` : '',
      encodeBody(body, data),
    ]
  }

  /** One ENQUEUE call for a turn's messages: an outcome per message, null where its id is already stored. */
  private async sendEnqueues(messages: Array<Array<string | number>>): Promise<Array<EnqueueOutcome | null>> {
    const reply = (await this.call('enqueue', () => this.run.enqueue(...messages))) as Array<string | number>
    const outcomes: Array<EnqueueOutcome | null> = []
    for (let i = 0; i < reply.length; i++) {
      const r = reply[i]
      outcomes.push(r === 0 ? { id: dec(messages[i]![0] as string), duplicate: false } : r === 2 ? null : { id: dec(String(r)), duplicate: true })
    }
    return outcomes
  }

  /** Sends the turn's acks and first reserve rounds (see {@link turnAcks}). */
  private flushTurn(deferred = false): void {
    if (!deferred && this.turnReserves.length === 0) {
      // Acks settled from a macrotask (a timer, an immediate) run this tick before the microtasks
      // in which the queue worker pumps the slots they freed: wait for those, so that the reserve joins.
      queueMicrotask(() => this.flushTurn(true))
      return
    }
    this.turnScheduled = false
    if (this.turnReserves.length === 0 && this.turnReservesInFlight > 0 && this.turnAcks.length < MAX_BATCH) {
      // A reserve is on its way back, and the worker reserves again when it lands (its slots were
      // freed meanwhile): the acks wait for that reserve to carry them (at most one round trip).
      return
    }
    let ids = this.turnAcks
    let waiters = this.turnAckWaiters
    const reserves = this.turnReserves
    this.turnAcks = []
    this.turnAckWaiters = []
    this.turnReserves = []
    // Either way the message is no longer this backend's to renew (acked, or its ack failed, as a
    // failed release or dead letter leaves it): its lease runs out, and any engine recovers it.
    const settleAcks = (batch: AckWaiter[], flags: unknown) => {
      const acked = Array.isArray(flags) ? flags : []
      for (let i = 0; i < batch.length; i++) {
        this.held.delete(batch[i]!.id)
        batch[i]!.resolve(acked[i] === 1)
      }
    }
    const failAcks = (batch: AckWaiter[], error: unknown) => {
      for (let i = 0; i < batch.length; i++) {
        this.held.delete(batch[i]!.id)
        batch[i]!.reject(error)
      }
    }
    for (const reserve of reserves) {
      // Finish and fetch: the first reserve carries up to MAX_BATCH acks; any other reserve (another queue) goes alone.
      const carried = ids.length > MAX_BATCH ? ids.slice(0, MAX_BATCH) : ids
      const carriedWaiters = waiters.slice(0, carried.length)
      ids = ids.slice(carried.length)
      waiters = waiters.slice(carried.length)
      this.turnReservesInFlight++
      const sent =
        carried.length === 0
          ? this.call('reserve', () => this.run.reserve(reserve.args))
          : this.call('ack-reserve', () => this.run.ackReserve(carried.length, carried, reserve.args))
      ;(sent as Promise<ReserveReply>).then(
        (reply) => {
          this.reserveLanded()
          settleAcks(carriedWaiters, reply[6])
          reserve.resolve(reply)
        },
        (error) => {
          this.reserveLanded()
          failAcks(carriedWaiters, error)
          reserve.reject(error)
        },
      )
    }
    for (let at = 0; at < ids.length; at += MAX_BATCH) {
      const batch = ids.slice(at, at + MAX_BATCH)
      const batchWaiters = waiters.slice(at, at + MAX_BATCH)
      this.call('ack', () => this.run.ack(batch)).then(
        (flags) => settleAcks(batchWaiters, flags),
        (error) => failAcks(batchWaiters, error),
      )
    }
  }

  /**
   * A turn's reserve answered: the acks that waited for it go with the reserve its caller makes
   * next (that one's turn carries them), or alone once the callers have run (an immediate later).
   */
  private reserveLanded(): void {
    this.turnReservesInFlight--
    if (this.turnAcks.length === 0) return
    setImmediate(() => {
      if (this.turnAcks.length > 0) this.scheduleTurn()
    })
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return
    this.turnScheduled = true
    process.nextTick(() => this.flushTurn())
  }

  /** One reserve script call: alone, or with the acks of this turn when `joinTurn`. */
  private reserveCall(args: Array<string | number>, joinTurn: boolean): Promise<ReserveReply> {
    if (!joinTurn) return this.call('reserve', () => this.run.reserve(args)) as Promise<ReserveReply>
    if (this.closed) return Promise.reject(new Error(`redis queue adapter for ${this.where} is closed`))
    return new Promise((resolve, reject) => {
      this.turnReserves.push({ args, resolve, reject })
      this.scheduleTurn()
    })
  }

  async reserve(queue: string, request: ReserveRequest): Promise<QueueMessage[]> {
    const { now, startable } = request
    const taken: QueueMessage[] = []
    let more = false
    let next: number | null | undefined
    // Every round starts where the last call left off (a new round only adds verdicts); the last
    // round's answer is where the next call starts.
    const from = this.lastReserve.get(queue)?.resume ?? { group: 0, standard: 0 }
    let resume = from
    // A target the script has no verdict for costs one more call, once per new target.
    for (let round = 0; round < 8 && taken.length < request.limit; round++) {
      const allowed: string[] = []
      const refused: string[] = []
      if (startable) {
        for (const [key, target] of this.verdicts) (startable(target.namespace, target.functionId) ? allowed : refused).push(key)
      }
      const reply = await this.reserveCall(
        [enc(queue), now, request.limit - taken.length, this.config.lease_ms, RESERVE_SCAN_BUDGET, from.group, from.standard, startable ? '1' : '0', allowed.length, ...allowed, refused.length, ...refused],
        round === 0,
      )
      const [budgetOut, unknown, out, nextAt, groupOffset, standardOffset] = reply
      resume = { group: groupOffset, standard: standardOffset }
      more = budgetOut === 1
      next = nextAt === null || nextAt === undefined ? null : Number(nextAt)
      for (let i = 0; i < out.length; i += 5) {
        const stored = String(out[i])
        this.held.add(stored)
        taken.push(this.message(dec(stored), queue, 'in_flight', Number(out[i + 1]), Number(out[i + 2]), Number(out[i + 3]), String(out[i + 4])))
      }
      if (unknown.length === 0 || !startable) break
      if (this.verdicts.size + unknown.length > MAX_TARGET_VERDICTS) this.verdicts.clear()
      for (const encoded of unknown) {
        // Keyed as the script sees targets (encoded); the verdict is asked with the decoded names.
        const key = dec(encoded)
        const cut = key.indexOf('\u0000')
        this.verdicts.set(encoded, { namespace: key.slice(0, cut), functionId: key.slice(cut + 1) })
      }
    }
    this.lastReserve.set(queue, { now, more, next: taken.length < request.limit ? next : undefined, resume })
    return taken
  }

  ack(id: string): Promise<boolean> {
    const stored = enc(id)
    if (this.closed) {
      this.held.delete(stored)
      return Promise.reject(new Error(`redis queue adapter for ${this.where} is closed`))
    }
    // Not an async function: one promise per ack; the lease stops being renewed once the ack settles (see settleAck).
    return new Promise<boolean>((resolve, reject) => {
      this.turnAcks.push(stored)
      this.turnAckWaiters.push({ id: stored, resolve, reject })
      this.scheduleTurn()
    })
  }

  async release(id: string, options: { ready_at: number; refund?: boolean }): Promise<boolean> {
    try {
      return (await this.call('release', () => this.run.release(enc(id), options.ready_at, options.refund ? '1' : '0'))) === 1
    } finally {
      this.held.delete(enc(id))
    }
  }

  async deadLetter(id: string, error: QueueError, failedAt: number): Promise<boolean> {
    try {
      return (await this.call('dead-letter', () => this.run.deadLetter(enc(id), JSON.stringify({ code: error.code, message: error.message, stacktrace: error.stacktrace }), failedAt))) === 1
    } finally {
      this.held.delete(enc(id))
    }
  }

  async deadLetterQueue(queue: string, error: QueueError, failedAt: number): Promise<number> {
    return Number(await this.call('dead-letter', () => this.run.deadLetterQueue(enc(queue), JSON.stringify({ code: error.code, message: error.message }), failedAt)))
  }

  async redrive(queue: string, now: number): Promise<number> {
    return Number(await this.call('redrive', () => this.run.redrive(enc(queue), now)))
  }

  async redriveMessage(queue: string, id: string, now: number): Promise<boolean> {
    return (await this.call('redrive', () => this.run.redriveOne(enc(queue), enc(id), now))) === 1
  }

  async discard(queue: string, id: string): Promise<boolean> {
    return (await this.call('discard', () => this.run.discard(enc(queue), enc(id)))) === 1
  }

  async get(id: string): Promise<QueueMessage | undefined> {
    const f = (await this.call('get', () => this.run.get(enc(id)))) as string[]
    if (f.length === 0) return undefined
    const [s, a, n, r, q, b, e, fa] = f as [string, string, string, string, string, string, string, string]
    const message = this.message(id, dec(q), s === 'i' ? 'in_flight' : s === 'd' ? 'dead' : 'pending', Number(a), Number(n), Number(r), b)
    if (e !== '') message.error = jsonParse(e) as QueueError
    if (fa !== '') message.failed_at = Number(fa)
    return message
  }

  async counts(queue: string, now: number): Promise<QueueCounts> {
    const [pending, delayed, in_flight, dead] = (await this.call('counts', () => this.run.counts(enc(queue), now))) as number[]
    return { pending: pending!, delayed: delayed!, in_flight: in_flight!, dead: dead! }
  }

  async deadLetters(queue: string, offset: number, limit: number): Promise<QueueMessage[]> {
    if (limit <= 0) return []
    const stop = offset + limit - 1 > 2 ** 31 ? -1 : offset + limit - 1
    const out = (await this.call('dead-letters', () => this.run.deadLetters(enc(queue), offset, stop))) as string[]
    const messages: QueueMessage[] = []
    for (let i = 0; i < out.length; i += 7) {
      const message = this.message(dec(out[i]!), queue, 'dead', Number(out[i + 1]), Number(out[i + 2]), Number(out[i + 3]), out[i + 4]!)
      if (out[i + 5] !== '') message.error = jsonParse(out[i + 5]!) as QueueError
      if (out[i + 6] !== '') message.failed_at = Number(out[i + 6])
      messages.push(message)
    }
    return messages
  }

  async queues(): Promise<string[]> {
    return (await this.call('queues', () => this.client.hkeys(`${this.prefix}queues`))).map(dec)
  }

  async nextReadyAt(queue: string, now: number): Promise<number | undefined> {
    const last = this.lastReserve.get(queue)
    // Messages ready at the last reserve and still pending were skipped (busy key, target not
    // startable): they wait for an event, not for a time. Without a reserve, everything counts.
    let next: number | undefined
    if (last?.next !== undefined) next = last.next ?? undefined
    else {
      const reply = await this.call('next-ready', () => this.run.nextReady(enc(queue), last ? last.now : -1))
      next = reply === null || reply === undefined ? undefined : Number(reply)
    }
    if (last?.more) next = Math.min(next ?? Infinity, now + RESCAN_MS)
    return next
  }

  recover(now: number, allowedAttempts: (queue: string) => number): Promise<RecoverOutcome> {
    return this.reclaim(now, allowedAttempts, false)
  }

  recoverExpired(now: number, allowedAttempts: (queue: string) => number): Promise<RecoverOutcome> {
    return this.reclaim(now, allowedAttempts, true)
  }

  onWake(listener: WakeListener): () => void {
    const entry: WakeListener = (queue) => listener(queue)
    this.wakeListeners.add(entry)
    return () => {
      this.wakeListeners.delete(entry)
    }
  }

  async saveSubscriber(record: SubscriberRecord): Promise<void> {
    await this.call('save-subscriber', () => this.client.hset(`${this.prefix}subs`, enc(record.queue), JSON.stringify(record)))
  }

  async deleteSubscriber(queue: string): Promise<void> {
    await this.call('delete-subscriber', () => this.client.hdel(`${this.prefix}subs`, enc(queue)))
  }

  async subscribers(): Promise<SubscriberRecord[]> {
    const values = await this.call('subscribers', () => this.client.hvals(`${this.prefix}subs`))
    return values.map((text) => jsonParse(text) as SubscriberRecord)
  }

  /**
   * Stops renewing and disconnects. Messages still held stay in flight until their lease runs out,
   * then any engine's worker takes them back (as after a crash).
   */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    liveOwners.delete(this.owner)
    clearInterval(this.renewTimer)
    this.wakeListeners.clear()
    this.client.disconnect()
    this.subscriber.disconnect()
  }

  // ---- internals ------------------------------------------------------------------------------

  private message(id: string, queue: string, state: QueueMessage['state'], attempts: number, seq: number, readyAt: number, bodyText: string): QueueMessage {
    const { fields: body, data } = decodeBody(bodyText)
    const message: QueueMessage = {
      id,
      queue,
      function_id: body.function_id as string,
      namespace: body.namespace as string,
      data,
      enqueued_at: body.enqueued_at as number,
      ready_at: readyAt,
      state,
      attempts,
      seq,
      size_bytes: body.size_bytes as number,
    }
    for (let f = 0; f < OPTIONAL_FIELDS.length; f++) {
      const field = OPTIONAL_FIELDS[f]!
      if (body[field] !== undefined) (message as unknown as Record<string, unknown>)[field] = body[field]
    }
    return message
  }

  private async reclaim(now: number, allowedAttempts: (queue: string) => number, onlyExpired: boolean): Promise<RecoverOutcome> {
    const outcome = { requeued: 0, deadLettered: 0 }
    const live = [...liveOwners]
    const scope = onlyExpired ? ['1', '', 0] : ['0', this.engine, live.length, ...live]
    for (let round = 0; round < 100; round++) {
      const found = (await this.call('recover', () => this.run.recoverScan(...scope))) as string[]
      if (found.length === 0) break
      const actions: string[] = []
      for (let i = 0; i < found.length; i += 3) {
        const id = found[i]!
        actions.push(id, Number(found[i + 2]) >= allowedAttempts(dec(found[i + 1]!)) ? 'd' : 'r')
        this.held.delete(id)
      }
      const [requeued, dead] = (await this.call('recover', () => this.run.recoverApply(now, JSON.stringify(INTERRUPTED), ...scope, ...actions))) as number[]
      outcome.requeued += requeued!
      outcome.deadLettered += dead!
      if (requeued! + dead! === 0) break
    }
    return outcome
  }

  private async renew(): Promise<void> {
    if (this.closed || this.renewing || this.held.size === 0 || this.client.status !== 'ready') return
    this.renewing = true
    try {
      const lost = (await this.run.renew(this.config.lease_ms, [...this.held])) as string[]
      for (const id of lost) this.held.delete(id)
    } catch {
      // Redis is unreachable: the next tick tries again; a lease that runs out meanwhile lets
      // another engine deliver the message again (at least once).
    } finally {
      this.renewing = false
    }
  }

  /** Runs one Redis call; a failure becomes `STORAGE_ERROR` or `ADAPTER_UNAVAILABLE` (../../redis.ts). */
  private async call<T>(operation: string, run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error(`redis queue adapter for ${this.where} is closed`)
    try {
      return await run()
    } catch (error) {
      throw redisCallError(error, this.where, `queue ${operation}`)
    }
  }

  private async subscribeChannel(): Promise<boolean> {
    try {
      await this.subscriber.subscribe(this.channel)
    } catch {
      return false
    }
    // Wakes sent while the subscription was down are lost: every queue may have work.
    if (this.subscribedOnce) this.emitWake(undefined)
    this.subscribedOnce = true
    return true
  }

  private receive(text: string): void {
    if (this.closed) return
    const cut = text.indexOf('\n')
    if (cut < 0 || text.slice(0, cut) === this.owner) return
    this.emitWake(dec(text.slice(cut + 1)))
  }

  private emitWake(queue: string | undefined): void {
    for (const listener of this.wakeListeners) {
      try {
        listener(queue)
      } catch {
        // The listener's fault; the others still hear of it.
      }
    }
  }
}

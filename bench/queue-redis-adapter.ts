/**
 * The `redis` queue adapter alone (issue 19): its engine-side CPU per message, without the
 * engine's invocation path (frames, spans) that `bench/queue.ts` measures with it. One process
 * opens the adapter from `dist/` on a private redis-server (AOF everysec, as bench/queue.ts),
 * enqueues the messages as a producer does (one `enqueue` per message, 256 awaiting at once), then
 * consumes them as the queue worker does at concurrency 10: each finished message is acknowledged
 * and its slot reserved again in the same turn; a handler is one `setImmediate` away, and the
 * results of one reserve settle `BENCH_SETTLE` (default 10) per turn, as an engine's socket read
 * carries several results or one.
 *
 *   node bench/queue-redis-adapter.ts [messages=20000] [rounds=3]
 *
 * Prints one JSON line per round: this process's CPU per message (user + system, µs) for the
 * enqueues and for reserve + ack, redis-server's CPU per message, Redis script calls per message,
 * msg/s of the consume phase and the load average. `SVC_BENCH_ROOT=<tree>` takes the adapter from
 * another build (A/B against an earlier commit).
 */
import type { ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { runMain } from './measure.ts'
import { commandStats, startRedis } from './peers/redis-server.ts'

const ROOT = process.env.SVC_BENCH_ROOT ?? fileURLToPath(new URL('..', import.meta.url))
const CONCURRENCY = 10
const WINDOW = 256
/** Results settled per turn (one socket read of the engine): `BENCH_SETTLE`, default 10 (a whole reserve). */
const SETTLE = Number(process.env.BENCH_SETTLE ?? 10)
const T0 = 1_700_000_000_000

/** User + system CPU ms of another process (/proc, USER_HZ 100). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

function ownCpuMs(): number {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

function scriptCalls(port: number): number {
  const calls = commandStats(port)
  return (calls?.get('evalsha') ?? 0) + (calls?.get('eval') ?? 0)
}

const children: ChildProcess[] = []

async function main(): Promise<void> {
  const messages = Number(process.argv[2] ?? 20_000)
  const rounds = Number(process.argv[3] ?? 3)
  const redis = await startRedis(children)
  const { port, server } = redis
  const { RedisQueueBackend } = (await import(pathToFileURL(join(ROOT, 'dist/runtime/adapters/queue/redis/redis.js')).href)) as typeof import('../runtime/adapters/queue/redis/redis.ts')
  try {
    for (let round = 0; round < rounds; round++) {
      const backend = await RedisQueueBackend.open({ url: `redis://127.0.0.1:${port}`, key_prefix: `r${round}:`, lease_ms: 30_000 })
      const queue = 'bench'
      // Enqueue phase: as a producer with 256 enqueues awaiting their receipt.
      let cpu0 = ownCpuMs()
      let redis0 = cpuMsOf(server.pid!)
      let calls0 = scriptCalls(port)
      let next = 0
      const lane = async () => {
        while (next < messages) {
          const i = next++
          await backend.enqueue([{ id: randomUUID(), queue, function_id: 'bench::job', namespace: 'default', data: { i }, enqueued_at: T0, ready_at: T0 }])
        }
      }
      await Promise.all(Array.from({ length: WINDOW }, lane))
      const enqueue = { cpu: ownCpuMs() - cpu0, redis: cpuMsOf(server.pid!) - redis0, calls: scriptCalls(port) - calls0 }
      // Consume phase: the queue worker's pump at concurrency 10.
      cpu0 = ownCpuMs()
      redis0 = cpuMsOf(server.pid!)
      calls0 = scriptCalls(port)
      const started = performance.now()
      const acks: Array<Promise<boolean>> = []
      let inFlight = 0
      let done = 0
      let pumping = false
      let again = false
      let finish!: () => void
      const finished = new Promise<void>((resolve) => (finish = resolve))
      // The last pump's reserve has answered (nothing is called on a closed backend).
      let settled!: () => void
      const idle = new Promise<void>((resolve) => (settled = resolve))
      const pump = async (): Promise<void> => {
        if (pumping) {
          again = true
          return
        }
        pumping = true
        do {
          again = false
          const free = CONCURRENCY - inFlight
          if (free <= 0) break
          const got = await backend.reserve(queue, { now: T0, limit: free })
          inFlight += got.length
          // The handlers' results arrive `SETTLE` to a socket read: each read's results settle in one turn.
          for (let at = 0; at < got.length; at += SETTLE) {
            const results = got.slice(at, at + SETTLE)
            setImmediate(() => {
              for (const message of results) acks.push(backend.ack(message.id))
              inFlight -= results.length
              done += results.length
              if (done === messages) finish()
              else queueMicrotask(() => void pump())
            })
          }
          if (got.length === free) again = true
        } while (again && done < messages)
        pumping = false
        if (done === messages) settled()
      }
      void pump()
      await finished
      const seconds = (performance.now() - started) / 1000
      const consume = { cpu: ownCpuMs() - cpu0, redis: cpuMsOf(server.pid!) - redis0, calls: scriptCalls(port) - calls0 }
      if (pumping) await idle
      await Promise.all(acks)
      await backend.close()
      // To 0.1 µs: the adapter's cost per message is a few µs, and a change of one is worth seeing.
      const per = (ms: number) => Math.round((ms * 10_000) / messages) / 10
      console.log(
        JSON.stringify({
          round,
          messages,
          enqueue_cpu_us: per(enqueue.cpu),
          enqueue_redis_us: per(enqueue.redis),
          enqueue_scripts: Number((enqueue.calls / messages).toFixed(3)),
          consume_cpu_us: per(consume.cpu),
          consume_redis_us: per(consume.redis),
          consume_scripts: Number((consume.calls / messages).toFixed(3)),
          consume_per_second: Math.round(messages / seconds),
          settle_per_turn: SETTLE,
          load: Number(loadavg()[0]!.toFixed(2)),
        }),
      )
    }
  } finally {
    await redis.close()
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) runMain(main, children)

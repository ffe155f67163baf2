/**
 * Stream fan-out benchmark (builtins.md §6.6): one `stream::set`, called by a svc-sdk worker, to
 * 1, 100 and 1,000 WebSocket clients subscribed to the group; the time from the call until the last
 * client has the event, p50/p99 over `ROUNDS` rounds. Then the engine's memory per idle client:
 * RSS and heap deltas over 1,000 idle joined clients, after a GC, in KiB per client (measured
 * first, on a fresh engine).
 *
 * Engine in its own process (bench/stream-engine.ts); clients and caller in this one.
 * Prints one JSON line: `{fanout: {<n>: {p50_ms, p99_ms}}, idle: {rss_kib, heap_kib}}`.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { registerWorker } from 'svc-sdk'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 50)
const SIZES = [1, 100, 1000]
const IDLE_CLIENTS = 1000

const engineProcess = spawn(process.execPath, ['--expose-gc', fileURLToPath(new URL('./stream-engine.ts', import.meta.url))], {
  stdio: ['pipe', 'pipe', 'inherit'],
})
const lines = createInterface({ input: engineProcess.stdout! })[Symbol.asyncIterator]()
async function nextJson(): Promise<Record<string, any>> {
  for (;;) {
    const { value, done } = await lines.next()
    if (done) throw new Error('the engine process ended')
    try {
      return JSON.parse(value)
    } catch {
      /* log line */
    }
  }
}
const { engine_url, stream_url } = await nextJson()

/** Opens `n` clients joined to `group`; `onFrame` hears every frame after `sync`. */
async function openClients(n: number, group: string, onFrame: () => void): Promise<WebSocket[]> {
  const sockets: WebSocket[] = []
  const batch = 100
  for (let start = 0; start < n; start += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, n - start) }, (_, i) => new Promise<void>((resolve, reject) => {
        const socket = new WebSocket(stream_url)
        let synced = false
        socket.on('message', () => {
          if (!synced) {
            synced = true
            return resolve()
          }
          onFrame()
        })
        socket.once('open', () => socket.send(JSON.stringify({ type: 'join', data: { subscriptionId: `s${start + i}`, streamName: 'bench', groupId: group } })))
        socket.once('error', reject)
        sockets.push(socket)
      })),
    )
  }
  return sockets
}

async function closeAll(sockets: WebSocket[]): Promise<void> {
  await Promise.all(sockets.map((s) => new Promise<void>((resolve) => {
    if (s.readyState === WebSocket.CLOSED) return resolve()
    s.once('close', () => resolve())
    s.close()
  })))
}

const caller = registerWorker(engine_url, { workerName: 'bench-stream-caller' })
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
const round2 = (x: number) => Math.round(x * 100) / 100

// Memory first, on a fresh engine, so the fan-out rounds' garbage does not blur the deltas.
const mem = async () => {
  engineProcess.stdin!.write('mem\n')
  return nextJson()
}
// Warm up (code, pools) with clients that come and go, then measure on a quiet engine.
await closeAll(await openClients(200, 'warm-up', () => {}))
await new Promise((resolve) => setTimeout(resolve, 500))
const before = await mem()
const idleSockets = await openClients(IDLE_CLIENTS, 'idle', () => {})
await new Promise((resolve) => setTimeout(resolve, 500))
const afterIdle = await mem()
const idle = {
  clients: IDLE_CLIENTS,
  rss_kib: round2((afterIdle.rss - before.rss) / 1024 / IDLE_CLIENTS),
  heap_kib: round2((afterIdle.heap - before.heap) / 1024 / IDLE_CLIENTS),
}
await closeAll(idleSockets)

const fanout: Record<number, { p50_ms: number; p99_ms: number }> = {}
for (const n of SIZES) {
  let received = 0
  let target = Infinity
  let done: (() => void) | null = null
  const sockets = await openClients(n, `g${n}`, () => {
    if (++received === target) done?.()
  })
  const times: number[] = []
  for (let round = -5; round < ROUNDS; round++) {
    received = 0
    target = n
    const arrived = new Promise<void>((resolve) => (done = resolve))
    const t0 = performance.now()
    await caller.trigger({ function_id: 'stream::set', payload: { stream_name: 'bench', group_id: `g${n}`, item_id: `r${round}`, data: { round, text: 'x'.repeat(64) } } })
    await arrived
    if (round >= 0) times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  fanout[n] = { p50_ms: round2(percentile(times, 50)), p99_ms: round2(percentile(times, 99)) }
  await closeAll(sockets)
}

await caller.shutdown()
engineProcess.stdin!.end()
console.log(JSON.stringify({ fanout, idle }))

/**
 * A flood to a callee that stopped reading, and an independent caller's latency meanwhile
 * (issue 16 item 5). Three processes: the engine (no built-ins); the flood (a worker that registers
 * `slow::fn` and pauses its TCP socket, and a caller that keeps `BENCH_FLOOD_IN_FLIGHT` calls of
 * `BENCH_FLOOD_BYTES` to it outstanding); the measure (a worker serving `healthy::echo` and a caller
 * that calls it one call at a time for `BENCH_DURATION_MS`). Prints one JSON line:
 * `{p50_ms, p99_ms, max_ms, samples, flood: {sent, answered, unanswered, codes}, slow_callee_dropped_after_ms}`,
 * and the engine's event-loop delay on stderr. `BENCH_ENGINE_PROF=<dir>` writes the engine's CPU
 * profile there.
 *
 *   npm exec -- node bench/slow-callee.ts
 *
 * Measured on the shared 2-core machine (load 6–8), three alternated runs each, 15 s: before the
 * slow-consumer rule the independent caller's p99 was 184/319/696 ms (p50 up to 188 ms), 10,000
 * flood calls were never answered and the callee never dropped; after, p99 69/46/49 ms (p50
 * 0.1 ms), every call answered, the callee dropped ~11 s in (drain_timeout_ms 10 s).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { firstJson } from './lines.ts'
import { runMain } from './measure.ts'

const [role, url] = process.argv.slice(2)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 15000)
const FLOOD_BYTES = Number(process.env.BENCH_FLOOD_BYTES ?? 1024)
const FLOOD_IN_FLIGHT = Number(process.env.BENCH_FLOOD_IN_FLIGHT ?? 20000)

async function open(target: string): Promise<WebSocket> {
  const ws = new WebSocket(target, { perMessageDeflate: false })
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject)
    ws.once('message', () => resolve()) // workerregistered
  })
  return ws
}

async function engineRole(): Promise<void> {
  const { Engine } = await import('../runtime/engine/engine.ts')
  const { silentLogger } = await import('../runtime/engine/logger.ts')
  const { LISTENER_DEFAULTS } = await import('../runtime/engine/types.ts')
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-slow-'))
  const engine = new Engine(
    { listeners: [{ ...LISTENER_DEFAULTS, port: 0 }], registration_namespace_grace_ms: 20, internal_invocation_timeout_ms: 30000, data_dir: dataDir, builtins: {}, local_workers: [] },
    { log: silentLogger, builtins: [] },
  )
  await engine.start()
  const { monitorEventLoopDelay } = await import('node:perf_hooks')
  const delay = monitorEventLoopDelay({ resolution: 5 })
  delay.enable()
  console.log(JSON.stringify({ engine_url: engine.workerUrls[0] }))
  process.stdin.resume()
  process.stdin.on('end', async () => {
    delay.disable()
    const ms = (ns: number) => Math.round(ns / 1e5) / 10
    console.error(JSON.stringify({ engine_event_loop_delay_ms: { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), max: ms(delay.max) } }))
    await engine.stop()
    await rm(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
}

async function floodRole(): Promise<void> {
  const slow = await open(url!)
  slow.send(JSON.stringify({ type: 'registerfunction', id: 'slow::fn' }))
  await new Promise((r) => setTimeout(r, 100))
  ;(slow as unknown as { _socket: Socket })._socket.pause()
  const caller = await open(url!)
  const codes: Record<string, number> = {}
  let sent = 0
  let answered = 0
  // The slow callee's socket is paused, so it never sees its own close: the first
  // invocation_stopped tells when the engine dropped it.
  let droppedAt: number | undefined
  caller.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    if (frame.type !== 'invocationresult') return
    answered++
    const code = frame.error?.code ?? 'result'
    codes[code] = (codes[code] ?? 0) + 1
    if (code === 'invocation_stopped') droppedAt ??= Date.now()
  })
  const payload = 'x'.repeat(FLOOD_BYTES)
  const startedAt = Date.now()
  console.log(JSON.stringify({ flooding: true }))
  let flooding = true
  const pump = () => {
    // Keep FLOOD_IN_FLIGHT calls unanswered, without growing this process's own send buffer.
    while (flooding && sent - answered < FLOOD_IN_FLIGHT && caller.bufferedAmount < 1 << 20) {
      caller.send(`{"type":"invokefunction","invocation_id":"f${sent++}","function_id":"slow::fn","data":"${payload}"}`)
    }
    if (flooding) setTimeout(pump, 1)
  }
  pump()
  await new Promise((r) => setTimeout(r, DURATION_MS))
  flooding = false
  await new Promise((r) => setTimeout(r, 1000))
  const dropped = droppedAt === undefined ? null : droppedAt - startedAt
  console.log(JSON.stringify({ flood: { sent, answered, unanswered: sent - answered, codes }, slow_callee_dropped_after_ms: dropped }))
  process.exit(0)
}

async function measureRole(): Promise<void> {
  const healthy = await open(url!)
  healthy.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    if (frame.type === 'invokefunction') healthy.send(JSON.stringify({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, result: frame.data }))
  })
  healthy.send(JSON.stringify({ type: 'registerfunction', id: 'healthy::echo' }))
  const caller = await open(url!)
  const waiting = new Map<string, () => void>()
  caller.on('message', (data) => {
    const frame = JSON.parse(data.toString())
    if (frame.type === 'invocationresult') waiting.get(frame.invocation_id)?.()
  })
  let n = 0
  const call = () =>
    new Promise<void>((resolve) => {
      const id = `m${n++}`
      waiting.set(id, () => (waiting.delete(id), resolve()))
      caller.send(JSON.stringify({ type: 'invokefunction', invocation_id: id, function_id: 'healthy::echo', data: { n } }))
    })
  await new Promise((r) => setTimeout(r, 200))
  for (let i = 0; i < 200; i++) await call()
  console.log(JSON.stringify({ ready: true }))
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))
  const times: number[] = []
  const until = Date.now() + DURATION_MS
  while (Date.now() < until) {
    const start = performance.now()
    await call()
    times.push(performance.now() - start)
  }
  times.sort((a, b) => a - b)
  const at = (q: number) => Math.round(times[Math.min(times.length - 1, Math.floor(times.length * q))]! * 10) / 10
  console.log(JSON.stringify({ p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1), samples: times.length }))
  process.exit(0)
}

async function main(): Promise<void> {
  const self = fileURLToPath(import.meta.url)
  const children: ChildProcess[] = []
  const start = (nodeArgs: string[], args: string[]) => {
    const child = spawn(process.execPath, [...nodeArgs, self, ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
    children.push(child)
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    // firstJson's for-await would close the interface when it returns; keep it open for later reads.
    return { child, lines: { next: () => lines.next(), [Symbol.asyncIterator]() { return this } } as AsyncIterableIterator<string> }
  }
  runMain(async () => {
    const engine = start(process.env.BENCH_ENGINE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_ENGINE_PROF}`] : [], ['engine'])
    const { engine_url } = await firstJson(engine.lines, 'engine_url')
    const measure = start([], ['measure', engine_url])
    await firstJson(measure.lines, 'ready')
    const flood = start([], ['flood', engine_url])
    await firstJson(flood.lines, 'flooding')
    measure.child.stdin!.write('go\n')
    const latency = await firstJson(measure.lines, 'p99_ms')
    const floodResult = await firstJson(flood.lines, 'flood')
    console.log(JSON.stringify({ ...latency, ...floodResult }))
    const exited = new Promise((resolve) => engine.child.once('exit', resolve))
    engine.child.stdin!.end()
    await exited
  }, children)
}

if (role === 'engine') await engineRole()
else if (role === 'flood') await floodRole()
else if (role === 'measure') await measureRole()
else await main()

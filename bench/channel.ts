/**
 * Channel throughput (issue 17; protocol.md §9, sdk.md §9): MB/s of one channel between two worker
 * processes through the engine, against a direct WebSocket between the same two processes, in the
 * same run.
 *
 * Processes: an engine (`svc --json`, default built-ins), a writer and a reader. The same writer
 * and reader processes serve every mode, alternated `BENCH_CHANNEL_ROUNDS` times (default 3):
 *
 *   direct   the writer connects to a WebSocket server in the reader process
 *   channel  `engine::channels::create` (buffer_size 64), the writer opens the write end and the
 *            reader the read end on the engine's worker listener (raw `ws` clients)
 *   sdk      the same channel through svc-sdk's ends: the writer and reader processes are svc-sdk
 *            workers (telemetry off); the bench invokes `bench::read {body: readerRef}` and
 *            `bench::write {out: writerRef}`, the refs arrive as live ends; the writer awaits
 *            `writer.write(frame)` per 64 KiB frame (its own backpressure: 1 MiB in the socket)
 *            and closes, the reader counts with `for await (const chunk of body)`
 *
 * The writer sends `BENCH_CHANNEL_MIB` MiB (default 256) as 64 KiB binary frames, keeping at most
 * 16 frames (1 MiB) not yet written to its socket (raw modes: send callbacks; sdk: bufferedAmount),
 * then closes with 1000. The reader counts bytes from its first frame to the close; MB/s is 10^6
 * bytes per second. Each mode's median round is reported, with the CPU time the reader, the writer and
 * the engine process (channel modes, from `/proc`, Linux only) spent on the transfer: on a shared
 * machine these move less than MB/s. `node bench/channel.ts` prints one JSON line: `{mib,
 * frame_kib, rounds, direct_mb_per_s, channel_mb_per_s, sdk_mb_per_s, direct_reader_cpu_ms,
 * channel_reader_cpu_ms, sdk_reader_cpu_ms, direct_writer_cpu_ms, channel_writer_cpu_ms,
 * sdk_writer_cpu_ms, channel_engine_cpu_ms, sdk_engine_cpu_ms, runs}` (the writer's CPU from its
 * first frame to its close).
 *
 * `BENCH_ENGINE_NODE_ARGS` (space-separated) is passed to the engine's `node` (to profile it).
 *
 * Roles (internal): `node bench/channel.ts reader` / `writer` take commands as JSON lines on stdin.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { registerWorker, type ChannelReader, type ChannelWriter, type SvcClient } from 'svc-sdk'
import WebSocket, { WebSocketServer } from 'ws'
import { runMain } from './measure.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const MIB = Number(process.env.BENCH_CHANNEL_MIB ?? 256)
const ROUNDS = Number(process.env.BENCH_CHANNEL_ROUNDS ?? 3)
const FRAME_BYTES = 64 * 1024
/** Frames the writer keeps not yet written to its socket. */
const WINDOW = 16

type Command = { mode: 'direct'; url: string } | { mode: 'channel'; url: string } | { mode: 'sdk'; engine: string }

/** Commands arrive one JSON line at a time on stdin. */
async function* commands(): AsyncGenerator<Command> {
  for await (const line of createInterface({ input: process.stdin })) if (line.trim() !== '') yield JSON.parse(line) as Command
}

/** Counts one connection's bytes from its first frame to its close and prints the result. */
function count(ws: WebSocket, mode: string): Promise<void> {
  return new Promise((resolve) => {
    let bytes = 0
    let first = 0
    let cpu = process.cpuUsage()
    ws.on('message', (data: Buffer) => {
      if (bytes === 0) {
        first = performance.now()
        cpu = process.cpuUsage()
      }
      bytes += data.length
    })
    ws.on('close', (code) => {
      const ms = performance.now() - first
      const used = process.cpuUsage(cpu)
      const cpuMs = Math.round((used.user + used.system) / 1000)
      console.log(JSON.stringify({ result: true, mode, code, bytes, ms: Math.round(ms), mb_per_s: Math.round(bytes / 1e6 / (ms / 1000)), cpu_ms: cpuMs }))
      resolve()
    })
  })
}

/** CPU time of a process so far, ms (user + system, from /proc; undefined where there is none). */
function processCpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return undefined
  }
}

/** An svc-sdk worker of a role process (sdk mode), connected once; telemetry off like the raw ends. */
async function sdkWorker(engine: string, name: string, register: (client: SvcClient) => void): Promise<void> {
  const client = registerWorker(engine, { workerName: name, otel: { enabled: false } })
  register(client)
  await new Promise<void>((resolve) => client.addConnectionStateListener((state) => state === 'connected' && resolve()))
  console.log(JSON.stringify({ sdk_ready: true }))
}

async function reader(): Promise<void> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 64 * 1024 * 1024 })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  server.on('connection', (ws) => void count(ws, 'direct'))
  console.log(JSON.stringify({ port: (server.address() as AddressInfo).port }))
  for await (const command of commands()) {
    if (command.mode === 'sdk') {
      await sdkWorker(command.engine, 'bench-channel-reader', (client) =>
        client.registerFunction('bench::read', async ({ body }: { body: ChannelReader }) => {
          let bytes = 0
          let first = 0
          let cpu = process.cpuUsage()
          for await (const chunk of body) {
            if (bytes === 0) {
              first = performance.now()
              cpu = process.cpuUsage()
            }
            bytes += chunk.byteLength
          }
          const ms = performance.now() - first
          const used = process.cpuUsage(cpu)
          return { mode: 'sdk', code: 1000, bytes, ms: Math.round(ms), mb_per_s: Math.round(bytes / 1e6 / (ms / 1000)), cpu_ms: Math.round((used.user + used.system) / 1000) }
        }),
      )
      continue
    }
    if (command.mode !== 'channel') continue
    const ws = new WebSocket(command.url, { perMessageDeflate: false })
    await new Promise((resolve) => ws.once('open', resolve))
    console.log(JSON.stringify({ connected: true }))
    void count(ws, 'channel')
  }
}

async function writer(): Promise<void> {
  const frame = Buffer.alloc(FRAME_BYTES, 7)
  const frames = Math.ceil((MIB * 1024 * 1024) / FRAME_BYTES)
  console.log(JSON.stringify({ ready: true }))
  for await (const command of commands()) {
    if (command.mode === 'sdk') {
      await sdkWorker(command.engine, 'bench-channel-writer', (client) =>
        client.registerFunction('bench::write', async ({ out }: { out: ChannelWriter }) => {
          const cpu = process.cpuUsage()
          for (let i = 0; i < frames; i++) await out.write(frame)
          await out.close()
          const used = process.cpuUsage(cpu)
          return { cpu_ms: Math.round((used.user + used.system) / 1000) }
        }),
      )
      continue
    }
    const ws = new WebSocket(command.url, { perMessageDeflate: false })
    await new Promise((resolve) => ws.once('open', resolve))
    const cpu = process.cpuUsage()
    let unwritten = 0
    let wake: (() => void) | undefined
    const written = () => {
      unwritten--
      wake?.()
    }
    for (let i = 0; i < frames; i++) {
      while (unwritten >= WINDOW) await new Promise<void>((resolve) => (wake = resolve))
      unwritten++
      ws.send(frame, { binary: true }, written)
    }
    ws.close(1000)
    await new Promise((resolve) => ws.once('close', resolve))
    const used = process.cpuUsage(cpu)
    console.log(JSON.stringify({ sent: true, cpu_ms: Math.round((used.user + used.system) / 1000) }))
  }
}

const children: ChildProcess[] = []

/** A child process whose JSON lines can be awaited one after another (`firstJson` would close the stream). */
function start(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] })
  children.push(child)
  const lines: Array<Record<string, any>> = []
  let waiting: (() => void) | undefined
  let ended = false
  const input = createInterface({ input: child.stdout! })
  input.on('line', (line) => {
    try {
      lines.push(JSON.parse(line))
    } catch {
      return
    }
    waiting?.()
  })
  input.on('close', () => {
    ended = true
    waiting?.()
  })
  /** The next JSON line that has `key` (earlier lines without it are dropped). */
  const next = async (key: string): Promise<Record<string, any>> => {
    for (;;) {
      const index = lines.findIndex((line) => key in line)
      if (index >= 0) return lines.splice(0, index + 1)[index]!
      if (ended) throw new Error(`${args.join(' ')} ended before printing ${key}`)
      await new Promise<void>((resolve) => (waiting = resolve))
    }
  }
  return { child, next }
}

async function main(): Promise<void> {
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-channel-'))
  await writeFile(
    join(project, 'config.yaml'),
    ['workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', ''].join('\n'),
  )
  // BENCH_ENGINE_NODE_ARGS (space-separated) goes to the engine's node, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = process.env.BENCH_ENGINE_NODE_ARGS?.split(' ').filter(Boolean) ?? []
  const engine = start([...nodeArgs, join(ROOT, 'bin', 'run.js'), '--json'], { SVC_LOG_LEVEL: 'warn' }, project)
  const { engine_url: engineUrl } = await engine.next('engine_url')
  const client = registerWorker(engineUrl, { workerName: 'bench-channels' })
  const read = start(['bench/channel.ts', 'reader'])
  const write = start(['bench/channel.ts', 'writer'])
  const { port } = await read.next('port')
  await write.next('ready')
  for (const role of [read, write]) {
    role.child.stdin!.write(`${JSON.stringify({ mode: 'sdk', engine: engineUrl })}\n`)
    await role.next('sdk_ready')
  }
  const runs: Array<{ mode: string; mb_per_s: number; reader_cpu_ms: number; writer_cpu_ms: number; engine_cpu_ms?: number }> = []
  const measure = async (mode: 'direct' | 'channel' | 'sdk') => {
    const engineCpu = processCpuMs(engine.child.pid!)
    let result: Record<string, any>
    let sent: Record<string, any>
    if (mode === 'sdk') {
      // Both ends through svc-sdk: the refs travel in payloads and arrive as live ends.
      const { writerRef, readerRef } = await client.createChannel(64)
      const reading = client.trigger<unknown, Record<string, any>>({ function_id: 'bench::read', payload: { body: readerRef }, timeoutMs: 600_000 })
      sent = await client.trigger<unknown, Record<string, any>>({ function_id: 'bench::write', payload: { out: writerRef }, timeoutMs: 600_000 })
      result = await reading
    } else {
      if (mode === 'direct') {
        write.child.stdin!.write(`${JSON.stringify({ mode, url: `ws://127.0.0.1:${port}` })}\n`)
      } else {
        // Only the refs: the raw ends open them (the live ends svc-sdk made stay unused).
        const { readerRef, writerRef } = await client.createChannel(64)
        const url = (ref: { channel_id: string; access_key: string; direction: string }) => `${engineUrl}/ws/channels/${ref.channel_id}?key=${encodeURIComponent(ref.access_key)}&dir=${ref.direction}`
        read.child.stdin!.write(`${JSON.stringify({ mode, url: url(readerRef) })}\n`)
        await read.next('connected')
        write.child.stdin!.write(`${JSON.stringify({ mode, url: url(writerRef) })}\n`)
      }
      result = await read.next('result')
      sent = await write.next('sent')
    }
    if (result.code !== 1000 || result.bytes !== Math.ceil((MIB * 1024 * 1024) / FRAME_BYTES) * FRAME_BYTES) throw new Error(`${mode}: ${JSON.stringify(result)}`)
    const engineCpuAfter = processCpuMs(engine.child.pid!)
    const run: (typeof runs)[number] = { mode, mb_per_s: result.mb_per_s, reader_cpu_ms: result.cpu_ms, writer_cpu_ms: sent.cpu_ms }
    if (mode !== 'direct' && engineCpu !== undefined && engineCpuAfter !== undefined) run.engine_cpu_ms = Math.round(engineCpuAfter - engineCpu)
    runs.push(run)
  }
  for (let round = 0; round < ROUNDS; round++) {
    await measure('direct')
    await measure('channel')
    await measure('sdk')
  }
  const median = (mode: string, key: 'mb_per_s' | 'reader_cpu_ms' | 'writer_cpu_ms' | 'engine_cpu_ms' = 'mb_per_s') => {
    const values = runs.filter((r) => r.mode === mode).map((r) => r[key] ?? 0).sort((a, b) => a - b)
    return values[Math.floor(values.length / 2)]!
  }
  await client.shutdown()
  await Promise.all(
    children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once('exit', resolve), child.kill('SIGTERM'))))),
  )
  await rm(project, { recursive: true, force: true })
  console.log(
    JSON.stringify({
      mib: MIB,
      frame_kib: FRAME_BYTES / 1024,
      rounds: ROUNDS,
      direct_mb_per_s: median('direct'),
      channel_mb_per_s: median('channel'),
      sdk_mb_per_s: median('sdk'),
      direct_reader_cpu_ms: median('direct', 'reader_cpu_ms'),
      channel_reader_cpu_ms: median('channel', 'reader_cpu_ms'),
      sdk_reader_cpu_ms: median('sdk', 'reader_cpu_ms'),
      direct_writer_cpu_ms: median('direct', 'writer_cpu_ms'),
      channel_writer_cpu_ms: median('channel', 'writer_cpu_ms'),
      sdk_writer_cpu_ms: median('sdk', 'writer_cpu_ms'),
      channel_engine_cpu_ms: median('channel', 'engine_cpu_ms'),
      sdk_engine_cpu_ms: median('sdk', 'engine_cpu_ms'),
      runs,
    }),
  )
}

const role = process.argv[2]
if (role === 'reader') await reader()
else if (role === 'writer') await writer()
else runMain(main, children)

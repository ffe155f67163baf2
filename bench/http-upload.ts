/**
 * A streamed HTTP upload through the engine (issue 17 part 3; builtins.md §3.4): MB/s of
 * `BENCH_UPLOAD_MIB` MiB (default 1024) sent with `PUT` to a route bound with
 * `stream_request_body: true`, whose handler counts the bytes it reads from `request_body`, and
 * how much the engine's resident memory grows meanwhile (target: under 100 MiB for 1 GiB).
 *
 * Processes: an engine (`svc --json`, default built-ins), a worker and this one, the client.
 * The worker speaks the protocol with a plain `ws` client: it registers `bench::upload` and its
 * route, and on each invocation opens the `request_body` read end (a raw `ws` channel socket),
 * counts binary bytes until the close, then answers `{bytes}`. The same worker process also runs a
 * plain Node HTTP server that counts a request's bytes: the **direct** baseline, the same upload
 * without the engine, measured in the same run.
 *
 * The client sends the body as 1 MiB writes of one buffer, with the socket's backpressure
 * (`Content-Length` set). MB/s is 10^6 bytes per second from the request's start to the answer.
 * The engine's RSS is read from `/proc/<pid>/status` (Linux only) right before the upload (after a
 * 64 MiB warm-up upload) and every 20 ms during it; `rss_growth_mib` is the peak sampled minus the
 * value before; `engine_cpu_ms` is the CPU time the engine spent on it. Prints one JSON line:
 * `{mib, direct_mb_per_s, engine_mb_per_s, engine_rss_before_mib, engine_rss_peak_mib,
 * engine_rss_growth_mib, engine_cpu_ms}`.
 *
 * Role (internal): `node bench/http-upload.ts worker <engine url>`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import WebSocket from 'ws'
import { runMain } from './measure.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const MIB = Number(process.env.BENCH_UPLOAD_MIB ?? 1024)
const WARMUP_MIB = 64
const CHUNK = Buffer.alloc(1024 * 1024, 0x5a)

interface ChannelRef {
  channel_id: string
  access_key: string
  direction: string
}

/** The handler's side: a raw protocol worker reading each request_body, plus the direct HTTP server. */
async function worker(engineUrl: string): Promise<void> {
  const direct = createServer((req, res) => {
    let bytes = 0
    req.on('data', (chunk: Buffer) => (bytes += chunk.length))
    req.on('end', () => res.end(JSON.stringify({ bytes })))
  })
  await new Promise<void>((resolve) => direct.listen(0, '127.0.0.1', resolve))

  const ws = new WebSocket(engineUrl, { perMessageDeflate: false })
  const send = (frame: object) => ws.send(JSON.stringify(frame))
  const countBody = (ref: ChannelRef): Promise<number> =>
    new Promise((resolve, reject) => {
      const url = `${engineUrl.replace(/\/+$/, '')}/ws/channels/${ref.channel_id}?key=${encodeURIComponent(ref.access_key)}&dir=${ref.direction}`
      const reader = new WebSocket(url, { perMessageDeflate: false })
      let bytes = 0
      reader.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) bytes += data.length
      })
      reader.on('close', (code) => (code === 1000 ? resolve(bytes) : reject(new Error(`request_body closed with ${code}`))))
      reader.on('error', reject)
    })
  ws.on('message', (text: Buffer) => {
    const frame = JSON.parse(text.toString()) as Record<string, any>
    if (frame.type === 'workerregistered') {
      send({ type: 'registerfunction', id: 'bench::upload' })
      send({ type: 'registertrigger', id: 'bench-upload', trigger_type: 'http', function_id: 'bench::upload', config: { api_path: '/bench/upload', http_method: 'PUT', stream_request_body: true } })
      // Success is not acknowledged (protocol.md §5.7); frames apply in order, so a round trip is the barrier.
      send({ type: 'invokefunction', invocation_id: 'barrier', function_id: 'engine::workers::list', data: {} })
      return
    }
    if (frame.type === 'triggerregistrationresult') throw new Error(JSON.stringify(frame.error))
    if (frame.type === 'invocationresult' && frame.invocation_id === 'barrier') {
      console.log(JSON.stringify({ ready: true, direct_port: (direct.address() as AddressInfo).port }))
      return
    }
    if (frame.type !== 'invokefunction' || frame.function_id !== 'bench::upload') return
    const answer = (body: object) => send({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: frame.function_id, ...body })
    countBody(frame.data.request_body).then(
      (bytes) => answer({ result: { status_code: 200, body: { bytes } } }),
      (err: Error) => answer({ error: { code: 'UPLOAD_FAILED', message: err.message } }),
    )
  })
  await new Promise((resolve) => ws.once('close', resolve))
}

/** Resident set size of a process now, MiB (from /proc; undefined where there is none). */
function rssMib(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return match ? Number(match[1]) / 1024 : undefined
  } catch {
    return undefined
  }
}

/** CPU time of a process so far, ms (user + system, from /proc; undefined where there is none). */
function cpuMs(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return undefined
  }
}

/** PUTs `mib` MiB to `url` with backpressure; resolves with the answer's `bytes` and MB/s. */
function upload(url: string, mib: number): Promise<{ bytes: number; mb_per_s: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const req = request(url, { method: 'PUT', agent: false, headers: { 'content-type': 'application/octet-stream', 'content-length': String(mib * CHUNK.length) } }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => {
        const seconds = (performance.now() - started) / 1000
        const text = Buffer.concat(chunks).toString()
        if (res.statusCode !== 200) return reject(new Error(`${url}: ${res.statusCode} ${text}`))
        const { bytes } = JSON.parse(text) as { bytes: number }
        if (bytes !== mib * CHUNK.length) return reject(new Error(`${url}: ${bytes} bytes arrived of ${mib * CHUNK.length}`))
        resolve({ bytes, mb_per_s: Math.round(bytes / 1e6 / seconds) })
      })
    })
    req.on('error', reject)
    void (async () => {
      for (let i = 0; i < mib; i++) if (!req.write(CHUNK)) await new Promise((resume) => req.once('drain', resume))
      req.end()
    })()
  })
}

const children: ChildProcess[] = []

function start(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  const lines = createInterface({ input: child.stdout! })
  const next = (key: string) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const onLine = (line: string) => {
        try {
          const value = JSON.parse(line) as Record<string, any>
          if (!(key in value)) return
          lines.off('line', onLine)
          resolve(value)
        } catch {
          // not JSON: output of the process itself
        }
      }
      lines.on('line', onLine)
      child.once('exit', () => reject(new Error(`${args.join(' ')} exited before printing ${key}`)))
    })
  return { child, next }
}

async function main(): Promise<void> {
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-upload-'))
  await writeFile(
    join(project, 'config.yaml'),
    ['workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', ''].join('\n'),
  )
  const engine = start([join(ROOT, 'bin', 'run.js'), '--json'], { SVC_LOG_LEVEL: 'warn' }, project)
  const banner = await engine.next('engine_url')
  const handler = start(['bench/http-upload.ts', 'worker', banner.engine_url as string])
  const { direct_port: directPort } = await handler.next('ready')
  const routed = `${banner.http_url as string}/bench/upload`
  const directUrl = `http://127.0.0.1:${directPort}/`

  await upload(routed, WARMUP_MIB)
  await upload(directUrl, WARMUP_MIB)
  const direct = await upload(directUrl, MIB)

  const pid = engine.child.pid!
  const before = rssMib(pid)
  const cpuBefore = cpuMs(pid)
  let peak = before ?? 0
  const sampler = setInterval(() => (peak = Math.max(peak, rssMib(pid) ?? 0)), 20)
  const routedRun = await upload(routed, MIB)
  clearInterval(sampler)
  peak = Math.max(peak, rssMib(pid) ?? 0)
  const cpuAfter = cpuMs(pid)

  await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once('exit', resolve), child.kill('SIGTERM'))))))
  await rm(project, { recursive: true, force: true })
  const round = (n: number | undefined) => (n === undefined ? null : Math.round(n))
  console.log(
    JSON.stringify({
      mib: MIB,
      direct_mb_per_s: direct.mb_per_s,
      engine_mb_per_s: routedRun.mb_per_s,
      engine_rss_before_mib: round(before),
      engine_rss_peak_mib: round(peak),
      engine_rss_growth_mib: before === undefined ? null : round(peak - before),
      engine_cpu_ms: cpuBefore === undefined || cpuAfter === undefined ? null : round(cpuAfter - cpuBefore),
    }),
  )
}

if (process.argv[2] === 'worker') await worker(process.argv[3]!)
else runMain(main, children)

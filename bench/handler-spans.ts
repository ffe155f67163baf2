/**
 * The engine's main-thread CPU per handler span it records (issue 20; docs/reference/protocol.md,
 * "Handler spans recorded by the engine"), in process: what `LegTable.recordSpan` does once a
 * worker's result names its span's times — the parts checked (`handlerSpan`), the span written as
 * text (`spanText`) and put into a `builtin` store (`SqliteStore.putSpan`, the window's chunk and
 * the writer thread's batch; the worker's `packedSpan` path) — for `BENCH_SPANS` spans (default
 * 300,000) per round, `BENCH_ROUNDS` rounds (default 3) after 50,000 spans of warm-up.
 *
 * Each span is a call as a worker sees it: a ~150-byte JSON payload and result (no secret key),
 * a traceparent of its own trace (the window keeps ~13,000 spans, so the store never sees a trace
 * twice), the baggage `svc.function.id=…`, a worker resource of three attributes; the traceparents
 * and times are flat strings made before the clock starts, as a frame's JSON parse gives them.
 * The engine's V8 flags (`bin/engine-heap.js`) are used: without them the bench starts itself
 * again with them.
 *
 * `node bench/handler-spans.ts [tree]` prints one JSON line per round,
 * `{tree, round, spans, cpu_us_per_span, wall_us_per_span}` (`cpu_us_per_span`: this thread's CPU,
 * `process.threadCpuUsage`, over the round; the writer thread's work is not in it). `tree` (default
 * this checkout) is the root of a built svc checkout whose code is measured, so that two builds can
 * be alternated in the same period (the machine's load moves the figures by ±10%).
 */
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ENGINE_V8_FLAGS, heapChosen } from '../bin/engine-heap.js'

if (!heapChosen(process.execArgv, process.env.NODE_OPTIONS)) {
  const child = spawnSync(process.execPath, [...ENGINE_V8_FLAGS, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(child.status ?? 1)
}

const tree = resolve(process.argv[2] ?? fileURLToPath(new URL('..', import.meta.url)))
const SPANS = Number(process.env.BENCH_SPANS ?? 300_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const WARM_UP = 50_000

const spans = await import(join(tree, 'runtime/engine/handler-spans.ts'))
const { SqliteStore } = await import(join(tree, 'runtime/adapters/observability/sqlite.ts'))
const { RawJson } = await import(join(tree, 'node_modules/svc-protocol/dist/codec.js'))

const dir = mkdtempSync(join(tmpdir(), 'svc-bench-spans-'))
const store = new SqliteStore(join(dir, 'observability.db'), {
  retentionSeconds: 3600,
  maxSpans: 1_000_000,
  maxLogs: 1000,
  maxSpanBytes: 16 << 20,
  maxLogBytes: 32 << 20,
  maxDiskBytes: 1 << 30,
})
const source = spans.handlerSpanSource({ resource: { 'service.name': 'orders', 'telemetry.sdk.name': 'svc-sdk', 'telemetry.sdk.language': 'nodejs' } })
const baggage = 'svc.function.id=orders%3A%3Acreate'

/** Payloads and results: 4,096 of each, reused. */
const POOL = 4096
const payloads: Array<{ data: string; result: unknown }> = []
for (let i = 0; i < POOL; i++) {
  const order = 'ord_' + i.toString(36).padStart(8, '0')
  payloads.push({
    data: JSON.stringify({ order_id: order, customer: { id: 'cus_' + (i * 7919).toString(36), tier: 'gold' }, items: [{ sku: 'SKU-' + i, qty: 2, price: 19.99 }], note: 'deliver before noon' }),
    result: new RawJson(JSON.stringify({ ok: true, order_id: order, status: 'created', total: 39.98, currency: 'EUR', eta_ms: 1200 + i, warehouse: 'w-east-1' })),
  })
}

interface Frames {
  caller: string[]
  own: string[]
  start: string[]
  end: string[]
}

let serial = 0
const prefix = randomBytes(8).toString('hex')
const t0 = BigInt(Date.now()) * 1_000_000n

/** `n` spans' traceparents (each its own trace) and times, flat strings as a frame's JSON parse makes them. */
function frames(n: number): Frames {
  const out: Frames = { caller: [], own: [], start: [], end: [] }
  for (let i = 0; i < n; i++) {
    const s = ++serial
    const trace = prefix + s.toString(16).padStart(16, '0')
    const start = t0 + BigInt(s) * 1000n
    const [caller, own, startText, endText] = JSON.parse(
      `["00-${trace}-${randomBytes(8).toString('hex')}-01","00-${trace}-${randomBytes(8).toString('hex')}-01","${start}","${start + 41_234n}"]`,
    ) as string[]
    out.caller.push(caller!)
    out.own.push(own!)
    out.start.push(startText!)
    out.end.push(endText!)
  }
  return out
}

/** Span `i` of `f`: what `LegTable.recordSpan` and the observability worker's `packedSpan` do. */
function record(f: Frames, i: number): void {
  const payload = payloads[i % POOL]!
  const call = { functionId: 'orders::create', data: payload.data, traceparent: f.caller[i], baggage }
  const outcome = { traceparent: f.own[i], span_start: f.start[i], span_end: f.end[i], result: payload.result }
  const parts = spans.handlerSpan(call, outcome, source, 'orders')
  if (parts === undefined) throw new Error('no span recorded')
  const text = spans.spanText(parts)
  store.putSpan(text.head, text.bytes, true, text.body)
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000

const warm = frames(WARM_UP)
for (let i = 0; i < WARM_UP; i++) record(warm, i)
for (let round = 0; round < ROUNDS; round++) {
  const f = frames(SPANS)
  const cpu = process.threadCpuUsage()
  const wall = performance.now()
  for (let i = 0; i < SPANS; i++) record(f, i)
  const used = process.threadCpuUsage(cpu)
  const ms = performance.now() - wall
  console.log(JSON.stringify({ tree, round, spans: SPANS, cpu_us_per_span: round3((used.user + used.system) / SPANS), wall_us_per_span: round3((ms * 1000) / SPANS) }))
}
store.close()
rmSync(dir, { recursive: true, force: true })

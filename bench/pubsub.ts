/**
 * Pub/sub fan-out benchmark (`node bench/pubsub.ts [engine_url]`): 128 `subscribe` triggers spread
 * over 4 subscriber processes (32 each), one caller (this process). Every delivery is acknowledged
 * by a void call back to the caller, and so is every call of the baseline.
 *
 *   fan-out latency  one publish → all 128 acks, sequential, p50/p99
 *                    baseline: 128 invocations of the same functions from the caller → all 128 acks
 *   throughput       1,000 publishes (16 in flight): publishes/s handed over, and deliveries/s until
 *                    every ack arrived; baseline: the same 128,000 deliveries as direct calls
 *                    (16 rounds of 128 in flight, under the engine's 10,000 open invocations per connection)
 *
 * Without an engine URL it starts `svc` in a temporary project. Prints one JSON line.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { firstJson } from './lines.ts'
import { registerWorker } from 'svc-sdk'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const WORKERS = 4
const PER_WORKER = 32
const SUBSCRIBERS = WORKERS * PER_WORKER
const LATENCY_ROUNDS = 300
const THROUGHPUT_PUBLISHES = 1000
const IN_FLIGHT = 16

const children: ChildProcess[] = []
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')))

function start(args: string[], cwd = ROOT): AsyncIterableIterator<string> {
  const child = spawn(process.execPath, args, { cwd, env: { ...process.env, SVC_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] })
  children.push(child)
  return createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!
const round = (n: number) => Math.round(n)

async function main(): Promise<void> {
  let project: string | undefined
  let url = process.argv[2]
  if (!url) {
    project = await mkdtemp(join(tmpdir(), 'svc-bench-pubsub-'))
    await writeFile(join(project, 'config.yaml'), 'workers:\n  - name: svc-worker-manager\n    config: { port: 0 }\n  - name: svc-http\n    config: { port: 0 }\n')
    url = (await firstJson(start([join(ROOT, 'bin', 'run.js'), '--json'], project), 'engine_url')).engine_url as string
  }

  // Acks by seq; a waiter resolves when its seq has `target` acks.
  const acks = new Map<number, number>()
  const waiters = new Map<number, { target: number; resolve: () => void }>()
  let totalAcks = 0
  const caller = registerWorker(url, { workerName: 'bench-caller' })
  caller.registerFunction('bench::ack', ({ seq }: { seq: number }) => {
    totalAcks++
    const n = (acks.get(seq) ?? 0) + 1
    acks.set(seq, n)
    const waiter = waiters.get(seq)
    if (waiter && n >= waiter.target) {
      waiters.delete(seq)
      waiter.resolve()
    }
  })
  const acked = (seq: number, target: number) =>
    (acks.get(seq) ?? 0) >= target ? Promise.resolve() : new Promise<void>((resolve) => waiters.set(seq, { target, resolve }))

  const progress = (what: string) => process.stderr.write(`pubsub bench: ${what}\n`)
  progress(`engine ${url}`)
  const functionIds: string[] = []
  for (let w = 0; w < WORKERS; w++) {
    await firstJson(start(['bench/pubsub-subscriber.ts', url, `bench-sub${w}`, String(PER_WORKER)]), 'ready')
    for (let i = 0; i < PER_WORKER; i++) functionIds.push(`bench-sub${w}::sub-${i}`)
  }

  const publish = (seq: number) => caller.trigger({ function_id: 'publish', payload: { topic: 'bench', data: { seq } } })
  const direct = (seq: number) =>
    Promise.all(functionIds.map((function_id) => caller.trigger({ function_id, payload: { seq } })))

  progress('subscribers ready')
  // Warm-up until every trigger is bound and every function answers.
  let seq = 0
  for (;;) {
    const s = ++seq
    await publish(s)
    const done = await Promise.race([acked(s, SUBSCRIBERS).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 500))])
    if (done) break
  }
  for (let i = 0; i < 50; i++) {
    const a = ++seq
    await publish(a)
    await acked(a, SUBSCRIBERS)
    const b = ++seq
    await direct(b)
    await acked(b, SUBSCRIBERS)
  }

  progress('warm')
  // Fan-out latency, publish and baseline alternated.
  const fanout: number[] = []
  const baseline: number[] = []
  for (let i = 0; i < LATENCY_ROUNDS; i++) {
    for (const [samples, send] of [[fanout, publish], [baseline, direct]] as const) {
      const s = ++seq
      const t0 = performance.now()
      await send(s)
      await acked(s, SUBSCRIBERS)
      samples.push((performance.now() - t0) * 1000)
    }
  }
  fanout.sort((a, b) => a - b)
  baseline.sort((a, b) => a - b)

  progress('latency measured')
  // Throughput.
  const throughput = async (send: (seq: number) => Promise<unknown>) => {
    const first = seq + 1
    const before = totalAcks
    let next = 0
    const t0 = performance.now()
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < THROUGHPUT_PUBLISHES) {
          next++
          await send(++seq)
        }
      }),
    )
    const handed = performance.now() - t0
    const expected = THROUGHPUT_PUBLISHES * SUBSCRIBERS
    const deadline = Date.now() + 60_000
    while (totalAcks - before < expected) {
      if (Date.now() > deadline) throw new Error(`only ${totalAcks - before} of ${expected} deliveries acknowledged within 60 s`)
      await new Promise((r) => setTimeout(r, 5))
    }
    const all = performance.now() - t0
    for (let s = first; s <= seq; s++) acks.delete(s)
    return { sends_per_second: round((THROUGHPUT_PUBLISHES / handed) * 1000), deliveries_per_second: round((expected / all) * 1000) }
  }
  const pub = await throughput(publish)
  progress(`publish throughput ${JSON.stringify(pub)}`)
  const dir = await throughput(direct)

  console.log(
    JSON.stringify({
      subscribers: SUBSCRIBERS,
      workers: WORKERS,
      fanout_p50_us: round(percentile(fanout, 0.5)),
      fanout_p99_us: round(percentile(fanout, 0.99)),
      direct_p50_us: round(percentile(baseline, 0.5)),
      direct_p99_us: round(percentile(baseline, 0.99)),
      publishes_per_second: pub.sends_per_second,
      publish_deliveries_per_second: pub.deliveries_per_second,
      direct_rounds_per_second: dir.sends_per_second,
      direct_deliveries_per_second: dir.deliveries_per_second,
    }),
  )
  await caller.shutdown()
  for (const child of children) child.kill('SIGTERM')
  if (project) await rm(project, { recursive: true, force: true })
}

await main()
process.exit(0)

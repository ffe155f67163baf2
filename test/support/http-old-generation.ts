/**
 * Child process of runtime/workers/http/garbage.test.ts, run with `--expose-gc` and the engine's heap flags, outside
 * the test runner (whose async hooks keep objects of their own): an engine with svc-http and one
 * in-process route whose function answers a millisecond later (as a worker over its socket does),
 * 8,000 requests over 32 keep-alive connections, with a scavenge after each batch of 500. Prints
 * `{"promoted_bytes": n}`: what the scavenges during those requests moved to the old generation.
 */
import { Agent, request } from 'node:http'
import { GCProfiler } from 'node:v8'
import { startTestEngine } from './engine.ts'
import type { BuiltinContext, BuiltinWorker } from '../../runtime/engine/types.ts'
import { HttpWorker } from '../../runtime/workers/http/worker.ts'

/** A built-in serving `GET /gc/echo` in-process; its function answers after 1 ms. */
class EchoRoute implements BuiltinWorker {
  readonly name = 'svc-gc-test'
  async start(context: BuiltinContext): Promise<void> {
    context.worker.registerFunction('gc::echo', () => new Promise((resolve) => setTimeout(() => resolve({ status_code: 200, body: { ok: true } }), 1)))
    context.worker.registerTrigger({ id: 'gc-echo', trigger_type: 'http', function_id: 'gc::echo', config: { api_path: '/gc/echo', http_method: 'GET' } })
  }
  async applySettings(): Promise<void> {}
  async stop(): Promise<void> {}
}

const gc = (globalThis as { gc?: (options?: { type: 'minor' | 'major' }) => void }).gc
if (gc === undefined) throw new Error('run with --expose-gc')
const t = await startTestEngine({ builtins: [new HttpWorker(), new EchoRoute()], settings: { 'svc-http': { port: 0 } } })
const agent = new Agent({ keepAlive: true, maxSockets: 32 })
const url = new URL('/gc/echo', t.engine.listenUrls('svc-http')[0]!)

function get(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** `count` requests, 32 in flight. */
async function serve(count: number): Promise<void> {
  let left = count
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (left > 0) {
        left--
        const status = await get()
        if (status !== 200) throw new Error(`GET ${url.pathname} answered ${status}`)
      }
    }),
  )
}

await serve(2000)
gc({ type: 'major' })
gc({ type: 'major' })
const profiler = new GCProfiler()
profiler.start()
for (let round = 0; round < 16; round++) {
  await serve(500)
  gc({ type: 'minor' })
}
// What each scavenge moved into the old generation: its growth across that scavenge.
let promoted = 0
for (const s of profiler.stop()?.statistics ?? []) {
  if (s.gcType !== 'Scavenge') continue
  const used = (stats: typeof s.beforeGC) => stats.heapSpaceStatistics.find((h) => h.spaceName === 'old_space')!.spaceUsedSize
  promoted += Math.max(0, used(s.afterGC) - used(s.beforeGC))
}
agent.destroy()
await t.stop()
console.log(JSON.stringify({ promoted_bytes: promoted }))

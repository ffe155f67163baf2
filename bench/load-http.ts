/**
 * HTTP load generator, one process: keeps `concurrency` keep-alive connections busy against one
 * URL for BENCH_DURATION_MS and prints requests per second.
 */
import { Agent, request } from 'node:http'

const [url, concurrencyText] = process.argv.slice(2)
const concurrency = Number(concurrencyText)
const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3000)
const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
const target = new URL(url!)

function once(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: target.hostname, port: target.port, path: target.pathname, agent }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode ?? 0))
    })
    req.on('error', reject)
    req.end()
  })
}

for (let i = 0; i < 500; i++) {
  const status = await once()
  if (status !== 200) throw new Error(`unexpected status ${status}`)
}
let done = 0
let running = true
const start = performance.now()
setTimeout(() => (running = false), durationMs)
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (running) {
      await once()
      done++
    }
  }),
)
console.log(JSON.stringify({ concurrency, per_second: Math.round(done / ((performance.now() - start) / 1000)) }))
agent.destroy()

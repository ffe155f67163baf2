/**
 * The invoked side of the benchmark: a svc-sdk worker serving `bench::echo`, bound to
 * `GET /bench/echo` and, with BENCH_ROUTES=n, n−1 more routes that are never requested.
 */
import { registerWorker } from 'svc-sdk'

const client = registerWorker(process.argv[2], { workerName: 'bench-callee' })
const routes = Number(process.env.BENCH_ROUTES ?? 1)
client.registerFunction('bench::echo', (data) => data)
client.registerFunction('bench::http', () => ({ status_code: 200, body: { ok: true } }))
client.registerTrigger({ type: 'http', function_id: 'bench::http', config: { api_path: '/bench/echo', http_method: 'GET' } })
for (let i = 1; i < routes; i++) {
  client.registerTrigger({ type: 'http', function_id: 'bench::http', config: { api_path: `/api/v1/resource${i}/:id/detail`, http_method: i % 2 ? 'GET' : 'POST' } })
}
client.addConnectionStateListener((state) => {
  if (state === 'connected') console.log(JSON.stringify({ ready: true }))
})
process.on('SIGTERM', () => process.exit(0))

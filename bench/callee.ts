/**
 * The invoked side of the benchmark: a svc-sdk worker serving `bench::echo` and `bench::http`,
 * the latter bound to `GET /bench/echo`.
 */
import { registerWorker } from 'svc-sdk'

const client = registerWorker(process.argv[2], { workerName: 'bench-callee' })
client.registerFunction('bench::echo', (data) => data)
client.registerFunction('bench::http', () => ({ status_code: 200, body: { ok: true } }))
client.registerTrigger({ type: 'http', function_id: 'bench::http', config: { api_path: '/bench/echo', http_method: 'GET' } })
client.addConnectionStateListener((state) => {
  if (state === 'connected') console.log(JSON.stringify({ ready: true }))
})
process.on('SIGTERM', () => process.exit(0))

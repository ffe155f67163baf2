/**
 * Registers BENCH_ROUTES more HTTP routes (never requested) while it runs, so the HTTP benchmark
 * can compare 1 route with 1,000 in the same engine. Its routes go away with its connection.
 */
import { registerWorker } from 'svc-sdk'

const client = registerWorker(process.argv[2], { workerName: 'bench-routes' })
const count = Number(process.env.BENCH_ROUTES ?? 999)
for (let i = 0; i < count; i++) {
  client.registerTrigger({ type: 'http', function_id: 'bench::http', config: { api_path: `/api/v1/resource${i}/:id/detail`, http_method: i % 2 ? 'GET' : 'POST' } })
}
client.registerFunction('bench::routes-ready', () => count)
client.addConnectionStateListener(async (state) => {
  if (state !== 'connected') return
  // The bindings are applied in order, so once this call answers they are all in place.
  await client.trigger({ function_id: 'bench::routes-ready', payload: null })
  const listed = (await client.trigger({ function_id: 'engine::registered-triggers::list', payload: { trigger_type: 'http' } })) as { registered_triggers: unknown[] }
  console.log(JSON.stringify({ ready: true, routes: listed.registered_triggers.length }))
})
process.on('SIGTERM', () => process.exit(0))

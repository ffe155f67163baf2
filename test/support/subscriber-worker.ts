/**
 * A worker process for end-to-end pub/sub tests and benchmarks: connects to the engine at argv[2],
 * registers `<name>::on-<topic>` for each topic after argv[4] (name = argv[3]) with a `subscribe`
 * trigger, and prints one JSON line `{"received": <data>, "function_id": …, "at": <epoch ms>}` per
 * delivery. Prints `{"ready": true}` once connected. Exits on SIGTERM.
 */
import { registerWorker } from 'svc-sdk'

const [url, name = 'sub', ...topics] = process.argv.slice(2)
const client = registerWorker(url, { workerName: name })
for (const topic of topics) {
  const functionId = `${name}::on-${topic}`
  client.registerFunction(functionId, (data: unknown) => {
    process.stdout.write(`${JSON.stringify({ received: data, function_id: functionId, at: Date.now() })}\n`)
  })
  client.registerTrigger({ type: 'subscribe', function_id: functionId, config: { topic } })
}
client.addConnectionStateListener((state) => {
  if (state === 'connected') process.stdout.write(`${JSON.stringify({ ready: true })}\n`)
})
process.once('SIGTERM', () => void client.shutdown().then(() => process.exit(0)))

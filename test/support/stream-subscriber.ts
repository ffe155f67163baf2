/**
 * A worker process for tests: subscribes to the `stream` trigger of `STREAM_NAME` and prints
 * every event it receives as one JSON line on stdout (after a `{"ready":true}` line).
 */
import { registerWorker } from 'svc-sdk'

const client = registerWorker(process.env.SVC_URL, { workerName: 'stream-subscriber' })
client.registerFunction('subscriber::on-change', async (event: unknown) => {
  process.stdout.write(JSON.stringify({ event }) + '\n')
})
client.registerTrigger({ type: 'stream', function_id: 'subscriber::on-change', config: { stream_name: process.env.STREAM_NAME ?? 'feed' } })
client.addConnectionStateListener((state) => {
  if (state === 'connected') process.stdout.write(JSON.stringify({ ready: true }) + '\n')
})

/**
 * A subscriber process of the pub/sub benchmark: registers `<name>::sub-<i>` for i < argv[4], each
 * with a `subscribe` trigger on topic `bench`, and acknowledges every delivery by a void call of
 * `bench::ack {seq}` (the caller counts acks). Prints `{"ready": true}` once connected.
 */
import { registerWorker, TriggerAction } from 'svc-sdk'

const [url, name = 'sub', count = '32'] = process.argv.slice(2)
const client = registerWorker(url, { workerName: name })
for (let i = 0; i < Number(count); i++) {
  const functionId = `${name}::sub-${i}`
  client.registerFunction(functionId, (data: { seq: number }) => {
    void client.trigger({ function_id: 'bench::ack', payload: { seq: data.seq }, action: TriggerAction.Void() })
  })
  client.registerTrigger({ type: 'subscribe', function_id: functionId, config: { topic: 'bench' } })
}
client.addConnectionStateListener((state) => {
  if (state === 'connected') console.log(JSON.stringify({ ready: true }))
})
process.on('SIGTERM', () => process.exit(0))

/**
 * The raw NATS row, the cost of the broker alone. `responder <nats_url>`: subscribes to
 * `bench.echo` and answers each request with its decoded and re-encoded JSON (what the echo
 * server does), then prints `{"ready":true}`. `requester <nats_url>`: the load generator, with the
 * `nats` client's `request()` (a publish plus one shared wildcard reply inbox); prints one JSON line.
 */
import { connect, JSONCodec } from 'nats'
import { reportCaller } from '../measure.ts'
import { PAYLOAD } from '../payload.ts'

const SUBJECT = 'bench.echo'
const [mode, url] = process.argv.slice(2)
const codec = JSONCodec()
// noAsyncTraces: by default every request() captures two stack traces only to enrich a timeout's
// error; that cost 30–45% of the requests/s at 8 and 64 in flight, and this row measures the broker.
const nc = await connect({ servers: url!, noAsyncTraces: true })

if (mode === 'responder') {
  nc.subscribe(SUBJECT, {
    callback: (err, msg) => {
      if (err) throw err
      msg.respond(codec.encode(codec.decode(msg.data)))
    },
  })
  // Once the server has answered a PING sent after the SUB, requests published anywhere reach us.
  await nc.flush()
  console.log(JSON.stringify({ ready: true }))
  process.on('SIGTERM', () => void nc.close().then(() => process.exit(0)))
} else {
  // The same 30 s deadline svc-sdk arms on every invocation (the client's default is 1 s).
  const call = async () => codec.decode((await nc.request(SUBJECT, codec.encode(PAYLOAD), { timeout: 30000 })).data)
  await reportCaller('nats', { call, close: () => nc.close() })
}

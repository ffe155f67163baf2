/**
 * CPU cost of one handler span in svc-sdk, in-process (no sockets, no engine): the work the callee
 * does per invocation for telemetry — start the `execute <function_id>` span from the inbound
 * `traceparent`/`baggage` (the engine always adds `svc.function.id` baggage to routed calls), run
 * the handler in its context, end it with the result (and its JSON, which the client encodes for
 * its answer in both modes) and build the result's headers — plus the
 * export of the finished spans as `OTLP` frames to a transport that discards them.
 *
 * `node bench/sdk-span.ts` prints `{ off_us, on_us, span_us, frames, bytes_per_span }`: CPU µs
 * per invocation with telemetry off and on (user + system, `process.cpuUsage`), their difference,
 * and what was exported. BENCH_SPANS sets the count (default 200,000), in turns of 64 invocations
 * (the 64-in-flight load of the invocation benchmark) so the batch timer runs as it would.
 */
import type { Transport, TransportHandlers } from 'svc-protocol/transport'
import { flushOtel, initOtel, otelSocketStats, shutdownOtel } from 'svc-sdk/telemetry'
import { endInvocationSpan, runInSpan, startInvocationSpan } from '../packages/sdk/src/tracing.ts'
import { PAYLOAD } from './payload.ts'

const N = Number(process.env.BENCH_SPANS ?? 200_000)
const TURN = 64
const BAGGAGE = 'svc.function.id=bench%3A%3Aecho,iii.function.id=bench%3A%3Aecho'
let bytes = 0

/** A transport that is open at once and drops every frame (counting bytes). */
function sink(): Transport {
  let handlers: TransportHandlers | undefined
  return {
    send: () => {},
    sendBinary: (data) => void (bytes += data.byteLength),
    bufferedAmount: 0,
    isOpen: true,
    close: () => handlers?.close(1000, ''),
    terminate: () => handlers?.close(1006, ''),
    ping: () => {},
    setHandlers(h) {
      handlers = h
      queueMicrotask(() => h.open?.())
    },
  }
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve))

async function run(n: number): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < n; ) {
    for (let j = 0; j < TURN; j++, i++) {
      const s = startInvocationSpan('bench::echo', PAYLOAD, undefined, BAGGAGE)
      const result = runInSpan(s, () => PAYLOAD)
      // The client encodes the result for its answer in both modes; the span reuses that text.
      const json = JSON.stringify(result)
      if (s !== undefined) endInvocationSpan(s, result, undefined, json)
    }
    await turn()
  }
  await flushOtel()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / n
}

await run(N / 4) // warm-up, telemetry off
const off = await run(N)
initOtel({ engineWsUrl: 'ws://127.0.0.1:1', connector: sink, metricsEnabled: false, fetchInstrumentationEnabled: false })
await turn()
await run(N / 4)
bytes = 0
const sentBefore = otelSocketStats()?.sent ?? 0
const on = await run(N)
const stats = otelSocketStats()
await shutdownOtel()
const r = (x: number) => Math.round(x * 100) / 100
console.log(JSON.stringify({ off_us: r(off), on_us: r(on), span_us: r(on - off), frames: (stats?.sent ?? 0) - sentBefore, dropped: stats?.dropped, bytes_per_span: Math.round(bytes / N) }))

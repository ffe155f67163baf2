/** Latency and throughput loops shared by the WebSocket load generators. */

export interface LatencyResult {
  p50_us: number
  p99_us: number
  samples: number
}

/** Runs `call` one at a time and reports percentiles in microseconds. */
export async function sequential(call: () => Promise<unknown>, samples: number, warmup: number): Promise<LatencyResult> {
  for (let i = 0; i < warmup; i++) await call()
  const times = new Float64Array(samples)
  for (let i = 0; i < samples; i++) {
    const start = process.hrtime.bigint()
    await call()
    times[i] = Number(process.hrtime.bigint() - start) / 1000
  }
  times.sort()
  return { p50_us: round(times[Math.floor(samples * 0.5)]!), p99_us: round(times[Math.floor(samples * 0.99)]!), samples }
}

/** Keeps `inFlight` calls outstanding for `durationMs` and reports completed calls per second. */
export async function throughput(call: () => Promise<unknown>, inFlight: number, durationMs: number): Promise<number> {
  let done = 0
  let running = true
  const start = performance.now()
  const lane = async () => {
    while (running) {
      await call()
      done++
    }
  }
  const timer = setTimeout(() => (running = false), durationMs)
  await Promise.all(Array.from({ length: inFlight }, lane))
  clearTimeout(timer)
  return Math.round(done / ((performance.now() - start) / 1000))
}

const round = (n: number) => Math.round(n * 10) / 10

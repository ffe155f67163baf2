/** Latency and throughput loops shared by the load generators (svc, the direct echo and the peers). */
import type { ChildProcess } from 'node:child_process'
import { createServer, type AddressInfo } from 'node:net'

export interface LatencyResult {
  p50_us: number
  p99_us: number
  samples: number
}

/** One caller process's way to invoke the benchmark's echo function, whichever system carries it. */
export interface Caller {
  /** Sends `PAYLOAD` and resolves with the answer. */
  call: () => Promise<unknown>
  close: () => void | Promise<void>
}

/** The in-flight counts every load generator is measured at. */
export const IN_FLIGHT = [1, 8, 64] as const

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

/**
 * Measures `caller` the same way for every row of the invocation table, prints one JSON line
 * `{ mode, p50_us, p99_us, samples, per_second: { 1, 8, 64 }, calls, cpu_ms }` (µs, calls/s; `calls`
 * made in all, `cpu_ms` the process's CPU time, user + system, while making them), closes the
 * caller and ends the process. Sequential latency over BENCH_SAMPLES calls (default 5,000) after
 * 1,000 warm-up calls, then each in-flight count for BENCH_DURATION_MS (default 3,000 ms);
 * BENCH_IN_FLIGHT (e.g. `64`, or `1,8`) measures only those counts.
 */
export async function reportCaller(mode: string, caller: Caller): Promise<never> {
  const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3000)
  const samples = Number(process.env.BENCH_SAMPLES ?? 5000)
  const cpu = process.cpuUsage()
  const latency = await sequential(caller.call, samples, 1000)
  const rates: Record<string, number> = {}
  const counts = process.env.BENCH_IN_FLIGHT === undefined ? IN_FLIGHT : process.env.BENCH_IN_FLIGHT.split(',').map(Number)
  for (const inFlight of counts) rates[inFlight] = await throughput(caller.call, inFlight, durationMs)
  const used = process.cpuUsage(cpu)
  const calls = 1000 + samples + Object.values(rates).reduce((sum, rate) => sum + Math.round((rate * durationMs) / 1000), 0)
  console.log(JSON.stringify({ mode, ...latency, per_second: rates, calls, cpu_ms: Math.round((used.user + used.system) / 1000) }))
  await caller.close()
  process.exit(0)
}

const round = (n: number) => Math.round(n * 10) / 10

/** A loopback port that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** Runs a benchmark's `main`, sets exit code 1 on failure, and kills the child processes it left. */
export function runMain(main: () => Promise<void>, children: readonly ChildProcess[]): void {
  main()
    .catch((err) => {
      console.error(err)
      process.exitCode = 1
    })
    .finally(() => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
    })
}

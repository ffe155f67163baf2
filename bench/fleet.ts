/**
 * The fleet rows of `npm run bench` (issue 19): two engine processes in one fleet on a private
 * nats-server, a callee worker on engine B (bench/callee.ts), and in the same run:
 *
 *   cross-engine   a caller on engine A invokes `bench::echo` on B (worker → A → NATS → B → worker)
 *   same engine    the same caller on engine B (worker → B → worker), alternated with the above
 *   Moleculer      caller broker → the same nats-server → callee broker
 *   HTTP CPU       GET /bench/echo through B's own listener vs. through A's (the route is B's
 *                  worker's): CPU time of every svc process (both engines and nats-server; the
 *                  load generator and the worker are the same in both) per request, from
 *                  /proc/<pid>/stat — two cores cannot show scaling in requests per second.
 *   bare NATS      alternated with the HTTP runs: a nats.js requester and responder
 *                  (bench/peers/nats.ts) over the same nats-server, 16 requests in flight like
 *                  the 16 HTTP connections; CPU per request of nats-server, the responder and the
 *                  requester — what one hop through NATS costs before any engine work, against the
 *                  HTTP row's budget (1.3× allows 0.3 × the own listener's CPU for the whole hop).
 *
 * CPU time per call of every process (the callers' from their own `process.cpuUsage()`), svc's and
 * Moleculer's: at two cores, calls/s follow CPU per call summed over the processes. The rows'
 * figures are over every phase of a run (sequential, 1, 8 and 64 in flight); `at_64` measures 64
 * in flight alone (after 1,000 warm-up calls), for svc once per round and for Moleculer once, with
 * the cores the processes kept busy (CPU per call × calls/s): a rate bound by CPU shows as about
 * two cores, one bound by the time a call takes as fewer.
 *
 * Prints one JSON line. svc-sdk processes run with their defaults except telemetry (off like the
 * peers', see run.ts).
 */
import type { ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { firstJson } from './lines.ts'
import { processes, ROOT } from './processes.ts'
import { runMain } from './measure.ts'
import { startNatsServer } from './peers/nats-server.ts'

process.env.OTEL_ENABLED ??= 'false'
const children: ChildProcess[] = []
const { start, run, stop } = processes(children)
const ROUNDS = 3




/** CPU time of a process so far, ms (utime + stime of /proc/<pid>/stat). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0)
/** 64 in flight alone: no sequential samples (1,000 warm-up calls still run). */
const AT_64 = { BENCH_SAMPLES: '0', BENCH_IN_FLIGHT: '64' }
/** A 64-in-flight run as `at_64` reports it: calls/s, CPU µs per call of each process and their sum, and the cores they kept busy. */
function saturated(runResult: Record<string, any>): Record<string, unknown> {
  const cpu = runResult.cpu_us_per_call as Record<string, number>
  const sum = total(cpu)
  return { per_second: runResult.per_second[64], cpu_us_per_call: cpu, total_us: Math.round(sum * 10) / 10, cores: Math.round((sum * runResult.per_second[64]) / 1e4) / 100 }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const medianRun = (runs: Array<Record<string, any>>) => [...runs].sort((a, b) => a.per_second[64] - b.per_second[64])[Math.floor(runs.length / 2)]!

async function main(): Promise<void> {
  const nats = await startNatsServer((child) => children.push(child))
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-fleet-'))
  try {
    await writeFile(
      join(project, 'config.yaml'),
      ['fleet:', '  name: bench', `  nats: ${nats.url}`, 'workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', ''].join('\n'),
    )
    const engine = async (name: string) => {
      const started = start([join(ROOT, 'bin', 'run.js'), '--json', '--no-workers', '--data-dir', join(project, `.data-${name}`)], { SVC_LOG_LEVEL: 'warn', SVC_FLEET_ENGINE: name }, project)
      return { ...started, ready: await firstJson(started.lines, 'engine_url') }
    }
    const a = await engine('a')
    const b = await engine('b')
    const callee = start(['bench/callee.ts', b.ready.engine_url])
    await firstJson(callee.lines, 'ready')

    const crossRuns: Array<Record<string, any>> = []
    const localRuns: Array<Record<string, any>> = []
    // CPU µs per call of engine A, engine B and nats-server (and the callee) during each run.
    const perCall = (runResult: Record<string, any>, before: number[], pids: number[]) => {
      const tenths = (ms: number) => Math.round((ms * 10_000) / runResult.calls) / 10
      runResult.cpu_us_per_call = Object.fromEntries(['engine_a', 'engine_b', 'nats', 'callee'].map((name, i) => [name, tenths(cpuMs(pids[i]!) - before[i]!)]))
      runResult.cpu_us_per_call.caller = tenths(runResult.cpu_ms)
      return runResult
    }
    const pids = () => [a.child.pid!, b.child.pid!, nats.child.pid!, callee.child.pid!]
    const saturatedRuns: Array<Record<string, any>> = []
    for (let round = 0; round < ROUNDS; round++) {
      let before = pids().map(cpuMs)
      crossRuns.push(perCall(await run(['bench/load-ws.ts', 'svc', a.ready.engine_url]), before, pids()))
      before = pids().map(cpuMs)
      localRuns.push(perCall(await run(['bench/load-ws.ts', 'svc', b.ready.engine_url]), before, pids()))
      before = pids().map(cpuMs)
      saturatedRuns.push(perCall(await run(['bench/load-ws.ts', 'svc', a.ready.engine_url], AT_64), before, pids()))
    }

    // HTTP through B's own listener and through A's, alternated; CPU of both engines and nats-server.
    const svcPids = [a.child.pid!, b.child.pid!, nats.child.pid!]
    const http: Record<'own' | 'other', { cpu_us_per_request: number[]; per_second: number[] }> = { own: { cpu_us_per_request: [], per_second: [] }, other: { cpu_us_per_request: [], per_second: [] } }
    const durationMs = Number(process.env.BENCH_DURATION_MS ?? 3000)
    const responder = start(['bench/peers/nats.ts', 'responder', nats.url])
    await firstJson(responder.lines, 'ready')
    const bare: Array<{ cpu_us_per_request: Record<string, number>; per_second: number }> = []
    for (let round = 0; round < ROUNDS; round++) {
      const natsPids = [nats.child.pid!, responder.child.pid!]
      const natsBefore = natsPids.map(cpuMs)
      // No sequential samples: 16 in flight alone, the HTTP runs' steady load.
      const result = await run(['bench/peers/nats.ts', 'requester', nats.url], { BENCH_DURATION_MS: String(durationMs), BENCH_SAMPLES: '0', BENCH_IN_FLIGHT: '16' })
      const per = (ms: number) => Math.round((ms * 10_000) / result.calls) / 10
      bare.push({ cpu_us_per_request: { nats: per(cpuMs(natsPids[0]!) - natsBefore[0]!), responder: per(cpuMs(natsPids[1]!) - natsBefore[1]!), requester: per(result.cpu_ms) }, per_second: result.per_second[16] })
      for (const [via, url] of [['own', b.ready.http_url], ['other', a.ready.http_url]] as const) {
        const before = svcPids.reduce((sum, pid) => sum + cpuMs(pid), 0)
        const result = await run(['bench/load-http.ts', `${url}/bench/echo`, '16'], { BENCH_DURATION_MS: String(durationMs) })
        const used = svcPids.reduce((sum, pid) => sum + cpuMs(pid), 0) - before
        // 500 warm-up requests plus the measured ones.
        const requests = 500 + Math.round((result.per_second * durationMs) / 1000)
        http[via].cpu_us_per_request.push(Math.round((used * 1000) / requests))
        http[via].per_second.push(result.per_second)
      }
    }
    await stop(responder.child)
    await stop(callee.child)
    await stop(a.child)
    await stop(b.child)

    const moleculerCallee = start(['bench/peers/moleculer-callee.ts', nats.url])
    await firstJson(moleculerCallee.lines, 'ready')
    const natsBefore = cpuMs(nats.child.pid!)
    const calleeBefore = cpuMs(moleculerCallee.child.pid!)
    // CPU µs per call of nats-server, the callee and the caller during a Moleculer run.
    const moleculerPerCall = (runResult: Record<string, any>, natsBefore: number, calleeBefore: number) => {
      const tenths = (ms: number) => Math.round((ms * 10_000) / runResult.calls) / 10
      runResult.cpu_us_per_call = { nats: tenths(cpuMs(nats.child.pid!) - natsBefore), callee: tenths(cpuMs(moleculerCallee.child.pid!) - calleeBefore), caller: tenths(runResult.cpu_ms) }
      return runResult
    }
    const moleculer = moleculerPerCall(await run(['bench/peers/moleculer-caller.ts', nats.url]), natsBefore, calleeBefore)
    const natsBefore64 = cpuMs(nats.child.pid!)
    const calleeBefore64 = cpuMs(moleculerCallee.child.pid!)
    const moleculerAt64 = saturated(moleculerPerCall(await run(['bench/peers/moleculer-caller.ts', nats.url], AT_64), natsBefore64, calleeBefore64))
    await stop(moleculerCallee.child)

    console.log(
      JSON.stringify({
        cross: medianRun(crossRuns),
        local: medianRun(localRuns),
        moleculer,
        at_64: {
          svc: saturated(medianRun(saturatedRuns)),
          moleculer: moleculerAt64,
        },
        http: {
          own: { cpu_us_per_request: median(http.own.cpu_us_per_request), per_second: median(http.own.per_second) },
          other: { cpu_us_per_request: median(http.other.cpu_us_per_request), per_second: median(http.other.per_second) },
        },
        // The round whose three processes' CPU per request is the median.
        nats_request_reply: [...bare].sort((x, y) => total(x.cpu_us_per_request) - total(y.cpu_us_per_request))[Math.floor(bare.length / 2)],
      }),
    )
  } finally {
    await nats.stop()
    await rm(project, { recursive: true, force: true })
  }
}

runMain(main, children)

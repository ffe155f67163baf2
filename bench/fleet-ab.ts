/**
 * A/B of the fleet's cross-engine costs (issue 19) between builds of svc, alternated in one run:
 *
 *   node bench/fleet-ab.ts <root> [<root> …]       (default: this checkout)
 *
 * Each root is a checkout with `dist` built (e.g. a copy of main's tree, and this one). Per root,
 * two engines of one fleet (a fleet name per root) on one private nats-server, and a callee worker
 * on engine B (bench/callee.ts of this checkout: the SDK is the same for every root). Per round,
 * root after root: a caller on engine A calling `bench::echo` on B (bench/load-ws.ts: sequential,
 * then 1, 8 and 64 in flight), then `GET /bench/echo` through B's own HTTP listener and through A's
 * (bench/load-http.ts, 16 connections).
 *
 * Printed per root, one JSON line, medians of the rounds: calls/s; per call (cross) or request
 * (HTTP), each process's CPU µs (user + system, /proc/<pid>/stat; the caller's from its own
 * `process.cpuUsage()`) and read/write system calls (/proc/<pid>/io), and their sums. The last line
 * gives the load average before and after each round. Two cores shared with other work cannot show
 * throughput reliably: compare CPU per call, alternated.
 *
 * Environment: BENCH_ROUNDS (3); BENCH_PHASES (`cross,own,other`); BENCH_DURATION_MS (2,000, per
 * in-flight count and per HTTP run) and BENCH_SAMPLES (2,000 sequential calls); BENCH_NODE_FLAGS
 * (extra node flags of the engines and the callee, e.g. `--cpu-prof --cpu-prof-dir=/tmp/p` or
 * `--perf-basic-prof`); BENCH_PIDS_FILE (the processes' pids are written there before the first
 * round) and BENCH_START_DELAY_MS (a pause after writing it), to attach `perf record -p`;
 * BENCH_ENGINE_OUTPUT (a directory: each engine's standard output after it is ready, e.g. with
 * `--trace-gc-nvp`, goes to `<root index>-<a|b>.log` there); BENCH_NATS_VARZ=1 (nats-server's
 * messages and bytes in and out per call or request, from its `/varz`, heartbeats included).
 *
 * Phases besides those: `moleculer` (Moleculer's brokers over the same nats-server, each round:
 * the peer cross-engine calls are measured against) and `nats` (the floor of any hop through
 * NATS: a bare nats.js requester and responder, bench/peers/nats.ts, over the same nats-server,
 * each round, at BENCH_NATS_IN_FLIGHT requests in flight, 16 by default like the HTTP phases; CPU
 * per request of nats-server, the responder and the requester).
 */
import type { ChildProcess } from 'node:child_process'
import { createWriteStream, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { firstJson } from './lines.ts'
import { processes, ROOT } from './processes.ts'
import { runMain } from './measure.ts'
import { startNatsServer } from './peers/nats-server.ts'

process.env.OTEL_ENABLED ??= 'false'
const children: ChildProcess[] = []
const { start, run, stop } = processes(children)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const DURATION_MS = process.env.BENCH_DURATION_MS ?? '2000'
const SAMPLES = process.env.BENCH_SAMPLES ?? '2000'
const phases = new Set((process.env.BENCH_PHASES ?? 'cross,own,other').split(','))
const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
const varz = process.env.BENCH_NATS_VARZ === '1'
const roots = process.argv.slice(2).map((r) => resolve(r))
if (roots.length === 0) roots.push(ROOT)

/** CPU time (user + system, µs) and read/write system calls of a process so far. */
interface Usage {
  cpu: number
  /** System (kernel) time alone, µs. */
  sys: number
  reads: number
  writes: number
}

function usage(pid: number): Usage {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const io = readFileSync(`/proc/${pid}/io`, 'utf8')
  return {
    // utime and stime are in clock ticks (100 per second).
    cpu: (Number(fields[11]) + Number(fields[12])) * 10_000,
    sys: Number(fields[12]) * 10_000,
    reads: Number(/syscr: (\d+)/.exec(io)![1]),
    writes: Number(/syscw: (\d+)/.exec(io)![1]),
  }
}

/** Per operation, each named process's CPU µs and system calls between `before` and now. */
function perOp(named: Record<string, number>, before: Record<string, Usage>, ops: number) {
  const cpu: Record<string, number> = {}
  const sys: Record<string, number> = {}
  const syscalls: Record<string, number> = {}
  for (const [name, pid] of Object.entries(named)) {
    const now = usage(pid)
    cpu[name] = (now.cpu - before[name]!.cpu) / ops
    sys[name] = (now.sys - before[name]!.sys) / ops
    syscalls[name] = (now.reads - before[name]!.reads + now.writes - before[name]!.writes) / ops
  }
  return { cpu, sys, syscalls }
}

/** nats-server's message and byte counters (`/varz`), or undefined without monitoring. */
async function natsCounters(monitorUrl: string | undefined): Promise<Record<string, number> | undefined> {
  if (monitorUrl === undefined) return undefined
  const v = (await (await fetch(`${monitorUrl}/varz`)).json()) as Record<string, number>
  return { in_msgs: v.in_msgs!, out_msgs: v.out_msgs!, in_bytes: v.in_bytes!, out_bytes: v.out_bytes! }
}

/** Per operation, the change of each counter between `before` and `after`. */
function counterDelta(before: Record<string, number> | undefined, after: Record<string, number> | undefined, ops: number): Record<string, number> | undefined {
  if (before === undefined || after === undefined) return undefined
  return Object.fromEntries(Object.keys(after).map((k) => [k, round1((after[k]! - before[k]!) / ops)]))
}

const snapshot = (named: Record<string, number>) => Object.fromEntries(Object.entries(named).map(([name, pid]) => [name, usage(pid)]))
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const round1 = (n: number) => Math.round(n * 10) / 10

/** Medians, field by field, of per-process records, with their `total` unless `total` is false. */
function medians(records: Array<Record<string, number>>, total = true): Record<string, number> {
  if (records.length === 0) return {}
  const withTotal: Array<Record<string, number>> = total ? records.map((r) => ({ ...r, total: Object.values(r).reduce((a, b) => a + b, 0) })) : records
  return Object.fromEntries(Object.keys(withTotal[0]!).map((k) => [k, round1(median(withTotal.map((r) => r[k]!)))]))
}

interface Setup {
  root: string
  pids: { engine_a: number; engine_b: number; nats: number; callee: number }
  engineUrl: string
  httpOwn: string
  httpOther: string
}

async function main(): Promise<void> {
  const nats = await startNatsServer((child) => children.push(child), varz)
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-fleet-ab-'))
  const setups: Setup[] = []
  const started: ChildProcess[] = []
  try {
    for (const [i, root] of roots.entries()) {
      const dir = join(project, `p${i}`)
      await mkdir(dir)
      const config = ['fleet:', `  name: ab${i}`, `  nats: ${nats.url}`, 'workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', '']
      await writeFile(join(dir, 'config.yaml'), config.join('\n'))
      const engine = async (name: string) => {
        const engine = start([...nodeFlags, join(root, 'bin', 'run.js'), '--json', '--no-workers', '--data-dir', join(dir, `.data-${name}`)], { SVC_LOG_LEVEL: 'warn', SVC_FLEET_ENGINE: name }, dir)
        started.push(engine.child)
        // The engine's standard output (e.g. --trace-gc-nvp) goes to a file too.
        if (process.env.BENCH_ENGINE_OUTPUT !== undefined) engine.child.stdout!.pipe(createWriteStream(join(process.env.BENCH_ENGINE_OUTPUT, `${i}-${name}.log`)))
        const ready = await firstJson(engine.lines, 'engine_url')
        // firstJson's end closed the line reader, which paused the stream: read on (a full pipe would block the engine).
        engine.child.stdout!.resume()
        return { child: engine.child, ready }
      }
      const a = await engine('a')
      const b = await engine('b')
      const callee = start([...nodeFlags, 'bench/callee.ts', b.ready.engine_url])
      started.push(callee.child)
      await firstJson(callee.lines, 'ready')
      setups.push({
        root,
        pids: { engine_a: a.child.pid!, engine_b: b.child.pid!, nats: nats.child.pid!, callee: callee.child.pid! },
        engineUrl: a.ready.engine_url,
        httpOwn: b.ready.http_url,
        httpOther: a.ready.http_url,
      })
    }
    let moleculerCallee: ChildProcess | undefined
    if (phases.has('moleculer')) {
      const callee = start(['bench/peers/moleculer-callee.ts', nats.url])
      started.push(callee.child)
      await firstJson(callee.lines, 'ready')
      moleculerCallee = callee.child
    }
    let natsResponder: ChildProcess | undefined
    if (phases.has('nats')) {
      const responder = start(['bench/peers/nats.ts', 'responder', nats.url])
      started.push(responder.child)
      await firstJson(responder.lines, 'ready')
      natsResponder = responder.child
    }
    if (process.env.BENCH_PIDS_FILE !== undefined) await writeFile(process.env.BENCH_PIDS_FILE, JSON.stringify(setups.map((s) => ({ root: s.root, ...s.pids }))))
    if (process.env.BENCH_START_DELAY_MS !== undefined) await sleep(Number(process.env.BENCH_START_DELAY_MS))

    const results = setups.map(() => ({
      rates: [] as Array<Record<string, number>>,
      cross: { cpu: [] as Array<Record<string, number>>, sys: [] as Array<Record<string, number>>, syscalls: [] as Array<Record<string, number>>, nats: [] as Array<Record<string, number>> },
      own: { cpu: [] as Array<Record<string, number>>, sys: [] as Array<Record<string, number>>, syscalls: [] as Array<Record<string, number>>, per_second: [] as number[], nats: [] as Array<Record<string, number>> },
      other: { cpu: [] as Array<Record<string, number>>, sys: [] as Array<Record<string, number>>, syscalls: [] as Array<Record<string, number>>, per_second: [] as number[], nats: [] as Array<Record<string, number>> },
    }))
    const moleculer = { rates: [] as Array<Record<string, number>>, cpu: [] as Array<Record<string, number>> }
    const bare = { rates: [] as Array<Record<string, number>>, cpu: [] as Array<Record<string, number>> }
    const loads = [load()]
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, s] of setups.entries()) {
        if (!phases.has('cross')) break
        const before = snapshot(s.pids)
        const natsBefore = await natsCounters(nats.monitorUrl)
        const r = await run(['bench/load-ws.ts', 'svc', s.engineUrl], { BENCH_DURATION_MS: DURATION_MS, BENCH_SAMPLES: SAMPLES })
        const { cpu, sys, syscalls } = perOp(s.pids, before, r.calls)
        const natsPerCall = counterDelta(natsBefore, await natsCounters(nats.monitorUrl), r.calls)
        if (natsPerCall !== undefined) results[i]!.cross.nats.push(natsPerCall)
        cpu.caller = (r.cpu_ms * 1000) / r.calls
        results[i]!.cross.cpu.push(cpu)
        results[i]!.cross.sys.push(sys)
        results[i]!.cross.syscalls.push(syscalls)
        results[i]!.rates.push({ p50_us: r.p50_us, ...r.per_second })
      }
      if (moleculerCallee !== undefined) {
        const pids = { nats: nats.child.pid!, callee: moleculerCallee.pid! }
        const before = snapshot(pids)
        const r = await run(['bench/peers/moleculer-caller.ts', nats.url], { BENCH_DURATION_MS: DURATION_MS, BENCH_SAMPLES: SAMPLES })
        const { cpu } = perOp(pids, before, r.calls)
        cpu.caller = (r.cpu_ms * 1000) / r.calls
        moleculer.cpu.push(cpu)
        moleculer.rates.push({ p50_us: r.p50_us, ...r.per_second })
      }
      if (natsResponder !== undefined) {
        const pids = { nats: nats.child.pid!, responder: natsResponder.pid! }
        const before = snapshot(pids)
        // No sequential samples: the in-flight count alone, as the HTTP phases' steady load.
        const r = await run(['bench/peers/nats.ts', 'requester', nats.url], { BENCH_DURATION_MS: DURATION_MS, BENCH_SAMPLES: '0', BENCH_IN_FLIGHT: process.env.BENCH_NATS_IN_FLIGHT ?? '16' })
        const { cpu } = perOp(pids, before, r.calls)
        cpu.requester = (r.cpu_ms * 1000) / r.calls
        bare.cpu.push(cpu)
        bare.rates.push(r.per_second)
      }
      for (const [i, s] of setups.entries()) {
        for (const via of ['own', 'other'] as const) {
          if (!phases.has(via)) continue
          // The load generator and the callee are the same either way: the engines and nats-server.
          const { callee: _callee, ...svc } = s.pids
          const before = snapshot(svc)
          const natsBefore = await natsCounters(nats.monitorUrl)
          const r = await run(['bench/load-http.ts', `${via === 'own' ? s.httpOwn : s.httpOther}/bench/echo`, '16'], { BENCH_DURATION_MS: DURATION_MS })
          // 500 warm-up requests plus the measured ones.
          const requests = 500 + Math.round((r.per_second * Number(DURATION_MS)) / 1000)
          const { cpu, sys, syscalls } = perOp(svc, before, requests)
          const natsPerRequest = counterDelta(natsBefore, await natsCounters(nats.monitorUrl), requests)
          if (natsPerRequest !== undefined) results[i]![via].nats.push(natsPerRequest)
          results[i]![via].cpu.push(cpu)
          results[i]![via].sys.push(sys)
          results[i]![via].syscalls.push(syscalls)
          results[i]![via].per_second.push(r.per_second)
        }
      }
      loads.push(load())
    }
    for (const [i, s] of setups.entries()) {
      const r = results[i]!
      const line: Record<string, unknown> = { root: s.root }
      if (r.rates.length > 0) line.cross = { ...medians(r.rates, false), cpu_us_per_call: medians(r.cross.cpu), of_which_system_us: medians(r.cross.sys), syscalls_per_call: medians(r.cross.syscalls), cpu_total_each_round: r.cross.cpu.map((c) => Math.round(Object.values(c).reduce((a, b) => a + b, 0))), ...(r.cross.nats.length > 0 && { nats_per_call: medians(r.cross.nats, false) }) }
      for (const via of ['own', 'other'] as const) {
        if (r[via].cpu.length > 0) line[`http_${via}`] = { per_second: median(r[via].per_second), cpu_us_per_request: medians(r[via].cpu), of_which_system_us: medians(r[via].sys), syscalls_per_request: medians(r[via].syscalls), cpu_total_each_round: r[via].cpu.map((c) => Math.round(Object.values(c).reduce((a, b) => a + b, 0))), ...(r[via].nats.length > 0 && { nats_per_request: medians(r[via].nats, false) }) }
      }
      if (r.own.cpu.length > 0 && r.other.cpu.length > 0) line.http_other_over_own = Math.round((medians(r.other.cpu).total! / medians(r.own.cpu).total!) * 100) / 100
      console.log(JSON.stringify(line))
    }
    if (moleculer.rates.length > 0) console.log(JSON.stringify({ moleculer: { ...medians(moleculer.rates, false), cpu_us_per_call: medians(moleculer.cpu), cpu_total_each_round: moleculer.cpu.map((c) => Math.round(Object.values(c).reduce((a, b) => a + b, 0))) } }))
    if (bare.rates.length > 0) console.log(JSON.stringify({ nats_request_reply: { per_second: medians(bare.rates, false), cpu_us_per_request: medians(bare.cpu), cpu_total_each_round: bare.cpu.map((c) => Math.round(Object.values(c).reduce((a, b) => a + b, 0))) } }))
    console.log(JSON.stringify({ load_average: loads }))
  } finally {
    for (const child of started) await stop(child)
    await nats.stop()
    await rm(project, { recursive: true, force: true })
  }
}

runMain(main, children)

/**
 * `npm run bench`: every benchmark in one run, each side in its own process, with the baselines
 * measured in the same run (the machines are shared and noisy, so only ratios are comparable).
 *
 *   invocation  caller → engine → callee (svc-sdk both ends) vs. a direct WebSocket echo, the same
 *               echo through a relay process that forwards frames unparsed (three processes), and vs.
 *               two peers through a private nats-server: Moleculer on its NATS transporter, and
 *               raw NATS request/reply
 *   http        requests/s through one route to a worker function, 1 vs 1000 registered routes
 *   stream      one stream::set fanned out to 1, 100 and 1,000 WebSocket clients (p50/p99 until the
 *               last client has it) and the engine's memory per idle client
 *   queue       10,000 messages through one durable queue at concurrency 1 and 10 vs. BullMQ on a
 *               private redis-server (bench/queue.ts)
 *   pubsub      one publish to 128 subscribe triggers on 4 worker processes vs. 128 direct calls
 *               (bench/pubsub.ts, its own engine)
 *   tracing     an engine-served function over WebSocket and HTTP with tracing on (sampling 1.0,
 *               builtin store) vs. off, alternated; and routed calls between two svc-sdk workers with
 *               SDK telemetry on vs. off (bench/tracing.ts)
 *   logs        log lines/s through /otel into the builtin store vs. the memory store and store
 *               none (bench/logs.ts, an engine process per store, the stores' rounds alternated)
 *   channel     MB/s of one channel between two processes through the engine (raw `ws` ends and
 *               svc-sdk ends) vs. a direct WebSocket between the same two processes
 *               (bench/channel.ts, its own engine)
 *   upload      a 1 GiB HTTP upload streamed through a route to a worker that reads request_body:
 *               MB/s and the engine's RSS growth, vs. the same upload to a plain Node server in
 *               the worker's process (bench/http-upload.ts, its own engine)
 *   sdk-rust    the Rust SDK's caller/callee pair vs. the Node SDK's through one engine, alternated
 *               (bench/sdk-rust.ts, its own engine; needs cargo)
 *   fleet       a call from a worker on engine A to a worker on engine B (two engines of one fleet
 *               on a private nats-server) vs. the same call within engine B and vs. Moleculer
 *               over the same nats-server; CPU per HTTP request through the other engine's
 *               listener vs. the callee's own (bench/fleet.ts)
 *   cli start   `svc --version` and `svc trigger` of the packed CLI installed offline vs.
 *               `node -e "require('ws')"`, alternated, with and without the command manifest
 *               (bench/cli-start.ts)
 *   install     `npm i -g --offline` of the packed CLI: wall seconds, installed MB and files
 *               (bench/install.ts; targets ≤ 30 s, ≤ 60 MB)
 *   memory      the engine's RSS (`svc --json`, defaults) after 100,000 calls between svc-sdk
 *               workers with telemetry on, and the callee's (bench/engine-memory.ts; targets
 *               < 200 MiB, ≤ 70 MB)
 *
 * `--write` replaces the results section of docs/benchmarks.md (between `<!-- results -->` and
 * `<!-- /results -->`; the sections after it stay).
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { cpus, totalmem, tmpdir } from 'node:os'
import { join } from 'node:path'
import { firstJson } from './lines.ts'
import { processes, ROOT } from './processes.ts'
import { freePort, IN_FLIGHT, runMain } from './measure.ts'
import { natsServerPath, startNatsServer } from './peers/nats-server.ts'

// The peers (Moleculer, raw NATS, BullMQ) run without tracing, so svc-sdk processes run with their
// telemetry off too (like for like); what telemetry costs is measured on its own in the tracing rows,
// which set OTEL_ENABLED per mode. The engine keeps its default settings.
process.env.OTEL_ENABLED ??= 'false'
const children: ChildProcess[] = []
const { start, run, runDocument, stop } = processes(children)





/** The peer rows: caller and callee processes talking through one nats-server started here. */
async function measurePeers(): Promise<{ moleculer: Record<string, any>; nats: Record<string, any> }> {
  const server = await startNatsServer((child) => children.push(child))
  try {
    const moleculerCallee = start(['bench/peers/moleculer-callee.ts', server.url])
    await firstJson(moleculerCallee.lines, 'ready')
    const moleculer = await run(['bench/peers/moleculer-caller.ts', server.url])
    await stop(moleculerCallee.child)

    const responder = start(['bench/peers/nats.ts', 'responder', server.url])
    await firstJson(responder.lines, 'ready')
    const nats = await run(['bench/peers/nats.ts', 'requester', server.url])
    await stop(responder.child)
    return { moleculer, nats }
  } finally {
    await server.stop()
  }
}

/** The pub/sub fan-out table (bench/pubsub.ts result). */
function pubsubRows(r: Record<string, any>): string[] {
  return [
    `| Pub/sub fan-out to ${r.subscribers} subscribe triggers on ${r.workers} worker processes (every delivery acknowledged back to the caller) | publish | ${r.subscribers} direct calls (baseline) | publish / direct |`,
    '|---|---|---|---|',
    `| one message to all, p50 | ${r.fanout_p50_us} µs | ${r.direct_p50_us} µs | ${(r.fanout_p50_us / r.direct_p50_us).toFixed(2)}× |`,
    `| one message to all, p99 | ${r.fanout_p99_us} µs | ${r.direct_p99_us} µs | ${(r.fanout_p99_us / r.direct_p99_us).toFixed(2)}× |`,
    `| deliveries/s (1,000 messages, 16 in flight) | ${r.publish_deliveries_per_second}/s | ${r.direct_deliveries_per_second}/s | ${Math.round((r.publish_deliveries_per_second / r.direct_deliveries_per_second) * 100)}% |`,
    `| publishes/s handed over | ${r.publishes_per_second}/s | ${r.direct_rounds_per_second} rounds/s | |`,
  ]
}

async function main(): Promise<void> {
  const write = process.argv.includes('--write')
  natsServerPath() // fail before measuring anything if the peers cannot run
  const project = await mkdtemp(join(tmpdir(), 'svc-bench-'))
  // A second listener with access control, where bench::echo is exposed: the RBAC row calls
  // through it (the callee stays on the trusted listener).
  const rbacPort = await freePort()
  await writeFile(
    join(project, 'config.yaml'),
    [
      'workers:',
      '  - name: svc-worker-manager',
      '    config: { port: 0 }',
      '  - name: svc-worker-manager',
      `    config: { port: ${rbacPort}, rbac: { expose_functions: ['bench::echo'] } }`,
      '  - name: svc-http',
      '    config: { port: 0 }',
      '',
    ].join('\n'),
  )

  // Baseline: direct WebSocket echo between two processes.
  const echo = start(['bench/echo-server.ts'])
  const { port } = await firstJson(echo.lines, 'port')
  const direct = await run(['bench/load-ws.ts', 'echo', String(port)])
  await stop(echo.child)

  // Structural baseline: the same echo through a relay process that forwards frames unparsed.
  const relay = start(['bench/relay.ts', 'relay'])
  const { port: relayPort } = await firstJson(relay.lines, 'port')
  const relayEcho = start(['bench/relay.ts', 'echo', String(relayPort)])
  await firstJson(relayEcho.lines, 'ready')
  const relayed = await run(['bench/load-ws.ts', 'echo', String(relayPort)])
  await stop(relayEcho.child)
  await stop(relay.child)

  // svc: caller → engine → callee, three processes.
  const engine = start([join(ROOT, 'bin', 'run.js'), '--json'], { SVC_LOG_LEVEL: 'warn' }, project)
  const ready = await firstJson(engine.lines, 'engine_url')
  const callee = start(['bench/callee.ts', ready.engine_url])
  await firstJson(callee.lines, 'ready')
  // svc and svc through the RBAC listener, alternated three times so both see the same machine;
  // each row is the median run (by 64-in-flight throughput).
  const svcRuns: Array<Record<string, any>> = []
  const rbacRuns: Array<Record<string, any>> = []
  for (let round = 0; round < 3; round++) {
    svcRuns.push(await run(['bench/load-ws.ts', 'svc', ready.engine_url]))
    rbacRuns.push(await run(['bench/load-ws.ts', 'svc', `ws://127.0.0.1:${rbacPort}`]))
  }
  const svc = medianRun(svcRuns)
  const rbac = medianRun(rbacRuns)

  // HTTP: the same engine with 1 route, then with 1,000 (999 more from a second worker), alternated
  // three times; the median of each is reported.
  const samples: Record<string, number[]> = {}
  for (let round = 0; round < 3; round++) {
    for (const routes of [1, 1000]) {
      const extra = routes > 1 ? start(['bench/routes.ts', ready.engine_url], { BENCH_ROUTES: String(routes - 1) }) : undefined
      if (extra) {
        const registered = await firstJson(extra.lines, 'routes')
        if (registered.routes !== routes) throw new Error(`expected ${routes} routes, engine lists ${registered.routes}`)
      }
      for (const concurrency of [1, 32]) {
        const result = await run(['bench/load-http.ts', `${ready.http_url}/bench/echo`, String(concurrency)])
        ;(samples[`${routes}/${concurrency}`] ??= []).push(result.per_second)
      }
      if (extra) await stop(extra.child)
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  const http = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]))
  await stop(callee.child)
  await stop(engine.child)
  await rm(project, { recursive: true, force: true })

  // Stream fan-out, its own engine process (bench/stream-fanout.ts).
  const stream = await run(['bench/stream-fanout.ts'])

  // Peers, with the engine stopped: only the processes of the row being measured run.
  const { moleculer, nats } = await measurePeers()
  const pubsub = await run(['bench/pubsub.ts'])

  // Queue: svc's durable queue and BullMQ on redis-server, each with only its own processes running.
  const queue = await run(['bench/queue.ts'])

  // Tracing on vs off: one engine process per mode, alternated (bench/tracing.ts).
  const tracing = await runDocument(['bench/tracing.ts'])
  // Log ingest through /otel, one engine process per store, rounds alternated (bench/logs.ts).
  const logs = await run(['bench/logs.ts'])
  // One channel through the engine vs a direct WebSocket, same two processes (bench/channel.ts).
  const channel = await run(['bench/channel.ts'])
  // A 1 GiB upload streamed through a route (request_body) vs. straight to the worker's process (bench/http-upload.ts).
  const upload = await run(['bench/http-upload.ts'])
  // The Rust SDK pair vs the Node SDK pair, one engine, alternated (bench/sdk-rust.ts).
  const sdkRust = await run(['bench/sdk-rust.ts'])
  // Two engines of a fleet: cross-engine calls and HTTP through the other engine (bench/fleet.ts).
  const fleet = await run(['bench/fleet.ts'])
  // CLI start-up of the installed CLI vs. a bare Node loading ws (bench/cli-start.ts).
  const cliStart = await run(['bench/cli-start.ts'])
  // The packed CLI's offline install: time, bytes and files (bench/install.ts).
  const install = await run(['bench/install.ts'])
  // The engine's RSS after 100,000 traced calls between svc-sdk workers, defaults (bench/engine-memory.ts).
  const engineMemory = await run(['bench/engine-memory.ts'])

  const pct = (a: number, b: number) => `${Math.round((a / b) * 100)}%`
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${process.platform}`
  const table = [
    `Machine: ${machine}. Date: ${new Date().toISOString().slice(0, 10)}.`,
    '',
    '| Invocation (≈100-byte payload; svc: median of 3 runs) | direct WebSocket echo | echo through a no-op relay | svc caller → engine → callee | Moleculer caller → nats-server → callee | NATS request → nats-server → responder | svc / echo | svc / relay | svc / Moleculer |',
    '|---|---|---|---|---|---|---|---|---|',
    ...(['p50', 'p99'] as const).map((p) => {
      const key = `${p}_us`
      const target = p === 'p50' ? ' (target ≤ 2.3×)' : ''
      return `| sequential ${p} | ${direct[key]} µs | ${relayed[key]} µs | ${svc[key]} µs | ${moleculer[key]} µs | ${nats[key]} µs | ${ratio(svc[key], direct[key])}${target} | ${ratio(svc[key], relayed[key])} | ${ratio(svc[key], moleculer[key])} |`
    }),
    ...IN_FLIGHT.map((n) => {
      const target = n === 64 ? ' (target ≥ 60% and ahead of Moleculer)' : n === 8 ? ' (target ≥ 50%)' : ''
      const rate = (row: Record<string, any>) => row.per_second[n] as number
      return `| ${n} in flight | ${rate(direct)}/s | ${rate(relayed)}/s | ${rate(svc)}/s | ${rate(moleculer)}/s | ${rate(nats)}/s | ${pct(rate(svc), rate(direct))}${target} | ${pct(rate(svc), rate(relayed))} | ${pct(rate(svc), rate(moleculer))} |`
    }),
    '',
    '| svc with access control (caller on an `rbac` listener, `bench::echo` exposed; median of 3 alternated) | RBAC off | RBAC on | on / off |',
    '|---|---|---|---|',
    `| sequential p50 | ${svc.p50_us} µs | ${rbac.p50_us} µs | ${ratio(rbac.p50_us, svc.p50_us)} |`,
    ...IN_FLIGHT.map((n) => `| ${n} in flight | ${svc.per_second[n]}/s | ${rbac.per_second[n]}/s | ${pct(rbac.per_second[n], svc.per_second[n])}${n === 64 ? ' (target within 10%)' : ''} |`),
    '',
    '| HTTP GET through one route to a worker function (median of 3) | 1 route | 1,000 routes | 1,000 / 1 |',
    '|---|---|---|---|',
    ...[1, 32].map((c) => `| ${c} connection${c > 1 ? 's' : ''} | ${http[`1/${c}`]}/s | ${http[`1000/${c}`]}/s | ${pct(http[`1000/${c}`]!, http[`1/${c}`]!)} (target within 15%) |`),
    '',
    '| Stream fan-out: one `stream::set` until the last subscribed WebSocket client has the event (50 rounds) | 1 client | 100 clients | 1,000 clients |',
    '|---|---|---|---|',
    ...(['p50', 'p99'] as const).map((p) => `| ${p} | ${[1, 100, 1000].map((n) => `${stream.fanout[n][`${p}_ms`]} ms`).join(' | ')}${p === 'p50' ? ' (target ≤ 50 ms)' : ''} |`),
    '',
    `Engine memory per idle joined client (${stream.idle.clients} clients, after GC): RSS ${stream.idle.rss_kib} KiB, heap ${stream.idle.heap_kib} KiB (target < 20 KiB).`,
    '',
    queue.queue_table as string,
    '',
    ...pubsubRows(pubsub),
    '',
    ...tracingRows(tracing.engine),
    '',
    ...sdkTracingRows(tracing.sdk),
    '',
    ...logRows(logs),
    '',
    ...channelRows(channel),
    '',
    ...uploadRows(upload),
    '',
    ...sdkRustRows(sdkRust),
    '',
    ...fleetRows(fleet),
    '',
    ...cliStartRows(cliStart),
    '',
    `Install (\`npm i -g --offline\` of the packed CLI, ${install.tarball_mb} MB tarball): ${install.install_s} s (target ≤ 30 s), ${install.installed_mb} MB on disk (target ≤ 60 MB), ${install.files.toLocaleString('en')} files.`,
    '',
    `Engine memory with defaults (\`svc --json\`, svc-sdk caller and callee with telemetry on, ${engineMemory.calls.toLocaleString('en')} calls at 64 in flight): RSS ${engineMemory.rss_idle_mib} MiB idle, ${engineMemory.rss_settled_mib} MiB after the calls, peak ${engineMemory.peak_rss_mib} MiB (target < 200 MiB); window: ${engineMemory.window}. A trivial svc-sdk worker (${engineMemory.callee_sdk === 'vendored' ? 'the bundled svc-sdk a scaffolded project vendors' : "the workspace's unbundled svc-sdk; run npm run build for the bundled one"}): ${engineMemory.callee_rss_ready_mib} MiB connected${engineMemory.callee_prime === 'primed' ? ' at its first start after svc project init (its compile cache primed)' : engineMemory.callee_prime === 'off' ? ' at an unprimed first start (BENCH_PRIME=0)' : ''} (target ≤ 70 MB), ${engineMemory.callee_rss_after_mib} MiB after the calls.`,
  ].join('\n')
  console.log(table)
  if (write) {
    const file = join(ROOT, 'docs', 'benchmarks.md')
    const current = await readFile(file, 'utf8').catch(() => '# Benchmarks\n')
    // Replaces what lies between the two markers; the sections after the end marker stay.
    const marker = '<!-- results -->'
    const end = '<!-- /results -->'
    const head = current.includes(marker) ? current.slice(0, current.indexOf(marker)) : current + '\n'
    const tail = current.includes(end) ? current.slice(current.indexOf(end)) : `${end}\n`
    await writeFile(file, `${head}${marker}\n${table}\n\n${tail}`)
  }
}

/** Rows of the tracing benchmark: best of two runs per mode. */
function tracingRows(tracing: Record<string, any>): string[] {
  const runs = tracing.runs as Array<Record<string, any>>
  const best = (mode: string, key: string, higher: boolean) => runs.filter((r) => r.mode === mode).map((r) => r[key] as number).reduce((a, b) => (higher ? Math.max(a, b) : Math.min(a, b)))
  const row = (label: string, rate: string, p50: string) =>
    `| ${label} | ${best('off', rate, true)}/s | ${best('on', rate, true)}/s | ${Math.round((best('on', rate, true) / best('off', rate, true)) * 100)}% (target ≥ 70%) | ${best('off', p50, false)} µs | ${best('on', p50, false)} µs | ${(best('on', p50, false) / best('off', p50, false)).toFixed(2)}× (target ≤ 1.3×) |`
  return [
    '| Tracing (engine-served function; on: sampling 1.0, builtin store; best of 2 alternated) | off calls/s (64 in flight) | on calls/s | on / off | off p50 | on p50 | on / off |',
    '|---|---|---|---|---|---|---|',
    row('WebSocket `invokefunction`', 'ws_per_second', 'ws_p50_us'),
    row('HTTP GET through svc-http', 'http_per_second', 'http_p50_us'),
  ]
}

/** The log ingest table (bench/logs.ts result): medians over its alternated rounds. */
function logRows(r: Record<string, any>): string[] {
  const { none, memory, builtin } = r.stores
  const ratio = (row: Record<string, any>) => `${Number(row.to_none).toFixed(2)}×`
  const cpu = (key: string) => `${none[key]} µs | ${memory[key]} µs | ${builtin[key]} µs`
  return [
    `| Log ingest: lines/s through /otel (${r.lines.toLocaleString('en')} lines per round, 1,000 per \`LOGS\` frame, 4 sockets; median of ${r.rounds} rounds, the stores alternated) | store none (baseline) | memory | builtin | builtin / none |`,
    '|---|---|---|---|---|',
    `| lines/s (ratio: median of the rounds' ratios to none) | ${none.lines_per_second}/s | ${memory.lines_per_second}/s (${ratio(memory)}) | ${builtin.lines_per_second}/s | ${ratio(builtin)} (rounds: ${builtin.to_none_rounds.map((x: number) => x.toFixed(2)).join(', ')}) |`,
    `| engine CPU per line, every thread (the writer's work included) | ${cpu('engine_cpu_us_per_line')} | ${(none.engine_cpu_us_per_line / builtin.engine_cpu_us_per_line).toFixed(2)}× (none / builtin) |`,
    `| the same, main thread / writer thread / V8's helper threads | ${[none, memory, builtin].map((row) => `${row.engine_main_cpu_us_per_line} / ${row.engine_writer_cpu_us_per_line} / ${row.engine_v8_cpu_us_per_line} µs`).join(' | ')} | ${(none.engine_main_cpu_us_per_line / builtin.engine_main_cpu_us_per_line).toFixed(2)}× (main thread) |`,
    `| engine main thread's wait for a CPU per line (ready, both cores busy) | ${cpu('engine_main_wait_us_per_line')} | |`,
    `| engine peak RSS | ${none.rss_peak_mib} MiB | ${memory.rss_peak_mib} MiB | ${builtin.rss_peak_mib} MiB | |`,
    `| rows not written to observability.db (writer behind), all rounds | | | ${builtin.not_written} | |`,
    `| load average at start / end | ${r.load_average[0]} / ${r.load_average[1]} | | | |`,
  ]
}

/** The channel table (bench/channel.ts result). */
function channelRows(r: Record<string, any>): string[] {
  const pct = (mbPerS: number) => `${Math.round((mbPerS / r.direct_mb_per_s) * 100)}%`
  return [
    `| Channel: ${r.mib} MiB as ${r.frame_kib} KiB binary frames, writer process → reader process (median of ${r.rounds} alternated) | direct WebSocket | channel, raw \`ws\` ends | channel, svc-sdk ends | raw / direct | svc-sdk / direct |`,
    '|---|---|---|---|---|---|',
    `| MB/s | ${r.direct_mb_per_s} | ${r.channel_mb_per_s} | ${r.sdk_mb_per_s} | ${pct(r.channel_mb_per_s)} | ${pct(r.sdk_mb_per_s)} (target ≥ 60%) |`,
    `| CPU ms: reader / writer / engine | ${r.direct_reader_cpu_ms} / ${r.direct_writer_cpu_ms} / – | ${r.channel_reader_cpu_ms} / ${r.channel_writer_cpu_ms} / ${r.channel_engine_cpu_ms} | ${r.sdk_reader_cpu_ms} / ${r.sdk_writer_cpu_ms} / ${r.sdk_engine_cpu_ms} | | |`,
  ]
}

/** The streamed upload table (bench/http-upload.ts result). */
function uploadRows(r: Record<string, any>): string[] {
  return [
    `| HTTP upload: ${r.mib} MiB PUT, client process → worker process | straight to a Node HTTP server in the worker | through svc-http, streamed to the worker over request_body | through svc-http / straight |`,
    '|---|---|---|---|',
    `| MB/s | ${r.direct_mb_per_s} | ${r.engine_mb_per_s} | ${Math.round((r.engine_mb_per_s / r.direct_mb_per_s) * 100)}% |`,
    `| engine RSS growth during the upload | | ${r.engine_rss_growth_mib} MiB (${r.engine_rss_before_mib} → ${r.engine_rss_peak_mib} MiB; target < 100 MiB) | |`,
  ]
}

/** Rows of the SDK part of the tracing benchmark: medians of the alternated runs (bench/tracing.ts). */
function sdkTracingRows(sdk: Record<string, any>): string[] {
  const { off, on } = sdk.median as Record<string, Record<string, any>>
  const pct = (n: number) => `${Math.round((on!.per_second[n] / off!.per_second[n]) * 100)}%`
  return [
    `| SDK telemetry (caller → engine → callee, both svc-sdk; on: OTEL_ENABLED=true, engine store ${sdk.store}, sampling 1.0; median of ${sdk.runs.length / 2} alternated) | off | on | on / off |`,
    '|---|---|---|---|',
    `| sequential p50 | ${off!.p50_us} µs | ${on!.p50_us} µs | ${(on!.p50_us / off!.p50_us).toFixed(2)}× (target ≤ 1.3×) |`,
    ...IN_FLIGHT.map((n) => `| ${n} in flight | ${off!.per_second[n]}/s | ${on!.per_second[n]}/s | ${pct(n)}${n === 64 ? ' (target ≥ 80%)' : ''} |`),
    `| CPU per call at ${process.env.BENCH_RATE ?? 10000} calls/s: caller / engine / callee | ${['caller', 'engine', 'callee'].map((k) => off!.cpu_us_per_call[k]).join(' / ')} µs | ${['caller', 'engine', 'callee'].map((k) => on!.cpu_us_per_call[k]).join(' / ')} µs | |`,
  ]
}

/** The Rust SDK pair vs the Node SDK pair (bench/sdk-rust.ts result). */
function sdkRustRows(r: Record<string, any>): string[] {
  const { node, rust } = r as { node: Record<string, any>; rust: Record<string, any> }
  return [
    `| SDK pair: caller → engine → callee, \`bench::echo\` (median of ${r.rounds} alternated) | Node (svc-sdk) | Rust (svc-sdk crate, release) | Rust / Node |`,
    '|---|---|---|---|',
    `| sequential p50 | ${node.p50_us} µs | ${rust.p50_us} µs | ${(rust.p50_us / node.p50_us).toFixed(2)}× (target ≤ 1×) |`,
    `| sequential p99 | ${node.p99_us} µs | ${rust.p99_us} µs | ${(rust.p99_us / node.p99_us).toFixed(2)}× |`,
    ...IN_FLIGHT.map((n) => `| ${n} in flight | ${node.per_second[n]}/s | ${rust.per_second[n]}/s | ${Math.round((rust.per_second[n] / node.per_second[n]) * 100)}%${n === 64 ? ' (target ≥ 100%)' : ''} |`),
    `| caller CPU per call | ${(node.cpu_ms * 1000 / node.calls).toFixed(1)} µs | ${(rust.cpu_ms * 1000 / rust.calls).toFixed(1)} µs | |`,
  ]
}

/** CLI start-up rows (bench/cli-start.ts result). */
/** The fleet rows (bench/fleet.ts result). */
function fleetRows(r: Record<string, any>): string[] {
  const cpu = (row: Record<string, any>) => {
    const c = row.cpu_us_per_call as Record<string, number> | undefined
    if (c === undefined) return ''
    const total = Math.round(Object.values(c).reduce((a, b) => a + b, 0) * 10) / 10
    return ` (CPU µs per call: engine A ${c.engine_a}, engine B ${c.engine_b}, nats-server ${c.nats}, callee ${c.callee}${c.caller === undefined ? '' : `, caller ${c.caller}; ${total} in all`})`
  }
  const m = r.moleculer.cpu_us_per_call as Record<string, number> | undefined
  const moleculerCpu = m?.callee === undefined ? '' : `; Moleculer (CPU µs per call: nats-server ${m.nats}, callee ${m.callee}, caller ${m.caller}; ${Math.round((m.nats! + m.callee + m.caller!) * 10) / 10} in all)`
  return [
    '| Fleet: two engines on one nats-server (svc: median of 3, alternated) | worker on A → engine A → NATS → engine B → worker | same call within engine B | Moleculer over the same nats-server | cross / same engine | cross / Moleculer |',
    '|---|---|---|---|---|---|',
    `| sequential p50 | ${r.cross.p50_us} µs | ${r.local.p50_us} µs | ${r.moleculer.p50_us} µs | ${(r.cross.p50_us / r.local.p50_us).toFixed(2)}× | ${(r.cross.p50_us / r.moleculer.p50_us).toFixed(2)}× |`,
    ...IN_FLIGHT.map(
      (n) =>
        `| ${n} in flight | ${r.cross.per_second[n]}/s | ${r.local.per_second[n]}/s | ${r.moleculer.per_second[n]}/s | ${Math.round((r.cross.per_second[n] / r.local.per_second[n]) * 100)}% | ${Math.round((r.cross.per_second[n] / r.moleculer.per_second[n]) * 100)}%${n === 64 ? ' (target ≥ 100%)' : ''} |`,
    ),
    '',
    `Cross-engine${cpu(r.cross)}; same engine${cpu(r.local)}${moleculerCpu}. Over every phase of a run (sequential, 1, 8 and 64 in flight).`,
    ...at64Line(r.at_64),
    '',
    '| HTTP GET through a route of a worker on engine B, 16 connections (median of 3, alternated) | CPU µs per request (both engines and nats-server) | requests/s |',
    '|---|---|---|',
    `| through B's own listener | ${r.http.own.cpu_us_per_request} µs | ${r.http.own.per_second}/s |`,
    `| through A's listener | ${r.http.other.cpu_us_per_request} µs (${(r.http.other.cpu_us_per_request / r.http.own.cpu_us_per_request).toFixed(2)}×, target ≤ 1.3×) | ${r.http.other.per_second}/s |`,
    ...bareNatsRow(r.nats_request_reply, r.http.own.cpu_us_per_request),
  ]
}

/** 64 in flight alone (bench/fleet.ts `at_64`): CPU per call and the cores it kept busy, svc's against Moleculer's. */
function at64Line(at: Record<string, any> | undefined): string[] {
  if (at === undefined) return []
  const labels: Record<string, string> = { engine_a: 'engine A', engine_b: 'engine B', nats: 'nats-server', callee: 'callee', caller: 'caller' }
  const parts = (c: Record<string, number>) => Object.entries(c).map(([name, us]) => `${labels[name] ?? name} ${us}`).join(', ')
  return [
    '',
    `At 64 in flight alone: svc ${at.svc.per_second} calls/s, ${at.svc.total_us} µs of CPU per call (${parts(at.svc.cpu_us_per_call)}), ${at.svc.cores} cores busy; Moleculer ${at.moleculer.per_second} calls/s, ${at.moleculer.total_us} µs (${parts(at.moleculer.cpu_us_per_call)}), ${at.moleculer.cores} cores busy. Two cores bound a rate that needs them all.`,
  ]
}

/** The bare NATS hop beside the HTTP rows: what 1.3× leaves for it, and what it costs alone. */
function bareNatsRow(bare: { cpu_us_per_request: Record<string, number>; per_second: number } | undefined, own: number): string[] {
  if (bare === undefined) return []
  const c = bare.cpu_us_per_request
  const sum = Math.round((c.nats! + c.responder! + c.requester!) * 10) / 10
  return [`| a bare nats.js request → the same nats-server → responder, 16 in flight (no engine) | ${sum} µs: nats-server ${c.nats}, responder ${c.responder}, requester ${c.requester} (1.3× leaves ${Math.round(own * 0.3)} µs for the whole hop) | ${bare.per_second}/s |`]
}

function cliStartRows(r: Record<string, any>): string[] {
  const ms = r.ms as Record<string, number>
  const times = (key: string) => `${(ms[key]! / ms.node_ws!).toFixed(1)}×`
  return [
    `| CLI start, installed from the packed tarball (median of ${r.rounds} alternated; wall ms) | node -e "require('ws')" | with oclif.manifest.json | ratio | without (a checkout) | ratio |`,
    '|---|---|---|---|---|---|',
    `| svc --version | ${ms.node_ws} | ${ms.version} | ${times('version')} (target ≤ 4×) | ${ms.version_unlisted} | ${times('version_unlisted')} |`,
    `| svc trigger engine::workers::list (engine running) | ${ms.node_ws} | ${ms.trigger} | ${times('trigger')} (target ≤ 5×) | ${ms.trigger_unlisted} | ${times('trigger_unlisted')} |`,
  ]
}

/** The median run by 64-in-flight throughput, for rows measured more than once. */
function medianRun(runs: Array<Record<string, any>>): Record<string, any> {
  return [...runs].sort((a, b) => a.per_second[64] - b.per_second[64])[Math.floor(runs.length / 2)]!
}


runMain(main, children)

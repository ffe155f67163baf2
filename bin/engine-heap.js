// V8 heap settings for the processes that host an engine (`svc`, `svc start`): plain JavaScript,
// loaded by bin/run.js before anything else, on any Node.
//
// With V8's defaults a busy engine holds about 250 MiB more than it uses: the young generation
// grows to 3 × 16 MiB and the old generation to about twice its live objects between two full
// collections (bench/engine-memory.ts: 410–470 MiB of RSS after 100,000 traced calls, with 28 MiB
// of live heap besides the span window). These flags are read when V8 starts, so they cannot be
// set from inside the process: bin/run.js replaces itself with a Node started with them
// (`process.execve`: same pid, terminal and signals; no second process). docs/benchmarks.md
// ("Engine memory") has the measurements behind the values; docs/decisions.md the trade-off.

import { withDefaultCommand } from '../dist/src/lib/argv.js'

/**
 * `--max-semi-space-size` (MiB) for an engine process. V8's heap growth stays its own: since the
 * observability window keeps no object per span (session 32), the engine's old generation holds
 * little besides live state, and a 50% growth limit only made full collections more frequent
 * (the queue's engine CPU per message ~10–15% higher) for ~5 MiB less RSS. 8 MiB since session 38,
 * not 4: the redis queue adapter keeps a Redis round trip's batches and spans alive across a
 * 4 MiB young generation (22% of its bytes promoted, ~10 µs of scavenges per message at
 * concurrency 10); with 8 its engine CPU per message fell 60 → 55 µs for ~4 MiB more RSS after
 * 100,000 traced calls (docs/benchmarks.md, session 38).
 */
export const ENGINE_V8_FLAGS = ['--max-semi-space-size=8']

/**
 * Whether `svc <argv>` runs an engine in this process: the commands that run `svc start`, the
 * default command (src/lib/argv.ts: `svc` alone or followed only by flags).
 *
 * @param {readonly string[]} argv the arguments after `svc`
 * @returns {boolean}
 */
export function hostsEngine(argv) {
  return withDefaultCommand(argv)[0] === 'start'
}

/**
 * Whether V8's young generation or heap growth is already chosen for this process, by its
 * command line or by NODE_OPTIONS (the user's choice wins; and a process started with
 * {@link ENGINE_V8_FLAGS} is not started again).
 *
 * @param {readonly string[]} execArgv `process.execArgv`
 * @param {string | undefined} nodeOptions `process.env.NODE_OPTIONS`
 * @returns {boolean}
 */
export function heapChosen(execArgv, nodeOptions) {
  const chosen = (arg) => /^--(max[-_]semi[-_]space[-_]size|heap[-_]growing[-_]percent|optimize[-_]for[-_]size)\b/.test(arg)
  return execArgv.some(chosen) || (nodeOptions ?? '').split(/\s+/).some(chosen)
}

/**
 * How much of a workload's garbage reaches V8's old generation: the test's way to catch per-call
 * objects kept alive past their call (a closure or a `Map` entry a long-lived object holds), which
 * the engine's heap flags turn into full collections (docs/benchmarks.md, "Per-call garbage and the
 * old generation").
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/**
 * Runs `step` `warmup` times, collects the whole heap twice, then runs it `rounds` × `perRound`
 * times with a scavenge after each round, and returns the bytes the old space grew by (what the
 * scavenges promoted and nothing freed). Turns `--expose-gc` on for this process.
 *
 * @example const grown = oldGenerationGrowth(() => call()) // assert.ok(grown < 8 * 1024 * 1024)
 */
export function oldGenerationGrowth(step: () => void, { warmup = 2000, rounds = 40, perRound = 1000 } = {}): number {
  setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as (options?: { type: 'minor' | 'major' }) => void
  const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')!.space_used_size
  for (let i = 0; i < warmup; i++) step()
  gc({ type: 'major' })
  gc({ type: 'major' })
  const before = oldSpace()
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < perRound; i++) step()
    gc({ type: 'minor' })
  }
  return oldSpace() - before
}

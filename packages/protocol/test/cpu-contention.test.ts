/**
 * The contention signal of the `ws` transport (transport/cpu-contention.ts): the runnable count of
 * `/proc/loadavg`, without the reading thread, smoothed, against the CPUs this process may use,
 * read at most every SAMPLE_MS while asked.
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import { CpuContention, runnableOf, SAMPLE_MS, STALE_MS } from '../src/transport/cpu-contention.ts'

/** A `/proc/loadavg` whose runnable count the test sets, a manual clock, and the reads made. */
function machine(cpus: number): { runnable: number; clock: number; reads: number; probe: CpuContention; ask(times: number): boolean } {
  const state = {
    runnable: 1,
    clock: 0,
    reads: 0,
    probe: undefined as unknown as CpuContention,
    /** Asks `times` times, one reading period apart; the last answer. */
    ask(times: number): boolean {
      let answer = false
      for (let i = 0; i < times; i++) {
        state.clock += SAMPLE_MS
        answer = state.probe.contended
      }
      return answer
    },
  }
  state.probe = new CpuContention(
    () => {
      state.reads++
      return `0.50 0.40 0.30 ${state.runnable}/512 4242\n`
    },
    cpus,
    () => state.clock,
  )
  return state
}

describe('CpuContention', () => {
  it('reads the runnable count of a /proc/loadavg text', () => {
    assert.equal(runnableOf('0.52 0.58 0.59 3/612 4242\n'), 3)
    assert.equal(runnableOf('12.01 8.40 6.91 17/1024 99'), 17)
    assert.equal(runnableOf('0.52 0.58 0.59'), undefined)
    assert.equal(runnableOf('0.52 0.58 0.59 x/612 4242'), undefined)
    assert.equal(runnableOf(''), undefined)
  })

  it('is contended once the other runnable threads, smoothed, reach the CPU count, and not after they fall', () => {
    const m = machine(2)
    // This process and one other thread: a CPU is left idle.
    m.runnable = 2
    assert.equal(m.ask(20), false)
    // One reading of three others does not flip it: the count is smoothed.
    m.runnable = 4
    assert.equal(m.ask(1), false)
    // Three others for a while: every CPU has work.
    assert.equal(m.ask(10), true)
    // Back to this process and one other.
    m.runnable = 2
    assert.equal(m.ask(20), false)
  })

  it('counts the CPUs it was given: 3 others busy 2 CPUs, not 4', () => {
    const two = machine(2)
    const four = machine(4)
    two.runnable = 4
    four.runnable = 4
    assert.equal(two.ask(30), true)
    assert.equal(four.ask(30), false)
  })

  it(`reads /proc/loadavg at most once per ${SAMPLE_MS} ms however often it is asked, and afresh after an idle spell`, () => {
    const m = machine(2)
    m.runnable = 2
    m.ask(5)
    assert.equal(m.reads, 5)
    for (let i = 0; i < 1000; i++) {
      m.clock += 0.05
      void m.probe.contended
    }
    // 50 ms of asking: no new reading.
    assert.equal(m.reads, 5)
    // Idle for longer than STALE_MS, then a loaded machine: the first reading counts in full.
    m.clock += STALE_MS
    m.runnable = 9
    assert.equal(m.probe.contended, true)
    assert.equal(m.reads, 6)
  })

  it('without a readable /proc/loadavg it is never contended and reads no more', () => {
    let reads = 0
    let clock = 0
    const probe = new CpuContention(
      () => {
        reads++
        return undefined
      },
      1,
      () => clock,
    )
    for (let i = 0; i < 10; i++) {
      clock += SAMPLE_MS
      assert.equal(probe.contended, false)
    }
    assert.equal(reads, 1)
  })

  it('reads this machine on Linux', { skip: !existsSync('/proc/loadavg') && 'no /proc/loadavg here' }, () => {
    const probe = new CpuContention()
    assert.equal(typeof probe.contended, 'boolean')
  })
})

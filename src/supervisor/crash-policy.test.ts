/**
 * The crash policy of cli.md §5.5 as decisions (src/supervisor/crash-policy.ts): no process, no timer.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CrashWindow, exitAction } from './crash-policy.ts'
import { SUPERVISOR_TIMINGS } from './supervisor.ts'

describe('exitAction (cli.md §5.5, compose restart)', () => {
  it('on-failure restarts after a non-zero exit or a signal and stops after exit 0', () => {
    assert.equal(exitAction('on-failure', { code: 1 }), 'crash')
    assert.equal(exitAction('on-failure', { code: null }), 'crash')
    assert.equal(exitAction('on-failure', { code: 0 }), 'stopped')
  })

  it('always restarts after exit 0 too; never gives up on a failure and stops after exit 0', () => {
    assert.equal(exitAction('always', { code: 0 }), 'crash')
    assert.equal(exitAction('always', { code: 2 }), 'crash')
    assert.equal(exitAction('never', { code: 2 }), 'given-up')
    assert.equal(exitAction('never', { code: null }), 'given-up')
    assert.equal(exitAction('never', { code: 0 }), 'stopped')
  })

  it('a start command that could not be spawned is no crash, whatever the policy', () => {
    for (const policy of ['always', 'on-failure', 'never'] as const) {
      assert.equal(exitAction(policy, { code: null, spawnError: 'ENOENT' }), 'spawn-failed')
    }
  })
})

describe('CrashWindow (cli.md §5.5)', () => {
  it('1 s, 2 s, 4 s, 8 s, then crashed at the fifth exit within 60 s', () => {
    const window = new CrashWindow(SUPERVISOR_TIMINGS)
    const decisions = [0, 1, 2, 3, 4].map((i) => window.record(10_000 + i * 100, 50))
    assert.deepEqual(decisions, [
      { crashed: false, delayMs: 1000, count: 1, limit: 5 },
      { crashed: false, delayMs: 2000, count: 2, limit: 5 },
      { crashed: false, delayMs: 4000, count: 3, limit: 5 },
      { crashed: false, delayMs: 8000, count: 4, limit: 5 },
      { crashed: true, count: 5, limit: 5 },
    ])
  })

  it('the delay stops doubling at 30 s; exits older than the window no longer count', () => {
    const window = new CrashWindow({ ...SUPERVISOR_TIMINGS, crashLimit: 100 })
    let last = window.record(0, 0)
    for (let i = 1; i < 10; i++) last = window.record(i, 0)
    assert.deepEqual(last, { crashed: false, delayMs: 30_000, count: 10, limit: 100 })
    // 60 s after the first ten, only this exit is in the window.
    assert.equal(window.record(60_009, 0).count, 1)
  })

  it('a process that ran 60 s starts the backoff over, but its exit still counts; reset() forgets everything', () => {
    const window = new CrashWindow(SUPERVISOR_TIMINGS)
    window.record(0, 10)
    window.record(1, 10)
    window.record(2, 10)
    assert.deepEqual(window.record(3, 60_000), { crashed: false, delayMs: 1000, count: 4, limit: 5 })
    assert.deepEqual(window.record(4, 10), { crashed: true, count: 5, limit: 5 })
    window.reset()
    assert.deepEqual(window.record(5, 10), { crashed: false, delayMs: 1000, count: 1, limit: 5 })
  })
})

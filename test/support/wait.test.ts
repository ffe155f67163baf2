/** `waitFor`, the tests' one wait helper. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { quietPeriod, quietPeriods, waitFor, waitForMatch } from './wait.ts'

describe('waitFor', () => {
  it('resolves with the first value the check gives (true for a predicate)', async () => {
    let calls = 0
    assert.equal(await waitFor(() => ++calls >= 3, 'three calls'), true)
    assert.equal(calls, 3)
    let n = 0
    assert.deepEqual(await waitFor(async () => (++n < 2 ? undefined : { n }), 'a value'), { n: 2 })
    assert.equal(await waitFor(() => 0, 'zero'), 0, '0 and "" are values')
  })

  it('fails naming what it waited for, with the last error of a check that threw', async () => {
    await assert.rejects(waitFor(() => false, 'the ready event', 50), /^Error: timed out after 50 ms waiting for the ready event$/)
    await assert.rejects(
      waitFor(() => {
        throw new Error('ECONNREFUSED')
      }, () => 'GET /health; svc printed: nothing', 50),
      (err: Error) => /waiting for GET \/health; svc printed: nothing\nlast error: ECONNREFUSED$/.test(err.message) && (err.cause as Error).message === 'ECONNREFUSED',
    )
  })
})

describe('waitForMatch', () => {
  it('resolves with the match once the text has it, ignoring a global flag', async () => {
    let output = ''
    const waiting = waitForMatch(() => output, /ready on port (\d+)/g, 'the ready line')
    output += 'starting\n'
    setImmediate(() => (output += 'ready on port 4321\n'))
    const match = await waiting
    assert.equal(match[1], '4321')
    assert.equal((await waitForMatch(() => output, /ready on port (\d+)/g, 'the ready line again'))[1], '4321')
  })

  it('stops at once with the reason stopIf gives, showing the text so far', async () => {
    await assert.rejects(
      waitForMatch(() => 'boom\n', /ready/, 'the ready line', { timeoutMs: 60_000, stopIf: () => 'svc exited with code 1' }),
      /^Error: gave up waiting for the ready line: svc exited with code 1\nboom\n$/,
    )
    await assert.rejects(waitForMatch(() => 'nothing yet', /ready/, 'the ready line', { timeoutMs: 50 }), /timed out after 50 ms waiting for the ready line:\nnothing yet$/)
  })
})

describe('quietPeriod', () => {
  it('waits and counts the wait under its reason', async () => {
    const before = quietPeriods.get('the wait.test reason') ?? 0
    await quietPeriod(1, 'the wait.test reason')
    assert.equal(quietPeriods.get('the wait.test reason'), before + 1)
  })
})

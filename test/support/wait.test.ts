/** `waitFor`, the tests' one wait helper. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { waitFor } from './wait.ts'

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

/**
 * `idProblem`, the one check of ids and namespaces shared by the engine's codec and svc-sdk
 * (protocol.md §3.5; issue 16 item 14): its messages name the problem and where it is, and it
 * agrees with the definition of well-formed text for any string (fast-check).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { idProblem, MAX_ID_LENGTH } from '../src/ids.ts'

describe('idProblem', () => {
  it('accepts well-formed ids, emoji included', () => {
    assert.equal(idProblem('orders::validate'), undefined)
    assert.equal(idProblem('emoji::😀'), undefined)
    assert.equal(idProblem('x'.repeat(MAX_ID_LENGTH)), undefined)
  })

  it('names the problem and the index of the code unit at fault', () => {
    assert.equal(idProblem('bad::\ud800'), 'contains a lone UTF-16 surrogate at index 5')
    assert.equal(idProblem('😀\udfff'), 'contains a lone UTF-16 surrogate at index 2')
    assert.equal(idProblem('\ud83d::x'), 'contains a lone UTF-16 surrogate at index 0')
    assert.equal(idProblem('bad::\u0000'), 'contains a control character (U+0000) at index 5')
    assert.equal(idProblem('a\tb'), 'contains a control character (U+0009) at index 1')
    assert.equal(idProblem('del\u007f'), 'contains a control character (U+007F) at index 3')
    assert.equal(idProblem('x'.repeat(1025)), 'is longer than 1024 characters (1025)')
  })

  it('refuses exactly the strings that are not well-formed, hold a control character or are too long (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary', minLength: 1000, maxLength: 1100 }), fc.string({ unit: 'grapheme' })),
        (id) => {
          const problem = idProblem(id)
          // eslint-disable-next-line no-control-regex
          const control = /[\u0000-\u001f\u007f]/.test(id)
          assert.equal(problem === undefined, id.length <= MAX_ID_LENGTH && id.isWellFormed() && !control, String(problem))
          const at = problem === undefined ? undefined : /at index (\d+)$/.exec(problem)
          if (!at) return
          // The index points at the first code unit at fault.
          const i = Number(at[1])
          const unit = id.charCodeAt(i)
          if (problem!.includes('surrogate')) {
            const isHigh = (u: number) => u >= 0xd800 && u <= 0xdbff
            const isLow = (u: number) => u >= 0xdc00 && u <= 0xdfff
            assert.ok((isHigh(unit) && !isLow(id.charCodeAt(i + 1))) || (isLow(unit) && !isHigh(id.charCodeAt(i - 1))))
            assert.ok(id.slice(0, i).isWellFormed())
          } else {
            assert.ok(unit < 0x20 || unit === 0x7f)
            // eslint-disable-next-line no-control-regex
            assert.equal(/[\u0000-\u001f\u007f]/.test(id.slice(0, i)), false)
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})

/**
 * The JSON scanner at the edge (svc-protocol/json): it must accept exactly what JSON.parse accepts,
 * find each top-level member's exact text, and refuse nesting past its limit without using stack.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { assertJson, idProblem, JsonSyntaxError, MAX_JSON_DEPTH, parseJson, scanObjectMembers, scanValue } from '../src/json.ts'

function parses(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

function scans(text: string): boolean {
  try {
    assertJson(text, 10_000)
    return true
  } catch (err) {
    assert.ok(err instanceof JsonSyntaxError, `scanner threw ${String(err)}`)
    return false
  }
}

/** JSON-ish text: valid documents with one character inserted, removed or replaced. */
const mutatedJson = fc
  .tuple(fc.jsonValue(), fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...'{}[]",:\\ -+.eE0123456789tfnulrsa\u0000\u001f\ud800'.split('')))
  .map(([value, at, op, ch]) => {
    const text = JSON.stringify(value)
    const i = text.length === 0 ? 0 : at % text.length
    if (op === 'insert') return text.slice(0, i) + ch + text.slice(i)
    if (op === 'delete') return text.slice(0, i) + text.slice(i + 1)
    return text.slice(0, i) + ch + text.slice(i + 1)
  })

describe('scanValue', () => {
  it('accepts every JSON text JSON.stringify produces, ending exactly at its end', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom('', ' ', '\n\t '), (value, ws) => {
        const text = ws + JSON.stringify(value, null, ws === '' ? undefined : 1)
        assert.equal(scanValue(text, 0, 10_000), text.length)
      }),
    )
  })

  it('accepts exactly what JSON.parse accepts (mutated documents and arbitrary strings)', () => {
    fc.assert(fc.property(fc.oneof(mutatedJson, fc.string(), fc.string({ unit: 'binary' })), (text) => assert.equal(scans(text), parses(text))))
  })

  it('handles the corner cases of the grammar like JSON.parse', () => {
    const cases = ['0', '-0', '01', '1.', '.5', '1e', '1e+', '1E-7', '-', '"\\u00e9"', '"\\u00g9"', '"\\x"', '"a\tb"', '[1,]', '{"a":1,}', '{,}', '[,1]', 'tru', 'nul', 'true false', '{"a" 1}', '{"a":}', '  ', '', '"\ud800"', '[[]]', '{"":{}}']
    for (const text of cases) assert.equal(scans(text), parses(text), JSON.stringify(text))
  })

  it('refuses nesting past the limit, at any depth, without overflowing the stack', () => {
    assert.doesNotThrow(() => assertJson('['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH)))
    assert.throws(() => assertJson('['.repeat(MAX_JSON_DEPTH + 1) + ']'.repeat(MAX_JSON_DEPTH + 1)), /nesting deeper than 128 levels/)
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000)
    assert.throws(() => assertJson(deep), JsonSyntaxError)
    assert.throws(() => parseJson(deep), /nesting deeper/)
  })
})

describe('scanObjectMembers', () => {
  it('gives each member the exact text of its value; a repeated key keeps the last', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
        const text = JSON.stringify(object)
        const members = scanObjectMembers(text)!
        assert.deepEqual([...members.keys()].sort(), Object.keys(object).sort())
        // Compared with the value as JSON carries it (JSON has no -0).
        for (const [key, [start, end]] of members) assert.deepEqual(JSON.parse(text.slice(start, end)), JSON.parse(JSON.stringify(object[key])))
      }),
    )
    const text = '{ "a\\u0062" : [1, 2] , "a":1, "a" :"x" }'
    const members = scanObjectMembers(text)!
    assert.deepEqual([...members.keys()], ['ab', 'a'])
    const [start, end] = members.get('a')!
    assert.equal(text.slice(start, end), '"x"')
    assert.equal(text.slice(...members.get('ab')!), '[1, 2]')
  })

  it('returns undefined for JSON that is not an object, and throws for what is not JSON', () => {
    assert.equal(scanObjectMembers('[1]'), undefined)
    assert.equal(scanObjectMembers(' "x" '), undefined)
    assert.throws(() => scanObjectMembers('{"a":1} x'), JsonSyntaxError)
    assert.throws(() => scanObjectMembers('{"a":1'), JsonSyntaxError)
  })
})

describe('guards', () => {
  it('idProblem refuses lone surrogates, control characters and very long ids', () => {
    assert.equal(idProblem('orders::validate'), undefined)
    assert.equal(idProblem('emoji::😀'), undefined)
    assert.match(idProblem('bad::\ud800')!, /lone UTF-16 surrogate/)
    assert.match(idProblem('bad::\u0000')!, /control character/)
    assert.match(idProblem('x'.repeat(1025))!, /longer than 1024/)
  })
})

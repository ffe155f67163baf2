/**
 * Frame decoding of ids and namespaces (protocol.md §3.5; issue 16 item 14): an id or a namespace
 * that is not well-formed text — a lone UTF-16 surrogate, a control character, more than 1024
 * characters — makes the frame malformed with the code its reply carries, `INVALID_ID` or
 * `INVALID_NAMESPACE`; every other problem keeps `invalid_message`. Property-based over hostile
 * strings (fast-check), with the lone surrogates written as JSON escapes as a peer sends them.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decodeText } from '../src/codec.ts'
import { idProblem } from '../src/ids.ts'

/** Strings a hostile peer might use as ids: any code units, lone surrogates, controls, huge lengths. */
const hostileId = fc.oneof(
  fc.string({ unit: 'binary', minLength: 1 }),
  fc.string({ minLength: 1 }),
  fc.constantFrom('a::\ud800', '\udfff', 'x\ud800\ud800y', 'ok::fn', 'a\u0000b', 'tab\tid', 'x'.repeat(1025), 'x'.repeat(1024), '😀::fn', '\ud83d'),
)

/** Where an id or a namespace sits, per frame type. */
const ID_FIELDS: ReadonlyArray<[type: string, field: string, base: Record<string, unknown>]> = [
  ['invokefunction', 'function_id', { invocation_id: 'i' }],
  ['registerfunction', 'id', {}],
  ['registertriggertype', 'id', {}],
  ['registertrigger', 'id', { trigger_type: 't', function_id: 'f' }],
  ['registertrigger', 'trigger_type', { id: 'b', function_id: 'f' }],
  ['registertrigger', 'function_id', { id: 'b', trigger_type: 't' }],
]
const NAMESPACE_FIELDS: ReadonlyArray<[type: string, field: string, base: Record<string, unknown>]> = [
  ['invokefunction', 'namespace', { invocation_id: 'i', function_id: 'f' }],
  ['registertriggertype', 'namespace', { id: 't' }],
  ['registertrigger', 'namespace', { id: 'b', trigger_type: 't', function_id: 'f' }],
  ['registertrigger', 'trigger_namespace', { id: 'b', trigger_type: 't', function_id: 'f' }],
]

function decodeWith(type: string, base: Record<string, unknown>, field: string, value: string) {
  // JSON.stringify writes a lone surrogate as a \u escape: the frame is valid UTF-8 and JSON.
  return decodeText(JSON.stringify({ type, ...base, [field]: value }))
}

describe('ids and namespaces in frames (fast-check)', () => {
  it('an id that is not well-formed text makes its frame malformed with INVALID_ID, any other id is accepted', () => {
    fc.assert(
      fc.property(fc.constantFrom(...ID_FIELDS), hostileId, ([type, field, base], id) => {
        const decoded = decodeWith(type, base, field, id)
        const issue = idProblem(id)
        if (issue === undefined) return assert.equal(decoded.kind, 'message')
        assert.equal(decoded.kind, 'malformed')
        if (decoded.kind !== 'malformed') return
        assert.equal(decoded.code, 'INVALID_ID')
        assert.equal(decoded.reason, `${field} ${issue}`)
      }),
      { numRuns: 500 },
    )
  })

  it('a namespace that is not well-formed text makes its frame malformed with INVALID_NAMESPACE', () => {
    fc.assert(
      fc.property(fc.constantFrom(...NAMESPACE_FIELDS), hostileId, ([type, field, base], namespace) => {
        const decoded = decodeWith(type, base, field, namespace)
        const issue = idProblem(namespace)
        if (issue === undefined) return assert.equal(decoded.kind, 'message')
        assert.equal(decoded.kind, 'malformed')
        if (decoded.kind !== 'malformed') return
        assert.equal(decoded.code, 'INVALID_NAMESPACE')
        assert.equal(decoded.reason, `${field} ${issue}`)
      }),
      { numRuns: 300 },
    )
  })

  it('other problems keep invalid_message', () => {
    for (const text of ['{"type":"invokefunction","invocation_id":"i"}', '{"type":"registertrigger","id":"b","function_id":"f"}', '{"type":"invokefunction","invocation_id":"i","function_id":1}', '{"type":1}', '{']) {
      const decoded = decodeText(text)
      assert.equal(decoded.kind, 'malformed', text)
      if (decoded.kind === 'malformed') assert.equal(decoded.code, 'invalid_message', text)
    }
  })
})

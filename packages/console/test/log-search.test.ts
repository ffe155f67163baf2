/**
 * The Logs page's search (app/src/pages/logs/search.ts, issue 21): words and `key=value` terms, an
 * attribute matched by its name or a `.<key>` suffix in attributes or resource; hostile searches
 * and records (fast-check) never throw and stay within the bounds.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import type { LogRecord } from 'svc-protocol'
import { matchesTerms, MAX_TERMS, parseLogSearch } from '../app/src/pages/logs/search.ts'

const record = (attributes: Record<string, unknown>, resource: Record<string, string> = {}): LogRecord => ({
  timestamp_unix_nano: 0,
  observed_timestamp_unix_nano: 0,
  severity_number: 9,
  severity_text: 'INFO',
  body: 'b',
  attributes,
  resource,
  service_name: 'svc',
  trace_id: null,
  span_id: null,
})

describe('log search: text and key=value attribute terms', () => {
  it('splits words from terms, quoted values keep their spaces', () => {
    assert.deepEqual(parseLogSearch('payment failed cart=c-7 user="Ada Lovelace"'), { text: 'payment failed', terms: [{ key: 'cart', value: 'c-7' }, { key: 'user', value: 'Ada Lovelace' }] })
    assert.deepEqual(parseLogSearch('=x a= b'), { text: '=x b', terms: [{ key: 'a', value: '' }] })
    assert.deepEqual(parseLogSearch(''), { text: '', terms: [] })
  })

  it('a term matches an attribute by name or .<key> suffix, in attributes or resource, ignoring case', () => {
    const r = record({ 'log.data.cart': 'C-7', 'http.status': 500, 'log.data.tags': ['a'] }, { 'service.version': '1.2' })
    assert.equal(matchesTerms(r, [{ key: 'cart', value: 'c-7' }]), true)
    assert.equal(matchesTerms(r, [{ key: 'log.data.cart', value: 'c-7' }]), true)
    assert.equal(matchesTerms(r, [{ key: 'status', value: '500' }]), true)
    assert.equal(matchesTerms(r, [{ key: 'version', value: '1.2' }]), true)
    assert.equal(matchesTerms(r, [{ key: 'tags', value: '["a"]' }]), true)
    assert.equal(matchesTerms(r, [{ key: 'art', value: 'c-7' }]), false, 'a suffix starts at a dot')
    assert.equal(matchesTerms(r, [{ key: 'cart', value: 'c-8' }]), false)
    assert.equal(matchesTerms(r, [{ key: 'cart', value: 'c-7' }, { key: 'status', value: '404' }]), false, 'every term must match')
    assert.equal(matchesTerms(record(JSON.parse('{"__proto__": "x"}')), [{ key: '__proto__', value: 'x' }]), true, 'own keys only')
    assert.equal(matchesTerms(record({}), [{ key: 'constructor', value: '[object Object]' }]), false)
  })

  it('fuzz: any search parses within the bounds and any record is matched without throwing', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 3000 }), fc.array(fc.constantFrom('a=b', '"', '=', ' ', 'k="v w', '__proto__=1', 'x'), { maxLength: 60 }).map((p) => p.join(''))),
        fc.dictionary(fc.string(), fc.jsonValue()),
        (text, attributes) => {
          const search = parseLogSearch(text)
          assert.ok(search.terms.length <= MAX_TERMS)
          assert.ok(search.text.length <= text.length)
          assert.equal(typeof matchesTerms(record(attributes), search.terms), 'boolean')
        },
      ),
      { numRuns: 300 },
    )
  })
})

import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { collectHeaders, INVALID_JSON, parseBody, parseContentType, parseUrlEncoded } from './request.ts'

describe('parseUrlEncoded (builtins.md §3.4 query_params)', () => {
  it('decodes keys and values, + as a space', () => {
    assert.deepEqual(parseUrlEncoded('q=hello+world&name=J%C3%BCrgen&a%20b=c%2Bd'), {
      q: 'hello world',
      name: 'Jürgen',
      'a b': 'c+d',
    })
  })

  it('gives a string for a key seen once and an array, in order, for a repeated key', () => {
    assert.deepEqual(parseUrlEncoded('tag=a&x=1&tag=b&tag=c'), { tag: ['a', 'b', 'c'], x: '1' })
  })

  it('gives "" for a key without = and skips empty pairs', () => {
    assert.deepEqual(parseUrlEncoded('flag&&a=&b=1&'), { flag: '', a: '', b: '1' })
    assert.deepEqual(parseUrlEncoded(''), {})
  })

  it('keeps only the first = as the separator', () => {
    assert.deepEqual(parseUrlEncoded('expr=a=b'), { expr: 'a=b' })
  })

  it('keeps components with invalid escapes as received', () => {
    assert.deepEqual(parseUrlEncoded('p=100%&q=%zz+x'), { p: '100%', q: '%zz x' })
  })

  it('stores keys such as __proto__ and constructor as plain data', () => {
    const parsed = parseUrlEncoded('__proto__=x&__proto__=y&constructor=z')
    assert.equal(Object.getPrototypeOf(parsed), Object.prototype)
    assert.deepEqual(Object.entries(parsed), [
      ['__proto__', ['x', 'y']],
      ['constructor', 'z'],
    ])
  })
})

describe('collectHeaders (builtins.md §3.4 headers)', () => {
  it('lower-cases names and keeps repeated headers as arrays in order', () => {
    assert.deepEqual(collectHeaders(['Host', 'x', 'X-Trace', '1', 'Accept', '*/*', 'x-trace', '2']), {
      host: 'x',
      'x-trace': ['1', '2'],
      accept: '*/*',
    })
  })
})

describe('parseContentType', () => {
  it('reads the media type and charset case-insensitively', () => {
    assert.deepEqual(parseContentType('Text/Plain; Charset="ISO-8859-1"'), { type: 'text/plain', charset: 'iso-8859-1' })
    assert.deepEqual(parseContentType('application/json'), { type: 'application/json', charset: undefined })
    assert.deepEqual(parseContentType(undefined), { type: '', charset: undefined })
  })
})

describe('parseBody (builtins.md §3.5)', () => {
  const bytes = (text: string) => Buffer.from(text)

  it('parses application/json and application/*+json', () => {
    assert.deepEqual(parseBody(bytes('{"a":[1,2]}'), 'application/json'), { a: [1, 2] })
    assert.deepEqual(parseBody(bytes('"x"'), 'application/vnd.api+json; charset=utf-8'), 'x')
    assert.equal(parseBody(bytes('false'), 'APPLICATION/JSON'), false)
  })

  it('gives null for an empty JSON body and INVALID_JSON for a malformed one', () => {
    assert.equal(parseBody(Buffer.alloc(0), 'application/json'), null)
    assert.equal(parseBody(bytes('  \n'), 'application/json'), null)
    assert.equal(parseBody(bytes('{"a":'), 'application/json'), INVALID_JSON)
  })

  it('decodes text/* with its charset, UTF-8 by default and for unknown charsets', () => {
    assert.equal(parseBody(Buffer.from([0x63, 0x61, 0x66, 0xe9]), 'text/plain; charset=iso-8859-1'), 'café')
    assert.equal(parseBody(bytes('café'), 'text/csv'), 'café')
    assert.equal(parseBody(bytes('café'), 'text/plain; charset=no-such-charset'), 'café')
  })

  it('parses form bodies with repeated keys as arrays', () => {
    assert.deepEqual(parseBody(bytes('a=1&a=2&b=x+y'), 'application/x-www-form-urlencoded'), { a: ['1', '2'], b: 'x y' })
  })

  it('gives null for other content types and for none', () => {
    assert.equal(parseBody(bytes('{"a":1}'), 'application/octet-stream'), null)
    assert.equal(parseBody(bytes('{"a":1}'), undefined), null)
    assert.equal(parseBody(bytes('<a/>'), 'application/xml'), null)
  })
})

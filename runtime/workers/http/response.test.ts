import { describe, it } from 'node:test'
import assert from 'node:assert/strict'
import { errorEnvelope, mapResponse, newErrorId, type PreparedResponse } from './response.ts'

function ok(result: object): PreparedResponse {
  const mapped = mapResponse(result)
  assert.ok(!('invalid' in mapped), `unexpected invalid: ${JSON.stringify(mapped)}`)
  return mapped
}

function invalid(result: object): string {
  const mapped = mapResponse(result)
  assert.ok('invalid' in mapped, 'expected an invalid descriptor')
  return mapped.invalid
}

describe('mapResponse (builtins.md §3.6)', () => {
  it('defaults the status to 200 and accepts 200–599', () => {
    assert.equal(ok({}).status, 200)
    assert.equal(ok({ status_code: 201 }).status, 201)
    assert.equal(ok({ status_code: 599 }).status, 599)
  })

  it('refuses status codes that are not integers from 200 to 599 (1xx is interim: a client would wait for the real answer), and arrays', () => {
    assert.match(invalid({ status_code: 600 }), /status_code must be an integer from 200 to 599, got 600/)
    assert.match(invalid({ status_code: 100 }), /got 100/)
    assert.match(invalid({ status_code: 101 }), /got 101/)
    assert.match(invalid({ status_code: 199 }), /got 199/)
    assert.match(invalid({ status_code: 99 }), /got 99/)
    assert.match(invalid({ status_code: 200.5 }), /got 200.5/)
    assert.match(invalid({ status_code: '200' }), /got "200"/)
    assert.match(invalid([1, 2]), /array/)
  })

  it('converts header values: strings kept, numbers stringified, arrays repeated, others dropped', () => {
    const { headers } = ok({ headers: { 'x-a': 'a', 'x-n': 5, 'set-cookie': ['a=1', 'b=2'], 'x-obj': { no: 1 }, 'x-bool': true } })
    assert.deepEqual(headers, ['x-a', 'a', 'x-n', '5', 'set-cookie', 'a=1', 'set-cookie', 'b=2'])
  })

  it('accepts an array of "Name: value" lines', () => {
    const { headers } = ok({ headers: ['X-A: 1', 'x-a:2', 'Location:  https://e.com/a:b ', 'no colon', ': empty', 7] })
    assert.deepEqual(headers, ['X-A', '1', 'x-a', '2', 'Location', 'https://e.com/a:b'])
  })

  it('ignores framing headers and headers that are not valid HTTP', () => {
    const { headers } = ok({
      headers: { 'Content-Length': '99', 'transfer-encoding': 'chunked', Connection: 'close', 'keep-alive': 'x', 'bad name': 'v', 'x-ok': 'a\r\nb' },
    })
    assert.deepEqual(headers, [])
  })

  it('rule 1: no body for 204 and 304', () => {
    assert.equal(ok({ status_code: 204, body: { a: 1 } }).body, null)
    assert.equal(ok({ status_code: 304, body: 'x' }).body, null)
  })

  it('rule 2: an absent or null body is empty and adds no content type', () => {
    assert.deepEqual(ok({ status_code: 302, headers: { location: '/x' } }), { status: 302, headers: ['location', '/x'], body: null })
    assert.deepEqual(ok({ body: null }).headers, [])
  })

  it('rule 3: a string body under a handler content type is sent unchanged', () => {
    const res = ok({ headers: { 'Content-Type': 'text/html' }, body: '<p>hi</p>' })
    assert.equal(res.body, '<p>hi</p>')
    assert.deepEqual(res.headers, ['Content-Type', 'text/html'])
    assert.equal(ok({ headers: { 'content-type': 'application/json' }, body: '{"raw":true}' }).body, '{"raw":true}')
  })

  it('rule 4: a non-string body under a non-JSON content type is its JSON text', () => {
    const res = ok({ headers: { 'content-type': 'text/plain' }, body: { a: 1 } })
    assert.equal(res.body, '{"a":1}')
    assert.deepEqual(res.headers, ['content-type', 'text/plain'])
  })

  it('rule 5: otherwise JSON text with application/json unless the handler set a type', () => {
    assert.deepEqual(ok({ body: 'hello' }), {
      status: 200,
      headers: ['content-type', 'application/json; charset=utf-8'],
      body: '"hello"',
    })
    assert.equal(ok({ body: 0 }).body, '0')
    assert.equal(ok({ body: false }).body, 'false')
    const custom = ok({ headers: { 'content-type': 'application/problem+json' }, body: { title: 'x' } })
    assert.deepEqual(custom.headers, ['content-type', 'application/problem+json'])
    assert.equal(custom.body, '{"title":"x"}')
  })
})

describe('error envelope (builtins.md §3.9)', () => {
  it('has code and message, plus error_id when given and extra top-level fields', () => {
    assert.equal(errorEnvelope('NOT_FOUND', 'no route'), '{"error":{"code":"NOT_FOUND","message":"no route"}}')
    assert.deepEqual(JSON.parse(errorEnvelope('CONDITION_NOT_MET', 'no', undefined, { skipped: true })), {
      error: { code: 'CONDITION_NOT_MET', message: 'no' },
      skipped: true,
    })
    assert.deepEqual(JSON.parse(errorEnvelope('TIMEOUT', 't', 'abcdef012345')).error.error_id, 'abcdef012345')
  })

  it('makes error ids of 12 lower-case hex digits', () => {
    assert.match(newErrorId(), /^[0-9a-f]{12}$/)
    assert.notEqual(newErrorId(), newErrorId())
  })
})

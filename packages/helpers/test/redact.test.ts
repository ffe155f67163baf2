/** Redaction and safe serialization (sdk.md §12.2), including a property test on hostile input. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  extractTraceparent,
  injectTraceparent,
  isSensitiveKey,
  REDACTED_PLACEHOLDER,
  redact,
  redactAndTruncate,
  redactedJson,
  resolveMaxBytesFromEnv,
  safeStringify,
  TRUNCATION_SUFFIX,
} from 'svc-helpers/observability'
import { noSensitiveKeys, redactAndTruncateJson } from 'svc-helpers/observability/internal'
import { trace } from '@opentelemetry/api'

describe('redact', () => {
  it('replaces sensitive keys at any depth, case-insensitively', () => {
    const input = { user: 'ann', Password: 'p', nested: [{ API_KEY: 'k', token: 't', id_token: 'i', 'x-token': 'x', tokens: 3 }] }
    assert.deepEqual(redact(input), {
      user: 'ann',
      Password: REDACTED_PLACEHOLDER,
      nested: [{ API_KEY: REDACTED_PLACEHOLDER, token: REDACTED_PLACEHOLDER, id_token: REDACTED_PLACEHOLDER, 'x-token': REDACTED_PLACEHOLDER, tokens: 3 }],
    })
    assert.equal(input.Password, 'p', 'input untouched')
  })
  it('matches the key list of sdk.md §12.2', () => {
    for (const k of ['client_secret', 'Authorization', 'bearer_x', 'private_key', 'refresh_token', 'my-api-key', 'credentials']) assert.ok(isSensitiveKey(k), k)
    for (const k of ['tokenizer', 'user', 'author', 'keys']) assert.ok(!isSensitiveKey(k), k)
  })
  it('redacts the access_key of a channel ref (it opens the channel), not its id or direction', () => {
    const ref = { channel_id: 'c1', access_key: 'k', direction: 'read' }
    assert.deepEqual(redact({ body: ref }), { body: { channel_id: 'c1', access_key: REDACTED_PLACEHOLDER, direction: 'read' } })
    assert.ok(isSensitiveKey('AWS_ACCESS_KEY_ID'))
  })
  it('handles cycles and Maps', () => {
    const a: Record<string, unknown> = { x: 1 }
    a['self'] = a
    assert.deepEqual(redact(a), { x: 1, self: '[Circular]' })
    assert.deepEqual(redact(new Map([['secret', 1]])), { secret: REDACTED_PLACEHOLDER })
  })
})

describe('safeStringify', () => {
  it('writes BigInt as a string, cycles as [Circular], failures as [unserializable]', () => {
    assert.equal(safeStringify({ n: 10n }), '{"n":"10"}')
    const a: Record<string, unknown> = {}
    a['a'] = a
    assert.equal(safeStringify(a), '{"a":"[Circular]"}')
    assert.equal(safeStringify({ toJSON() { throw new Error('no') } }), '[unserializable]')
    const shared = { v: 1 }
    assert.equal(safeStringify([shared, shared]), '[{"v":1},{"v":1}]', 'a repeated (non-cyclic) object is not a cycle')
    assert.equal(safeStringify(undefined), 'null')
  })
})

describe('redactAndTruncate', () => {
  it('caps on a UTF-8 boundary and appends the marker', () => {
    const r = redactAndTruncate({ s: 'é'.repeat(20) }, 10)
    assert.equal(r.truncated, true)
    assert.ok(r.json.endsWith(TRUNCATION_SUFFIX))
    assert.ok(Buffer.byteLength(r.json.slice(0, -TRUNCATION_SUFFIX.length)) <= 10)
    assert.ok(!r.json.includes('\uFFFD'))
    assert.deepEqual(redactAndTruncate({ password: 'x' }, null), { json: '{"password":"[REDACTED]"}', truncated: false })
  })
  it('rejects a negative cap and reads the env cap', () => {
    assert.throws(() => redactAndTruncate(1, -1), RangeError)
    assert.equal(resolveMaxBytesFromEnv({ SVC_TRACE_PAYLOAD_MAX_BYTES: '512' }), 512)
    assert.equal(resolveMaxBytesFromEnv({ SVC_TRACE_PAYLOAD_MAX_BYTES: 'lots' }), null)
    assert.equal(resolveMaxBytesFromEnv({}), null)
  })
})

/** Hostile values: deep nesting, cycles, lone surrogates, big strings, BigInt. */
const hostile = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string({ unit: 'binary' }),
    fc.constantFrom('\uD800', 'a\uDFFFb', 'x'.repeat(100_000), 'password'),
    fc.bigInt(),
    fc.double(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('secret', 'Token', 'a_token', '__proto__')), tie('value'), { maxKeys: 4 }),
  ),
})).value

function deepNest(depth: number): unknown {
  let v: unknown = { secret: 's' }
  for (let i = 0; i < depth; i++) v = { child: v, list: [v] }
  return v
}

describe('property: redaction and serialization never throw and keep their promises', () => {
  it('redactAndTruncate gives valid, capped output for any value', () => {
    fc.assert(
      fc.property(hostile, fc.boolean(), fc.option(fc.nat(2000)), (value, cyclic, cap) => {
        const v = cyclic && value !== null && typeof value === 'object' ? Object.assign(value as object, { me: value }) : value
        const r = redactAndTruncate(v, cap)
        if (cap !== null && r.truncated) {
          assert.ok(Buffer.byteLength(r.json.slice(0, -TRUNCATION_SUFFIX.length)) <= cap)
        }
        if (!r.truncated && r.json !== '[unserializable]') {
          const parsed: unknown = JSON.parse(r.json)
          assert.ok(!JSON.stringify(parsed).match(/"(secret|password|Token|a_token)":"(?!\[REDACTED\])/))
        }
      }),
      { numRuns: 300 },
    )
  })
  it('deep nesting is bounded, not a stack overflow', () => {
    const r = redactAndTruncate(deepNest(5000), 1000)
    assert.equal(r.truncated, true)
    assert.ok(safeStringify(deepNest(10)).length > 0)
  })
  it('extractTraceparent never throws and accepts only well-formed headers; inject round-trips', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom(...'0123456789abcdef-') , maxLength: 60 })), (tp) => {
        const ctx = extractTraceparent(tp)
        const sc = trace.getSpanContext(ctx)
        if (sc !== undefined) assert.match(tp.trim(), /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}/)
      }),
      { numRuns: 500 },
    )
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9a-f]{32}$/), fc.stringMatching(/^[0-9a-f]{16}$/), fc.boolean(), (traceId, spanId, sampled) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId))
        const tp = `00-${traceId}-${spanId}-0${sampled ? 1 : 0}`
        assert.equal(injectTraceparent(extractTraceparent(tp)), tp)
      }),
    )
  })
})

/** JSON data with keys that are, are almost, or only look like sensitive keys (K is U+212A, ſ U+017F). */
const jsonWithKeys = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.string(), fc.constantFrom('password', 'API_KEY', 'api_\u212Aey', 'paſſword', 'tokens', 'my-token', 'author', 'note', 'é', 'access_key', 'Access_Key', 'accesskey')),
      tie('value'),
      { maxKeys: 4 },
    ),
  ),
})).value

describe('redaction fast paths (the payload events of svc-sdk)', () => {
  it('redactedJson of JSON data is the JSON of redact(data)', () => {
    // Found by this property: an own __proto__ key (as JSON.parse makes) was lost by the copy.
    const parsed = JSON.parse('[{"__proto__":null,"a":{"__proto__":{"password":"x"}}}]')
    assert.equal(redactedJson(parsed), '[{"__proto__":null,"a":{"__proto__":{"password":"[REDACTED]"}}}]')
    assert.equal(JSON.stringify(redact(parsed)), redactedJson(parsed))
    fc.assert(
      fc.property(jsonWithKeys, (value) => {
        assert.equal(redactedJson(value), JSON.stringify(redact(value)))
      }),
      { numRuns: 500 },
    )
  })
  it('redactAndTruncateJson reuses the text only when nothing in it is sensitive', () => {
    fc.assert(
      fc.property(jsonWithKeys, (value) => {
        const json = JSON.stringify(value)
        assert.equal(redactAndTruncateJson(json, value, null).json, redactedJson(value))
        if (noSensitiveKeys(json)) assert.equal(redactedJson(value), json)
      }),
      { numRuns: 500 },
    )
    // A key spelled with escapes in JSON written elsewhere is still found.
    assert.equal(redactAndTruncateJson('{"\\u0070assword":"x"}', { password: 'x' }, null).json, '{"password":"[REDACTED]"}')
    assert.equal(noSensitiveKeys('{"user":"ann","items":[1,2]}'), true)
    assert.equal(noSensitiveKeys('{"api_\u212Aey":1}'), false)
    // Every name of sdk.md §12.2 (and svc's access_key, a channel ref's key) sends the text to the redacting pass.
    for (const key of ['api_key', 'apikey', 'api-key', 'password', 'secret', 'credential', 'authorization', 'auth_token', 'access_token', 'refresh_token', 'bearer', 'private_key', 'client_secret', 'access_key', 'token', 'id_token', 'x-token']) {
      assert.ok(isSensitiveKey(key), key)
      assert.equal(noSensitiveKeys(JSON.stringify({ [key.toUpperCase()]: 'v' })), false, key)
    }
    // A channel ref in a result: its access_key is redacted even though the result's JSON is at hand.
    const ref = { channel_id: 'c1', access_key: 'k', direction: 'read' }
    assert.equal(redactAndTruncateJson(JSON.stringify({ ref }), { ref }, null).json, '{"ref":{"channel_id":"c1","access_key":"[REDACTED]","direction":"read"}}')
    assert.deepEqual(redactAndTruncateJson('{"s":"' + 'x'.repeat(50) + '"}', null, 20), { json: '{"s":"xxxxxxxxxxxxxx' + TRUNCATION_SUFFIX, truncated: true })
  })
})

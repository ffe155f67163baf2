import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ExpandError, expandPlaceholders, expandString } from './placeholders.ts'

describe('expandString (builtins.md §2.8)', () => {
  const env = { HOST: 'example.com', PORT: '8080', EMPTY: '' }

  it('replaces ${NAME} with the variable', () => {
    assert.equal(expandString('http://${HOST}:${PORT}/x', env), 'http://example.com:8080/x')
  })

  it('uses the default of ${NAME:default} and ${NAME:-default} when unset or empty', () => {
    assert.equal(expandString('${MISSING:fallback}', env), 'fallback')
    assert.equal(expandString('${MISSING:-fallback}', env), 'fallback')
    assert.equal(expandString('${EMPTY:-fallback}', env), 'fallback')
    assert.equal(expandString('${EMPTY:fallback}', env), 'fallback')
    assert.equal(expandString('${PORT:-1}', env), '8080')
    assert.equal(expandString('a${MISSING:}b', env), 'ab')
    assert.equal(expandString('${MISSING:a:b}', env), 'a:b')
  })

  it('turns $${ into a literal ${', () => {
    assert.equal(expandString('cost: $${PORT}', env), 'cost: ${PORT}')
    assert.equal(expandString('a$${b} ${PORT}', env), 'a${b} 8080')
  })

  it('leaves text without placeholders alone, lone $ included', () => {
    assert.equal(expandString('price $5 {x}', env), 'price $5 {x}')
  })

  it('fails for an unset or empty variable without default, naming it', () => {
    for (const text of ['${MISSING}', 'x-${EMPTY}']) {
      assert.throws(
        () => expandString(text, env),
        (err: unknown) => {
          assert.ok(err instanceof ExpandError)
          assert.equal(err.code, 'EXPAND_FAILED')
          assert.match(err.message, /^environment variable (MISSING|EMPTY) is not set$/)
          return true
        },
      )
    }
  })

  it('rejects malformed placeholders instead of keeping them silently', () => {
    assert.throws(() => expandString('${1ABC}', env), /invalid placeholder '\$\{1ABC\}'/)
    assert.throws(() => expandString('${HOST', env), /invalid placeholder '\$\{HOST'/)
    assert.throws(() => expandString('${}', env), /invalid placeholder/)
  })
})

describe('expandPlaceholders', () => {
  const hint = {
    type: 'object',
    properties: {
      port: { type: 'integer' },
      ratio: { type: 'number' },
      on: { type: 'boolean' },
      name: { type: 'string' },
      limit: { type: ['integer', 'null'] },
      list: { type: 'array', items: { type: 'integer' } },
      map: { type: 'object', additionalProperties: { type: 'object', properties: { n: { type: 'integer' } } } },
    },
  } as const

  it('converts a single placeholder to the type the schema expects', () => {
    const out = expandPlaceholders(
      {
        port: '${HTTP_PORT:3111}',
        ratio: '${R:0.5}',
        on: '${ON:true}',
        name: '${N:42}',
        limit: '${L:10}',
        list: ['${A:1}', '2'],
        map: { q: { n: '${Q:7}' } },
      },
      {},
      hint,
    )
    assert.deepEqual(out, {
      port: 3111,
      ratio: 0.5,
      on: true,
      name: '42',
      limit: 10,
      list: [1, '2'],
      map: { q: { n: 7 } },
    })
  })

  it('keeps strings when the placeholder is not alone or the text does not parse', () => {
    const out = expandPlaceholders({ port: 'p${P:1}', on: '${ON:maybe}' }, {}, hint)
    assert.deepEqual(out, { port: 'p1', on: 'maybe' })
  })

  it('without a hint expands but never converts', () => {
    assert.deepEqual(expandPlaceholders({ port: '${P:3111}', n: 3, b: false, z: null }, {}), {
      port: '3111',
      n: 3,
      b: false,
      z: null,
    })
  })

  it('does not modify its input', () => {
    const input = { a: ['${X:1}'] }
    expandPlaceholders(input, {})
    assert.deepEqual(input, { a: ['${X:1}'] })
  })

  it('reports the path of the failing string', () => {
    assert.throws(
      () => expandPlaceholders({ db: { urls: ['ok', 'postgres://${PG_PASSWORD}@h'] } }, {}),
      (err: unknown) => {
        assert.ok(err instanceof ExpandError)
        assert.deepEqual(err.path, ['db', 'urls', 1])
        assert.equal(err.variable, 'PG_PASSWORD')
        return true
      },
    )
  })
})

/**
 * `svc-protocol/settings-schema` (builtins.md §11.2, §2.8), the one contract the configuration
 * worker and the console's Configuration page check settings values with: violations as
 * `<json pointer>: <problem>`, a single placeholder accepted where a scalar is expected in a raw
 * value, refused schemas named; and, over hostile schemas, values and keys (fast-check), a compile
 * either succeeds or throws one of its two errors, and a check never throws.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { isSinglePlaceholder, SETTINGS_SCHEMA_OPTIONS, settingsSchemaCompiler } from 'svc-protocol/settings-schema'
import { compileSettingsSchema as engineCompile } from '../../../runtime/workers/configuration/schema.ts'

const compile = settingsSchemaCompiler(new Ajv2020({ ...SETTINGS_SCHEMA_OPTIONS }))
const SCHEMA = {
  type: 'object',
  required: ['adapter'],
  additionalProperties: false,
  properties: { adapter: { enum: ['memory', 'redis'] }, port: { type: 'integer', maximum: 65535 }, 'a/b~c': { type: 'boolean' } },
}

describe('svc-protocol/settings-schema', () => {
  it('lists every violation as <pointer>: <problem>, as the configuration worker does', () => {
    const value = { port: 70000, extra: 1, adapter: 'disk', 'a/b~c': 'yes' }
    const expected = ['/: unknown key \'extra\'', '/adapter: must be one of "memory", "redis"', '/port: must be <= 65535', '/a~1b~0c: must be boolean']
    assert.deepEqual(compile(SCHEMA)(value).sort(), expected.sort())
    assert.deepEqual(engineCompile(SCHEMA)(value).sort(), expected.sort())
    assert.deepEqual(compile(SCHEMA)({}), ["/: must have required property 'adapter'"])
    assert.deepEqual(compile(SCHEMA)({ adapter: 'memory', port: 80 }), [])
  })

  it('accepts one placeholder where a raw value expects a scalar, and only then', () => {
    const raw = compile(SCHEMA, { acceptPlaceholders: true })
    assert.deepEqual(raw({ adapter: 'memory', port: '${PORT:3000}', 'a/b~c': '${ON}' }), [])
    assert.deepEqual(raw({ adapter: 'memory', port: 'x${PORT}' }), ['/port: must be integer'])
    assert.deepEqual(compile(SCHEMA)({ adapter: 'memory', port: '${PORT}' }), ['/port: must be integer'])
    assert.equal(isSinglePlaceholder('${A}'), true)
    assert.equal(isSinglePlaceholder('${A}${B}'), false)
  })

  it('names a schema it refuses', () => {
    assert.throws(() => compile([1]), { message: 'schema must be a JSON Schema object' })
    assert.throws(() => compile({ type: 'integer', minimum: 'x' }), /^Error: schema is not a valid JSON Schema: /)
    assert.deepEqual(compile(true)(42), [])
  })

  it('fuzz: hostile schemas compile or are refused with one of its errors; a check never throws', () => {
    const key = fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', 'a/b', '~0', '~1', ''))
    const schema = fc.oneof(fc.jsonValue(), fc.record({ type: fc.oneof(fc.constantFrom('object', 'integer', 'string', 'nope'), fc.jsonValue()), properties: fc.dictionary(key, fc.record({ type: fc.constantFrom('integer', 'boolean', 'number') })), additionalProperties: fc.boolean() }, { requiredKeys: [] }))
    const value = fc.oneof(fc.jsonValue(), fc.dictionary(key, fc.oneof(fc.jsonValue(), fc.constantFrom('${X}', '${', '}', '${X}}'))))
    fc.assert(
      fc.property(schema, value, fc.boolean(), (s, v, acceptPlaceholders) => {
        let check
        try {
          check = compile(s, { acceptPlaceholders })
        } catch (error) {
          assert.match((error as Error).message, /^(schema must be a JSON Schema object|schema is not a valid JSON Schema: )/)
          return
        }
        for (const violation of check(v)) assert.ok(violation.startsWith('/') && violation.includes(': '), violation)
      }),
      { numRuns: 300 },
    )
  })
})

/**
 * The settings schemas' compiler (schema.ts): built-in workers' own schemas compile without the
 * meta-schema check (issue 20, engine start), so each must be a valid draft 2020-12 schema; any
 * other schema is still checked.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { BUILTIN_DESCRIPTORS } from '../catalogue.ts'
import { compileSettingsSchema } from './schema.ts'

test('every built-in settings schema is a valid JSON Schema (draft 2020-12)', () => {
  const ajv = new Ajv2020({ strict: false })
  const schemas = BUILTIN_DESCRIPTORS.filter((descriptor) => descriptor.settings !== null)
  assert.ok(schemas.length >= 5, 'the built-ins have settings schemas')
  for (const descriptor of schemas) {
    assert.equal(ajv.validateSchema(descriptor.settings as object), true, `${descriptor.name}: ${ajv.errorsText(ajv.errors)}`)
    assert.equal(typeof compileSettingsSchema(descriptor.settings), 'function', descriptor.name)
  }
})

test('a schema that is not a built-in one is checked against the meta-schema', () => {
  assert.throws(() => compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer', minimum: 'one' } } }), /schema is not a valid JSON Schema/)
  assert.throws(() => compileSettingsSchema({ type: 'nonsense' }), /schema is not a valid JSON Schema/)
  // A built-in's schema with one change is not a built-in's: checked.
  const http = BUILTIN_DESCRIPTORS.find((descriptor) => descriptor.name === 'svc-http')!.settings!
  assert.throws(() => compileSettingsSchema({ ...http, minProperties: -1 }), /schema is not a valid JSON Schema/)
})

test('built-in schemas still validate values', () => {
  const http = BUILTIN_DESCRIPTORS.find((descriptor) => descriptor.name === 'svc-http')!.settings!
  const problems = compileSettingsSchema(http)({ port: 'not a port' })
  assert.ok(problems.some((problem) => problem.startsWith('/port: ')), problems.join('; '))
})

/**
 * The settings schemas' compiler (schema.ts): built-in workers' own schemas compile without the
 * meta-schema check (issue 20, engine start), so each must be a valid draft 2020-12 schema; any
 * other schema is still checked.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { BUILTIN_DESCRIPTORS } from '../catalogue.ts'
import { compileSettingsSchema } from './schema.ts'

// First in the file: the first schemas this process compiles are hostile, so the Ajv instance made on
// first use (issue 20) is made by one of them.
test('property: any first schemas, hostile ones included, compile or are refused with the documented errors, and the compiler keeps working', () => {
  const hostile = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.constantFrom<unknown>(null, [], 'object', 1e308, { type: 'nonsense' }, { $ref: 'https://example.com/remote.json' }, { $ref: '#/nowhere' }, { $id: 'x', $defs: { a: { $id: 'x' } } }, { minProperties: -1 }, { pattern: '(' }, { type: 'object', required: ['a', 'a'] }),
    fc.integer({ min: 1, max: 200 }).map((depth) => Array.from({ length: depth }).reduce<object>((inner) => ({ type: 'object', properties: { a: inner } }), { type: 'integer' })),
  )
  fc.assert(
    fc.property(fc.array(hostile, { minLength: 1, maxLength: 4 }), (schemas) => {
      for (const schema of schemas) {
        try {
          assert.equal(typeof compileSettingsSchema(schema), 'function')
        } catch (error) {
          assert.match((error as Error).message, /^schema must be a JSON Schema object$|^schema is not a valid JSON Schema: /)
        }
      }
      const problems = compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })({ port: 'x' })
      assert.deepEqual(problems, ['/port: must be integer'])
    }),
    { numRuns: 150 },
  )
})

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

test('loading the schema compiler makes no Ajv instance; the first schema that needs one does (engine start, issue 20)', () => {
  // In a child process: ajv's CommonJS exports are replaced by a counting subclass before schema.ts
  // imports them (an ES import of a CommonJS module reads its exports when first imported).
  const script = `
import { createRequire } from 'node:module'
const require = createRequire(${JSON.stringify(import.meta.url)})
const ajvModule = require('ajv/dist/2020.js')
let made = 0
const Counted = class extends ajvModule.Ajv2020 { constructor(...args) { super(...args); made++ } }
ajvModule.Ajv2020 = Counted
const { compileSettingsSchema } = await import(${JSON.stringify(new URL('./schema.ts', import.meta.url).href)})
const afterLoad = made
compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer' } } })
console.log(JSON.stringify({ afterLoad, afterCompile: made }))`
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { afterLoad: number; afterCompile: number }
  assert.deepEqual(out, { afterLoad: 0, afterCompile: 1 })
})

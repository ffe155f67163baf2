/**
 * The built-in settings validators the bundle precompiles (scripts/bundle-cli.ts,
 * `precompiledValidatorsModule`, issue 20 "Engine start") judge every value as the validators a
 * checkout compiles at run time do (runtime/workers/configuration/schema.ts): same verdict, same
 * errors, for generated values shaped like each schema's settings and for any JSON value.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import fc from 'fast-check'
import { canonicalJson } from 'svc-protocol/json'
import { BUILTIN_DESCRIPTORS, type JsonSchema } from '../runtime/workers/catalogue.ts'
import { BUILTIN_OPTIONS } from '../runtime/workers/configuration/schema.ts'
import { build } from 'esbuild'
import { builtinsByRequire, precompiledValidatorsModule } from './bundle-cli.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-precompiled-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/** The generated module, loaded as the bundle would (its `require`s resolved from the checkout). */
async function precompiled(): Promise<ReadonlyMap<string, ValidateFunction>> {
  const file = join(scratch, 'precompiled.mjs')
  writeFileSync(file, `import { createRequire } from 'node:module'; const require = createRequire(${JSON.stringify(pathToFileURL(join(ROOT, 'package.json')).href)});\n${precompiledValidatorsModule()}`)
  return ((await import(pathToFileURL(file).href)) as { PRECOMPILED_VALIDATORS: ReadonlyMap<string, ValidateFunction> }).PRECOMPILED_VALIDATORS
}

/** Values shaped like `schema`'s instances, often valid, often not (wrong types, bounds, extra keys). */
function shaped(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
  const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(null, -1, 0, 1.5, 65536, '', 'x', true, [], {}, '${PORT}'))
  if (depth > 4) return anyValue
  const options: Array<fc.Arbitrary<unknown>> = [anyValue]
  if (schema.enum !== undefined) options.push(fc.constantFrom(...(schema.enum as unknown[])))
  if (schema.properties !== undefined) {
    const entries = Object.entries(schema.properties).map(([key, child]) => [key, shaped(child, depth + 1)] as const)
    options.push(
      fc.tuple(fc.record(Object.fromEntries(entries), { requiredKeys: [] }), fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 2 }), fc.boolean()).map(([known, extra, withExtra]) => (withExtra ? { ...extra, ...known } : known)),
    )
  }
  if (schema.items !== undefined) options.push(fc.array(shaped(schema.items, depth + 1), { maxLength: 3 }))
  for (const alternative of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) options.push(shaped(alternative, depth + 1))
  return fc.oneof(...options)
}

const outcome = (validate: ValidateFunction, value: unknown) => {
  const valid = validate(value)
  return { valid, errors: (validate.errors ?? []).map(({ instancePath, schemaPath, keyword, params, message }) => ({ instancePath, schemaPath, keyword, params, message })) }
}

test('precompiled built-in validators judge every value as run-time compiled ones do (fast-check)', async () => {
  const validators = await precompiled()
  const schemas = BUILTIN_DESCRIPTORS.flatMap((descriptor) => (descriptor.settings === null ? [] : [{ name: descriptor.name, schema: descriptor.settings }]))
  assert.equal(validators.size, schemas.length, 'one validator per built-in settings schema')
  const ajv = new Ajv2020(BUILTIN_OPTIONS)
  for (const { name, schema } of schemas) {
    const ahead = validators.get(canonicalJson(schema))
    assert.ok(ahead, `${name}: precompiled`)
    const compiled = ajv.compile(schema as object)
    fc.assert(
      fc.property(shaped(schema), (value) => {
        assert.deepEqual(outcome(ahead, value), outcome(compiled, value), name)
      }),
      { numRuns: 300 },
    )
  }
})

test('the bundle takes every Node built-in with require, never with an ES import (no ES module face built at start)', async () => {
  // Names with digits (node:v8, node:http2) and subpaths (node:fs/promises) included: node:v8 was imported.
  const names = ['node:v8', 'v8', 'node:http2', 'node:fs/promises', 'node:path', 'node:sqlite', 'events']
  const entry = join(scratch, 'builtins-entry.mjs')
  writeFileSync(entry, names.map((name, i) => `import * as m${i} from ${JSON.stringify(name)}; console.log(m${i});`).join('\n'))
  const result = await build({ entryPoints: [entry], bundle: true, write: false, format: 'esm', platform: 'node', plugins: [builtinsByRequire], logLevel: 'silent' })
  const code = result.outputFiles[0]!.text
  for (const name of names) {
    assert.ok(!new RegExp(`from ["']${name}["']`).test(code), `${name} is not an ES import`)
    assert.ok(code.includes(`require(${JSON.stringify(name)})`), `${name} is required`)
  }
})

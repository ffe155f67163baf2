/**
 * The built-in settings validators the bundle precompiles (scripts/bundle-cli.ts,
 * `precompiledValidatorsModule`, issue 20 "Engine start") judge every value as the validators a
 * checkout compiles at run time do (runtime/workers/configuration/schema.ts): same verdict, same
 * errors, for generated values shaped like each schema's settings and for any JSON value.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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
import { builtinsByRequire, bundleCli, lazyAjvCompiler, precompiledValidatorsModule } from './bundle-cli.ts'

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

test("a bundled module's named imports of a built-in are its own values, read once: no per-importer copy of the built-in's exports", async () => {
  // esbuild's CommonJS interop (`__toESM`) copied every export of a built-in onto a new object of
  // getters for each importing module: 240 copies, ~28 ms of CPU at every engine start (issue 20).
  const dir = mkdtempSync(join(scratch, 'named-'))
  const importers = ['a', 'b', 'c'].map((name) => {
    const file = join(dir, `${name}.mjs`)
    writeFileSync(
      file,
      `import fs, { readFileSync, promises } from 'node:fs'\nimport * as path from 'node:path'\nimport { AsyncLocalStorage } from 'node:async_hooks'\nimport process, { env } from 'node:process'\n` +
        `export const ${name} = { fs, readFileSync, promises, join: path.join, sep: path.sep, AsyncLocalStorage, process, env }\n`,
    )
    return file
  })
  const entry = join(dir, 'entry.mjs')
  writeFileSync(entry, `${importers.map((file, i) => `import { ${'abc'[i]} } from ${JSON.stringify(file)}`).join('\n')}\nexport const all = [a, b, c]\n`)
  const outfile = join(dir, 'out.mjs')
  await build({ entryPoints: [entry], outfile, bundle: true, format: 'esm', platform: 'node', plugins: [builtinsByRequire], banner: { js: "import { createRequire as __c } from 'node:module'; const require = __c(import.meta.url);" }, logLevel: 'silent' })
  const code = readFileSync(outfile, 'utf8')
  assert.ok(!code.includes('__toESM'), 'no CommonJS interop copy of a built-in')
  const { all } = (await import(pathToFileURL(outfile).href)) as { all: Array<Record<string, unknown>> }
  const fs = await import('node:fs')
  for (const values of all) {
    assert.equal(values.fs, fs.default, 'the default import is the module itself')
    assert.equal(values.readFileSync, fs.readFileSync)
    assert.equal(values.promises, fs.promises)
    assert.equal(values.join, (await import('node:path')).join)
    assert.equal(values.AsyncLocalStorage, (await import('node:async_hooks')).AsyncLocalStorage)
    assert.equal(values.process, process, 'process itself: its events reach the real process')
    assert.equal(values.env, process.env)
  }
})

test('a named import of a built-in accessor that starts or loads more than it names fails the build instead of running eagerly', async () => {
  const dir = mkdtempSync(join(scratch, 'accessor-'))
  for (const [specifier, name] of [['node:process', 'stdin'], ['node:fs', 'ReadStream'], ['node:http', 'WebSocket']]) {
    const entry = join(dir, `${name}.mjs`)
    writeFileSync(entry, `import { ${name} } from '${specifier}'\nconsole.log(${name})\n`)
    await assert.rejects(build({ entryPoints: [entry], bundle: true, write: false, format: 'esm', platform: 'node', plugins: [builtinsByRequire], logLevel: 'silent' }), /No matching export/, `${specifier} ${name}`)
  }
})

test("the packed CLI's start command loads neither execa nor listr2 before its workers run (issue 20 \"Engine start\")", async () => {
  // What `svc` evaluates at start: the command's module and every chunk it imports statically.
  const metafile = await bundleCli(ROOT, join(scratch, 'bundle'))
  const start = Object.keys(metafile.outputs).find((file) => file.endsWith('src/commands/start.js'))!
  const reached = new Set<string>()
  const visit = (file: string): void => {
    if (reached.has(file) || metafile.outputs[file] === undefined) return
    reached.add(file)
    for (const imported of metafile.outputs[file]!.imports) if (imported.kind === 'import-statement') visit(imported.path)
  }
  visit(start)
  const inputs = [...reached].flatMap((file) => Object.keys(metafile.outputs[file]!.inputs))
  for (const library of ['execa', 'listr2']) {
    assert.deepEqual(inputs.filter((input) => input.includes(`node_modules/${library}/`)), [], `${library} is evaluated at every engine start`)
  }
})

test("the bundle requires Ajv's compiler when a settings schema is first compiled, not when the settings module loads", async () => {
  const outfile = join(scratch, 'schema-bundle.mjs')
  await build({
    entryPoints: [join(ROOT, 'dist', 'runtime', 'workers', 'configuration', 'schema.js')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    plugins: [builtinsByRequire, lazyAjvCompiler],
    banner: { js: `import { createRequire as __c } from 'node:module'; const require = __c(${JSON.stringify(pathToFileURL(join(ROOT, 'package.json')).href)});` },
    logLevel: 'silent',
  })
  const code = readFileSync(outfile, 'utf8')
  const wrapper = /var (\w+) = __commonJS\(\{\s*"node_modules\/ajv\/dist\/2020\.js"/.exec(code)?.[1]
  assert.ok(wrapper, "Ajv's compiler is in the bundle")
  const calls = code.split('\n').filter((line) => line.includes(`${wrapper}()`))
  assert.deepEqual(calls.map((line) => line.trim()), [`var load = () => loaded ??= ${wrapper}();`], 'required only inside the stand-in, on first use')
  // And it compiles and judges a schema that is no built-in's.
  const { compileSettingsSchema } = (await import(pathToFileURL(outfile).href)) as typeof import('../runtime/workers/configuration/schema.ts')
  const validate = compileSettingsSchema({ type: 'object', properties: { port: { type: 'integer', maximum: 65535 } } })
  assert.deepEqual(validate({ port: 70000 }), ['/port: must be <= 65535'])
  assert.deepEqual(validate({ port: 1 }), [])
})

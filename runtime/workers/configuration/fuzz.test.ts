/**
 * Property-based fuzz test of the configuration worker's surfaces (builtins.md §11): random
 * payloads to `configuration::*` and random bytes in settings files never crash the engine, are
 * answered with a stable code, and never replace a valid value with an invalid one.
 */
import assert from 'node:assert/strict'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'

const SCHEMA = { type: 'object', properties: { n: { type: 'integer', minimum: 0 } }, additionalProperties: false }
const CODES = new Set(['INVALID_ARGUMENTS', 'INVALID_ID', 'NOT_FOUND', 'NOT_REGISTERED', 'SCHEMA_UNAVAILABLE', 'SCHEMA_INVALID', 'EXPAND_FAILED'])

let t: TestEngine
const call = (id: string, data: unknown) => t.engine.inject({ function_id: id, data })

before(async () => {
  t = await startTestEngine({ settings: { configuration: { debounce_ms: 100 } } })
  await call('configuration::register', { id: 'fuzz', name: 'Fuzz', description: '', schema: SCHEMA, initial_value: { n: 1 } })
})
after(() => t.stop())

/** Any JSON-ish value, including lone surrogates, deep nesting and huge numbers. */
const hostile = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('\ud800', '${', '$${X}', '${UNSET_VAR_FOR_FUZZ}', 1e308, -0, Number.MAX_SAFE_INTEGER + 2),
  // The wire refuses deeper payloads (MAX_JSON_DEPTH 128) before they reach a function.
  fc.integer({ min: 1, max: 120 }).map((levels) => JSON.parse('['.repeat(levels) + ']'.repeat(levels)) as unknown),
)

describe('configuration::* under random input', () => {
  it('answers every payload with a result or a catalogue code, and the stored value stays valid', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('register', 'get', 'set', 'update', 'list', 'schema'),
        fc.record({ id: fc.oneof(fc.constant('fuzz'), hostile), value: hostile, ops: hostile, schema: hostile, raw: hostile, initial_value: hostile }, { requiredKeys: [] }),
        async (fn, payload) => {
          // Re-registering `fuzz` would replace its schema; registrations get other ids.
          if (fn === 'register' && payload.id === 'fuzz') payload.id = 'fuzz-other'
          try {
            await call(`configuration::${fn}`, payload)
          } catch (error) {
            const code = (error as { code?: string }).code
            assert.ok(code !== undefined && CODES.has(code), `configuration::${fn} failed with ${code}: ${(error as Error).message}`)
          }
          const { value } = (await call('configuration::get', { id: 'fuzz' })) as { value: { n?: unknown } }
          assert.ok(value.n === undefined || (Number.isInteger(value.n) && (value.n as number) >= 0))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('survives random settings files and keeps the last valid value', async () => {
    await call('configuration::set', { id: 'fuzz', value: { n: 7 } })
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.string(), fc.uint8Array({ maxLength: 256 }).map((b) => Buffer.from(b)), fc.constant('id: fuzz\nvalue: { n: -1 }\n'), fc.constant(`id: fuzz\nvalue: ${'['.repeat(5000)}${']'.repeat(5000)}\n`), fc.constant(`id: fuzz\nvalue: ${'['.repeat(500)}${']'.repeat(500)}\n`)), async (content) => {
        await writeFile(join(t.dataDir, 'config', 'fuzz.yaml'), content)
      }),
      { numRuns: 50 },
    )
    // Last, a valid entry nested 500 levels deep: refused at the file's edge.
    await writeFile(join(t.dataDir, 'config', 'fuzz.yaml'), 'id: fuzz\nvalue: { n: 3 }\n')
    await new Promise((resolve) => setTimeout(resolve, 400))
    await writeFile(join(t.dataDir, 'config', 'fuzz.yaml'), `id: fuzz\nvalue: { n: 4, deep: ${'['.repeat(500)}${']'.repeat(500)} }\n`)
    await new Promise((resolve) => setTimeout(resolve, 400))
    assert.deepEqual(await call('configuration::get', { id: 'fuzz' }), { id: 'fuzz', value: { n: 3 } })
    const { value } = (await call('configuration::get', { id: 'fuzz' })) as { value: { n?: unknown } }
    assert.ok(value.n === undefined || (Number.isInteger(value.n) && (value.n as number) >= 0), JSON.stringify(value))
    assert.ok(Array.isArray(((await call('engine::workers::list', {})) as { workers: unknown[] }).workers))
  })
})

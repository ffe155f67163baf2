/**
 * Property-based fuzz test of the state worker's functions (builtins.md §4.2) with user-chosen
 * names that are unsafe as keys of plain objects (issue 16): scopes, keys and value fields named
 * `__proto__`, `constructor`, `prototype` or another `Object.prototype` member, with separators
 * and non-ASCII text, round-trip exactly on the `memory` and `builtin` adapters; hostile
 * payloads answer with a result or a catalogue code.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'

// Well-formed strings only: lone surrogates are stored as U+FFFD (a separate, documented rule).
const NAMES = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__', 'a.b', 'a::b', '', ' ', 'é😀']
const name = fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 12 }))
const CODES = new Set(['INVALID_ARGUMENTS', 'VALUE_TOO_LARGE'])

for (const adapter of ['memory', 'builtin'] as const) {
  describe(`state functions with unsafe names (${adapter} adapter)`, () => {
    let t: TestEngine
    const call = (function_id: string, data: unknown) => t.engine.inject({ function_id, data })
    before(async () => {
      t = await startTestEngine({ settings: { 'svc-state': { adapter: { name: adapter } } } })
    })
    after(() => t.stop())

    it('set, get, list_keys and list_groups keep every scope, key and field as given (fast-check)', async () => {
      await fc.assert(
        fc.asyncProperty(name.filter((s) => s.trim() !== ''), name.filter((s) => s !== ''), fc.constantFrom(...NAMES), fc.jsonValue({ maxDepth: 2 }), async (scope, key, field, inner) => {
          // As a value arrives from a worker: JSON text read back, so `__proto__` is an own key.
          const value = JSON.parse(`{${JSON.stringify(field)}: ${JSON.stringify(inner) ?? 'null'}}`)
          let answer: unknown
          try {
            answer = await call('state::set', { scope, key, value })
          } catch (error) {
            const code = (error as { code?: string }).code ?? 'none'
            assert.ok(CODES.has(code), `state::set failed with ${code}: ${(error as Error).message}`)
            return
          }
          assert.ok(answer !== undefined)
          const got = await call('state::get', { scope, key })
          assert.equal(JSON.stringify(got), JSON.stringify(value))
          assert.deepEqual(Object.keys(got as object), [field])
          const keys = (await call('state::list_keys', { scope, limit: 1000 })) as { keys: string[] }
          assert.ok(keys.keys.includes(key), `${JSON.stringify(key)} missing from list_keys of ${JSON.stringify(scope)}`)
          const groups = (await call('state::list_groups', {})) as { groups: string[] }
          assert.ok(groups.groups.includes(scope), `${JSON.stringify(scope)} missing from list_groups`)
        }),
        { numRuns: 150 },
      )
      // Object.prototype is untouched.
      assert.equal(({} as Record<string, unknown>).polluted, undefined)
      assert.equal(typeof Object.prototype.toString, 'function')
    })
  })
}

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { catalogue } from 'svc-protocol/errors'
import { ERRORS_DOC_PATH, renderErrorsDoc } from './errors-doc.ts'

describe('docs/reference/errors.md', () => {
  it('is what the catalogue generates (run npm run docs:errors after changing the catalogue)', () => {
    assert.equal(readFileSync(ERRORS_DOC_PATH, 'utf8'), renderErrorsDoc(), 'docs/reference/errors.md is out of date; run npm run docs:errors')
  })

  it('has one row per catalogue code with its status and exit code', () => {
    const rows = renderErrorsDoc().split('\n').filter((line) => line.startsWith('| `'))
    assert.equal(rows.length, catalogue().length)
    assert.ok(rows.some((r) => r.startsWith('| `function_not_found` | engine, SDK | No live replica for the id after namespace fallback. | Check the id') && r.endsWith('| 404 | 1 (failed) |')))
    assert.ok(rows.some((r) => r.startsWith('| `NOT_CONNECTED` | SDK (client side only) |') && r.endsWith('| 503 | 3 (unreachable) |')))
    assert.ok(rows.some((r) => r.startsWith('| `TIMEOUT` |') && r.endsWith('| 504 | 4 (timed out) |')))
    // The CLI's own code that svc trigger --json reports (issue 16).
    assert.ok(rows.some((r) => r.startsWith('| `ENGINE_UNREACHABLE` | CLI (client side only) |') && r.endsWith('| 503 | 3 (unreachable) |')))
  })

  it('escapes table cells', () => {
    const text = renderErrorsDoc([{ code: 'X', status: 400, exit: 'usage', source: ['cli'], when: 'a | b', fix: 'c', wire: true }])
    assert.ok(text.includes('| `X` | CLI | a \\| b | c | 400 | 2 (usage) |'))
  })

  it('gives every code a cause and a fix', () => {
    for (const entry of catalogue()) {
      assert.ok(entry.when.trim().length > 0, `${entry.code} has no cause`)
      assert.ok(entry.fix.trim().length > 0, `${entry.code} has no fix`)
    }
  })
})

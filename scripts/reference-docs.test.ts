import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import { COMPOSE_REFERENCE_PATH, FUNCTIONS_REFERENCE_PATH, renderComposeReference, renderFunctionsReference } from './reference-docs.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const STALE = 'is out of date; run npm run docs:reference'

describe('generated reference pages', () => {
  it(`${COMPOSE_REFERENCE_PATH} is what compose::schema gives`, () => {
    assert.equal(readFileSync(join(ROOT, COMPOSE_REFERENCE_PATH), 'utf8'), renderComposeReference(), `${COMPOSE_REFERENCE_PATH} ${STALE}`)
  })

  it(`${FUNCTIONS_REFERENCE_PATH} is what the built-ins register`, async () => {
    const text = await renderFunctionsReference()
    assert.equal(readFileSync(join(ROOT, FUNCTIONS_REFERENCE_PATH), 'utf8'), text, `${FUNCTIONS_REFERENCE_PATH} ${STALE}`)
    assert.match(text, /^### state::get$/m)
    assert.match(text, /^### http$/m)
  })
})

import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import { HAND_WRITTEN_PAGES, REFERENCE_PAGES, renderConfigReference, renderFunctionsReference, renderManifestReference } from './reference-docs.ts'
import { CONFIG_BLOCKS, type ConfigBlock } from '../runtime/config/keys.ts'
import { MANIFEST_FIELDS } from '../src/supervisor/manifest-fields.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const STALE = 'is out of date; run npm run docs:reference'

describe('generated reference pages', () => {
  for (const page of REFERENCE_PAGES) {
    it(`${page.path} is what the code gives`, async () => {
      assert.equal(readFileSync(join(ROOT, page.path), 'utf8'), await page.render(), `${page.path} ${STALE}`)
    })
  }

  it('every page of docs/reference is generated or listed as hand-written', () => {
    const known = new Set([...REFERENCE_PAGES.map((p) => p.path), ...HAND_WRITTEN_PAGES])
    for (const name of readdirSync(join(ROOT, 'docs/reference'))) {
      assert.ok(known.has(`docs/reference/${name}`), `docs/reference/${name} is neither generated (REFERENCE_PAGES) nor hand-written (HAND_WRITTEN_PAGES)`)
    }
    for (const path of HAND_WRITTEN_PAGES) assert.ok(readFileSync(join(ROOT, path), 'utf8').length > 0, `${path} is missing`)
  })

  it('config.yaml.md documents every key the loader accepts', () => {
    const text = renderConfigReference()
    for (const block of Object.values(CONFIG_BLOCKS) as ConfigBlock[]) {
      for (const k of block.keys) assert.ok(text.includes(`| \`${k.key}\` |`), `${k.key} missing from config.yaml.md`)
    }
  })

  it('svc.worker.yaml.md documents every field the parser accepts, with inferred scripts', () => {
    const text = renderManifestReference()
    for (const f of MANIFEST_FIELDS) assert.ok(text.includes(`| \`${f.path}\` |`), `${f.path} missing from svc.worker.yaml.md`)
    assert.match(text, /^\| typescript, npm \| `npm install` \|  \| `node --import tsx src\/index.ts` \|$/m)
    assert.match(text, /^\| rust \| `cargo build --release` \| `cargo build --release` \| `"\$\{CARGO_TARGET_DIR:-target\}\/release\/math-worker"` \|$/m)
  })

  it('functions.md lists built-in functions and trigger types', async () => {
    const text = await renderFunctionsReference()
    assert.match(text, /^### state::get$/m)
    assert.match(text, /^### http$/m)
    // engine::functions::info names them request_schema/response_schema; the page must show them.
    const stateSet = text.slice(text.indexOf('### state::set'), text.indexOf('### state::update'))
    assert.match(stateSet, /Payload:\n\n```json\n\{\n  "type": "object"/)
    assert.match(stateSet, /Result:\n\n```json\n[\s\S]*"new_value"/)
  })

  it('every built-in function and trigger type describes its payload and result', async () => {
    // New built-ins must come with request/response (or trigger config/payload) schemas.
    const text = await renderFunctionsReference()
    const missing: string[] = []
    let heading = ''
    let label = ''
    for (const line of text.split('\n')) {
      if (line.startsWith('### ')) heading = line.slice(4)
      else if (line.endsWith(':') && !line.startsWith(' ')) label = line.slice(0, -1)
      else if (line === 'not described') missing.push(`${heading} (${label})`)
    }
    assert.deepEqual(missing, [], `not described in functions.md: ${missing.join(', ')}`)
  })
})

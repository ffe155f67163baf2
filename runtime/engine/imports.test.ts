/**
 * The engine core has no import circles (issue 19 §1): each module of `runtime/engine/` can be
 * read, tested and replaced from its imports downwards. A circle that comes back fails here with
 * the modules that form it.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { importCircles, importGraph } from '../../test/support/import-graph.ts'

const engineDir = dirname(fileURLToPath(import.meta.url))

test('runtime/engine has no import circles, type-only imports included', () => {
  const graph = importGraph(engineDir)
  assert.ok(graph.has('engine.ts') && graph.has('channels/registry.ts'), 'the graph covers the engine and its subfolders')
  assert.deepEqual(importCircles(graph), [], 'modules importing each other, directly or through others')
})

test('the circle finder sees circles through type imports, re-exports and subfolders', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-imports-'))
  try {
    const files: Record<string, string> = {
      'a.ts': "import type { B } from './b.ts'\nexport type A = B\n",
      'b.ts': "export { c } from './sub/c.ts'\nexport type B = string\n",
      'sub/c.ts': "import '../a.ts'\nexport const c = 1\n",
      'leaf.ts': "import { c } from './sub/c.ts'\nimport 'node:fs'\nexport const d = c\n",
      'self.ts': "export * from './self.ts'\n",
      'a.test.ts': "import './leaf.ts'\nimport './a.ts'\n",
    }
    for (const [name, text] of Object.entries(files)) {
      await mkdir(dirname(join(dir, name)), { recursive: true })
      await writeFile(join(dir, name), text)
    }
    assert.deepEqual(importCircles(importGraph(dir)), [['a.ts', 'b.ts', 'sub/c.ts'], ['self.ts']])
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
})

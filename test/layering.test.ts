/**
 * The layers of the shipped sources (issue 21, "Inside"; docs/architecture.md "Layers"):
 *
 * - `packages/**` (svc-protocol, svc-helpers, svc-sdk, svc-browser-sdk, the console's backend and
 *   app) import neither `runtime/` nor `src/`: what they share with the engine is `svc-protocol`.
 * - `runtime/**` (the engine) imports nothing from `src/` (the CLI).
 * - `src/**` imports the runtime only through its entry files: `runtime/index.ts` (what any command
 *   may load: terminal output, logging, YAML, config.yaml) and `runtime/start.ts` (the engine, for
 *   `svc` itself), so a one-shot command never loads the engine by accident.
 *
 * Shipped sources only: tests (`*.test.ts`, `packages/<name>/test/`, `test-support/`) sit beside
 * the code and may start an engine from wherever it lives. Imports are read with TypeScript's
 * pre-processor, so `import type`, `export … from` and dynamic `import()` all count. And the light
 * entry, loaded in a fresh process, loads no engine, built-in worker or driver.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The runtime's entry files, the only modules of `runtime/` that `src/` may import. */
const RUNTIME_ENTRIES = ['runtime/index.ts', 'runtime/start.ts']

const SOURCE = /\.(ts|tsx|mts|js|mjs)$/
const NOT_SHIPPED = /(\.test\.tsx?$|\.d\.ts$|(^|\/)(test|test-support|node_modules|dist)(\/|$))/

/** Every shipped source file under `dir` (repository-relative, `/`-separated). */
function sources(root: string, dir: string): string[] {
  const out: string[] = []
  const abs = join(root, dir)
  let entries: string[]
  try {
    entries = readdirSync(abs).sort()
  } catch {
    return out
  }
  for (const entry of entries) {
    const rel = `${dir}/${entry}`
    if (NOT_SHIPPED.test(rel)) continue
    if (statSync(join(root, rel)).isDirectory()) out.push(...sources(root, rel))
    else if (SOURCE.test(entry)) out.push(rel)
  }
  return out
}

/** The layer a repository-relative path belongs to, or undefined outside the three. */
function layerOf(path: string): 'packages' | 'runtime' | 'src' | undefined {
  const top = path.split('/')[0]
  return top === 'packages' || top === 'runtime' || top === 'src' ? top : undefined
}

/**
 * Every import of the shipped sources under `root` that crosses the layers the wrong way, as
 * `<file>: imports <specifier> (<rule>)`, sorted.
 */
export function layeringBreaches(root: string): string[] {
  const breaches: string[] = []
  const files = [...sources(root, 'packages').filter((f) => /^packages\/[^/]+\/(src|app\/src)\//.test(f)), ...sources(root, 'runtime'), ...sources(root, 'src')]
  for (const file of files) {
    const from = layerOf(file)!
    const text = readFileSync(join(root, file), 'utf8')
    for (const ref of ts.preProcessFile(text, true, true).importedFiles) {
      if (!ref.fileName.startsWith('.')) continue
      const target = relative(root, resolve(root, dirname(file), ref.fileName)).split('\\').join('/')
      const to = layerOf(target)
      let rule: string | undefined
      if (from === 'packages' && to === 'runtime') rule = 'packages → runtime: import it from svc-protocol'
      else if (from === 'packages' && to === 'src') rule = 'packages → src'
      else if (from === 'runtime' && to === 'src') rule = 'runtime → src'
      else if (from === 'src' && to === 'runtime' && !RUNTIME_ENTRIES.includes(target)) rule = `src → runtime other than through ${RUNTIME_ENTRIES.join(' or ')}`
      if (rule !== undefined) breaches.push(`${file}: imports ${ref.fileName} (${rule})`)
    }
  }
  return breaches.sort()
}

test('the shipped sources keep their layers: packages → svc-protocol, runtime ↛ src, src → the runtime entries only', () => {
  const breaches = layeringBreaches(ROOT)
  assert.deepEqual(breaches, [], `layering breaches:\n${breaches.join('\n')}`)
})

test('each layering rule is caught, naming the file and the import; tests and the entry files are allowed', () => {
  const root = mkdtempSync(join(tmpdir(), 'svc-layering-'))
  try {
    const files: Record<string, string> = {
      'runtime/index.ts': "export { x } from './engine/x.ts'\n",
      'runtime/start.ts': "export { y } from './engine/y.ts'\n",
      'runtime/engine/x.ts': "import { z } from '../../src/lib/z.ts'\nexport const x = z\n",
      'runtime/engine/y.ts': 'export const y = 1\n',
      'runtime/engine/y.test.ts': "import '../../src/lib/z.ts'\n",
      'src/lib/z.ts': "import { x } from '../../runtime/index.ts'\nimport type { y } from '../../runtime/engine/y.ts'\nexport const z = 1\n",
      'src/lib/lazy.ts': "export async function load() { return await import('../../runtime/engine/y.ts') }\n",
      'src/lib/ok.ts': "export { y } from '../../runtime/start.ts'\n",
      'packages/console/app/src/page.tsx': "import type { T } from '../../../../runtime/engine/y.ts'\n",
      'packages/sdk/src/a.ts': "export * from '../../../src/lib/z.ts'\n",
      'packages/sdk/test/a.test.ts': "import '../../../runtime/engine/y.ts'\n",
    }
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    assert.deepEqual(layeringBreaches(root), [
      'packages/console/app/src/page.tsx: imports ../../../../runtime/engine/y.ts (packages → runtime: import it from svc-protocol)',
      'packages/sdk/src/a.ts: imports ../../../src/lib/z.ts (packages → src)',
      'runtime/engine/x.ts: imports ../../src/lib/z.ts (runtime → src)',
      'src/lib/lazy.ts: imports ../../runtime/engine/y.ts (src → runtime other than through runtime/index.ts or runtime/start.ts)',
      'src/lib/z.ts: imports ../../runtime/engine/y.ts (src → runtime other than through runtime/index.ts or runtime/start.ts)',
    ])
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
})

/** The runtime modules (repository-relative) a fresh Node process loads when it imports `entry`. */
function modulesLoadedBy(entry: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'svc-entry-'))
  try {
    const hook = join(dir, 'hook.mjs')
    const log = join(dir, 'modules.txt')
    writeFileSync(log, '')
    writeFileSync(hook, `import { registerHooks } from 'node:module'\nimport { appendFileSync } from 'node:fs'\nregisterHooks({ load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context) } })\n`)
    execFileSync(process.execPath, ['--import', hook, '--input-type=module', '-e', `await import(${JSON.stringify(join(ROOT, entry))})`], { stdio: 'pipe' })
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter((url) => url.startsWith('file:'))
      .map((url) => relative(ROOT, fileURLToPath(url)).split('\\').join('/'))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('the light entry loads no engine, built-in worker or driver; the engine entry does (issue 20: svc trigger stays light)', () => {
  const HEAVY = /^runtime\/(engine\/engine|workers\/index|workers\/[^/]+\/worker|fleet\/[^/]+)\.ts$|(^|\/)node_modules\/(pg|pg-cursor|mysql2|ioredis|nats|ajv)\//
  const light = modulesLoadedBy('runtime/index.ts')
  assert.ok(light.includes('runtime/yaml/index.ts') && light.includes('runtime/config/loader.ts'), 'the hook saw the light entry load')
  assert.deepEqual(light.filter((m) => HEAVY.test(m)), [], 'runtime/index.ts loads only what any command may load')
  const engineEntry = modulesLoadedBy('runtime/start.ts')
  assert.ok(engineEntry.includes('runtime/engine/engine.ts'))
  // The built-ins' code loads when the engine starts them (loadBuiltins), after its listener accepts.
  assert.deepEqual(engineEntry.filter((m) => /^runtime\/workers\/(index|[^/]+\/worker)\.ts$/.test(m)), [], 'runtime/start.ts loads no built-in worker')
})

/**
 * What svc-browser-sdk ships (sdk.md §13, issue 17 part 4): one self-contained ES module — no
 * import left for anyone to resolve (no bare specifier, no Node built-in), nothing from outside the
 * SDK's and the client core's sources — under 30 KiB minified and gzipped, named by package.json's
 * `exports` with `browser`/`import` conditions; subpath modules that re-export from it; and the
 * exports sdk.md §13 lists.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative, sep } from 'node:path'
import { before, describe, it } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'
import { SDK_VERSION } from '../src/version.ts'

const here = dirname(fileURLToPath(import.meta.url))
const pkgDir = join(here, '..')
const dist = join(pkgDir, 'dist')
const repo = join(pkgDir, '..', '..')
const pkg = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as {
  version: string
  exports: Record<string, string | Record<string, string>>
  dependencies?: Record<string, string>
}

/** Size budget of the bundle, minified and gzipped (issue 17 part 4). */
const BUDGET_BYTES = 30 * 1024

describe('the svc-browser-sdk bundle', () => {
  let code: string

  before(async () => {
    await promisify(execFile)(process.execPath, [join(pkgDir, 'scripts', 'build.mjs')])
    code = readFileSync(join(dist, 'svc-browser-sdk.js'), 'utf8')
  })

  it('is one ES module with no import left: no bare specifier, no Node built-in, no require', async () => {
    // Parsed rather than grepped: esbuild reports every import and export of the module as it is.
    const parsed = await build({ stdin: { contents: code, loader: 'js' }, write: false, bundle: false, format: 'esm', metafile: true, logLevel: 'silent' })
    const output = Object.values(parsed.metafile.outputs)[0]!
    assert.deepEqual(output.imports, [], 'the bundle imports nothing')
    assert.doesNotMatch(code, /\bimport\s*\(|\brequire\s*\(|["']node:/)
    assert.doesNotMatch(code, /\b(process|Buffer|__dirname)\b/, 'no Node global is used')
  })

  it('is built from the SDK and svc-protocol alone (no other package, no transport for Node)', async () => {
    const result = await build({ entryPoints: [join(pkgDir, 'src', 'index.ts')], bundle: true, platform: 'browser', format: 'esm', write: false, metafile: true, logLevel: 'silent' })
    for (const input of Object.keys(result.metafile.inputs)) {
      const path = relative(repo, join(process.cwd(), input))
      // svc-protocol's subpaths resolve to its compiled dist/ (package.json exports).
      const ours = path.startsWith(`packages${sep}browser-sdk${sep}src${sep}`) || path.startsWith(`packages${sep}protocol${sep}dist${sep}`)
      assert.ok(ours, `the bundle takes in ${input}`)
      assert.ok(!path.includes(`${sep}transport${sep}ws`) && !path.includes(`${sep}transport${sep}memory`), `the bundle takes in ${input}`)
    }
  })

  it(`is under ${BUDGET_BYTES / 1024} KiB minified and gzipped`, () => {
    const gzipped = gzipSync(code, { level: 9 }).length
    assert.ok(gzipped < BUDGET_BYTES, `${gzipped} bytes gzipped (${code.length} minified) is over the budget of ${BUDGET_BYTES}`)
  })

  it('exports the API of sdk.md §13, and the subpaths re-export from the same module', async () => {
    const sdk = (await import(pathToFileURL(join(dist, 'svc-browser-sdk.js')).href)) as Record<string, unknown>
    assert.deepEqual(Object.keys(sdk).sort(), [
      'ChannelDirection',
      'ChannelError',
      'ChannelItem',
      'ChannelReader',
      'ChannelWriter',
      'EngineFunctions',
      'EngineTriggers',
      'ErrorCode',
      'InvocationError',
      'NonRetryableError',
      'RegistrationRejectedError',
      'RetryAfterError',
      'TriggerAction',
      'createChannel',
      'createStream',
      'extractChannelRefs',
      'isChannelRef',
      'isErrorBody',
      'registerWorker',
    ])
    assert.deepEqual(sdk.EngineTriggers, { FUNCTIONS_AVAILABLE: 'engine::functions-available', WORKERS_AVAILABLE: 'engine::workers-available' })
    const helpers = (await import(pathToFileURL(join(dist, 'helpers.js')).href)) as Record<string, unknown>
    const stream = (await import(pathToFileURL(join(dist, 'stream.js')).href)) as Record<string, unknown>
    const state = (await import(pathToFileURL(join(dist, 'state.js')).href)) as Record<string, unknown>
    assert.equal(helpers.createStream, sdk.createStream, 'one copy of the client in a page')
    assert.equal(helpers.ChannelReader, sdk.ChannelReader, 'one copy of the channel ends in a page')
    assert.equal(helpers.createChannel, sdk.createChannel)
    assert.equal(stream.createStream, sdk.createStream)
    assert.deepEqual(Object.keys(state), [])
    assert.throws(() => (sdk.registerWorker as (a?: string) => unknown)(), /engine address is required in a browser/)
  })

  it('resolves by its package name to the same module, for import and for require() (sdk.md §1)', async () => {
    const byPath = await import(pathToFileURL(join(dist, 'svc-browser-sdk.js')).href)
    const byName = await import('svc-browser-sdk')
    assert.equal(byName.registerWorker, byPath.registerWorker)
    assert.equal((await import('svc-browser-sdk/helpers')).createStream, byPath.createStream)
    // Node ≥ 22.12 require()s an ES module without top-level await: CommonJS consumers get it too.
    const required = createRequire(import.meta.url)('svc-browser-sdk') as typeof byPath
    assert.equal(required.InvocationError, byPath.InvocationError)
  })

  it('is what package.json names: browser/import conditions, types for each subpath, its own version', () => {
    for (const [subpath, target] of Object.entries(pkg.exports)) {
      if (subpath === './package.json') continue
      assert.equal(typeof target, 'object', subpath)
      const conditions = target as Record<string, string>
      assert.deepEqual(Object.keys(conditions), ['types', 'browser', 'import', 'default'], `${subpath}: types first, default last`)
      assert.equal(conditions.browser, conditions.import)
      assert.ok(existsSync(join(pkgDir, conditions.import!)), `${subpath}: ${conditions.import} exists`)
      assert.ok(existsSync(join(pkgDir, conditions.types!)), `${subpath}: ${conditions.types} exists (tsc -b)`)
    }
    assert.equal((pkg.exports['.'] as Record<string, string>).import, './dist/svc-browser-sdk.js')
    assert.equal(SDK_VERSION, pkg.version, 'src/version.ts follows package.json')
  })
})

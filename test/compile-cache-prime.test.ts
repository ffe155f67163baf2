/**
 * Priming Node's compile cache for a TypeScript worker (src/supervisor/prime.ts, issue 20: "a trivial
 * worker's RSS ≤ 70 MB", on its first start too): after a prime, the worker's first start loads no
 * type stripper (amaro, ~17 MiB of RSS), the prime ran none of the worker's code, the worker's stack
 * traces name the same lines, and `svc`'s supervisor primes before a start and after an edit.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, describe, it } from 'node:test'
import { Engine } from '../runtime/engine/engine.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { LISTENER_DEFAULTS, type EngineConfig } from '../runtime/engine/types.ts'
import { inProcessEngine } from '../src/supervisor/engine-view.ts'
import { Orchestrator } from '../src/supervisor/orchestrator.ts'
import { primeCompileCache } from '../src/supervisor/prime.ts'
import { ROOT } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href
const root = mkdtempSync(join(tmpdir(), 'svc-prime-'))
const cleanups: Array<() => Promise<unknown> | unknown> = []
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
  rmSync(root, { recursive: true, force: true })
})

/** The worker's environment: this Node first on PATH (as svc puts its own), a compile cache of the test's own. */
function envWith(cache: string): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value
  delete env.NODE_DISABLE_COMPILE_CACHE
  delete env.NODE_OPTIONS
  return { ...env, NODE_COMPILE_CACHE: cache, PATH: `${dirname(process.execPath)}:${env.PATH ?? ''}` }
}

function write(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, text)
}

/**
 * An ES module package whose `src/index.ts` imports a `.ts` and a CommonJS file; each leaves a
 * marker file when it runs, and the entry prints whether amaro is loaded and, with THROW set, throws.
 */
function project(name: string): string {
  const dir = join(root, name)
  write(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }))
  write(
    join(dir, 'src', 'index.ts'),
    [
      "import { writeFileSync } from 'node:fs'",
      "import { one } from './one.ts'",
      "import two from './two.cjs'",
      "writeFileSync(new URL('../ran-index', import.meta.url), '')",
      'interface Sum { value: number }',
      'const sum: Sum = { value: one() + two }',
      "if (process.env.THROW) throw new Error(`thrown at ${sum.value}`)",
      "console.log(JSON.stringify({ amaro: process.moduleLoadList.some((name: string) => name.includes('amaro')), sum: sum.value }))",
      '',
    ].join('\n'),
  )
  write(join(dir, 'src', 'one.ts'), "import { writeFileSync } from 'node:fs'\nwriteFileSync(new URL('../ran-one', import.meta.url), '')\nexport function one(): number { return 1 }\n")
  write(join(dir, 'src', 'two.cjs'), "require('node:fs').writeFileSync(require('node:path').join(__dirname, '..', 'ran-two'), '')\nmodule.exports = 2\n")
  return dir
}

/** Runs the entry as svc runs it (`node src/index.ts`): its report, or its stderr when it fails. */
function run(dir: string, env: Record<string, string>): { amaro: boolean; sum: number } {
  return JSON.parse(execFileSync(process.execPath, ['src/index.ts'], { cwd: dir, env, encoding: 'utf8' })) as { amaro: boolean; sum: number }
}

function thrown(dir: string, env: Record<string, string>): string {
  try {
    execFileSync(process.execPath, ['src/index.ts'], { cwd: dir, env: { ...env, THROW: '1' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (err) {
    return String((err as { stderr: string }).stderr)
  }
  assert.fail('the entry did not throw')
}

const ran = (dir: string) => ['ran-index', 'ran-one', 'ran-two'].filter((name) => existsSync(join(dir, name)))

describe('primeCompileCache', () => {
  it('a primed TypeScript worker loads no type stripper at its first start; an unprimed one does', async () => {
    const dir = project('first-start')
    const cold = envWith(join(root, 'cache-cold'))
    assert.equal(run(dir, cold).amaro, true, 'without a prime the first start strips the types itself')

    const env = envWith(join(root, 'cache-primed'))
    assert.equal(await primeCompileCache("node 'src/index.ts'", { cwd: dir, env }), 'primed')
    assert.deepEqual(run(dir, env), { amaro: false, sum: 3 })
  })

  it('runs none of the worker’s code (its entry, a .ts import, a CommonJS import), and the stack traces name the same lines', async () => {
    const dir = project('no-code-runs')
    const env = envWith(join(root, 'cache-no-code'))
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env }), 'primed')
    assert.deepEqual(ran(dir), [])

    const primedTrace = thrown(dir, env)
    const unprimedTrace = thrown(dir, envWith(join(root, 'cache-unprimed-trace')))
    assert.match(primedTrace, /src\/index\.ts:7:\d+/)
    assert.equal(primedTrace.replace(/\n\s*at .*node:internal.*$/gm, ''), unprimedTrace.replace(/\n\s*at .*node:internal.*$/gm, ''))
  })

  it('primes again only after a file of the graph changed, and the start after the edit loads no type stripper', async () => {
    const dir = project('edits')
    const env = envWith(join(root, 'cache-edits'))
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env }), 'primed')
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env }), 'fresh')
    write(join(dir, 'src', 'one.ts'), 'export function one(): number { return 40 }\n')
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env }), 'primed')
    assert.deepEqual(run(dir, env), { amaro: false, sum: 42 })
  })

  it('leaves alone what Node does not strip as an ES module, a worker whose NODE_OPTIONS preload code, and a cache that is off', async () => {
    const dir = project('unsupported')
    const env = envWith(join(root, 'cache-unsupported'))
    assert.equal(await primeCompileCache('node --import tsx src/index.ts', { cwd: dir, env }), 'unsupported')
    assert.equal(await primeCompileCache('node src/two.cjs', { cwd: dir, env }), 'unsupported')
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env: { ...env, NODE_DISABLE_COMPILE_CACHE: '1' } }), 'unsupported')
    for (const preload of ['--require ./x.cjs', '--import=./x.mjs', '-r ./x.cjs', '--enable-source-maps --experimental-loader ./x.mjs']) {
      assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env: { ...env, NODE_OPTIONS: preload } }), 'unsupported', preload)
    }
    const commonjs = join(root, 'commonjs')
    write(join(commonjs, 'package.json'), '{}')
    write(join(commonjs, 'index.ts'), 'const x: number = 1\n')
    assert.equal(await primeCompileCache('node index.ts', { cwd: commonjs, env }), 'unsupported')
    assert.equal(existsSync(join(root, 'cache-unsupported')), false)
  })

  it('primes the .ts files a package import comes before, and loads no package code (a package that runs code when imported)', async () => {
    const dir = project('package-first')
    write(join(dir, 'node_modules', 'dep', 'package.json'), JSON.stringify({ name: 'dep', type: 'module', exports: './index.js' }))
    write(join(dir, 'node_modules', 'dep', 'index.js'), "import { writeFileSync } from 'node:fs'\nwriteFileSync(new URL('../../ran-dep', import.meta.url), '')\nexport const dep = 0\n")
    write(join(dir, 'src', 'index.ts'), "import { dep } from 'dep'\n" + readFileSync(join(dir, 'src', 'index.ts'), 'utf8').replace('one() + two', 'one() + two + dep'))
    const env = envWith(join(root, 'cache-package-first'))
    assert.equal(await primeCompileCache('node src/index.ts', { cwd: dir, env }), 'primed')
    assert.deepEqual([...ran(dir), ...(existsSync(join(dir, 'ran-dep')) ? ['ran-dep'] : [])], [])
    assert.deepEqual(run(dir, env), { amaro: false, sum: 3 })
  })

  it('runs none of a graph that does not link, and reports an entry that is not there as failed', async () => {
    const dir = project('broken')
    write(join(dir, 'src', 'index.ts'), "import { missing } from './one.ts'\nimport { writeFileSync } from 'node:fs'\nwriteFileSync(new URL('../ran-index', import.meta.url), String(missing))\n")
    const env = envWith(join(root, 'cache-broken'))
    await primeCompileCache('node src/index.ts', { cwd: dir, env })
    assert.deepEqual(ran(dir), [])
    assert.equal(await primeCompileCache('node src/absent.ts', { cwd: dir, env }), 'failed')
  })
})

describe('svc’s supervisor', () => {
  it('starts a TypeScript worker primed, and primes again before the start that follows an edit', async () => {
    const config: EngineConfig = {
      listeners: [{ ...LISTENER_DEFAULTS, port: 0 }],
      registration_namespace_grace_ms: 250,
      internal_invocation_timeout_ms: 30_000,
      data_dir: join(root, 'engine'),
      local_workers: [],
      builtins: {},
    }
    const engine = new Engine(config, { log: silentLogger, builtins: [] })
    cleanups.push(() => engine.stop())
    await engine.start()
    const orchestrator = new Orchestrator({ engine: inProcessEngine(engine, engine.workerUrls[0]!, silentLogger), log: silentLogger })
    cleanups.push(() => orchestrator.stopAll())

    const dir = join(root, 'workers', 'typed')
    write(join(dir, 'package.json'), JSON.stringify({ name: 'typed', private: true, type: 'module' }))
    write(join(dir, 'svc.worker.yaml'), 'name: typed\nruntime:\n  kind: typescript\n  entry: src/index.ts\nscripts:\n  start: node src/index.ts\n')
    const source = (version: number) =>
      `import { registerWorker } from ${JSON.stringify(SDK)}\n` +
      `interface Report { version: number; amaro: boolean }\n` +
      `const svc = registerWorker(undefined, { otel: { enabled: false } })\n` +
      `svc.registerFunction('typed::report', (): Report => ({ version: ${version}, amaro: process.moduleLoadList.some((name: string) => name.includes('amaro')) }))\n`
    write(join(dir, 'src', 'index.ts'), source(1))
    const { NODE_COMPILE_CACHE } = envWith(join(root, 'cache-supervisor'))
    const worker = orchestrator.launch({ name: 'typed', directory: dir, namespace: 'default', projectRoot: root, envBase: 'engine', env: { NODE_COMPILE_CACHE: NODE_COMPILE_CACHE! }, watch: true, noInstall: true })
    await worker.start()
    await worker.waitUntilRunning(60_000)
    assert.deepEqual(await engine.inject({ function_id: 'typed::report', data: {} }), { version: 1, amaro: false })

    write(join(dir, 'src', 'index.ts'), source(2))
    const report = await waitFor(async () => {
      const answer = (await engine.inject({ function_id: 'typed::report', data: {} })) as { version: number }
      return answer.version === 2 && answer
    }, 'the edited worker serving typed::report', 60_000)
    assert.deepEqual(report, { version: 2, amaro: false })
  })
})

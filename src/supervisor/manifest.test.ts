import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { binaryNameOf, erasableSyntaxOnly, inferScripts, isDependencyManifest, loadManifest, ManifestError, workerNameFor } from './manifest.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-manifest-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

let dirs = 0
/** A worker directory holding `files` (name → content). */
function workerDir(files: Record<string, string>, name = `w${dirs++}`): string {
  const dir = join(scratch, name)
  mkdirSync(dir, { recursive: true })
  for (const [file, content] of Object.entries(files)) writeFileSync(join(dir, file), content)
  return dir
}

function fails(yaml: string, expected: string | RegExp, extra: Record<string, string> = {}): ManifestError {
  const dir = workerDir({ 'svc.worker.yaml': yaml, ...extra })
  let caught: unknown
  try {
    loadManifest(dir)
  } catch (err) {
    caught = err
  }
  assert.ok(caught instanceof ManifestError, `expected a ManifestError, got ${String(caught)}`)
  const prefix = `${join(dir, 'svc.worker.yaml')}:`
  assert.ok(caught.message.startsWith(prefix), caught.message)
  const rest = caught.message.slice(prefix.length)
  if (typeof expected === 'string') assert.equal(rest, expected)
  else assert.match(rest, expected)
  assert.equal(caught.code, 'INVALID_MANIFEST')
  assert.equal(caught.file, join(dir, 'svc.worker.yaml'))
  return caught
}

describe('loadManifest: svc.worker.yaml', () => {
  it('reads every field of the cli.md §2.2 example', () => {
    const dir = workerDir({
      'svc.worker.yaml': `name: math-worker
description: Adds numbers
runtime:
  kind: typescript
  package_manager: npm
  entry: src/index.ts
scripts:
  install: npm install
  start: node --import tsx src/index.ts
env: { LOG_LEVEL: info, RETRIES: 3, VERBOSE: true }
watch: { ignore: ["fixtures/**"] }
resources: { cpus: 4, memory_mib: 4096 }
`,
    })
    assert.deepEqual(loadManifest(dir), {
      name: 'math-worker',
      description: 'Adds numbers',
      runtime: { kind: 'typescript', package_manager: 'npm', entry: 'src/index.ts' },
      scripts: { install: 'npm install', start: 'node --import tsx src/index.ts' },
      env: { LOG_LEVEL: 'info', RETRIES: '3', VERBOSE: 'true' },
      isolation: 'process',
      resources: { cpus: 4, memory_mib: 4096 },
      watch: { enabled: true, ignore: ['fixtures/**'] },
      file: join(dir, 'svc.worker.yaml'),
    })
  })

  it('names the file as the directory was given: relative stays relative', () => {
    const dir = workerDir({ 'svc.worker.yaml': 'name: x\nscripts: { start: node a.js }\nbogus: 1\n' })
    const rel = relative(process.cwd(), dir)
    assert.throws(() => loadManifest(rel), { message: `${join(rel, 'svc.worker.yaml')}:3:1: unknown field 'bogus'` })
    assert.throws(() => loadManifest(dir, { label: 'workers/x' }), { message: "workers/x/svc.worker.yaml:3:1: unknown field 'bogus'" })
  })

  it('rejects unknown fields at every level, suggesting the closest one', () => {
    fails('name: x\nscirpts:\n  start: node a.js\n', "2:1: unknown field 'scirpts' (did you mean 'scripts'?)")
    fails('name: x\nscripts:\n  start: node a.js\n  instal: npm i\n', "4:3: unknown field 'scripts.instal' (did you mean 'install'?)")
    fails('name: x\nscripts: { start: a }\nruntime:\n  kind: javascript\n  entyr: a.js\n', "5:3: unknown field 'runtime.entyr' (did you mean 'entry'?)")
    fails('name: x\nscripts: { start: a }\nwatch:\n  ignored: []\n', "4:3: unknown field 'watch.ignored' (did you mean 'ignore'?)")
    fails('name: x\nscripts: { start: a }\nresources: { cpu: 1 }\n', "3:14: unknown field 'resources.cpu' (did you mean 'cpus'?)")
  })

  it('rejects wrong types', () => {
    fails('name: 5\nscripts: { start: a }\n', '1:7: name must be a string (got 5)')
    fails('name: x\nscripts: node a.js\n', "2:10: scripts must be a mapping (got 'node a.js')")
    fails('name: x\nscripts:\n  start: [node, a.js]\n', '3:10: scripts.start must be a string (got a list)')
    fails('name: x\nscripts: { start: a }\nenv:\n  A: { b: 1 }\n', '4:6: env.A must be a string (got a mapping)')
    fails('name: x\nscripts: { start: a }\nwatch: { enabled: "no" }\n', "3:19: watch.enabled must be true or false (got 'no')")
    fails('name: x\nscripts: { start: a }\nwatch: { ignore: "*.tmp" }\n', "3:18: watch.ignore must be a list of glob patterns (got '*.tmp')")
    fails('name: x\nscripts: { start: a }\nresources: { cpus: 1.5 }\n', '3:20: resources.cpus must be an integer (got 1.5)')
    fails('name: x\nscripts:\n  start: ""\n', '3:10: scripts.start must not be empty')
  })

  it('checks the name pattern and requires a name', () => {
    fails('name: Math_Worker\nscripts: { start: a }\n', "1:7: invalid name 'Math_Worker': use 1-64 characters a-z, 0-9, '_' and '-', starting with a letter or digit")
    fails('name: -x\nscripts: { start: a }\n', /^1:7: invalid name '-x'/)
    fails(`name: ${'a'.repeat(65)}\nscripts: { start: a }\n`, /^1:7: invalid name/)
    assert.equal(loadManifest(workerDir({ 'svc.worker.yaml': `name: ${'a'.repeat(64)}\nscripts: { start: a }\n` })).name.length, 64)
    fails('scripts: { start: a }\n', "1:1: missing required field 'name'")
    fails('', "1:1: the manifest is empty; it needs at least 'name'")
  })

  it('checks the runtime.kind, package_manager and isolation enums', () => {
    fails('name: x\nruntime: { kind: go }\nscripts: { start: a }\n', "2:18: runtime.kind must be 'typescript', 'javascript', 'bun', 'python' or 'rust' (got 'go')")
    fails('name: x\nruntime: { kind: typscript, entry: a.ts }\n', /^2:18: runtime\.kind must be .* \(got 'typscript'\) \(did you mean 'typescript'\?\)$/)
    fails('name: x\nruntime: { kind: javascript, package_manager: pip }\nscripts: { start: a }\n', "2:47: runtime.package_manager must be 'npm', 'pnpm', 'yarn' or 'bun' (got 'pip')")
    fails('name: x\nruntime: { kind: python, package_manager: npm }\nscripts: { start: a }\n', '2:43: runtime.package_manager applies to JavaScript kinds only, not python')
    fails('name: x\nisolation: vm\nscripts: { start: a }\n', "2:12: isolation must be 'process' or 'microvm' (got 'vm')")
    assert.equal(loadManifest(workerDir({ 'svc.worker.yaml': 'name: x\nisolation: microvm\nscripts: { start: a }\n' })).isolation, 'microvm')
  })

  it('bounds resources: cpus 1-4, memory_mib 128-4096', () => {
    fails('name: x\nscripts: { start: a }\nresources: { cpus: 5 }\n', '3:20: resources.cpus must be between 1 and 4 (got 5)')
    fails('name: x\nscripts: { start: a }\nresources: { cpus: 0 }\n', '3:20: resources.cpus must be between 1 and 4 (got 0)')
    fails('name: x\nscripts: { start: a }\nresources: { memory_mib: 8192 }\n', '3:26: resources.memory_mib must be between 128 and 4096 (got 8192)')
  })

  it('reports YAML syntax errors with their place', () => {
    fails('name: x\nscripts: [a\n', /^\d+:\d+: invalid YAML: /)
    fails('name: x\nname: y\nscripts: { start: a }\n', /^2:1: invalid YAML: .*[Mm]ap keys must be unique/)
  })

  it('accepts watch: false as the short form of watch.enabled: false', () => {
    const manifest = loadManifest(workerDir({ 'svc.worker.yaml': 'name: x\nscripts: { start: a }\nwatch: false\n' }))
    assert.deepEqual(manifest.watch, { enabled: false, ignore: [] })
  })

  it('requires scripts.start unless it can be inferred, pointing at scripts or runtime', () => {
    fails('name: x\nscripts:\n  install: npm i\n', '2:1: missing scripts.start: give scripts.start, or runtime.kind and runtime.entry to infer it')
    fails('name: x\nruntime:\n  kind: javascript\n', '2:1: missing scripts.start: give scripts.start, or runtime.entry to infer it for javascript')
    fails('name: x\n', '1:1: missing scripts.start: give scripts.start, or runtime.kind and runtime.entry to infer it')
    // requireStart: false (a compose container whose scripts.run replaces it)
    const dir = workerDir({ 'svc.worker.yaml': 'name: x\n' })
    assert.equal(loadManifest(dir, { requireStart: false }).scripts.start, '')
  })
})

describe('script inference (cli.md §2.2 table)', () => {
  const infer = (yaml: string, files: Record<string, string> = {}) => loadManifest(workerDir({ 'svc.worker.yaml': yaml, ...files })).scripts

  it('typescript: node runs the entry itself when tsconfig.json sets erasableSyntaxOnly (comments and trailing commas allowed)', () => {
    const yaml = 'name: x\nruntime: { kind: typescript, entry: src/index.ts }\n'
    const tsconfig = '{\n  // Node strips the types\n  "compilerOptions": { /* "erasableSyntaxOnly": false */ "erasableSyntaxOnly": true, },\n}\n'
    assert.deepEqual(infer(yaml, { 'tsconfig.json': tsconfig }), { install: 'npm install', start: 'node src/index.ts' })
    assert.equal(infer(yaml, { 'tsconfig.json': '{ "compilerOptions": { "erasableSyntaxOnly": false } }' }).start, 'node --import tsx src/index.ts')
    assert.equal(infer(yaml, { 'tsconfig.json': '{ // "compilerOptions": { "erasableSyntaxOnly": true }\n}' }).start, 'node --import tsx src/index.ts')
    assert.equal(infer(yaml, { 'tsconfig.json': '{ "extends": "./base.json" }' }).start, 'node --import tsx src/index.ts')
  })

  it('erasableSyntaxOnly reads any tsconfig.json text without throwing (fast-check)', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.json(), fc.constantFrom('{"compilerOptions": {"erasableSyntaxOnly": "true"}}', '{"compilerOptions": null}', '[1,', '"/*', '{"a": "\\"//"}')), (text) => {
        const dir = workerDir({ 'tsconfig.json': text })
        const verdict = erasableSyntaxOnly(dir)
        assert.equal(typeof verdict, 'boolean')
        if (verdict) assert.match(text, /erasableSyntaxOnly/)
      }),
      { numRuns: 200 },
    )
  })

  it('typescript: npm and pnpm → node --import tsx (one process); yarn → yarn exec tsx; package_manager defaults to npm', () => {
    assert.deepEqual(infer('name: x\nruntime: { kind: typescript, entry: src/index.ts }\n'), { install: 'npm install', start: 'node --import tsx src/index.ts' })
    assert.deepEqual(infer('name: x\nruntime: { kind: typescript, package_manager: pnpm, entry: src/index.ts }\n'), {
      install: 'pnpm install',
      start: 'node --import tsx src/index.ts',
    })
    assert.deepEqual(infer('name: x\nruntime: { kind: typescript, package_manager: yarn, entry: src/index.ts }\n'), {
      install: 'yarn install',
      start: 'yarn exec tsx src/index.ts',
    })
    const manifest = loadManifest(workerDir({ 'svc.worker.yaml': 'name: x\nruntime: { kind: typescript, entry: a.ts }\n' }))
    assert.equal(manifest.runtime.package_manager, 'npm')
  })

  it('javascript: <manager> install, node <entry>; bun: bun install, bun run <entry>', () => {
    assert.deepEqual(infer('name: x\nruntime: { kind: javascript, package_manager: yarn, entry: index.js }\n'), { install: 'yarn install', start: 'node index.js' })
    assert.deepEqual(infer('name: x\nruntime: { kind: bun, entry: index.ts }\n'), { install: 'bun install', start: 'bun run index.ts' })
  })

  it('python: a venv with -e . (pyproject) or -r requirements.txt, then -m <entry>', () => {
    assert.deepEqual(infer('name: x\nruntime: { kind: python, entry: app.main }\n', { 'pyproject.toml': '' }), {
      install: 'python3 -m venv .venv && .venv/bin/pip install -e .',
      start: '.venv/bin/python -m app.main',
    })
    assert.deepEqual(infer('name: x\nruntime: { kind: python, entry: main.py }\n', { 'requirements.txt': '' }), {
      install: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt',
      start: '.venv/bin/python main.py',
    })
  })

  it('rust: cargo build --release as install and build, then the release binary Cargo.toml names (no entry needed)', () => {
    const cargo = '[package]\nname = "hello-rust"\nversion = "0.1.0"\n\n[dependencies]\nname = "not this"\n'
    assert.deepEqual(infer('name: x\nruntime: { kind: rust }\n', { 'Cargo.toml': cargo }), {
      install: 'cargo build --release',
      build: 'cargo build --release',
      start: '"${CARGO_TARGET_DIR:-target}/release/hello-rust"',
    })
    // runtime.entry names the binary; a given install is also the build
    assert.deepEqual(infer('name: x\nruntime: { kind: rust, entry: server }\nscripts: { install: cargo build --release --locked }\n', { 'Cargo.toml': cargo }), {
      install: 'cargo build --release --locked',
      build: 'cargo build --release --locked',
      start: '"${CARGO_TARGET_DIR:-target}/release/server"',
    })
    // a given build wins
    assert.equal(infer('name: x\nruntime: { kind: rust }\nscripts: { build: make }\n', { 'Cargo.toml': cargo }).build, 'make')
  })

  it('rust: without a binary name to run, scripts.start or runtime.entry is required', () => {
    fails('name: x\nruntime: { kind: rust }\n', "2:1: missing scripts.start: give scripts.start, or runtime.entry (the binary's name) when Cargo.toml does not name one binary")
    const two = '[package]\nname = "p"\n[[bin]]\nname = "a"\n[[bin]]\nname = "b"\n'
    fails('name: x\nruntime: { kind: rust }\n', /^2:1: missing scripts\.start/, { 'Cargo.toml': two })
    assert.equal(infer('name: x\nruntime: { kind: rust, entry: b }\n', { 'Cargo.toml': two }).start, '"${CARGO_TARGET_DIR:-target}/release/b"')
  })

  it('scripts.build is read like the other scripts; kinds other than rust infer none', () => {
    assert.deepEqual(infer('name: x\nscripts: { build: tsc, start: node dist/a.js }\n'), { build: 'tsc', start: 'node dist/a.js' })
    assert.equal(infer('name: x\nruntime: { kind: python, entry: main.py }\n', { 'requirements.txt': '' }).build, undefined)
    fails('name: x\nscripts: { start: a, build: [make] }\n', '2:29: scripts.build must be a string (got a list)')
  })

  it('given scripts win; a missing install alone is inferred', () => {
    assert.deepEqual(infer('name: x\nruntime: { kind: javascript, entry: a.js }\nscripts: { start: node b.js }\n'), {
      install: 'npm install',
      start: 'node b.js',
    })
    assert.deepEqual(infer('name: x\nruntime: { kind: javascript, entry: a.js }\nscripts: { install: "true" }\n'), { install: 'true', start: 'node a.js' })
  })

  it('a manifest without runtime.kind takes missing scripts from the directory', () => {
    assert.deepEqual(infer('name: x\n', { 'package.json': '{"scripts":{"start":"node a.js"}}' }), { install: 'npm install', start: 'npm run start' })
  })

  it('quotes an entry the shell would split', () => {
    assert.deepEqual(inferScripts('javascript', 'npm', 'my worker.js'), { install: 'npm install', start: "node 'my worker.js'" })
  })
})

describe('detection without a manifest (cli.md §2.2)', () => {
  it('package.json: <manager> run dev, else start; the manager from the lockfile', () => {
    const both = workerDir({ 'package.json': '{"scripts":{"dev":"node --watch a.js","start":"node a.js"}}' }, 'My Worker')
    assert.deepEqual(loadManifest(both), {
      name: 'my-worker',
      runtime: { kind: 'javascript', package_manager: 'npm' },
      scripts: { install: 'npm install', start: 'npm run dev' },
      env: {},
      isolation: 'process',
      watch: { enabled: true, ignore: [] },
    })
    assert.equal(loadManifest(workerDir({ 'package.json': '{"scripts":{"start":"node a.js"}}' })).scripts.start, 'npm run start')
    const bun = loadManifest(workerDir({ 'package.json': '{"scripts":{"dev":"bun a.ts"}}', 'bun.lockb': '' }))
    assert.deepEqual([bun.runtime.kind, bun.scripts.install, bun.scripts.start], ['bun', 'bun install', 'bun run dev'])
    const bunText = loadManifest(workerDir({ 'package.json': '{"scripts":{"dev":"x"}}', 'bun.lock': '' }))
    assert.equal(bunText.scripts.start, 'bun run dev')
    assert.equal(loadManifest(workerDir({ 'package.json': '{"scripts":{"dev":"x"}}', 'pnpm-lock.yaml': '' })).scripts.start, 'pnpm run dev')
    assert.equal(loadManifest(workerDir({ 'package.json': '{"scripts":{"dev":"x"}}', 'yarn.lock': '' })).scripts.install, 'yarn install')
  })

  it('pyproject.toml or requirements.txt: the python commands', () => {
    const py = loadManifest(workerDir({ 'pyproject.toml': '[project]\nname = "my-app"\n' }))
    assert.deepEqual(py.scripts, { install: 'python3 -m venv .venv && .venv/bin/pip install -e .', start: '.venv/bin/python -m my_app' })
    const req = loadManifest(workerDir({ 'requirements.txt': 'requests\n', 'main.py': '' }))
    assert.deepEqual(req.scripts, { install: 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt', start: '.venv/bin/python main.py' })
    assert.equal(req.runtime.kind, 'python')
  })

  it('Cargo.toml: the rust commands', () => {
    const detected = loadManifest(workerDir({ 'Cargo.toml': '[package]\nname = "w"\n' }))
    assert.deepEqual(detected.scripts, {
      install: 'cargo build --release',
      build: 'cargo build --release',
      start: '"${CARGO_TARGET_DIR:-target}/release/w"',
    })
    assert.equal(detected.runtime.kind, 'rust')
    // a Cargo.toml naming no binary: detected, but not startable
    assert.throws(() => loadManifest(workerDir({ 'Cargo.toml': '[workspace]\nmembers = ["a"]\n' })), { code: 'NO_START_SCRIPT' })
  })

  it('anything else: Cannot determine how to start <path>', () => {
    const dir = workerDir({ 'README.md': 'hi' })
    assert.throws(() => loadManifest(dir), (err: unknown) => {
      assert.ok(err instanceof ManifestError)
      assert.equal(err.code, 'NO_START_SCRIPT')
      assert.equal(err.message, `Cannot determine how to start ${dir}: add a svc.worker.yaml with scripts.start`)
      assert.equal(err.line, undefined)
      return true
    })
    // package.json without dev or start script starts nothing either
    assert.throws(() => loadManifest(workerDir({ 'package.json': '{"scripts":{"test":"x"}}' })), { code: 'NO_START_SCRIPT' })
    // ... unless the caller brings its own start command
    assert.equal(loadManifest(dir, { requireStart: false }).scripts.start, '')
  })

  it('a directory that does not exist is UNKNOWN_WORKER', () => {
    assert.throws(() => loadManifest(join(scratch, 'nope')), { code: 'UNKNOWN_WORKER', message: `Worker directory ${join(scratch, 'nope')} does not exist` })
  })
})

describe('helpers', () => {
  it('isDependencyManifest knows the list of cli.md §5.3', () => {
    for (const name of ['package.json', 'package-lock.json', 'requirements.txt', 'requirements-dev.txt', 'Cargo.lock', 'go.sum', 'bun.lockb', 'Pipfile']) {
      assert.ok(isDependencyManifest(name), name)
    }
    for (const name of ['index.js', 'requirements.md', 'tsconfig.json', 'svc.worker.yaml']) assert.ok(!isDependencyManifest(name), name)
  })

  it('workerNameFor makes a valid name of a directory', () => {
    assert.equal(workerNameFor('/x/Math Worker'), 'math-worker')
    assert.equal(workerNameFor('/x/_tmp'), 'tmp')
  })
})

describe('binaryNameOf (the binary of a Cargo.toml)', () => {
  it('the package name, the only [[bin]], or the [[bin]] named after the package', () => {
    assert.equal(binaryNameOf('[package]\nname = "svc-worker"\n'), 'svc-worker')
    assert.equal(binaryNameOf("[package]\nname = 'single'   # comment\n"), 'single')
    assert.equal(binaryNameOf('[package]\nname = "p"\n\n[[bin]]\nname = "server"\npath = "src/server.rs"\n'), 'server')
    assert.equal(binaryNameOf('[package]\nname = "p"\n[[bin]]\npath = "src/main.rs"\n'), 'p')
    assert.equal(binaryNameOf('[package]\nname = "p"\n[[bin]]\nname = "p"\n[[bin]]\nname = "tool"\n'), 'p')
    assert.equal(binaryNameOf('[package]\nname = "p"\n[[bin]]\nname = "a"\n[[bin]]\nname = "b"\n'), undefined)
  })

  it('names nothing it cannot pass to a shell as one safe word', () => {
    assert.equal(binaryNameOf('[dependencies]\nname = "x"\n'), undefined)
    assert.equal(binaryNameOf('[package]\nname = "a b"\n'), undefined)
    assert.equal(binaryNameOf('[package]\nname = "$(rm -rf ~)"\n'), undefined)
    assert.equal(binaryNameOf('[package]\nname = "../../bin/sh"\n'), undefined)
    assert.equal(binaryNameOf(''), undefined)
  })
})

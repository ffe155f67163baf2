/**
 * The templates as shipped: which files each writes, that what it writes is valid for the engine
 * (config.yaml), the supervisor (svc.worker.yaml) and the compilers (TypeScript, JavaScript).
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { parse } from 'yaml'
import { loadConfig } from '../../runtime/config/loader.ts'
import { CliError, ExitCode } from '../lib/errors.ts'
import { loadManifest } from '../supervisor/manifest.ts'
import { copyTemplate, mergeLines } from './scaffold.ts'
import { formatTemplateTable, outputName, requireTemplate, templateFiles, TEMPLATES } from './templates.ts'
import type { PackageManager } from './types.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-templates-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

let count = 0
function scaffold(template: string, name = 'demo', packageManager: PackageManager = 'npm'): { dir: string; files: string[] } {
  const dir = join(scratch, `p${count++}`)
  const files = copyTemplate({ name, template: requireTemplate(template), directory: dir, cliRoot: ROOT, cliVersion: '0.1.0', packageManager })
  return { dir, files }
}

const PROJECT_FILES = ['.gitignore', 'README.md', 'config.yaml', 'worker-compose.yaml']
const TS_WORKER = (dir: string) => [`${dir}package.json`, `${dir}src/index.ts`, `${dir}svc.worker.yaml`, `${dir}tsconfig.json`]
/** Templates depending on svc-sdk get its tarball (issue 11). */
const SDK_TARBALL = 'vendor/svc-sdk-0.1.0.tgz'

describe('template catalogue (cli.md §4.1)', () => {
  it('lists bare, quickstart, starter, link-shortener, browser, python, rust and worker, with one-line descriptions', () => {
    assert.deepEqual(
      TEMPLATES.map((t) => t.name),
      ['bare', 'quickstart', 'starter', 'link-shortener', 'browser', 'python', 'rust', 'worker'],
    )
    const table = formatTemplateTable().trimEnd().split('\n')
    assert.match(table[0]!, /^TEMPLATE\s+DESCRIPTION$/)
    for (const t of TEMPLATES) {
      assert.ok(!t.description.includes('\n'))
      assert.ok(table.some((line) => line.startsWith(`${t.name} `) && line.endsWith(t.description)), t.name)
    }
    const column = table[0]!.indexOf('DESCRIPTION')
    for (const t of TEMPLATES) assert.ok(table.some((line) => line.indexOf(t.description) === column), `${t.name} aligned`)
  })

  it('refuses an unknown template with exit 2, listing the available ones', () => {
    assert.throws(
      () => requireTemplate('starterr'),
      (err: unknown) =>
        err instanceof CliError &&
        err.exitCode === ExitCode.Usage &&
        err.code === 'UNKNOWN_TEMPLATE' &&
        err.message === "Unknown template 'starterr'. Available templates: bare, quickstart, starter, link-shortener, browser, python, rust, worker",
    )
  })

  it('renames files npm would drop or rename when publishing', () => {
    assert.equal(outputName('_gitignore'), '.gitignore')
    assert.equal(outputName('_npmrc'), '.npmrc')
    assert.equal(outputName('__init__.py'), '__init__.py')
    assert.equal(outputName('index.ts'), 'index.ts')
  })
})

describe('files written per template', () => {
  it('bare: the project files of cli.md §2', () => {
    assert.deepEqual(scaffold('bare').files, PROJECT_FILES)
  })

  it('quickstart: bare plus math-worker and caller-worker', () => {
    assert.deepEqual(scaffold('quickstart').files, [...PROJECT_FILES, SDK_TARBALL, ...TS_WORKER('workers/caller-worker/'), ...TS_WORKER('workers/math-worker/')].sort())
  })

  it('python: bare, the quickstart\'s caller-worker, a Python math-worker and the SDK wheels its requirements.txt names by relative path (issue 18)', () => {
    const { dir, files } = scaffold('python')
    const wheels = ['vendor/python/svc_helpers-0.1.0-py3-none-any.whl', 'vendor/python/svc_sdk-0.1.0-py3-none-any.whl']
    const python = ['workers/math-worker/main.py', 'workers/math-worker/requirements.txt', 'workers/math-worker/svc.worker.yaml']
    assert.deepEqual(files, [...PROJECT_FILES, SDK_TARBALL, ...wheels, ...TS_WORKER('workers/caller-worker/'), ...python].sort())
    const requirements = readFileSync(join(dir, 'workers', 'math-worker', 'requirements.txt'), 'utf8').split('\n').filter((l) => l && !l.startsWith('#'))
    assert.deepEqual(requirements, wheels.map((w) => `../../${w}`))
    const manifest = loadManifest(join(dir, 'workers', 'math-worker'))
    assert.equal(manifest.runtime.kind, 'python')
    assert.equal(manifest.scripts.start, '.venv/bin/python main.py')
    assert.equal(manifest.scripts.install, 'python3 -m venv .venv && .venv/bin/pip install -r requirements.txt')
  })

  it('rust: bare, the quickstart\'s caller-worker, a Rust math-worker with its Cargo.lock, and the SDK crates its Cargo.toml names by path (issue 18)', () => {
    const { dir, files } = scaffold('rust')
    const rust = ['workers/math-worker/Cargo.lock', 'workers/math-worker/Cargo.toml', 'workers/math-worker/src/main.rs', 'workers/math-worker/svc.worker.yaml']
    assert.deepEqual(files.filter((f) => !f.startsWith('vendor/rust/')), [...PROJECT_FILES, SDK_TARBALL, ...TS_WORKER('workers/caller-worker/'), ...rust].sort())
    for (const file of ['Cargo.toml', 'svc-sdk/Cargo.toml', 'svc-sdk/src/lib.rs', 'svc-helpers/Cargo.toml', 'svc-helpers/src/lib.rs']) assert.ok(files.includes(`vendor/rust/${file}`), file)
    assert.ok(!files.some((f) => /^vendor\/rust\/(target|svc-sdk\/tests|svc-sdk\/examples|Cargo\.lock)/.test(f)), 'no tests, examples, build output or lock file of the SDK')
    const cargo = readFileSync(join(dir, 'workers', 'math-worker', 'Cargo.toml'), 'utf8')
    assert.match(cargo, /^svc-sdk = \{ path = "\.\.\/\.\.\/vendor\/rust\/svc-sdk" \}$/m)
    const manifest = loadManifest(join(dir, 'workers', 'math-worker'))
    assert.equal(manifest.runtime.kind, 'rust')
    assert.equal(manifest.scripts.build, 'cargo build --release')
    assert.equal(manifest.scripts.start, '"${CARGO_TARGET_DIR:-target}/release/math-worker"')
  })

  it('link-shortener: bare plus workers/links', () => {
    assert.deepEqual(scaffold('link-shortener').files, [
      ...PROJECT_FILES,
      'workers/links/package.json',
      'workers/links/src/links.js',
      'workers/links/src/worker.js',
      'workers/links/svc.worker.yaml',
      SDK_TARBALL,
    ].sort())
  })

  it('browser: bare plus a TypeScript worker at the root, the page, and the browser SDK bundle it loads', () => {
    const { dir, files } = scaffold('browser')
    assert.deepEqual(files, [...PROJECT_FILES, ...TS_WORKER(''), 'public/index.html', 'public/svc-browser-sdk.js', SDK_TARBALL].sort())
    // The bundle the checkout builds, byte for byte: one ES module with no import left.
    const bundle = readFileSync(join(dir, 'public/svc-browser-sdk.js'), 'utf8')
    assert.equal(bundle, readFileSync(join(ROOT, 'packages/browser-sdk/dist/svc-browser-sdk.js'), 'utf8'))
    assert.match(bundle, /export\{[^}]*registerWorker/)
    const page = readFileSync(join(dir, 'public/index.html'), 'utf8')
    assert.match(page, /<title>demo<\/title>/)
    assert.match(page, /import \{ registerWorker \} from '\/svc-browser-sdk\.js'/)
  })

  it('worker: one worker directory, no project files', () => {
    assert.deepEqual(scaffold('worker', 'billing').files, [...TS_WORKER(''), SDK_TARBALL].sort())
  })

  it('never copies node_modules, .svc or lockfiles left in a template directory; a template replaces its base\'s files', () => {
    const cliRoot = join(scratch, 'cli')
    const write = (path: string, text = '') => {
      mkdirSync(join(cliRoot, 'templates', path, '..'), { recursive: true })
      writeFileSync(join(cliRoot, 'templates', path), text)
    }
    write('bare/README.md', 'base')
    write('bare/_gitignore')
    write('quickstart/README.md', 'own')
    write('quickstart/workers/w/package.json', '{}')
    write('quickstart/workers/w/package-lock.json', '{}')
    write('quickstart/workers/w/node_modules/x/index.js')
    write('quickstart/.svc/data/state.db')
    const files = templateFiles(cliRoot, requireTemplate('quickstart'))
    assert.deepEqual(
      files.map((f) => f.path),
      ['.gitignore', 'README.md', 'workers/w/package.json'],
    )
    assert.equal(readFileSync(files[1]!.source, 'utf8'), 'own')
  })

  it('leaves no placeholder unsubstituted', () => {
    for (const t of TEMPLATES) {
      const { dir, files } = scaffold(t.name)
      for (const file of files) {
        const text = readFileSync(join(dir, file), 'utf8')
        assert.doesNotMatch(text, /\{\{\s*(project_name|worker_name|svc_version)\s*\}\}/, `${t.name}: ${file}`)
      }
    }
  })
})

describe('what the templates write is valid', () => {
  it('bare: config.yaml is §2.1 without local workers; compose file has containers: {}; .gitignore has the §2 list', () => {
    const { dir } = scaffold('bare')
    const config = loadConfig('config.yaml', { cwd: dir, env: {} })
    assert.deepEqual(config.local_workers, [])
    assert.equal(config.listeners[0]!.host, '127.0.0.1')
    assert.equal(config.listeners[0]!.port, 49134)
    assert.deepEqual(config.builtins['svc-http']!.config, { port: 3111 })
    assert.deepEqual(config.builtins['svc-http']!.raw_config, { port: '${HTTP_PORT:3111}' })
    assert.equal(config.builtins['svc-cron']!.enabled, false)
    assert.deepEqual(loadConfig('config.yaml', { cwd: dir, env: { HTTP_PORT: '0' } }).builtins['svc-http']!.config, { port: 0 })
    assert.deepEqual(parse(readFileSync(join(dir, 'worker-compose.yaml'), 'utf8')), { containers: {} })
    const ignored = readFileSync(join(dir, '.gitignore'), 'utf8').split('\n')
    for (const entry of ['.svc/data/', '.svc/logs/', '.svc/state/', '.svc/compose/', 'node_modules/', '.venv/', '__pycache__/', 'target/', 'dist/']) {
      assert.ok(ignored.includes(entry), entry)
    }
    assert.match(readFileSync(join(dir, 'README.md'), 'utf8'), /^# demo\n/)
  })

  it('quickstart and link-shortener: config.yaml lists their workers by worker_path', () => {
    const quick = scaffold('quickstart')
    assert.deepEqual(
      loadConfig('config.yaml', { cwd: quick.dir, env: {} }).local_workers.map((w) => [w.name, w.worker_path]),
      [
        ['math-worker', join(quick.dir, 'workers/math-worker')],
        ['caller-worker', join(quick.dir, 'workers/caller-worker')],
      ],
    )
    const links = scaffold('link-shortener')
    assert.deepEqual(
      loadConfig('config.yaml', { cwd: links.dir, env: {} }).local_workers.map((w) => [w.name, w.worker_path]),
      [['links', join(links.dir, 'workers/links')]],
    )
  })

  it('browser: a trusted listener, an rbac listener whose auth function the worker registers, and the worker told where pages connect', () => {
    const { dir } = scaffold('browser')
    const config = loadConfig('config.yaml', { cwd: dir, env: {} })
    assert.deepEqual(config.listeners.map((l) => [l.host, l.port, l.rbac === undefined]), [['127.0.0.1', 49134, true], ['127.0.0.1', 49135, false]])
    assert.equal(config.listeners[1]!.rbac!.auth_function_id, 'gate::auth')
    assert.deepEqual(config.listeners[1]!.rbac!.expose_functions, ['match("api::*")'])
    assert.deepEqual(config.local_workers.map((w) => [w.name, w.worker_path, w.config]), [['demo', dir, { http_port: '3111', browser_port: '49135', browser_token: '' }]])
    const env = loadConfig('config.yaml', { cwd: dir, env: { BROWSER_PORT: '40001', BROWSER_TOKEN: 't0k', HTTP_PORT: '8080' } })
    assert.equal(env.listeners[1]!.port, 40001)
    assert.deepEqual(env.local_workers[0]!.config, { http_port: '8080', browser_port: '40001', browser_token: 't0k' })
    const source = readFileSync(join(dir, 'src/index.ts'), 'utf8')
    assert.match(source, /'gate::auth'/)
    assert.equal(loadManifest(dir).scripts.start, 'node src/index.ts')
  })

  it('worker manifests load, named after their directory, with inferred scripts', () => {
    const quick = scaffold('quickstart')
    for (const name of ['math-worker', 'caller-worker']) {
      const manifest = loadManifest(join(quick.dir, 'workers', name))
      assert.equal(manifest.name, name)
      assert.deepEqual(manifest.runtime, { kind: 'typescript', package_manager: 'npm', entry: 'src/index.ts' })
      // The templates' tsconfig promises erasable syntax: Node runs the sources itself (one process).
      assert.equal(manifest.scripts.start, 'node src/index.ts')
      assert.equal(manifest.scripts.install, 'npm install')
    }
    const links = loadManifest(join(scaffold('link-shortener').dir, 'workers', 'links'))
    assert.equal(links.name, 'links')
    assert.equal(links.scripts.start, 'node src/worker.js')
    const worker = loadManifest(scaffold('worker', 'billing').dir)
    assert.equal(worker.name, 'billing')
    assert.equal(worker.scripts.start, 'node src/index.ts')
  })

  it('--package-manager goes into the manifests, comments kept', () => {
    const pnpm = scaffold('quickstart', 'demo', 'pnpm')
    const text = readFileSync(join(pnpm.dir, 'workers/math-worker/svc.worker.yaml'), 'utf8')
    assert.match(text, /package_manager: pnpm/)
    assert.equal(loadManifest(join(pnpm.dir, 'workers/math-worker')).scripts.start, 'node src/index.ts')
    assert.equal(loadManifest(scaffold('worker', 'w', 'bun').dir).scripts.start, 'bun run src/index.ts')
    assert.equal(loadManifest(join(scaffold('link-shortener', 'demo', 'yarn').dir, 'workers/links')).scripts.install, 'yarn install')
  })

  it('the worker template registers <name>::hello', () => {
    const { dir } = scaffold('worker', 'billing')
    assert.match(readFileSync(join(dir, 'src/index.ts'), 'utf8'), /'billing::hello'/)
    assert.equal(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).name, 'billing')
  })

  it('TypeScript workers type-check and JavaScript workers parse', () => {
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc')
    const quick = scaffold('quickstart')
    const worker = scaffold('worker', 'billing')
    const links = scaffold('link-shortener')
    const browser = scaffold('browser')
    for (const project of [quick.dir, worker.dir, links.dir, browser.dir]) {
      // Resolve svc-sdk and @types/node from this checkout, as an install would provide them.
      symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'), 'dir')
    }
    for (const dir of [join(quick.dir, 'workers/math-worker'), join(quick.dir, 'workers/caller-worker'), worker.dir, browser.dir]) {
      const run = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' })
      assert.equal(run.status, 0, `${dir}:\n${run.stdout}${run.stderr}`)
    }
    for (const file of ['src/worker.js', 'src/links.js']) {
      const run = spawnSync(process.execPath, ['--check', join(links.dir, 'workers/links', file)], { encoding: 'utf8' })
      assert.equal(run.status, 0, run.stderr)
    }
  })
})

describe('.gitignore in a directory that has one', () => {
  it('appends the missing lines under a # svc heading, once', () => {
    const merged = mergeLines('node_modules/\n.env\n', '# deps\nnode_modules/\ndist/\n.svc/data/\n')
    assert.equal(merged, 'node_modules/\n.env\n\n# svc\ndist/\n.svc/data/\n')
    assert.equal(mergeLines(merged, '# deps\nnode_modules/\ndist/\n.svc/data/\n'), merged)
    assert.equal(mergeLines('', 'dist/\n'), '# svc\ndist/\n')
  })

  it('keeps the user\'s own lines when scaffolding over it', () => {
    const dir = join(scratch, 'with-gitignore')
    mkdirSync(dir)
    writeFileSync(join(dir, '.gitignore'), '.env\n')
    copyTemplate({ name: 'demo', template: requireTemplate('bare'), directory: dir, cliRoot: ROOT, cliVersion: '0.1.0', packageManager: 'npm' })
    const text = readFileSync(join(dir, '.gitignore'), 'utf8')
    assert.ok(text.startsWith('.env\n'))
    assert.match(text, /^node_modules\/$/m)
  })
})

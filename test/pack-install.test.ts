/**
 * End to end, issue 11 "Install without a checkout": the tarballs of `npm run pack:dist` (reused
 * when a fresh build already made them, else packed here), the CLI installed globally and offline
 * into a temporary prefix, a quickstart project scaffolded by that `svc` outside the checkout and
 * started with free ports, `svc trigger math::add a=1 b=2` → `{"c":3}`; then the project folder is
 * moved, its node_modules deleted, and a plain `npm install` plus `svc` must work again.
 *
 * Slow by nature (one global install, about a minute): one test, one install. Needs a built checkout
 * (`npm run build` or `tsc -b`), npm and tar; the quickstart's own devDependencies (tsx, typescript,
 * @types/node) come from npm's cache or registry, as for any user. Fails, never skips, when a
 * prerequisite is missing.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { packDist } from '../src/project/bundle.ts'
import { waitFor } from './support/wait.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const PACK_DIR = join(ROOT, 'dist', 'pack')
const CLI_TARBALL = join(PACK_DIR, `svc-${VERSION}.tgz`)
const SDK_TARBALL = join(PACK_DIR, `svc-sdk-${VERSION}.tgz`)

const scratch = mkdtempSync(join(tmpdir(), 'svc-pack-install-'))
const running = new Set<ChildProcess>()
after(() => {
  for (const child of running) killGroup(child)
  rmSync(scratch, { recursive: true, force: true })
})

/** Milliseconds of each phase, printed at the end (the file's budget is about 3 minutes). */
const timings: Record<string, number> = {}
async function timed<T>(phase: string, work: () => T | Promise<T>): Promise<T> {
  const start = Date.now()
  try {
    return await work()
  } finally {
    timings[phase] = Date.now() - start
  }
}

/** Newest modification time (ms) of the files under `paths` (missing paths count 0). */
function newest(paths: string[]): number {
  let latest = 0
  const visit = (path: string): void => {
    if (!existsSync(path)) return
    const stat = statSync(path)
    if (stat.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry))
    else latest = Math.max(latest, stat.mtimeMs)
  }
  for (const path of paths) visit(path)
  return latest
}

/** Fails with what to do when something the test needs is not there. */
function checkPrerequisites(): void {
  for (const tool of ['npm', 'tar']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' })
    } catch {
      assert.fail(`${tool} is needed to pack and install svc (not found on PATH)`)
    }
  }
  for (const built of ['dist/src/commands', 'dist/runtime', 'packages/sdk/dist', 'packages/protocol/dist', 'packages/helpers/dist', 'packages/console/dist', 'packages/browser-sdk/dist/svc-browser-sdk.js']) {
    assert.ok(existsSync(join(ROOT, built)), `${built} is missing: build the checkout first (npm run build)`)
  }
  assert.ok(existsSync(join(ROOT, 'node_modules', '@oclif', 'core')), 'node_modules is missing: run npm ci first')
}

/**
 * The tarballs of `npm run pack:dist`: reused when both exist, the CLI tarball carries the vendored
 * SDK and the browser SDK bundle, and no built file, template or package.json is newer; else packed
 * now (about 25 s).
 */
function tarballs(): { packed: boolean } {
  const sources = [
    'bin',
    'dist/src',
    'dist/runtime',
    'templates',
    'package.json',
    'scripts/bundle-cli.ts',
    ...['sdk', 'helpers', 'protocol', 'console', 'browser-sdk'].flatMap((p) => [`packages/${p}/dist`, `packages/${p}/package.json`]),
    ...['sdk-python', 'helpers-python'].flatMap((p) => [`packages/${p}/src`, `packages/${p}/pyproject.toml`]),
    'packages/sdk-rust/Cargo.toml',
    'packages/sdk-rust/svc-sdk/src',
    'packages/sdk-rust/svc-helpers/src',
  ]
  if (existsSync(CLI_TARBALL) && existsSync(SDK_TARBALL)) {
    const fresh = Math.min(statSync(CLI_TARBALL).mtimeMs, statSync(SDK_TARBALL).mtimeMs) >= newest(sources.map((s) => join(ROOT, s)))
    const listing = execFileSync('tar', ['-tzf', CLI_TARBALL], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    const vendored = [`package/vendor/svc-sdk-${VERSION}.tgz`, 'package/vendor/svc-browser-sdk.js', 'package/vendor/python/', 'package/vendor/rust/svc-sdk/src/lib.rs', 'package/oclif.manifest.json']
    if (fresh && vendored.every((entry) => listing.includes(entry))) return { packed: false }
  }
  packDist(ROOT, PACK_DIR)
  return { packed: true }
}

/** The environment of a user whose PATH has this Node (≥ 22.13) and the prefix's `svc` first. */
function userEnv(prefix: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(env)) if (/^(SVC_|npm_config_|npm_package_|npm_lifecycle_)/i.test(key) || key === 'INIT_CWD') delete env[key]
  for (const key of ['HTTP_PORT', 'STREAM_PORT', 'DEBUG', 'CI', 'NODE_OPTIONS']) delete env[key]
  env.PATH = [dirname(process.execPath), join(prefix, 'bin'), env.PATH ?? ''].join(delimiter)
  // Take what npm has cached before asking the registry (the quickstart's devDependencies).
  env.npm_config_prefer_offline = 'true'
  env.npm_config_audit = 'false'
  env.npm_config_fund = 'false'
  return env
}

/** Runs a command to completion, resolved with its stdout; rejected with all its output when it exits non-zero. */
function run(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let output = ''
    child.stdout.on('data', (d) => {
      stdout += d
      output += d
    })
    child.stderr.on('data', (d) => (output += d))
    child.on('error', (err) => reject(new Error(`${file} could not be run: ${err.message}`)))
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout)
      else reject(new Error(`${[file, ...args].join(' ')} in ${cwd} exited with ${code ?? signal}:\n${output}`))
    })
  })
}

/** Sets the listener, svc-http and svc-stream ports of a scaffolded config.yaml to 0 (free ports). */
function useFreePorts(project: string): void {
  const file = join(project, 'config.yaml')
  const text = readFileSync(file, 'utf8')
  let patched = text.replace(/^(\s+port:) 49134$/m, '$1 0').replace('${HTTP_PORT:3111}', '0').replace('${STREAM_PORT:3112}', '0')
  assert.ok(!/\b(49134|3111)\b/.test(patched.replace(/#.*$/gm, '')), 'the quickstart config.yaml no longer has the ports this test frees')
  // svc-stream runs on its default port (3112) when config.yaml does not list it.
  if (!/^\s+- name: svc-stream$/m.test(patched)) patched += '\n  - name: svc-stream\n    config:\n      port: 0\n'
  writeFileSync(file, patched)
}

/** `svc --json` in `project` (its own process group), resolved with the engine URL once ready. */
async function startSvc(project: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; engineUrl: string; output: string[] }> {
  const child = spawn('svc', ['--json'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  running.add(child)
  const output: string[] = []
  child.stderr!.on('data', (d) => output.push(String(d)))
  const engineUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc was not ready within 60 s:\n${output.join('\n')}`)), 60_000)
    createInterface({ input: child.stdout! }).on('line', (line) => {
      output.push(line)
      try {
        const event = JSON.parse(line) as { event?: string; engine_url?: string }
        if (event.event === 'engine_ready') {
          clearTimeout(timer)
          resolve(event.engine_url!)
        }
      } catch {
        /* not JSON */
      }
    })
    child.once('error', (err) => reject(new Error(`svc could not be run: ${err.message}`)))
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`svc exited with ${code} before it was ready:\n${output.join('\n')}`))
    })
  })
  return { child, engineUrl, output }
}

/** SIGTERM to svc's process group (svc and its workers), SIGKILL after 10 s. */
async function stopSvc(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    process.kill(-child.pid!, 'SIGTERM')
    const timer = setTimeout(() => killGroup(child), 10_000)
    await exited
    clearTimeout(timer)
  }
  running.delete(child)
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch {
    /* already gone */
  }
}

/** `svc trigger math::add a=1 b=2` until the math worker has registered (at most 60 s). */
async function addOneAndTwo(cwd: string, engineUrl: string, env: NodeJS.ProcessEnv, output: string[]): Promise<unknown> {
  const answer = await waitFor(
    async () => ({ value: JSON.parse(await run('svc', ['trigger', 'math::add', 'a=1', 'b=2', '--engine', engineUrl], cwd, env)) as unknown }),
    () => `math::add to answer; svc output:\n${output.join('\n')}`,
    60_000,
    500,
  )
  return answer.value
}

it('the packed CLI installs offline, scaffolds a project that runs, and the project survives a move (issue 11)', { timeout: 240_000 }, async () => {
  checkPrerequisites()
  const { packed } = await timed('tarballs', tarballs)

  const prefix = join(scratch, 'prefix')
  const env = userEnv(prefix)
  await timed('global install', () => run('npm', ['i', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', CLI_TARBALL], scratch, env))
  assert.ok(existsSync(join(prefix, 'bin', 'svc')), `npm i -g put no svc in ${join(prefix, 'bin')}`)
  const installed = join(prefix, 'lib', 'node_modules', 'svc')
  assert.ok(existsSync(join(installed, 'vendor', `svc-sdk-${VERSION}.tgz`)), 'the installed CLI ships the svc-sdk tarball')
  assert.ok(existsSync(join(installed, 'vendor', 'svc-browser-sdk.js')), 'the installed CLI ships the browser SDK bundle (the browser template serves it)')
  assert.ok(!existsSync(join(installed, 'packages')), 'the installed CLI is not a checkout')
  // The command manifest lists every compiled command, so none is loaded just to list them (issue 20).
  const commandManifest = JSON.parse(readFileSync(join(installed, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, unknown>; version: string }
  const compiled = (dir: string, prefix = ''): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? compiled(join(dir, e.name), `${prefix}${e.name}:`) : e.name === 'index.js' ? [prefix.slice(0, -1)] : e.name.endsWith('.js') ? [`${prefix}${e.name.slice(0, -3)}`] : []))
  assert.deepEqual(Object.keys(commandManifest.commands).sort(), compiled(join(installed, 'dist', 'src', 'commands')).sort())
  assert.equal(commandManifest.version, VERSION)
  assert.match(await run('svc', ['--version'], scratch, env), new RegExp(`^svc/${VERSION.replace(/\./g, '\\.')} `))
  // Issue 20 "Install": at most 60 MB on disk; each package once (svc-sdk's dependencies are the
  // CLI's, not a second copy nested under it), no TypeScript declarations or dependencies' source maps; the
  // optional packages are not installed with it (they install on demand).
  const bytes = Number(execFileSync('du', ['-sb', installed], { encoding: 'utf8' }).split('\t')[0])
  assert.ok(bytes <= 60e6, `the installed CLI takes ${bytes} bytes, over 60 MB`)
  assert.ok(!existsSync(join(installed, 'node_modules', 'svc-sdk', 'node_modules')), 'svc-sdk carries no second copy of its dependencies')
  for (const file of ['dist/src/commands/trigger.d.ts', 'node_modules/svc-sdk/dist/index.d.ts', 'node_modules/svc-sdk/dist/index.js.map']) assert.ok(!existsSync(join(installed, file)), `${file} is not shipped`)
  // dist/ is the bundle (scripts/bundle-cli.ts, issue 20 "Engine start"): the commands with their
  // shared chunks, not the compiled tree, and its source maps for the stacks of --debug.
  assert.ok(existsSync(join(installed, 'dist', 'chunks')) && !existsSync(join(installed, 'dist', 'runtime')), 'the installed CLI runs the bundle')
  assert.ok(existsSync(join(installed, 'dist', 'src', 'commands', 'trigger.js.map')), 'the bundle ships its source maps')
  for (const optional of ['pg', 'mysql2', 'ioredis', 'nats', '@grpc/grpc-js', '@opentelemetry/exporter-trace-otlp-proto']) {
    assert.ok(!existsSync(join(installed, 'node_modules', optional)), `${optional} is not installed with svc`)
  }

  const home = join(scratch, 'home')
  mkdirSync(home)
  // The python and rust templates copy the SDKs the installed CLI ships (issue 18): no checkout to build them from.
  await timed('python and rust templates', async () => {
    for (const template of ['python', 'rust']) await run('svc', ['project', 'init', template, '--template', template, '--no-install'], home, env)
  })
  for (const wheel of ['svc_helpers', 'svc_sdk']) {
    const name = `${wheel}-0.1.0-py3-none-any.whl`
    assert.ok(existsSync(join(installed, 'vendor', 'python', name)), `the installed CLI ships ${name}`)
    assert.deepEqual(readFileSync(join(home, 'python', 'vendor', 'python', name)), readFileSync(join(installed, 'vendor', 'python', name)))
    assert.match(readFileSync(join(home, 'python', 'workers', 'math-worker', 'requirements.txt'), 'utf8'), new RegExp(`^\\.\\./\\.\\./vendor/python/${name.replace(/\./g, '\\.')}$`, 'm'))
  }
  for (const file of ['Cargo.toml', 'svc-sdk/Cargo.toml', 'svc-sdk/src/lib.rs', 'svc-helpers/Cargo.toml', 'svc-helpers/src/lib.rs']) {
    assert.ok(existsSync(join(installed, 'vendor', 'rust', ...file.split('/'))), `the installed CLI ships the Rust SDK's ${file}`)
    assert.ok(existsSync(join(home, 'rust', 'vendor', 'rust', ...file.split('/'))), `the rust template copies the Rust SDK's ${file}`)
  }
  assert.ok(existsSync(join(home, 'rust', 'workers', 'math-worker', 'Cargo.lock')))
  // Started by an old Node first on PATH (the system's Node 20 here), svc runs with the newer Node
  // it finds further on PATH (bin/run.js, issue 20 "Install").
  const oldNode = ['/usr/bin', '/bin'].find((dir) => existsSync(join(dir, 'node')) && !/^v(2[3-9]|22\.(1[3-9]|[2-9]\d))/.test(execFileSync(join(dir, 'node'), ['-v'], { encoding: 'utf8' })))
  if (oldNode !== undefined) {
    const oldEnv = { ...env, PATH: [oldNode, join(prefix, 'bin'), dirname(process.execPath), env.PATH ?? ''].join(delimiter) }
    await timed('old node', async () => {
      assert.match(await run('svc', ['--version'], scratch, oldEnv), new RegExp(`^svc/${VERSION.replace(/\./g, '\\.')} .* node-${process.version}`))
      await run('svc', ['project', 'init', 'old-node', '--template', 'quickstart', '--no-install', '--ports', 'auto'], home, oldEnv)
    })
    assert.ok(existsSync(join(home, 'old-node', 'config.yaml')), 'svc project init ran when started by an old Node')
  }
  await timed('project init', () => run('svc', ['project', 'init', 'demo', '--template', 'quickstart'], home, env))
  // The browser template's page loads the SDK bundle the installed CLI ships (no checkout to build it from).
  await timed('browser template', () => run('svc', ['project', 'init', 'web', '--template', 'browser', '--no-install'], home, env))
  assert.equal(readFileSync(join(home, 'web', 'public', 'svc-browser-sdk.js'), 'utf8'), readFileSync(join(installed, 'vendor', 'svc-browser-sdk.js'), 'utf8'))
  const first = join(home, 'demo')
  for (const worker of ['math-worker', 'caller-worker']) {
    const manifest = readFileSync(join(first, 'workers', worker, 'package.json'), 'utf8')
    assert.equal((JSON.parse(manifest) as { dependencies: Record<string, string> }).dependencies['svc-sdk'], `file:../../vendor/svc-sdk-${VERSION}.tgz`)
    const lock = readFileSync(join(first, 'workers', worker, 'package-lock.json'), 'utf8')
    for (const text of [manifest, lock]) assert.ok(!text.includes(ROOT.replace(/\/$/, '')) && !text.includes(scratch), `${worker}: no absolute path in package.json or package-lock.json`)
  }
  useFreePorts(first)

  const started = await timed('svc start', () => startSvc(first, env))
  assert.deepEqual(await timed('trigger', () => addOneAndTwo(first, started.engineUrl, env, started.output)), { c: 3 })
  await stopSvc(started.child)

  // Moved (and its installed dependencies gone, as in a fresh clone): a plain npm install works.
  const moved = join(scratch, 'elsewhere', 'demo-moved')
  mkdirSync(dirname(moved))
  renameSync(first, moved)
  await timed('npm install after move', async () => {
    for (const worker of ['math-worker', 'caller-worker']) {
      const dir = join(moved, 'workers', worker)
      rmSync(join(dir, 'node_modules'), { recursive: true, force: true })
      await run('npm', ['install'], dir, env)
      assert.ok(existsSync(join(dir, 'node_modules', 'svc-sdk', 'package.json')), `${worker}: svc-sdk installed`)
    }
  })
  const again = await timed('svc start after move', () => startSvc(moved, env))
  assert.deepEqual(await timed('trigger after move', () => addOneAndTwo(moved, again.engineUrl, env, again.output)), { c: 3 })
  await stopSvc(again.child)

  // A PostgreSQL database without pg installed: the engine runs, and says which package to add and how (DEPENDENCY_MISSING).
  const pgProject = join(scratch, 'pg-project')
  mkdirSync(pgProject)
  writeFileSync(join(pgProject, 'config.yaml'), ['workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', '  - name: database', '    config:', '      databases:', '        primary:', '          url: postgres://app@127.0.0.1:1/app', ''].join('\n'))
  const pg = await timed('missing pg', () => startSvc(pgProject, env))
  type LogEvent = { data?: { code?: string; message?: string } }
  const parse = (line: string): LogEvent => {
    try {
      return JSON.parse(line) as LogEvent
    } catch {
      return {}
    }
  }
  const logged = (): LogEvent | undefined => pg.output.map(parse).find((event) => event?.data?.code === 'DEPENDENCY_MISSING')
  // Resolves with the event, or with nothing once svc exited (which the next line reports).
  const missing = await waitFor(() => logged() ?? (pg.child.exitCode !== null && ({} as LogEvent)), () => `DEPENDENCY_MISSING logged:\n${pg.output.join('\n')}`, 30_000, 100)
  assert.equal(pg.child.exitCode, null, `svc keeps running:\n${pg.output.join('\n')}`)
  assert.match(missing.data!.message!, /the package pg, needed for PostgreSQL databases, is not installed; add it where svc is installed: npm i -g pg@\S+ pg-cursor@\S+$/)
  await stopSvc(pg.child)

  console.log(`# ${packed ? 'packed' : 'reused'} tarballs; ms per phase: ${JSON.stringify(timings)}`)
})

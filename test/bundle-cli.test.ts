/**
 * The bundled CLI (scripts/bundle-cli.ts, issue 20 "Engine start"), as `npm run pack:dist` ships it
 * for `dist/`: a staged copy of the CLI (bin/, package.json, the command manifest, the bundle as
 * dist/, node_modules linked to the checkout's) starts an engine with a SQLite database, serves
 * `svc trigger` calls through it — the SQLite thread is a file of its own beside the bundle's
 * chunks — and loads its code from the bundle only: not the compiled tree it was made from, not the
 * console's backend (with svc-sdk and OpenTelemetry), no driver it does not use. Every module the
 * `svc` process loads is recorded by a load hook (`module.registerHooks`) preloaded with `--import`.
 *
 * Needs a built checkout (`tsc -b`). The packed CLI's own end-to-end test is pack-install.test.ts.
 */
import assert from 'node:assert/strict'
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, test } from 'node:test'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)

const HOOK = `
import { registerHooks } from 'node:module'
import { appendFileSync } from 'node:fs'
registerHooks({ load(url, context, next) { appendFileSync(process.env.SVC_TEST_MODULE_LOG, url + '\\n'); return next(url, context) } })
`

const scratch = mkdtempSync(join(tmpdir(), 'svc-bundle-'))
const running = new Set<ChildProcess>()
after(() => {
  for (const child of running) child.kill('SIGKILL')
  rmSync(scratch, { recursive: true, force: true })
})

/** The CLI staged as the tarball holds it, with the bundle as its dist/. */
async function stageCli(): Promise<string> {
  const stage = join(scratch, 'svc')
  mkdirSync(stage)
  for (const entry of ['bin', 'package.json']) cpSync(join(ROOT, entry), join(stage, entry), { recursive: true })
  symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'), 'dir')
  await run(process.execPath, [join(ROOT, 'scripts', 'bundle-cli.ts'), join(stage, 'dist')])
  await run(process.execPath, [join(ROOT, 'scripts', 'oclif-manifest.ts'), ROOT, join(stage, 'oclif.manifest.json')])
  return stage
}

/** Starts `svc --json` in `project`; resolves with its engine URL once `engine_ready` is printed. */
async function startSvc(stage: string, project: string, env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; engineUrl: string }> {
  const child = spawn(process.execPath, [join(stage, 'bin', 'run.js'), '--json', '--no-workers'], { cwd: project, env, stdio: ['ignore', 'pipe', 'pipe'] })
  running.add(child)
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  for await (const line of createInterface({ input: child.stdout! })) {
    let event: { event?: string; engine_url?: string }
    try {
      event = JSON.parse(line) as typeof event
    } catch {
      continue
    }
    if (event.event === 'engine_ready' && event.engine_url !== undefined) {
      child.stdout!.resume()
      return { child, engineUrl: event.engine_url }
    }
  }
  throw new Error(`svc exited before it was ready:\n${stderr}`)
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGINT')
    await exited
  }
  running.delete(child)
}

test('the bundled svc starts an engine, serves calls (SQLite included) and loads only the bundle', { timeout: 180_000 }, async () => {
  assert.ok(existsSync(join(ROOT, 'dist', 'src', 'commands')), 'build the checkout first (tsc -b)')
  const stage = await stageCli()
  assert.ok(existsSync(join(stage, 'dist', 'chunks', 'thread.js')), 'the SQLite thread is beside the chunks')
  const bundled = readdirSync(join(stage, 'dist'), { recursive: true }).filter((file) => String(file).endsWith('.js'))
  assert.ok(bundled.length < 200, `the bundle has ${bundled.length} files`)
  // One copy of ws, from node_modules: svc-protocol's WebSocket transport loads it there at every
  // start, and the engine's listener shares it rather than running a bundled second copy.
  const withWs = bundled.filter((file) => readFileSync(join(stage, 'dist', String(file)), 'utf8').includes('node_modules/ws/lib/'))
  assert.deepEqual(withWs, [], 'no copy of ws in the bundle')
  // Each svc-protocol specifier is imported by one bundled file (the chunk of its face), not by
  // every chunk using it: Node resolves a bare specifier once per importing file.
  const importers = new Map<string, number>()
  for (const file of bundled) {
    for (const [, specifier] of readFileSync(join(stage, 'dist', String(file)), 'utf8').matchAll(/from "(svc-protocol(?:\/[^"]*)?)"/g)) importers.set(specifier!, (importers.get(specifier!) ?? 0) + 1)
  }
  assert.ok(importers.get('svc-protocol/errors'), 'the bundle imports svc-protocol/errors')
  for (const [specifier, count] of importers) assert.equal(count, 1, `${specifier} imported by ${count} bundled files`)

  // Every command module of the bundle loads (a module that finds a file next to itself, such as
  // svc-sdk's ../package.json, would throw here when bundled into dist/chunks).
  const commands = readdirSync(join(stage, 'dist', 'src', 'commands'), { recursive: true }).map(String).filter((file) => file.endsWith('.js'))
  assert.ok(commands.includes('compose/index.js') && commands.includes('start.js'), commands.join(', '))
  const importAll = commands.map((file) => `await import(${JSON.stringify(pathToFileURL(join(stage, 'dist', 'src', 'commands', file)).href)})`).join('; ')
  await run(process.execPath, ['--input-type=module', '-e', importAll], { cwd: scratch })

  const project = join(scratch, 'project')
  mkdirSync(project)
  writeFileSync(
    join(project, 'config.yaml'),
    [
      'workers:',
      '  - name: svc-worker-manager',
      '    config: { port: 0 }',
      '  - name: svc-http',
      '    config: { port: 0 }',
      '  - name: svc-stream',
      '    config: { port: 0 }',
      '  - name: database',
      '    config:',
      '      databases:',
      '        primary: { url: "sqlite::memory:" }',
      '',
    ].join('\n'),
  )
  const log = join(scratch, 'modules.txt')
  writeFileSync(log, '')
  writeFileSync(join(scratch, 'hook.mjs'), HOOK)
  const home = join(scratch, 'home')
  mkdirSync(home)
  const env = { ...process.env, HOME: home, XDG_CACHE_HOME: join(home, '.cache'), SVC_LOG_LEVEL: 'warn', NODE_OPTIONS: '' }
  const { child, engineUrl } = await startSvc(stage, project, { ...env, SVC_TEST_MODULE_LOG: log, NODE_OPTIONS: `--import ${pathToFileURL(join(scratch, 'hook.mjs')).href}` })
  try {
    const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean)

    const trigger = async (functionId: string, data: unknown): Promise<unknown> => {
      const { stdout } = await run(process.execPath, [join(stage, 'bin', 'run.js'), 'trigger', functionId, '--engine', engineUrl, '-d', JSON.stringify(data), '--json'], { cwd: project, env })
      return (JSON.parse(stdout) as { result: unknown }).result
    }
    await trigger('database::execute', { sql: 'CREATE TABLE notes (body TEXT)' })
    await trigger('database::execute', { sql: 'INSERT INTO notes (body) VALUES (?)', params: ['from the bundle'] })
    const result = (await trigger('database::query', { sql: 'SELECT body FROM notes' })) as { rows: unknown[] }
    assert.deepEqual(result.rows, [{ body: 'from the bundle' }])

    const stageUrl = pathToFileURL(stage).href
    const ours = loaded.filter((url) => url.startsWith(`${stageUrl}/`))
    assert.ok(ours.some((url) => url.includes('/dist/src/commands/start.js')), 'the hook saw svc load the bundle')
    const unbundled = loaded.filter((url) => url.startsWith(pathToFileURL(join(ROOT, 'dist')).href) || url.includes('/dist/runtime/'))
    assert.deepEqual(unbundled, [], 'svc loads the bundle, not the compiled tree')
    // The console's backend (its server, svc-sdk, OpenTelemetry) and unused drivers are not loaded.
    for (const part of ['/packages/console/dist/server/server.js', '/packages/sdk/', '/node_modules/@opentelemetry/api/', '/node_modules/pg/', '/node_modules/mysql2/', '/node_modules/ioredis/', '/node_modules/nats/', '/node_modules/@inquirer/']) {
      assert.deepEqual(loaded.filter((url) => url.includes(part)), [], `${part} was loaded`)
    }
  } finally {
    await stop(child)
  }
  // Node's compile cache went to the user's cache folder (bin/compile-cache.js).
  assert.ok(existsSync(join(home, '.cache', 'svc', 'node-compile-cache')), 'the compile cache is under XDG_CACHE_HOME/svc')
})

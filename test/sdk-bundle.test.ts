/**
 * svc-sdk as a project vendors it (issue 20 "Footprint"): the tarball `svc project init` copies is
 * esbuild's bundle of the package (scripts/bundle-sdk.ts). `import 'svc-sdk'` loads svc-sdk's own
 * files and the OpenTelemetry packages only — no file of svc-protocol, svc-helpers or `ws`, not
 * Node's `tls`/`https` until a `wss://` address needs them, and none of the modules the ES module
 * face of a built-in loads (its built-in imports are reads of `process.getBuiltinModule`, ~1 MiB of
 * a worker's RSS) — every export entry still loads with
 * the same classes, and a worker over it registers and answers calls.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { packSdk } from '../src/project/bundle.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { ROOT } from './support/processes.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-sdk-bundle-'))
const app = join(scratch, 'app')
let engine: TestEngine | undefined

before(() => {
  const tarball = packSdk(ROOT, join(scratch, 'out'))
  const installed = join(app, 'node_modules', 'svc-sdk')
  mkdirSync(installed, { recursive: true })
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'])
  writeFileSync(join(app, 'package.json'), '{ "name": "app", "type": "module", "private": true }\n')
})
after(async () => {
  await engine?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** Runs `source` as an ES module in the app directory; resolves with its stdout's last line as JSON. */
function runInApp(source: string, env: NodeJS.ProcessEnv = {}): Promise<any> {
  const file = join(app, `probe-${Math.random().toString(36).slice(2)}.mjs`)
  writeFileSync(file, source)
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: app, env: { ...process.env, OTEL_ENABLED: 'false', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`probe exited ${code}: ${err}`))
      resolve(JSON.parse(out.trim().split('\n').pop()!))
    })
  })
}

describe('the vendored svc-sdk is one bundle (issue 20)', () => {
  it("import 'svc-sdk' loads none of svc-protocol, svc-helpers or ws, nor tls and https, nor what the ES module faces of Node's built-ins load (worker_threads, fs/promises); every export entry loads with the same classes", async () => {
    const result = await runInApp(`
      import { registerHooks } from 'node:module'
      const loaded = []
      registerHooks({ load(url, context, next) { loaded.push(url); return next(url, context) } })
      const sdk = await import('svc-sdk')
      const builtins = process.moduleLoadList.filter((m) => /^NativeModule (tls|https|_tls_wrap|worker_threads|internal[/]fs[/]promises|internal[/]repl[/]history)$/.test(m))
      const pkg = JSON.parse((await import('node:fs')).readFileSync(new URL('./node_modules/svc-sdk/package.json', import.meta.url), 'utf8'))
      const entries = {}
      for (const key of Object.keys(pkg.exports)) if (key !== './package.json') entries[key] = Object.keys(await import(key === '.' ? 'svc-sdk' : 'svc-sdk/' + key.slice(2))).sort()
      const errors = await import('svc-sdk/errors')
      console.log(JSON.stringify({
        loaded: loaded.filter((url) => url.startsWith('file:')).map((url) => url.slice(url.indexOf('/node_modules/') + 14)),
        builtins,
        entries,
        sameClass: sdk.InvocationError === errors.InvocationError,
      }))
    `)
    const strays = result.loaded.filter((path: string) => /(?:^|\/)(?:svc-protocol|svc-helpers|ws)\//.test(path))
    assert.deepEqual(strays, [], 'files of the bundled packages were loaded')
    assert.ok(result.loaded.some((path: string) => path.startsWith('svc-sdk/dist/')), JSON.stringify(result.loaded))
    assert.deepEqual(result.builtins, [])
    // The same names as the compiled package's entries (packages/sdk/dist) export.
    const compiled: Record<string, string[]> = {}
    for (const entry of Object.keys(result.entries)) {
      const file = join(ROOT, 'packages', 'sdk', 'dist', `${entry === '.' ? 'index' : entry.slice(2)}.js`)
      compiled[entry] = Object.keys(await import(pathToFileURL(file).href)).sort()
    }
    assert.deepEqual(result.entries, compiled)
    assert.ok(Object.keys(compiled).length >= 10, JSON.stringify(Object.keys(compiled)))
    assert.equal(result.sameClass, true)
  })

  it('a worker over the bundled SDK registers and answers; a wss:// address loads tls when it is used', async () => {
    engine = await startTestEngine({ builtins: [] })
    const worker = runInApp(
      `
      import { registerWorker } from 'svc-sdk'
      const svc = registerWorker(process.env.SVC_URL, { workerName: 'bundled' })
      svc.registerFunction('bundled::add', ({ a, b }) => ({ c: a + b }))
      await new Promise((resolve) => svc.addConnectionStateListener((state) => state === 'connected' && resolve()))
      const answer = await svc.trigger({ function_id: 'bundled::add', payload: { a: 2, b: 3 } })
      await svc.shutdown()
      // A TLS address: ws loads tls on first use (the handshake then fails against a plain socket).
      const tls = registerWorker(process.env.SVC_URL.replace('ws://', 'wss://'), { workerName: 'bundled-tls' })
      const states = []
      await new Promise((resolve) => tls.addConnectionStateListener((state) => { states.push(state); if (state === 'reconnecting' || state === 'failed') resolve() }))
      await tls.shutdown()
      console.log(JSON.stringify({ answer, tlsLoaded: process.moduleLoadList.includes('NativeModule tls'), states }))
    `,
      { SVC_URL: engine.url },
    )
    // The call went through the engine to the worker's own function: it registered and answered.
    const result = await worker
    assert.deepEqual(result.answer, { c: 5 })
    assert.equal(result.tlsLoaded, true)
  })
})

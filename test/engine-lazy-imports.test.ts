/**
 * An engine on the default built-ins loads no driver it does not use (issue 20, engine start and
 * memory): no PostgreSQL, MySQL, Redis or NATS client and no prompt library, until config.yaml
 * names one. Every module the `svc` process loads is recorded by a load hook (`module.registerHooks`)
 * preloaded with `--import`.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { spawnUntilReady, stopProcess } from './support/server-process.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const HOOK = `
import { registerHooks } from 'node:module'
import { appendFileSync } from 'node:fs'
registerHooks({ load(url, context, next) { appendFileSync(process.env.SVC_TEST_MODULE_LOG, url + '\\n'); return next(url, context) } })
`

test('svc on the default built-ins loads no pg, mysql2, ioredis, nats or @inquirer/prompts, nor execa (workers are spawned with node:child_process)', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-lazy-'))
  const log = join(dir, 'modules.txt')
  await writeFile(join(dir, 'hook.mjs'), HOOK)
  await writeFile(join(dir, 'modules.txt'), '')
  await writeFile(
    join(dir, 'config.yaml'),
    ['workers:', '  - name: svc-worker-manager', '    config: { port: 0 }', '  - name: svc-http', '    config: { port: 0 }', '  - name: svc-stream', '    config: { port: 0 }', ''].join('\n'),
  )
  const env = { ...process.env, SVC_TEST_MODULE_LOG: log, NODE_OPTIONS: `--import ${join(dir, 'hook.mjs')}`, SVC_LOG_LEVEL: 'warn' }
  const engine = await spawnUntilReady(process.execPath, [join(ROOT, 'bin', 'run.js'), '--json', '--no-workers', '--data-dir', join(dir, '.data')], '"engine_url"', { cwd: dir, env })
  try {
    const loaded = (await readFile(log, 'utf8')).split('\n').filter(Boolean)
    assert.ok(loaded.some((url) => url.includes('/runtime/workers/state/')), 'the hook saw the engine load its built-ins')
    for (const library of ['pg', 'pg-cursor', 'mysql2', 'ioredis', 'nats', '@inquirer/prompts', 'execa']) {
      const found = loaded.filter((url) => url.includes(`/node_modules/${library}/`))
      assert.deepEqual(found, [], `${library} was loaded without being configured`)
    }
  } finally {
    await stopProcess(engine)
    await rm(dir, { recursive: true, force: true })
  }
})

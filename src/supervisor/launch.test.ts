/**
 * What `svc` and `svc compose` launch the same way (src/supervisor/launch.ts): the console's spec
 * and the registration check by listed connections.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { connectedSince, consoleWorkerSpec } from './launch.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-launch-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

describe('consoleWorkerSpec (cli.md §4.3, §4.7)', () => {
  const base = { name: 'console', engineUrl: 'ws://127.0.0.1:49999', projectRoot: scratch, envBase: 'engine' as const }

  it('runs svc console from its directory, creating it; the token only in the environment', () => {
    const directory = join(scratch, '.svc', 'console')
    const spec = consoleWorkerSpec({ ...base, directory, config: { port: 4000 }, token: 'a-token-of-sixteen-chars' })
    assert.ok(existsSync(directory))
    assert.match(spec.startCommand!, / console --no-open --engine ws:\/\/127\.0\.0\.1:49999 --port 4000/)
    assert.ok(!spec.startCommand!.includes('a-token-of-sixteen-chars'))
    assert.deepEqual(spec.env, { SVC_CONSOLE_TOKEN: 'a-token-of-sixteen-chars' })
    assert.equal(spec.watch, false)
    assert.equal(spec.noInstall, true)
    assert.equal(spec.namespace, 'default')
    assert.deepEqual(spec.registersAs, { name: 'svc-console', namespace: 'default', byPid: false })
    assert.equal(spec.overlap, false)
  })

  it('no token: no SVC_CONSOLE_TOKEN; a config the console refuses throws before anything is created', () => {
    assert.deepEqual(consoleWorkerSpec({ ...base, directory: join(scratch, 'c2'), config: { token: false }, token: undefined }).env, {})
    assert.throws(() => consoleWorkerSpec({ ...base, directory: join(scratch, 'c3'), config: { port: 'x' }, token: undefined }))
    assert.ok(!existsSync(join(scratch, 'c3')))
  })
})

describe('connectedSince (cli.md §5.3)', () => {
  const probe = { pid: 42, startedAtMs: 1000 }
  it("a connection of the name in the namespace since the process started, or with the process's pid", () => {
    assert.equal(connectedSince([{ name: 'w', namespace: 'default', connectedAtMs: 1000 }], 'w', 'default', probe), true)
    assert.equal(connectedSince([{ name: 'w', namespace: 'default', connectedAtMs: 999 }], 'w', 'default', probe), false)
    assert.equal(connectedSince([{ name: 'w', namespace: 'default', connectedAtMs: 999, pid: 42 }], 'w', 'default', probe), true)
    assert.equal(connectedSince([{ name: 'w', namespace: 'shop', connectedAtMs: 2000 }], 'w', 'default', probe), false)
    assert.equal(connectedSince([{ name: null, namespace: 'default', connectedAtMs: 2000 }], 'w', 'default', probe), false)
  })
})

import assert from 'node:assert/strict'
import { delimiter } from 'node:path'
import { describe, it } from 'node:test'
import { buildWorkerEnv, reservedNamesIn } from './env.ts'
import type { WorkerEnvInput } from './env.ts'

const spec: WorkerEnvInput['spec'] = {
  name: 'math-worker',
  namespace: 'shop',
  engineUrl: 'ws://127.0.0.1:4000',
  projectRoot: '/p',
  envBase: 'engine',
  env: {},
}
const parentEnv = { PATH: `/usr/bin${delimiter}/bin`, HOME: '/root', SECRET: 's', SVC_URL: 'ws://elsewhere', SVC_WORKER_CONFIG: '{"stale":1}' }

describe('buildWorkerEnv (cli.md §5.2)', () => {
  it('engine base: the parent environment, manifest env, entry env, then the reserved variables', () => {
    const { env, ignored } = buildWorkerEnv({
      spec: { ...spec, env: { LEVEL: 'entry', SVC_NAMESPACE: 'evil' }, config: { greeting: 'hi' } },
      manifest: { env: { LEVEL: 'manifest', ONLY_MANIFEST: '1', SVC_URL: 'ws://nope' } },
      isolation: 'process',
      parentEnv,
      nodeDir: '/opt/node/bin',
    })
    assert.equal(env.SECRET, 's')
    assert.equal(env.LEVEL, 'entry')
    assert.equal(env.ONLY_MANIFEST, '1')
    assert.equal(env.SVC_URL, 'ws://127.0.0.1:4000')
    assert.equal(env.III_URL, 'ws://127.0.0.1:4000')
    assert.equal(env.SVC_WORKER_NAME, 'math-worker')
    assert.equal(env.III_WORKER_NAME, 'math-worker')
    assert.equal(env.SVC_NAMESPACE, 'shop')
    assert.equal(env.III_NAMESPACE, 'shop')
    assert.equal(env.SVC_ISOLATION, 'process')
    assert.equal(env.SVC_PROJECT_ROOT, '/p')
    assert.equal(env.SVC_WORKER_CONFIG, '{"greeting":"hi"}')
    assert.equal(env.PATH, ['/opt/node/bin', '/usr/bin', '/bin'].join(delimiter))
    assert.deepEqual(ignored, ['manifest env sets SVC_URL', 'entry env sets SVC_NAMESPACE'])
  })

  it('drops a reserved variable inherited from the parent when the entry has no config', () => {
    const { env } = buildWorkerEnv({ spec, manifest: undefined, isolation: 'process', parentEnv, nodeDir: '/opt/node/bin' })
    assert.equal(env.SVC_WORKER_CONFIG, undefined)
  })

  it('does not put the node directory twice, and a PATH in env is used as written', () => {
    const once = buildWorkerEnv({ spec, manifest: undefined, isolation: 'process', parentEnv: { PATH: `/opt/node/bin${delimiter}/bin` }, nodeDir: '/opt/node/bin' })
    assert.equal(once.env.PATH, `/opt/node/bin${delimiter}/bin`)
    const own = buildWorkerEnv({ spec: { ...spec, env: { PATH: '/only' } }, manifest: undefined, isolation: 'process', parentEnv, nodeDir: '/opt/node/bin' })
    assert.equal(own.env.PATH, '/only')
  })

  it('compose base: baseline variables only, then env, then manifest env, then reserved', () => {
    const { env } = buildWorkerEnv({
      spec: { ...spec, envBase: 'compose', env: { LEVEL: 'container', A: 'container' } },
      manifest: { env: { LEVEL: 'manifest' } },
      isolation: 'process',
      parentEnv,
      nodeDir: '/opt/node/bin',
    })
    assert.equal(env.SECRET, undefined)
    assert.equal(env.HOME, '/root')
    assert.equal(env.A, 'container')
    assert.equal(env.LEVEL, 'manifest')
    assert.equal(env.SVC_URL, 'ws://127.0.0.1:4000')
    assert.ok(env.PATH!.startsWith('/opt/node/bin'))
  })

  it('reservedNamesIn lists the reserved names of an env block', () => {
    assert.deepEqual(reservedNamesIn({ A: '1', SVC_URL: 'x', III_NAMESPACE: 'y' }), ['SVC_URL', 'III_NAMESPACE'])
  })
})

import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { DEFAULT_ENGINE_URL, displayPath, findConfigFile, listenerUrl, locateConfig, resolveEngineUrl } from './project.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-project-'))
after(() => rmSync(root, { recursive: true, force: true }))
/** An empty registry of running engines: the address must not depend on an svc running here (issue 16). */
const env = { SVC_ENGINES_DIR: join(root, 'no-engines') }

function project(name: string, yaml?: string): string {
  const dir = join(root, name)
  mkdirSync(join(dir, 'workers', 'w', 'src'), { recursive: true })
  if (yaml !== undefined) writeFileSync(join(dir, 'config.yaml'), yaml)
  return dir
}

describe('project discovery (cli.md §1)', () => {
  it('finds config.yaml in the directory or the nearest parent', () => {
    const dir = project('p1', '')
    assert.equal(findConfigFile(dir), join(dir, 'config.yaml'))
    assert.equal(findConfigFile(join(dir, 'workers', 'w', 'src')), join(dir, 'config.yaml'))
    writeFileSync(join(dir, 'workers', 'config.yaml'), '')
    assert.equal(findConfigFile(join(dir, 'workers', 'w')), join(dir, 'workers', 'config.yaml'))
  })

  it('finds nothing when no directory up to the root has one', () => {
    const dir = project('p2')
    // The temp directory's ancestors have no config.yaml on a test machine.
    assert.equal(findConfigFile(join(dir, 'workers')), undefined)
  })

  it('ignores a directory named config.yaml', () => {
    const dir = project('p3')
    mkdirSync(join(dir, 'config.yaml'))
    assert.equal(findConfigFile(dir), undefined)
  })

  it('names --config as given and a discovered file relative to cwd when below it', () => {
    const dir = project('p4', '')
    assert.deepEqual(locateConfig('other.yaml', dir), { path: join(dir, 'other.yaml'), label: 'other.yaml', explicit: true })
    assert.deepEqual(locateConfig(undefined, dir), { path: join(dir, 'config.yaml'), label: 'config.yaml', explicit: false })
    const sub = join(dir, 'workers')
    assert.deepEqual(locateConfig(undefined, sub), { path: join(dir, 'config.yaml'), label: join(dir, 'config.yaml'), explicit: false })
    assert.equal(displayPath(join(dir, 'a', 'b.yaml'), dir), join('a', 'b.yaml'))
  })
})

describe('engine URL (cli.md §1)', () => {
  it('prefers --engine, then SVC_URL', () => {
    const dir = project('u1', 'workers:\n  - name: svc-worker-manager\n    config: { port: 5000 }\n')
    assert.equal(resolveEngineUrl({ flag: 'ws://flag:1', env: { ...env, SVC_URL: 'ws://env:2' }, cwd: dir }), 'ws://flag:1')
    assert.equal(resolveEngineUrl({ env: { ...env, SVC_URL: 'ws://env:2' }, cwd: dir }), 'ws://env:2')
  })

  it('uses the first enabled listener of the discovered config.yaml, wildcard hosts read as loopback', () => {
    const dir = project(
      'u2',
      'workers:\n  - name: svc-worker-manager\n    enabled: false\n    config: { port: 1 }\n  - name: svc-worker-manager\n    config:\n      host: 0.0.0.0\n      port: ${ENGINE_PORT:5001}\n  - name: svc-worker-manager\n    config: { port: 5002 }\n',
    )
    assert.equal(resolveEngineUrl({ env, cwd: join(dir, 'workers') }), 'ws://127.0.0.1:5001')
    assert.equal(resolveEngineUrl({ env: { ...env, ENGINE_PORT: '6000' }, cwd: dir }), 'ws://127.0.0.1:6000')
  })

  it('uses the listener defaults for an entry without config, and the default URL without entry or file', () => {
    assert.equal(resolveEngineUrl({ env, cwd: project('u3', 'workers:\n  - name: svc-worker-manager\n') }), 'ws://127.0.0.1:49134')
    assert.equal(resolveEngineUrl({ env, cwd: project('u4', 'workers:\n  - name: svc-http\n') }), DEFAULT_ENGINE_URL)
    assert.equal(resolveEngineUrl({ env, cwd: project('u5') }), DEFAULT_ENGINE_URL)
  })

  it('falls back to the default for a file that does not parse or a port it cannot read', () => {
    assert.equal(resolveEngineUrl({ env, cwd: project('u6', 'workers: [\n') }), DEFAULT_ENGINE_URL)
    assert.equal(
      resolveEngineUrl({ env, cwd: project('u7', 'workers:\n  - name: svc-worker-manager\n    config: { port: 0 }\n') }),
      DEFAULT_ENGINE_URL,
    )
  })

  it('formats IPv6 hosts in brackets', () => {
    assert.equal(listenerUrl('::1', 80), 'ws://[::1]:80')
    assert.equal(listenerUrl('::', 80), 'ws://127.0.0.1:80')
  })
})

/**
 * The launcher of bin/run.js (issue 20 "Install"): `svc` started by a Node older than 22.13 runs
 * itself again with a newer Node found on the machine, or says what to install. The Nodes here are
 * real executables: small shell scripts answering `-p process.versions.node` like node does, and
 * this test's own Node; the old one is the system Node 20 when the machine has one.
 */
import assert from 'node:assert/strict'
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
// @ts-expect-error plain JavaScript without declarations (it must parse on old Node)
import { candidates, findNode, isSupported, noNodeMessage } from '../bin/find-node.js'

const RUN = fileURLToPath(new URL('../bin/run.js', import.meta.url))
const scratch = mkdtempSync(join(tmpdir(), 'svc-find-node-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/** A directory holding an executable `node` that reports `version`. */
function fakeNode(name: string, version: string): string {
  const dir = join(scratch, name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(join(dir, 'node'), `#!/bin/sh\necho ${version}\n`)
  chmodSync(join(dir, 'node'), 0o755)
  return dir
}

/** An old Node to start svc with: the system's Node 20 when there is one (it is here), else none. */
const OLD_NODE = ['/usr/bin/node', '/bin/node'].find((path) => existsSync(path) && !isSupported(execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim()))

describe('finding a Node for svc', () => {
  it('isSupported: 22.13 and newer', () => {
    for (const v of ['22.13.0', 'v22.13.1', '22.20.0', '23.0.0', '24.21.0', '30.1.2']) assert.equal(isSupported(v), true, v)
    for (const v of ['22.12.9', '20.20.2', 'v18.0.0', '', 'x.y', '22']) assert.equal(isSupported(v), false, v)
  })

  it('takes the newest supported Node of PATH, SVC_NODE before it, and ignores old or broken ones', () => {
    const old = fakeNode('old', '20.20.2')
    const newer = fakeNode('newer', '24.1.0')
    const newest = fakeNode('newest', '24.10.0')
    const broken = join(scratch, 'broken')
    mkdirSync(broken)
    writeFileSync(join(broken, 'node'), '#!/bin/sh\nexit 3\n')
    chmodSync(join(broken, 'node'), 0o755)
    const home = join(scratch, 'home')
    const env = { HOME: home, PATH: [old, broken, newer, newest].join(delimiter) }
    assert.deepEqual(findNode(env), { path: join(newest, 'node'), version: '24.10.0' })
    assert.deepEqual(findNode({ ...env, SVC_NODE: join(newer, 'node') }), { path: join(newer, 'node'), version: '24.1.0' })
    assert.equal(findNode({ HOME: home, PATH: [old, broken].join(delimiter) }), undefined)
    // nvm's versions count too.
    const nvm = join(home, '.nvm', 'versions', 'node', 'v22.13.0', 'bin')
    mkdirSync(nvm, { recursive: true })
    writeFileSync(join(nvm, 'node'), '#!/bin/sh\necho 22.13.0\n')
    chmodSync(join(nvm, 'node'), 0o755)
    assert.ok(candidates({ HOME: home, PATH: old }).includes(join(nvm, 'node')))
    assert.deepEqual(findNode({ HOME: home, PATH: old }), { path: join(nvm, 'node'), version: '22.13.0' })
  })

  it('the message names the version needed, where to get it and SVC_NODE', () => {
    const text = noNodeMessage('v20.20.2', '/opt/node')
    assert.match(text, /^Error: svc needs Node\.js 22\.13 or newer; it was started by Node v20\.20\.2/)
    assert.match(text, /SVC_NODE=\/opt\/node is not one/)
    assert.match(text, /nodejs\.org/)
  })

  it('fast-check: any version string is answered true or false, never thrown', () => {
    fc.assert(fc.property(fc.oneof(fc.string(), fc.stringMatching(/^v?\d{1,3}\.\d{1,3}(\.\d{1,3})?$/)), (v) => typeof isSupported(v) === 'boolean'))
  })

  it('bin/run.js started by Node 20 runs svc with a newer Node from PATH, or exits 1 saying what to install', { skip: OLD_NODE === undefined ? 'no Node older than 22.13 on this machine' : false }, () => {
    const home = join(scratch, 'run-home')
    mkdirSync(home, { recursive: true })
    const base = { HOME: home, SVC_ENGINES_DIR: join(scratch, 'engines') }
    const found = spawnSync(OLD_NODE!, [RUN, '--version'], { env: { ...base, PATH: [join(OLD_NODE!, '..'), join(process.execPath, '..')].join(delimiter) }, encoding: 'utf8' })
    assert.equal(found.status, 0, found.stderr)
    assert.match(found.stdout, new RegExp(`^svc/\\S+ \\S+ node-${process.version}`))
    const none = spawnSync(OLD_NODE!, [RUN, '--version'], { env: { ...base, PATH: join(OLD_NODE!, '..') }, encoding: 'utf8' })
    assert.equal(none.status, 1)
    assert.equal(none.stdout, '')
    assert.match(none.stderr, /^Error: svc needs Node\.js 22\.13 or newer; it was started by Node v20\./)
  })
})

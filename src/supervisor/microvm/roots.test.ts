/**
 * The runtime roots (cli.md §5.7), checked without a VM. The Python root holds what a worker's venv needs:
 * `chroot` into the built root (as the guest's agent does, less the overlay) runs the venv's
 * interpreter from the worker directory aliased at its host path, and the standard library's
 * extension modules and a manylinux wheel (pydantic-core) import. The native root runs a release
 * binary from `/workspace` with the libraries `ldd` names. Needs root for `chroot`, the
 * cached guest assets (`apt-get download` on first use) and the Python test environment.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, describe, it } from 'node:test'
import { svcPython } from '../../../test/support/python.ts'
import { microvmCacheDir } from './probe.ts'
import { describePython, ensureGuestAssets, linkChain } from './roots.ts'

const CHROOT = ['/usr/sbin/chroot', '/sbin/chroot', '/usr/bin/chroot'].find((p) => existsSync(p)) ?? 'chroot'

function missing(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'needs Linux on x86-64'
  if (process.getuid?.() !== 0) return 'chroot needs root'
  if (!existsSync('/usr/bin/apt-get') || !existsSync('/usr/bin/dpkg-deb')) return 'needs apt-get and dpkg-deb for the guest kernel'
  return undefined
}

const scratch = mkdtempSync(join(tmpdir(), 'svc-roots-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

describe('microVM runtime roots', { skip: missing() }, () => {
  it('the Python root runs a venv made on the host, with ssl, ctypes, sqlite3 and a manylinux wheel', { timeout: 300_000 }, async () => {
    const python = await svcPython()
    const described = await describePython(python)
    assert.ok(described.links.every((p) => !p.startsWith(dirname(dirname(python)))), `no hop inside the test venv: ${described.links.join(', ')}`)
    const { root } = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'python', interpreter: python } })
    assert.match(root, /\/root-python-[0-9a-f]{16}$/)
    // Left out: the GUI, the test suite, the host's packages.
    assert.ok(!existsSync(join(root, described.stdlib, 'tkinter')) && !existsSync(join(root, described.stdlib, 'test')) && !existsSync(join(root, described.stdlib, 'site-packages')))
    // pip verifies the registries against the host's CA bundle, at the path pip.conf and PIP_CERT name.
    if (existsSync('/etc/ssl/certs/ca-certificates.crt')) assert.ok(existsSync(join(root, 'etc/ssl/certs/ca-certificates.crt')))
    // A worker venv on the "host" (this scratch directory), with pydantic-core copied in.
    const worker = join(scratch, 'worker')
    const made = spawnSync(python, ['-m', 'venv', '--without-pip', join(worker, '.venv')], { encoding: 'utf8' })
    assert.equal(made.status, 0, made.stderr)
    const site = (venv: string) => join(venv, 'lib', readdirSync(join(venv, 'lib')).find((d) => d.startsWith('python'))!, 'site-packages')
    for (const entry of readdirSync(site(dirname(dirname(python))))) {
      if (entry.startsWith('pydantic_core') || entry.startsWith('typing_extensions')) cpSync(join(site(dirname(dirname(python))), entry), join(site(join(worker, '.venv')), entry), { recursive: true })
    }
    // The guest's view: the root, the worker directory at /workspace and aliased at its host path.
    const view = join(scratch, 'view')
    cpSync(root, view, { recursive: true, verbatimSymlinks: true })
    cpSync(worker, join(view, 'workspace'), { recursive: true, verbatimSymlinks: true })
    mkdirSync(join(view, dirname(worker)), { recursive: true })
    symlinkSync('/workspace', join(view, worker))
    const run = spawnSync(
      CHROOT,
      [view, '/bin/sh', '-c', 'cd /workspace && .venv/bin/python -c "import ssl, ctypes, sqlite3, zlib, json, asyncio, pydantic_core, sys; print(sys.prefix)"'],
      { encoding: 'utf8', env: { PATH: '/usr/local/bin:/usr/bin:/bin' } },
    )
    assert.equal(run.status, 0, run.stderr)
    assert.equal(run.stdout.trim(), '/workspace/.venv')
    // python3 on the guest's PATH is the same interpreter.
    const bare = spawnSync(CHROOT, [view, '/bin/sh', '-c', 'python3 -c "import ssl; print(1)"'], { encoding: 'utf8', env: { PATH: '/usr/local/bin:/usr/bin:/bin' } })
    assert.equal(bare.stdout.trim(), '1', bare.stderr)
  })

  it('a python3 that is a wrapper script (pyenv\'s shim), not a link, describes the interpreter it runs and stays out of the root', async () => {
    const python = await svcPython()
    const shim = join(scratch, 'shims', 'python3')
    mkdirSync(dirname(shim), { recursive: true })
    writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(python)} "$@"\n`, { mode: 0o755 })
    const described = await describePython(shim)
    assert.ok(!described.links.includes(shim), `links: ${described.links.join(', ')}`)
    const { root } = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'python', interpreter: shim } })
    assert.ok(existsSync(join(root, described.executable)))
    assert.ok(!existsSync(join(root, shim)))
  })

  it('the native root runs a release binary from /workspace with only the libraries it links', { timeout: 300_000 }, async () => {
    // A dynamically linked host program stands in for a Rust release binary (ls links more than glibc).
    const worker = join(scratch, 'rust-worker')
    mkdirSync(join(worker, 'target', 'release'), { recursive: true })
    const binary = join(worker, 'target', 'release', 'tool')
    cpSync(realpathSync('/bin/ls'), binary)
    const { root } = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'native', binary } })
    assert.match(root, /\/root-native-[0-9a-f]{16}$/)
    assert.ok(!existsSync(join(root, 'workspace', 'target')), 'the binary is not part of the root')
    const view = join(scratch, 'native-view')
    cpSync(root, view, { recursive: true, verbatimSymlinks: true })
    cpSync(worker, join(view, 'workspace'), { recursive: true })
    const run = spawnSync(CHROOT, [view, '/workspace/target/release/tool', '-d', '/workspace'], { encoding: 'utf8', env: { PATH: '/bin' } })
    assert.equal(run.status, 0, run.stderr)
    assert.equal(run.stdout.trim(), '/workspace')
    // Before the first build there is no binary: the root still has glibc and the loader.
    const bare = await ensureGuestAssets({ cacheDir: microvmCacheDir(), runtime: { kind: 'native', binary: undefined } })
    assert.ok(existsSync(join(bare.root, 'lib64', 'ld-linux-x86-64.so.2')) && readdirSync(join(bare.root, 'lib', 'x86_64-linux-gnu')).includes('libc.so.6'))
  })

  it('linkChain follows relative and absolute links to the file', () => {
    const dir = join(scratch, 'links')
    mkdirSync(join(dir, 'bin'), { recursive: true })
    spawnSync('touch', [join(dir, 'bin', 'python3.11')])
    symlinkSync('python3.11', join(dir, 'bin', 'python3'))
    symlinkSync(join(dir, 'bin', 'python3'), join(dir, 'python'))
    assert.deepEqual(linkChain(join(dir, 'python')), [join(dir, 'python'), join(dir, 'bin', 'python3'), join(dir, 'bin', 'python3.11')])
  })
})

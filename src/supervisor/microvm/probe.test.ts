import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { BACKEND_CACHE_FILE, checkKvm, KVM_MESSAGES, microvmCacheDir } from './probe.ts'
import type { KvmCheckOptions } from './probe.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-kvm-'))
chmodSync(scratch, 0o755)
after(() => rmSync(scratch, { recursive: true, force: true }))

let counter = 0
/** A fake host: a /dev/kvm that opens, a /sys/module with `modules`, a boot id; no cache unless asked. */
function host(modules: string[], extra: Partial<KvmCheckOptions> = {}): KvmCheckOptions {
  const root = join(scratch, `host-${++counter}`)
  mkdirSync(join(root, 'sys-module'), { recursive: true })
  for (const m of modules) mkdirSync(join(root, 'sys-module', m))
  writeFileSync(join(root, 'kvm'), '')
  writeFileSync(join(root, 'boot_id'), `boot-${counter}\n`)
  return {
    platform: 'linux',
    devicePath: join(root, 'kvm'),
    sysModuleDir: join(root, 'sys-module'),
    procModulesPath: join(root, 'no-proc-modules'),
    bootIdPath: join(root, 'boot_id'),
    cacheDir: false,
    env: {},
    ...extra,
  }
}

const PVM =
  'KVM not accessible -- /dev/kvm is provided by kvm_pvm, which cannot boot a standard guest kernel; use isolation: process, or SVC_MICROVM_ACCEL=tcg to emulate (slow)'

describe('the usable-KVM probe (cli.md §5.7)', () => {
  it('not Linux', () => {
    assert.deepEqual(checkKvm({ platform: 'darwin' }), { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.notLinux })
    assert.equal(KVM_MESSAGES.notLinux, 'KVM not accessible -- microVM isolation needs Linux with /dev/kvm; use isolation: process on this host')
  })

  it('/dev/kvm missing', () => {
    const result = checkKvm(host(['kvm', 'kvm_intel'], { devicePath: join(scratch, 'no-such-kvm') }))
    assert.deepEqual(result, {
      ok: false,
      code: 'KVM_NOT_ACCESSIBLE',
      message: 'KVM not accessible -- /dev/kvm does not exist; enable hardware (or nested) virtualization, or use isolation: process',
    })
  })

  it('permission denied', () => {
    const device = join(scratch, 'kvm-denied')
    writeFileSync(device, '')
    chmodSync(device, 0o600)
    const expected = {
      ok: false,
      code: 'KVM_NOT_ACCESSIBLE',
      message:
        "KVM not accessible -- /dev/kvm exists but the current user cannot open it; add the user to the 'kvm' group (sudo usermod -aG kvm $USER) and log in again",
    }
    if (process.getuid?.() === 0) {
      // root opens anything, so the check runs as 'nobody', for whom the root-owned 0600 file is
      // closed. The child starts as root and loads probe.ts first, then drops to nobody: 'nobody'
      // need not be able to execute this Node or read the checkout (a clone under a 0700 home).
      const probe = fileURLToPath(new URL('./probe.ts', import.meta.url))
      const script = [
        `const { checkKvm } = await import(${JSON.stringify(probe)})`,
        'process.setgroups([65534]); process.setgid(65534); process.setuid(65534)',
        `console.log(JSON.stringify({ uid: process.getuid(), result: checkKvm({ platform: 'linux', devicePath: ${JSON.stringify(device)}, cacheDir: false, env: {} }) }))`,
      ].join('\n')
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: scratch, encoding: 'utf8' })
      assert.equal(child.status, 0, child.stderr)
      assert.deepEqual(JSON.parse(child.stdout), { uid: 65534, result: expected })
    } else {
      chmodSync(device, 0o000)
      assert.deepEqual(checkKvm({ platform: 'linux', devicePath: device, cacheDir: false, env: {} }), expected)
    }
  })

  it('a device that opens with kvm_intel or kvm_amd loaded is usable with -accel kvm', () => {
    assert.deepEqual(checkKvm(host(['kvm', 'kvm_intel'])), { ok: true, accel: 'kvm', backend: 'kvm_intel' })
    assert.deepEqual(checkKvm(host(['kvm', 'kvm_amd'])), { ok: true, accel: 'kvm', backend: 'kvm_amd' })
  })

  it('a device that opens is not enough: a PVM backend (kvm_pvm) gets its own message', () => {
    assert.deepEqual(checkKvm(host(['kvm', 'kvm_pvm'])), { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: PVM })
    assert.equal(KVM_MESSAGES.software('kvm_pvm'), PVM)
  })

  it('no backend module at all', () => {
    assert.deepEqual(checkKvm(host(['kvm'])), { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.noBackend })
  })

  it('reads /proc/modules where /sys/module does not show the backend', () => {
    const options = host([])
    writeFileSync(options.procModulesPath!, 'kvm_amd 200704 0 - Live 0x0000000000000000\nkvm 1376256 1 kvm_amd, Live 0x0000000000000000\n')
    assert.deepEqual(checkKvm(options), { ok: true, accel: 'kvm', backend: 'kvm_amd' })
  })

  it('SVC_MICROVM_ACCEL=tcg opts into software emulation, even without /dev/kvm; other values are refused', () => {
    assert.deepEqual(checkKvm(host(['kvm_pvm'], { env: { SVC_MICROVM_ACCEL: 'tcg' }, devicePath: join(scratch, 'no-such-kvm') })), { ok: true, accel: 'tcg' })
    assert.deepEqual(checkKvm(host(['kvm_intel'], { env: { SVC_MICROVM_ACCEL: 'kvm' } })), { ok: true, accel: 'kvm', backend: 'kvm_intel' })
    assert.deepEqual(checkKvm(host(['kvm_intel'], { env: { SVC_MICROVM_ACCEL: 'TCG ' } })), {
      ok: false,
      code: 'INVALID_ARGUMENT',
      message: 'SVC_MICROVM_ACCEL is "TCG "; use kvm (the default) or tcg (software emulation, slow)',
    })
  })

  it('caches the backend per boot id in the cache directory; a new boot scans again', () => {
    const cacheDir = join(scratch, 'cache')
    const options = host(['kvm', 'kvm_intel'], { cacheDir })
    assert.deepEqual(checkKvm(options), { ok: true, accel: 'kvm', backend: 'kvm_intel' })
    const cached = JSON.parse(readFileSync(join(cacheDir, BACKEND_CACHE_FILE), 'utf8'))
    assert.deepEqual(cached, { boot_id: readFileSync(options.bootIdPath!, 'utf8').trim(), kind: 'hardware', module: 'kvm_intel' })
    // Same boot: the module directory is not read again.
    rmSync(join(options.sysModuleDir!, 'kvm_intel'), { recursive: true })
    mkdirSync(join(options.sysModuleDir!, 'kvm_pvm'))
    assert.deepEqual(checkKvm(options), { ok: true, accel: 'kvm', backend: 'kvm_intel' })
    // The open check is never cached.
    chmodSync(options.devicePath!, 0o000)
    if (process.getuid?.() !== 0) assert.equal((checkKvm(options) as { message: string }).message, KVM_MESSAGES.denied)
    chmodSync(options.devicePath!, 0o644)
    // Another boot: scanned again.
    writeFileSync(options.bootIdPath!, 'another-boot\n')
    assert.deepEqual(checkKvm(options), { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: PVM })
  })

  it('the cache directory is $XDG_CACHE_HOME/svc/microvm, else ~/.cache/svc/microvm', () => {
    assert.equal(microvmCacheDir({ XDG_CACHE_HOME: '/x/cache' }), '/x/cache/svc/microvm')
    assert.match(microvmCacheDir({}), /\/\.cache\/svc\/microvm$/)
    assert.match(microvmCacheDir({ XDG_CACHE_HOME: 'relative' }), /\/\.cache\/svc\/microvm$/)
  })

  it("this machine's real /dev/kvm gets the verdict its modules call for", () => {
    const cacheDir = join(scratch, 'real-cache')
    const result = checkKvm({ cacheDir, env: {} })
    let opens = false
    try {
      closeSync(openSync('/dev/kvm', 'r+'))
      opens = true
    } catch {}
    const modules = new Set(existsSync('/sys/module') ? readdirSync('/sys/module') : [])
    for (const line of existsSync('/proc/modules') ? readFileSync('/proc/modules', 'utf8').split('\n') : []) modules.add(line.split(' ')[0]!)
    if (process.platform !== 'linux') assert.equal((result as { message: string }).message, KVM_MESSAGES.notLinux)
    else if (!existsSync('/dev/kvm')) assert.equal((result as { message: string }).message, KVM_MESSAGES.missing)
    else if (!opens) assert.equal((result as { message: string }).message, KVM_MESSAGES.denied)
    else if (modules.has('kvm_intel')) assert.deepEqual(result, { ok: true, accel: 'kvm', backend: 'kvm_intel' })
    else if (modules.has('kvm_amd')) assert.deepEqual(result, { ok: true, accel: 'kvm', backend: 'kvm_amd' })
    else if (modules.has('kvm_pvm')) assert.deepEqual(result, { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: PVM })
    else assert.equal(result.ok, false)
    // A second probe in the same boot answers the same from the cache.
    assert.deepEqual(checkKvm({ cacheDir, env: {} }), result)
  })
})

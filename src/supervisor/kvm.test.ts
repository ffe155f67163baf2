import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, describe, it } from 'node:test'
import { checkKvm, KVM_MESSAGES } from './kvm.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-kvm-'))
chmodSync(scratch, 0o755)
after(() => rmSync(scratch, { recursive: true, force: true }))

describe('checkKvm (cli.md §5.7)', () => {
  it('not Linux', () => {
    assert.deepEqual(checkKvm({ platform: 'darwin' }), { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.notLinux })
    assert.equal(
      KVM_MESSAGES.notLinux,
      'KVM not accessible -- microVM isolation needs Linux with /dev/kvm; use isolation: process on this host',
    )
  })

  it('/dev/kvm missing', () => {
    const result = checkKvm({ platform: 'linux', devicePath: join(scratch, 'no-such-kvm') })
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
      // closed. The child starts as root and loads kvm.ts first, then drops to nobody: 'nobody'
      // need not be able to execute this Node or read the checkout (a clone under a 0700 home).
      const kvm = fileURLToPath(new URL('./kvm.ts', import.meta.url))
      const script = [
        `const { checkKvm } = await import(${JSON.stringify(kvm)})`,
        'process.setgroups([65534]); process.setgid(65534); process.setuid(65534)',
        `console.log(JSON.stringify({ uid: process.getuid(), result: checkKvm({ platform: 'linux', devicePath: ${JSON.stringify(device)} }) }))`,
      ].join('\n')
      const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: scratch, encoding: 'utf8' })
      assert.equal(child.status, 0, child.stderr)
      assert.deepEqual(JSON.parse(child.stdout), { uid: 65534, result: expected })
    } else {
      chmodSync(device, 0o000)
      assert.deepEqual(checkKvm({ platform: 'linux', devicePath: device }), expected)
    }
  })

  it('a device that opens read-write passes', () => {
    const device = join(scratch, 'kvm-ok')
    writeFileSync(device, '')
    assert.deepEqual(checkKvm({ platform: 'linux', devicePath: device }), { ok: true })
  })

  it('this host gives one of the four answers', () => {
    const result = checkKvm()
    if (!result.ok) assert.ok((Object.values(KVM_MESSAGES) as string[]).includes(result.message), result.message)
  })
})

/**
 * Who QEMU and virtiofsd run as (privileges.ts; issue 22, cli.md §5.7): the commands for svc as root
 * and as a normal user, and the refusal, with its reason, where Debian 12's virtiofsd cannot start
 * without root. The real boots are in test/microvm.test.ts ("a user without root") and
 * vm.test.ts (the namespaces of a root svc's VM).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { MicrovmSetupError } from './assets.ts'
import { confinedCommand } from './privileges.ts'
import type { HostIdentity } from './privileges.ts'

const tools = { setpriv: '/usr/bin/setpriv', unshare: '/usr/bin/unshare', sh: '/bin/sh' }
const root: HostIdentity = { uid: 0, groups: [0], ...tools }
const user: HostIdentity = { uid: 1000, groups: [], ...tools }
const QEMU = '/usr/bin/qemu-system-x86_64'
const VIRTIOFSD = '/usr/lib/qemu/virtiofsd'

describe('confinedCommand', () => {
  it('svc as root: QEMU and a root-owned share run as uid 0 of a user namespace, with the groups cleared and the death signal set', () => {
    for (const [role, file] of [['qemu', QEMU], ['virtiofsd', VIRTIOFSD]] as const) {
      assert.deepEqual(confinedCommand(role, file, ['-a', 'b c'], root, 0), {
        file: '/usr/bin/setpriv',
        args: ['--pdeathsig', 'SIGKILL', '--clear-groups', '--', '/usr/bin/unshare', '--user', '--map-root-user', '--', file, '-a', 'b c'],
        confinement: 'userns-root',
      })
    }
  })

  it("svc as root: another user's worker directory is shared by a virtiofsd outside a namespace (uid 0 alone could not write it)", () => {
    assert.deepEqual(confinedCommand('virtiofsd', VIRTIOFSD, ['-x'], root, 1000), { file: '/usr/bin/setpriv', args: ['--pdeathsig', 'SIGKILL', '--', VIRTIOFSD, '-x'], confinement: 'unconfined' })
  })

  it('svc as root without unshare: unconfined, as before', () => {
    const { unshare: _, ...noUnshare } = root
    assert.equal(confinedCommand('qemu', QEMU, [], noUnshare).confinement, 'unconfined')
  })

  it('svc as a user: QEMU as the user; virtiofsd in a user and mount namespace with a private /run', () => {
    assert.deepEqual(confinedCommand('qemu', QEMU, ['-M', 'microvm'], user), { file: '/usr/bin/setpriv', args: ['--pdeathsig', 'SIGKILL', '--', QEMU, '-M', 'microvm'], confinement: 'user' })
    const daemon = confinedCommand('virtiofsd', VIRTIOFSD, ['--socket-path=/tmp/x.sock'], user, 1000)
    assert.equal(daemon.confinement, 'userns-user')
    assert.deepEqual(daemon.args.slice(0, 8), ['--pdeathsig', 'SIGKILL', '--', '/usr/bin/unshare', '--user', '--map-root-user', '--mount', '--'])
    assert.equal(daemon.args[8], '/bin/sh')
    assert.match(daemon.args[10]!, /^mount -t tmpfs .* \/run && exec "\$0" "\$@"$/)
    assert.deepEqual(daemon.args.slice(11), [VIRTIOFSD, '--socket-path=/tmp/x.sock'])
  })

  it('svc as a user with supplementary groups and subordinate ids: the namespace is mapped by newuidmap (--map-auto), which allows setgroups', () => {
    const daemon = confinedCommand('virtiofsd', VIRTIOFSD, ['-x'], { ...user, groups: [108, 1000], subordinateIds: true }, 1000)
    assert.equal(daemon.confinement, 'userns-user')
    assert.deepEqual(daemon.args.slice(0, 9), ['--pdeathsig', 'SIGKILL', '--', '/usr/bin/unshare', '--user', '--map-root-user', '--map-auto', '--mount', '--'])
    assert.deepEqual(daemon.args.slice(-2), [VIRTIOFSD, '-x'])
  })

  it('svc as a user with supplementary groups and no subordinate ids: MICROVM_SETUP_FAILED naming them and what to do', () => {
    assert.throws(
      () => confinedCommand('virtiofsd', VIRTIOFSD, [], { ...user, groups: [27, 1000] }),
      (err: unknown) => err instanceof MicrovmSetupError && err.code === 'MICROVM_SETUP_FAILED' && /supplementary groups \(27, 1000\)/.test(err.message) && /apt-get install -y uidmap/.test(err.hint ?? '') && /--add-subuids/.test(err.hint ?? ''),
    )
    // QEMU itself does not care.
    assert.equal(confinedCommand('qemu', QEMU, [], { ...user, groups: [27] }).confinement, 'user')
  })

  it('svc as a user on a host without unshare: MICROVM_SETUP_FAILED', () => {
    const { unshare: _, ...noUnshare } = user
    assert.throws(() => confinedCommand('virtiofsd', VIRTIOFSD, [], noUnshare), (err: unknown) => err instanceof MicrovmSetupError && err.code === 'MICROVM_SETUP_FAILED' && /unshare/.test(err.message))
  })

  it('without setpriv the program runs directly (no death signal)', () => {
    const { setpriv: _, ...noSetpriv } = user
    assert.deepEqual(confinedCommand('qemu', QEMU, ['-x'], noSetpriv), { file: QEMU, args: ['-x'], confinement: 'user' })
  })
})

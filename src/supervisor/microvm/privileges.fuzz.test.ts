/**
 * Hostile arguments for the confined commands (privileges.ts), with fast-check: paths and options
 * with spaces, quotes, `$(…)`, backquotes, newlines, leading dashes reach the program verbatim —
 * the only shell in the chain (`sh -c` for virtiofsd's private /run) interpolates nothing of them.
 * Run for real through unshare where the host allows user namespaces, with printf standing in for
 * virtiofsd.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { confinedCommand, hostIdentity } from './privileges.ts'

const hostile = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => s.replaceAll('\u0000', '')),
  fc.constantFrom('$(touch /tmp/svc-pwned)', '`id`', '"; exec sh #', "'", '-o', '--', '$0', '$@', 'a b\nc', '*', '~', '--socket-path=/tmp/x y.sock', 'source=/work/it\'s here'),
)

function userns(): boolean {
  try {
    execFileSync('unshare', ['--user', '--map-root-user', '--mount', 'true'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

describe('confined commands (fast-check)', () => {
  it('any arguments end the command verbatim, after the program, for every role and identity', () => {
    fc.assert(
      fc.property(fc.array(hostile, { maxLength: 6 }), fc.constantFrom('qemu' as const, 'virtiofsd' as const), fc.constantFrom(0, 1000), fc.option(fc.constantFrom(0, 1000)), (args, role, uid, owner) => {
        const command = confinedCommand(role, '/x/prog', args, { uid, groups: [], setpriv: '/s', unshare: '/u', sh: '/bin/sh' }, owner ?? undefined)
        assert.deepEqual(command.args.slice(command.args.length - args.length - 1), ['/x/prog', ...args])
      }),
      { numRuns: 300 },
    )
  })

  it('run through the user namespace and its sh, printf receives each argument unchanged', { skip: userns() ? undefined : 'this host allows no user namespace' }, () => {
    const identity = { ...hostIdentity(), uid: 1000, groups: [] }
    fc.assert(
      fc.property(fc.array(hostile, { minLength: 1, maxLength: 5 }), (args) => {
        const command = confinedCommand('virtiofsd', '/usr/bin/printf', ['%s\\0', ...args], identity)
        const out = execFileSync(command.file, command.args, { encoding: 'utf8' })
        assert.deepEqual(out.split('\u0000').slice(0, -1), args)
      }),
      { numRuns: 25 },
    )
  })
})

/**
 * Who QEMU and virtiofsd run as (cli.md §5.7, issue 22: "the VMM and the file-sharing daemons run
 * without root where the host allows (user namespaces)").
 *
 * - svc as **root**: QEMU and each virtiofsd start under util-linux `setpriv --clear-groups` and
 *   `unshare --user --map-root-user`, so they keep uid 0 for files root owns (the cache's kernel,
 *   initramfs and runtime root; a root-owned worker directory) but hold their capabilities only in
 *   a user namespace of their own: none over the host's mounts, network, modules, other users'
 *   files or processes. A worker directory owned by another user is served by a virtiofsd outside
 *   any user namespace (uid 0 alone mapped in it could not write that user's files).
 * - svc as **a normal user**: QEMU runs as the user (it never needs root). Debian 12's virtiofsd
 *   (QEMU 7.2's) needs CAP_SYS_ADMIN for its sandbox and writes a pid file under `/run/virtiofsd`:
 *   it runs in a user and mount namespace (`unshare --user --map-root-user --mount`) with a
 *   private tmpfs on `/run`. It also drops supplementary groups with setgroups(2), which a user
 *   namespace made without privilege forbids: a user with supplementary groups (`kvm`, for one)
 *   needs the namespace made by shadow's setuid `newuidmap`/`newgidmap` (Debian `uidmap`) from
 *   the user's subordinate ids in `/etc/subuid` and `/etc/subgid` (`unshare --map-auto`), which
 *   allows setgroups(2); without them, `MICROVM_SETUP_FAILED`, with what to do.
 *
 * Every command is wrapped in `setpriv --pdeathsig SIGKILL` so the kernel kills it with svc.
 */
import { readFileSync, statSync } from 'node:fs'
import { userInfo } from 'node:os'
import { findProgram, MicrovmSetupError } from './assets.ts'

/** What svc knows about itself and the host's tools when it launches a VM. */
export interface HostIdentity {
  /** Effective uid of svc. */
  uid: number
  /** Supplementary groups as the kernel lists them (`Groups:` of `/proc/self/status`). */
  groups: number[]
  /** util-linux programs; undefined where missing. */
  setpriv?: string
  unshare?: string
  /** A POSIX shell, for the mount in virtiofsd's namespace. */
  sh?: string
  /** `newuidmap` and `newgidmap` are installed and the user has subordinate uids and gids. */
  subordinateIds?: boolean
}

/** How a host process of a VM is confined. */
export type Confinement =
  /** uid 0 in a user namespace of its own (svc runs as root). */
  | 'userns-root'
  /** The user's own uid, mapped to root in a user and mount namespace (svc runs as a user). */
  | 'userns-user'
  /** The user's own uid, no namespace: QEMU under a normal user. */
  | 'user'
  /** As svc runs, with svc's privileges: the host lacks `unshare`, or a root svc shares another user's directory. */
  | 'unconfined'

/** `[file, args]` to spawn, and how it is confined. */
export interface ConfinedCommand {
  file: string
  args: string[]
  confinement: Confinement
}

/** The identity of this process and the tools on PATH. */
export function hostIdentity(): HostIdentity {
  const uid = process.geteuid?.() ?? 0
  let groups: number[] = []
  try {
    const line = /^Groups:[ \t]*(.*)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? ''
    groups = line.split(/\s+/).filter(Boolean).map(Number)
  } catch {}
  const setpriv = findProgram(['setpriv'])
  const unshare = findProgram(['unshare'])
  const sh = findProgram(['sh'])
  const subordinateIds = uid !== 0 && findProgram(['newuidmap']) !== undefined && findProgram(['newgidmap']) !== undefined && hasSubordinateIds(uid)
  return { uid, groups, ...(setpriv ? { setpriv } : {}), ...(unshare ? { unshare } : {}), ...(sh ? { sh } : {}), ...(subordinateIds ? { subordinateIds } : {}) }
}

/** True when `/etc/subuid` and `/etc/subgid` both give the user (by name or uid) a range. */
function hasSubordinateIds(uid: number): boolean {
  let name: string | undefined
  try {
    name = userInfo().username
  } catch {}
  const listed = (file: string) => {
    try {
      return readFileSync(file, 'utf8')
        .split('\n')
        .some((line) => {
          const [who, , count] = line.split(':')
          return (who === String(uid) || who === name) && Number(count) > 0
        })
    } catch {
      return false
    }
  }
  return listed('/etc/subuid') && listed('/etc/subgid')
}

/** Owner uid of `path`, or undefined when it cannot be read. */
export function ownerOf(path: string): number | undefined {
  try {
    return statSync(path).uid
  } catch {
    return undefined
  }
}

/**
 * The command that runs QEMU (`role: 'qemu'`) or one virtiofsd (`role: 'virtiofsd'`, sharing a
 * directory owned by `sourceOwner`) with as little privilege as this host allows (module comment).
 *
 * @param file absolute path of the program; `args` its arguments.
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` for virtiofsd under a normal user who has
 *   supplementary groups or no `unshare` (Debian 12's virtiofsd cannot start unprivileged then).
 * @example
 * confinedCommand('qemu', '/usr/bin/qemu-system-x86_64', ['-M', 'microvm'], { uid: 0, groups: [], setpriv: '/usr/bin/setpriv', unshare: '/usr/bin/unshare' })
 * // → setpriv --pdeathsig SIGKILL --clear-groups -- unshare --user --map-root-user -- qemu-system-x86_64 -M microvm
 */
export function confinedCommand(role: 'qemu' | 'virtiofsd', file: string, args: string[], host: HostIdentity, sourceOwner?: number): ConfinedCommand {
  const deathsig = (rest: string[]): ConfinedCommand['args'] => (host.setpriv ? ['--pdeathsig', 'SIGKILL', ...rest] : rest)
  const wrap = (confinement: Confinement, setprivArgs: string[], command: string[]): ConfinedCommand =>
    host.setpriv ? { file: host.setpriv, args: [...deathsig(setprivArgs), '--', ...command], confinement } : { file: command[0]!, args: command.slice(1), confinement }
  if (host.uid === 0) {
    const rootOwned = role === 'qemu' || sourceOwner === undefined || sourceOwner === 0
    // setgroups(2) is denied in the namespace: clear the groups before entering it (root may).
    if (host.unshare && host.setpriv && rootOwned) return wrap('userns-root', ['--clear-groups'], [host.unshare, '--user', '--map-root-user', '--', file, ...args])
    return wrap('unconfined', [], [file, ...args])
  }
  if (role === 'qemu') return wrap('user', [], [file, ...args])
  if (!host.unshare || !host.sh) {
    throw new MicrovmSetupError(
      'MICROVM_SETUP_FAILED',
      'microVM file sharing: virtiofsd needs a user namespace to run without root, and this host has no unshare (util-linux) or sh',
      'install util-linux, run svc as root, or use isolation: process',
    )
  }
  if (host.groups.length > 0 && !host.subordinateIds) {
    throw new MicrovmSetupError(
      'MICROVM_SETUP_FAILED',
      `microVM file sharing: virtiofsd cannot run without root for a user with supplementary groups (${host.groups.join(', ')}): it drops them with setgroups(2), which a user namespace made without privilege forbids`,
      'install uidmap (apt-get install -y uidmap) and give the user subordinate ids (usermod --add-subuids 100000-165535 --add-subgids 100000-165535 <user>), or run svc as root (it confines QEMU and virtiofsd in user namespaces), or use isolation: process',
    )
  }
  // Subordinate ids: newuidmap/newgidmap write the maps, which leaves setgroups(2) allowed.
  const map = host.groups.length > 0 ? ['--map-root-user', '--map-auto'] : ['--map-root-user']
  // A private tmpfs on /run: virtiofsd writes its pid file under /run/virtiofsd, which only root may create.
  const script = 'mount -t tmpfs -o size=1m,mode=0755 svc-virtiofsd /run && exec "$0" "$@"'
  return wrap('userns-user', [], [host.unshare, '--user', ...map, '--mount', '--', host.sh, '-c', script, file, ...args])
}

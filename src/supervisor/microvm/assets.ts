/**
 * Guest assets of cli.md §5.7, built once and cached under `$XDG_CACHE_HOME/svc/microvm/`:
 *
 * - `guest-<hash>/`: the Debian cloud kernel (`vmlinuz`) and an initramfs (`initrd.img`) holding
 *   the static busybox, the agent as `/init` ({@link AGENT_SCRIPT}) and the virtio, virtiofs and
 *   overlay modules. The kernel and busybox come from the Debian packages, fetched with
 *   `apt-get download` and unpacked with `dpkg-deb -x` (nothing is installed on the host).
 * - `root-<kind>-<hash>/`: the immutable runtime root filesystem of a worker's language
 *   (`roots.ts`): Node, a Python interpreter and its standard library, or a native binary's
 *   shared libraries, always with busybox (`/bin/sh`, `/usr/bin/env`).
 *
 * Each directory is keyed by a hash of its inputs, built under a lock (`<dir>.lock`) into a
 * temporary directory and renamed into place, so concurrent svc processes build it once and a
 * crash never leaves half a directory that looks complete.
 */
import { execFile } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { gzipSync } from 'node:zlib'
import { AGENT_SCRIPT, GUEST_MODULES } from './agent.ts'

const run = promisify(execFile)

/** A missing host piece, with the `apt-get install` that brings it (cli.md §5.7). */
export class MicrovmSetupError extends Error {
  override readonly name = 'MicrovmSetupError'
  readonly code: string
  readonly hint: string | undefined
  constructor(code: string, message: string, hint?: string) {
    super(message)
    this.code = code
    this.hint = hint
  }
}

/** The Debian package of the guest kernel (a metapackage naming the current cloud kernel). */
export const KERNEL_PACKAGE = 'linux-image-cloud-amd64'
/** The Debian package of the guest's static busybox. */
export const BUSYBOX_PACKAGE = 'busybox-static'

/** The guest kernel and initramfs, and the runtime root. */
export interface GuestAssets {
  kernel: string
  initrd: string
  /** Absolute directory shared read-only as the guest's root (virtiofs tag `runtime`). */
  root: string
}

/** Where to find what; every field has a default. */
export interface AssetOptions {
  /** Default `microvmCacheDir()`. */
  cacheDir: string
  /** Progress lines for first use (`downloading linux-image-…`). */
  onProgress?: (text: string) => void
}

/**
 * Finds a host program on PATH (and a few fixed places), or undefined.
 */
export function findProgram(names: readonly string[], extra: readonly string[] = []): string | undefined {
  const dirs = (process.env.PATH ?? '').split(':').filter(Boolean)
  for (const name of names) {
    for (const dir of dirs) {
      const path = join(dir, name)
      if (isExecutable(path)) return path
    }
  }
  return extra.find(isExecutable)
}

function isExecutable(path: string): boolean {
  try {
    const s = statSync(path)
    return s.isFile() && (s.mode & 0o111) !== 0
  } catch {
    return false
  }
}

/** The Node binary a microVM root carries: the project's `node` package, else the one running svc. */
export function projectNodeBinary(projectRoot: string): string {
  const candidate = join(projectRoot, 'node_modules', 'node', 'bin', 'node')
  return isExecutable(candidate) ? realpathSync(candidate) : realpathSync(process.execPath)
}

/**
 * Makes sure the kernel and initramfs exist in the cache, building them when missing; returns
 * their directory (`vmlinuz`, `initrd.img`). The runtime root comes from `roots.ts`
 * ({@link import('./roots.ts').ensureGuestAssets} builds both).
 *
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` when a host tool is missing (the message names
 *   the `apt-get install`) or a download or unpack fails.
 */
export async function ensureGuest(options: AssetOptions): Promise<string> {
  mkdirSync(options.cacheDir, { recursive: true })
  return buildGuest(options)
}

async function buildGuest(options: AssetOptions): Promise<string> {
  const apt = findProgram(['apt-get'])
  const aptCache = findProgram(['apt-cache'])
  const dpkgDeb = findProgram(['dpkg-deb'])
  if (!apt || !aptCache || !dpkgDeb) {
    throw new MicrovmSetupError(
      'MICROVM_SETUP_FAILED',
      'microVM guest kernel: svc fetches the Debian cloud kernel with apt-get download and dpkg-deb, which this host lacks',
      'use a Debian or Ubuntu host (apt-get install -y apt dpkg), or isolation: process',
    )
  }
  // The kernel version the local package lists name (no network): the key of the directory.
  const kernelPackage = await resolveKernelPackage(aptCache)
  const busyboxVersion = await candidateVersion(aptCache, BUSYBOX_PACKAGE)
  const kernelVersion = await candidateVersion(aptCache, kernelPackage)
  const key = hash([kernelPackage, kernelVersion, busyboxVersion, AGENT_SCRIPT, GUEST_MODULES.join(',')])
  return buildOnce(join(options.cacheDir, `guest-${key}`), async (temp) => {
    const work = join(temp, '.work')
    mkdirSync(work, { recursive: true })
    options.onProgress?.(`downloading ${kernelPackage} ${kernelVersion} and ${BUSYBOX_PACKAGE} (apt-get download, once)`)
    await runTool(apt, ['download', `${kernelPackage}=${kernelVersion}`, `${BUSYBOX_PACKAGE}=${busyboxVersion}`], work, 'apt-get download')
    const debs = readdirSync(work).filter((f) => f.endsWith('.deb'))
    options.onProgress?.('unpacking the kernel and busybox (dpkg-deb -x)')
    const unpacked = join(work, 'x')
    for (const deb of debs) await runTool(dpkgDeb, ['-x', join(work, deb), unpacked], work, 'dpkg-deb -x')
    const boot = join(unpacked, 'boot')
    const vmlinuz = readdirSync(boot).find((f) => f.startsWith('vmlinuz-'))
    if (!vmlinuz) throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `${kernelPackage} holds no /boot/vmlinuz-*`)
    copyFileSync(join(boot, vmlinuz), join(temp, 'vmlinuz'))
    const release = vmlinuz.slice('vmlinuz-'.length)
    const modules = findModules(join(unpacked, 'lib', 'modules', release))
    options.onProgress?.('building the initramfs (busybox, agent, virtio modules)')
    const initrd = join(work, 'initrd')
    mkdirSync(join(initrd, 'bin'), { recursive: true })
    mkdirSync(join(initrd, 'lib', 'modules'), { recursive: true })
    const busybox = join(unpacked, 'bin', 'busybox')
    copyFileSync(busybox, join(initrd, 'bin', 'busybox'))
    chmodSync(join(initrd, 'bin', 'busybox'), 0o755)
    for (const name of GUEST_MODULES) {
      const file = modules.get(name)
      if (!file) throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `${kernelPackage} has no ${name} module`)
      copyFileSync(file, join(initrd, 'lib', 'modules', `${name}.ko`))
    }
    writeFileSync(join(initrd, 'init'), AGENT_SCRIPT, { mode: 0o755 })
    const cpio = await runTool(join(initrd, 'bin', 'busybox'), ['sh', '-c', './bin/busybox find . | ./bin/busybox cpio -o -H newc'], initrd, 'cpio', true)
    writeFileSync(join(temp, 'initrd.img'), gzipSync(cpio))
    rmSync(work, { recursive: true, force: true })
  })
}

/** `linux-image-<release>-cloud-amd64`, the package the metapackage depends on. */
async function resolveKernelPackage(aptCache: string): Promise<string> {
  const { stdout } = await run(aptCache, ['depends', KERNEL_PACKAGE]).catch(() => ({ stdout: '' }))
  const match = /Depends: (linux-image-[0-9][^\s]*-cloud-amd64)/.exec(stdout)
  if (!match) {
    throw new MicrovmSetupError(
      'MICROVM_SETUP_FAILED',
      `microVM guest kernel: apt-cache does not know ${KERNEL_PACKAGE}`,
      'run apt-get update (the Debian main archive must be among the sources), or use isolation: process',
    )
  }
  return match[1]!
}

async function candidateVersion(aptCache: string, name: string): Promise<string> {
  const { stdout } = await run(aptCache, ['policy', name]).catch(() => ({ stdout: '' }))
  const match = /Candidate: (\S+)/.exec(stdout)
  if (!match || match[1] === '(none)') {
    throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `microVM guest: apt-cache has no candidate for ${name}`, 'run apt-get update, or use isolation: process')
  }
  return match[1]!
}

/** Module name (file name without `.ko`, `-` as `_`) → path, under a kernel's module tree. */
function findModules(dir: string): Map<string, string> {
  const found = new Map<string, string>()
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ko')) found.set(entry.name.slice(0, -3).replaceAll('-', '_'), path)
    }
  }
  walk(dir)
  return found
}

/** Copies `/bin/busybox` out of a gzipped newc initramfs into `<root>/bin/busybox`. */
export async function extractBusybox(initrd: string, root: string): Promise<string> {
  const { gunzipSync } = await import('node:zlib')
  const data = gunzipSync(readFileSync(initrd))
  let offset = 0
  while (offset + 110 <= data.length) {
    const header = data.subarray(offset, offset + 110).toString('latin1')
    const size = parseInt(header.slice(54, 62), 16)
    const nameSize = parseInt(header.slice(94, 102), 16)
    const name = data.subarray(offset + 110, offset + 110 + nameSize - 1).toString('utf8')
    const dataStart = align4(offset + 110 + nameSize)
    if (name === 'TRAILER!!!') break
    if (name === './bin/busybox' || name === 'bin/busybox') {
      const target = join(root, 'bin', 'busybox')
      writeFileSync(target, data.subarray(dataStart, dataStart + size))
      return target
    }
    offset = align4(dataStart + size)
  }
  throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `no busybox in ${initrd}`)
}

const align4 = (n: number) => (n + 3) & ~3

/** The absolute paths of the shared libraries `binary` links (and the dynamic loader). */
export async function sharedLibraries(binary: string): Promise<string[]> {
  const { stdout } = await run('ldd', [binary]).catch(() => ({ stdout: '' }))
  const libs = new Set<string>()
  for (const line of stdout.split('\n')) {
    const m = /=>\s+(\/\S+)/.exec(line) ?? /^\s*(\/\S+)\s+\(/.exec(line)
    if (m) libs.add(m[1]!)
  }
  return [...libs].sort()
}

/**
 * Builds `dir` once: under a lock directory `<dir>.lock` (a stale lock whose owner is gone is taken
 * over), into `<dir>.tmp-<pid>`, renamed into place. Returns `dir`.
 */
export async function buildOnce(dir: string, build: (temp: string) => Promise<void>): Promise<string> {
  if (existsSync(dir)) return dir
  const lock = `${dir}.lock`
  for (;;) {
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, 'pid'), String(process.pid))
      break
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      if (existsSync(dir)) return dir
      const owner = Number(readText(join(lock, 'pid')))
      if (owner > 0 && !alive(owner)) rmSync(lock, { recursive: true, force: true })
      else await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }
  try {
    if (existsSync(dir)) return dir
    const temp = `${dir}.tmp-${process.pid}`
    rmSync(temp, { recursive: true, force: true })
    mkdirSync(temp, { recursive: true })
    try {
      await build(temp)
      renameSync(temp, dir)
    } catch (err) {
      rmSync(temp, { recursive: true, force: true })
      throw err
    }
    return dir
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

export function hash(parts: readonly string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16)
}

/** Runs a host tool; its failure becomes a {@link MicrovmSetupError} quoting its last stderr line. */
async function runTool(file: string, args: string[], cwd: string, what: string): Promise<string>
async function runTool(file: string, args: string[], cwd: string, what: string, binary: true): Promise<Buffer>
async function runTool(file: string, args: string[], cwd: string, what: string, binary = false): Promise<string | Buffer> {
  try {
    const { stdout } = await run(file, args, { cwd, maxBuffer: 256 * 1024 * 1024, encoding: binary ? 'buffer' : 'utf8' })
    return stdout
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim().split('\n').filter((l) => !l.startsWith('W:')).at(-1) ?? ''
    throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `microVM guest: ${what} failed${stderr ? `: ${stderr}` : ''}`, 'check the network and the apt sources, then change a file to retry')
  }
}

/**
 * The usable-KVM probe of cli.md §5.7: may this host run a microVM, and with which accelerator?
 *
 * "Usable" is more than "opens": `/dev/kvm` opens read-write for the current user **and** a
 * hardware backend is loaded (`kvm_intel` or `kvm_amd`, in `/sys/module` or `/proc/modules`). A
 * `/dev/kvm` served by a software nested hypervisor (PVM: `kvm_pvm`) cannot boot a stock guest
 * kernel and gets its own message. `SVC_MICROVM_ACCEL=tcg` opts into software emulation instead.
 *
 * The backend scan is cached per boot (`/proc/sys/kernel/random/boot_id`) in
 * `$XDG_CACHE_HOME/svc/microvm/kvm-backend.json`: modules do not change their names while the
 * host runs. The open check runs every time, so a user added to the `kvm` group is not told
 * "denied" from a cache after logging in again.
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { dirname, join } from 'node:path'

/** The messages of cli.md §5.7, by failed condition (`software` and `noBackend` take a module name). */
export const KVM_MESSAGES = {
  notLinux: 'KVM not accessible -- microVM isolation needs Linux with /dev/kvm; use isolation: process on this host',
  missing: 'KVM not accessible -- /dev/kvm does not exist; enable hardware (or nested) virtualization, or use isolation: process',
  denied:
    "KVM not accessible -- /dev/kvm exists but the current user cannot open it; add the user to the 'kvm' group (sudo usermod -aG kvm $USER) and log in again",
  software: (module: string) =>
    `KVM not accessible -- /dev/kvm is provided by ${module}, which cannot boot a standard guest kernel; use isolation: process, or SVC_MICROVM_ACCEL=tcg to emulate (slow)`,
  noBackend:
    'KVM not accessible -- /dev/kvm opens but no hardware backend is loaded (kvm_intel or kvm_amd); load one (sudo modprobe kvm_intel, or kvm_amd), use isolation: process, or SVC_MICROVM_ACCEL=tcg to emulate (slow)',
} as const

/** Hardware KVM backends: the guest runs on the CPU's virtualization extensions. */
export const HARDWARE_BACKENDS = ['kvm_intel', 'kvm_amd'] as const

/** Software nested hypervisors known to serve `/dev/kvm` without booting a stock kernel. */
export const SOFTWARE_BACKENDS = ['kvm_pvm'] as const

/**
 * The probe's verdict. `accel` is QEMU's `-accel` value: `kvm` on a usable hardware backend,
 * `tcg` when `SVC_MICROVM_ACCEL=tcg` asked for software emulation.
 */
export type KvmCheck =
  | { ok: true; accel: 'kvm' | 'tcg'; backend?: string }
  | { ok: false; code: 'KVM_NOT_ACCESSIBLE' | 'INVALID_ARGUMENT'; message: string }

export interface KvmCheckOptions {
  /** Default `process.platform`. */
  platform?: NodeJS.Platform
  /** Default `/dev/kvm`. */
  devicePath?: string
  /** Loaded (and built-in, with parameters) kernel modules, one directory each. Default `/sys/module`. */
  sysModuleDir?: string
  /** Loaded modules, one a line (`name size refs …`). Default `/proc/modules`. */
  procModulesPath?: string
  /** This boot's id. Default `/proc/sys/kernel/random/boot_id`. */
  bootIdPath?: string
  /** Where the backend verdict is cached; `false` disables the cache. Default {@link microvmCacheDir}. */
  cacheDir?: string | false
  /** Read for `SVC_MICROVM_ACCEL` and `XDG_CACHE_HOME`. Default `process.env`. */
  env?: NodeJS.ProcessEnv
}

/**
 * `$XDG_CACHE_HOME/svc/microvm`, else `~/.cache/svc/microvm` (cli.md §5.7): the probe's cache and
 * the guest assets.
 */
export function microvmCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME
  const base = xdg && xdg.startsWith('/') ? xdg : join(homedir(), '.cache')
  return join(base, 'svc', 'microvm')
}

/** What the module scan found: a hardware backend, a software one, or none. */
type Backend = { kind: 'hardware' | 'software' | 'none'; module?: string }

/** File name of the per-boot backend cache inside the cache directory. */
export const BACKEND_CACHE_FILE = 'kvm-backend.json'

/**
 * Runs the probe of cli.md §5.7.
 *
 * Order: not Linux; `SVC_MICROVM_ACCEL` (`tcg` passes without `/dev/kvm`; a value other than
 * `kvm`/`tcg` is `INVALID_ARGUMENT`); `/dev/kvm` opens read-write (missing, or denied); a hardware
 * backend is loaded (else the software module's message, or the no-backend one).
 *
 * @returns `{ ok: true, accel, backend? }`, or `{ ok: false, code, message }` with one of {@link KVM_MESSAGES}.
 * @example
 * const kvm = checkKvm()
 * if (!kvm.ok) console.error(kvm.message)
 * else console.log(`qemu -accel ${kvm.accel}`)
 */
export function checkKvm(options: KvmCheckOptions = {}): KvmCheck {
  const platform = options.platform ?? process.platform
  if (platform !== 'linux') return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.notLinux }
  const env = options.env ?? process.env
  const accel = env.SVC_MICROVM_ACCEL
  if (accel === 'tcg') return { ok: true, accel: 'tcg' }
  if (accel !== undefined && accel !== '' && accel !== 'kvm') {
    return {
      ok: false,
      code: 'INVALID_ARGUMENT',
      message: `SVC_MICROVM_ACCEL is ${JSON.stringify(accel.length > 40 ? `${accel.slice(0, 40)}…` : accel)}; use kvm (the default) or tcg (software emulation, slow)`,
    }
  }
  const path = options.devicePath ?? '/dev/kvm'
  try {
    closeSync(openSync(path, 'r+'))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const missing = code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENXIO' || code === 'ENODEV'
    return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: missing ? KVM_MESSAGES.missing : KVM_MESSAGES.denied }
  }
  const backend = cachedBackend(options, env)
  if (backend.kind === 'hardware') return { ok: true, accel: 'kvm', backend: backend.module! }
  if (backend.kind === 'software') return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.software(backend.module!) }
  return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.noBackend }
}

/** The backend scan, from this boot's cache entry when there is one; the cache is best effort. */
function cachedBackend(options: KvmCheckOptions, env: NodeJS.ProcessEnv): Backend {
  const bootId = readText(options.bootIdPath ?? '/proc/sys/kernel/random/boot_id')?.trim()
  const dir = options.cacheDir === undefined ? microvmCacheDir(env) : options.cacheDir
  const file = dir === false || !bootId ? undefined : join(dir, BACKEND_CACHE_FILE)
  if (file) {
    const cached = parseCache(readText(file), bootId!)
    if (cached) return cached
  }
  const backend = scanBackend(options)
  if (file) {
    try {
      mkdirSync(dirname(file), { recursive: true })
      const temp = `${file}.${process.pid}.tmp`
      writeFileSync(temp, `${JSON.stringify({ boot_id: bootId, ...backend })}\n`)
      renameSync(temp, file)
    } catch {
      // An unwritable cache only costs a directory scan next time.
    }
  }
  return backend
}

/** A cache entry for `bootId`, or undefined for another boot or anything malformed. */
function parseCache(text: string | undefined, bootId: string): Backend | undefined {
  if (text === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const v = value as Record<string, unknown>
  if (v.boot_id !== bootId) return undefined
  if (v.kind === 'none' && v.module === undefined) return { kind: 'none' }
  if (v.kind === 'hardware' && (HARDWARE_BACKENDS as readonly unknown[]).includes(v.module)) return { kind: 'hardware', module: v.module as string }
  if (v.kind === 'software' && typeof v.module === 'string' && /^kvm_[a-z0-9_]{1,32}$/.test(v.module)) return { kind: 'software', module: v.module }
  return undefined
}

/**
 * Which module serves `/dev/kvm`: `kvm_intel`/`kvm_amd` (hardware) win; otherwise a known software
 * backend, or any other `kvm_*` module except the arch-independent ones (`kvm` itself).
 */
function scanBackend(options: KvmCheckOptions): Backend {
  const modules = new Set<string>()
  try {
    for (const name of readdirSync(options.sysModuleDir ?? '/sys/module')) modules.add(name)
  } catch {
    // No sysfs (a container without it): /proc/modules below.
  }
  for (const line of (readText(options.procModulesPath ?? '/proc/modules') ?? '').split('\n')) {
    const name = line.split(' ')[0]
    if (name) modules.add(name)
  }
  const hardware = HARDWARE_BACKENDS.find((m) => modules.has(m))
  if (hardware) return { kind: 'hardware', module: hardware }
  const software = SOFTWARE_BACKENDS.find((m) => modules.has(m)) ?? [...modules].sort().find((m) => /^kvm_[a-z0-9_]{1,32}$/.test(m))
  if (software) return { kind: 'software', module: software }
  return { kind: 'none' }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * The host check for microVM isolation (cli.md §5.7): Linux, `/dev/kvm` present, and openable for
 * reading and writing by the current user.
 */
import { closeSync, openSync } from 'node:fs'

/** The messages of cli.md §5.7, by failed condition. */
export const KVM_MESSAGES = {
  notLinux: 'KVM not accessible -- microVM isolation needs Linux with /dev/kvm; use isolation: process on this host',
  missing: 'KVM not accessible -- /dev/kvm does not exist; enable hardware (or nested) virtualization, or use isolation: process',
  denied:
    "KVM not accessible -- /dev/kvm exists but the current user cannot open it; add the user to the 'kvm' group (sudo usermod -aG kvm $USER) and log in again",
} as const

export type KvmCheck = { ok: true } | { ok: false; code: 'KVM_NOT_ACCESSIBLE'; message: string }

export interface KvmCheckOptions {
  /** Default `process.platform`. */
  platform?: NodeJS.Platform
  /** Default `/dev/kvm`. */
  devicePath?: string
}

/**
 * Runs the KVM check of cli.md §5.7. The device is opened read-write and closed again; an open
 * that fails because the node exists without a driver behind it (ENXIO, ENODEV) counts as missing.
 *
 * @returns `{ ok: true }`, or `{ ok: false, code: 'KVM_NOT_ACCESSIBLE', message }` with one of {@link KVM_MESSAGES}.
 * @example
 * const kvm = checkKvm()
 * if (!kvm.ok) console.error(kvm.message)
 */
export function checkKvm(options: KvmCheckOptions = {}): KvmCheck {
  const platform = options.platform ?? process.platform
  if (platform !== 'linux') return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: KVM_MESSAGES.notLinux }
  const path = options.devicePath ?? '/dev/kvm'
  try {
    closeSync(openSync(path, 'r+'))
    return { ok: true }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const missing = code === 'ENOENT' || code === 'ENOTDIR' || code === 'ENXIO' || code === 'ENODEV'
    return { ok: false, code: 'KVM_NOT_ACCESSIBLE', message: missing ? KVM_MESSAGES.missing : KVM_MESSAGES.denied }
  }
}

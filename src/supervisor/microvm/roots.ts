/**
 * The immutable runtime roots of cli.md §5.7: the read-only file system a microVM worker's process
 * sees at `/` (under a tmpfs overlay), one per language, built once under
 * `$XDG_CACHE_HOME/svc/microvm/root-<kind>-<hash>/` and keyed by a hash of their inputs:
 *
 * - `node`: the project's own `node` binary and the libraries it links, and an `npx` that runs a
 *   package's binary from `node_modules/.bin`; for guest installs also the host's npm.
 * - `python`: the host interpreter a worker's virtual environment was made with (or the `python3`
 *   on PATH), **at its host path**, its standard library (without `site-packages`, `test`,
 *   `idlelib`, `tkinter`, `turtledemo` and the `config-*` build files) and `lib-dynload`, the
 *   libraries all of them link, and the system libraries manylinux wheels may link
 *   ({@link WHEEL_LIBRARIES}). Keeping the host path is what makes a venv work unchanged: its
 *   `bin/python` is a symlink to that absolute path and `pyvenv.cfg` names its directory as `home`.
 *   `python3` and `python` on the guest's PATH name the same interpreter; the host's CA bundle
 *   (`/etc/ssl/certs/ca-certificates.crt`) for pip.
 * - `native`: for a compiled (Rust) worker whose release binary lives in `/workspace`, only the
 *   shared libraries it links (from `ldd`; glibc and libgcc_s at least). The binary itself is not
 *   part of the root, so a rebuild never rebuilds the root.
 *
 * Every root also carries the static busybox as `/bin/sh` and a few applets, `/etc/passwd`,
 * `/etc/group` and `/etc/hosts` (`svc-engine` is `10.0.2.100`). Host packages upgraded since a
 * root was built (the mtime of dpkg's status file is among the inputs) give a new root.
 */
import { execFile } from 'node:child_process'
import { chmodSync, copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import { promisify } from 'node:util'
import { buildOnce, ensureGuest, extractBusybox, hash, MicrovmSetupError, sharedLibraries } from './assets.ts'
import type { AssetOptions, GuestAssets } from './assets.ts'

const run = promisify(execFile)

/** What a runtime root carries. */
export type RuntimeSpec =
  /**
   * `nodeBinary`: the project's `node_modules/node/bin/node`, else the Node running svc; `npm`: the
   * host's npm package directory, carried for guest installs (`/usr/local/bin/npm`).
   */
  | { kind: 'node'; nodeBinary: string; npm?: string }
  /** `interpreter`: a venv's `bin/python` (whose base interpreter is carried) or a host `python3`. */
  | { kind: 'python'; interpreter: string }
  /** `binary`: the host path of the compiled worker (in its directory); undefined before a build. */
  | { kind: 'native'; binary: string | undefined }

/** Where a root is built and what it takes from the guest build. */
export interface RootContext {
  cacheDir: string
  /** The guest initramfs, whose busybox every root copies. */
  initrd: string
  onProgress?: (text: string) => void
}

/** Bumped when the layout of a root changes, so old cached roots are not reused. */
const LAYOUT = '2'

/** The system libraries every glibc program may link besides those `ldd` names (dlopened ones). */
export const GLIBC_LIBRARIES = ['libc.so.6', 'libm.so.6', 'libpthread.so.0', 'libdl.so.2', 'librt.so.1', 'libutil.so.1', 'libgcc_s.so.1'] as const

/**
 * The libraries a manylinux wheel may link without carrying them (PEP 599/600, less the X11 and GL
 * ones): the Python root holds those present on the host, so wheels such as pydantic-core import.
 */
export const WHEEL_LIBRARIES = [...GLIBC_LIBRARIES, 'libcrypt.so.1', 'libstdc++.so.6', 'libz.so.1', 'libexpat.so.1'] as const

/**
 * The host's CA bundle (Debian's ca-certificates): pip, and npm under `NODE_EXTRA_CA_CERTS`-style
 * settings, verify the registries against it; copied at the same path into the Python root and a
 * Node root that carries npm, so `PIP_CERT`/`REQUESTS_CA_BUNDLE`/pip.conf settings naming it hold.
 */
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt'

/** The dynamic loader x86-64 glibc binaries name. */
const X86_64_LOADER = '/lib64/ld-linux-x86-64.so.2'

/** Directories searched for {@link GLIBC_LIBRARIES} and {@link WHEEL_LIBRARIES} (Debian multiarch first). */
const LIBRARY_DIRS = ['/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu', '/lib64', '/usr/lib64', '/lib', '/usr/lib'] as const

/** Top-level entries of a Python standard library the root leaves out (tests, GUI, build files, packages). */
const STDLIB_LEFT_OUT = /^(site-packages|dist-packages|test|idlelib|tkinter|turtledemo|config-[^/]*)$/

/** Extension modules of `lib-dynload` the root leaves out with their libraries (Tk and X11). */
const DYNLOAD_LEFT_OUT = /^_tkinter\./

/** `npx <bin> args…` in the guest: the package's binary from node_modules/.bin, nothing fetched. */
const NPX_SHIM = `#!/bin/sh
# svc microVM root: npx runs an installed package binary; the guest reaches no registry.
while [ $# -gt 0 ]; do case "$1" in -y|--yes|--no-install|--offline) shift ;; --) shift; break ;; -*) shift ;; *) break ;; esac; done
bin="$1"; shift
dir="$PWD"
while [ "$dir" != "/" ]; do
  [ -x "$dir/node_modules/.bin/$bin" ] && exec "$dir/node_modules/.bin/$bin" "$@"
  dir=$(dirname "$dir")
done
echo "npx: $bin is not installed in node_modules (the microVM has no registry access; add it to package.json)" >&2
exit 127
`

/** What a Python interpreter says about itself ({@link describePython}). */
export interface PythonInstall {
  /** Real path of the base interpreter (not the venv's link). */
  executable: string
  /** Every path from the venv's `bin/python` (exclusive) to {@link executable}: the links to keep. */
  links: string[]
  /** `sysconfig.get_path('stdlib')` of the base installation, and its `lib-dynload` (`DESTSHARED`). */
  stdlib: string
  dynload: string
  /** `3.11.7` */
  version: string
}

const PYTHON_PROBE = `import json, os, sys, sysconfig
stdlib = sysconfig.get_path("stdlib", vars={"installed_base": sys.base_prefix, "base": sys.base_prefix})
dyn = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
print(json.dumps({"base": sys._base_executable, "stdlib": stdlib, "dynload": dyn, "version": "%d.%d.%d" % sys.version_info[:3]}))
`

/**
 * Asks `interpreter` (a venv's `bin/python`, or a host `python3`) where its base installation is.
 *
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` when it does not run or answers nonsense.
 */
export async function describePython(interpreter: string): Promise<PythonInstall> {
  let answer: { base?: unknown; stdlib?: unknown; dynload?: unknown; version?: unknown }
  try {
    const { stdout } = await run(interpreter, ['-I', '-c', PYTHON_PROBE], { timeout: 30_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    answer = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')
  } catch (err) {
    throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `microVM Python root: ${interpreter} did not describe itself (${(err as Error).message.split('\n')[0]})`, 'install Python 3 (apt-get install -y python3 python3-venv), or use isolation: process')
  }
  const text = (v: unknown) => (typeof v === 'string' && isAbsolute(v) ? v : undefined)
  const base = text(answer.base)
  const stdlib = text(answer.stdlib)
  if (!base || !stdlib || typeof answer.version !== 'string') {
    throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `microVM Python root: ${interpreter} gave no base interpreter and standard library`)
  }
  const executable = realpathSync(base)
  // The venv's own links live in /workspace; the hops after them must exist in the root.
  const venv = dirname(dirname(resolve(interpreter)))
  const inVenv = existsSync(join(venv, 'pyvenv.cfg')) ? (p: string) => isInside(p, venv) : () => false
  // Only symlinks are kept: a wrapper script (pyenv's shim) is not the interpreter and stays out.
  const links = linkChain(interpreter).filter((p) => p !== executable && !inVenv(p) && isLink(p))
  for (const p of linkChain(base)) if (p !== executable && !links.includes(p) && isLink(p)) links.push(p)
  return { executable, links, stdlib: realpathSync(stdlib), dynload: realpathSync(text(answer.dynload) ?? join(stdlib, 'lib-dynload')), version: answer.version }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink()
  } catch {
    return false
  }
}

/** `path`, then each symlink target in turn (absolute), up to the file; at most 16 hops. */
export function linkChain(path: string): string[] {
  const chain = [resolve(path)]
  for (let i = 0; i < 16; i++) {
    const current = chain.at(-1)!
    let st
    try {
      st = lstatSync(current)
    } catch {
      break
    }
    if (!st.isSymbolicLink()) break
    chain.push(resolve(dirname(current), readlinkSync(current)))
  }
  return chain
}

/**
 * Makes sure the kernel, the initramfs and the runtime root `options.runtime` asks for exist in the
 * cache, building what is missing.
 *
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` when a host tool is missing (the message names
 *   the `apt-get install`), a download or unpack fails, or the runtime cannot be described.
 */
export async function ensureGuestAssets(options: AssetOptions & { runtime: RuntimeSpec }): Promise<GuestAssets> {
  const guest = await ensureGuest(options)
  const initrd = join(guest, 'initrd.img')
  const root = await ensureRuntimeRoot(options.runtime, { cacheDir: options.cacheDir, initrd, onProgress: options.onProgress })
  return { kernel: join(guest, 'vmlinuz'), initrd, root }
}

/**
 * Builds (once) the root `spec` asks for and returns its directory.
 *
 * @throws {MicrovmSetupError} `MICROVM_SETUP_FAILED` when the interpreter cannot describe itself or
 *   a file of the root cannot be copied.
 */
export async function ensureRuntimeRoot(spec: RuntimeSpec, context: RootContext): Promise<string> {
  try {
    if (spec.kind === 'python') return await pythonRoot(await describePython(spec.interpreter), context)
    if (spec.kind === 'native') return await nativeRoot(spec.binary, context)
    return await nodeRoot(spec.nodeBinary, spec.npm, context)
  } catch (err) {
    if (err instanceof MicrovmSetupError) throw err
    // A file that vanished or cannot be read while copying: the worker fails with a message, not a stack.
    throw new MicrovmSetupError('MICROVM_SETUP_FAILED', `microVM ${spec.kind} root: ${(err as Error).message}`, 'check the interpreter or binary the message names, then change a file to retry')
  }
}

async function nodeRoot(node: string, npm: string | undefined, context: RootContext): Promise<string> {
  const libs = await sharedLibraries(node)
  const withNpm = npm === undefined ? [] : ['npm', ...fingerprint([join(npm, 'package.json'), CA_BUNDLE])]
  const key = hash([LAYOUT, 'node', ...fingerprint([node, ...libs]), NPX_SHIM, context.initrd, ...withNpm])
  return buildOnce(join(context.cacheDir, `root-node-${key}`), async (temp) => {
    context.onProgress?.(`building the Node root filesystem (${node})`)
    await baseRoot(temp, context.initrd)
    copyFileSync(node, join(temp, 'usr/local/bin/node'))
    chmodSync(join(temp, 'usr/local/bin/node'), 0o755)
    copyLibraries(temp, libs)
    writeFileSync(join(temp, 'usr/local/bin/npx'), NPX_SHIM, { mode: 0o755 })
    if (npm !== undefined) {
      cpSync(npm, join(temp, 'usr/local/lib/node_modules/npm'), { recursive: true, dereference: true })
      writeFileSync(join(temp, 'usr/local/bin/npm'), '#!/bin/sh\nexec /usr/local/bin/node /usr/local/lib/node_modules/npm/bin/npm-cli.js "$@"\n', { mode: 0o755 })
      copyCaBundle(temp)
    }
  })
}

async function pythonRoot(python: PythonInstall, context: RootContext): Promise<string> {
  const libs = await sharedLibraries(python.executable)
  const system = systemLibraries(WHEEL_LIBRARIES)
  const key = hash([LAYOUT, 'python', python.version, python.stdlib, python.dynload, ...python.links, ...fingerprint([python.executable, join(python.stdlib, 'os.py'), python.dynload, ...libs, ...system, CA_BUNDLE]), dpkgStamp(), context.initrd])
  return buildOnce(join(context.cacheDir, `root-python-${key}`), async (temp) => {
    context.onProgress?.(`building the Python ${python.version} root filesystem (${python.executable}, its standard library)`)
    await baseRoot(temp, context.initrd)
    copyFile(python.executable, temp)
    for (const link of python.links) {
      const target = join(temp, link)
      mkdirSync(dirname(target), { recursive: true })
      if (!existsSync(target)) symlinkSync(readlinkSync(link), target)
    }
    for (const name of ['python3', 'python']) symlinkSync(python.executable, join(temp, 'usr/local/bin', name))
    // The GUI's extension module goes with tkinter (it links X11 and Tk).
    const wanted = (top: string) => (source: string) => !(top === python.stdlib && STDLIB_LEFT_OUT.test(relative(top, source))) && !DYNLOAD_LEFT_OUT.test(basename(source))
    cpSync(python.stdlib, join(temp, python.stdlib), { recursive: true, verbatimSymlinks: true, filter: wanted(python.stdlib) })
    if (!isInside(python.dynload, python.stdlib)) cpSync(python.dynload, join(temp, python.dynload), { recursive: true, verbatimSymlinks: true, filter: wanted(python.dynload) })
    // The extension modules' own libraries (libssl for _ssl, libffi for _ctypes, …).
    const extensionLibs = new Set<string>()
    for (const file of listSharedObjects(python.dynload).filter((f) => !DYNLOAD_LEFT_OUT.test(basename(f)))) for (const lib of await sharedLibraries(file)) extensionLibs.add(lib)
    copyLibraries(temp, [...new Set([...libs, ...extensionLibs, ...system])])
    copyCaBundle(temp)
  })
}

async function nativeRoot(binary: string | undefined, context: RootContext): Promise<string> {
  const linked = binary !== undefined && existsSync(binary) ? await sharedLibraries(binary) : []
  // The loader at the path x86-64 binaries name (PT_INTERP), whether or not a binary exists yet.
  const loader = existsSync(X86_64_LOADER) ? [X86_64_LOADER] : []
  const libs = [...new Set([...linked, ...systemLibraries(GLIBC_LIBRARIES), ...loader])].sort()
  const key = hash([LAYOUT, 'native', ...fingerprint(libs), context.initrd])
  return buildOnce(join(context.cacheDir, `root-native-${key}`), async (temp) => {
    context.onProgress?.(`building the native root filesystem (${libs.length} shared libraries)`)
    await baseRoot(temp, context.initrd)
    copyLibraries(temp, libs)
  })
}

/** The directories, busybox and `/etc` files every root has. */
async function baseRoot(temp: string, initrd: string): Promise<void> {
  for (const dir of ['bin', 'usr/bin', 'usr/local/bin', 'etc', 'tmp', 'workspace', 'proc', 'dev', 'sys']) mkdirSync(join(temp, dir), { recursive: true })
  // busybox from the initramfs build (the same Debian busybox-static).
  const busybox = await extractBusybox(initrd, temp)
  chmodSync(busybox, 0o755)
  for (const applet of ['sh', 'env', 'cat', 'ls', 'sleep', 'kill', 'dirname', 'sed', 'echo', 'true', 'false', 'mkdir', 'rm', 'cp', 'mv', 'ln', 'id', 'wget', 'nc']) {
    const where = applet === 'env' ? 'usr/bin' : 'bin'
    if (!existsSync(join(temp, where, applet))) symlinkSync('/bin/busybox', join(temp, where, applet))
  }
  writeFileSync(join(temp, 'etc/passwd'), 'root:x:0:0:root:/tmp:/bin/sh\n')
  writeFileSync(join(temp, 'etc/group'), 'root:x:0:\n')
  writeFileSync(join(temp, 'etc/hosts'), '127.0.0.1 localhost\n10.0.2.100 svc-engine\n')
}

/** The host's CA bundle at its path, when it has one (public certificates only). */
function copyCaBundle(root: string): void {
  if (!existsSync(CA_BUNDLE)) return
  mkdirSync(join(root, dirname(CA_BUNDLE)), { recursive: true })
  copyFileSync(realpathSync(CA_BUNDLE), join(root, CA_BUNDLE))
}

/** Copies each library's content to its path as named (a symlinked name becomes a file). */
function copyLibraries(root: string, libs: readonly string[]): void {
  for (const lib of libs) {
    const target = join(root, lib)
    if (existsSync(target)) continue
    mkdirSync(dirname(target), { recursive: true })
    copyFileSync(realpathSync(lib), target)
  }
}

function copyFile(path: string, root: string): void {
  const target = join(root, path)
  mkdirSync(dirname(target), { recursive: true })
  copyFileSync(path, target)
  chmodSync(target, statSync(path).mode & 0o777)
}

/** The first of `LIBRARY_DIRS` holding each name; names found nowhere are left out. */
function systemLibraries(names: readonly string[]): string[] {
  const found: string[] = []
  for (const name of names) {
    const dir = LIBRARY_DIRS.find((d) => existsSync(join(d, name)))
    if (dir) found.push(join(dir, name))
  }
  return found
}

function listSharedObjects(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.so'))
      .map((f) => join(dir, f))
  } catch {
    return []
  }
}

function isInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep)
}

/** `path:size:mtime` of each file (missing ones as `path:-`), the inputs of a root's key. */
function fingerprint(paths: readonly string[]): string[] {
  return paths.map((p) => {
    try {
      const s = statSync(p)
      return `${p}:${s.size}:${s.mtimeMs}`
    } catch {
      return `${p}:-`
    }
  })
}

/** The mtime of dpkg's status file: changes whenever a host package is installed or upgraded. */
function dpkgStamp(): string {
  try {
    return String(statSync('/var/lib/dpkg/status').mtimeMs)
  } catch {
    return '-'
  }
}

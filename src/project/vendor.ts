/**
 * The svc-sdk tarball a new project vendors (issue 11). svc-sdk is not on a registry, so
 * `svc project init` copies `svc-sdk-<v>.tgz` into the project's `vendor/` folder and its
 * package.json files depend on it by a relative `file:` path (dependencies.ts): the project installs
 * offline, and keeps working when moved, committed or cloned.
 */
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { CliError, ExitCode } from '../lib/errors.ts'
import { packSdk, SDK_WORKSPACES, WORKSPACES } from './bundle.ts'

/** The folder of a project (or of a scaffolded worker) that holds vendored tarballs. */
export const VENDOR_DIRECTORY = 'vendor'

/**
 * File name of a vendored package tarball, as `npm pack` names it.
 *
 * @example vendoredFileName('svc-sdk', '0.1.0') // 'svc-sdk-0.1.0.tgz'
 */
export function vendoredFileName(name: string, version: string): string {
  return `${name}-${version}.tgz`
}

/**
 * The svc-sdk tarball for the CLI rooted at `cliRoot`, or undefined when it has none:
 * - an installed CLI (`npm run pack:dist`) ships it as `<cliRoot>/vendor/svc-sdk-<v>.tgz`;
 * - a source checkout (its `packages/sdk/package.json` names svc-sdk) packs its built SDK into
 *   `<cliRoot>/dist/vendor/svc-sdk-<v>.tgz` on first use (a few seconds), and again whenever a file
 *   of the SDK, svc-helpers or svc-protocol (`dist/`, package.json) is newer than the tarball.
 *
 * @throws when packing the checkout's SDK fails (not built, npm missing)
 */
export function sdkTarball(cliRoot: string, version: string): string | undefined {
  const name = vendoredFileName('svc-sdk', version)
  const shipped = join(cliRoot, VENDOR_DIRECTORY, name)
  if (existsSync(shipped)) return shipped
  if (!isCheckout(cliRoot)) return undefined
  const out = join(cliRoot, 'dist', VENDOR_DIRECTORY)
  const built = join(out, name)
  if (existsSync(built) && statSync(built).mtimeMs >= newestSdkSource(cliRoot)) return built
  const packed = packSdk(cliRoot, out)
  // The SDK's own package.json version names the tarball; a CLI of another version has none.
  return packed === built ? built : undefined
}

/** File name of the browser SDK bundle (sdk.md §13), in `vendor/` of an installed CLI and in projects. */
export const BROWSER_SDK_FILE = 'svc-browser-sdk.js'

/** The browser SDK's package directory in a source checkout. */
const BROWSER_SDK_PACKAGE = join('packages', 'browser-sdk')

/**
 * The svc-browser-sdk bundle (one self-contained ES module) for the CLI rooted at `cliRoot`, which
 * a template's page loads (`TemplateInfo.browserSdk`): a project serves it itself, so the page
 * needs no bundler, no registry and no CDN, and runs the SDK of the CLI that created it.
 * - an installed CLI (`npm run pack:dist`) ships it as `<cliRoot>/vendor/svc-browser-sdk.js`;
 * - a source checkout builds it (`npm run build` does; here on first use, a fraction of a second)
 *   into `packages/browser-sdk/dist/`, and again whenever a source of the SDK or a file of the
 *   built client core (`packages/protocol/dist`) is newer.
 *
 * @throws {CliError} `BROWSER_SDK_MISSING` (exit 1) when the CLI has none and cannot build one.
 */
export function browserSdkBundle(cliRoot: string): string {
  const shipped = join(cliRoot, VENDOR_DIRECTORY, BROWSER_SDK_FILE)
  if (existsSync(shipped)) return shipped
  const pkg = join(cliRoot, BROWSER_SDK_PACKAGE)
  const missing = (cause?: unknown) =>
    new CliError({
      code: 'BROWSER_SDK_MISSING',
      message: `This svc has no ${BROWSER_SDK_FILE} to copy into the project`,
      exitCode: ExitCode.Failure,
      hint: 'in a source checkout, run npm run build; otherwise reinstall svc from a tarball made by npm run pack:dist',
      cause,
    })
  if (!existsSync(join(pkg, 'package.json'))) throw missing()
  const built = join(pkg, 'dist', BROWSER_SDK_FILE)
  const sources = Math.max(newestIn(join(pkg, 'src')), newestIn(join(pkg, 'scripts')), newestIn(join(cliRoot, 'packages', WORKSPACES['svc-protocol']!, 'dist')))
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return built
  try {
    execFileSync(process.execPath, [join(pkg, 'scripts', 'build.mjs')], { stdio: ['ignore', 'ignore', 'pipe'] })
  } catch (err) {
    throw missing(err)
  }
  if (!existsSync(built)) throw missing()
  return built
}

function isCheckout(cliRoot: string): boolean {
  const file = join(cliRoot, 'packages', WORKSPACES['svc-sdk']!, 'package.json')
  if (!existsSync(file)) return false
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === 'svc-sdk'
  } catch {
    return false
  }
}

/** Newest modification time (ms) of the files under `path` (or of `path` itself), 0 when absent. */
function newestIn(path: string): number {
  if (!existsSync(path)) return 0
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = 0
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestIn(join(path, entry)))
  return newest
}

/** Newest modification time (ms) among the files the SDK tarball is made of. */
function newestSdkSource(cliRoot: string): number {
  let newest = 0
  for (const name of ['svc-sdk', ...SDK_WORKSPACES]) {
    const dir = join(cliRoot, 'packages', WORKSPACES[name]!)
    newest = Math.max(newest, newestIn(join(dir, 'package.json')), newestIn(join(dir, 'dist')))
  }
  return newest
}

/**
 * Where the Python and Rust SDKs go in a project and in an installed CLI (issue 18): the wheels of
 * svc-sdk and svc-helpers under `vendor/python/`, the Rust workspace (crates `svc-sdk`,
 * `svc-helpers`) under `vendor/rust/`.
 */
export const PYTHON_VENDOR_DIRECTORY = 'vendor/python'
export const RUST_VENDOR_DIRECTORY = 'vendor/rust'

/** The Python distributions a project vendors, in install order, with their checkout directories. */
export const PYTHON_DISTRIBUTIONS: ReadonlyArray<{ name: string; directory: string }> = [
  { name: 'svc-helpers', directory: join('packages', 'helpers-python') },
  { name: 'svc-sdk', directory: join('packages', 'sdk-python') },
]

/**
 * File name of a pure-Python wheel as pip and hatchling name it (PEP 427: `-` in the name becomes `_`).
 *
 * @example wheelFileName('svc-sdk', '0.1.0') // 'svc_sdk-0.1.0-py3-none-any.whl'
 */
export function wheelFileName(name: string, version: string): string {
  return `${name.replace(/-/g, '_')}-${version}-py3-none-any.whl`
}

/** The `version = "…"` of a pyproject.toml's `[project]` table, or undefined. */
function pyprojectVersion(file: string): string | undefined {
  let table = ''
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const header = /^\s*\[([^\]]+)\]\s*$/.exec(line)
    if (header) table = header[1]!.trim()
    const version = /^\s*version\s*=\s*"([^"]+)"/.exec(line)
    if (version && table === 'project') return version[1]
  }
  return undefined
}

const pythonMissing = (cause?: unknown) =>
  new CliError({
    code: 'PYTHON_SDK_MISSING',
    message: 'This svc has no Python SDK wheels to copy into the project',
    exitCode: ExitCode.Failure,
    hint: 'in a source checkout, check that python3 -m pip wheel works (it fetches the build backend hatchling from PyPI once); otherwise reinstall svc from a tarball made by npm run pack:dist',
    cause,
  })

/**
 * The wheels of svc-helpers and svc-sdk (Python) for the CLI rooted at `cliRoot`, helpers first,
 * which the `python` template copies into `vendor/python/` (the project's requirements.txt names
 * them by relative path, so pip takes svc's packages from there and nothing of that name from an
 * index):
 * - an installed CLI (`npm run pack:dist`) ships them in `<cliRoot>/vendor/python/`;
 * - a source checkout builds them with `python3 -m pip wheel --no-deps` into
 *   `<cliRoot>/dist/vendor/python/` on first use (a few seconds; pip fetches the build backend,
 *   hatchling, from PyPI the first time), and again when a source file is newer than its wheel.
 *
 * @returns absolute paths of the two wheels
 * @throws {CliError} `PYTHON_SDK_MISSING` (exit 1) when the CLI ships none and cannot build them.
 */
export function pythonWheels(cliRoot: string): string[] {
  const shipped = join(cliRoot, ...PYTHON_VENDOR_DIRECTORY.split('/'))
  const checkout = PYTHON_DISTRIBUTIONS.every((d) => existsSync(join(cliRoot, d.directory, 'pyproject.toml')))
  if (!checkout) {
    const found = existsSync(shipped) ? readdirSync(shipped).filter((f) => f.endsWith('.whl')) : []
    const wheels = PYTHON_DISTRIBUTIONS.map((d) => found.find((f) => f.startsWith(`${d.name.replace(/-/g, '_')}-`)))
    if (wheels.some((w) => w === undefined)) throw pythonMissing()
    return wheels.map((w) => join(shipped, w!))
  }
  const out = join(cliRoot, 'dist', ...PYTHON_VENDOR_DIRECTORY.split('/'))
  return PYTHON_DISTRIBUTIONS.map((d) => {
    const source = join(cliRoot, d.directory)
    const version = pyprojectVersion(join(source, 'pyproject.toml'))
    if (version === undefined) throw pythonMissing(new Error(`${d.directory}/pyproject.toml names no version`))
    const wheel = join(out, wheelFileName(d.name, version))
    const newest = Math.max(newestIn(join(source, 'pyproject.toml')), newestIn(join(source, 'README.md')), newestIn(join(source, 'src')))
    if (existsSync(wheel) && statSync(wheel).mtimeMs >= newest) return wheel
    buildWheel(source, out)
    if (!existsSync(wheel)) throw pythonMissing(new Error(`pip wheel made no ${wheel}`))
    return wheel
  })
}

/** `pip wheel --no-deps` of the distribution in `source` into `out`, through a temporary folder (no partial file is ever seen). */
function buildWheel(source: string, out: string): void {
  mkdirSync(out, { recursive: true })
  const work = mkdtempSync(join(out, '.wheel-'))
  try {
    execFileSync('python3', ['-m', 'pip', 'wheel', '--no-deps', '--disable-pip-version-check', '--quiet', '--wheel-dir', work, source], { stdio: ['ignore', 'ignore', 'pipe'] })
    for (const file of readdirSync(work)) if (file.endsWith('.whl')) renameSync(join(work, file), join(out, file))
  } catch (err) {
    throw pythonMissing(err)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/** The Rust SDK's workspace in a source checkout. */
const RUST_SDK_PACKAGE = join('packages', 'sdk-rust')

/**
 * The files of the Rust SDK a project vendors, relative to the workspace root: the workspace
 * manifest (its `[workspace.package]` and `[workspace.dependencies]` are what the crates inherit),
 * and each crate's manifest and `src/`. Tests, examples, `target/` and the lock file stay behind:
 * the project's own Cargo.lock decides its dependencies' versions.
 */
export const RUST_SDK_FILES: readonly string[] = ['Cargo.toml', 'README.md', 'svc-sdk/Cargo.toml', 'svc-sdk/src', 'svc-helpers/Cargo.toml', 'svc-helpers/src']

/**
 * The root of the Rust SDK's sources for the CLI rooted at `cliRoot`, holding {@link RUST_SDK_FILES}:
 * `<cliRoot>/vendor/rust` in an installed CLI, `packages/sdk-rust` in a source checkout.
 *
 * @throws {CliError} `RUST_SDK_MISSING` (exit 1) when the CLI has neither.
 */
export function rustSdkDirectory(cliRoot: string): string {
  for (const dir of [join(cliRoot, ...RUST_VENDOR_DIRECTORY.split('/')), join(cliRoot, RUST_SDK_PACKAGE)]) {
    if (RUST_SDK_FILES.every((f) => existsSync(join(dir, ...f.split('/'))))) return dir
  }
  throw new CliError({
    code: 'RUST_SDK_MISSING',
    message: 'This svc has no Rust SDK sources to copy into the project',
    exitCode: ExitCode.Failure,
    hint: 'reinstall svc from a tarball made by npm run pack:dist',
  })
}

/**
 * Copies the Rust SDK's {@link RUST_SDK_FILES} from `from` (see {@link rustSdkDirectory}) to `to`.
 * @returns the files written, relative to `to`, `/`-separated, sorted
 */
export function copyRustSdk(from: string, to: string): string[] {
  const written: string[] = []
  const copy = (rel: string) => {
    const source = join(from, ...rel.split('/'))
    if (statSync(source).isDirectory()) {
      for (const entry of readdirSync(source)) copy(`${rel}/${entry}`)
      return
    }
    const target = join(to, ...rel.split('/'))
    mkdirSync(dirname(target), { recursive: true })
    copyFileSync(source, target)
    written.push(rel)
  }
  for (const rel of RUST_SDK_FILES) copy(rel)
  return written.sort()
}

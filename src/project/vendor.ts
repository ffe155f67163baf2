/**
 * The svc-sdk tarball a new project vendors (issue 11). svc-sdk is not on a registry, so
 * `svc project init` copies `svc-sdk-<v>.tgz` into the project's `vendor/` folder and its
 * package.json files depend on it by a relative `file:` path (dependencies.ts): the project installs
 * offline, and keeps working when moved, committed or cloned.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
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

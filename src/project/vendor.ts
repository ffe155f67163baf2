/**
 * The svc-sdk tarball a new project vendors (issue 11). svc-sdk is not on a registry, so
 * `svc project init` copies `svc-sdk-<v>.tgz` into the project's `vendor/` folder and its
 * package.json files depend on it by a relative `file:` path (dependencies.ts): the project installs
 * offline, and keeps working when moved, committed or cloned.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
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

function isCheckout(cliRoot: string): boolean {
  const file = join(cliRoot, 'packages', WORKSPACES['svc-sdk']!, 'package.json')
  if (!existsSync(file)) return false
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === 'svc-sdk'
  } catch {
    return false
  }
}

/** Newest modification time (ms) among the files the SDK tarball is made of. */
function newestSdkSource(cliRoot: string): number {
  let newest = 0
  const visit = (path: string): void => {
    if (!existsSync(path)) return
    const stat = statSync(path)
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path)) visit(join(path, entry))
    } else if (stat.mtimeMs > newest) {
      newest = stat.mtimeMs
    }
  }
  for (const name of ['svc-sdk', ...SDK_WORKSPACES]) {
    const dir = join(cliRoot, 'packages', WORKSPACES[name]!)
    visit(join(dir, 'package.json'))
    visit(join(dir, 'dist'))
  }
  return newest
}

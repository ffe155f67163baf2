/**
 * Tarballs of the svc packages that install without a registry (issue 11): the workspace packages
 * (svc-protocol, svc-helpers, svc-sdk, svc-console) are not published, so each tarball carries its
 * dependencies as bundleDependencies: workspace packages are packed with `npm pack` and unpacked
 * into a staging copy's node_modules, every other production dependency is copied from the
 * checkout's node_modules (npm ci caches tarballs but no registry metadata, so `--offline` could not
 * resolve them), and the staging copy is packed.
 *
 * Used by `npm run pack:dist` (scripts/pack.ts) and, in a source checkout, by `svc project init` to
 * make the svc-sdk tarball a new project vendors (see vendor.ts).
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { OPTIONAL_PACKAGES } from '../../runtime/index.ts'
import { copyRustSdk, PYTHON_VENDOR_DIRECTORY, pythonWheels, RUST_VENDOR_DIRECTORY, rustSdkDirectory } from './vendor.ts'

/** Workspace packages of a checkout: package name → directory under `packages/`. */
export const WORKSPACES: Readonly<Record<string, string>> = { 'svc-protocol': 'protocol', 'svc-helpers': 'helpers', 'svc-sdk': 'sdk', 'svc-console': 'console' }

/** Workspace packages svc-sdk depends on (bundled into its tarball). */
export const SDK_WORKSPACES: readonly string[] = ['svc-helpers', 'svc-protocol']

function npmPack(dir: string, out: string): string {
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop()!
  return join(out, name)
}

function unpack(tarball: string, into: string): void {
  mkdirSync(into, { recursive: true })
  execFileSync('tar', ['-xzf', tarball, '-C', into, '--strip-components=1'])
}

function depsOf(dir: string): string[] {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }
  return [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})]
}

/**
 * Copies into `stage/node_modules` every production dependency the staged package needs (its
 * workspace packages unpacked from their tarballs, the rest copied from the checkout's hoisted
 * node_modules with their nested node_modules), so that the tarball installs with no registry.
 */
function stageDependencies(root: string, stage: string, workspaces: readonly string[], packed: Record<string, string>): void {
  for (const name of workspaces) unpack(packed[name]!, join(stage, 'node_modules', name))
  const queue = [stage, ...workspaces.map((name) => join(stage, 'node_modules', name))]
  const seen = new Set(workspaces)
  while (queue.length > 0) {
    const dir = queue.shift()!
    for (const dep of depsOf(dir)) {
      if (seen.has(dep) || existsSync(join(dir, 'node_modules', dep))) continue
      const source = join(root, 'node_modules', dep)
      if (!existsSync(source)) continue // an optional dependency not installed on this platform
      seen.add(dep)
      const target = join(stage, 'node_modules', dep)
      cpSync(source, target, { recursive: true, dereference: true })
      queue.push(target)
      for (const nested of nestedPackages(target)) queue.push(nested)
    }
  }
}

function nestedPackages(dir: string): string[] {
  const modules = join(dir, 'node_modules')
  if (!existsSync(modules)) return []
  const out: string[] = []
  for (const entry of readdirSync(modules)) {
    if (entry.startsWith('.')) continue
    if (entry.startsWith('@')) for (const inner of readdirSync(join(modules, entry))) out.push(join(modules, entry, inner))
    else out.push(join(modules, entry))
  }
  return out.flatMap((p) => [p, ...nestedPackages(p)])
}

/**
 * Packs `stage` (a staging copy) with every production dependency bundled; `extraFiles` join its
 * `files`. svc's optional packages (`OPTIONAL_PACKAGES`: database drivers, Redis and NATS clients,
 * OTLP exporters; runtime/adapters/optional-package.ts) are neither bundled nor declared,
 * so that an install stays small and offline; the feature that needs one says how to add it
 * (`DEPENDENCY_MISSING`).
 */
function packWithBundle(
  root: string,
  stage: string,
  workspaces: readonly string[],
  packed: Record<string, string>,
  out: string,
  extraFiles: readonly string[] = [],
  prune = false,
  afterStaging?: (stage: string) => void,
): string {
  const pkgFile = join(stage, 'package.json')
  const staged = JSON.parse(readFileSync(pkgFile, 'utf8')) as Record<string, unknown>
  delete staged.optionalDependencies
  // Optional packages a checkout keeps as dependencies (the OTLP exporters) are left out as well.
  const dependencies = staged.dependencies as Record<string, string> | undefined
  if (dependencies) for (const name of Object.keys(OPTIONAL_PACKAGES)) delete dependencies[name]
  writeFileSync(pkgFile, `${JSON.stringify(staged, null, 2)}\n`)
  stageDependencies(root, stage, workspaces, packed)
  if (prune) pruneUnused(stage)
  afterStaging?.(stage)
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as Record<string, unknown>
  pkg.bundleDependencies = depsOf(stage)
  if (extraFiles.length > 0) pkg.files = [...((pkg.files as string[] | undefined) ?? []), ...extraFiles]
  delete pkg.workspaces
  delete pkg.devDependencies
  // The staging copy is already built: no prepare/prepack step may run in it.
  const scripts = (pkg.scripts ?? {}) as Record<string, string>
  delete scripts.prepare
  delete scripts.prepack
  writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`)
  return npmPack(stage, out)
}

/**
 * Files a CLI never reads at run time: TypeScript sources and declarations (Node does not strip
 * types under node_modules, and nothing compiles against the installed CLI), source maps of its
 * dependencies, and markdown other than licence texts. Removing them from the staged copy of the
 * CLI halves its files (issue 20 "Install": fewer files is most of a faster `npm i -g`). The
 * bundle's own source maps (`dist/**\/*.js.map`) stay: `--debug` turns them on (src/lib/main.ts).
 */
const UNUSED_AT_RUN_TIME = /\.(?:[cm]?ts|map|md|markdown)$/i
const KEEP = /^(?:licen[cs]e|copying|notice)/i

/**
 * Deletes {@link UNUSED_AT_RUN_TIME} files from `stage/node_modules` (`stage/dist` is the bundle); the
 * console's app bundle, templates and vendored SDKs are not under them (templates and vendor
 * stay whole; the console's app is served from its dist/app, whose source map is unused).
 */
function pruneUnused(stage: string): void {
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) visit(path)
      else if (UNUSED_AT_RUN_TIME.test(entry.name) && !KEEP.test(entry.name)) rmSync(path, { force: true })
    }
  }
  if (existsSync(join(stage, 'node_modules'))) visit(join(stage, 'node_modules'))
}

function packSdkIn(root: string, work: string, packed: Record<string, string>): string {
  for (const name of ['svc-sdk', ...SDK_WORKSPACES]) packed[name] ??= npmPack(join(root, 'packages', WORKSPACES[name]!), work)
  const stage = join(work, 'stage-sdk')
  unpack(packed['svc-sdk']!, stage)
  // One bundled ES module per export, with shared chunks (scripts/bundle-sdk.ts, issue 20): what
  // a worker loads at `import 'svc-sdk'`. In a child process: esbuild's plugins need its async API.
  const bundleScript = join(root, 'scripts', 'bundle-sdk.ts')
  return packWithBundle(root, stage, SDK_WORKSPACES, packed, work, [], false, (dir) => {
    execFileSync(process.execPath, [bundleScript, dir], { stdio: ['ignore', 'ignore', 'inherit'] })
  })
}

function moveInto(file: string, out: string): string {
  const target = join(out, file.split('/').pop()!)
  renameSync(file, target)
  return target
}

/**
 * Packs the built svc-sdk of the checkout at `root` into `out/svc-sdk-<version>.tgz`, svc-helpers,
 * svc-protocol and the other production dependencies bundled. It is built in a temporary folder
 * inside `out` and renamed into place, so a reader never sees a partial file.
 *
 * @returns the tarball's absolute path
 * @throws when `npm pack` or `tar` fail (the checkout is not built, npm is missing)
 */
export function packSdk(root: string, out: string): string {
  mkdirSync(out, { recursive: true })
  const work = mkdtempSync(join(out, '.pack-'))
  try {
    return moveInto(packSdkIn(root, work, {}), out)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/**
 * `npm run pack:dist`: `svc-sdk-<v>.tgz` and `svc-<v>.tgz` in `out`, for the built checkout at
 * `root`. The CLI tarball also carries the SDK tarball as `vendor/svc-sdk-<v>.tgz`, which
 * `svc project init` copies into new projects (vendor.ts), the browser SDK bundle as
 * `vendor/svc-browser-sdk.js` (built by `npm run build`), the Python SDK's wheels in
 * `vendor/python/` (built with pip on demand) and the Rust SDK's sources in `vendor/rust/`.
 *
 * @returns the tarballs' absolute paths, SDK first
 */
export function packDist(root: string, out: string): string[] {
  mkdirSync(out, { recursive: true })
  const work = mkdtempSync(join(tmpdir(), 'svc-pack-'))
  try {
    const packed: Record<string, string> = {}
    // The workspaces' own tarballs in a folder of their own: packSdkIn writes svc-sdk-<v>.tgz (with
    // its dependencies bundled) into `work`, which must not replace the plain svc-sdk the CLI unpacks
    // (it did: every OpenTelemetry package shipped twice, once nested under svc-sdk).
    const plain = join(work, 'workspaces')
    mkdirSync(plain)
    for (const [name, dir] of Object.entries(WORKSPACES)) packed[name] = npmPack(join(root, 'packages', dir), plain)
    const sdk = packSdkIn(root, work, packed)

    const cliStage = join(work, 'stage-cli')
    mkdirSync(cliStage)
    for (const entry of ['bin', 'templates', 'package.json', 'README.md']) cpSync(join(root, entry), join(cliStage, entry), { recursive: true })
    // The CLI's dist/ is the bundle of the compiled tree (scripts/bundle-cli.ts, issue 20 "Engine
    // start"): the same entry files (each command, the not-found hook, bin/run.js's main) with the
    // code they share in dist/chunks, instead of about a thousand modules.
    execFileSync(process.execPath, [join(root, 'scripts', 'bundle-cli.ts'), join(cliStage, 'dist')], { stdio: ['ignore', 'ignore', 'inherit'] })
    // The command manifest (scripts/oclif-manifest.ts): commands load only when run.
    execFileSync(process.execPath, [join(root, 'scripts', 'oclif-manifest.ts'), root, join(cliStage, 'oclif.manifest.json')], { stdio: ['ignore', 'ignore', 'inherit'] })
    mkdirSync(join(cliStage, 'vendor'))
    cpSync(sdk, join(cliStage, 'vendor', sdk.split('/').pop()!))
    // The browser SDK is one file a project serves itself (the `browser` template, vendor.ts).
    cpSync(join(root, 'packages', 'browser-sdk', 'dist', 'svc-browser-sdk.js'), join(cliStage, 'vendor', 'svc-browser-sdk.js'))
    // The Python wheels and the Rust SDK's sources, which the python and rust templates copy (issue 18).
    const wheels = join(cliStage, ...PYTHON_VENDOR_DIRECTORY.split('/'))
    mkdirSync(wheels, { recursive: true })
    for (const wheel of pythonWheels(root)) cpSync(wheel, join(wheels, wheel.split('/').pop()!))
    copyRustSdk(rustSdkDirectory(root), join(cliStage, ...RUST_VENDOR_DIRECTORY.split('/')))
    const cli = packWithBundle(root, cliStage, Object.keys(WORKSPACES), packed, work, ['vendor'], true)

    return [sdk, cli].map((file) => moveInto(file, out))
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

/**
 * `npm run pack:dist`: tarballs of the CLI (`svc-<v>.tgz`) and the SDK (`svc-sdk-<v>.tgz`) that
 * install without a checkout and offline. The workspace packages they depend on (svc-protocol,
 * svc-helpers, svc-sdk, svc-console) are not published, so each tarball carries them as
 * bundleDependencies: they are packed with `npm pack`, unpacked into a staging copy's node_modules,
 * and the staging copy is packed. Every other production dependency is bundled too (copied from the
 * checkout's node_modules): npm ci caches tarballs but no registry metadata, so `--offline` could not
 * resolve them.
 *
 * Usage: `node scripts/pack.ts [out-dir]` (default `dist/pack`), after `npm run build`.
 */
import { execFileSync } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../', import.meta.url))
const WORKSPACES: Record<string, string> = { 'svc-protocol': 'protocol', 'svc-helpers': 'helpers', 'svc-sdk': 'sdk', 'svc-console': 'console' }

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
function stageDependencies(stage: string, workspaces: string[], packed: Record<string, string>): void {
  for (const name of workspaces) unpack(packed[name]!, join(stage, 'node_modules', name))
  const queue = [stage, ...workspaces.map((name) => join(stage, 'node_modules', name))]
  const seen = new Set(workspaces)
  while (queue.length > 0) {
    const dir = queue.shift()!
    for (const dep of depsOf(dir)) {
      if (seen.has(dep) || existsSync(join(dir, 'node_modules', dep))) continue
      const source = join(ROOT, 'node_modules', dep)
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

/** Packs `stage` (a staging copy) with every production dependency bundled. */
function packWithBundle(stage: string, workspaces: string[], packed: Record<string, string>, out: string): string {
  stageDependencies(stage, workspaces, packed)
  const pkgFile = join(stage, 'package.json')
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as Record<string, unknown>
  pkg.bundleDependencies = depsOf(stage)
  delete pkg.workspaces
  delete pkg.devDependencies
  // The staging copy is already built: no prepare/prepack step may run in it.
  const scripts = (pkg.scripts ?? {}) as Record<string, string>
  delete scripts.prepare
  delete scripts.prepack
  writeFileSync(pkgFile, `${JSON.stringify(pkg, null, 2)}\n`)
  return npmPack(stage, out)
}

export function packDist(out: string): string[] {
  mkdirSync(out, { recursive: true })
  const work = mkdtempSync(join(tmpdir(), 'svc-pack-'))
  try {
    const packed: Record<string, string> = {}
    for (const [name, dir] of Object.entries(WORKSPACES)) packed[name] = npmPack(join(ROOT, 'packages', dir), work)

    const sdkStage = join(work, 'stage-sdk')
    unpack(packed['svc-sdk']!, sdkStage)
    const sdk = packWithBundle(sdkStage, ['svc-helpers', 'svc-protocol'], packed, work)

    const cliStage = join(work, 'stage-cli')
    mkdirSync(cliStage)
    for (const entry of ['bin', 'dist', 'templates', 'package.json', 'README.md']) cpSync(join(ROOT, entry), join(cliStage, entry), { recursive: true })
    // dist/ holds every compiled tree; the CLI needs src and runtime only.
    for (const extra of ['test', 'bench', 'scripts', 'packages']) rmSync(join(cliStage, 'dist', extra), { recursive: true, force: true })
    const cli = packWithBundle(cliStage, Object.keys(WORKSPACES), packed, work)

    return [sdk, cli].map((file) => {
      const target = join(out, file.split('/').pop()!)
      renameSync(file, target)
      return target
    })
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of packDist(resolve(process.argv[2] ?? join(ROOT, 'dist', 'pack')))) console.log(file)
}

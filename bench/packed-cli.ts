/**
 * The packed CLI as users install it (issue 20): `npm run pack:dist`'s tarballs, installed offline
 * into a temporary prefix. Shared by the start-up benchmarks (bench/cli-start.ts,
 * bench/engine-start.ts).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packDist } from '../src/project/bundle.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PACK = join(ROOT, 'dist', 'pack')

export interface PackedCli {
  /** The installed `svc` executable. */
  svc: string
  /** The installed package's folder (`…/lib/node_modules/svc`). */
  installed: string
  /** Environment for running it: this Node first on PATH, a fresh HOME, no npm audit/fund. */
  env: NodeJS.ProcessEnv
  /** Removes the prefix and HOME. */
  remove(): void
}

/**
 * The newest modification time (ms) of any built file that goes into the tarballs: `dist/` (but
 * `dist/pack`) and each package's `dist/` under `packages/`. A directory's own time is not enough: a rebuild that
 * rewrites files in place leaves it unchanged, and a stale tarball was then measured.
 */
function newestBuildMs(): number {
  const roots = [join(ROOT, 'dist'), ...readdirSync(join(ROOT, 'packages')).map((name) => join(ROOT, 'packages', name, 'dist'))]
  let newest = 0
  for (const root of roots) {
    if (!existsSync(root)) continue
    for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.parentPath.startsWith(PACK)) continue
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs)
    }
  }
  return newest
}

/**
 * Packs the CLI unless `dist/pack` holds a tarball newer than every built file (newestBuildMs), then installs it
 * with `npm i -g --offline` into a temporary prefix.
 */
export function installPackedCli(): PackedCli {
  const version = (JSON.parse(execFileSync('npm', ['pkg', 'get', 'version'], { cwd: ROOT, encoding: 'utf8' })) as string).trim()
  const tarball = join(PACK, `svc-${version}.tgz`)
  if (!existsSync(tarball) || statSync(tarball).mtimeMs < newestBuildMs()) packDist(ROOT, PACK)
  const prefix = mkdtempSync(join(tmpdir(), 'svc-bench-cli-'))
  const home = mkdtempSync(join(tmpdir(), 'svc-bench-home-'))
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_audit: 'false', npm_config_fund: 'false' }
  execFileSync('npm', ['i', '-g', '--prefix', prefix, '--offline', tarball], { env, stdio: 'ignore' })
  return {
    svc: join(prefix, 'bin', 'svc'),
    installed: join(prefix, 'lib', 'node_modules', 'svc'),
    env: { ...env, HOME: home },
    remove() {
      rmSync(prefix, { recursive: true, force: true })
      rmSync(home, { recursive: true, force: true })
    },
  }
}

/** Median of `values`, to 0.1. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return Math.round(sorted[Math.floor(sorted.length / 2)]! * 10) / 10
}

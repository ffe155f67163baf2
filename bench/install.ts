/**
 * Install footprint of the packed CLI (issue 20 "Install": ≤ 30 s offline, ≤ 60 MB on disk):
 * packs with `npm run pack:dist`'s `packDist` into a temporary folder, then times
 * `npm i -g --offline --prefix <tmp> <svc tarball>` (audit and fund off, a fresh npm cache folder is
 * NOT used: the tarball carries what it needs, so the cache plays no part) and counts what landed
 * in `<tmp>/lib/node_modules/svc`: bytes as `du -sb` reports them, and regular files.
 *
 * Prints one JSON line: `{ install_s, installed_mb, installed_bytes, files, tarball_mb }` (MB =
 * 10^6 bytes, as the issue counts them).
 *
 * Usage: `node bench/install.ts`, after `npm run build`.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packDist } from '../src/project/bundle.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Regular files under `dir` (symbolic links not followed). */
function countFiles(dir: string): number {
  let n = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) n += countFiles(join(dir, entry.name))
    else if (entry.isFile()) n++
  }
  return n
}

function main(): void {
  const out = mkdtempSync(join(tmpdir(), 'svc-bench-pack-'))
  const prefix = mkdtempSync(join(tmpdir(), 'svc-bench-install-'))
  try {
    const tarball = packDist(ROOT, out).find((file) => /\/svc-\d[^/]*\.tgz$/.test(file))!
    const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`, npm_config_audit: 'false', npm_config_fund: 'false' }
    const start = process.hrtime.bigint()
    execFileSync('npm', ['i', '-g', '--offline', '--prefix', prefix, tarball], { env, stdio: 'ignore' })
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    const installed = join(prefix, 'lib', 'node_modules', 'svc')
    const bytes = Number(execFileSync('du', ['-sb', installed], { encoding: 'utf8' }).split('\t')[0])
    console.log(
      JSON.stringify({
        install_s: Math.round(seconds * 10) / 10,
        installed_mb: Math.round(bytes / 1e5) / 10,
        installed_bytes: bytes,
        files: countFiles(installed),
        tarball_mb: Math.round(statSync(tarball).size / 1e5) / 10,
      }),
    )
  } finally {
    rmSync(out, { recursive: true, force: true })
    rmSync(prefix, { recursive: true, force: true })
  }
}

main()

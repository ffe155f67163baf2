/**
 * `npm run pack:dist`: tarballs of the CLI (`svc-<v>.tgz`, which also carries
 * `vendor/svc-sdk-<v>.tgz` for new projects) and the SDK (`svc-sdk-<v>.tgz`) that install without a
 * checkout and offline; see src/project/bundle.ts.
 *
 * Usage: `node scripts/pack.ts [out-dir]` (default `dist/pack`), after `npm run build`.
 */
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packDist } from '../src/project/bundle.ts'

const ROOT = fileURLToPath(new URL('../', import.meta.url))

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const file of packDist(ROOT, resolve(process.argv[2] ?? join(ROOT, 'dist', 'pack')))) console.log(file)
}

#!/usr/bin/env node
/**
 * Builds svc-browser-sdk's JavaScript (sdk.md §13) into `dist/`: esbuild bundles `src/index.ts`
 * with the client core it uses into one minified, self-contained ES module,
 * `dist/svc-browser-sdk.js` (with its source map): no import is left, so a page loads it with
 * `<script type="module">` and no bundler, and bundlers take it as it is. The subpaths
 * (`/helpers`, `/state`, `/stream`) are one-line modules re-exporting from it, so a page that
 * imports several gets one copy of the client (and one `InvocationError` class). The type
 * declarations (`dist/types/`) come from `tsc -b`.
 *
 * Usage (from the repository root; `npm run build` runs it): `npm exec -- node packages/browser-sdk/scripts/build.mjs`
 */
import { build } from 'esbuild'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const src = join(root, 'src')
const outDir = join(root, 'dist')

/** The file name of the bundle: the one file a page needs. */
export const BUNDLE = 'svc-browser-sdk.js'
/** Subpath modules (package.json `exports`), each re-exporting from the bundle. */
export const SUBPATHS = ['helpers', 'state', 'stream']

/** @type {import('esbuild').BuildOptions} */
const common = {
  bundle: true,
  format: 'esm',
  platform: 'browser',
  // Evergreen browsers (sdk.md §1); private class fields and `??=` are kept as they are.
  target: ['es2022', 'chrome111', 'firefox111', 'safari16.4'],
  metafile: true,
  logLevel: 'warning',
}

/** The names an entry exports, from esbuild's metafile (no code is written). */
async function exportsOf(entry) {
  const result = await build({ ...common, entryPoints: [entry], write: false, outdir: outDir })
  return Object.values(result.metafile.outputs).find((o) => o.entryPoint !== undefined)?.exports ?? []
}

/**
 * Builds `dist/svc-browser-sdk.js` and the subpath modules.
 * @returns the bundle's path and the names it exports
 * @throws when a subpath exports a name the bundle does not (the bundle must hold every runtime export)
 */
export async function buildBrowserSdk() {
  await mkdir(outDir, { recursive: true })
  for (const name of [BUNDLE, `${BUNDLE}.map`, ...SUBPATHS.map((s) => `${s}.js`)]) await rm(join(outDir, name), { force: true })
  const result = await build({
    ...common,
    entryPoints: [join(src, 'index.ts')],
    outfile: join(outDir, BUNDLE),
    minify: true,
    sourcemap: 'linked',
    legalComments: 'none',
  })
  const exported = Object.values(result.metafile.outputs).find((o) => o.entryPoint !== undefined)?.exports ?? []
  for (const subpath of SUBPATHS) {
    const names = await exportsOf(join(src, `${subpath}.ts`))
    const missing = names.filter((name) => !exported.includes(name))
    if (missing.length > 0) throw new Error(`${subpath}.ts exports ${missing.join(', ')}, which ${BUNDLE} does not: export them from src/index.ts too`)
    const body = names.length === 0 ? 'export {}\n' : `export { ${names.join(', ')} } from './${BUNDLE}'\n`
    await writeFile(join(outDir, `${subpath}.js`), `// svc-browser-sdk/${subpath}: re-exports of ${BUNDLE}.\n${body}`)
  }
  return { bundle: join(outDir, BUNDLE), exports: exported }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { bundle } = await buildBrowserSdk()
  console.log(`svc-browser-sdk built into ${bundle}`)
}

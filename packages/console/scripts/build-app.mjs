#!/usr/bin/env node
/**
 * Builds the console single-page app (cli.md §7) into `dist/app/`: esbuild bundles
 * `app/src/main.tsx` (React 19, TSX) into one minified `main.js` with its source map, and
 * `app/index.html` and the style sheets of `app/styles/` are copied next to it. No network, no dev
 * server: the backend serves these files as they are, with its SPA fallback to `index.html`.
 *
 * Usage (from the repository root): `npm exec -- node packages/console/scripts/build-app.mjs`
 * Flags: `--watch` rebuilds on change (for local work only).
 */
import { build, context } from 'esbuild'
import { cp, mkdir, readdir, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const appDir = join(root, 'app')
const outDir = join(root, 'dist', 'app')

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: [join(appDir, 'src', 'main.tsx')],
  outfile: join(outDir, 'main.js'),
  bundle: true,
  minify: true,
  sourcemap: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022', 'chrome120', 'firefox120', 'safari17'],
  jsx: 'automatic',
  define: { 'process.env.NODE_ENV': '"production"' },
  legalComments: 'linked',
  logLevel: 'warning',
}

async function copyStatic() {
  await cp(join(appDir, 'index.html'), join(outDir, 'index.html'))
  for (const name of await readdir(join(appDir, 'styles'))) {
    if (name.endsWith('.css')) await cp(join(appDir, 'styles', name), join(outDir, name))
  }
}

await rm(outDir, { recursive: true, force: true })
await mkdir(outDir, { recursive: true })
if (process.argv.includes('--watch')) {
  const ctx = await context(options)
  await ctx.watch()
  await copyStatic()
  console.log(`watching ${appDir}; output in ${outDir}`)
} else {
  await build(options)
  await copyStatic()
  console.log(`console app built into ${outDir}`)
}

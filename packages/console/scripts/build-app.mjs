#!/usr/bin/env node
/**
 * Builds the console single-page app (cli.md §7) into `dist/app/`: esbuild bundles
 * `app/src/main.tsx` (React 19, TSX) into one minified `main-<hash>.js` with its source map, the
 * style sheets of `app/styles/` are copied as `<name>-<hash>.css`, and `app/index.html` is written
 * with those names. Content-hashed names let the backend cache assets (it does, for an hour) while
 * a rebuilt app still shows at once, since `index.html` is never cached. No network, no dev
 * server: the backend serves these files as they are, with its SPA fallback to `index.html`.
 *
 * Usage (from the repository root): `npm exec -- node packages/console/scripts/build-app.mjs`
 * Flags: `--watch` rebuilds on change (for local work only).
 */
import { build, context } from 'esbuild'
import { createHash } from 'node:crypto'
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const appDir = join(root, 'app')
const outDir = join(root, 'dist', 'app')

/** @type {import('esbuild').BuildOptions} */
const options = {
  entryPoints: [join(appDir, 'src', 'main.tsx')],
  outdir: outDir,
  entryNames: '[name]-[hash]',
  metafile: true,
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

/** Copies the style sheets under hashed names and writes index.html pointing at them and at `script`. */
async function copyStatic(script) {
  let html = await readFile(join(appDir, 'index.html'), 'utf8')
  for (const name of await readdir(join(appDir, 'styles'))) {
    if (!name.endsWith('.css')) continue
    const css = await readFile(join(appDir, 'styles', name))
    const hashed = `${basename(name, '.css')}-${createHash('sha256').update(css).digest('hex').slice(0, 8)}.css`
    await writeFile(join(outDir, hashed), css)
    html = html.replaceAll(`/${name}`, `/${hashed}`)
  }
  await writeFile(join(outDir, 'index.html'), html.replaceAll('/main.js', `/${script}`))
}

function scriptOf(result) {
  const out = Object.keys(result.metafile.outputs).find((file) => file.endsWith('.js'))
  return basename(out)
}

await rm(outDir, { recursive: true, force: true })
await mkdir(outDir, { recursive: true })
if (process.argv.includes('--watch')) {
  const ctx = await context({ ...options, entryNames: '[name]', plugins: [{ name: 'html', setup: (b) => b.onEnd(() => copyStatic('main.js')) }] })
  await ctx.watch()
  console.log(`watching ${appDir}; output in ${outDir}`)
} else {
  await copyStatic(scriptOf(await build(options)))
  console.log(`console app built into ${outDir}`)
}

/**
 * The CLI and engine bundled with esbuild (issue 20 "Engine start": loading about a thousand small
 * modules was most of `svc`'s start). Reads the compiled tree of a built checkout (`dist/src`,
 * `dist/runtime`, the workspace packages' `dist`) and writes, into `out`, the same entry files the
 * CLI has — one per oclif command (`src/commands/**`), the `command_not_found` hook and
 * `src/lib/argv.js`, `src/lib/main.js` (what `bin/run.js` runs: oclif itself, bundled once with
 * the commands that extend it) — as ES modules, with the code they share in `chunks/`: `bin/run.js`,
 * `package.json`'s `oclif` section and `oclif.manifest.json` find them where they were.
 *
 * Left out of the bundle (imported from `node_modules` at run time, as before):
 * - oclif's plugins (`@oclif/plugin-*`: `svc help`, `svc autocomplete`), and the TypeScript
 *   compilers oclif looks for when a plugin runs from sources;
 * - `svc-console`: served from its own folder (its app bundle), loaded only by the console paths;
 * - `svc-sdk` and `svc-helpers` (only `svc compose`'s daemon uses them): svc-sdk reads its own
 *   `package.json` and svc-helpers loads the OpenTelemetry SDK relative to itself; and
 *   `svc-protocol`, so that the CLI, svc-sdk and svc-console share one copy of its classes;
 * - the optional packages (`OPTIONAL_PACKAGES`: database drivers, Redis, NATS, OTLP exporters) and
 *   `@inquirer/*`: loaded lazily, and only when configured or asked for;
 * - the optional native helpers of `ws` and `chokidar` (`bufferutil`, `utf-8-validate`, `fsevents`).
 *
 * Dynamic `import()`s stay lazy: esbuild's code splitting gives each its own chunk. Source maps
 * (`*.js.map`, without the sources' text) follow the compiled files' own maps back to the
 * TypeScript sources, so a stack printed with `--enable-source-maps` names `src/…/*.ts` lines.
 *
 * Usage: `node scripts/bundle-cli.ts [out-dir]` (default `dist/bundle`), after `tsc -b`; used by
 * `npm run build` and by `npm run pack:dist` (src/project/bundle.ts), which ships the bundle as the
 * packed CLI's `dist/`.
 */
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { build, type Metafile, type Plugin } from 'esbuild'
import { Ajv2020 } from 'ajv/dist/2020.js'
import * as standalone from 'ajv/dist/standalone/index.js'
import { canonicalJson } from 'svc-protocol/json'
import { OPTIONAL_PACKAGES } from '../runtime/adapters/optional-package.ts'
import { BUILTIN_DESCRIPTORS } from '../runtime/workers/catalogue.ts'
import { BUILTIN_OPTIONS } from '../runtime/workers/configuration/schema.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Imported from `node_modules` at run time (see the file's comment). */
export const EXTERNAL: readonly string[] = [
  '@oclif/plugin-*',
  '@inquirer/*',
  'svc-console',
  'svc-console/*',
  // svc-sdk (the compose daemon's) reads its ../package.json and loads the OpenTelemetry SDK from
  // its own folder; it stays the package it is, with svc-helpers, and svc-protocol stays one copy
  // for all of them (its error classes are compared with instanceof across packages).
  'svc-protocol',
  'svc-protocol/*',
  'svc-sdk',
  'svc-sdk/*',
  'svc-helpers',
  'svc-helpers/*',
  // ws: svc-protocol's WebSocket transport (external above) loads it from node_modules at every
  // start; bundled too, the engine's listener ran a second copy of it (issue 20 "Engine start").
  'ws',
  ...Object.keys(OPTIONAL_PACKAGES).flatMap((name) => [name, `${name}/*`]),
  // oclif's support for running a plugin's TypeScript sources, never used by a packed CLI.
  'typescript',
  'ts-node',
  'tsx',
  'bufferutil',
  'utf-8-validate',
  'fsevents',
]

/**
 * Compiled modules found through `new URL('./file', import.meta.url)` rather than an import: each
 * is written as its own entry beside the chunk that holds the module looking for it (checked
 * after the build).
 */
const URL_ENTRIES: ReadonlyArray<{ file: string; referrer: string }> = [
  // The SQLite thread of the database worker (runtime/adapters/database/sqlite/index.ts).
  { file: 'runtime/adapters/database/sqlite/thread.js', referrer: 'runtime/adapters/database/sqlite/index.js' },
]

/** ES modules that bundle CommonJS packages need `require` for Node's built-ins (`events`, `fs`…). */
const BANNER = "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);"

/**
 * Node's built-in modules taken with `require` instead of `import`: the ES module face of a built-in
 * reads every export once when it is created, and `node:http`'s include `WebSocket` and friends,
 * which load undici (tens of ms at every start; issue 20). Through `require`, a named import is a
 * property read where it is used. Specifiers keep their spelling (`node:sqlite` has no other).
 */
export const builtinsByRequire: Plugin = {
  name: 'builtins-by-require',
  setup(build) {
    const names = new Set(builtinModules.flatMap((name) => (name.startsWith('node:') ? [name] : [name, `node:${name}`])))
    build.onResolve({ filter: /^(node:)?[a-z0-9_/]+$/ }, (args) => (names.has(args.path) && args.kind === 'import-statement' ? { path: args.path, namespace: 'node-builtin' } : undefined))
    build.onLoad({ filter: /.*/, namespace: 'node-builtin' }, (args) => ({ contents: builtinModuleSource(args.path), loader: 'js' }))
  },
}

/**
 * Accessor exports of Node's built-ins that a bundled module may import by name, read once when the
 * stand-in module runs: their getters only load a class or a module (`fs.promises`). The others
 * either start or load more than an importer uses (`process.stdin`, `fs.ReadStream`,
 * `http.WebSocket`, `crypto.webcrypto`), warn (`fs.F_OK`) or are state read when used
 * (`process.exitCode`, `events.defaultMaxListeners`): they are not exported, and a named import of
 * one fails the build ("No matching export") until it is judged and added here.
 */
const EAGER_ACCESSORS = new Set(['AsyncLocalStorage', 'BlockList', 'SocketAddress', 'EventEmitterAsyncResource', 'promises', 'aborted'])

/**
 * The bundle's stand-in for built-in `specifier`: an ES module that takes the built-in with
 * `require` and exports its default (the module object) and each of its functions, classes and
 * constants by name, read once (ES semantics: what `import { x } from 'node:fs'` gives, a value
 * read when the module is linked). As a CommonJS stand-in (`module.exports = require(…)`), every
 * importing module ran esbuild's `__toESM`, which copies every export of the built-in onto a new
 * object as a getter: 240 copies, 11,000 getters and ~28 ms of CPU at each engine start (issue 20
 * "Engine start"). The names are those of the Node running the build; an accessor outside
 * {@link EAGER_ACCESSORS} is not exported.
 */
export function builtinModuleSource(specifier: string): string {
  const builtin = process.getBuiltinModule(specifier) as Record<string, unknown> | undefined
  const lines = [`const m = require(${JSON.stringify(specifier)})`, 'export default m']
  const exported: string[] = []
  if (builtin !== undefined && builtin !== null && (typeof builtin === 'object' || typeof builtin === 'function')) {
    for (const key of Object.getOwnPropertyNames(builtin)) {
      const descriptor = Object.getOwnPropertyDescriptor(builtin, key)
      if (key === 'default' || key === '__esModule' || descriptor === undefined) continue
      if (!('value' in descriptor) && !EAGER_ACCESSORS.has(key)) continue
      // Own names of a function (`length`, `name`, `prototype`…) are not exports.
      if (typeof builtin === 'function' && ['length', 'name', 'prototype', 'arguments', 'caller'].includes(key)) continue
      lines.push(`const x${exported.length} = m[${JSON.stringify(key)}]`)
      exported.push(`x${exported.length} as ${JSON.stringify(key)}`)
    }
  }
  if (exported.length > 0) lines.push(`export { ${exported.join(', ')} }`)
  return `${lines.join('\n')}\n`
}

/**
 * svc-protocol imported once per specifier: each bundled module's `import … from 'svc-protocol/…'`
 * is bound to a face module (`export { A, B } from 'svc-protocol/…'`, the names the package exports)
 * that code splitting puts in a shared chunk, instead of every chunk importing the package itself.
 * Node resolves a bare specifier for each importing file (package.json lookups up the folders, the
 * `exports` map, realpath): about 100 of them at every start (issue 20 "Engine start"). The
 * bindings stay direct (no namespace object or getters on the call path) and the package stays one
 * module instance, as external.
 */
export const externalFaces: Plugin = {
  name: 'external-faces',
  setup(build) {
    build.onResolve({ filter: /^svc-protocol(\/.*)?$/ }, (args) => (args.namespace === 'external-face' ? { path: args.path, external: true } : { path: args.path, namespace: 'external-face' }))
    build.onLoad({ filter: /.*/, namespace: 'external-face' }, async (args) => {
      const names = Object.keys((await import(args.path)) as object)
      return { contents: `export { ${names.join(', ')} } from ${JSON.stringify(args.path)};\n`, loader: 'js' }
    })
  },
}

/**
 * The bundle's `runtime/workers/configuration/precompiled.js`: Ajv's standalone code of every
 * built-in settings schema, compiled with the options schema.ts uses for them, keyed by the
 * schema's canonical JSON, so that the engine does not generate and compile that code at every
 * start (it was a sixth of it). Its imports are Ajv's run-time helpers, bundled too.
 */
export function precompiledValidatorsModule(): string {
  const generator = new Ajv2020({ ...BUILTIN_OPTIONS, code: { ...BUILTIN_OPTIONS.code, source: true, esm: true } })
  const schemas = BUILTIN_DESCRIPTORS.flatMap((descriptor) => (descriptor.settings === null ? [] : [descriptor.settings]))
  const exported: Record<string, string> = {}
  schemas.forEach((schema, i) => {
    generator.addSchema(schema as object, `builtin${i}`)
    exported[`precompiled${i}`] = `builtin${i}`
  })
  const standaloneCode = ((standalone as { default?: unknown }).default ?? standalone) as (ajv: Ajv2020, refs: Record<string, string>) => string
  const entries = schemas.map((schema, i) => `[${JSON.stringify(canonicalJson(schema))}, precompiled${i}]`)
  return `${standaloneCode(generator, exported)}\nexport const PRECOMPILED_VALIDATORS = new Map([${entries.join(', ')}]);\n`
}

/** Replaces the checkout's empty `precompiled.js` with {@link precompiledValidatorsModule}. */
const precompiledValidators: Plugin = {
  name: 'precompiled-validators',
  setup(build) {
    build.onLoad({ filter: /[\\/]runtime[\\/]workers[\\/]configuration[\\/]precompiled\.js$/ }, (args) => ({ contents: precompiledValidatorsModule(), loader: 'js', resolveDir: ROOT }))
  },
}

/**
 * Ajv's compiler (`ajv/dist/2020.js`, ~60 CommonJS modules) as the settings schemas module
 * (runtime/workers/configuration/schema.ts) imports it: a stand-in whose `Ajv2020` requires it on
 * first use. An ES import of a CommonJS module runs it where the importer runs, at every start;
 * the packed CLI's built-in schemas are precompiled, so a start rarely compiles one (issue 20
 * "Engine start").
 */
export const lazyAjvCompiler: Plugin = {
  name: 'lazy-ajv-compiler',
  setup(build) {
    build.onResolve({ filter: /^ajv\/dist\/2020(\.js)?$/ }, (args) =>
      args.kind === 'import-statement' && /[\\/]runtime[\\/]workers[\\/]configuration[\\/]schema\.js$/.test(args.importer) ? { path: 'ajv/dist/2020.js', namespace: 'lazy-ajv' } : undefined,
    )
    build.onLoad({ filter: /.*/, namespace: 'lazy-ajv' }, () => ({
      contents:
        'let loaded\n' +
        "const load = () => (loaded ??= require('ajv/dist/2020.js'))\n" +
        '/** Ajv2020, required when the first instance is made. */\n' +
        'export function Ajv2020(...options) { return new (load().Ajv2020)(...options) }\n',
      loader: 'js',
      resolveDir: ROOT,
    }))
  },
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return jsFiles(path)
    return entry.name.endsWith('.js') ? [path] : []
  })
}

/**
 * Bundles the compiled CLI of the checkout at `root` into `out` (emptied first).
 *
 * @returns esbuild's metafile (inputs and outputs, in bytes)
 * @throws when the checkout is not built (`dist/src/commands` missing), when esbuild cannot
 *   resolve an import, or when a {@link URL_ENTRIES} file would not sit beside its referrer
 */
export async function bundleCli(root: string, out: string): Promise<Metafile> {
  const dist = join(root, 'dist')
  const commands = join(dist, 'src', 'commands')
  if (!existsSync(commands)) throw new Error(`${commands} is missing: run tsc -b first`)
  rmSync(out, { recursive: true, force: true })
  const entries = [...jsFiles(commands), join(dist, 'src', 'lib', 'hooks', 'not-found.js'), join(dist, 'src', 'lib', 'argv.js'), join(dist, 'src', 'lib', 'main.js')]
  const entryPoints: Array<{ in: string; out: string }> = entries.map((file) => ({ in: file, out: relative(dist, file).replace(/\.js$/, '') }))
  for (const { file } of URL_ENTRIES) entryPoints.push({ in: join(dist, file), out: `chunks/${file.split('/').pop()!.replace(/\.js$/, '')}` })
  const result = await build({
    entryPoints,
    outdir: out,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22.13',
    chunkNames: 'chunks/[name]-[hash]',
    external: [...EXTERNAL],
    plugins: [builtinsByRequire, externalFaces, precompiledValidators, lazyAjvCompiler],
    // Packages' "module" builds first, as Node's own resolution would not, only where both exist:
    // keep Node's choice ("main" for require, "exports" conditions) so behaviour does not change.
    mainFields: ['main', 'module'],
    conditions: ['node'],
    banner: { js: BANNER },
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'linked',
    metafile: true,
    logLevel: 'warning',
  })
  const outputOf = (input: string): string | undefined =>
    Object.entries(result.metafile.outputs).find(([, output]) => Object.keys(output.inputs).some((name) => resolve(name) === resolve(dist, input)))?.[0]
  for (const { file, referrer } of URL_ENTRIES) {
    const holder = outputOf(referrer)
    const holderDir = holder === undefined ? undefined : resolve(holder, '..')
    if (holderDir !== resolve(out, 'chunks')) throw new Error(`bundle: ${referrer} went to ${holder ?? 'no output'}, not beside chunks/${file.split('/').pop()}`)
  }
  return result.metafile
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = resolve(process.argv[2] ?? join(ROOT, 'dist', 'bundle'))
  const metafile = await bundleCli(ROOT, out)
  const files = Object.keys(metafile.outputs).filter((file) => file.endsWith('.js'))
  const bytes = files.reduce((sum, file) => sum + metafile.outputs[file]!.bytes, 0)
  console.log(`${files.length} files, ${(bytes / 1e6).toFixed(1)} MB of JavaScript in ${relative(process.cwd(), out) || '.'}${sep}`)
}

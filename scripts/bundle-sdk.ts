/**
 * svc-sdk as a project installs it, bundled with esbuild (issue 20 "Footprint": a trivial worker's
 * RSS and start-up). `import 'svc-sdk'` loaded about 150 files — svc-sdk, svc-helpers,
 * svc-protocol and `ws` among them — and, through `ws`, Node's `https` and `tls` (about 7 MiB of
 * RSS and 20 ms of CPU in every worker, for `wss://` addresses a local worker never uses).
 *
 * Rewrites the JavaScript of a staged svc-sdk package (`<package>/dist`, the compiled files `npm
 * pack` put there) in place: every entry of its `exports` map stays a file of the same name, and
 * what they share (svc-sdk's own modules, svc-helpers, svc-protocol, `ws`) goes into `dist/chunk-*.js`
 * beside them, so each class exists once however many entries a worker imports. Left out, loaded from
 * `node_modules` at run time as before:
 * - every `@opentelemetry/*` package: the API must be the one copy a user's instrumentation shares
 *   (its globals), and the SDK packages `svc-helpers` loads on first use must meet the same
 *   `@opentelemetry/core` (one copy of each, `lazy-sdk.ts`);
 * - `ws`'s optional native helpers (`bufferutil`, `utf-8-validate`).
 *
 * `ws` requires `https` and `tls` at load; in the bundle they load on first use (a `wss://`
 * address) instead. The bundle's `import`s of Node's built-ins become reads of the names they
 * import ({@link builtinImportsAsReads}): no ES module face of a built-in is made. The declarations (`*.d.ts`) are kept unchanged, and so are the bundled
 * dependencies under `node_modules` they name: the package's types do not change. svc-sdk reads its
 * version from `../package.json` relative to its module, and `svc-helpers` resolves the
 * OpenTelemetry SDK relative to its own: chunks stay in `dist/`, at the depth of the compiled files.
 *
 * Usage: `node scripts/bundle-sdk.ts <staged svc-sdk directory>` (src/project/bundle.ts runs it
 * while packing the svc-sdk tarball a project vendors).
 * @throws (exit 1) when esbuild cannot resolve or parse a module
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { build, type Plugin } from 'esbuild'

/** Node built-ins `ws` loads at start that only a `wss://` connection needs. */
const LAZY_BUILTINS = ['https', 'tls']

/**
 * Resolves `require('https')` and `require('tls')` of `ws` to a stand-in that loads the built-in
 * the first time one of its properties is read.
 */
const lazyTls: Plugin = {
  name: 'lazy-tls',
  setup(b) {
    const filter = new RegExp(`^(?:node:)?(?:${LAZY_BUILTINS.join('|')})$`)
    b.onResolve({ filter }, (args) => (/[\\/]ws[\\/]lib[\\/]/.test(args.importer) ? { path: args.path.replace(/^node:/, ''), namespace: 'lazy-builtin' } : undefined))
    b.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, (args) => ({
      contents:
        `let loaded\n` +
        `const load = () => (loaded ??= process.getBuiltinModule(${JSON.stringify(`node:${args.path}`)}))\n` +
        `module.exports = new Proxy({}, { get: (_, key) => load()[key], has: (_, key) => key in load() })\n`,
      loader: 'js',
    }))
  },
}

/**
 * Node's built-ins imported by an `import` statement of the bundle (`import { inspect } from
 * 'node:util'`), rewritten into reads of the names it imports from `process.getBuiltinModule`
 * (`const { inspect } = process.getBuiltinModule("node:util")`). The ES module face of a built-in
 * reads every one of its exports when a graph links, lazy ones included: `node:fs`'s `promises`
 * loads `fs/promises` and with it `readline` and the REPL's history, `node:util`'s loads
 * `worker_threads`, `parseArgs` and `diff` (~2.7 MiB of a worker's RSS for the built-ins svc-sdk
 * imports, issue 20 "a trivial worker's RSS ≤ 70 MB"). A `require` is no better: it syncs the face
 * too. The statements rewritten are the ones esbuild writes at the top of a chunk for an external
 * built-in; bindings of built-ins never change, so constants read once behave as the imports did.
 *
 * @param code one output file of the bundle
 * @returns the file with its built-in imports rewritten
 * @throws {Error} for an import of a built-in of a form it does not rewrite (the build fails)
 */
export function builtinImportsAsReads(code: string): string {
  return code.replace(/^import\s+([^;'"]*?)\s+from\s+"(node:[a-z_/]+)";$/gm, (statement: string, clause: string, specifier: string) => {
    // As many lines as the statement had: the source map's lines stay where they were.
    const lines = '\n'.repeat(statement.split('\n').length - 1)
    return `${rewrite(statement, clause, specifier)}${lines}`
  })
}

/** One built-in import statement of {@link builtinImportsAsReads} as a `const` read. */
function rewrite(statement: string, clause: string, specifier: string): string {
  const take = `process.getBuiltinModule(${JSON.stringify(specifier)})`
  const named = /^\{([^}]*)\}$/.exec(clause.trim())
  if (named) {
    const bindings = named[1]!
      .split(',')
      .map((part) => part.trim())
      .filter(Boolean)
      .map((part) => {
        const [imported, local] = part.split(/\s+as\s+/)
        if (!/^[A-Za-z_$][\w$]*$/.test(imported!) || (local !== undefined && !/^[A-Za-z_$][\w$]*$/.test(local))) throw new Error(`bundle-sdk: cannot rewrite ${statement}`)
        return local === undefined || local === imported ? imported! : `${imported}: ${local}`
      })
    return `const { ${bindings.join(', ')} } = ${take};`
  }
  const namespace = /^\*\s+as\s+([A-Za-z_$][\w$]*)$/.exec(clause.trim())
  if (namespace) return `const ${namespace[1]} = ${take};`
  const defaultOnly = /^([A-Za-z_$][\w$]*)$/.exec(clause.trim())
  if (defaultOnly) return `const ${defaultOnly[1]} = ${take};`
  throw new Error(`bundle-sdk: cannot rewrite ${statement}`)
}

/**
 * Bundles the svc-sdk package at `dir` in place (see the file's comment).
 *
 * @param dir a staged svc-sdk package: `package.json`, `dist/` with the compiled files and
 *   `node_modules` with its dependencies
 * @returns the files written, relative to `dir`
 */
export async function bundleSdk(dir: string): Promise<string[]> {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string; exports: Record<string, string | { default?: string }> }
  const entryPoints: Record<string, string> = {}
  for (const target of Object.values(pkg.exports)) {
    const file = typeof target === 'string' ? target : target.default
    if (file === undefined || !file.startsWith('./dist/') || !file.endsWith('.js')) continue
    entryPoints[file.slice('./dist/'.length, -'.js'.length)] = join(dir, file)
  }
  const dist = join(dir, 'dist')
  const result = await build({
    entryPoints,
    outdir: dist,
    absWorkingDir: dir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    chunkNames: 'chunk-[hash]',
    external: ['@opentelemetry/*', 'bufferutil', 'utf-8-validate'],
    // `ws` is CommonJS: its `require` calls of built-ins need a `require` in an ES module.
    banner: { js: 'const require = process.getBuiltinModule("node:module").createRequire(import.meta.url);' },
    plugins: [lazyTls],
    sourcemap: true,
    sourcesContent: false,
    legalComments: 'inline',
    write: false,
    logLevel: 'warning',
  })
  // Only now the compiled inputs may go: the bundle replaces them (declarations stay).
  for (const entry of readdirSync(dist)) if (/\.js(?:\.map)?$/.test(entry)) rmSync(join(dist, entry))
  const written: string[] = []
  for (const file of result.outputFiles) {
    writeFileSync(file.path, file.path.endsWith('.js') ? builtinImportsAsReads(file.text) : file.contents)
    written.push(relative(dir, file.path))
  }
  return written
}

if (import.meta.main) {
  const dir = process.argv[2]
  if (dir === undefined) {
    console.error('usage: node scripts/bundle-sdk.ts <staged svc-sdk directory>')
    process.exit(2)
  }
  await bundleSdk(resolve(dir))
}

/**
 * Warming Node's compile cache for a TypeScript worker without running it (issue 20: "a trivial
 * worker's RSS ≤ 70 MB", on its first start too).
 *
 * Node strips a `.ts` worker's types with amaro, its swc WebAssembly build, which stays in the
 * worker's memory (~17 MiB of RSS) — unless the compile cache svc passes its workers
 * (`NODE_COMPILE_CACHE`, bin/compile-cache.js) already holds the stripped code of every `.ts` file
 * the worker loads. A prime fills it: `node -e 'import "<exit>"; import "<entry>"'`, an ES module
 * whose first import exits. ESM loads, strips, compiles and links the whole static graph before it
 * evaluates any module, and evaluates the imports in order, so the entry's graph is in the cache
 * while none of the worker's code ran. The entry and its imports load by their own URLs with their
 * unchanged sources (the cache keys the stripped code by URL and source hash), so the worker's
 * later start finds them and its stack traces are the same. Packages (`node_modules/`, where Node
 * strips no types) are not loaded: see {@link recorder}.
 *
 * A record of the files the prime loaded (path, mtime, size), kept beside Node's entries in the
 * cache directory, tells the next start whether it must prime again; a few `stat`s when nothing
 * changed. Only modules of the static import graph are primed (an `import()` of a `.ts` file still
 * strips at its first use).
 */
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { accessSync, constants, readFileSync, statSync } from 'node:fs'
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { commandWords } from './process.ts'

/** What {@link primeCompileCache} did. */
export type PrimeOutcome =
  /** The record shows the cache holds every file the entry loads as they are now: nothing ran. */
  | 'fresh'
  /** A prime ran: the cache holds the stripped code of the entry's static graph (what of it loaded, when it does not link). */
  | 'primed'
  /** Not a command Node strips types for (`node <entry.ts>` of an ES module), `NODE_OPTIONS` preloads code, or the cache is off. */
  | 'unsupported'
  /** The prime loaded nothing (no such entry) or took longer than the timeout; the start goes on as before. */
  | 'failed'

/** The `node <entry>` a prime mirrors: the executable found on PATH and the entry's absolute path. */
export interface PrimeTarget {
  node: string
  entry: string
}

/** `NODE_OPTIONS` that load code before the entry (`--require`, `--import`, loaders): a worker started with them is not primed. */
const PRELOAD_OPTION = /(?:^|\s)(?:-r|--require|--import|--loader|--experimental-loader)(?:[=\s]|$)/

/** The prime's time limit, ms: a prime that hangs (a file system that does not answer) must not hold up the start for longer. */
export const PRIME_TIMEOUT_MS = 30_000

/**
 * The target of a start command Node strips types for: exactly `node <entry>` (the start svc infers
 * for a TypeScript worker whose tsconfig sets `erasableSyntaxOnly`, manifest.ts `inferScripts`),
 * `<entry>` a `.mts` file or a `.ts` file whose nearest package.json says `"type": "module"`, and
 * `node` found on `env.PATH` as the worker's start finds it. Undefined for anything else (tsx, flags,
 * CommonJS entries: their cache keys differ from what an ES module import makes).
 *
 * @param command the worker's start command (cli.md §5.1)
 * @param cwd the worker's directory
 * @param env the worker's environment (`PATH`, and `${NAME}` expansions)
 */
export function primeTarget(command: string, cwd: string, env: Readonly<Record<string, string | undefined>>): PrimeTarget | undefined {
  // Windows starts workers through cmd.exe and names Node `node.exe`: not primed there.
  if (process.platform === 'win32') return undefined
  const words = commandWords(command, env)
  if (words?.length !== 2 || words[0] !== 'node' || words[1]!.startsWith('-')) return undefined
  const entry = resolve(cwd, words[1]!)
  if (!(entry.endsWith('.mts') || (entry.endsWith('.ts') && nearestPackageType(dirname(entry)) === 'module'))) return undefined
  const node = onPath('node', env.PATH)
  return node === undefined ? undefined : { node, entry }
}

/**
 * Fills Node's compile cache (`env.NODE_COMPILE_CACHE`) with the stripped and compiled code of
 * `command`'s entry and its static imports, without running them, unless its record shows nothing
 * changed since the last prime. Never throws: a failed prime only leaves the first start to strip
 * the types itself, as without it.
 *
 * @param command the worker's start command; see {@link primeTarget} for the ones it primes
 * @param options `cwd` the worker's directory, `env` exactly the worker's environment (the cache
 *   directory, `NODE_OPTIONS` and `PATH` as its start sees them), `timeoutMs` (default
 *   {@link PRIME_TIMEOUT_MS})
 * @returns what happened ({@link PrimeOutcome})
 */
export async function primeCompileCache(command: string, options: { cwd: string; env: Record<string, string>; timeoutMs?: number }): Promise<PrimeOutcome> {
  const { env } = options
  const cache = env.NODE_COMPILE_CACHE
  if (!cache || !isAbsolute(cache) || env.NODE_DISABLE_COMPILE_CACHE) return 'unsupported'
  // Preloads would run in the prime: it would no longer run none of the worker's code.
  if (PRELOAD_OPTION.test(env.NODE_OPTIONS ?? '')) return 'unsupported'
  let target: PrimeTarget | undefined
  try {
    target = primeTarget(command, options.cwd, env)
  } catch {
    target = undefined
  }
  if (target === undefined) return 'unsupported'
  const record = recordPath(cache, target, env.NODE_OPTIONS ?? '')
  if (recordFresh(record)) return 'fresh'
  const child = spawn(target.node, ['--import', dataUrl(recorder(record)), '--input-type=module', '-e', primeModule(target.entry)], {
    cwd: options.cwd,
    env,
    stdio: 'ignore',
    windowsHide: true,
  })
  return new Promise((resolvePrime) => {
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, options.timeoutMs ?? PRIME_TIMEOUT_MS)
    child.once('error', () => {
      clearTimeout(timer)
      resolvePrime('failed')
    })
    child.once('exit', () => {
      clearTimeout(timer)
      resolvePrime(!timedOut && recordFresh(record) ? 'primed' : 'failed')
    })
  })
}

/**
 * Runs first in the prime (`--import`): synchronous module hooks (`module.registerHooks`, Node ≥
 * 22.15) that note each file the graph loads, with its mtime and size taken before Node reads it
 * (a write after that leaves the record older than the file: primed again next time), and give
 * every module under `node_modules/` as an empty one: Node strips no types there, and a package's
 * code (svc-sdk's) is what the worker's own start caches; not loading it saves about a third of
 * the prime. The graph then fails to link (its imports name exports the empty modules lack), so
 * nothing of it is evaluated; a graph without packages evaluates the prime's first import, which
 * exits. Either way the exit writes the record and flushes the cache.
 */
function recorder(record: string): string {
  const temporary = `${record}.${process.pid}.tmp`
  return `import m from 'node:module'
import fs from 'node:fs'
import { fileURLToPath } from 'node:url'
const files = []
m.registerHooks?.({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    return resolved.url.startsWith('file:') && resolved.url.includes('/node_modules/') ? { url: 'data:text/javascript,', format: 'module', shortCircuit: true } : resolved
  },
  load(url, context, nextLoad) {
    if (url.startsWith('file:')) {
      try {
        const path = fileURLToPath(url)
        const stat = fs.statSync(path)
        files.push([path, stat.mtimeMs, stat.size])
      } catch {}
    }
    return nextLoad(url, context)
  },
})
process.on('exit', () => {
  m.flushCompileCache?.()
  if (files.length === 0) return
  try {
    fs.mkdirSync(${JSON.stringify(dirname(record))}, { recursive: true, mode: 0o700 })
    fs.writeFileSync(${JSON.stringify(temporary)}, JSON.stringify({ files }), { mode: 0o600 })
    fs.renameSync(${JSON.stringify(temporary)}, ${JSON.stringify(record)})
  } catch {}
})
`
}

/**
 * The prime's main module: its first import exits (the recorder's exit handler writes the record)
 * before the second one, the worker's entry, is evaluated. It is synchronous: the graph's
 * evaluation would go on as soon as it returned.
 */
function primeModule(entry: string): string {
  return `import ${JSON.stringify(dataUrl('process.exit(0)'))}\nimport ${JSON.stringify(pathToFileURL(entry).href)}\n`
}

function dataUrl(source: string): string {
  return `data:text/javascript,${encodeURIComponent(source)}`
}

/**
 * The record of one entry as one Node started it with one `NODE_OPTIONS` (flags such as
 * `--enable-source-maps` change what the cache holds): `<cache>/svc-primed/<hash>.json`, in the
 * cache directory so that clearing the cache clears the records. The executable's size and mtime
 * are in the key: another Node version keeps its entries apart.
 */
function recordPath(cache: string, target: PrimeTarget, nodeOptions: string): string {
  let node: string
  try {
    const stat = statSync(target.node)
    node = `${target.node}\0${stat.size}\0${stat.mtimeMs}`
  } catch {
    node = target.node
  }
  const key = createHash('sha256').update(`${node}\0${target.entry}\0${nodeOptions}`).digest('hex').slice(0, 32)
  return join(cache, 'svc-primed', `${key}.json`)
}

/** True when the record exists and every file in it has the mtime and size it had when primed. */
function recordFresh(record: string): boolean {
  let files: unknown
  try {
    files = (JSON.parse(readFileSync(record, 'utf8')) as { files?: unknown }).files
  } catch {
    return false
  }
  if (!Array.isArray(files) || files.length === 0) return false
  for (const file of files) {
    if (!Array.isArray(file) || typeof file[0] !== 'string') return false
    try {
      const stat = statSync(file[0])
      if (stat.mtimeMs !== file[1] || stat.size !== file[2]) return false
    } catch {
      return false
    }
  }
  return true
}

/** `type` of the package.json nearest to `directory` (Node's own lookup for a `.ts` file's module kind). */
function nearestPackageType(directory: string): string | undefined {
  for (let dir = directory; ; dir = dirname(dir)) {
    try {
      const type = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: unknown }).type
      return typeof type === 'string' ? type : undefined
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined
    }
    if (dirname(dir) === dir) return undefined
  }
}

/** The executable `name` on `path` (POSIX lookup: the first executable file), as `spawn` finds it. */
function onPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue
    const file = join(dir, name)
    try {
      if (statSync(file).isFile()) {
        accessSync(file, constants.X_OK)
        return file
      }
    } catch {
      /* next */
    }
  }
  return undefined
}

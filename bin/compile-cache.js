// Node's module compile cache for svc (issue 20 "Engine start"): V8's compiled code of every module
// svc loads is kept on disk and reused by the next start, instead of parsing and compiling about
// 3 MB of JavaScript each time. Plain JavaScript loaded by bin/run.js before anything else.

// Node's built-ins are taken with process.getBuiltinModule (Node >= 22.3, as svc needs 22.13), not
// `import`: the ES module face of `node:fs` reads every export once when created, `fs.ReadStream`
// included, which loads Node's file streams at every start (issue 20 "Engine start").
const { mkdirSync } = process.getBuiltinModule('node:fs')
const { homedir } = process.getBuiltinModule('node:os')
const { posix, win32 } = process.getBuiltinModule('node:path')

/**
 * The directory svc keeps Node's compile cache in: the user's own cache folder, never a shared one
 * such as Node's default under the system temporary folder (a cache another user can write is code
 * they can make svc run).
 *
 * - Linux and others: `$XDG_CACHE_HOME/svc/node-compile-cache` (an absolute `XDG_CACHE_HOME` only,
 *   as the XDG spec says), else `~/.cache/svc/node-compile-cache`;
 * - macOS: `~/Library/Caches/svc/node-compile-cache`;
 * - Windows: `%LOCALAPPDATA%\svc\Cache\node-compile-cache`, else under `~\AppData\Local`.
 *
 * @param {NodeJS.ProcessEnv} env the environment (`XDG_CACHE_HOME`, `LOCALAPPDATA`)
 * @param {NodeJS.Platform} platform `process.platform`
 * @param {string} home the user's home directory
 * @returns {string} an absolute path
 */
export function compileCacheDirectory(env, platform, home) {
  const { isAbsolute, join } = platform === 'win32' ? win32 : posix
  if (platform === 'win32') {
    const local = env.LOCALAPPDATA && isAbsolute(env.LOCALAPPDATA) ? env.LOCALAPPDATA : join(home, 'AppData', 'Local')
    return join(local, 'svc', 'Cache', 'node-compile-cache')
  }
  if (platform === 'darwin') return join(home, 'Library', 'Caches', 'svc', 'node-compile-cache')
  const xdg = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache')
  return join(xdg, 'svc', 'node-compile-cache')
}

/**
 * Turns on Node's compile cache (`module.enableCompileCache`, Node >= 22.1) in
 * {@link compileCacheDirectory}, created readable by its owner only, and hands it to the processes
 * svc starts (workers, `npm`, `svc console`) through `NODE_COMPILE_CACHE`, so that a TypeScript
 * worker's `svc-sdk` loads from it too. `NODE_COMPILE_CACHE` already set (Node then enabled it in
 * that directory) or `NODE_DISABLE_COMPILE_CACHE=1` are left as the user set them; a cache that cannot
 * be created only costs the speed-up (svc runs the same, silently).
 *
 * @param {typeof import('node:module')} module Node's `node:module`
 * @param {NodeJS.ProcessEnv} env the environment to read and to extend for child processes
 * @returns {string | undefined} the directory in use, or undefined when the cache is off
 */
export function enableCompileCache(module, env) {
  if (typeof module.enableCompileCache !== 'function' || env.NODE_DISABLE_COMPILE_CACHE) return undefined
  if (env.NODE_COMPILE_CACHE) return env.NODE_COMPILE_CACHE
  let directory
  try {
    directory = compileCacheDirectory(env, process.platform, homedir())
    mkdirSync(directory, { recursive: true, mode: 0o700 })
  } catch {
    return undefined
  }
  const { status } = module.enableCompileCache(directory)
  const { ENABLED, ALREADY_ENABLED } = module.constants.compileCacheStatus
  if (status !== ENABLED && status !== ALREADY_ENABLED) return undefined
  env.NODE_COMPILE_CACHE = directory
  return directory
}

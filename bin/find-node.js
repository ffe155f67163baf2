// The Node runtime svc runs on (issue 20 "Install"): svc needs Node.js 22.13 or newer (node:sqlite,
// require of ES modules). When `svc` was started by an older Node (the `node` first on PATH is
// often the system's), bin/run.js asks this module for a newer one already on the machine and runs
// itself again with it; when there is none, it prints what to install. Plain JavaScript that parses
// and runs on Node 18 and later: it is loaded before anything that needs a newer Node.

import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, join } from 'node:path'

/** The oldest Node svc runs on, as [major, minor] (package.json `engines.node`). */
export const MIN_NODE = [22, 13]

/**
 * True when `version` (`22.13.0`, `v24.1.0`) is at least {@link MIN_NODE}.
 * @param {string} version
 * @returns {boolean}
 */
export function isSupported(version) {
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number)
  if (!Number.isInteger(major) || !Number.isInteger(minor)) return false
  return major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])
}

/** Versions compared as numbers, newest first. */
function newestFirst(a, b) {
  const x = a.version.split('.').map(Number)
  const y = b.version.split('.').map(Number)
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (y[i] ?? 0) - (x[i] ?? 0)
  return 0
}

/** Children of `dir` (none when it cannot be read). */
function list(dir) {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/**
 * The places a newer Node may be, in order: `SVC_NODE`, every `node` on PATH, the Node versions
 * of nvm (`$NVM_DIR`, `~/.nvm`), fnm, Volta and n, Homebrew's and /usr/local's.
 * @param {NodeJS.ProcessEnv} env
 * @returns {string[]} absolute paths that exist, without duplicates
 */
export function candidates(env = process.env) {
  const exe = process.platform === 'win32' ? 'node.exe' : 'node'
  const home = env.HOME || homedir()
  const found = []
  if (env.SVC_NODE) found.push(env.SVC_NODE)
  for (const dir of (env.PATH || '').split(delimiter)) if (dir) found.push(join(dir, exe))
  const nvm = env.NVM_DIR || join(home, '.nvm')
  for (const version of list(join(nvm, 'versions', 'node'))) found.push(join(nvm, 'versions', 'node', version, 'bin', exe))
  const fnm = env.FNM_DIR || join(home, '.local', 'share', 'fnm')
  for (const version of list(join(fnm, 'node-versions'))) found.push(join(fnm, 'node-versions', version, 'installation', 'bin', exe))
  const volta = env.VOLTA_HOME || join(home, '.volta')
  for (const version of list(join(volta, 'tools', 'image', 'node'))) found.push(join(volta, 'tools', 'image', 'node', version, 'bin', exe))
  const n = env.N_PREFIX || '/usr/local'
  for (const version of list(join(n, 'n', 'versions', 'node'))) found.push(join(n, 'n', 'versions', 'node', version, 'bin', exe))
  found.push('/opt/homebrew/bin/node', '/usr/local/bin/node')
  return [...new Set(found)].filter((path) => existsSync(path))
}

/**
 * The newest Node of {@link candidates} that is at least {@link MIN_NODE}: `SVC_NODE` when it
 * qualifies, else the newest found. Each candidate is asked its version (a process each, 5 s at most).
 * @param {NodeJS.ProcessEnv} env
 * @returns {{ path: string, version: string } | undefined}
 */
export function findNode(env = process.env) {
  const usable = []
  for (const path of candidates(env)) {
    let version
    try {
      version = execFileSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'], env: { PATH: env.PATH ?? '' } }).trim()
    } catch {
      continue
    }
    if (!isSupported(version)) continue
    if (path === env.SVC_NODE) return { path, version }
    usable.push({ path, version })
  }
  return usable.sort(newestFirst)[0]
}

/**
 * What to tell a user who has no Node new enough.
 * @param {string} current the running Node's version (`v20.20.2`)
 * @param {string | undefined} svcNode `SVC_NODE`, when set
 * @returns {string} lines ending with a newline
 */
export function noNodeMessage(current, svcNode) {
  const min = `${MIN_NODE[0]}.${MIN_NODE[1]}`
  return (
    `Error: svc needs Node.js ${min} or newer; it was started by Node ${current} and found no newer Node on this machine` +
    (svcNode ? ` (SVC_NODE=${svcNode} is not one)` : '') +
    '.\n' +
    `Hint: install Node.js ${min} or newer (Node 24 LTS: https://nodejs.org/en/download, or nvm install 24), ` +
    'then run svc again; or point SVC_NODE at a node binary that is new enough (SVC_NODE=/path/to/node svc …).\n'
  )
}

/**
 * Project discovery and engine address resolution (cli.md §1).
 */
import { existsSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, isAbsolute, sep } from 'node:path'
import { parse } from 'yaml'
import { expandString } from '../../runtime/config/placeholders.ts'
import type { Env } from '../../runtime/config/placeholders.ts'

/** Name of the engine configuration file looked for in the working directory and its parents. */
export const CONFIG_FILE_NAME = 'config.yaml'

/** The engine address when nothing else says (cli.md §1). */
export const DEFAULT_ENGINE_URL = 'ws://127.0.0.1:49134'

/**
 * The nearest `config.yaml`: in `cwd` or the nearest parent directory that has one. Returns its
 * absolute path, or undefined when no directory up to the file-system root has one.
 */
export function findConfigFile(cwd: string): string | undefined {
  let dir = resolve(cwd)
  for (;;) {
    const candidate = join(dir, CONFIG_FILE_NAME)
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate
    const parent = dirname(dir)
    if (parent === dir) return undefined
    dir = parent
  }
}

/** Where the config file comes from, and how to name it in messages. */
export interface LocatedConfig {
  /** Absolute path; undefined when none was found and none was named. */
  path: string | undefined
  /** The name shown in errors: as given with --config, else relative to cwd when below it. */
  label: string | undefined
  /** True when named with `--config`. */
  explicit: boolean
}

/** cli.md §1 project discovery: `--config <file>`, else the nearest config.yaml. */
export function locateConfig(configFlag: string | undefined, cwd: string): LocatedConfig {
  if (configFlag !== undefined) return { path: resolve(cwd, configFlag), label: configFlag, explicit: true }
  const found = findConfigFile(cwd)
  return { path: found, label: found === undefined ? undefined : displayPath(found, cwd), explicit: false }
}

/** `path` relative to `cwd` when it lies below it (`config.yaml`, `sub/config.yaml`), else absolute. */
export function displayPath(path: string, cwd: string): string {
  const rel = relative(cwd, path)
  return rel !== '' && !rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel) ? rel : path
}

/** `ws://host:port`, reading a wildcard bind address as loopback and bracketing IPv6 hosts. */
export function listenerUrl(host: string, port: number): string {
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host
  return `ws://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}`
}

/**
 * The engine URL for commands that talk to a running engine (cli.md §1): `flag` (--engine/--url),
 * else `SVC_URL`, else `ws://<host>:<port>` of the first enabled svc-worker-manager entry of the
 * discovered config.yaml, else {@link DEFAULT_ENGINE_URL}.
 *
 * Only that one entry is read (placeholders expanded), so a config.yaml that needs variables only
 * the engine has still resolves; a file that cannot be read or parsed is ignored here (`svc start`
 * reports it).
 */
export function resolveEngineUrl(options: { flag?: string | undefined; env?: Env; cwd: string; configFlag?: string | undefined }): string {
  if (options.flag) return options.flag
  const env = options.env ?? process.env
  if (env.SVC_URL) return env.SVC_URL
  const located = locateConfig(options.configFlag, options.cwd)
  const fromFile = located.path ? firstListenerUrl(located.path, env) : undefined
  return fromFile ?? DEFAULT_ENGINE_URL
}

function firstListenerUrl(file: string, env: Env): string | undefined {
  let document: unknown
  try {
    document = parse(readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
  const workers = (document as { workers?: unknown } | null)?.workers
  if (!Array.isArray(workers)) return undefined
  for (const entry of workers) {
    if (typeof entry !== 'object' || entry === null) continue
    const { name, enabled, config } = entry as { name?: unknown; enabled?: unknown; config?: unknown }
    if (name !== 'svc-worker-manager' || enabled === false) continue
    const block = (typeof config === 'object' && config !== null ? config : {}) as { host?: unknown; port?: unknown }
    try {
      const host = typeof block.host === 'string' ? expandString(block.host, env) : '127.0.0.1'
      const port = typeof block.port === 'string' ? Number(expandString(block.port, env)) : (block.port ?? 49134)
      if (typeof port !== 'number' || !Number.isInteger(port) || port <= 0 || port > 65535) return undefined
      return listenerUrl(host, port)
    } catch {
      return undefined
    }
  }
  return undefined
}

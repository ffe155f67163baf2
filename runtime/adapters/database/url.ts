/**
 * Database URLs (builtins.md §10.1): the scheme picks the driver.
 *
 * `sqlite:<path>` (relative to the project root), `sqlite:///<absolute path>`, `sqlite::memory:`,
 * `postgres://…` or `postgresql://…`, `mysql://…`.
 */
import { isAbsolute, resolve } from 'node:path'
import { Errors } from 'svc-protocol/errors'

export type DriverKind = 'sqlite' | 'postgres' | 'mysql'

/**
 * The driver of a URL.
 * @throws SvcError `CONFIG_ERROR` for an unsupported scheme or a URL that cannot be parsed.
 * @example driverOf('postgresql://db/app') // 'postgres'
 */
export function driverOf(url: string, key = 'url'): DriverKind {
  if (url.startsWith('sqlite:')) return 'sqlite'
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase()
  const kind = scheme === 'postgres' || scheme === 'postgresql' ? 'postgres' : scheme === 'mysql' ? 'mysql' : undefined
  if (!kind) throw Errors.configError(`${key} has an unsupported scheme: use sqlite:, postgres://, postgresql:// or mysql://`)
  if (!URL.canParse(url)) throw Errors.configError(`${key} is not a valid URL`)
  return kind
}

/**
 * The file of a `sqlite:` URL: `:memory:`, an absolute path, or a path resolved against `root`.
 * @throws SvcError `CONFIG_ERROR` when the path is empty.
 * @example sqlitePath('sqlite:./app.db', '/srv/p') // '/srv/p/app.db'
 */
export function sqlitePath(url: string, root: string, key = 'url'): string {
  const rest = url.slice('sqlite:'.length)
  if (rest === ':memory:') return ':memory:'
  const path = rest.startsWith('///') ? rest.slice(2) : rest.startsWith('//') ? rest.slice(2) : rest
  if (path === '' || path.includes('\0')) throw Errors.configError(`${key} names no SQLite file`)
  return isAbsolute(path) ? path : resolve(root, path)
}

/** The URL without its password (and user), for `database::list_databases` and logs. */
export function redactUrl(url: string): string {
  if (url.startsWith('sqlite:') || !URL.canParse(url)) return url
  const parsed = new URL(url)
  if (parsed.username === '' && parsed.password === '') return url
  parsed.username = ''
  parsed.password = ''
  return parsed.toString()
}

/** True when a server URL points at this machine (its TLS mode defaults to `disable`, §10.1). */
export function isLocalUrl(url: string): boolean {
  if (!URL.canParse(url)) return false
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '')
  return host === '' || host === 'localhost' || host === '::1' || /^127\./.test(host)
}

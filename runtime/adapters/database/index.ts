/**
 * SQL drivers of the database worker (builtins.md §10): SQLite (`node:sqlite`), PostgreSQL (`pg`)
 * and MySQL (`mysql2`) behind one {@link DatabaseDriver} interface.
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { Errors } from 'svc-protocol/errors'
import { RESULT_LIMIT_DEFAULTS } from './limits.ts'
import type { DatabaseDriver, DriverOptions } from './types.ts'
import { driverOf, sqlitePath } from './url.ts'
import { loadOptional } from '../optional-package.ts'

export type * from './types.ts'
export { driverOf, isLocalUrl, redactUrl, sqlitePath, type DriverKind } from './url.ts'
export { firstKeyword, toParameter } from './values.ts'
export { RESULT_LIMIT_DEFAULTS, type ResultLimits } from './limits.ts'

/**
 * Opens the driver of one database. A SQLite file is opened (its directory created) at once;
 * PostgreSQL and MySQL pools connect on first use.
 *
 * @param root directory relative `sqlite:` paths resolve against (the project root)
 * @throws SvcError `CONFIG_ERROR` for an unsupported scheme, an invalid URL, a SQLite file that
 *   cannot be opened or a TLS CA file that cannot be read.
 * @example const driver = await openDatabaseDriver({ name: 'primary', url: 'sqlite::memory:', pool, tls: { mode: 'disable' } }, root)
 */
export async function openDatabaseDriver(options: DriverOptions, root: string): Promise<DatabaseDriver> {
  const key = `databases.${options.name}.url`
  switch (driverOf(options.url, key)) {
    case 'sqlite': {
      const path = sqlitePath(options.url, root, key)
      if (path !== ':memory:') {
        try {
          mkdirSync(dirname(path), { recursive: true })
        } catch (error) {
          throw Errors.configError(`${key}: cannot create the directory of ${path}: ${(error as Error).message}`)
        }
      }
      // Loaded here, not at import: its own module (and, bundled, its own chunk beside its thread's file).
      const { openSqliteDriver } = await import('./sqlite/index.ts')
      return openSqliteDriver({ name: options.name, path, busyTimeoutMs: options.pool.acquire_timeout_ms, limits: options.limits ?? RESULT_LIMIT_DEFAULTS, allowAttach: options.allowAttach ?? false })
    }
    case 'postgres':
      // Drivers load on first use: a project without PostgreSQL or MySQL never loads pg or mysql2.
      return (await loadOptional(['pg', 'pg-cursor'], 'PostgreSQL databases', () => import('./postgres/index.ts'))).openPostgresDriver(options)
    case 'mysql':
      return (await loadOptional(['mysql2'], 'MySQL databases', () => import('./mysql/index.ts'))).openMysqlDriver(options)
  }
}

/**
 * TLS options of PostgreSQL and MySQL connections (builtins.md §10.1 `tls`).
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import { Errors } from 'svc-protocol/errors'
import type { DriverOptions } from './types.ts'

/**
 * Node TLS options for `tls.mode`: `disable` → undefined (plain TCP); `require` → encrypted
 * without certificate checks; `verify-full` → certificate and host name checked. `ca_file` adds a
 * CA bundle.
 * @throws SvcError `CONFIG_ERROR` when `ca_file` cannot be read.
 */
export function tlsOptions(options: DriverOptions): ConnectionOptions | undefined {
  const { mode, ca_file } = options.tls
  if (mode === 'disable') return undefined
  const tls: ConnectionOptions = { rejectUnauthorized: mode === 'verify-full' }
  if (ca_file !== undefined) {
    try {
      tls.ca = readFileSync(ca_file, 'utf8')
    } catch (error) {
      throw Errors.configError(`databases.${options.name}.tls.ca_file cannot be read: ${(error as Error).message}`)
    }
  }
  return tls
}

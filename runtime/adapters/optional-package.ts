/**
 * Optional packages of the installed CLI (issue 20 "Install"): database drivers, the Redis and
 * NATS clients and the OTLP exporters are left out of the packed `svc` and load on first use. In a
 * checkout the drivers and clients are `optionalDependencies`; the exporters stay `dependencies`,
 * because npm skips an optional package whose `engines` (theirs: Node >= 22.15) do not match the
 * Node running npm — the system Node 20 of a fresh machine — and the build needs their types. When one is not installed, the
 * feature that needs it fails with `DEPENDENCY_MISSING`, naming the package and the `npm i -g`
 * command that adds it, instead of Node's `Cannot find package` from deep inside the engine.
 */
import { createRequire } from 'node:module'
import { Errors } from 'svc-protocol/errors'

/**
 * Every optional package and the version range svc is tested with (kept equal to the range in svc's
 * package.json, `optionalDependencies` or `dependencies`; test/optional-package.test.ts checks it).
 */
export const OPTIONAL_PACKAGES: Readonly<Record<string, string>> = {
  '@grpc/grpc-js': '^1.14.7',
  '@opentelemetry/exporter-logs-otlp-grpc': '^0.301.0',
  '@opentelemetry/exporter-logs-otlp-http': '^0.301.0',
  '@opentelemetry/exporter-logs-otlp-proto': '^0.301.0',
  '@opentelemetry/exporter-metrics-otlp-grpc': '^0.301.0',
  '@opentelemetry/exporter-metrics-otlp-http': '^0.301.0',
  '@opentelemetry/exporter-metrics-otlp-proto': '^0.301.0',
  '@opentelemetry/exporter-trace-otlp-grpc': '^0.301.0',
  '@opentelemetry/exporter-trace-otlp-http': '^0.301.0',
  '@opentelemetry/exporter-trace-otlp-proto': '^0.301.1',
  ioredis: '^5.11.1',
  mysql2: '^3.24.6',
  nats: '^2.29.3',
  pg: '^8.23.1',
  'pg-cursor': '^2.22.1',
}

/**
 * The optional package among `packages` that a module-loading error says is missing: Node's
 * `ERR_MODULE_NOT_FOUND` (import) or `MODULE_NOT_FOUND` (require) naming it or one of its
 * subpaths. Undefined for any other error, including a missing module of an installed package.
 */
export function missingPackage(error: unknown, packages: readonly string[]): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined
  const message = (error as { message?: unknown }).message
  if (typeof message !== 'string') return undefined
  return packages.find((name) => message.includes(`'${name}'`) || message.includes(`'${name}/`))
}

function missing(packages: readonly string[], feature: string, error: unknown): never {
  const name = missingPackage(error, packages)
  if (name === undefined) throw error
  // The other packages the feature needs are usually missing as well: one command adds them all.
  throw Errors.dependencyMissing(name, feature, packages.map((p) => `${p}@${OPTIONAL_PACKAGES[p] ?? 'latest'}`))
}

/**
 * Runs `load` (a dynamic `import()` of the module that uses `packages`); when it fails because
 * one of `packages` is not installed, fails with `DEPENDENCY_MISSING` instead.
 *
 * @param packages the optional packages (keys of {@link OPTIONAL_PACKAGES}) `load` needs
 * @param feature what needs them, for the message (`PostgreSQL databases`)
 * @throws SvcError `DEPENDENCY_MISSING` (`npm i -g <packages>` in the message); any other error of `load` as it is
 * @example const { openPostgresDriver } = await loadOptional(['pg', 'pg-cursor'], 'PostgreSQL databases', () => import('./postgres/index.ts'))
 */
export async function loadOptional<T>(packages: readonly string[], feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    missing(packages, feature, error)
  }
}

/**
 * `require(name)` of a CommonJS optional package, resolved from this file, or `DEPENDENCY_MISSING`.
 *
 * @throws SvcError `DEPENDENCY_MISSING` when `name` is not installed
 */
export function requireOptional<T>(name: string, feature: string): T {
  try {
    return createRequire(import.meta.url)(name) as T
  } catch (error) {
    missing([name], feature, error)
  }
}

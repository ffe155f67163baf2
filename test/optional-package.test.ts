/**
 * Optional packages (issue 20 "Install", runtime/adapters/optional-package.ts): the packed svc
 * leaves out database drivers, the Redis and NATS clients and the OTLP exporters; a feature whose
 * package is not installed fails with DEPENDENCY_MISSING and the npm command that adds it, not with
 * Node's module resolution error. The missing package is real: a module in a temporary folder with
 * no node_modules imports it, so Node's own error is what the helper sees.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import fc from 'fast-check'
import { catalogue, Codes, SvcError } from 'svc-protocol/errors'
import { loadOptional, missingPackage, OPTIONAL_PACKAGES, requireOptional } from '../runtime/adapters/optional-package.ts'

const ROOT = new URL('..', import.meta.url)
const scratch = mkdtempSync(join(tmpdir(), 'svc-optional-'))
after(() => rmSync(scratch, { recursive: true, force: true }))

/** A module outside any node_modules tree that imports `specifier`. */
function importer(name: string, specifier: string): string {
  const file = join(scratch, `${name}.mjs`)
  writeFileSync(file, `import * as m from ${JSON.stringify(specifier)}\nexport default m\n`)
  return pathToFileURL(file).href
}

describe('optional packages', () => {
  it('lists every optionalDependency of package.json and the OTLP exporters, with their ranges', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { optionalDependencies: Record<string, string>; dependencies: Record<string, string> }
    const exporters = Object.fromEntries(Object.entries(pkg.dependencies).filter(([name]) => name.startsWith('@opentelemetry/exporter-')))
    assert.ok(Object.keys(exporters).length > 0, 'the checkout keeps the exporters as dependencies (their engines would make npm under an old Node skip them)')
    assert.deepEqual(OPTIONAL_PACKAGES, { ...pkg.optionalDependencies, ...exporters })
    for (const name of ['pg', 'mysql2', 'ioredis', 'nats', '@grpc/grpc-js']) assert.equal(pkg.dependencies[name], undefined, `${name} is not a required dependency`)
  })

  it('a PostgreSQL driver module whose pg is not installed fails with DEPENDENCY_MISSING and the npm command', async () => {
    const url = importer('postgres-driver', 'pg')
    await assert.rejects(
      loadOptional(['pg', 'pg-cursor'], 'PostgreSQL databases', () => import(url)),
      (error: unknown) => {
        assert.ok(error instanceof SvcError)
        assert.equal(error.code, Codes.DependencyMissing)
        assert.match(error.message, /the package pg, needed for PostgreSQL databases, is not installed/)
        assert.ok(error.message.endsWith(`npm i -g pg@${OPTIONAL_PACKAGES.pg} pg-cursor@${OPTIONAL_PACKAGES['pg-cursor']}`), error.message)
        return true
      },
    )
  })

  it('a scoped package and a subpath import are named as the package', async () => {
    const url = importer('grpc-subpath', '@opentelemetry/exporter-trace-otlp-grpc-not-here/build')
    const name = '@opentelemetry/exporter-trace-otlp-grpc-not-here'
    await assert.rejects(loadOptional([name], 'an OTLP export over grpc', () => import(url)), (error: unknown) => (error as SvcError).code === Codes.DependencyMissing && (error as Error).message.includes(`package ${name},`))
  })

  it('a CommonJS require of a missing package fails with DEPENDENCY_MISSING', () => {
    assert.throws(() => requireOptional('svc-no-such-package-ioredis', 'Redis adapters'), (error: unknown) => (error as SvcError).code === Codes.DependencyMissing)
  })

  it('any other failure of the load passes through unchanged: a missing module that is not one of the packages, a throwing module', async () => {
    const other = importer('other-missing', 'some-other-package')
    await assert.rejects(loadOptional(['pg'], 'PostgreSQL databases', () => import(other)), (error: unknown) => (error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND')
    const thrown = new Error('boom')
    await assert.rejects(loadOptional(['pg'], 'PostgreSQL databases', () => Promise.reject(thrown)), (error: unknown) => error === thrown)
    assert.equal(missingPackage({ code: 'ERR_MODULE_NOT_FOUND', message: "Cannot find package 'pgx' imported from /a" }, ['pg']), undefined)
    assert.equal(missingPackage({ code: 'ERR_MODULE_NOT_FOUND', message: "Cannot find package 'pg' imported from /a" }, ['pg']), 'pg')
  })

  it('the catalogue has DEPENDENCY_MISSING with a fix and a hint', () => {
    const entry = catalogue().find((e) => e.code === Codes.DependencyMissing)
    assert.ok(entry?.fix.includes('npm i -g'))
    assert.ok(entry?.hint)
  })

  it('fast-check: hostile errors never make it throw anything but the error or DEPENDENCY_MISSING', async () => {
    const names = Object.keys(OPTIONAL_PACKAGES)
    const hostile = fc.oneof(
      fc.anything(),
      fc.record({ code: fc.constantFrom('ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND', 'ENOENT', 7), message: fc.oneof(fc.string(), fc.constantFrom(...names).map((n) => `Cannot find package '${n}' imported from /x`), fc.anything()) }),
      fc.string().map((message) => Object.assign(new Error(message), { code: 'ERR_MODULE_NOT_FOUND' })),
      // Messages that are not strings and would throw when made into one.
      fc.constantFrom({ code: 'ERR_MODULE_NOT_FOUND', message: Symbol('pg') }, { code: 'MODULE_NOT_FOUND', message: Object.create(null) as object }, Object.create(null) as object),
      fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true }),
    )
    await fc.assert(
      fc.asyncProperty(hostile, fc.subarray(names, { minLength: 1 }), async (thrown, packages) => {
        try {
          await loadOptional(packages, 'a feature', () => Promise.reject(thrown))
          assert.fail('resolved')
        } catch (error) {
          if (error instanceof SvcError) {
            assert.equal(error.code, Codes.DependencyMissing)
            assert.ok(packages.some((p) => error.message.includes(`package ${p},`)))
          } else assert.equal(error, thrown)
        }
      }),
    )
  })
})

/**
 * The readers of worker-compose.yaml and svc.worker.yaml under hostile texts (issue 16, issue 21):
 * on the one YAML reader (runtime/yaml), each reads a text or refuses it with its located
 * {@link YamlError} subclass — `ComposeFileError`, `ManifestError` — at `file:line:col` (or `file:`
 * for a whole-file problem), whatever the text: syntax, limits, aliases, wrong types.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { YamlError } from '../../runtime/yaml/index.ts'
import { billionLaughs, yamlFragments } from '../../test/support/hostile-yaml.ts'
import { ManifestError, parseManifest } from '../supervisor/manifest.ts'
import { ComposeFileError, parseComposeFile } from './file.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-yaml-readers-'))
after(() => rmSync(dir, { recursive: true, force: true }))

/** Random texts of YAML pieces and the file's own keys, with the classic attacks mixed in. */
function hostile(keys: readonly string[]): fc.Arbitrary<string> {
  const random = fc.array(fc.oneof(fc.constantFrom(...yamlFragments(keys)), fc.string({ maxLength: 5 })), { maxLength: 50 }).map((parts) => parts.join(''))
  const deep = fc.integer({ min: 100, max: 200 }).map((n) => `${keys[0] ?? 'a'}: ${'['.repeat(n)}${']'.repeat(n)}\n`)
  return fc.oneof({ weight: 8, arbitrary: random }, { weight: 1, arbitrary: deep }, { weight: 1, arbitrary: fc.constantFrom(billionLaughs(), `${keys[0] ?? 'a'}:\n${billionLaughs('  ')}`) })
}

/** The located format of every refusal: `file:line:col: problem`, or `file: problem`. */
function located(error: unknown, file: string, type: new (...args: never[]) => YamlError): void {
  assert.ok(error instanceof type, `not a ${type.name}: ${String(error)}`)
  assert.ok(error instanceof YamlError)
  assert.equal(error.file, file)
  assert.ok(error.message.startsWith(error.place ? `${file}:${error.place.line}:${error.place.column}: ` : `${file}: `), error.message)
  assert.ok(error.problem.length > 0)
}

describe('compose and manifest readers under hostile YAML', () => {
  it('parseComposeFile reads a text or refuses it with a located ComposeFileError', () => {
    const keys = ['containers', 'api', 'worker', 'depends_on', 'environment', 'config', 'scripts', 'namespace', 'startup_timeout', 'path://./w', 'builtin://svc-state']
    fc.assert(
      fc.property(hostile(keys), (text) => {
        try {
          parseComposeFile(text, { env: {} })
        } catch (error) {
          located(error, 'worker-compose.yaml', ComposeFileError)
          assert.ok(['INVALID_COMPOSE_FILE', 'RESERVED_WORKER', 'RESERVED_ENV_OVERRIDE'].includes((error as ComposeFileError).code))
        }
      }),
      { numRuns: 800 },
    )
  })

  it('parseManifest reads a text or refuses it with a located ManifestError', () => {
    const keys = ['name', 'w', 'runtime', 'kind', 'typescript', 'scripts', 'start', 'env', 'watch', 'ignore', 'resources', 'cpus', 'isolation']
    fc.assert(
      fc.property(hostile(keys), (text) => {
        try {
          parseManifest(text, { directory: dir, fileLabel: 'svc.worker.yaml' })
        } catch (error) {
          located(error, 'svc.worker.yaml', ManifestError)
          assert.equal((error as ManifestError).code, 'INVALID_MANIFEST')
        }
      }),
      { numRuns: 800 },
    )
  })
})

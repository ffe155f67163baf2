import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { stringify } from 'yaml'
import { MANIFEST_FIELDS, manifestFieldsUnder } from './manifest-fields.ts'
import { parseManifest } from './manifest.ts'

/** A valid sample value of a documented leaf field. */
const SAMPLES: Record<string, unknown> = {
  name: 'math-worker',
  description: 'adds numbers',
  'runtime.kind': 'typescript',
  'runtime.package_manager': 'pnpm',
  'runtime.entry': 'src/index.ts',
  'runtime.base_image': 'docker.io/library/node:24',
  'scripts.setup': 'true',
  'scripts.install': 'pnpm install',
  'scripts.build': 'pnpm run build',
  'scripts.start': 'node index.js',
  env: { LOG_LEVEL: 'info' },
  isolation: 'process',
  'resources.cpus': 2,
  'resources.memory_mib': 512,
  'watch.enabled': true,
  'watch.ignore': ['fixtures/**'],
}

describe('svc.worker.yaml field description (manifest-fields.ts)', () => {
  it('the parser accepts every documented field', () => {
    const doc: Record<string, unknown> = {}
    for (const field of MANIFEST_FIELDS) {
      if (manifestFieldsUnder(field.path).length > 0) continue // a block: its fields fill it
      assert.ok(field.path in SAMPLES, `no sample for ${field.path}: add one to this test`)
      const [head, leaf] = field.path.split('.')
      if (leaf === undefined) doc[head!] = SAMPLES[field.path]
      else doc[head!] = { ...(doc[head!] as object), [leaf]: SAMPLES[field.path] }
    }
    const manifest = parseManifest(stringify(doc), { directory: '/tmp/svc-manifest-fields' })
    assert.equal(manifest.name, 'math-worker')
    assert.deepEqual(manifest.resources, { cpus: 2, memory_mib: 512 })
    assert.equal(manifest.scripts.setup, 'true')
    assert.equal(manifest.scripts.build, 'pnpm run build')
  })

  it('the parser refuses an undocumented field and names the closest documented one', () => {
    assert.throws(() => parseManifest('name: a\nscirpts: {}\n', { directory: '/tmp' }), /unknown field 'scirpts' \(did you mean 'scripts'\?\)/)
    assert.throws(() => parseManifest('name: a\nruntime: { knid: rust }\n', { directory: '/tmp' }), /unknown field 'runtime.knid'/)
    for (const field of MANIFEST_FIELDS) assert.ok(field.description.length > 0, `${field.path} has no description`)
  })
})

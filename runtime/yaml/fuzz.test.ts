/**
 * Property-based fuzz test of the shared YAML reader and the readers built on it (issue 16):
 * random, alias-heavy, deep and oversized texts are either read within the limits or refused with
 * a YamlError at a place in the text; the config.yaml loader answers only with ConfigError; and a
 * settings file the configuration worker writes always reads back.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { ConfigError } from '../config/errors.ts'
import { parseConfig } from '../config/loader.ts'
import { formatSettingsFile, MAX_SETTINGS_FILE_BYTES, parseSettingsFile, UnstorableSettingsError } from '../workers/configuration/files.ts'
import { YamlError, YamlSource, type YamlLimits } from './index.ts'

/** Small limits, so that random texts reach them often. */
const LIMITS: YamlLimits = { maxBytes: 4096, maxDepth: 12, maxAliasNodes: 200 }

/** Pieces of YAML syntax, anchors and aliases among them. */
const fragment = fc.oneof(
  fc.constantFrom('a', 'b', 'key', '- ', '? ', ': ', ', ', '[', ']', '{', '}', '\n', '  ', '"', "'", '#', '---\n', '|\n', '>-\n', '!!str ', '!tag ', '\\', '%YAML 1.1\n', '<<: '),
  fc.constantFrom('&a ', '&b ', '&c ', '*a', '*b', '*c', '&a [*b, *c]', '&b [*a, *a]', '&c {x: *b}'),
  fc.string({ maxLength: 6 }),
)
const randomText = fc.array(fragment, { maxLength: 60 }).map((parts) => parts.join(''))

/** Anchors each made of aliases of the ones before: a random "laughs" document. */
const aliasHeavy = fc
  .array(fc.array(fc.nat(), { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 14 })
  .map((levels) => {
    const lines = ['l0: &l0 [x, y, z]']
    levels.forEach((refs, index) => {
      const level = index + 1
      lines.push(`l${level}: &l${level} [${refs.map((r) => `*l${r % level}`).join(', ')}]`)
    })
    return `${lines.join('\n')}\n`
  })

/** Nesting in flow and block style around the limit. */
const deep = fc.oneof(
  fc.integer({ min: 1, max: 40 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
  fc.integer({ min: 1, max: 40 }).map((n) => `${'- '.repeat(n)}x\n`),
  fc.integer({ min: 1, max: 40 }).map((n) => Array.from({ length: n }, (_, i) => `${' '.repeat(i)}k${i}:`).join('\n')),
  fc.integer({ min: 1, max: 40 }).map((n) => `${'{a: '.repeat(n)}1${'}'.repeat(n)}`),
)

/** Texts around the size limit. */
const oversized = fc.integer({ min: LIMITS.maxBytes - 64, max: LIMITS.maxBytes + 64 }).map((n) => `a: ${'x'.repeat(Math.max(0, n - 4))}\n`)

const hostileText = fc.oneof(randomText, aliasHeavy, deep, oversized, fc.tuple(aliasHeavy, deep).map(([a, d]) => `${a}z: ${d.replace(/\n/g, ' ')}\n`))

/** Expanded size of plain data: nodes, and nesting of arrays and objects. */
function measure(value: unknown, depth = 0): { nodes: number; depth: number } {
  if (typeof value !== 'object' || value === null) return { nodes: 1, depth }
  let nodes = 1
  let deepest = depth + 1
  for (const child of Object.values(value)) {
    const m = measure(child, depth + 1)
    nodes += m.nodes
    if (m.depth > deepest) deepest = m.depth
  }
  return { nodes, depth: deepest }
}

describe('YamlSource under random input', () => {
  it('reads a text within the limits or refuses it with a YamlError at a place in it', () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        let source: YamlSource
        try {
          source = new YamlSource(text, { file: 'f.yaml', limits: LIMITS })
        } catch (error) {
          assert.ok(error instanceof YamlError, `not a YamlError: ${String(error)}`)
          assert.ok(error.message.startsWith('f.yaml'))
          if (error.place) {
            assert.ok(error.place.line >= 1 && error.place.line <= text.split('\n').length + 1, error.message)
            assert.ok(error.place.column >= 1, error.message)
          } else {
            assert.ok(Buffer.byteLength(text) > LIMITS.maxBytes, error.message)
          }
          return
        }
        const value = source.toJS()
        const { nodes, depth } = measure(value)
        // Aliases add at most maxAliasNodes; the text itself holds at most one node per byte or so.
        assert.ok(nodes <= 2 * LIMITS.maxBytes + LIMITS.maxAliasNodes + 1, `${nodes} nodes`)
        assert.ok(depth <= LIMITS.maxDepth, `nests ${depth} levels`)
        assert.ok(JSON.stringify(value ?? null).length <= 20 * (LIMITS.maxBytes + LIMITS.maxAliasNodes))
      }),
      { numRuns: 1500 },
    )
  })

  it('parseConfig answers a config.yaml with a hostile worker config block only with ConfigError', () => {
    fc.assert(
      fc.property(hostileText, fc.constantFrom('svc-http', 'queue', 'my-worker'), (text, name) => {
        const block = text.split('\n').map((line) => `      ${line}`).join('\n')
        const local = name === 'my-worker' ? '    worker_path: ./w\n' : ''
        const config = `workers:\n  - name: ${name}\n${local}    config:\n${block}\n`
        try {
          parseConfig(config, 'config.yaml', { cwd: '/tmp', env: {} })
        } catch (error) {
          assert.ok(error instanceof ConfigError, `not a ConfigError: ${String(error)}`)
          assert.match(error.message, /^config\.yaml(:\d+:\d+)?: /)
        }
      }),
      { numRuns: 500 },
    )
  })
})

describe('settings files under random values', () => {
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 6 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    { weight: 1, arbitrary: fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'a: b', '- x', '*a', '&b', '#', ''), fc.jsonValue({ maxDepth: 2 })) },
    // Nesting around the limit of 128 levels.
    { weight: 1, arbitrary: fc.integer({ min: 120, max: 135 }).map((levels) => JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`) as unknown) },
    // Strings around the size limit (a file holds the value plus id, name and description).
    { weight: 1, arbitrary: fc.integer({ min: MAX_SETTINGS_FILE_BYTES - 200, max: MAX_SETTINGS_FILE_BYTES + 200 }).map((n) => 'x'.repeat(n)) },
  )

  it('reads back exactly what formatSettingsFile wrote, or the write is refused', () => {
    fc.assert(
      fc.property(value, (v) => {
        const file = { id: 'fuzz', name: 'Fuzz', description: 'random', value: v }
        let text: string
        try {
          text = formatSettingsFile(file)
        } catch (error) {
          assert.ok(error instanceof UnstorableSettingsError, String(error))
          return
        }
        // Compared as a client reads it back (JSON on the wire): YAML keeps -0, which JSON writes as 0.
        assert.deepEqual(JSON.parse(JSON.stringify(parseSettingsFile(text, 'fuzz', 'fuzz.yaml'))), JSON.parse(JSON.stringify(file)))
      }),
      { numRuns: 400 },
    )
  })
})

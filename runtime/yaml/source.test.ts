import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { billionLaughs } from '../../test/support/hostile-yaml.ts'
import { CONFIG_FILE_LIMITS, MAX_YAML_BYTES, readTextFile, readTextFileSync, YamlError, YamlSource } from './index.ts'

const dir = mkdtempSync(join(tmpdir(), 'svc-yaml-'))
after(() => rmSync(dir, { recursive: true, force: true }))

function refuses(text: string, message: string | RegExp, options: { uniqueKeys?: boolean } = {}): YamlError {
  let caught: unknown
  try {
    new YamlSource(text, { file: 'f.yaml', ...options })
  } catch (error) {
    caught = error
  }
  assert.ok(caught instanceof YamlError, `expected a YamlError, got ${String(caught)}`)
  if (typeof message === 'string') assert.equal(caught.message, message)
  else assert.match(caught.message, message)
  return caught
}

describe('YamlSource (the shared YAML reader)', () => {
  it('refuses a billion-laughs document at the alias that crosses the limit, naming file, line and column', () => {
    const error = refuses(billionLaughs(), /^f\.yaml:5:14: alias \*lol4 expands the document too much \(aliases may add at most 10000 nodes and 1048576 bytes\)/)
    assert.deepEqual(error.place, { line: 5, column: 14 })
  })

  it('counts the text aliases add: an alias of a long string is as costly as the string', () => {
    const text = `big: &big "${'x'.repeat(200_000)}"\ncopies: [${Array(6).fill('*big').join(', ')}]\n`
    refuses(text, /^f\.yaml:2:\d+: alias \*big expands the document too much/)
    // Five copies add 1,000,000 bytes: within the limit.
    const fine = new YamlSource(`big: &big "${'x'.repeat(200_000)}"\ncopies: [${Array(5).fill('*big').join(', ')}]\n`, { file: 'f.yaml' })
    assert.equal((fine.toJS() as { copies: string[] }).copies.length, 5)
  })

  it('accepts ordinary reuse and expands it into copies', () => {
    const source = new YamlSource('base: &base { retries: 3, tags: [a, b] }\nqueues:\n  one: *base\n  two: *base\n', { file: 'f.yaml' })
    const value = source.toJS() as { queues: { one: { tags: string[] }; two: { tags: string[] } } }
    assert.deepEqual(value.queues.one, { retries: 3, tags: ['a', 'b'] })
    assert.notEqual(value.queues.one, value.queues.two, 'copies, not shared objects')
  })

  it('refuses an alias inside the node it names, and an alias to no anchor', () => {
    refuses('a: &a [1, *a]\n', 'f.yaml:1:11: alias *a refers to a node that contains it')
    refuses('a: [1, *nowhere]\n', 'f.yaml:1:8: unknown alias *nowhere')
  })

  it('refuses deep nesting before the recursive composer sees it, in flow and block style', () => {
    refuses(`a: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`, /^f\.yaml:1:\d+: nests deeper than 128 levels$/)
    refuses(`${'- '.repeat(50_000)}x\n`, /^f\.yaml:1:\d+: nests deeper than 128 levels$/)
    let block = ''
    for (let level = 0; level < 300; level++) block += `${' '.repeat(level)}k:\n`
    refuses(block, /^f\.yaml:\d+:\d+: nests deeper than 128 levels$/)
  })

  it('holds the nesting of the tree to the limit exactly, aliases expanded', () => {
    const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`
    assert.ok(new YamlSource(nested(128), { file: 'f.yaml' }))
    refuses(nested(129), /^f\.yaml:1:129: nests deeper than 128 levels$/)
    // 100 levels, then an alias of 100 more.
    refuses(`a: &deep ${nested(100)}\nb: ${'['.repeat(30)}*deep${']'.repeat(30)}\n`, /^f\.yaml:2:\d+: nests deeper than 128 levels once \*deep is expanded$/)
  })

  it('refuses a text over the size limit without parsing it', () => {
    const text = `a: "${'x'.repeat(MAX_YAML_BYTES)}"\n`
    refuses(text, `f.yaml: is ${Buffer.byteLength(text)} bytes, more than the ${MAX_YAML_BYTES}-byte limit`)
    assert.equal(CONFIG_FILE_LIMITS.maxBytes, MAX_YAML_BYTES)
  })

  it('finds duplicate keys at the second one, or leaves them to the reader', () => {
    refuses('a: 1\nb: 2\na: 3\n', 'f.yaml:3:1: invalid YAML: Map keys must be unique')
    const keys = Array.from({ length: 30_000 }, (_, i) => `k${i}: ${i}`).join('\n')
    assert.equal(Object.keys(new YamlSource(keys, { file: 'f.yaml' }).toJS() as object).length, 30_000)
    assert.ok(new YamlSource('a: 1\na: 2\n', { file: 'f.yaml', uniqueKeys: false }))
  })

  it('reports syntax errors and a second document with their place', () => {
    refuses('a: [1, 2\n', /^f\.yaml:2:1: invalid YAML: /)
    refuses('a: 1\n---\nb: 2\n', /^f\.yaml:2:1: invalid YAML: the file holds more than one document/)
  })

  it('gives plain data for YAML 1.1 merge keys and ordered maps, as the library would', () => {
    const merged = new YamlSource('%YAML 1.1\n---\nbase: &base { a: 1, c: 3 }\nq: { b: 0, <<: [*base], c: 2 }\n', { file: 'f.yaml' }).toJS()
    assert.deepEqual(merged, { base: { a: 1, c: 3 }, q: { b: 0, a: 1, c: 2 } })
    assert.deepEqual(new YamlSource('%YAML 1.1\n---\n!!omap [a: 1, b: 2]\n', { file: 'f.yaml' }).toJS(), [{ a: 1 }, { b: 2 }])
  })

  it('gives plain data: __proto__ is an own key, not a prototype', () => {
    const value = new YamlSource('__proto__: { polluted: true }\n', { file: 'f.yaml' }).toJS() as Record<string, unknown>
    assert.ok(Object.hasOwn(value, '__proto__'))
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
    assert.equal(Object.getPrototypeOf(value), Object.prototype)
  })
})

describe('readTextFile', () => {
  it('refuses a file over the limit, by its size, before reading it', async () => {
    const path = join(dir, 'big.yaml')
    writeFileSync(path, 'x'.repeat(2000))
    assert.throws(() => readTextFileSync(path, { file: 'big.yaml', maxBytes: 1000 }), { message: 'big.yaml: is 2000 bytes, more than the 1000-byte limit' })
    await assert.rejects(readTextFile(path, { file: 'big.yaml', maxBytes: 1000 }), { message: 'big.yaml: is 2000 bytes, more than the 1000-byte limit' })
    assert.equal(readTextFileSync(path, { file: 'big.yaml', maxBytes: 2000 }).length, 2000)
  })

  it('refuses bytes that are not UTF-8 when asked to', async () => {
    const path = join(dir, 'latin1.yaml')
    writeFileSync(path, Buffer.from([0x61, 0x3a, 0x20, 0xe9, 0x0a]))
    await assert.rejects(readTextFile(path, { file: 'latin1.yaml', maxBytes: 100, strictUtf8: true }), { message: 'latin1.yaml: is not valid UTF-8' })
    assert.equal(readTextFileSync(path, { file: 'latin1.yaml', maxBytes: 100 }), 'a: \ufffd\n')
  })
})

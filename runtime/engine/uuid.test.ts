import assert from 'node:assert/strict'
import { test } from 'node:test'
import { uuid4 } from './uuid.ts'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('uuid4 draws lower-case v4 UUIDs, none repeated, across several draws of random bytes', () => {
  const seen = new Set<string>()
  for (let i = 0; i < 5000; i++) {
    const id = uuid4()
    assert.match(id, UUID_V4)
    assert.ok(!seen.has(id), `repeated ${id}`)
    seen.add(id)
  }
})

test('an id returned earlier is not changed by the next ones (each is its own string)', () => {
  const first = uuid4()
  const copy = `${first}`.split('').join('')
  for (let i = 0; i < 300; i++) uuid4()
  assert.equal(first, copy)
})

test('the random bits vary in every hex digit that is not fixed by the version and variant', () => {
  const digits = Array.from({ length: 36 }, () => new Set<string>())
  for (let i = 0; i < 2000; i++) {
    const id = uuid4()
    for (let c = 0; c < 36; c++) digits[c]!.add(id[c]!)
  }
  for (let c = 0; c < 36; c++) {
    const expected = [8, 13, 18, 23].includes(c) ? 1 : c === 14 ? 1 : c === 19 ? 4 : 16
    assert.equal(digits[c]!.size, expected, `digit ${c}`)
  }
})

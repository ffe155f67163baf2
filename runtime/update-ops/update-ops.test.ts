import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { applyUpdateOps } from './update-ops.ts'
import type { UpdateOp } from './types.ts'
import { UPDATE_OPS_VECTORS } from './vectors.ts'

/** Applies ops that must all succeed and returns the value. */
function ok(current: unknown, ops: unknown[]): unknown {
  const { value, errors } = applyUpdateOps(current, ops)
  assert.deepEqual(errors, [])
  return value
}

/** Applies ops and returns the codes of the recorded errors with their indexes. */
function codes(current: unknown, ops: unknown[]): Array<[number, string]> {
  return applyUpdateOps(current, ops).errors.map((e) => [e.op_index, e.code])
}

function rejects(ops: unknown, message: string): void {
  assert.throws(() => applyUpdateOps({}, ops), { code: 'INVALID_ARGUMENTS', message })
}

describe('update ops: whole-call validation (§5.3)', () => {
  it('refuses ops that are not an array', () => {
    rejects({ type: 'set', value: 1 }, 'ops must be an array')
    rejects(undefined, 'ops must be an array')
    rejects('set', 'ops must be an array')
  })

  it('refuses an element that is not an object', () => {
    rejects([{ type: 'set', value: 1 }, 7], 'ops[1] must be an object')
    rejects([null], 'ops[0] must be an object')
  })

  it('refuses an element without a type', () => {
    rejects([{ path: 'a' }], 'ops[0].type is required')
  })

  it('refuses an element with an unknown type', () => {
    rejects([{ type: 'multiply', path: 'a' }], 'ops[0].type must be one of set, merge, increment, decrement, append, remove')
    rejects([{ type: 'SET', value: 1 }], 'ops[0].type must be one of set, merge, increment, decrement, append, remove')
  })

  it('refuses a path that is neither a string nor an array of strings', () => {
    rejects([{ type: 'remove', path: 3 }], 'ops[0].path must be a string or an array of strings')
    rejects([{ type: 'remove', path: ['a', 1] }], 'ops[0].path must be a string or an array of strings')
  })

  it('refuses set, merge and append without a value', () => {
    rejects([{ type: 'set', path: 'a' }], 'ops[0].value is required')
    rejects([{ type: 'merge' }], 'ops[0].value is required')
    rejects([{ type: 'remove' }, { type: 'append', path: 'a' }], 'ops[1].value is required')
  })

  it('applies nothing when any element is malformed, even after valid ones', () => {
    const current = { n: 1 }
    assert.throws(() => applyUpdateOps(current, [{ type: 'increment', path: 'n' }, { type: 'nope' }]))
    assert.deepEqual(current, { n: 1 })
  })

  it('accepts an empty array', () => {
    assert.deepEqual(applyUpdateOps({ a: 1 }, []), { value: { a: 1 }, errors: [] })
  })
})

describe('update ops: paths (§5.1)', () => {
  it('treats an omitted, null, empty-string or empty-array path as the root', () => {
    for (const path of [undefined, null, '', []]) {
      assert.equal(ok({ a: 1 }, [{ type: 'set', path, value: 5 }]), 5)
    }
  })

  it('treats a string path as one first-level field, dots included', () => {
    assert.deepEqual(ok({ a: { b: 1 } }, [{ type: 'set', path: 'a.b', value: 2 }]), { a: { b: 1 }, 'a.b': 2 })
  })

  it('treats an array path as nested literal segments', () => {
    assert.deepEqual(ok({ a: { b: 1, c: 3 } }, [{ type: 'set', path: ['a', 'b'], value: 2 }]), { a: { b: 2, c: 3 } })
    assert.deepEqual(ok({}, [{ type: 'set', path: ['x.y', 'z'], value: 1 }]), { 'x.y': { z: 1 } })
  })

  it('allows 32 segments and refuses 33 with <op>.path.too_deep', () => {
    const deep = Array.from({ length: 32 }, (_, i) => `s${i}`)
    const value = ok({}, [{ type: 'set', path: deep, value: 1 }]) as Record<string, unknown>
    assert.ok('s0' in value)
    assert.deepEqual(codes({}, [{ type: 'set', path: [...deep, 'x'], value: 1 }]), [[0, 'set.path.too_deep']])
    assert.deepEqual(codes({}, [{ type: 'remove', path: [...deep, 'x'] }]), [[0, 'remove.path.too_deep']])
  })

  it('refuses an empty segment with <op>.path.empty_segment', () => {
    assert.deepEqual(codes({}, [{ type: 'set', path: ['a', ''], value: 1 }]), [[0, 'set.path.empty_segment']])
    assert.deepEqual(codes({}, [{ type: 'increment', path: [''] }]), [[0, 'increment.path.empty_segment']])
  })

  it('allows a segment of 256 UTF-8 bytes and refuses 257 with <op>.path.segment_too_long', () => {
    assert.deepEqual(codes({}, [{ type: 'set', path: 'a'.repeat(256), value: 1 }]), [])
    assert.deepEqual(codes({}, [{ type: 'set', path: 'a'.repeat(257), value: 1 }]), [[0, 'set.path.segment_too_long']])
    // 86 × 'é' (2 bytes each) = 172 bytes, fine; 129 × 'é' = 258 bytes although only 129 characters.
    assert.deepEqual(codes({}, [{ type: 'merge', path: ['é'.repeat(86)], value: {} }]), [])
    assert.deepEqual(codes({}, [{ type: 'merge', path: ['é'.repeat(129)], value: {} }]), [
      [0, 'merge.path.segment_too_long'],
    ])
  })

  it('refuses __proto__, constructor and prototype segments with <op>.path.proto_polluted', () => {
    for (const segment of ['__proto__', 'constructor', 'prototype']) {
      assert.deepEqual(codes({}, [{ type: 'set', path: segment, value: 1 }]), [[0, 'set.path.proto_polluted']])
      assert.deepEqual(codes({}, [{ type: 'append', path: ['a', segment], value: 1 }]), [
        [0, 'append.path.proto_polluted'],
      ])
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  it('prefixes path codes with the op type for every op', () => {
    const ops = ['set', 'merge', 'increment', 'decrement', 'append', 'remove'].map((type) => ({
      type,
      path: ['a', ''],
      value: {},
    }))
    assert.deepEqual(
      codes({}, ops).map(([, code]) => code),
      ops.map((op) => `${op.type}.path.empty_segment`),
    )
  })

  it('treats inherited names such as toString as ordinary missing fields', () => {
    assert.deepEqual(ok({}, [{ type: 'increment', path: 'toString' }]), { toString: 1 })
    assert.deepEqual(ok({}, [{ type: 'append', path: ['hasOwnProperty', 'x'], value: 1 }]), {
      hasOwnProperty: { x: [1] },
    })
  })
})

describe('update ops: intermediate containers (§5.1)', () => {
  it('creates a missing or null intermediate as {}', () => {
    assert.deepEqual(ok({}, [{ type: 'set', path: ['a', 'b', 'c'], value: 1 }]), { a: { b: { c: 1 } } })
    assert.deepEqual(ok({ a: null }, [{ type: 'increment', path: ['a', 'n'] }]), { a: { n: 1 } })
  })

  it('replaces a non-object intermediate by {} for merge and append', () => {
    assert.deepEqual(ok({ a: 5 }, [{ type: 'merge', path: ['a', 'b'], value: { x: 1 } }]), { a: { b: { x: 1 } } })
    assert.deepEqual(ok({ a: [1] }, [{ type: 'append', path: ['a', 'b'], value: 'x' }]), { a: { b: ['x'] } })
  })

  it('fails set, increment and decrement on a non-object intermediate with <op>.target_not_object', () => {
    const current = { a: { b: 'text' }, keep: 1 }
    assert.deepEqual(
      codes(current, [
        { type: 'set', path: ['a', 'b', 'c'], value: 1 },
        { type: 'increment', path: ['a', 'b', 'c'] },
        { type: 'decrement', path: ['a', 'b', 'c'] },
      ]),
      [
        [0, 'set.target_not_object'],
        [1, 'increment.target_not_object'],
        [2, 'decrement.target_not_object'],
      ],
    )
  })

  it('leaves no half-created containers behind when an op fails', () => {
    const { value } = applyUpdateOps({ a: { b: 'text' } }, [{ type: 'set', path: ['a', 'b', 'c', 'd'], value: 1 }])
    assert.deepEqual(value, { a: { b: 'text' } })
    const second = applyUpdateOps({}, [{ type: 'increment', path: ['x', 'y'], by: 'two' }])
    assert.deepEqual(second.value, {})
  })

  it('makes remove do nothing when an intermediate is missing or not an object', () => {
    assert.deepEqual(ok({ a: 1 }, [{ type: 'remove', path: ['missing', 'x'] }]), { a: 1 })
    assert.deepEqual(ok({ a: 'text' }, [{ type: 'remove', path: ['a', 'x'] }]), { a: 'text' })
    assert.deepEqual(ok({ a: null }, [{ type: 'remove', path: ['a', 'x'] }]), { a: null })
  })

  it('reports a non-object root for one-segment paths as <op>.target_not_object', () => {
    assert.deepEqual(
      codes([1, 2], [
        { type: 'set', path: 'a', value: 1 },
        { type: 'merge', path: 'a', value: {} },
        { type: 'increment', path: 'a' },
        { type: 'decrement', path: 'a' },
        { type: 'append', path: 'a', value: 1 },
        { type: 'remove', path: 'a' },
      ]),
      [
        [0, 'set.target_not_object'],
        [1, 'merge.target_not_object'],
        [2, 'increment.target_not_object'],
        [3, 'decrement.target_not_object'],
        [4, 'append.target_not_object'],
        [5, 'remove.target_not_object'],
      ],
    )
  })

  it('treats a null root as an empty object for field writes', () => {
    assert.deepEqual(ok(null, [{ type: 'set', path: 'a', value: 1 }]), { a: 1 })
    assert.deepEqual(ok(null, [{ type: 'merge', path: 'a', value: { b: 1 } }]), { a: { b: 1 } })
  })
})

describe('update ops: set (§5.2)', () => {
  it('replaces the root, null included', () => {
    assert.deepEqual(ok({ a: 1 }, [{ type: 'set', value: [1, 2] }]), [1, 2])
    assert.equal(ok({ a: 1 }, [{ type: 'set', value: null }]), null)
  })

  it('sets a field and keeps its siblings', () => {
    assert.deepEqual(ok({ a: 1, b: 2 }, [{ type: 'set', path: 'a', value: null }]), { a: null, b: 2 })
  })
})

describe('update ops: merge (§5.2)', () => {
  it('shallow-merges into the root object', () => {
    assert.deepEqual(ok({ a: 1, n: { x: 1 } }, [{ type: 'merge', value: { b: 2, n: { y: 2 } } }]), {
      a: 1,
      b: 2,
      n: { y: 2 },
    })
  })

  it('shallow-merges into the object at a path', () => {
    assert.deepEqual(ok({ u: { a: 1 } }, [{ type: 'merge', path: 'u', value: { b: 2 } }]), { u: { a: 1, b: 2 } })
  })

  it('turns a missing or null target into a copy of the value', () => {
    const patch = { b: 2 }
    const fromNull = ok(null, [{ type: 'merge', value: patch }])
    assert.deepEqual(fromNull, { b: 2 })
    assert.notEqual(fromNull, patch)
    assert.deepEqual(ok(undefined, [{ type: 'merge', value: patch }]), { b: 2 })
    assert.deepEqual(ok({ u: null }, [{ type: 'merge', path: 'u', value: patch }]), { u: { b: 2 } })
  })

  it('replaces a non-object field target by a copy of the value', () => {
    assert.deepEqual(ok({ u: 'text' }, [{ type: 'merge', path: 'u', value: { b: 2 } }]), { u: { b: 2 } })
  })

  it('fails on a non-object root with merge.target_not_object', () => {
    for (const root of [1, 'text', true, [1]]) {
      assert.deepEqual(codes(root, [{ type: 'merge', value: { a: 1 } }]), [[0, 'merge.target_not_object']])
    }
  })

  it('refuses a value that is not an object with merge.value.not_an_object', () => {
    for (const value of [1, 'x', null, [1], true]) {
      assert.deepEqual(codes({}, [{ type: 'merge', value }]), [[0, 'merge.value.not_an_object']])
    }
  })

  it('allows 1024 top-level keys and refuses 1025 with merge.value.too_many_keys', () => {
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
    assert.deepEqual(codes({}, [{ type: 'merge', value: keys(1024) }]), [])
    assert.deepEqual(codes({}, [{ type: 'merge', value: keys(1025) }]), [[0, 'merge.value.too_many_keys']])
  })

  it('refuses __proto__, constructor and prototype keys with merge.value.proto_polluted', () => {
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      const value = JSON.parse(`{"ok": 1, "${key}": {"polluted": true}}`) as Record<string, unknown>
      const { value: result, errors } = applyUpdateOps({}, [{ type: 'merge', value }])
      assert.deepEqual(
        errors.map((e) => e.code),
        ['merge.value.proto_polluted'],
      )
      assert.deepEqual(result, {})
    }
    assert.equal(({} as Record<string, unknown>).polluted, undefined)
  })

  it('allows nesting of 16 and refuses 17 with merge.value.too_deep', () => {
    const nest = (levels: number): unknown => (levels === 1 ? {} : { n: nest(levels - 1) })
    assert.deepEqual(codes({}, [{ type: 'merge', value: nest(16) }]), [])
    assert.deepEqual(codes({}, [{ type: 'merge', value: nest(17) }]), [[0, 'merge.value.too_deep']])
    // Arrays count as nesting too.
    const arrays = { a: JSON.parse('[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]') as unknown }
    assert.deepEqual(codes({}, [{ type: 'merge', value: arrays }]), [[0, 'merge.value.too_deep']])
  })
})

describe('update ops: increment and decrement (§5.2)', () => {
  it('adds by, default 1', () => {
    assert.deepEqual(ok({ n: 1 }, [{ type: 'increment', path: 'n' }]), { n: 2 })
    assert.deepEqual(ok({ n: 1 }, [{ type: 'increment', path: 'n', by: 2.5 }]), { n: 3.5 })
    assert.deepEqual(ok({ n: 1 }, [{ type: 'increment', path: 'n', by: null }]), { n: 2 })
  })

  it('subtracts by, default 1', () => {
    assert.deepEqual(ok({ n: 1 }, [{ type: 'decrement', path: 'n' }]), { n: 0 })
    assert.deepEqual(ok({ n: 1 }, [{ type: 'decrement', path: 'n', by: -4 }]), { n: 5 })
  })

  it('turns a missing target into by (increment) or -by (decrement)', () => {
    assert.deepEqual(ok({}, [{ type: 'increment', path: 'n', by: 3 }]), { n: 3 })
    assert.deepEqual(ok({}, [{ type: 'decrement', path: 'n', by: 3 }]), { n: -3 })
  })

  it('works on the root, a missing or null root becoming by', () => {
    assert.equal(ok(5, [{ type: 'increment' }]), 6)
    assert.equal(ok(undefined, [{ type: 'increment', by: 2 }]), 2)
    assert.equal(ok(null, [{ type: 'decrement', by: 2 }]), -2)
  })

  it('refuses a target that is not a number with <op>.not_number', () => {
    assert.deepEqual(
      codes({ s: 'x', o: {}, z: null, b: true }, [
        { type: 'increment', path: 's' },
        { type: 'decrement', path: 'o' },
        { type: 'increment', path: 'z' },
        { type: 'decrement', path: 'b' },
        { type: 'increment' },
      ]),
      [
        [0, 'increment.not_number'],
        [1, 'decrement.not_number'],
        [2, 'increment.not_number'],
        [3, 'decrement.not_number'],
        [4, 'increment.not_number'],
      ],
    )
  })

  it('refuses a by that is not a finite number with <op>.invalid_by', () => {
    for (const by of ['1', Number.NaN, Number.POSITIVE_INFINITY, {}, true]) {
      assert.deepEqual(codes({ n: 1 }, [{ type: 'increment', path: 'n', by }]), [[0, 'increment.invalid_by']])
      assert.deepEqual(codes({ n: 1 }, [{ type: 'decrement', path: 'n', by }]), [[0, 'decrement.invalid_by']])
    }
  })

  it('matches the message of builtins.md §5.3', () => {
    const { errors } = applyUpdateOps({ name: 'Al' }, [{ type: 'increment', path: 'name' }])
    assert.deepEqual(errors, [
      { op_index: 0, code: 'increment.not_number', message: "increment at path 'name' expects a number, found string" },
    ])
  })
})

describe('update ops: append (§5.2)', () => {
  it('pushes onto an array target', () => {
    assert.deepEqual(ok({ t: ['a'] }, [{ type: 'append', path: 't', value: { b: 1 } }]), { t: ['a', { b: 1 }] })
    assert.deepEqual(ok(['a'], [{ type: 'append', value: ['b'] }]), ['a', ['b']])
  })

  it('concatenates a string value to a string target', () => {
    assert.deepEqual(ok({ s: 'hello' }, [{ type: 'append', path: 's', value: ' world' }]), { s: 'hello world' })
    assert.equal(ok('ab', [{ type: 'append', value: 'c' }]), 'abc')
  })

  it('turns a missing or null target into the string when the path has at most one segment', () => {
    assert.equal(ok(undefined, [{ type: 'append', value: 'x' }]), 'x')
    assert.equal(ok(null, [{ type: 'append', value: 'x' }]), 'x')
    assert.deepEqual(ok({}, [{ type: 'append', path: 's', value: 'x' }]), { s: 'x' })
    assert.deepEqual(ok({ s: null }, [{ type: 'append', path: 's', value: 'x' }]), { s: 'x' })
  })

  it('turns a missing or null target into [value] otherwise', () => {
    assert.deepEqual(ok(undefined, [{ type: 'append', value: 1 }]), [1])
    assert.deepEqual(ok({}, [{ type: 'append', path: 't', value: { a: 1 } }]), { t: [{ a: 1 }] })
    assert.deepEqual(ok({}, [{ type: 'append', path: ['a', 's'], value: 'x' }]), { a: { s: ['x'] } })
  })

  it('refuses an object, number or boolean target with append.type_mismatch', () => {
    assert.deepEqual(
      codes({ o: {}, n: 1, b: false }, [
        { type: 'append', path: 'o', value: 1 },
        { type: 'append', path: 'n', value: 1 },
        { type: 'append', path: 'b', value: 1 },
        { type: 'append', value: 1 },
      ]),
      [
        [0, 'append.type_mismatch'],
        [1, 'append.type_mismatch'],
        [2, 'append.type_mismatch'],
        [3, 'append.type_mismatch'],
      ],
    )
  })

  it('refuses a non-string value on a string target with append.type_mismatch', () => {
    assert.deepEqual(codes({ s: 'a' }, [{ type: 'append', path: 's', value: 1 }]), [[0, 'append.type_mismatch']])
  })
})

describe('update ops: remove (§5.2)', () => {
  it('sets the root to null', () => {
    assert.equal(ok({ a: 1 }, [{ type: 'remove' }]), null)
    assert.equal(ok(undefined, [{ type: 'remove' }]), null)
  })

  it('deletes a field, nested included', () => {
    assert.deepEqual(ok({ a: 1, b: 2 }, [{ type: 'remove', path: 'a' }]), { b: 2 })
    assert.deepEqual(ok({ a: { x: 1, y: 2 } }, [{ type: 'remove', path: ['a', 'x'] }]), { a: { y: 2 } })
  })

  it('does not fail on a missing field', () => {
    assert.deepEqual(ok({ a: 1 }, [{ type: 'remove', path: 'b' }]), { a: 1 })
  })

  it('refuses a non-object root with remove.target_not_object', () => {
    assert.deepEqual(codes('text', [{ type: 'remove', path: 'a' }]), [[0, 'remove.target_not_object']])
  })
})

describe('update ops: sequencing and results (§5, §5.3)', () => {
  it('skips a failing op, records it with its index, and still runs later ops', () => {
    const { value, errors } = applyUpdateOps({ count: 1, name: 'Al' }, [
      { type: 'increment', path: 'count' },
      { type: 'append', path: 'tags', value: 'a' },
      { type: 'increment', path: 'name' },
      { type: 'set', path: 'done', value: true },
    ])
    assert.deepEqual(value, { count: 2, name: 'Al', tags: 'a', done: true })
    assert.deepEqual(
      errors.map((e) => [e.op_index, e.code]),
      [[2, 'increment.not_number']],
    )
  })

  it('lets later ops see the effect of earlier ones', () => {
    assert.deepEqual(
      ok(undefined, [
        { type: 'set', path: 'list', value: [] },
        { type: 'append', path: 'list', value: 1 },
        { type: 'append', path: 'list', value: 2 },
        { type: 'increment', path: ['stats', 'n'] },
        { type: 'increment', path: ['stats', 'n'] },
      ]),
      { list: [1, 2], stats: { n: 2 } },
    )
  })

  it('starts an absent key as missing and stores {} when it is still missing', () => {
    assert.deepEqual(applyUpdateOps(undefined, []), { value: {}, errors: [] })
    const failed = applyUpdateOps(undefined, [{ type: 'increment', by: 'x' }])
    assert.deepEqual(failed.value, {})
    assert.equal(failed.errors.length, 1)
  })

  it('turns an absent root into {} for a field op', () => {
    assert.deepEqual(ok(undefined, [{ type: 'remove', path: 'a' }]), {})
    assert.deepEqual(ok(undefined, [{ type: 'set', path: 'a', value: 1 }]), { a: 1 })
  })

  it('names the path in messages: root, a quoted string path, [a, b] for segments', () => {
    const { errors } = applyUpdateOps({ o: { p: 'x' } }, [
      { type: 'increment', by: 'x' },
      { type: 'increment', path: 'o' },
      { type: 'increment', path: ['o', 'p'] },
      { type: 'set', path: ['o', 'p', 'q'], value: 1 },
    ])
    assert.deepEqual(
      errors.map((e) => e.message),
      [
        'increment at path root expects by to be a finite number, found string',
        "increment at path 'o' expects a number, found object",
        'increment at path [o, p] expects a number, found string',
        'set at path [o, p, q] expects [o, p] to be an object, found string',
      ],
    )
  })

  it('omits doc_url and carries exactly op_index, code and message', () => {
    const { errors } = applyUpdateOps({}, [{ type: 'merge', value: 1 }])
    assert.deepEqual(Object.keys(errors[0]!).sort(), ['code', 'message', 'op_index'])
  })

  it('never mutates the current value or the ops', () => {
    const current = { a: { list: [1], n: 1 }, b: { keep: true } }
    const value = { x: { deep: 1 } }
    const ops: UpdateOp[] = [
      { type: 'append', path: ['a', 'list'], value: 2 },
      { type: 'increment', path: ['a', 'n'] },
      { type: 'merge', path: 'b', value },
      { type: 'set', path: ['b', 'x', 'deep'], value: 2 },
      { type: 'remove', path: ['a', 'n'] },
    ]
    const before = JSON.stringify({ current, ops })
    const { value: result } = applyUpdateOps(current, ops)
    assert.equal(JSON.stringify({ current, ops }), before)
    assert.deepEqual(result, { a: { list: [1, 2] }, b: { keep: true, x: { deep: 2 } } })
  })
})

describe('update ops: shared vectors (vectors.ts)', () => {
  for (const vector of UPDATE_OPS_VECTORS) {
    it(vector.name, () => {
      const { value, errors } = applyUpdateOps(vector.current, vector.ops)
      assert.deepEqual(value, vector.value)
      assert.deepEqual(
        errors.map((e) => [e.op_index, e.code]),
        vector.errors,
      )
    })
  }
})

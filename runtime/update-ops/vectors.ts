/**
 * Test vectors of builtins.md §5: inputs with the value and error codes every implementation of the
 * update operations must produce. `update-ops.test.ts` holds `applyUpdateOps` to them and the
 * redis state adapter's tests hold its Lua implementation to them, so both provably agree.
 * Values are JSON (plus `undefined` for an absent key); messages are compared between
 * implementations rather than listed here (update-ops.test.ts checks their wording).
 */

export interface UpdateOpsVector {
  name: string
  /** The stored value; `undefined` for an absent key. */
  current: unknown
  ops: unknown[]
  /** The value to store. */
  value: unknown
  /** `[op_index, code]` of each skipped operation, in order. */
  errors: Array<[number, string]>
}

const deep = Array.from({ length: 32 }, (_, i) => `s${i}`)
const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]))
const nest = (levels: number): unknown => (levels === 1 ? {} : { n: nest(levels - 1) })
const v = (
  name: string,
  current: unknown,
  ops: unknown[],
  value: unknown,
  errors: Array<[number, string]> = [],
): UpdateOpsVector => ({ name, current, ops, value, errors })

export const UPDATE_OPS_VECTORS: UpdateOpsVector[] = [
  // Paths (§5.1)
  v('empty ops keep the value', { a: 1 }, [], { a: 1 }),
  v('absent path is the root', { a: 1 }, [{ type: 'set', value: 5 }], 5),
  v('null path is the root', { a: 1 }, [{ type: 'set', path: null, value: 5 }], 5),
  v('empty-string path is the root', { a: 1 }, [{ type: 'set', path: '', value: 5 }], 5),
  v('empty-array path is the root', { a: 1 }, [{ type: 'set', path: [], value: 5 }], 5),
  v('a string path is one field, dots included', { a: { b: 1 } }, [{ type: 'set', path: 'a.b', value: 2 }], { a: { b: 1 }, 'a.b': 2 }),
  v('an array path nests', { a: { b: 1, c: 3 } }, [{ type: 'set', path: ['a', 'b'], value: 2 }], { a: { b: 2, c: 3 } }),
  v('array segments are literal', {}, [{ type: 'set', path: ['x.y', 'z'], value: 1 }], { 'x.y': { z: 1 } }),
  v('32 segments are allowed', {}, [{ type: 'set', path: deep, value: 1 }], deep.reduceRight<unknown>((inner, key) => ({ [key]: inner }), 1)),
  v('33 segments are too deep', {}, [{ type: 'set', path: [...deep, 'x'], value: 1 }, { type: 'remove', path: [...deep, 'x'] }], {}, [
    [0, 'set.path.too_deep'],
    [1, 'remove.path.too_deep'],
  ]),
  v('empty segments', {}, ['set', 'merge', 'increment', 'decrement', 'append', 'remove'].map((type) => ({ type, path: ['a', ''], value: {} })), {}, [
    [0, 'set.path.empty_segment'],
    [1, 'merge.path.empty_segment'],
    [2, 'increment.path.empty_segment'],
    [3, 'decrement.path.empty_segment'],
    [4, 'append.path.empty_segment'],
    [5, 'remove.path.empty_segment'],
  ]),
  v('a 256-byte segment is allowed', {}, [{ type: 'set', path: 'a'.repeat(256), value: 1 }], { ['a'.repeat(256)]: 1 }),
  v('a 257-byte segment is too long', {}, [{ type: 'set', path: 'a'.repeat(257), value: 1 }], {}, [[0, 'set.path.segment_too_long']]),
  v('segment bytes count UTF-8', {}, [
    { type: 'merge', path: ['é'.repeat(86)], value: {} },
    { type: 'merge', path: ['é'.repeat(129)], value: {} },
    { type: 'set', path: ['😀'.repeat(64)], value: 1 },
    { type: 'set', path: ['😀'.repeat(65)], value: 1 },
    { type: 'set', path: ['\uD800'.repeat(86)], value: 1 },
  ], { ['é'.repeat(86)]: {}, ['😀'.repeat(64)]: 1 }, [
    [1, 'merge.path.segment_too_long'],
    [3, 'set.path.segment_too_long'],
    [4, 'set.path.segment_too_long'],
  ]),
  v('prototype segments are refused', {}, [
    { type: 'set', path: '__proto__', value: 1 },
    { type: 'append', path: ['a', 'constructor'], value: 1 },
    { type: 'increment', path: ['prototype'] },
  ], {}, [
    [0, 'set.path.proto_polluted'],
    [1, 'append.path.proto_polluted'],
    [2, 'increment.path.proto_polluted'],
  ]),
  v('inherited names are ordinary fields', {}, [
    { type: 'increment', path: 'toString' },
    { type: 'append', path: ['hasOwnProperty', 'x'], value: 1 },
  ], { toString: 1, hasOwnProperty: { x: [1] } }),
  v('segments with quotes, backslashes and control characters', { 'a"b': { 'c\\d': 1 } }, [
    { type: 'increment', path: ['a"b', 'c\\d'] },
    { type: 'set', path: 'new\nline\u0001', value: '\u0000' },
  ], { 'a"b': { 'c\\d': 2 }, 'new\nline\u0001': '\u0000' }),

  // Intermediate containers (§5.1)
  v('missing intermediates are created', {}, [{ type: 'set', path: ['a', 'b', 'c'], value: 1 }], { a: { b: { c: 1 } } }),
  v('null intermediates are created', { a: null }, [{ type: 'increment', path: ['a', 'n'] }], { a: { n: 1 } }),
  v('merge replaces a non-object intermediate', { a: 5 }, [{ type: 'merge', path: ['a', 'b'], value: { x: 1 } }], { a: { b: { x: 1 } } }),
  v('append replaces a non-object intermediate', { a: [1] }, [{ type: 'append', path: ['a', 'b'], value: 'x' }], { a: { b: ['x'] } }),
  v('set, increment, decrement fail on a non-object intermediate', { a: { b: 'text' }, keep: 1 }, [
    { type: 'set', path: ['a', 'b', 'c'], value: 1 },
    { type: 'increment', path: ['a', 'b', 'c'] },
    { type: 'decrement', path: ['a', 'b', 'c'] },
  ], { a: { b: 'text' }, keep: 1 }, [
    [0, 'set.target_not_object'],
    [1, 'increment.target_not_object'],
    [2, 'decrement.target_not_object'],
  ]),
  v('a failing op leaves no containers behind', {}, [{ type: 'increment', path: ['x', 'y'], by: 'two' }], {}, [[0, 'increment.invalid_by']]),
  v('remove ignores missing and non-object intermediates', { a: 'text', n: null }, [
    { type: 'remove', path: ['missing', 'x'] },
    { type: 'remove', path: ['a', 'x'] },
    { type: 'remove', path: ['n', 'x'] },
  ], { a: 'text', n: null }),
  v('a non-object root fails every field op', [1, 2], [
    { type: 'set', path: 'a', value: 1 },
    { type: 'merge', path: 'a', value: {} },
    { type: 'increment', path: 'a' },
    { type: 'decrement', path: 'a' },
    { type: 'append', path: 'a', value: 1 },
    { type: 'remove', path: 'a' },
  ], [1, 2], [
    [0, 'set.target_not_object'],
    [1, 'merge.target_not_object'],
    [2, 'increment.target_not_object'],
    [3, 'decrement.target_not_object'],
    [4, 'append.target_not_object'],
    [5, 'remove.target_not_object'],
  ]),
  v('a null root is an empty object for field writes', null, [
    { type: 'set', path: 'a', value: 1 },
    { type: 'merge', path: 'b', value: { c: 1 } },
  ], { a: 1, b: { c: 1 } }),
  v('remove of a field on a null root keeps null', null, [{ type: 'remove', path: 'a' }], null),

  // set (§5.2)
  v('set replaces the root with an array', { a: 1 }, [{ type: 'set', value: [1, 2] }], [1, 2]),
  v('set replaces the root with null', { a: 1 }, [{ type: 'set', value: null }], null),
  v('set keeps siblings', { a: 1, b: 2 }, [{ type: 'set', path: 'a', value: null }], { a: null, b: 2 }),

  // merge (§5.2)
  v('merge into the root is shallow', { a: 1, n: { x: 1 } }, [{ type: 'merge', value: { b: 2, n: { y: 2 } } }], { a: 1, b: 2, n: { y: 2 } }),
  v('merge at a path', { u: { a: 1 } }, [{ type: 'merge', path: 'u', value: { b: 2 } }], { u: { a: 1, b: 2 } }),
  v('merge into a null root', null, [{ type: 'merge', value: { b: 2 } }], { b: 2 }),
  v('merge into an absent root', undefined, [{ type: 'merge', value: { b: 2 } }], { b: 2 }),
  v('merge into a null field', { u: null }, [{ type: 'merge', path: 'u', value: { b: 2 } }], { u: { b: 2 } }),
  v('merge replaces a non-object field', { u: 'text' }, [{ type: 'merge', path: 'u', value: { b: 2 } }], { u: { b: 2 } }),
  ...[1, 'text', true, [1]].map((root) =>
    v(`merge into a ${Array.isArray(root) ? 'array' : typeof root} root fails`, root, [{ type: 'merge', value: { a: 1 } }], root, [[0, 'merge.target_not_object']]),
  ),
  v('merge needs an object value', {}, [1, 'x', null, [1], true].map((value) => ({ type: 'merge', value })), {}, [
    [0, 'merge.value.not_an_object'],
    [1, 'merge.value.not_an_object'],
    [2, 'merge.value.not_an_object'],
    [3, 'merge.value.not_an_object'],
    [4, 'merge.value.not_an_object'],
  ]),
  v('merge allows 1024 keys', {}, [{ type: 'merge', value: keys(1024) }], keys(1024)),
  v('merge refuses 1025 keys', {}, [{ type: 'merge', value: keys(1025) }], {}, [[0, 'merge.value.too_many_keys']]),
  ...['__proto__', 'constructor', 'prototype'].map((key) =>
    v(`merge refuses the key ${key}`, {}, [{ type: 'merge', value: JSON.parse(`{"ok": 1, "${key}": {"polluted": true}}`) }], {}, [
      [0, 'merge.value.proto_polluted'],
    ]),
  ),
  v('merge allows nesting of 16', {}, [{ type: 'merge', value: nest(16) }], nest(16)),
  v('merge refuses nesting of 17', {}, [{ type: 'merge', value: nest(17) }], {}, [[0, 'merge.value.too_deep']]),
  v('merge counts arrays as nesting', {}, [{ type: 'merge', value: { a: JSON.parse('[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]') } }], {}, [
    [0, 'merge.value.too_deep'],
  ]),
  v('merge keeps existing key order and appends new keys', { z: 1, a: 2 }, [{ type: 'merge', value: { m: 3, z: 4 } }], { z: 4, a: 2, m: 3 }),

  // increment and decrement (§5.2)
  v('increment by default 1', { n: 1 }, [{ type: 'increment', path: 'n' }], { n: 2 }),
  v('increment by a fraction', { n: 1 }, [{ type: 'increment', path: 'n', by: 2.5 }], { n: 3.5 }),
  v('increment by null is 1', { n: 1 }, [{ type: 'increment', path: 'n', by: null }], { n: 2 }),
  v('decrement by default 1', { n: 1 }, [{ type: 'decrement', path: 'n' }], { n: 0 }),
  v('decrement by a negative number', { n: 1 }, [{ type: 'decrement', path: 'n', by: -4 }], { n: 5 }),
  v('a missing target becomes by or -by', {}, [
    { type: 'increment', path: 'i', by: 3 },
    { type: 'decrement', path: 'd', by: 3 },
  ], { i: 3, d: -3 }),
  v('increment the root', 5, [{ type: 'increment' }], 6),
  v('increment an absent root', undefined, [{ type: 'increment', by: 2 }], 2),
  v('decrement a null root', null, [{ type: 'decrement', by: 2 }], -2),
  v('increment needs a number target', { s: 'x', o: {}, z: null, b: true }, [
    { type: 'increment', path: 's' },
    { type: 'decrement', path: 'o' },
    { type: 'increment', path: 'z' },
    { type: 'decrement', path: 'b' },
    { type: 'increment' },
  ], { s: 'x', o: {}, z: null, b: true }, [
    [0, 'increment.not_number'],
    [1, 'decrement.not_number'],
    [2, 'increment.not_number'],
    [3, 'decrement.not_number'],
    [4, 'increment.not_number'],
  ]),
  v('by must be a finite number', { n: 1 }, [
    { type: 'increment', path: 'n', by: '1' },
    { type: 'decrement', path: 'n', by: {} },
    { type: 'increment', path: 'n', by: true },
    { type: 'increment', path: 'n', by: [] },
  ], { n: 1 }, [
    [0, 'increment.invalid_by'],
    [1, 'decrement.invalid_by'],
    [2, 'increment.invalid_by'],
    [3, 'increment.invalid_by'],
  ]),
  v('sums are doubles', { a: 0.1, b: 9007199254740992, c: 1e21, d: -0.000001 }, [
    { type: 'increment', path: 'a', by: 0.2 },
    { type: 'increment', path: 'b' },
    { type: 'increment', path: 'c', by: 1 },
    { type: 'decrement', path: 'd', by: 1e-7 },
  ], { a: 0.30000000000000004, b: 9007199254740992, c: 1e21, d: -0.0000011 }),

  // append (§5.2)
  v('append pushes onto an array', { t: ['a'] }, [{ type: 'append', path: 't', value: { b: 1 } }], { t: ['a', { b: 1 }] }),
  v('append pushes an array as one element', ['a'], [{ type: 'append', value: ['b'] }], ['a', ['b']]),
  v('append onto an empty array', { t: [] }, [{ type: 'append', path: 't', value: [] }], { t: [[]] }),
  v('append concatenates strings', { s: 'hello' }, [{ type: 'append', path: 's', value: ' world' }], { s: 'hello world' }),
  v('append concatenates at the root', 'ab', [{ type: 'append', value: 'c' }], 'abc'),
  v('append joins surrogate halves', { s: 'x\uD83D' }, [{ type: 'append', path: 's', value: '\uDE00y' }], { s: 'x😀y' }),
  v('append a string to an absent root', undefined, [{ type: 'append', value: 'x' }], 'x'),
  v('append a string to a null root', null, [{ type: 'append', value: 'x' }], 'x'),
  v('append a string to a missing field', { n: null }, [
    { type: 'append', path: 's', value: 'x' },
    { type: 'append', path: 'n', value: 'y' },
  ], { n: 'y', s: 'x' }),
  v('append a non-string to an absent root', undefined, [{ type: 'append', value: 1 }], [1]),
  v('append an object to a missing field', {}, [{ type: 'append', path: 't', value: { a: 1 } }], { t: [{ a: 1 }] }),
  v('append a string at a nested missing field', {}, [{ type: 'append', path: ['a', 's'], value: 'x' }], { a: { s: ['x'] } }),
  v('append onto an object, number or boolean fails', { o: {}, n: 1, b: false }, [
    { type: 'append', path: 'o', value: 1 },
    { type: 'append', path: 'n', value: 1 },
    { type: 'append', path: 'b', value: 1 },
    { type: 'append', value: 1 },
  ], { o: {}, n: 1, b: false }, [
    [0, 'append.type_mismatch'],
    [1, 'append.type_mismatch'],
    [2, 'append.type_mismatch'],
    [3, 'append.type_mismatch'],
  ]),
  v('append a non-string to a string fails', { s: 'a' }, [{ type: 'append', path: 's', value: 1 }], { s: 'a' }, [[0, 'append.type_mismatch']]),

  // remove (§5.2)
  v('remove the root', { a: 1 }, [{ type: 'remove' }], null),
  v('remove an absent root', undefined, [{ type: 'remove' }], null),
  v('remove a field', { a: 1, b: 2 }, [{ type: 'remove', path: 'a' }], { b: 2 }),
  v('remove a nested field', { a: { x: 1, y: 2 } }, [{ type: 'remove', path: ['a', 'x'] }], { a: { y: 2 } }),
  v('remove a missing field', { a: 1 }, [{ type: 'remove', path: 'b' }], { a: 1 }),
  v('remove from a string root fails', 'text', [{ type: 'remove', path: 'a' }], 'text', [[0, 'remove.target_not_object']]),
  v('remove a field of an absent key leaves {}', undefined, [{ type: 'remove', path: 'a' }], {}),

  // Sequencing and results (§5, §5.3)
  v('a failing op is skipped and later ops run', { count: 1, name: 'Al' }, [
    { type: 'increment', path: 'count' },
    { type: 'append', path: 'tags', value: 'a' },
    { type: 'increment', path: 'name' },
    { type: 'set', path: 'done', value: true },
  ], { count: 2, name: 'Al', tags: 'a', done: true }, [[2, 'increment.not_number']]),
  v('later ops see earlier ones', undefined, [
    { type: 'set', path: 'list', value: [] },
    { type: 'append', path: 'list', value: 1 },
    { type: 'append', path: 'list', value: 2 },
    { type: 'increment', path: ['stats', 'n'] },
    { type: 'increment', path: ['stats', 'n'] },
  ], { list: [1, 2], stats: { n: 2 } }),
  v('an absent key with no ops stores {}', undefined, [], {}),
  v('an absent key whose ops all failed stores {}', undefined, [{ type: 'increment', by: 'x' }], {}, [[0, 'increment.invalid_by']]),
  v('a field op on an absent key starts from {}', undefined, [{ type: 'set', path: 'a', value: 1 }], { a: 1 }),
  v('messages name the path', { o: { p: 'x' } }, [
    { type: 'increment', by: 'x' },
    { type: 'increment', path: 'o' },
    { type: 'increment', path: ['o', 'p'] },
    { type: 'set', path: ['o', 'p', 'q'], value: 1 },
  ], { o: { p: 'x' } }, [
    [0, 'increment.invalid_by'],
    [1, 'increment.not_number'],
    [2, 'increment.not_number'],
    [3, 'set.target_not_object'],
  ]),
  v('a value set early and changed later', {}, [
    { type: 'set', path: 'a', value: { list: [] } },
    { type: 'append', path: ['a', 'list'], value: 'x' },
    { type: 'merge', path: 'a', value: { more: true } },
    { type: 'remove', path: ['a', 'list'] },
  ], { a: { more: true } }),
]

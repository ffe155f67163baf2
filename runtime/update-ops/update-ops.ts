/**
 * Update operations (builtins.md §5): an ordered list of operations applied to one stored value.
 *
 * Pure and storage-agnostic: the caller reads the current value, calls {@link applyUpdateOps} inside
 * whatever makes its read-modify-write atomic (a SQLite transaction, a Lua script), and stores
 * `value`. Nothing passed in is mutated; containers are copied the first time an operation changes
 * them (copy on write), so the result may share untouched subtrees with the input.
 */
import { Errors, type SvcError } from 'svc-protocol/errors'
import type { UpdateOp, UpdateOpError, UpdateOpsResult, UpdateOpType } from './types.ts'

/** Limits of builtins.md §5.1–§5.2. */
export const UPDATE_LIMITS = {
  /** Segments in a path. */
  maxPathSegments: 32,
  /** UTF-8 bytes in one path segment. */
  maxSegmentBytes: 256,
  /** Top-level keys of a `merge` value. */
  maxMergeKeys: 1024,
  /** Container nesting of a `merge` value (`{}` is 1, `{"a":{}}` is 2). */
  maxMergeDepth: 16,
} as const

const OP_TYPES: readonly UpdateOpType[] = ['set', 'merge', 'increment', 'decrement', 'append', 'remove']
/** Keys that reach `Object.prototype` when assigned; refused as segments and as merge keys. */
const PROTO_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

type JsonObject = Record<string, unknown>

/**
 * Checks the shape of an `ops` value and returns it typed. Only faults that make the whole call
 * meaningless throw; everything with a per-operation code (§5.1–§5.2) is left to
 * {@link applyUpdateOps}, which records it and moves on.
 *
 * @throws SvcError `INVALID_ARGUMENTS` when `ops` is not an array, an element is not an object,
 *   has no known `type`, has a `path` that is neither a string nor an array of strings, or lacks the
 *   `value` its type requires (`set`, `merge`, `append`; builtins.md §2.1, §5.3).
 * @example
 * assertUpdateOps([{ type: 'increment', path: 'count' }]) // ok
 * assertUpdateOps({ type: 'set' })                        // throws INVALID_ARGUMENTS: ops must be an array
 */
export function assertUpdateOps(ops: unknown): asserts ops is UpdateOp[] {
  if (!Array.isArray(ops)) throw invalid('ops must be an array')
  for (let i = 0; i < ops.length; i++) {
    const op: unknown = ops[i]
    if (!isObject(op)) throw invalid(`ops[${i}] must be an object`)
    if (op.type === undefined || op.type === null) throw invalid(`ops[${i}].type is required`)
    if (typeof op.type !== 'string' || !(OP_TYPES as readonly string[]).includes(op.type)) {
      throw invalid(`ops[${i}].type must be one of ${OP_TYPES.join(', ')}`)
    }
    const path = op.path
    if (
      path !== undefined &&
      path !== null &&
      typeof path !== 'string' &&
      !(Array.isArray(path) && path.every((segment) => typeof segment === 'string'))
    ) {
      throw invalid(`ops[${i}].path must be a string or an array of strings`)
    }
    if ((op.type === 'set' || op.type === 'merge' || op.type === 'append') && op.value === undefined) {
      throw invalid(`ops[${i}].value is required`)
    }
  }
}

/**
 * Applies `ops` in order to a working copy of `current` (builtins.md §5).
 *
 * - `current` is the stored value; `undefined` means the key is absent. For an absent key an
 *   operation on the root sees a missing root, an operation on a field first turns the root into
 *   `{}`, and a value still missing after the last operation comes back as `{}`.
 * - A failing operation is skipped and recorded in `errors` (`op_index`, `code`, `message` naming
 *   the path: `root`, `'field'` or `[a, b]`); later operations still run.
 *
 * @returns `{value, errors}`: the value to store (never undefined) and the skipped operations.
 * @throws SvcError `INVALID_ARGUMENTS` for a malformed `ops` value (see {@link assertUpdateOps}).
 * @example
 * applyUpdateOps({ count: 1 }, [{ type: 'increment', path: 'count' }, { type: 'append', path: 'tags', value: 'a' }])
 * // => { value: { count: 2, tags: 'a' }, errors: [] }
 */
export function applyUpdateOps(current: unknown, ops: unknown): UpdateOpsResult {
  assertUpdateOps(ops)
  const work = new Working(current)
  const errors: UpdateOpError[] = []
  for (let index = 0; index < ops.length; index++) {
    const op = ops[index]!
    const failure = applyOne(work, op)
    if (failure) errors.push({ op_index: index, code: failure.code, message: failure.message })
  }
  return { value: work.root === undefined ? {} : work.root, errors }
}

/** A skipped operation before it gets its `op_index`; a class so results can be told apart from values. */
class Failure {
  readonly code: string
  readonly message: string
  constructor(code: string, message: string) {
    this.code = code
    this.message = message
  }
}

/** The working value plus the set of containers this call already copied and may therefore mutate. */
class Working {
  /** `undefined` while the root is missing (absent key). */
  root: unknown
  private readonly owned = new WeakSet<object>()

  constructor(root: unknown) {
    this.root = root
  }

  /** A copy of `container` that this call may mutate (the container itself once copied). */
  own<T extends JsonObject | unknown[]>(container: T): T {
    if (this.owned.has(container)) return container
    // Spread defines own data properties, so a stored `__proto__` key stays an ordinary key.
    const copy = (Array.isArray(container) ? container.slice() : { ...container }) as T
    this.owned.add(copy)
    return copy
  }

  fresh(): JsonObject {
    const object: JsonObject = {}
    this.owned.add(object)
    return object
  }
}

function applyOne(work: Working, op: UpdateOp): Failure | undefined {
  const segments = segmentsOf(op.path)
  const where = describePath(op.path, segments)
  const pathFailure = checkPath(op.type, segments, where)
  if (pathFailure) return pathFailure
  switch (op.type) {
    case 'set':
      return set(work, segments, where, op.value)
    case 'merge':
      return merge(work, segments, where, op.value)
    case 'increment':
    case 'decrement':
      return addNumber(work, op.type, segments, where, op.by)
    case 'append':
      return append(work, segments, where, op.value)
    case 'remove':
      return remove(work, segments, where)
  }
}

// ---------------------------------------------------------------------------------------------
// Paths (§5.1)

function segmentsOf(path: UpdateOp['path'] | null): string[] {
  if (path === undefined || path === null || path === '') return []
  return typeof path === 'string' ? [path] : path
}

/** `root`, `'name'` for a string path, `[a, b]` for an array path (builtins.md §5.3). */
function describePath(path: UpdateOp['path'] | null, segments: string[]): string {
  if (segments.length === 0) return 'root'
  return typeof path === 'string' ? `'${path}'` : `[${segments.join(', ')}]`
}

function checkPath(type: UpdateOpType, segments: string[], where: string): Failure | undefined {
  if (segments.length > UPDATE_LIMITS.maxPathSegments) {
    return new Failure(
      `${type}.path.too_deep`,
      `${type} at path ${where} has ${segments.length} segments; at most ${UPDATE_LIMITS.maxPathSegments} are allowed`,
    )
  }
  for (const segment of segments) {
    if (segment === '') return new Failure(`${type}.path.empty_segment`, `${type} at path ${where} has an empty segment`)
    // Three UTF-8 bytes per UTF-16 unit is the worst case, so short segments skip the count.
    const bytes = segment.length * 3 <= UPDATE_LIMITS.maxSegmentBytes ? 0 : Buffer.byteLength(segment, 'utf8')
    if (bytes > UPDATE_LIMITS.maxSegmentBytes) {
      return new Failure(
        `${type}.path.segment_too_long`,
        `${type} at path ${where} has a segment of ${bytes} bytes; at most ${UPDATE_LIMITS.maxSegmentBytes} are allowed`,
      )
    }
    if (PROTO_KEYS.has(segment)) {
      return new Failure(`${type}.path.proto_polluted`, `${type} at path ${where} uses the forbidden segment '${segment}'`)
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Navigation (§5.1, intermediate containers)

/**
 * The containers of a field path, read without changing anything so that an operation that fails
 * leaves no half-created containers behind.
 * - `blocked`: the root (`at` = -1) or the value at `segments[0..at]` exists, is not null and is
 *   not an object.
 * - `ok`: `target` is the field's current value, undefined when it or a container above it is
 *   missing (missing and null containers are created as `{}` when written).
 */
type Probe = { kind: 'blocked'; at: number; found: unknown } | { kind: 'ok'; target: unknown }

function probe(root: unknown, segments: string[]): Probe {
  if (root === undefined || root === null) return { kind: 'ok', target: undefined }
  if (!isObject(root)) return { kind: 'blocked', at: -1, found: root }
  let container: JsonObject = root
  for (let i = 0; i < segments.length - 1; i++) {
    const child = ownField(container, segments[i]!)
    if (child === undefined || child === null) return { kind: 'ok', target: undefined }
    if (!isObject(child)) return { kind: 'blocked', at: i, found: child }
    container = child
  }
  return { kind: 'ok', target: ownField(container, segments[segments.length - 1]!) }
}

function notObject(type: UpdateOpType, where: string, segments: string[], blocked: { at: number; found: unknown }): Failure {
  const location = blocked.at < 0 ? 'the root' : `[${segments.slice(0, blocked.at + 1).join(', ')}]`
  return new Failure(
    `${type}.target_not_object`,
    `${type} at path ${where} expects ${location} to be an object, found ${typeName(blocked.found)}`,
  )
}

/**
 * Sets the last segment's field to `next(target)` unless `next` returns a {@link Failure}. Missing
 * or null containers on the way are created as `{}`; a non-object root fails with
 * `<type>.target_not_object`; a non-object intermediate fails likewise, unless `replace` is set
 * (`merge`, `append`), in which case it is replaced by `{}` and the target counts as missing.
 */
function writeField(
  work: Working,
  type: UpdateOpType,
  segments: string[],
  where: string,
  replace: boolean,
  next: (target: unknown) => unknown,
): Failure | undefined {
  const found = probe(work.root, segments)
  if (found.kind === 'blocked' && (found.at < 0 || !replace)) return notObject(type, where, segments, found)
  const value = next(found.kind === 'ok' ? found.target : undefined)
  if (value instanceof Failure) return value

  let container = isObject(work.root) ? work.own(work.root) : work.fresh()
  work.root = container
  for (let i = 0; i < segments.length - 1; i++) {
    const child = ownField(container, segments[i]!)
    const owned = isObject(child) ? work.own(child) : work.fresh()
    container[segments[i]!] = owned
    container = owned
  }
  container[segments[segments.length - 1]!] = value
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Operations (§5.2)

function set(work: Working, segments: string[], where: string, value: unknown): Failure | undefined {
  if (segments.length > 0) return writeField(work, 'set', segments, where, false, () => value)
  work.root = value
  return undefined
}

function merge(work: Working, segments: string[], where: string, value: unknown): Failure | undefined {
  const valueFailure = checkMergeValue(where, value)
  if (valueFailure) return valueFailure
  const patch = value as JsonObject
  // A missing, null or (below the root) non-object target becomes a copy of the value.
  const merged = (target: unknown): JsonObject =>
    isObject(target) ? assignAll(work.own(target), patch) : work.own(patch)

  if (segments.length > 0) return writeField(work, 'merge', segments, where, true, merged)
  const root = work.root
  if (root !== undefined && root !== null && !isObject(root)) {
    return new Failure('merge.target_not_object', `merge at path root expects an object, found ${typeName(root)}`)
  }
  work.root = merged(root)
  return undefined
}

function checkMergeValue(where: string, value: unknown): Failure | undefined {
  if (!isObject(value)) {
    return new Failure(
      'merge.value.not_an_object',
      `merge at path ${where} expects value to be an object, found ${typeName(value)}`,
    )
  }
  const keys = Object.keys(value)
  if (keys.length > UPDATE_LIMITS.maxMergeKeys) {
    return new Failure(
      'merge.value.too_many_keys',
      `merge at path ${where} has a value with ${keys.length} top-level keys; at most ${UPDATE_LIMITS.maxMergeKeys} are allowed`,
    )
  }
  // Only top-level keys are assigned onto the target, so only they could reach a prototype.
  const polluting = keys.find((key) => PROTO_KEYS.has(key))
  if (polluting !== undefined) {
    return new Failure(
      'merge.value.proto_polluted',
      `merge at path ${where} has a value with the forbidden key '${polluting}'`,
    )
  }
  if (exceedsDepth(value, UPDATE_LIMITS.maxMergeDepth)) {
    return new Failure(
      'merge.value.too_deep',
      `merge at path ${where} has a value nested deeper than ${UPDATE_LIMITS.maxMergeDepth} levels`,
    )
  }
  return undefined
}

/** True when `value` nests more than `limit` containers; stops descending once over the limit. */
function exceedsDepth(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (limit === 0) return true
  const children = Array.isArray(value) ? value : Object.values(value)
  return children.some((child) => exceedsDepth(child, limit - 1))
}

function assignAll(target: JsonObject, patch: JsonObject): JsonObject {
  // Keys were checked against PROTO_KEYS, so plain assignment cannot reach a prototype.
  for (const key of Object.keys(patch)) target[key] = patch[key]
  return target
}

function addNumber(
  work: Working,
  type: 'increment' | 'decrement',
  segments: string[],
  where: string,
  byInput: unknown,
): Failure | undefined {
  const by = byInput === undefined || byInput === null ? 1 : byInput
  if (typeof by !== 'number' || !Number.isFinite(by)) {
    return new Failure(
      `${type}.invalid_by`,
      `${type} at path ${where} expects by to be a finite number, found ${typeName(by)}`,
    )
  }
  const delta = type === 'increment' ? by : -by
  const added = (target: unknown): number | Failure => {
    if (target === undefined) return delta
    if (typeof target === 'number') return target + delta
    return new Failure(`${type}.not_number`, `${type} at path ${where} expects a number, found ${typeName(target)}`)
  }

  if (segments.length > 0) return writeField(work, type, segments, where, false, added)
  // A null root counts as missing (§5).
  const next = added(work.root === null ? undefined : work.root)
  if (next instanceof Failure) return next
  work.root = next
  return undefined
}

function append(work: Working, segments: string[], where: string, value: unknown): Failure | undefined {
  const appended = (target: unknown): unknown => {
    if (target === undefined || target === null) {
      return typeof value === 'string' && segments.length <= 1 ? value : [value]
    }
    if (Array.isArray(target)) {
      const array = work.own(target)
      array.push(value)
      return array
    }
    if (typeof target === 'string') {
      if (typeof value === 'string') return target + value
      return new Failure(
        'append.type_mismatch',
        `append at path ${where} can only append a string to a string, found a value of type ${typeName(value)}`,
      )
    }
    return new Failure(
      'append.type_mismatch',
      `append at path ${where} expects an array, a string or nothing, found ${typeName(target)}`,
    )
  }

  if (segments.length > 0) return writeField(work, 'append', segments, where, true, appended)
  const next = appended(work.root)
  if (next instanceof Failure) return next
  work.root = next
  return undefined
}

function remove(work: Working, segments: string[], where: string): Failure | undefined {
  if (segments.length === 0) {
    work.root = null
    return undefined
  }
  const root = work.root
  if (root === undefined) {
    // An operation on a field of an absent key first turns the root into {} (§5).
    work.root = work.fresh()
    return undefined
  }
  if (root === null) return undefined
  if (!isObject(root)) return notObject('remove', where, segments, { at: -1, found: root })

  // Walk without creating anything: a missing or non-object intermediate leaves nothing to remove.
  const chain: JsonObject[] = [root]
  for (let i = 0; i < segments.length - 1; i++) {
    const child = ownField(chain[i]!, segments[i]!)
    if (!isObject(child)) return undefined
    chain.push(child)
  }
  const last = segments[segments.length - 1]!
  if (!Object.hasOwn(chain[chain.length - 1]!, last)) return undefined
  let container = work.own(root)
  work.root = container
  for (let i = 0; i < segments.length - 1; i++) {
    const owned = work.own(chain[i + 1]!)
    container[segments[i]!] = owned
    container = owned
  }
  delete container[last]
  return undefined
}

// ---------------------------------------------------------------------------------------------

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Own fields only: `toString` of a parsed object is a missing field, not a function. */
function ownField(container: JsonObject, key: string): unknown {
  return Object.hasOwn(container, key) ? container[key] : undefined
}

/** JSON type name for messages. */
function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (value === undefined) return 'nothing'
  if (Array.isArray(value)) return 'array'
  return typeof value
}

function invalid(message: string): SvcError {
  return Errors.invalidArguments(message)
}

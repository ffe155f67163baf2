/**
 * The `memory` state adapter (builtins.md §13.3): the semantics of `builtin` within one process,
 * nothing kept across restarts. Values are held as JSON text so that stored snapshots, fresh reads
 * and the handling of non-JSON input match the SQLite adapter exactly; scopes and keys are made
 * well-formed (lone surrogates become U+FFFD) as SQLite's UTF-8 storage does.
 */
import { parseNoAdapterConfig } from '../../entry.ts'
import { applyUpdateOps } from '../../../update-ops/index.ts'
import { ChangeListeners } from '../../changes.ts'
import { checkValueSize, decodeStateValue as decode, encodeStateValue as encode } from '../codec.ts'
import {
  compareUtf8,
  type StateAdapter,
  type StateChange,
  type StateChangeListener,
  type StateEntry,
  type StatePage,
  type StatePageRequest,
  type StateUpdateResult,
  type StateValue,
  type StateWriteOptions,
  type UpdateOp,
} from '../types.ts'

/**
 * Checks an `adapter.config` block for `memory`, which takes no options.
 * @throws Error naming the first unknown field.
 */
export const parseMemoryStateConfig: (config: Record<string, unknown>) => Record<string, never> = parseNoAdapterConfig('memory')

class Scope {
  readonly values = new Map<string, string>()
  /** Keys in byte-wise order; rebuilt lazily after a key is added or removed. */
  private sorted: string[] | undefined

  keys(): string[] {
    this.sorted ??= [...this.values.keys()].sort(compareUtf8)
    return this.sorted
  }

  keysChanged(): void {
    this.sorted = undefined
  }
}

/**
 * @example
 * const adapter = new MemoryStateAdapter()
 * await adapter.set('users', 'u1', { name: 'Alice' })
 */
export class MemoryStateAdapter implements StateAdapter {
  private readonly scopes = new Map<string, Scope>()
  private readonly changes = new ChangeListeners<StateChange>()
  private closed = false

  async get(scope: string, key: string): Promise<StateValue | undefined> {
    this.assertOpen()
    return this.read(wellFormed(scope), wellFormed(key))
  }

  async set(scope: string, key: string, value: StateValue, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.assertOpen()
    scope = wellFormed(scope)
    key = wellFormed(key)
    const text = encode(value)
    checkValueSize(text, options.maxValueBytes, options.maxValueSetting)
    const old_value = this.read(scope, key)
    this.write(scope, key, text)
    this.changes.emit({ scope, key, old_value, new_value: value, origin: options.origin })
    return old_value
  }

  async delete(scope: string, key: string, options: StateWriteOptions = {}): Promise<StateValue | undefined> {
    this.assertOpen()
    scope = wellFormed(scope)
    key = wellFormed(key)
    const entries = this.scopes.get(scope)
    const text = entries?.values.get(key)
    if (entries === undefined || text === undefined) return undefined
    entries.values.delete(key)
    entries.keysChanged()
    if (entries.values.size === 0) this.scopes.delete(scope)
    const old_value = decode(text)
    this.changes.emit({ scope, key, old_value, new_value: undefined, origin: options.origin })
    return old_value
  }

  async update(scope: string, key: string, ops: UpdateOp[], options: StateWriteOptions = {}): Promise<StateUpdateResult> {
    this.assertOpen()
    scope = wellFormed(scope)
    key = wellFormed(key)
    // Synchronous from read to write, so no other write can land in between.
    const old_value = this.read(scope, key)
    const { value, errors } = applyUpdateOps(old_value, ops)
    const text = encode(value)
    checkValueSize(text, options.maxValueBytes, options.maxValueSetting)
    this.write(scope, key, text)
    // Decoded rather than taken from the operations, so the result is exactly what a later read returns.
    const new_value = decode(text)
    this.changes.emit({ scope, key, old_value, new_value, origin: options.origin })
    return { old_value, new_value, errors }
  }

  async list(scope: string): Promise<StateValue[]> {
    this.assertOpen()
    const entries = this.scopes.get(wellFormed(scope))
    if (entries === undefined) return []
    return entries.keys().map((key) => decode(entries.values.get(key)!))
  }

  async listKeys(scope: string, page: StatePageRequest): Promise<StatePage<string>> {
    this.assertOpen()
    const { keys, total } = this.page(scope, page)
    return { items: keys, total }
  }

  async listEntries(scope: string, page: StatePageRequest): Promise<StatePage<StateEntry>> {
    this.assertOpen()
    const { keys, total, entries } = this.page(scope, page)
    return { items: keys.map((key) => ({ key, value: decode(entries!.values.get(key)!) })), total }
  }

  async listGroups(): Promise<string[]> {
    this.assertOpen()
    return [...this.scopes.keys()].sort(compareUtf8)
  }

  subscribe(listener: StateChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    this.closed = true
    this.changes.clear()
    this.scopes.clear()
  }

  private read(scope: string, key: string): StateValue | undefined {
    const text = this.scopes.get(scope)?.values.get(key)
    return text === undefined ? undefined : decode(text)
  }

  private write(scope: string, key: string, text: string): void {
    let entries = this.scopes.get(scope)
    if (entries === undefined) {
      entries = new Scope()
      this.scopes.set(scope, entries)
    }
    if (!entries.values.has(key)) entries.keysChanged()
    entries.values.set(key, text)
  }

  private page(scope: string, page: StatePageRequest): { keys: string[]; total: number; entries?: Scope } {
    const entries = this.scopes.get(wellFormed(scope))
    if (entries === undefined) return { keys: [], total: 0 }
    const sorted = entries.keys()
    const prefix = page.prefix === undefined ? '' : wellFormed(page.prefix)
    // Keys with a prefix form one contiguous run in byte-wise order: find its start, then its end.
    const start = prefix === '' ? 0 : lowerBound(sorted, prefix)
    let end = start
    if (prefix === '') end = sorted.length
    else while (end < sorted.length && sorted[end]!.startsWith(prefix)) end++
    const from = Math.min(start + page.offset, end)
    return { keys: sorted.slice(from, Math.min(from + page.limit, end)), total: end - start, entries }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('memory state adapter is closed')
  }
}

/** `String.prototype.toWellFormed` (ES2024, in every supported Node); the project's lib is ES2023. */
function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed()
}

/** First index whose key is ≥ `target` in byte-wise order. */
function lowerBound(sorted: string[], target: string): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (compareUtf8(sorted[middle]!, target) < 0) low = middle + 1
    else high = middle
  }
  return low
}

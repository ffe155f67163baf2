/**
 * A stream adapter over a state adapter (runtime/adapters/state/): each `(stream_name, group_id)`
 * pair is one state scope and each item one key, so `builtin` (SQLite) and `memory` streams reuse
 * the state stores, their atomic update operations and their change feeds instead of a second
 * implementation. The scope is the JSON text of `[stream_name, group_id]`, which cannot collide
 * for different pairs.
 */
import type { StateAdapter, StateChange } from '../state/types.ts'
import { compareUtf8 } from '../state/types.ts'
import { ChangeListeners } from '../changes.ts'
import type {
  StreamAdapter,
  StreamAdapterChange,
  StreamChangeListener,
  StreamGroups,
  StreamSendChange,
  StreamUpdateOutcome,
  StreamWriteOptions,
  UpdateOp,
} from './types.ts'
import { jsonParse } from 'svc-protocol/json'

const LIMIT_SETTING = 'max_item_bytes'

/** The state scope of a group. */
export function groupScope(stream: string, group: string): string {
  return JSON.stringify([stream, group])
}

/** The pair a scope stands for, or undefined for a scope this adapter did not write. */
export function parseGroupScope(scope: string): [string, string] | undefined {
  if (!scope.startsWith('[')) return undefined
  try {
    const pair = jsonParse(scope) as unknown
    if (Array.isArray(pair) && pair.length === 2 && typeof pair[0] === 'string' && typeof pair[1] === 'string') {
      return [pair[0], pair[1]]
    }
  } catch {
    // not ours
  }
  return undefined
}

/**
 * @example
 * const streams = new StateBackedStreamAdapter(new MemoryStateAdapter())
 * await streams.set('presence', 'room-1', 'u1', { online: true })
 */
export class StateBackedStreamAdapter implements StreamAdapter {
  private readonly store: StateAdapter
  private readonly changes = new ChangeListeners<StreamAdapterChange>()
  private readonly unsubscribe: () => void
  private closed = false

  /** Takes ownership of `store`: {@link close} closes it. */
  constructor(store: StateAdapter) {
    this.store = store
    this.unsubscribe = store.subscribe((change) => this.onStateChange(change))
  }

  get(stream: string, group: string, item: string): Promise<unknown> {
    return this.store.get(groupScope(stream, group), item)
  }

  set(stream: string, group: string, item: string, data: unknown, options: StreamWriteOptions = {}): Promise<unknown> {
    return this.store.set(groupScope(stream, group), item, data, stateOptions(options))
  }

  delete(stream: string, group: string, item: string, options: Pick<StreamWriteOptions, 'origin'> = {}): Promise<unknown> {
    return this.store.delete(groupScope(stream, group), item, options.origin ? { origin: options.origin } : {})
  }

  update(stream: string, group: string, item: string, ops: UpdateOp[], options: StreamWriteOptions = {}): Promise<StreamUpdateOutcome> {
    return this.store.update(groupScope(stream, group), item, ops, stateOptions(options))
  }

  list(stream: string, group: string): Promise<unknown[]> {
    return this.store.list(groupScope(stream, group))
  }

  async listGroups(stream: string): Promise<string[]> {
    const groups: string[] = []
    for (const scope of await this.store.listGroups()) {
      const pair = parseGroupScope(scope)
      if (pair && pair[0] === stream) groups.push(pair[1])
    }
    return groups.sort(compareUtf8)
  }

  async listAll(): Promise<StreamGroups[]> {
    const streams = new Map<string, string[]>()
    for (const scope of await this.store.listGroups()) {
      const pair = parseGroupScope(scope)
      if (!pair) continue
      let groups = streams.get(pair[0])
      if (!groups) streams.set(pair[0], (groups = []))
      groups.push(pair[1])
    }
    return [...streams.keys()].sort(compareUtf8).map((stream_name) => ({ stream_name, groups: streams.get(stream_name)!.sort(compareUtf8) }))
  }

  async publish(event: Omit<StreamSendChange, 'kind'>): Promise<void> {
    if (this.closed) throw new Error('stream adapter is closed')
    this.changes.emit({ kind: 'send', ...event })
  }

  subscribe(listener: StreamChangeListener): () => void {
    return this.changes.subscribe(listener)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.unsubscribe()
    this.changes.clear()
    await this.store.close()
  }

  private onStateChange(change: StateChange): void {
    const pair = parseGroupScope(change.scope)
    if (!pair) return
    this.changes.emit({
      kind: 'item',
      stream_name: pair[0],
      group_id: pair[1],
      item_id: change.key,
      old_value: change.old_value,
      new_value: change.new_value,
      origin: change.origin,
    })
  }
}

function stateOptions(options: StreamWriteOptions) {
  const result: { origin?: StreamWriteOptions['origin']; maxValueBytes: number | null; maxValueSetting: string } = {
    maxValueBytes: options.maxItemBytes ?? null,
    maxValueSetting: LIMIT_SETTING,
  }
  if (options.origin) result.origin = options.origin
  return result
}

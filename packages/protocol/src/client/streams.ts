/**
 * The streams helper of sdk.md §10, shared by every SDK: {@link createStream} registers a custom
 * stream's storage (builtins.md §6.2) as ordinary functions of a client. It needs nothing but
 * `registerFunction`, so `svc-sdk/stream` and `svc-browser-sdk` re-export this one implementation.
 */
import type { JsonValue } from '../messages.ts'
import type { UpdateOp, UpdateOpError } from '../payloads/state.ts'
import type { ItemKey } from '../payloads/stream.ts'
import type { FunctionHandler, FunctionRef, RegisterFunctionOptions } from './types.ts'

/**
 * A custom stream's storage (builtins.md §6.2): the stream worker routes every operation on the
 * stream's name to these methods. `get` resolves undefined for an absent item; `set` resolves
 * `{old_value: null}` for a new item; `delete` resolves `{}` for an absent item. Errors thrown
 * (with a `code`) reach the caller of the built-in function unchanged.
 */
export interface IStream<T = JsonValue> {
  get(input: ItemKey): Promise<T | undefined>
  set(input: ItemKey & { data: T }): Promise<{ old_value: T | null; new_value: T }>
  delete(input: ItemKey): Promise<{ old_value?: T }>
  list(input: { stream_name: string; group_id: string }): Promise<T[]>
  listGroups(input: { stream_name: string }): Promise<string[]>
  update?(input: ItemKey & { ops: UpdateOp[] }): Promise<{ old_value: T | null; new_value: T; errors?: UpdateOpError[] }>
}

/** What {@link createStream} needs of a client: any SDK's client has it. */
export interface FunctionRegistrar {
  registerFunction(id: string, handler: FunctionHandler, options?: RegisterFunctionOptions): FunctionRef
}

/**
 * Registers `impl` as the custom stream `streamName` (sdk.md §10): the functions
 * `stream::get(<name>)`, `stream::set(<name>)`, `stream::delete(<name>)`, `stream::list(<name>)`,
 * `stream::list_groups(<name>)` and, when `impl.update` exists, `stream::update(<name>)`.
 * `unregister()` removes them all.
 *
 * @throws Error `streamName is required` for an empty name; the client's own error when one of the
 *   ids is already registered by this client (the ones registered before it are removed again).
 * @example
 * const rooms = new Map<string, Presence>()
 * createStream<Presence>(client, 'presence', {
 *   get: async ({ group_id, item_id }) => rooms.get(`${group_id}/${item_id}`),
 *   set: async ({ group_id, item_id, data }) => { … return { old_value, new_value: data } },
 *   …
 * })
 */
export function createStream<T = JsonValue>(client: FunctionRegistrar, streamName: string, impl: IStream<T>): { unregister(): void } {
  if (typeof streamName !== 'string' || streamName === '') throw new Error('streamName is required')
  const refs: FunctionRef[] = []
  const register = (op: string, handler: (input: any) => Promise<unknown>) => {
    refs.push(client.registerFunction(`stream::${op}(${streamName})`, handler, { description: `custom stream ${streamName}: ${op}` }))
  }
  try {
    register('get', (input) => impl.get(input))
    register('set', (input) => impl.set(input))
    register('delete', (input) => impl.delete(input))
    register('list', (input) => impl.list(input))
    register('list_groups', (input) => impl.listGroups(input))
    if (impl.update) {
      const update = impl.update.bind(impl)
      register('update', (input) => update(input))
    }
  } catch (error) {
    for (const ref of refs) ref.unregister()
    throw error
  }
  return {
    unregister() {
      for (const ref of refs.splice(0)) ref.unregister()
    },
  }
}

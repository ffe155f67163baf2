/**
 * `svc-sdk/stream` (sdk.md §10): `createStream` registers a custom stream that the real stream
 * worker routes to; the typed trigger inputs fit `registerTrigger`.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { createStream, type IStream, type StreamChangeEvent, type StreamTriggerInput, type StreamJoinLeaveEvent, type StreamJoinTriggerInput } from 'svc-sdk/stream'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'

type Note = { text: string; n?: number }

function mapStream(store: Map<string, Note>): IStream<Note> {
  const key = (i: { group_id: string; item_id: string }) => `${i.group_id}\u0000${i.item_id}`
  return {
    async get(input) {
      return store.get(key(input))
    },
    async set(input) {
      const old = store.get(key(input)) ?? null
      store.set(key(input), input.data)
      return { old_value: old, new_value: input.data }
    },
    async delete(input) {
      const old = store.get(key(input))
      store.delete(key(input))
      return old === undefined ? {} : { old_value: old }
    },
    async list(input) {
      return [...store.entries()].filter(([k]) => k.startsWith(`${input.group_id}\u0000`)).sort().map(([, v]) => v)
    },
    async listGroups() {
      return [...new Set([...store.keys()].map((k) => k.split('\u0000')[0]!))].sort()
    },
  }
}

describe('svc-sdk/stream', () => {
  let test: TestEngine
  let client: SvcClient
  const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })
  before(async () => {
    test = await startTestEngine()
    client = registerWorker(test.url, { workerName: 'sdk-stream-test' })
  })
  after(async () => {
    await client.shutdown()
    await test.stop()
  })

  it('createStream routes the stream worker to the implementation, and unregister() removes it', async () => {
    const store = new Map<string, Note>()
    const events: StreamChangeEvent<Note>[] = []
    client.registerFunction('notes::changed', async (event: StreamChangeEvent<Note>) => {
      events.push(event)
    })
    const trigger: StreamTriggerInput = { type: 'stream', function_id: 'notes::changed', config: { stream_name: 'notes' } }
    client.registerTrigger(trigger)
    const stream = createStream(client, 'notes', mapStream(store))
    await waitFor(async () => ((await call('stream::list_groups', { stream_name: 'notes' }).catch(() => null)) as unknown[] | null)?.length === 0 && store.size === 0 && (await call('stream::set', { stream_name: 'notes', group_id: 'g', item_id: 'probe', data: { text: 'p' } }), store.has('g\u0000probe')), 'the custom stream', 5000, 20)
    assert.deepEqual(await call('stream::get', { stream_name: 'notes', group_id: 'g', item_id: 'probe' }), { text: 'p' })
    assert.deepEqual(await call('stream::update', { stream_name: 'notes', group_id: 'g', item_id: 'probe', ops: [{ type: 'increment', path: 'n' }] }), {
      old_value: { text: 'p' },
      new_value: { text: 'p', n: 1 },
    })
    assert.deepEqual(await call('stream::list', { stream_name: 'notes', group_id: 'g' }), [{ text: 'p', n: 1 }])
    assert.deepEqual(await call('stream::list_groups', { stream_name: 'notes' }), ['g'])
    assert.deepEqual(await call('stream::delete', { stream_name: 'notes', group_id: 'g', item_id: 'probe' }), { old_value: { text: 'p', n: 1 } })
    await waitFor(() => events.length >= 3, 'three events', 5000, 20)
    assert.deepEqual(events.map((e) => e.event.type), ['create', 'update', 'delete'])

    stream.unregister()
    await waitFor(async () => (await call('stream::list_groups', { stream_name: 'notes' })) !== undefined && store.size === 0 && (await call('stream::set', { stream_name: 'notes', group_id: 'g', item_id: 'x', data: { text: 'built-in' } }), !store.has('g\u0000x')), 'the built-in store again', 5000, 20)
    assert.deepEqual(await call('stream::get', { stream_name: 'notes', group_id: 'g', item_id: 'x' }), { text: 'built-in' })
  })

  it('createStream registers stream::update(<name>) only when update exists; an empty name throws', () => {
    assert.throws(() => createStream(client, '', mapStream(new Map())), /streamName is required/)
    const impl = { ...mapStream(new Map()), update: async () => ({ old_value: null, new_value: { text: '' } }) }
    const stream = createStream(client, 'with-update', impl)
    assert.throws(() => client.registerFunction('stream::update(with-update)', async () => null), /already registered/)
    stream.unregister()
    const hook: StreamJoinTriggerInput = { type: 'stream:join', function_id: 'x::join', config: { stream_name: 'chat', group_id: 'g' } }
    const payload: StreamJoinLeaveEvent = { subscription_id: 's', stream_name: 'chat', group_id: 'g', id: null, context: null }
    assert.equal(hook.config.stream_name, payload.stream_name)
  })
})

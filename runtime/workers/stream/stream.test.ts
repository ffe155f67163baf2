/**
 * The stream worker through a real engine: functions over `engine.inject`, custom streams and
 * triggers through svc-sdk workers on real sockets, and real WebSocket clients of the listener.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { registerWorker, type SvcClient } from 'svc-sdk'
import type { TestEngine } from '../../../test/support/engine.ts'
import { startStreamEngine, StreamSocket, type Frame } from './test-support/stream.ts'
import type { StreamWorker } from './worker.ts'
import { quietPeriod, waitFor } from '../../../test/support/wait.ts'
import { bindingsSettled } from '../../../test/support/sdk-harness.ts'

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code: string; message: string }
  }
  assert.fail('expected the call to fail')
}

const item = (item_id: string, extra: Record<string, unknown> = {}) => ({ stream_name: 'presence', group_id: 'room-1', item_id, ...extra })

describe('stream functions (builtins.md §6.2)', () => {
  let test: TestEngine
  const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })
  before(async () => {
    ;({ test } = await startStreamEngine({ settings: { max_item_bytes: 100 } }))
  })
  after(() => test.stop())

  it('set, get, update, delete with the §6.2 results', async () => {
    assert.equal(await call('stream::get', item('u1')), undefined)
    assert.deepEqual(await call('stream::set', item('u1', { data: { online: true } })), { old_value: null, new_value: { online: true } })
    assert.deepEqual(await call('stream::set', item('u1', { data: { online: false } })), { old_value: { online: true }, new_value: { online: false } })
    assert.deepEqual(await call('stream::get', item('u1')), { online: false })
    assert.deepEqual(await call('stream::update', item('u1', { ops: [{ type: 'increment', path: 'visits' }, { type: 'append', path: 'online', value: 1 }] })), {
      old_value: { online: false },
      new_value: { online: false, visits: 1 },
      errors: [{ op_index: 1, code: 'append.type_mismatch', message: (await failureMessage()) }],
    })
    assert.deepEqual(await call('stream::delete', item('u1')), { old_value: { online: false, visits: 1 } })
    assert.deepEqual(await call('stream::delete', item('u1')), {})
  })

  async function failureMessage(): Promise<string> {
    const r = (await call('stream::update', { stream_name: 'probe', group_id: 'g', item_id: 'i', ops: [{ type: 'set', path: 'online', value: false }, { type: 'append', path: 'online', value: 1 }] })) as { errors: Array<{ message: string }> }
    return r.errors[0]!.message
  }

  it('list, list_groups, list_all', async () => {
    await call('stream::set', { stream_name: 'chat', group_id: 'b', item_id: 'm2', data: 2 })
    await call('stream::set', { stream_name: 'chat', group_id: 'b', item_id: 'm1', data: 1 })
    await call('stream::set', { stream_name: 'chat', group_id: 'a', item_id: 'm1', data: 0 })
    assert.deepEqual(await call('stream::list', { stream_name: 'chat', group_id: 'b' }), [1, 2])
    assert.deepEqual(await call('stream::list', { stream_name: 'chat', group_id: 'none' }), [])
    assert.deepEqual(await call('stream::list_groups', { stream_name: 'chat' }), ['a', 'b'])
    const all = (await call('stream::list_all', {})) as { streams: Array<{ stream_name: string }>; count: number }
    assert.deepEqual(all.streams.find((s) => s.stream_name === 'chat'), { stream_name: 'chat', groups: ['a', 'b'] })
    assert.equal(all.count, all.streams.length)
    assert.deepEqual(all.streams.map((s) => s.stream_name), [...all.streams.map((s) => s.stream_name)].sort())
  })

  it('send has no result and stores nothing', async () => {
    assert.equal(await call('stream::send', { stream_name: 'chat', group_id: 'x', type: 'typing', data: { who: 'u1' } }), undefined)
    assert.deepEqual(await call('stream::list_groups', { stream_name: 'chat' }), ['a', 'b'])
  })

  it('INVALID_ARGUMENTS messages per §2.1', async () => {
    const e0 = await failure(call('stream::set', { group_id: 'g', item_id: 'i', data: 1 }))
    assert.deepEqual({ code: e0.code, message: e0.message }, { code: 'INVALID_ARGUMENTS', message: 'stream_name is required' })
    const e1 = await failure(call('stream::get', { stream_name: 's', group_id: 5, item_id: 'i' }))
    assert.equal(e1.message, 'group_id must be a non-empty string')
    assert.equal((await failure(call('stream::set', { stream_name: 's', group_id: 'g', item_id: 'i' }))).message, 'data is required')
    assert.equal((await failure(call('stream::update', { stream_name: 's', group_id: 'g', item_id: 'i' }))).message, 'ops is required')
    assert.equal((await failure(call('stream::update', { stream_name: 's', group_id: 'g', item_id: 'i', ops: 'x' }))).code, 'INVALID_ARGUMENTS')
    assert.equal((await failure(call('stream::send', { stream_name: 's', group_id: 'g', data: 1 }))).message, 'type is required')
    assert.equal((await failure(call('stream::send', { stream_name: 's', group_id: 'g', type: 't', data: 1, id: 3 }))).message, 'id must be a non-empty string')
    assert.equal((await failure(call('stream::list', 'nope'))).message, 'payload must be an object')
  })

  it('VALUE_TOO_LARGE names max_item_bytes', async () => {
    const error = await failure(call('stream::set', item('big', { data: 'x'.repeat(200) })))
    assert.deepEqual({ code: error.code, message: error.message }, { code: 'VALUE_TOO_LARGE', message: 'value of 202 bytes exceeds max_item_bytes 100' })
    assert.equal((await failure(call('stream::update', item('big', { ops: [{ type: 'set', value: 'y'.repeat(200) }] })))).code, 'VALUE_TOO_LARGE')
    assert.equal(await call('stream::get', item('big')), undefined)
  })
})

describe('custom streams, stream triggers and join/leave hooks over svc-sdk', () => {
  let test: TestEngine
  let client: SvcClient
  const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })
  const received: Frame[] = []
  const custom = new Map<string, unknown>()
  const hookCalls: Array<{ hook: string; payload: Frame; metadata: unknown }> = []
  const triggerIds: string[] = []

  before(async () => {
    ;({ test } = await startStreamEngine())
    client = registerWorker(test.url, { workerName: 'stream-test' })
    client.registerFunction('t::on-change', async (event: Frame) => {
      received.push(event)
    })
    client.registerFunction('t::only-u2', async (event: Frame) => event.id === 'u2')
    triggerIds.push(client.registerTrigger({ type: 'stream', function_id: 't::on-change', config: { stream_name: 'presence', group_id: 'room-1', condition_function_id: 't::only-u2' } }).id)
    triggerIds.push(client.registerTrigger({ type: 'stream', function_id: 't::on-change', config: { stream_name: 'presence', group_id: 'room-2' } }).id)
    // A custom stream `shop` kept in a Map.
    const key = (p: Frame) => `${p.group_id}/${p.item_id}`
    client.registerFunction('stream::get(shop)', async (p: Frame) => custom.get(key(p)))
    client.registerFunction('stream::set(shop)', async (p: Frame) => {
      const old = custom.get(key(p)) ?? null
      custom.set(key(p), p.data)
      return { old_value: old, new_value: p.data }
    })
    client.registerFunction('stream::delete(shop)', async (p: Frame) => {
      if (!custom.has(key(p))) return {}
      const old = custom.get(key(p))
      custom.delete(key(p))
      return { old_value: old }
    })
    client.registerFunction('stream::list(shop)', async () => ['custom-list'])
    client.registerFunction('stream::list_groups(shop)', async () => {
      throw Object.assign(new Error('backend down'), { code: 'SHOP_DOWN' })
    })
    triggerIds.push(client.registerTrigger({ type: 'stream', function_id: 't::on-change', config: { stream_name: 'shop' } }).id)
    client.registerFunction('t::join-hook', async (payload: Frame, metadata: unknown) => {
      hookCalls.push({ hook: 'join', payload, metadata })
      return payload.id === 'banned' ? { unauthorized: true } : payload.id === 'broken' ? Promise.reject(new Error('hook broke')) : { unauthorized: 'no' }
    })
    client.registerFunction('t::leave-hook', async (payload: Frame) => {
      hookCalls.push({ hook: 'leave', payload, metadata: undefined })
    })
    client.registerFunction('t::false', async () => false)
    triggerIds.push(client.registerTrigger({ type: 'stream:join', function_id: 't::join-hook', config: { stream_name: 'presence' }, metadata: { m: 1 } }).id)
    triggerIds.push(client.registerTrigger({ type: 'stream:join', function_id: 't::join-hook', config: { stream_name: 'presence', group_id: 'gated', condition_function_id: 't::false' } }).id)
    triggerIds.push(client.registerTrigger({ type: 'stream:leave', function_id: 't::leave-hook', config: { group_id: 'room-1' } }).id)
    await waitFor(async () => {
      try {
        await call('stream::list', { stream_name: 'shop', group_id: 'x' })
        return (await call('stream::list', { stream_name: 'shop', group_id: 'x' }) as unknown[])[0] === 'custom-list'
      } catch {
        return false
      }
    }, 'the condition')
    await bindingsSettled(test.engine, triggerIds)
  })
  after(async () => {
    await client.shutdown()
    await test.stop()
  })

  it('stream triggers receive create/update/delete in commit order with group filter and condition (§6.4)', async () => {
    received.length = 0
    for (let i = 0; i < 20; i++) await call('stream::set', { stream_name: 'presence', group_id: 'room-2', item_id: 'a', data: i })
    await call('stream::delete', { stream_name: 'presence', group_id: 'room-2', item_id: 'a' })
    await call('stream::set', item('u1', { data: 1 }))
    await call('stream::set', item('u2', { data: 2 }))
    await call('stream::send', { stream_name: 'presence', group_id: 'room-2', type: 'typing', data: { x: 1 }, id: 'a' })
    await waitFor(() => received.length >= 23, 'received.length >= 23')
    const room2 = received.filter((e) => e.groupId === 'room-2')
    assert.deepEqual(room2.map((e) => e.event.type), ['create', ...Array(19).fill('update'), 'delete', 'event'])
    assert.deepEqual(room2.slice(0, 20).map((e) => e.event.data), Array.from({ length: 20 }, (_, i) => i))
    assert.deepEqual(room2[21], { ...room2[21], type: 'stream', streamName: 'presence', groupId: 'room-2', id: 'a', event: { type: 'event', event: { type: 'typing', data: { x: 1 } } } })
    assert.equal(typeof room2[0]!.timestamp, 'number')
    const room1 = received.filter((e) => e.groupId === 'room-1')
    assert.deepEqual(room1.map((e) => e.id), ['u2'], 'the condition let only u2 through')
  })

  it('custom streams: built-in ops call stream::<op>(<name>); events fire from their results; errors pass through', async () => {
    received.length = 0
    assert.deepEqual(await call('stream::set', { stream_name: 'shop', group_id: 'g', item_id: 'i', data: { n: 1 } }), { old_value: null, new_value: { n: 1 } })
    assert.deepEqual(custom.get('g/i'), { n: 1 })
    assert.deepEqual(await call('stream::get', { stream_name: 'shop', group_id: 'g', item_id: 'i' }), { n: 1 })
    assert.deepEqual(await call('stream::update', { stream_name: 'shop', group_id: 'g', item_id: 'i', ops: [{ type: 'increment', path: 'n' }] }), { old_value: { n: 1 }, new_value: { n: 2 } })
    assert.deepEqual(custom.get('g/i'), { n: 2 })
    assert.deepEqual(await call('stream::list', { stream_name: 'shop', group_id: 'g' }), ['custom-list'])
    assert.deepEqual(await failure(call('stream::list_groups', { stream_name: 'shop' })).then((e) => e.code), 'SHOP_DOWN')
    assert.deepEqual(await call('stream::delete', { stream_name: 'shop', group_id: 'g', item_id: 'i' }), { old_value: { n: 2 } })
    assert.deepEqual(await call('stream::delete', { stream_name: 'shop', group_id: 'g', item_id: 'i' }), {})
    // A marker after them: the trigger delivers in order, so anything wrongly fired came before it.
    await call('stream::set', { stream_name: 'shop', group_id: 'g', item_id: 'marker', data: 'm' })
    await waitFor(() => received.some((e) => e.id === 'marker'), 'the marker event')
    custom.delete('g/marker')
    assert.deepEqual(received.filter((e) => e.id !== 'marker').map((e) => [e.event.type, e.event.data]), [['create', { n: 1 }], ['update', { n: 2 }], ['delete', { n: 2 }]])
    // Nothing reached the adapter.
    assert.deepEqual(await test.engine.inject({ function_id: 'stream::list_all', data: {} }).then((r: any) => r.streams.filter((s: any) => s.stream_name === 'shop')), [])
  })

  it('join hooks: run before the join with the §6.5 payload and metadata; {unauthorized: true} and failures refuse; conditions skip', async () => {
    const socket = await StreamSocket.open(test.engine.listenUrls('svc-stream')[0]!)
    hookCalls.length = 0
    socket.join('s1', 'presence', 'room-1', 'u1')
    const sync = await socket.next((f) => f.subscriptionId === 's1')
    assert.deepEqual(sync.event, { type: 'sync', data: 1 })
    assert.deepEqual(hookCalls[0], { hook: 'join', payload: { subscription_id: 's1', stream_name: 'presence', group_id: 'room-1', id: 'u1', context: null }, metadata: { m: 1 } })
    socket.join('s2', 'presence', 'room-1', 'banned')
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 's2')).event, { type: 'unauthorized' })
    socket.join('s3', 'presence', 'room-1', 'broken')
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 's3')).event, { type: 'unauthorized' })
    socket.join('s4', 'presence', 'gated')
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 's4')).event, { type: 'sync', data: [] })
    // A refused subscription receives nothing more.
    await call('stream::set', item('banned', { data: 'x' }))
    await call('stream::set', item('u1', { data: 'y' }))
    await socket.next((f) => f.subscriptionId === 's1' && f.event.type === 'update')
    assert.equal(socket.frames.filter((f) => f.subscriptionId === 's2').length, 1)
    // Leave hooks: explicit leave, then every open subscription at close.
    socket.leave('s1', 'presence', 'room-1')
    await waitFor(() => hookCalls.some((c) => c.hook === 'leave' && c.payload.subscription_id === 's1'), "hookCalls.some((c) => c.hook === 'leave' && c.payload.subscription_id === 's1')")
    socket.join('s5', 'presence', 'room-1')
    await socket.next((f) => f.subscriptionId === 's5')
    socket.close()
    await waitFor(() => hookCalls.some((c) => c.hook === 'leave' && c.payload.subscription_id === 's5'), "hookCalls.some((c) => c.hook === 'leave' && c.payload.subscription_id === 's5')")
    assert.equal(hookCalls.filter((c) => c.hook === 'leave').length, 2, 'the leave hook filters on room-1; s4 (gated) is not reported')
  })
})

describe('client WebSocket (builtins.md §6.6)', () => {
  let test: TestEngine
  let worker: StreamWorker
  let url: string
  const call = (function_id: string, data: unknown) => test.engine.inject({ function_id, data })
  before(async () => {
    ;({ test, worker } = await startStreamEngine())
    url = worker.urls[0]!
  })
  after(() => test.stop())

  it('reports its ws URL as listen_urls', () => {
    assert.match(url, /^ws:\/\/127\.0\.0\.1:\d+$/)
    assert.deepEqual(test.engine.listenUrls('svc-stream'), [url])
  })

  it('join → sync, then create/update/delete in order; id subscriptions; send without id; leave', async () => {
    await call('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'a', data: 'A' })
    const socket = await StreamSocket.open(url + '/any/path')
    socket.join('all', 'docs', 'g')
    socket.join('just-b', 'docs', 'g', 'b')
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 'all')).event, { type: 'sync', data: ['A'] })
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 'just-b')).event, { type: 'sync', data: null })
    await call('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'b', data: 1 })
    await call('stream::update', { stream_name: 'docs', group_id: 'g', item_id: 'b', ops: [{ type: 'increment' }] })
    await call('stream::delete', { stream_name: 'docs', group_id: 'g', item_id: 'b' })
    await call('stream::set', { stream_name: 'docs', group_id: 'other', item_id: 'b', data: 1 })
    await call('stream::send', { stream_name: 'docs', group_id: 'g', type: 'ping', data: 1 })
    await call('stream::send', { stream_name: 'docs', group_id: 'g', type: 'ping-b', data: 2, id: 'b' })
    await socket.next((f) => f.subscriptionId === 'all' && f.event.type === 'event' && f.event.event.type === 'ping-b')
    await socket.next((f) => f.subscriptionId === 'just-b' && f.event.type === 'event' && f.event.event.type === 'ping-b')
    const of = (sid: string) => socket.frames.filter((f) => f.subscriptionId === sid).slice(1).map((f) => [f.event.type, f.event.data ?? f.event.event])
    assert.deepEqual(of('all'), [['create', 1], ['update', 2], ['delete', 2], ['event', { type: 'ping', data: 1 }], ['event', { type: 'ping-b', data: 2 }]])
    assert.deepEqual(of('just-b'), [['create', 1], ['update', 2], ['delete', 2], ['event', { type: 'ping-b', data: 2 }]])
    const frame = socket.frames.find((f) => f.subscriptionId === 'all' && f.event.type === 'create')!
    assert.deepEqual(Object.keys(frame).sort(), ['event', 'groupId', 'id', 'streamName', 'subscriptionId', 'timestamp', 'type'])
    socket.leave('all', 'docs', 'g')
    let round = 0
    await waitFor(async () => {
      const before = socket.frames.length
      await call('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'c', data: ++round })
      // A marker after it that just-b hears: a frame of 'all' for c would have come no later.
      await call('stream::set', { stream_name: 'docs', group_id: 'g', item_id: 'b', data: round })
      await socket.next((f) => f.subscriptionId === 'just-b' && f.event.data === round, 5000, before)
      return socket.frames.slice(before).every((f) => f.subscriptionId !== 'all')
    }, "no more frames for 'all' after leave")
    socket.close()
  })

  it('a reconnecting client joins again and re-syncs', async () => {
    const first = await StreamSocket.open(url)
    first.join('s', 'rejoin', 'g')
    await first.next((f) => f.event.type === 'sync')
    await call('stream::set', { stream_name: 'rejoin', group_id: 'g', item_id: 'x', data: 1 })
    await first.next((f) => f.event.type === 'create')
    first.socket.terminate()
    await call('stream::set', { stream_name: 'rejoin', group_id: 'g', item_id: 'y', data: 2 })
    const second = await StreamSocket.open(url)
    second.join('s', 'rejoin', 'g')
    assert.deepEqual((await second.next((f) => f.event.type === 'sync')).event.data, [1, 2])
    await call('stream::set', { stream_name: 'rejoin', group_id: 'g', item_id: 'z', data: 3 })
    assert.equal((await second.next((f) => f.event.type === 'create')).id, 'z')
    second.close()
  })

  it('a slow client is closed with 1013 while a fast one keeps receiving everything', async () => {
    await worker.applySettings({ port: 0, adapter: { name: 'memory' }, client_buffer_messages: 8 })
    const fast = await StreamSocket.open(url)
    const slow = await StreamSocket.open(url)
    fast.join('f', 'load', 'g')
    slow.join('s', 'load', 'g')
    await fast.next((f) => f.event.type === 'sync')
    await slow.next((f) => f.event.type === 'sync')
    // The slow client stops reading; its unsent frames pile up on the server.
    slow.pause()
    const big = 'x'.repeat(256 * 1024)
    const rounds = 80
    for (let i = 0; i < rounds; i++) {
      await call('stream::set', { stream_name: 'load', group_id: 'g', item_id: `i${i}`, data: { i, big } })
      // The fast client reads each event as it comes (it shares this process's event loop).
      await fast.next((f) => f.event.type === 'create' && f.event.data.i === i, 10_000, fast.frames.length - 1)
    }
    assert.equal(fast.frames.filter((f) => f.event.type === 'create').length, rounds, 'the fast client got every event')
    assert.equal(fast.closeCode, undefined)
    slow.resume()
    assert.equal(await slow.closed(30_000), 1013)
    assert.match(slow.closeReason, /client_buffer_messages/)
    assert.ok(slow.frames.length < rounds, `the slow client got ${slow.frames.length} frames before it was closed`)
    fast.close()
    await worker.applySettings({ port: 0, adapter: { name: 'memory' } })
  })

  /** A group whose sync frame is about 1 MiB (16 items of 64 KiB). */
  async function bigGroup(stream: string): Promise<void> {
    for (let i = 0; i < 16; i++) await call('stream::set', { stream_name: stream, group_id: 'g', item_id: `i${i}`, data: 'x'.repeat(64 * 1024) })
  }

  it('a client that stops reading and joins a 1 MiB group again and again is closed with 1013 (client_buffer_bytes); others keep receiving; nothing of it is kept', async () => {
    await worker.applySettings({ port: 0, adapter: { name: 'memory' }, client_buffer_bytes: 4 * 1024 * 1024 })
    await bigGroup('heavy')
    const fast = await StreamSocket.open(url)
    fast.join('f', 'heavy', 'g')
    await fast.next((f) => f.event.type === 'sync')
    const closedBefore = worker.clientStats.slow_clients_closed
    const slow = await StreamSocket.open(url)
    slow.pause()
    // 100 joins stay below the 1024 unsent messages (client_buffer_messages) and the 256 client
    // messages that may wait to be handled; only the bytes bound can close this client.
    for (let i = 0; i < 100; i++) slow.join(`s${i}`, 'heavy', 'g')
    await waitFor(() => worker.clientStats?.slow_clients_closed === closedBefore + 1, 'worker.clientStats?.slow_clients_closed === closedBefore + 1', 30_000)
    await call('stream::set', { stream_name: 'heavy', group_id: 'g', item_id: 'after', data: 1 })
    assert.equal((await fast.next((f) => f.event.type === 'create')).id, 'after', 'the fast client keeps receiving')
    // Nothing of the slow client is left on the server: only the fast client and its subscription.
    const held = worker.clientStats
    assert.deepEqual({ ...held, unsent_bytes: 0 }, { clients: 1, subscriptions: 1, groups: 1, unsent_messages: held.unsent_messages, unsent_bytes: 0, slow_clients_closed: closedBefore + 1 })
    assert.ok(held.unsent_bytes < 1024 * 1024, `${held.unsent_bytes} bytes unsent`)
    // Once it reads again it gets what had reached its socket, then the close frame.
    slow.resume()
    assert.equal(await slow.closed(30_000), 1013)
    assert.match(slow.closeReason, /client_buffer_bytes/)
    const syncs = slow.frames.filter((f) => f.event.type === 'sync').length
    assert.ok(syncs < 50, `the slow client got ${syncs} syncs before the close frame`)
    fast.close()
    await waitFor(() => worker.clientStats.clients === 0, 'worker.clientStats.clients === 0')
    assert.deepEqual(worker.clientStats, { clients: 0, subscriptions: 0, groups: 0, unsent_messages: 0, unsent_bytes: 0, slow_clients_closed: closedBefore + 1 })
    await worker.applySettings({ port: 0, adapter: { name: 'memory' } })
  })

  it('a client that stops reading and re-joins one subscription has one sync queued, not one per join', async () => {
    await bigGroup('rejoin-big')
    await call('stream::set', { stream_name: 'rejoin-small', group_id: 'g', item_id: 'a', data: 1 })
    const client = await StreamSocket.open(url)
    client.pause()
    for (let i = 0; i < 200; i++) client.join('s', 'rejoin-big', 'g')
    client.join('done', 'rejoin-small', 'g')
    // The last join was handled: the replaced subscriptions' syncs left the queue with them.
    await waitFor(() => worker.clientStats?.subscriptions === 2, 'worker.clientStats?.subscriptions === 2', 30_000)
    assert.ok(worker.clientStats.unsent_bytes < 4 * 1024 * 1024, `${worker.clientStats.unsent_bytes} bytes unsent`)
    client.resume()
    await client.next((f) => f.subscriptionId === 'done' && f.event.type === 'sync', 30_000)
    const syncs = client.frames.filter((f) => f.subscriptionId === 's' && f.event.type === 'sync')
    assert.ok(syncs.length < 50, `${syncs.length} syncs of 1 MiB reached the client for 200 joins`)
    assert.equal(syncs.at(-1)!.event.data.length, 16)
    assert.equal(client.closeCode, undefined)
    client.close()
  })

  it('hostile frames are ignored; oversized frames close only that client', async () => {
    const socket = await StreamSocket.open(url)
    const raw = socket.socket
    raw.send('')
    raw.send('not json')
    raw.send(Buffer.from([0xff, 0xfe, 0x00, 0xd8]), { binary: true })
    raw.send('{"type":"join","data":{"subscriptionId":"\\ud800","streamName":"\\udc00x","groupId":"g"}}')
    raw.send('['.repeat(20_000) + ']'.repeat(20_000))
    raw.send(JSON.stringify({ type: 'join', data: { subscriptionId: 1 } }))
    raw.send(JSON.stringify({ type: 'join', data: null }))
    raw.send(JSON.stringify({ type: 'leave', data: { subscriptionId: 'never-joined' } }))
    raw.send(JSON.stringify({ type: 'join', data: { subscriptionId: 'ok', streamName: 'hostile', groupId: 'g' } }), { binary: true })
    assert.deepEqual((await socket.next((f) => f.subscriptionId === 'ok')).event, { type: 'sync', data: [] })
    const lone = await socket.next((f) => f.subscriptionId === '\ud800')
    assert.equal(lone.streamName, '\ufffdx')
    const huge = await StreamSocket.open(url)
    huge.socket.send('x'.repeat(1024 * 1024))
    assert.equal(await huge.closed(), 1009)
    assert.equal(socket.closeCode, undefined)
    socket.join('after', 'hostile', 'g')
    await socket.next((f) => f.subscriptionId === 'after')
    socket.close()
  })

  it('a client joining more than 4096 subscriptions is closed with 1008; others are unaffected', async () => {
    const greedy = await StreamSocket.open(url)
    const other = await StreamSocket.open(url)
    // In batches below the 256 waiting messages a client may have.
    for (let start = 0; start < 4096; start += 128) {
      for (let i = start; i < start + 128; i++) greedy.join(`s${i}`, 'greedy', `g${i % 7}`)
      await greedy.next((f) => f.subscriptionId === `s${start + 127}`)
    }
    assert.equal(greedy.closeCode, undefined)
    greedy.join('one-too-many', 'greedy', 'g0')
    assert.equal(await greedy.closed(20_000), 1008)
    assert.match(greedy.closeReason, /more than 4096 subscriptions/)
    other.join('o', 'greedy', 'g1')
    await other.next((f) => f.subscriptionId === 'o' && f.event.type === 'sync')
    other.close()
  })

  it('plain HTTP requests get 426', async () => {
    const response = await fetch(url.replace('ws:', 'http:'))
    assert.equal(response.status, 426)
  })
})

describe('client authentication (§6.6)', () => {
  let test: TestEngine
  let client: SvcClient
  const inputs: Frame[] = []
  before(async () => {
    ;({ test } = await startStreamEngine({ settings: { auth_function: 't::auth', auth_timeout_ms: 300 } }))
    client = registerWorker(test.url, { workerName: 'auth-test' })
    client.registerFunction('t::auth', async (input: Frame) => {
      inputs.push(input)
      const token = input.query_params.token?.[0]
      if (token === 'good') return { context: { user_id: 'u1' } }
      if (token === 'no-context') return {}
      if (token === 'slow') return new Promise((resolve) => setTimeout(() => resolve({}), 2000))
      if (token === 'string') return 'yes'
      if (token === 'array') return []
      throw new Error('bad token')
    })
    client.registerFunction('t::join', async (payload: Frame) => {
      inputs.push({ join: payload })
    })
    client.registerTrigger({ type: 'stream:join', function_id: 't::join', config: {} })
    await waitFor(async () => {
      try {
        await test.engine.inject({ function_id: 't::auth', data: { query_params: { token: ['good'] } } })
        return true
      } catch {
        return false
      }
    }, 'the condition')
    inputs.length = 0
  })
  after(async () => {
    await client.shutdown()
    await test.stop()
  })

  it('accepts with the exact auth input and passes its context to join hooks', async () => {
    const url = test.engine.listenUrls('svc-stream')[0]!
    const socket = await StreamSocket.open(`${url}/room/7?token=good&tag=a&tag=b`, { headers: { cookie: 'sid=abc' } })
    const input = inputs[0]!
    assert.deepEqual(Object.keys(input).sort(), ['addr', 'headers', 'path', 'query_params'])
    assert.match(input.addr, /^127\.0\.0\.1:\d+$/)
    assert.equal(Number(input.addr.split(':')[1]), (socket.socket as any)._socket.localPort)
    assert.equal(input.path, '/room/7')
    assert.deepEqual(input.query_params, { token: ['good'], tag: ['a', 'b'] })
    assert.equal(input.headers.cookie, 'sid=abc')
    assert.equal(input.headers.upgrade, 'websocket')
    socket.join('s', 'secure', 'g')
    await socket.next((f) => f.event.type === 'sync')
    assert.deepEqual(inputs[1], { join: { subscription_id: 's', stream_name: 'secure', group_id: 'g', id: null, context: { user_id: 'u1' } } })
    socket.close()
    const bare = await StreamSocket.open(`${url}?token=no-context`)
    bare.close()
  })


  it('passes query parameters named __proto__, constructor or toString to the auth function as ordinary keys', async () => {
    const url = test.engine.listenUrls('svc-stream')[0]!
    const socket = await StreamSocket.open(`${url}/p?token=good&__proto__=x&constructor=y&toString=z&__proto__=w`)
    const input = inputs.at(-1)!
    assert.deepEqual(Object.entries(input.query_params), [['token', ['good']], ['__proto__', ['x', 'w']], ['constructor', ['y']], ['toString', ['z']]])
    socket.close()
  })
  it('refuses with HTTP 401 on error, timeout and results that are not objects', async () => {
    const url = test.engine.listenUrls('svc-stream')[0]!
    for (const token of ['bad', 'slow', 'string', 'array']) {
      const error = await StreamSocket.open(`${url}?token=${token}`).then(
        () => assert.fail(`token ${token} was accepted`),
        (e) => e,
      )
      assert.equal(error.status, 401, `token ${token}`)
    }
  })
})

describe('settings (§6.1, §2.7)', () => {
  it('an adapter change: open connections stay on the old adapter until they close, new ones use the new one', async () => {
    const { test, worker } = await startStreamEngine()
    try {
      const set = (data: unknown) => test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'sw', group_id: 'g', item_id: 'i', data } })
      await set('in memory')
      const old = await StreamSocket.open(worker.urls[0]!)
      await worker.applySettings({ port: 0, adapter: { name: 'builtin' } })
      await set('in stream.db')
      const fresh = await StreamSocket.open(worker.urls[0]!)
      old.join('o', 'sw', 'g')
      fresh.join('f', 'sw', 'g')
      assert.deepEqual((await old.next((f) => f.event.type === 'sync')).event.data, ['in memory'])
      assert.deepEqual((await fresh.next((f) => f.event.type === 'sync')).event.data, ['in stream.db'])
      await set('again')
      await fresh.next((f) => f.event.type === 'update' && f.event.data === 'again')
      await quietPeriod(50, 'a connection on the old adapter hears no change made on the new one')
      assert.equal(old.frames.length, 1, 'the old connection hears only its own adapter')
      old.close()
      await old.closed()
    } finally {
      await test.stop()
    }
  })


  it('a bad redis config is refused with a clear error and the previous settings stay; port rebinds; keepalive closes silent clients', async () => {
    const { test, worker } = await startStreamEngine({ worker: { pingIntervalMs: 50, idleTimeoutMs: 200 } })
    try {
      const before = worker.urls[0]!
      const error = await failure(worker.applySettings({ port: 0, adapter: { name: 'redis', config: { url: 'cache:6379' } } }))
      assert.equal(error.code, 'INVALID_ARGUMENTS')
      assert.match(error.message, /adapter\.config\.url must be a redis:\/\/ or rediss:\/\/ URL/)
      assert.deepEqual(worker.urls, [before])
      await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 's', group_id: 'g', item_id: 'i', data: 1 } })
      assert.equal((await failure(worker.applySettings({ port: 70000 }))).message, 'port must be an integer from 0 to 65535, got 70000')
      // Same adapter and a new port: the memory data stays.
      await worker.applySettings({ port: 0, host: '127.0.0.1', adapter: { name: 'in_memory' }, client_buffer_messages: 4 })
      assert.equal(await test.engine.inject({ function_id: 'stream::get', data: { stream_name: 's', group_id: 'g', item_id: 'i' } }), 1)
      // A client that never answers pings is closed.
      const socket = await StreamSocket.open(worker.urls[0]!, { autoPong: false } as never)
      await socket.closed(5000)
      assert.equal(worker.clientCount, 0)
    } finally {
      await test.stop()
    }
  })
})

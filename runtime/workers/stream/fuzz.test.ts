/**
 * Property test of the client WebSocket surface (builtins.md §6.6): random frames — JSON-ish
 * messages with wrong types, lone surrogates, huge names, deep nesting, random bytes, text or
 * binary — never crash the listener, and the engine keeps serving joins and functions afterwards;
 * a client that stops reading while joining and leaving a large group stays within
 * `client_buffer_bytes`, and closing it frees everything the worker held for it.
 */
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import fc from 'fast-check'
import type { TestEngine } from '../../../test/support/engine.ts'
import { startStreamEngine, StreamSocket } from './test-support/stream.ts'
import type { StreamWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

let test: TestEngine
let worker: StreamWorker
before(async () => {
  ;({ test, worker } = await startStreamEngine())
})
after(() => test.stop())

const loneSurrogate = fc.constantFrom('\ud800', '\udfff', '\udc00x', 'a\ud83d')
/** Names of up to 12,000 characters: four of them still fit a 64 KiB client frame. */
const huge = fc.integer({ min: 1000, max: 12_000 }).map((n) => 'é'.repeat(n / 2))
const name = fc.oneof(fc.string({ maxLength: 8 }), loneSurrogate, fc.constant(''), fc.integer(), fc.constant(null), fc.object({ maxDepth: 1 }), huge)
const message = fc.record(
  {
    type: fc.oneof(fc.constantFrom('join', 'leave', 'JOIN', ''), fc.integer(), fc.constant(null)),
    data: fc.oneof(
      fc.record({ subscriptionId: name, streamName: name, groupId: name, id: name }, { requiredKeys: [] }),
      fc.anything({ maxDepth: 3 }),
    ),
  },
  { requiredKeys: [] },
)
const deep = fc.integer({ min: 1, max: 30_000 }).map((n) => '['.repeat(n) + ']'.repeat(n))
const frame = fc.oneof(
  message.map((m) => ({ data: JSON.stringify(m), binary: false })),
  message.map((m) => ({ data: Buffer.from(JSON.stringify(m)), binary: true })),
  fc.uint8Array({ maxLength: 256 }).map((bytes) => ({ data: Buffer.from(bytes), binary: true })),
  fc.string({ maxLength: 64 }).map((text) => ({ data: text, binary: false })),
  deep.map((text) => ({ data: text, binary: false })),
)

it('random client frames never crash the listener; the engine keeps serving', async () => {
  const url = worker.urls[0]!
  await fc.assert(
    fc.asyncProperty(fc.array(frame, { minLength: 1, maxLength: 20 }), async (frames) => {
      const socket = await StreamSocket.open(url)
      for (const f of frames) socket.socket.send(f.data, { binary: f.binary })
      socket.join('probe', 'fuzz', 'g')
      const sync = await socket.next((f) => f.subscriptionId === 'probe' && f.event.type === 'sync')
      assert.equal(sync.streamName, 'fuzz')
      socket.socket.terminate()
    }),
    { numRuns: 60 },
  )
  assert.equal(await test.engine.inject({ function_id: 'stream::send', data: { stream_name: 'fuzz', group_id: 'g', type: 't', data: 1 } }), undefined)
  const after = await StreamSocket.open(url)
  after.join('s', 'fuzz', 'g')
  await after.next((f) => f.event.type === 'sync')
  after.close()
})

it('a client that stops reading and sends random joins and leaves of a large group stays within client_buffer_bytes; closing it frees everything', async () => {
  const bound = 1024 * 1024
  await worker.applySettings({ port: 0, adapter: { name: 'memory' }, client_buffer_bytes: bound })
  // A group whose sync is about 768 KiB (a single frame may exceed the bound), and a small one.
  for (let i = 0; i < 12; i++) await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'huge', group_id: 'g', item_id: `i${i}`, data: 'h'.repeat(64 * 1024) } })
  await test.engine.inject({ function_id: 'stream::set', data: { stream_name: 'tiny', group_id: 'g', item_id: 'a', data: 1 } })
  // The bound holds whenever the worker reads a sync (the moment a join adds a large frame).
  const sync = worker.sync.bind(worker)
  let reads = 0
  let largest = 0
  worker.sync = (...args) => {
    reads++
    largest = Math.max(largest, worker.clientStats.unsent_bytes)
    return sync(...args)
  }
  const op = fc.record({
    type: fc.constantFrom('join', 'join', 'join', 'leave'),
    subscriptionId: fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 1000, max: 12_000 }).map((n) => 'n'.repeat(n))),
    streamName: fc.constantFrom('huge', 'huge', 'tiny'),
  })
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 40 }), async (ops) => {
        const closedBefore = worker.clientStats.slow_clients_closed
        const socket = await StreamSocket.open(worker.urls[0]!)
        socket.pause()
        reads = 0
        const joins = ops.filter((o) => o.type === 'join').length
        for (const o of ops) {
          if (o.type === 'join') socket.join(o.subscriptionId, o.streamName, 'g')
          else socket.leave(o.subscriptionId, o.streamName, 'g')
        }
        await waitFor(() => reads === joins || worker.clientStats.slow_clients_closed > closedBefore, 'reads === joins || worker.clientStats.slow_clients_closed > closedBefore', 30_000)
        // ws's frame headers are on top of the frames' bytes.
        assert.ok(largest <= bound + 1024, `${largest} bytes unsent for one client`)
        socket.socket.terminate()
        await waitFor(() => worker.clientStats.clients === 0, 'worker.clientStats.clients === 0', 30_000)
        const left = worker.clientStats
        assert.deepEqual([left.subscriptions, left.groups, left.unsent_messages, left.unsent_bytes], [0, 0, 0, 0])
      }),
      { numRuns: 15 },
    )
  } finally {
    worker.sync = sync
    await worker.applySettings({ port: 0, adapter: { name: 'memory' } })
  }
})

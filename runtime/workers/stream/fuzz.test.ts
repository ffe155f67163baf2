/**
 * Property test of the client WebSocket surface (builtins.md §6.6): random frames — JSON-ish
 * messages with wrong types, lone surrogates, deep nesting, random bytes, text or binary — never
 * crash the listener, and the engine keeps serving joins and functions afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import fc from 'fast-check'
import type { TestEngine } from '../../../test/support/engine.ts'
import { startStreamEngine, StreamSocket } from './test-support/stream.ts'
import type { StreamWorker } from './worker.ts'

let test: TestEngine
let worker: StreamWorker
before(async () => {
  ;({ test, worker } = await startStreamEngine())
})
after(() => test.stop())

const loneSurrogate = fc.constantFrom('\ud800', '\udfff', '\udc00x', 'a\ud83d')
const name = fc.oneof(fc.string({ maxLength: 8 }), loneSurrogate, fc.constant(''), fc.integer(), fc.constant(null), fc.object({ maxDepth: 1 }))
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

/**
 * The stream listener against slow clients (builtins.md §6.6, issue 16 item 10): an upgrade
 * request whose head never completes is closed within the listener's timeouts; an upgraded
 * WebSocket is not a request and outlives them.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { TestEngine } from '../../../test/support/engine.ts'
import { slowClient } from '../../../test/support/slow-client.ts'
import { startStreamEngine, StreamSocket } from './test-support/stream.ts'

describe('svc-stream listener timeouts', () => {
  let test: TestEngine
  before(async () => {
    ;({ test } = await startStreamEngine({ worker: { timeouts: { headersTimeoutMs: 400, requestTimeoutMs: 400 } } }))
  })
  after(() => test?.stop())

  it('closes an upgrade request whose head trickles in and never completes; an open WebSocket client keeps working', async () => {
    const client = await StreamSocket.open(test.streamUrl)
    try {
      const { text, chunks } = await slowClient(test.streamUrl, { first: 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n', deadlineMs: 10_000 })
      assert.ok(text === '' || /^HTTP\/1\.1 408/.test(text), text)
      assert.ok(chunks > 0, 'the client was still sending when it was closed')
      // The client has now been connected for longer than the request timeout.
      client.join('s1', 'chat', 'room-1')
      await client.next((f) => f.subscriptionId === 's1' && f.event?.type === 'sync')
      assert.equal(client.closeCode, undefined)
    } finally {
      client.close()
    }
  })
})

/**
 * The worker listener against slow clients (protocol.md §2, issue 16 item 10): a connection that
 * has not completed its upgrade within `handshake_timeout_ms` is closed, also when the client
 * trickles header lines and never closes its own side; connected workers are not affected.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../test/support/engine.ts'
import { RawWorker } from '../../test/support/raw-worker.ts'
import { slowClient } from '../../test/support/slow-client.ts'

describe('worker listener handshake timeout (protocol.md §2)', () => {
  let t: TestEngine
  before(async () => {
    t = await startTestEngine({ builtins: [], listener: { handshake_timeout_ms: 400 } })
  })
  after(() => t?.stop())

  it('closes a connection whose upgrade request trickles in, and keeps a connected worker', async () => {
    const worker = await RawWorker.connect(t.url, { announce: { name: 'steady', runtime: 'node' } })
    try {
      const { text, chunks } = await slowClient(t.url, { first: 'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n', deadlineMs: 10_000 })
      assert.ok(text === '' || /^HTTP\/1\.1 408/.test(text), text)
      assert.ok(chunks > 0, 'the client was still sending when it was closed')
      // Connected for longer than the handshake timeout: still served.
      const answer = await worker.call('engine::workers::list', {})
      assert.ok((answer.result as { workers: Array<{ name: string }> }).workers.some((w) => w.name === 'steady'), JSON.stringify(answer))
    } finally {
      await worker.close()
    }
  })
})

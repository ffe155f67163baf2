/** The telemetry socket's bounds (protocol.md §10.2): never more than 1000 frames queued, drops counted. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Connector, Transport, TransportHandlers } from 'svc-protocol/transport'
import { encodeTelemetryFrame, otelUrlOf } from 'svc-helpers/observability'
import { MAX_QUEUED_FRAMES, TelemetrySocket } from '../src/observability/socket.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** A transport that opens only when told, recording binary frames. */
function fakeConnector(): { connector: Connector; open(): void; sent: Uint8Array[]; urls: string[] } {
  const sent: Uint8Array[] = []
  const urls: string[] = []
  let handlers: TransportHandlers | undefined
  let isOpen = false
  const transport: Transport = {
    send() {},
    sendBinary(data) {
      if (isOpen) sent.push(data)
    },
    get bufferedAmount() {
      return 0
    },
    get isOpen() {
      return isOpen
    },
    close() {
      isOpen = false
    },
    terminate() {},
    ping() {},
    setHandlers(h) {
      handlers = h
    },
  }
  return {
    connector: (url) => {
      urls.push(url)
      return transport
    },
    open() {
      isOpen = true
      handlers?.open?.()
    },
    sent,
    urls,
  }
}

const BACKOFF = { initialDelayMs: 10, maxDelayMs: 10, backoffMultiplier: 1, jitterFactor: 0, maxRetries: -1 }

describe('TelemetrySocket', () => {
  it('queues at most 1000 frames while disconnected, drops the oldest, then sends the rest in order on open', () => {
    const fake = fakeConnector()
    const socket = new TelemetrySocket({ url: 'ws://x/otel', connector: fake.connector, backoff: BACKOFF })
    for (let i = 0; i < 1500; i++) socket.send('LOGS', JSON.stringify({ i }))
    assert.deepEqual({ queued: socket.stats.queued, dropped: socket.stats.dropped }, { queued: MAX_QUEUED_FRAMES, dropped: 500 })
    fake.open()
    assert.equal(fake.sent.length, MAX_QUEUED_FRAMES)
    assert.equal(Buffer.from(fake.sent[0]!).toString(), 'LOGS{"i":500}')
    socket.send('OTLP', '{}')
    assert.equal(Buffer.from(fake.sent.at(-1)!).toString(), 'OTLP{}')
    socket.close()
    socket.send('MTRC', '{}')
    assert.equal(socket.stats.dropped, 501)
  })

  it('frames are the 4-byte prefix then UTF-8 JSON; the URL keeps its query', () => {
    assert.deepEqual([...encodeTelemetryFrame('MTRC', '{"é":1}')], [...Buffer.from('MTRC{"é":1}', 'utf8')])
    assert.equal(otelUrlOf('ws://h:1/?token=a'), 'ws://h:1/otel?token=a')
    assert.equal(otelUrlOf('wss://h/base/'), 'wss://h/base/otel')
  })
})

describe('TelemetrySocket against a peer that stops reading', () => {
  it('drops frames past the backlog cap instead of growing, and send stays fast', async () => {
    const { WebSocketServer } = await import('ws')
    const { connectWebSocket } = await import('svc-protocol/transport/ws')
    const { MAX_BUFFERED_BYTES } = await import('../src/observability/socket.ts')
    const wss = new WebSocketServer({ port: 0 })
    await new Promise((resolve) => wss.once('listening', resolve))
    // The "engine" accepts the socket and never reads from it again.
    wss.on('connection', (_ws, req) => req.socket.pause())
    const port = (wss.address() as { port: number }).port
    const socket = new TelemetrySocket({ url: `ws://127.0.0.1:${port}/otel`, connector: connectWebSocket, backoff: BACKOFF })
    await waitFor(() => socket.stats.connected, 'the telemetry socket connected')
    const frame = 'x'.repeat(1024 * 1024)
    const started = performance.now()
    const frames = Math.ceil((MAX_BUFFERED_BYTES * 3) / frame.length)
    for (let i = 0; i < frames; i++) {
      socket.send('LOGS', frame)
      await new Promise((r) => setImmediate(r))
    }
    const elapsed = performance.now() - started
    assert.ok(socket.stats.dropped > 0, 'frames beyond the backlog are dropped')
    assert.ok(socket.stats.sent + socket.stats.dropped === frames)
    assert.ok(elapsed < 5000, `sending took ${elapsed} ms`)
    socket.close()
    for (const client of wss.clients) client.terminate()
    wss.close()
  })
})

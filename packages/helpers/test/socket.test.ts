/** The telemetry socket's bounds (protocol.md §10.2): never more than 1000 frames queued, drops counted. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Connector, Transport, TransportHandlers } from 'svc-protocol/transport'
import { encodeTelemetryFrame, otelUrlOf } from 'svc-helpers/observability'
import { MAX_QUEUED_FRAMES, TelemetrySocket } from '../src/observability/socket.ts'

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

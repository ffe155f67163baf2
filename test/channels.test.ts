/**
 * Channels over real sockets (protocol.md §9, §11.3; issue 17 part 2): `engine::channels::create`,
 * the `/ws/channels/<id>?key=…&dir=…` route on every listener (RBAC ones too, without a session),
 * every close code (404, 1008, 1000, 1011, 1001, 1009), backpressure on the writer's socket, the
 * slow-consumer and keepalive rules on channel sockets, and the sweep under an injected clock.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import type { CreateChannelResult } from 'svc-protocol'
import { CHANNEL_BUFFER_BYTES, UNCLAIMED_TTL_MS } from '../runtime/engine/channels/index.ts'
import { createManualClock } from '../runtime/workers/shared/clock.ts'
import { ChannelSocket, channelUrl, upgradeAnswer } from './support/channel-client.ts'
import { startTestEngine, type TestEngine, type TestEngineOptions } from './support/engine.ts'
import { RawWorker } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

const engines: TestEngine[] = []
const sockets: ChannelSocket[] = []
after(async () => {
  for (const socket of sockets) socket.ws.terminate()
  await Promise.all(engines.map((e) => e.stop()))
})

async function engine(options: TestEngineOptions = {}): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], ...options })
  engines.push(e)
  return e
}

async function create(e: TestEngine, bufferSize?: number): Promise<CreateChannelResult> {
  return (await e.engine.inject({ function_id: 'engine::channels::create', data: bufferSize === undefined ? {} : { buffer_size: bufferSize } })) as CreateChannelResult
}

async function open(base: string, ref: CreateChannelResult['reader']): Promise<ChannelSocket> {
  const socket = await ChannelSocket.open(base, ref)
  sockets.push(socket)
  return socket
}

/** `n` binary items of `size` bytes, each filled with its index. */
function binaryItems(n: number, size: number): Buffer[] {
  return Array.from({ length: n }, (_, i) => Buffer.alloc(size, i % 256))
}

describe('engine::channels::create (§11.3)', () => {
  it('returns a writer and a reader ref that share the channel id, each with its own UUID key', async () => {
    const e = await engine()
    const { writer, reader } = await create(e)
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
    assert.equal(writer.direction, 'write')
    assert.equal(reader.direction, 'read')
    assert.equal(writer.channel_id, reader.channel_id)
    assert.match(writer.channel_id, uuid)
    assert.match(writer.access_key, uuid)
    assert.match(reader.access_key, uuid)
    assert.notEqual(writer.access_key, reader.access_key)
    assert.equal(e.engine.channels.get(writer.channel_id)?.bufferSize, 64)
  })

  it('refuses a buffer_size outside 1–1024 or not an integer with INVALID_ARGUMENTS; a worker on an RBAC listener may create channels', async () => {
    const e = await engine({ extraListeners: [{ rbac: { expose_functions: [] } }] })
    for (const bad of [0, 1025, 1.5, '8', -1]) {
      await assert.rejects(e.engine.inject({ function_id: 'engine::channels::create', data: { buffer_size: bad } }), (err: { code: string; message: string }) => {
        assert.equal(err.code, 'INVALID_ARGUMENTS')
        assert.match(err.message, /buffer_size must be an integer from 1 to 1024/)
        return true
      })
    }
    assert.equal((await create(e, 1024)).writer.direction, 'write')
    // engine::channels::create is in the infrastructure set (§13.3): allowed with no expose rule.
    const w = await RawWorker.connect(e.urls[1]!)
    try {
      const answer = await w.call('engine::channels::create', { buffer_size: 2 })
      assert.equal(answer.error, undefined, JSON.stringify(answer.error))
      assert.equal(answer.result.reader.direction, 'read')
    } finally {
      await w.close()
    }
  })
})

describe('channel data (§9)', () => {
  it('delivers text and binary items in order, then 1000 after the writer closes normally; the channel is removed', async () => {
    const e = await engine()
    const refs = await create(e, 4)
    const reader = await open(e.url, refs.reader)
    const writer = await open(e.url, refs.writer)
    const sent: Array<string | Buffer> = []
    for (let i = 0; i < 40; i++) sent.push(i % 3 === 0 ? `text ${i} ✓` : Buffer.from([i, 255 - i, 0]))
    for (const item of sent) writer.send(item)
    writer.ws.close(1000)
    assert.deepEqual(await reader.closed, { code: 1000, reason: '' })
    assert.deepEqual(reader.items, sent)
    assert.equal((await writer.closed).code, 1000)
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })

  it('keeps the items of a writer that finished before the reader connected, then ends with 1000', async () => {
    const e = await engine()
    const refs = await create(e)
    const writer = await open(e.url, refs.writer)
    writer.send('first')
    writer.send(Buffer.from('second'))
    writer.ws.close()
    // No close code at all (1005) is a normal end too.
    assert.equal((await writer.closed).code, 1005)
    const reader = await open(e.url, refs.reader)
    assert.deepEqual(await reader.closed, { code: 1000, reason: '' })
    assert.deepEqual(reader.items, ['first', Buffer.from('second')])
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })
})

describe('claims (§9)', () => {
  it('answers 404 `Channel not found` for an unknown id, a wrong key, a mismatched or missing dir, and does not upgrade', async () => {
    const e = await engine()
    const { writer, reader } = await create(e)
    const paths = [
      `/ws/channels/${crypto.randomUUID()}?key=${writer.access_key}&dir=write`,
      `/ws/channels/${writer.channel_id}?key=${reader.access_key}&dir=write`,
      `/ws/channels/${writer.channel_id}?key=${writer.access_key}&dir=read`,
      `/ws/channels/${writer.channel_id}?key=${writer.access_key}`,
      `/ws/channels/${writer.channel_id}?dir=write`,
      `/ws/channels/${writer.channel_id}?key=${writer.access_key.toUpperCase()}&dir=write`,
      `/ws/channels/${writer.channel_id}/x?key=${writer.access_key}&dir=write`,
      `/ws/channels/?key=${writer.access_key}&dir=write`,
    ]
    for (const path of paths) assert.deepEqual(await upgradeAnswer(e.url, path), { status: 404, body: 'Channel not found' }, path)
    // Both ends are still unclaimed and work.
    const url = new URL(channelUrl(e.url, writer))
    assert.equal((await upgradeAnswer(e.url, url.pathname + url.search)).status, 101)
  })

  it('accepts a second claim of an end and closes it at once with 1008; the first claim keeps working', async () => {
    const e = await engine()
    const refs = await create(e)
    const writer = await open(e.url, refs.writer)
    const reader = await open(e.url, refs.reader)
    for (const ref of [refs.writer, refs.reader]) {
      const second = new ChannelSocket(channelUrl(e.url, ref))
      sockets.push(second)
      await second.opened
      assert.equal((await second.closed).code, 1008)
    }
    writer.send('still here')
    writer.ws.close(1000)
    assert.equal((await reader.closed).code, 1000)
    assert.deepEqual(reader.items, ['still here'])
  })

  it('serves the route on an RBAC listener whose auth function refuses every session: the key is the credential', async () => {
    const e = await engine({ extraListeners: [{ rbac: { auth_function_id: 'auth::missing', expose_functions: [] } }] })
    const rbacUrl = e.urls[1]!
    // A worker connection there is refused by authentication…
    const refused = new ChannelSocket(rbacUrl)
    sockets.push(refused)
    assert.equal((await refused.closed).code, 1008)
    // …while both ends of a channel connect there without any session.
    const refs = await create(e)
    const reader = await open(rbacUrl, refs.reader)
    const writer = await open(rbacUrl, refs.writer)
    writer.send(Buffer.from([1, 2, 3]))
    writer.ws.close(1000)
    assert.equal((await reader.closed).code, 1000)
    assert.deepEqual(reader.items, [Buffer.from([1, 2, 3])])
    assert.deepEqual(await upgradeAnswer(rbacUrl, `/ws/channels/${refs.reader.channel_id}?key=wrong&dir=read`), { status: 404, body: 'Channel not found' })
  })
})

describe('ends (§9)', () => {
  it('a writer that is terminated gives the reader 1011 after the items it had sent', async () => {
    const e = await engine()
    const refs = await create(e)
    const reader = await open(e.url, refs.reader)
    const writer = await open(e.url, refs.writer)
    await writer.sendWritten('one')
    await waitFor(() => reader.items.length === 1, 'reader.items.length === 1')
    writer.ws.terminate()
    assert.equal((await reader.closed).code, 1011)
    assert.deepEqual(reader.items, ['one'])
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })

  it('a writer closing with any code but 1000 ends abnormally: 1011 to the reader, after every item', async () => {
    const e = await engine()
    for (const code of [1001, 4000]) {
      const refs = await create(e)
      const reader = await open(e.url, refs.reader)
      const writer = await open(e.url, refs.writer)
      writer.send('a')
      writer.send(Buffer.from('b'))
      writer.ws.close(code, 'bye')
      assert.equal((await reader.closed).code, 1011)
      assert.deepEqual(reader.items, ['a', Buffer.from('b')])
    }
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })

  it('a reader that goes away gets the writer closed with 1011; a writer claiming after that is closed with 1011 too', async () => {
    const e = await engine()
    const refs = await create(e)
    const reader = await open(e.url, refs.reader)
    const writer = await open(e.url, refs.writer)
    writer.send('x')
    await waitFor(() => reader.items.length === 1, 'reader.items.length === 1')
    reader.ws.close(1000)
    assert.equal((await writer.closed).code, 1011)
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')

    const late = await create(e)
    const early = await open(e.url, late.reader)
    early.ws.terminate()
    await waitFor(() => e.engine.channels.get(late.reader.channel_id)?.isClaimed('read') === true, "e.engine.channels.get(late.reader.channel_id)?.isClaimed('read') === true")
    const lateWriter = new ChannelSocket(channelUrl(e.url, late.writer))
    sockets.push(lateWriter)
    assert.equal((await lateWriter.closed).code, 1011)
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })
})

describe('backpressure (§9)', () => {
  it('stops reading the writer while buffer_size items wait before the reader connects; then every item arrives in order', async () => {
    const e = await engine()
    const bufferSize = 4
    const refs = await create(e, bufferSize)
    const writer = await open(e.url, refs.writer)
    // 12 MiB: far more than the loopback kernel buffers hold between the two processes' sockets.
    const items = binaryItems(192, 64 * 1024)
    for (const item of items) writer.send(item)
    const channel = e.engine.channels.get(refs.writer.channel_id)!
    await waitFor(() => channel.writerIsPaused, 'channel.writerIsPaused')
    // The kernel buffers fill and the writer's own buffer holds the rest: its sends stall.
    await waitFor(() => writer.ws.bufferedAmount > 0, 'writer.ws.bufferedAmount > 0', 10_000)
    const stalledAt = writer.ws.bufferedAmount
    // Items parsed from the socket read in hand when reading stopped still count: one 64 KiB read.
    assert.ok(channel.heldItems <= bufferSize + 1, `held ${channel.heldItems}`)
    // Still stalled after the engine's next socket events (a ping round trip proves it served others).
    const probe = await RawWorker.connect(e.url)
    await probe.call('engine::workers::list', {})
    await probe.close()
    // At most one more frame left the writer's buffer: a 64 KiB item and its 14-byte header (RFC 6455: 2 + 8 length + 4 mask).
    assert.ok(writer.ws.bufferedAmount > 0 && writer.ws.bufferedAmount >= stalledAt - (64 * 1024 + 14), `buffered ${writer.ws.bufferedAmount}, was ${stalledAt}`)
    assert.ok(channel.heldItems <= bufferSize + 1, `held ${channel.heldItems}`)

    const reader = await open(e.url, refs.reader)
    await waitFor(() => reader.items.length === items.length, 'reader.items.length === items.length', 30_000)
    writer.ws.close(1000)
    assert.equal((await reader.closed).code, 1000)
    assert.equal(reader.items.length, items.length)
    for (let i = 0; i < items.length; i++) assert.ok(items[i]!.equals(reader.items[i] as Buffer), `item ${i}`)
  })

  it('bounds the bytes held too: large items stop the writer at 1 MiB whatever buffer_size says', async () => {
    const e = await engine()
    const refs = await create(e, 1024)
    const writer = await open(e.url, refs.writer)
    const items = binaryItems(64, 256 * 1024)
    for (const item of items) writer.send(item)
    const channel = e.engine.channels.get(refs.writer.channel_id)!
    await waitFor(() => channel.writerIsPaused, 'channel.writerIsPaused')
    await waitFor(() => writer.ws.bufferedAmount > 0, 'writer.ws.bufferedAmount > 0', 10_000)
    assert.ok(channel.heldItems <= CHANNEL_BUFFER_BYTES / (256 * 1024) + 1, `held ${channel.heldItems}`)
    const reader = await open(e.url, refs.reader)
    writer.ws.close(1000)
    assert.equal((await reader.closed).code, 1000)
    assert.equal(reader.items.length, items.length)
  })

  it('a reader that stops reading is dropped by the slow-consumer rule (drain_timeout_ms); the writer gets 1011', async () => {
    const e = await engine({ listener: { drain_timeout_ms: 300 } })
    const refs = await create(e, 1024)
    const reader = await open(e.url, refs.reader)
    reader.tcp.pause()
    const writer = await open(e.url, refs.writer)
    for (const item of binaryItems(256, 64 * 1024)) writer.send(item)
    assert.equal((await writer.closed).code, 1011)
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })

  it('a writer held back by backpressure is not dropped as silent (idle_timeout_ms), however long the reader takes to connect', async () => {
    const e = await engine({ listener: { ping_interval_ms: 50, idle_timeout_ms: 150 } })
    const refs = await create(e, 1)
    const writer = await open(e.url, refs.writer)
    const items = binaryItems(128, 64 * 1024)
    for (const item of items) writer.send(item)
    await waitFor(() => writer.ws.bufferedAmount > 0, 'writer.ws.bufferedAmount > 0', 10_000)
    // Eight keepalive sweeps, well past idle_timeout_ms, while the engine does not read the writer.
    const pingsBefore = writer.pings
    await waitFor(() => writer.pings >= pingsBefore + 8, 'writer.pings >= pingsBefore + 8', 10_000)
    assert.ok(writer.isOpen)
    const reader = await open(e.url, refs.reader)
    writer.ws.close(1000)
    assert.equal((await reader.closed).code, 1000)
    assert.equal(reader.items.length, items.length)
  })
})

describe('frame size limits (§2, §9)', () => {
  it('a writer frame over max_message_bytes closes the writer with 1009 and the reader with 1011', async () => {
    const e = await engine({ listener: { max_message_bytes: 64 * 1024 } })
    const refs = await create(e)
    const reader = await open(e.url, refs.reader)
    const writer = await open(e.url, refs.writer)
    writer.send('fits')
    writer.send(Buffer.alloc(64 * 1024 + 1))
    assert.equal((await writer.closed).code, 1009)
    assert.equal((await reader.closed).code, 1011)
    assert.deepEqual(reader.items, ['fits'])
  })

  it('an item larger than the reader\'s listener takes is never sent: 1011 to the reader, 1009 to the writer', async () => {
    const e = await engine({ extraListeners: [{ max_message_bytes: 1024 }] })
    const refs = await create(e)
    const reader = await open(e.urls[1]!, refs.reader)
    const writer = await open(e.url, refs.writer)
    writer.send(Buffer.alloc(1024))
    writer.send(Buffer.alloc(1025))
    assert.equal((await reader.closed).code, 1011)
    assert.equal((await writer.closed).code, 1009)
    assert.deepEqual(reader.items, [Buffer.alloc(1024)])
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })
})

describe('lifetime (§9)', () => {
  it('removes a channel with an end unclaimed 5 minutes after creation at the next sweep: open sockets get 1001', async () => {
    const clock = createManualClock()
    const e = await engine({ clock })
    const stale = await create(e)
    const writer = await open(e.url, stale.writer)
    writer.send('never read')
    const claimedBoth = await create(e)
    const r = await open(e.url, claimedBoth.reader)
    const w = await open(e.url, claimedBoth.writer)
    clock.advance(UNCLAIMED_TTL_MS - 60_000)
    assert.equal(e.engine.channels.size, 2)
    clock.advance(60_000)
    assert.equal((await writer.closed).code, 1001)
    assert.equal(e.engine.channels.get(stale.writer.channel_id), undefined)
    assert.deepEqual(await upgradeAnswer(e.url, `/ws/channels/${stale.reader.channel_id}?key=${stale.reader.access_key}&dir=read`), { status: 404, body: 'Channel not found' })
    // A channel with both ends claimed is not swept, however old.
    clock.advance(UNCLAIMED_TTL_MS * 2)
    assert.ok(r.isOpen && w.isOpen)
    w.send('fresh')
    w.ws.close(1000)
    assert.equal((await r.closed).code, 1000)
    assert.deepEqual(r.items, ['fresh'])
  })

  it('closes every channel socket with 1001 when the engine stops', async () => {
    const e = await startTestEngine({ builtins: [] })
    const refs = await create(e)
    const reader = await ChannelSocket.open(e.url, refs.reader)
    await e.stop()
    assert.ok([1001, 1006].includes((await reader.closed).code))
    assert.equal(e.engine.channels.size, 0)
  })
})

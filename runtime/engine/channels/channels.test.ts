/**
 * The in-process end API of channels (`LocalWorker.channels`, protocol.md §9): a built-in worker
 * creates a channel, holds one end and a worker claims the other over its socket — the shape
 * svc-http's streamed request and response bodies take (builtins.md §3.4, §3.7). Also the
 * registry's own rules: claims by ref, the channel limit, removal by owner, the sweep.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { CreateChannelResult } from 'svc-protocol'
import { ChannelSocket } from '../../../test/support/channel-client.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { createManualClock } from '../../workers/shared/clock.ts'
import type { BuiltinContext, BuiltinWorker } from '../types.ts'
import { ChannelRegistry, UNCLAIMED_TTL_MS, type ChannelItem, type LocalChannelReader, type LocalChannels } from './index.ts'
import { waitFor } from '../../../test/support/wait.ts'
import { oldGenerationGrowth } from '../../../test/support/old-generation.ts'

/** A built-in that only keeps its context: its `worker.channels` is what svc-http will use. */
class ContextKeeper implements BuiltinWorker {
  readonly name = 'svc-channel-test'
  context!: BuiltinContext
  async start(context: BuiltinContext): Promise<void> {
    this.context = context
  }
  async applySettings(): Promise<void> {}
  async stop(): Promise<void> {}
}

let t: TestEngine
let channels: LocalChannels
const sockets: ChannelSocket[] = []

before(async () => {
  const keeper = new ContextKeeper()
  t = await startTestEngine({ builtins: [keeper] })
  channels = keeper.context.worker.channels
})
after(async () => {
  for (const socket of sockets) socket.ws.terminate()
  await t.stop()
})

async function open(ref: CreateChannelResult['reader'], base = t.url): Promise<ChannelSocket> {
  const socket = await ChannelSocket.open(base, ref)
  sockets.push(socket)
  return socket
}

/** Every item until the end, and how it ended. */
async function drain(reader: LocalChannelReader): Promise<{ items: ChannelItem[]; error?: { code: string; message: string } }> {
  const items: ChannelItem[] = []
  try {
    for (;;) {
      const item = await reader.next()
      if (item === undefined) return { items }
      items.push(item)
    }
  } catch (err) {
    return { items, error: err as { code: string; message: string } }
  }
}

/** Settles after the microtasks and immediates queued so far have run. */
const turn = () => new Promise((resolve) => setImmediate(resolve))

describe('an in-process writer, a worker reading over its socket', () => {
  it('sends text and binary items in order; close() ends the reader with 1000 after them', async () => {
    const pair = channels.create(2)
    const writer = channels.openWriter(pair.writer)
    const reader = await open(pair.reader)
    await writer.sendMessage('{"type":"set_status","status_code":201}')
    for (let i = 0; i < 10; i++) await writer.write(Buffer.from([i]))
    writer.close()
    assert.deepEqual(await reader.closed, { code: 1000, reason: '' })
    assert.deepEqual(reader.items, ['{"type":"set_status","status_code":201}', ...Array.from({ length: 10 }, (_, i) => Buffer.from([i]))])
    await waitFor(() => t.engine.channels.get(pair.writer.channel_id) === undefined, 't.engine.channels.get(pair.writer.channel_id) === undefined')
  })

  it('write waits for room: at most buffer_size items are held until the reader takes them', async () => {
    const pair = channels.create(2)
    const writer = channels.openWriter(pair.writer)
    const settled: number[] = []
    const writes = [0, 1, 2, 3].map((i) => writer.write(Buffer.from([i])).then(() => settled.push(i)))
    await turn()
    // No reader yet: two items fit, the other writes wait.
    assert.deepEqual(settled, [0, 1])
    assert.equal(t.engine.channels.get(pair.writer.channel_id)!.heldItems, 2)
    const reader = await open(pair.reader)
    await Promise.all(writes)
    assert.deepEqual(settled, [0, 1, 2, 3])
    writer.close()
    assert.equal((await reader.closed).code, 1000)
    assert.equal(reader.items.length, 4)
  })

  it('abort() ends the reader with 1011 after the items written before it', async () => {
    const pair = channels.create()
    const writer = channels.openWriter(pair.writer)
    const reader = await open(pair.reader)
    await writer.write(Buffer.from('partial'))
    writer.abort()
    assert.equal((await reader.closed).code, 1011)
    assert.deepEqual(reader.items, [Buffer.from('partial')])
    await assert.rejects(writer.write(Buffer.from('late')), { code: 'CHANNEL_CLOSED' })
  })

  it('the reader going away fails the writes with CHANNEL_CLOSED, waiting ones too', async () => {
    const pair = channels.create(1)
    const writer = channels.openWriter(pair.writer)
    const reader = await open(pair.reader)
    reader.tcp.pause()
    await writer.write(Buffer.alloc(16))
    reader.ws.terminate()
    // Bounded: before the fix, failed socket writes made room at once and this loop never yielded.
    await assert.rejects(
      (async () => {
        for (let i = 0; i < 100_000; i++) await writer.write(Buffer.alloc(16))
      })(),
      (err: { code: string; message: string }) => err.code === 'CHANNEL_CLOSED' && /the reader went away/.test(err.message),
    )
    await waitFor(() => t.engine.channels.get(pair.writer.channel_id) === undefined, 't.engine.channels.get(pair.writer.channel_id) === undefined')
  })

  it('an item larger than the reader\'s listener takes fails the writer with PAYLOAD_TOO_LARGE and the reader with 1011', async () => {
    const small = await startTestEngine({ builtins: [new ContextKeeper()], listener: { max_message_bytes: 1024 } })
    try {
      const local = small.engine.channels.localFor({})
      const pair = local.create()
      const writer = local.openWriter(pair.writer)
      const reader = await open(pair.reader, small.url)
      await writer.write(Buffer.alloc(1024))
      await writer.write(Buffer.alloc(1025))
      assert.equal((await reader.closed).code, 1011)
      await assert.rejects(writer.write(Buffer.alloc(1)), { code: 'PAYLOAD_TOO_LARGE' })
      assert.deepEqual(reader.items, [Buffer.alloc(1024)])
    } finally {
      await small.stop()
    }
  })
})

describe('a worker writing over its socket, an in-process reader', () => {
  it('iterates text and binary items in order until the writer closes normally', async () => {
    const pair = channels.create(1)
    const reader = channels.openReader(pair.reader)
    const writer = await open(pair.writer)
    writer.send('{"type":"set_headers","headers":{"content-type":"text/event-stream"}}')
    for (let i = 0; i < 20; i++) writer.send(Buffer.from(`data: ${i}\n\n`))
    writer.ws.close(1000)
    const items: ChannelItem[] = []
    for await (const item of reader) items.push(item)
    assert.deepEqual(items[0], { type: 'text', text: '{"type":"set_headers","headers":{"content-type":"text/event-stream"}}' })
    assert.deepEqual(
      items.slice(1).map((i) => (i.type === 'binary' ? Buffer.from(i.data).toString() : i.text)),
      Array.from({ length: 20 }, (_, i) => `data: ${i}\n\n`),
    )
    assert.equal((await writer.closed).code, 1000)
    await waitFor(() => t.engine.channels.get(pair.reader.channel_id) === undefined, 't.engine.channels.get(pair.reader.channel_id) === undefined')
  })

  it('a reader that does not take items stops the writer\'s socket (backpressure)', async () => {
    const pair = channels.create(2)
    const reader = channels.openReader(pair.reader)
    const writer = await open(pair.writer)
    for (let i = 0; i < 256; i++) writer.send(Buffer.alloc(64 * 1024, i))
    const channel = t.engine.channels.get(pair.reader.channel_id)!
    await waitFor(() => channel.writerIsPaused, 'channel.writerIsPaused')
    // Not read by the engine: the kernel buffers fill and the writer's sends stall.
    await waitFor(() => writer.ws.bufferedAmount > 0, 'writer.ws.bufferedAmount > 0', 10_000)
    assert.ok(channel.heldItems <= 3, `held ${channel.heldItems}`)
    writer.ws.close(1000)
    const { items, error } = await drain(reader)
    assert.equal(error, undefined)
    assert.equal(items.length, 256)
    items.forEach((item, i) => assert.ok(item.type === 'binary' && item.data[0] === i % 256 && item.data.length === 64 * 1024, `item ${i}`))
  })

  it('a writer that ends abnormally rejects next() with CHANNEL_CLOSED after the items it sent', async () => {
    const pair = channels.create()
    const reader = channels.openReader(pair.reader)
    const writer = await open(pair.writer)
    await writer.sendWritten('before')
    await waitFor(() => t.engine.channels.get(pair.reader.channel_id)!.heldItems === 1, 't.engine.channels.get(pair.reader.channel_id)!.heldItems === 1')
    writer.ws.terminate()
    const { items, error } = await drain(reader)
    assert.deepEqual(items, [{ type: 'text', text: 'before' }])
    assert.equal(error?.code, 'CHANNEL_CLOSED')
    assert.match(error!.message, /the writer ended abnormally/)
  })

  it('cancel() (or leaving a for-await loop early) closes the writer\'s socket with 1011', async () => {
    const pair = channels.create()
    const reader = channels.openReader(pair.reader)
    const writer = await open(pair.writer)
    writer.send('one')
    writer.send('two')
    for await (const item of reader) {
      assert.deepEqual(item, { type: 'text', text: 'one' })
      break
    }
    assert.equal((await writer.closed).code, 1011)
    await assert.rejects(reader.next(), { code: 'CHANNEL_CLOSED' })
    await waitFor(() => t.engine.channels.get(pair.reader.channel_id) === undefined, 't.engine.channels.get(pair.reader.channel_id) === undefined')
  })
})

describe('a worker writing over its socket, an in-process sink (attachReader)', () => {
  /** A sink that records what it is handed and keeps each item's `done` until the test releases it. */
  function recordingSink() {
    const items: ChannelItem[] = []
    const pending: Array<() => void> = []
    const ends: Array<{ normal: boolean; reason: string }> = []
    return {
      items,
      pending,
      ends,
      sink: {
        item: (item: ChannelItem, done: () => void) => {
          items.push(item)
          pending.push(done)
        },
        end: (normal: boolean, reason: string) => void ends.push({ normal, reason }),
      },
      release: () => {
        for (const done of pending.splice(0)) done()
      },
    }
  }

  it('hands items over as they arrive, counts each until its done is called (backpressure), then the end', async () => {
    const pair = channels.create(2)
    const recorded = recordingSink()
    channels.attachReader(pair.reader, recorded.sink)
    const writer = await open(pair.writer)
    for (let i = 0; i < 64; i++) writer.send(Buffer.alloc(16 * 1024, i))
    writer.send('last')
    const channel = t.engine.channels.get(pair.reader.channel_id)!
    // Nothing is done yet: the channel holds its two items (and the rest of the socket read in hand) and stops reading.
    await waitFor(() => channel.writerIsPaused, 'channel.writerIsPaused')
    const held = recorded.items.length
    assert.ok(held >= 2 && held <= 10, `handed ${held}`)
    while (recorded.items.length < 65) {
      recorded.release()
      await waitFor(() => recorded.pending.length > 0 || recorded.items.length === 65, 'recorded.pending.length > 0 || recorded.items.length === 65')
    }
    recorded.release()
    writer.ws.close(1000)
    await waitFor(() => recorded.ends.length === 1, 'recorded.ends.length === 1')
    assert.deepEqual(recorded.ends, [{ normal: true, reason: '' }])
    recorded.items.slice(0, 64).forEach((item, i) => assert.ok(item.type === 'binary' && item.data[0] === i, `item ${i}`))
    assert.deepEqual(recorded.items[64], { type: 'text', text: 'last' })
    assert.equal((await writer.closed).code, 1000)
    await waitFor(() => t.engine.channels.get(pair.reader.channel_id) === undefined, 't.engine.channels.get(pair.reader.channel_id) === undefined')
  })

  it('an abnormal writer end or a removal reaches end(false, reason); cancel() closes the writer with 1011 and ends nothing', async () => {
    const aborted = channels.create()
    const first = recordingSink()
    channels.attachReader(aborted.reader, first.sink)
    const writer = await open(aborted.writer)
    writer.send('before')
    await waitFor(() => first.items.length === 1, 'first.items.length === 1')
    first.release()
    writer.ws.terminate()
    await waitFor(() => first.ends.length === 1, 'first.ends.length === 1')
    assert.deepEqual(first.ends, [{ normal: false, reason: 'the writer ended abnormally' }])

    const removed = channels.create()
    const second = recordingSink()
    channels.attachReader(removed.reader, second.sink)
    channels.remove(removed.reader.channel_id)
    assert.deepEqual(second.ends, [{ normal: false, reason: 'channel removed' }])

    const cancelled = channels.create()
    const third = recordingSink()
    const attached = channels.attachReader(cancelled.reader, third.sink)
    const writer3 = await open(cancelled.writer)
    writer3.send('one')
    await waitFor(() => third.items.length === 1, 'third.items.length === 1')
    attached.cancel()
    attached.cancel()
    const closed = await writer3.closed
    assert.equal(closed.code, 1011)
    assert.match(closed.reason, /the reader went away/)
    assert.deepEqual(third.ends, [])
    third.release() // a done after the end changes nothing
    await waitFor(() => t.engine.channels.get(cancelled.reader.channel_id) === undefined, 't.engine.channels.get(cancelled.reader.channel_id) === undefined')
    assert.throws(() => channels.attachReader(aborted.writer, first.sink), { code: 'NOT_FOUND' })
  })
})

describe('claims and removal', () => {
  it('openReader/openWriter refuse a wrong key or direction with NOT_FOUND and a claimed end with CHANNEL_CLOSED', async () => {
    const pair = channels.create()
    assert.throws(() => channels.openReader({ ...pair.reader, access_key: pair.writer.access_key }), { code: 'NOT_FOUND', message: 'Channel not found' })
    assert.throws(() => channels.openReader(pair.writer), { code: 'NOT_FOUND' })
    assert.throws(() => channels.openWriter({ ...pair.writer, channel_id: crypto.randomUUID() }), { code: 'NOT_FOUND' })
    assert.throws(() => channels.openWriter(null as never), { code: 'NOT_FOUND' })
    const socket = await open(pair.writer)
    assert.throws(() => channels.openWriter(pair.writer), { code: 'CHANNEL_CLOSED' })
    const reader = channels.openReader(pair.reader)
    assert.throws(() => channels.openReader(pair.reader), { code: 'CHANNEL_CLOSED' })
    // An in-process claim counts like a socket's: a socket claiming the same end gets 1008.
    const second = new ChannelSocket(`${t.url}/ws/channels/${pair.reader.channel_id}?key=${pair.reader.access_key}&dir=read`)
    sockets.push(second)
    assert.equal((await second.closed).code, 1008)
    socket.ws.close(1000)
    assert.equal(await reader.next(), undefined)
  })

  it('remove() closes open sockets with 1001 and fails in-process ends with CHANNEL_CLOSED', async () => {
    const pair = channels.create()
    const writer = channels.openWriter(pair.writer)
    const reader = await open(pair.reader)
    await writer.write(Buffer.from('x'))
    channels.remove(pair.writer.channel_id)
    assert.equal((await reader.closed).code, 1001)
    await assert.rejects(writer.write(Buffer.from('y')), { code: 'CHANNEL_CLOSED' })
    assert.equal(t.engine.channels.get(pair.writer.channel_id), undefined)
    // Unused channels (a buffered handler never claims request_body) go the same way.
    const unused = channels.create()
    channels.remove(unused.reader.channel_id)
    channels.remove(unused.reader.channel_id)
    assert.equal(t.engine.channels.get(unused.reader.channel_id), undefined)
  })
})

describe('the registry', () => {
  it("lets a removed channel's objects die young: two channels per HTTP request do not fill the old generation", () => {
    // svc-http creates a request's `request_body` and `response` channels and removes them when
    // the exchange ends. Scavenges only (`gc({ type: 'minor' })`): with the channels in a `Map`,
    // its replaced hash tables kept every channel — and the request behind its reader — alive
    // until promoted (~32 MiB here; in the engine ~4.4 KB per HTTP request); with a CallIndex,
    // a few hundred KB.
    const registry = new ChannelRegistry()
    const open: string[] = []
    let n = 0
    const request = () => {
      for (let i = 0; i < 2; i++) {
        const { reader } = registry.create()
        // The request's objects, held by its response stream: about 1 KB.
        const exchange = { data: new Array<number>(120).fill(n++) }
        registry.attachReader(reader, { item: (_item, done) => void (exchange.data.length > 0 && done()), end: () => void exchange })
        open.push(reader.channel_id)
      }
      while (open.length > 128) registry.remove(open.shift()!)
    }
    const grown = oldGenerationGrowth(request, { perRound: 500 })
    while (open.length > 0) registry.remove(open.shift()!)
    assert.equal(registry.size, 0)
    assert.ok(grown < 8 * 1024 * 1024, `old generation grew by ${(grown / 1048576).toFixed(1)} MiB over 20,000 requests' channels`)
  })

  it('refuses a channel past its limit with TOO_MANY_CHANNELS, and removes what an owner created when asked', () => {
    const registry = new ChannelRegistry({ maxChannels: 2 })
    const owner = {}
    registry.create(1, owner)
    const other = registry.create(1)
    assert.throws(() => registry.create(1), { code: 'TOO_MANY_CHANNELS' })
    assert.throws(() => registry.create(0), { code: 'INVALID_ARGUMENTS' })
    registry.removeOwnedBy(owner)
    assert.equal(registry.size, 1)
    assert.ok(registry.get(other.reader.channel_id))
    registry.stop()
    assert.equal(registry.size, 0)
  })

  it('sweeps every 60 s, removing channels with an end unclaimed 5 minutes after creation; in-process ends see CHANNEL_CLOSED', async () => {
    const clock = createManualClock()
    const registry = new ChannelRegistry({ clock })
    registry.start()
    const stale = registry.create()
    const reader = registry.openReader(stale.reader)
    const claimed = registry.create()
    registry.openWriter(claimed.writer)
    registry.openReader(claimed.reader)
    clock.advance(60_000)
    const late = registry.create()
    clock.advance(UNCLAIMED_TTL_MS - 60_000 - 1)
    assert.equal(registry.size, 3)
    clock.advance(1)
    // The sweep at 5:00 removes the stale channel; the one created at 1:00 waits for the 6:00 sweep.
    assert.equal(registry.get(stale.reader.channel_id), undefined)
    await assert.rejects(reader.next(), (err: { code: string; message: string }) => err.code === 'CHANNEL_CLOSED' && /unclaimed for 5 minutes/.test(err.message))
    assert.ok(registry.get(late.reader.channel_id))
    clock.advance(60_000)
    assert.equal(registry.get(late.reader.channel_id), undefined)
    assert.ok(registry.get(claimed.reader.channel_id))
    registry.stop()
    assert.equal(clock.pending, 0)
  })
})

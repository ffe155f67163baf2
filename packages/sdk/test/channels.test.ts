/**
 * svc-sdk channels against the real engine with real sockets (sdk.md §9, protocol.md §9): refs
 * nested in payloads and results reach handlers and callers as live ends, text and binary items
 * arrive in order (binary in items of at most 64 KiB), Node streams keep the writer's memory
 * bounded behind a slow consumer, every abnormal end surfaces as an error, and a fast-check
 * property of item order and content over real channels.
 */
import assert from 'node:assert/strict'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { after, before, describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { ChannelReader, ChannelWriter } from '../src/channel.ts'
import { WorkerClient } from '../src/client.ts'
import { ChannelError, InvocationError } from '../src/errors.ts'
import { createChannel, extractChannelRefs, isChannelRef } from '../src/helpers.ts'
import { resolveOptions } from '../src/options.ts'
import { waitFor } from '../../../test/support/wait.ts'

const FRAME = 64 * 1024

function worker(t: TestContext | undefined, url: string, name: string): WorkerClient {
  const client = new WorkerClient(url, resolveOptions({ workerName: name, otel: { enabled: false } }, {}), { log: { warn: () => {} } })
  if (t !== undefined) t.after(() => client.shutdown())
  return client
}

async function engine(t: TestContext, listener: Parameters<typeof startTestEngine>[0] = {}): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], ...listener })
  t.after(() => e.stop())
  return e
}

/** `size` bytes where byte i is `(seed + i) % 251`: any reordering or loss shows. */
function pattern(size: number, seed = 0): Buffer {
  const bytes = Buffer.alloc(size)
  for (let i = 0; i < size; i++) bytes[i] = (seed + i) % 251
  return bytes
}

/** What a reader saw, in arrival order. */
type Seen = { text: string } | { bytes: Buffer }

/** Records every item of `reader` in arrival order (push listeners) and resolves at its end. */
function record(reader: ChannelReader): { seen: Seen[]; ended: Promise<unknown> } {
  const seen: Seen[] = []
  reader.onMessage((text) => seen.push({ text }))
  reader.onBinary((data) => seen.push({ bytes: Buffer.from(data) }))
  return { seen, ended: reader.next().then(() => undefined, (error: unknown) => error) }
}

describe('channel refs in payloads and results (sdk.md §9)', () => {
  it('a reader ref nested in a payload reaches the handler as a live reader: text and binary items in order, binary in ≤ 64 KiB items', async (t) => {
    const e = await engine(t)
    const producer = worker(t, e.url, 'producer')
    const consumer = worker(t, e.url, 'consumer')
    consumer.registerFunction('sink::consume', async (input: { job: { parts: [string, ChannelReader] } }) => {
      const [name, reader] = input.job.parts
      assert.ok(reader instanceof ChannelReader)
      const { seen, ended } = record(reader)
      const end = await ended
      return { name, end: end === undefined ? 'normal' : String(end), items: seen.map((s) => ('text' in s ? s.text : s.bytes.length)), bytes: Buffer.concat(seen.flatMap((s) => ('bytes' in s ? [s.bytes] : []))).toString('base64') }
    })
    const { writer, readerRef } = await producer.createChannel()
    assert.ok(isChannelRef(readerRef))
    const done = producer.trigger<unknown, { name: string; end: string; items: Array<string | number>; bytes: string }>({
      function_id: 'sink::consume',
      payload: { job: { parts: ['upload', readerRef] } },
    })
    const big = pattern(150 * 1024, 1)
    writer.sendMessage('begin')
    await writer.write(pattern(10, 2))
    await writer.write(big)
    writer.sendMessage('middle')
    await writer.sendBinary(pattern(FRAME, 3))
    await writer.write('tail')
    await writer.close()
    const result = await done
    assert.equal(result.name, 'upload')
    assert.equal(result.end, 'normal')
    assert.deepEqual(result.items, ['begin', 10, FRAME, FRAME, 150 * 1024 - 2 * FRAME, 'middle', FRAME, 4])
    assert.ok(Buffer.from(result.bytes, 'base64').equals(Buffer.concat([pattern(10, 2), big, pattern(FRAME, 3), Buffer.from('tail')])))
  })

  it('a handler gets a writer ref, returns a reader ref nested in its result: the caller reads a live reader; unused ends claim nothing', async (t) => {
    const e = await engine(t)
    const caller = worker(t, e.url, 'caller')
    const service = worker(t, e.url, 'service')
    service.registerFunction('report::render', async ({ out, unused }: { out: ChannelWriter; unused: ChannelReader }) => {
      assert.ok(out instanceof ChannelWriter)
      assert.ok(unused instanceof ChannelReader)
      const { writer, reader } = await service.createChannel(4)
      // Writes after the answer: the caller reads them through the returned ref.
      void (async () => {
        for (let i = 0; i < 3; i++) await writer.write(pattern(1000, i))
        await writer.close()
      })()
      out.sendMessage('rendering')
      await out.close()
      return { meta: { pages: 3 }, streams: [{ body: reader }] }
    })
    const side = await caller.createChannel()
    const idle = await caller.createChannel()
    const texts: string[] = []
    side.reader.onMessage((text) => texts.push(text))
    const sideEnd = side.reader.next()
    const result = await caller.trigger<unknown, { meta: { pages: number }; streams: Array<{ body: ChannelReader }> }>({
      function_id: 'report::render',
      payload: { out: side.writerRef, unused: idle.readerRef },
    })
    assert.deepEqual(result.meta, { pages: 3 })
    const body = result.streams[0]!.body
    assert.ok(body instanceof ChannelReader)
    assert.deepEqual(extractChannelRefs(JSON.parse(JSON.stringify(result))).map(([path]) => path), ['streams.0.body'])
    assert.ok((await body.readAll()).equals(Buffer.concat([pattern(1000, 0), pattern(1000, 1), pattern(1000, 2)])))
    assert.equal(await sideEnd, undefined)
    assert.deepEqual(texts, ['rendering'])
    // The reader the handler never used opened no socket: its end is still unclaimed.
    assert.equal(e.engine.channels.get(idle.readerRef.channel_id)?.isClaimed('read'), false)
    idle.writer.abort()
  })

  it('createChannel passes buffer_size and reports the engine\'s refusal; the helper is the same call', async (t) => {
    const e = await engine(t)
    const client = worker(t, e.url, 'maker')
    const channel = await createChannel(client, 3)
    assert.equal(e.engine.channels.get(channel.writerRef.channel_id)?.bufferSize, 3)
    assert.equal(e.engine.channels.get((await client.createChannel()).readerRef.channel_id)?.bufferSize, 64)
    await assert.rejects(client.createChannel(5000), (err: InvocationError) => err.code === 'INVALID_ARGUMENTS' && /buffer_size/.test(err.message))
  })
})

describe('Node streams (sdk.md §9)', () => {
  it('a slow consumer holds the writer back: its Writable and socket stay within about 1 MiB while the source waits, and every byte arrives in order', async (t) => {
    // A generous drain_timeout_ms: the consumer stops reading on purpose while the writer fills up.
    const e = await engine(t, { listener: { drain_timeout_ms: 120_000 } })
    const a = worker(t, e.url, 'a')
    const b = worker(t, e.url, 'b')
    const { writer, readerRef } = await a.createChannel(8)
    const reader = await materialised(b, readerRef)
    const total = 64 * 1024 * 1024
    const chunk = 256 * 1024
    let produced = 0
    let writerHeldMax = 0
    const sample = () => {
      writerHeldMax = Math.max(writerHeldMax, writer.stream.writableLength + writer.bufferedAmount)
    }
    const source = Readable.from(
      (function* () {
        for (let i = 0; produced < total; i++) {
          sample()
          produced += chunk
          yield pattern(chunk, i)
        }
      })(),
      { objectMode: false, highWaterMark: chunk },
    )
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let consumed = 0
    let index = 0
    let offset = 0
    let expected = pattern(chunk, 0)
    const sink = new Writable({
      highWaterMark: FRAME,
      write: (data: Buffer, _encoding, callback) => {
        void gate.then(() => {
          assert.ok(data.length <= FRAME, `an item of ${data.length} bytes`)
          for (let i = 0; i < data.length; i++) {
            if (data[i] !== expected[offset]) return callback(new Error(`byte ${consumed + i} differs`))
            if (++offset === chunk) {
              offset = 0
              expected = pattern(chunk, ++index)
            }
          }
          consumed += data.length
          // Slow: one item per turn of the event loop.
          setImmediate(callback)
        })
      },
    })
    const sent = pipeline(source, writer.stream)
    const received = pipeline(reader.stream, sink)
    // The reader holds its 1 MiB, the engine its channel's, the kernel buffers fill: the writer stalls.
    await waitFor(() => writer.stream.writableNeedDrain && writer.bufferedAmount >= 1024 * 1024, 'writer.stream.writableNeedDrain && writer.bufferedAmount >= 1024 * 1024', 30_000)
    sample()
    const producedWhenStalled = produced
    assert.ok(producedWhenStalled < total, `the source was held back (${producedWhenStalled} of ${total} bytes produced)`)
    release()
    await Promise.all([sent, received])
    assert.equal(consumed, total)
    assert.ok(writerHeldMax <= 1024 * 1024 + 2 * chunk + FRAME, `the writer held ${writerHeldMax} bytes at most`)
  })

  it('a Readable of an aborted channel emits the ChannelError; a destroyed Writable aborts its channel', async (t) => {
    const e = await engine(t)
    const a = worker(t, e.url, 'a')
    const { writer, reader } = await a.createChannel()
    await writer.write(pattern(100))
    writer.abort('upstream failed')
    const chunks: Buffer[] = []
    await assert.rejects(
      pipeline(
        reader.stream,
        new Writable({
          write: (data: Buffer, _encoding, callback) => {
            chunks.push(data)
            callback()
          },
        }),
      ),
      (err: ChannelError) => err instanceof ChannelError && err.code === 'CHANNEL_CLOSED' && err.close_code === 1011,
    )
    assert.ok(Buffer.concat(chunks).equals(pattern(100)), 'the items sent before the abort arrived')

    const second = await a.createChannel()
    const ended = assert.rejects(second.reader.readAll(), (err: ChannelError) => err.code === 'CHANNEL_CLOSED' && /writer ended abnormally/.test(err.message))
    const failed = new Promise((resolve) => second.writer.stream.once('error', resolve))
    second.writer.stream.write(pattern(10))
    second.writer.stream.destroy(new Error('disk read failed'))
    assert.match(String(await failed), /disk read failed/)
    await ended
  })
})

describe('abnormal ends (protocol.md §9)', () => {
  it('the reader going away fails the writer: write() rejects and the Writable emits CHANNEL_CLOSED', async (t) => {
    const e = await engine(t)
    const a = worker(t, e.url, 'a')
    const first = await a.createChannel(1)
    const got = first.reader.next()
    await first.writer.write(pattern(10))
    assert.ok(Buffer.from((await got)!).equals(pattern(10)))
    first.reader.close()
    await assert.rejects(
      (async () => {
        for (;;) await first.writer.write(pattern(FRAME))
      })(),
      (err: ChannelError) => err instanceof ChannelError && err.code === 'CHANNEL_CLOSED' && err.close_code === 1011 && /reader went away/.test(err.message),
    )

    const second = await a.createChannel(1)
    second.reader.close()
    const endless = Readable.from(
      (function* () {
        for (;;) yield pattern(FRAME)
      })(),
    )
    await assert.rejects(pipeline(endless, second.writer.stream), (err: ChannelError) => err instanceof ChannelError && err.code === 'CHANNEL_CLOSED')
  })

  it('a second claim of an end gets CHANNEL_CLOSED (1008); a wrong key NOT_FOUND; readAll past maxBytes CHANNEL_DATA_TOO_LARGE and the writer fails', async (t) => {
    const e = await engine(t)
    const a = worker(t, e.url, 'a')
    const b = worker(t, e.url, 'b')
    const { writer, readerRef } = await a.createChannel()
    const first = await materialised(b, readerRef)
    first.onMessage(() => {}) // claims the end
    await waitFor(() => e.engine.channels.get(readerRef.channel_id)?.isClaimed('read') === true, 'the first reader claimed its end', 5000, 5)
    const second = await materialised(b, readerRef)
    await assert.rejects(second.next(), (err: ChannelError) => err.code === 'CHANNEL_CLOSED' && err.close_code === 1008 && /claimed already/.test(err.message))

    const wrong = await materialised(b, { ...readerRef, access_key: 'not-the-key' })
    await assert.rejects(wrong.readAll(), (err: ChannelError) => err instanceof ChannelError && err.code === 'NOT_FOUND')

    // The writer goes on until the engine tells it the reader left.
    const writing = (async () => {
      for (let i = 0; ; i++) await writer.write(pattern(FRAME, i))
    })()
    await assert.rejects(first.readAll({ maxBytes: 3 * FRAME }), (err: ChannelError) => err.code === 'CHANNEL_DATA_TOO_LARGE' && /more than 196608 bytes/.test(err.message))
    await assert.rejects(writing, (err: ChannelError) => err.code === 'CHANNEL_CLOSED' && /reader went away/.test(err.message))
  })

  it('a client that shuts down ends its open channel ends: the other side sees CHANNEL_CLOSED', async (t) => {
    const e = await engine(t)
    const a = worker(undefined, e.url, 'a')
    const b = worker(t, e.url, 'b')
    const { writer, readerRef } = await a.createChannel()
    const reader = await materialised(b, readerRef)
    await writer.write('x')
    assert.deepEqual([...(await reader.next())!], [...Buffer.from('x')])
    const ended = assert.rejects(reader.next(), (err: ChannelError) => err.code === 'CHANNEL_CLOSED' && /writer ended abnormally/.test(err.message))
    await a.shutdown()
    await ended
    await assert.rejects(writer.write('late'), (err: ChannelError) => /the worker shut down/.test(err.message))
  })

  it('an engine that stops ends open channels: the reader and the writer get CHANNEL_CLOSED', async (t) => {
    const e = await startTestEngine({ builtins: [] })
    const a = worker(t, e.url, 'a')
    const { writer, reader } = await a.createChannel()
    await writer.write('x')
    assert.deepEqual([...(await reader.next())!], [...Buffer.from('x')])
    const readerEnd = assert.rejects(reader.next(), (err: ChannelError) => err.code === 'CHANNEL_CLOSED' && err.close_code === 1001)
    await waitFor(() => e.engine.channels.get(reader.channelId)?.isClaimed('read') === true, 'claimed', 5000, 5)
    await e.stop()
    await readerEnd
    await assert.rejects(writer.write('late'), (err: ChannelError) => err.code === 'CHANNEL_CLOSED')
  })
})

describe('item order over real channels (fast-check)', () => {
  let e: TestEngine
  let client: WorkerClient
  before(async () => {
    e = await startTestEngine({ builtins: [] })
    client = worker(undefined, e.url, 'fuzz')
  })
  after(async () => {
    await client.shutdown()
    await e.stop()
  })

  type Op = { text: string } | { bytes: Buffer; how: 'write' | 'sendBinary' | 'string' }
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 3, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }).map((text): Op => ({ text })) },
    { weight: 3, arbitrary: fc.tuple(fc.uint8Array({ maxLength: 64 }), fc.constantFrom<'write' | 'sendBinary'>('write', 'sendBinary')).map(([b, how]): Op => ({ bytes: Buffer.from(b), how })) },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: FRAME - 2, max: 3 * FRAME + 5 }), fc.nat(250)).map(([size, seed]): Op => ({ bytes: pattern(size, seed), how: 'write' })) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).map((s): Op => ({ bytes: Buffer.from(s), how: 'string' })) },
  )

  it('whatever the items, sizes, buffer size and ending: the reader gets them in order, binary cut at 64 KiB; an abort loses only a tail', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 16 }), fc.array(op, { maxLength: 20 }), fc.boolean(), async (bufferSize, ops, abort) => {
        const { writer, readerRef } = await client.createChannel(bufferSize)
        const reader = await materialised(client, readerRef)
        const { seen, ended } = record(reader)
        const expected: Seen[] = []
        const writes: Array<Promise<void>> = []
        for (const o of ops) {
          if ('text' in o) {
            writer.sendMessage(o.text)
            expected.push({ text: o.text })
            continue
          }
          writes.push(o.how === 'sendBinary' ? writer.sendBinary(o.bytes) : o.how === 'string' ? writer.write(o.bytes.toString()) : writer.write(o.bytes))
          for (let offset = 0; offset < o.bytes.length; offset += FRAME) expected.push({ bytes: o.bytes.subarray(offset, offset + FRAME) })
        }
        if (abort) {
          writer.abort()
          await Promise.allSettled(writes)
          const end = await ended
          assert.ok(end instanceof ChannelError && end.code === 'CHANNEL_CLOSED', String(end))
          assert.ok(seen.length <= expected.length)
        } else {
          await Promise.all(writes)
          await writer.close()
          assert.equal(await ended, undefined)
          assert.equal(seen.length, expected.length)
        }
        seen.forEach((item, i) => {
          const want = expected[i]!
          if ('text' in want) assert.deepEqual(item, want, `item ${i}`)
          else assert.ok('bytes' in item && item.bytes.equals(want.bytes), `item ${i}`)
        })
      }),
      { numRuns: 25 },
    )
  })
})

/** A live reader for `ref` as the SDK hands one over: through a function's payload. */
async function materialised(client: WorkerClient, ref: object): Promise<ChannelReader> {
  const id = `probe::take-${Math.random().toString(36).slice(2)}`
  let got: ChannelReader | undefined
  const fn = client.registerFunction(id, ({ ref: live }: { ref: ChannelReader }) => {
    got = live
  })
  try {
    await client.trigger({ function_id: id, payload: { ref } })
  } finally {
    fn.unregister()
  }
  assert.ok(got instanceof ChannelReader, 'the ref arrived as a live reader')
  return got
}

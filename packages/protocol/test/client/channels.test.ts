/**
 * The client core's channel ends (sdk.md §9, §13; protocol.md §9) over a scripted channel socket:
 * refs and their URL, materialisation anywhere in a payload or result (and a fast-check property
 * of it), lazy connect, 64 KiB frames, the writer's backpressure on `bufferedAmount`, the reader's
 * pull, push and pause, and the error every close code means.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  ChannelError,
  ChannelReader,
  Channels,
  ChannelWriter,
  channelBase,
  channelUrl,
  ClientSession,
  extractChannelRefs,
  isChannelRef,
  type ChannelLimits,
  type ChannelSocket,
  type ChannelSocketEvents,
  type StreamChannelRef,
} from '../../src/client/index.ts'
import { ScriptedTransport } from './support.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const ID = '7c1e9a4e-2f0b-4c1d-9e8f-3a2b1c0d9e8f'
const READ: StreamChannelRef = { channel_id: ID, access_key: 'e9d8c7b6-a5f4-4e3d-8c2b-1a0f9e8d7c6b', direction: 'read' }
const WRITE: StreamChannelRef = { channel_id: ID, access_key: 'a4f0c2d1-6b3e-4f5a-8c9d-0e1f2a3b4c5d', direction: 'write' }

/** A channel socket the test drives: records frames, reports what the test says. */
class FakeSocket implements ChannelSocket {
  readonly url: string
  readonly events: ChannelSocketEvents
  readonly sent: Array<string | Uint8Array> = []
  bufferedAmount = 0
  closedWith: { code: number; reason: string | undefined } | undefined
  paused = false
  /** Each `send` adds the frame's size to `bufferedAmount` when true. */
  accumulate = false

  constructor(url: string, events: ChannelSocketEvents) {
    this.url = url
    this.events = events
  }
  send(data: string | Uint8Array): void {
    this.sent.push(typeof data === 'string' ? data : Uint8Array.from(data))
    if (this.accumulate) this.bufferedAmount += typeof data === 'string' ? data.length : data.byteLength
  }
  close(code: number, reason?: string): void {
    this.closedWith = { code, reason }
  }
  pause(): void {
    this.paused = true
  }
  resume(): void {
    this.paused = false
  }
  open(): void {
    this.events.open()
  }
  deliver(data: string | Uint8Array): void {
    this.events.message(data)
  }
  end(code: number, reason = ''): void {
    this.events.close(code, reason)
  }
  /** Sizes of the binary frames sent. */
  binarySizes(): number[] {
    return this.sent.filter((f): f is Uint8Array => typeof f !== 'string').map((f) => f.byteLength)
  }
}

function harness(limits: Partial<ChannelLimits> = {}, address = 'ws://engine.test:4000/') {
  const sockets: FakeSocket[] = []
  const warnings: string[] = []
  const channels = new Channels({
    address,
    socket: (url, events) => {
      const socket = new FakeSocket(url, events)
      sockets.push(socket)
      return socket
    },
    log: { warn: (m) => warnings.push(m) },
    limits,
  })
  return { channels, sockets, warnings, reader: (ref = READ) => channels.open(ref) as ChannelReader, writer: (ref = WRITE) => channels.open(ref) as ChannelWriter }
}

function channelError(code: string, message: RegExp) {
  return (err: unknown) => {
    assert.ok(err instanceof ChannelError, `a ChannelError, got ${String(err)}`)
    assert.equal(err.code, code)
    assert.match(err.message, message)
    return true
  }
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('channel refs (sdk.md §9)', () => {
  it('recognises engine refs only; fields that could steer the URL are refused', () => {
    assert.ok(isChannelRef(READ))
    assert.ok(isChannelRef({ ...WRITE, extra: 1 }))
    for (const bad of [
      null,
      [READ],
      { ...READ, direction: 'both' },
      { ...READ, channel_id: 7 },
      { ...READ, channel_id: '' },
      { ...READ, channel_id: '..' },
      { ...READ, channel_id: '.' },
      { ...READ, channel_id: 'a/b' },
      { ...READ, channel_id: 'a?b' },
      { ...READ, channel_id: 'x'.repeat(257) },
      { ...READ, access_key: '' },
      { ...READ, access_key: 'a b' },
      { ...READ, access_key: 'k\n' },
      { ...READ, access_key: '\ud800' },
      { channel_id: ID, direction: 'read' },
    ]) {
      assert.equal(isChannelRef(bad), false, JSON.stringify(bad))
    }
  })

  it('builds the URL from the session address without its query, trailing slash or fragment, with the key encoded', () => {
    assert.equal(channelBase('ws://127.0.0.1:49134/?token=secret#x'), 'ws://127.0.0.1:49134')
    assert.equal(channelBase('wss://example.com/svc/'), 'wss://example.com/svc')
    assert.throws(() => channelBase('http://example.com'), TypeError)
    assert.equal(channelUrl('ws://h:1', { channel_id: 'c-1', access_key: 'a&b=c%', direction: 'write' }), 'ws://h:1/ws/channels/c-1?key=a%26b%3Dc%25&dir=write')
  })

  it('property: whatever a ref-like object holds, an end opens only <session base>/ws/channels/<its id> with its key and direction (fast-check)', async () => {
    const hostile = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 20 }),
      fc.constantFrom('..', '.', '../engine', '%2e%2e', 'a/b', 'a?b=c', 'a#b', 'ws://evil.example/', '//evil.example', 'k&dir=write', 'k%26x', ' k', 'é', '\u0000'),
      fc.uuid(),
      fc.stringMatching(/^[\x21-\x7e]{1,12}$/),
    )
    await fc.assert(
      fc.asyncProperty(hostile, hostile, fc.constantFrom('read', 'write'), async (channelId, accessKey, direction) => {
        const ref: Record<string, unknown> = { channel_id: channelId, access_key: accessKey, direction }
        const { channels, sockets } = harness({}, 'ws://engine.test:4000/base/?token=secret')
        if (!isChannelRef(ref)) {
          assert.throws(() => channels.open(ref as unknown as StreamChannelRef), TypeError)
          const kept = (channels.materialize({ ref: { ...ref } }) as { ref: object }).ref
          assert.ok(!(kept instanceof ChannelReader) && !(kept instanceof ChannelWriter))
          return
        }
        const end = channels.open(ref)
        if (end instanceof ChannelReader) void end.next()
        else void (end as ChannelWriter).write('x').catch(() => {})
        const url = new URL(sockets[0]!.url)
        assert.equal(url.origin, 'ws://engine.test:4000')
        assert.equal(url.pathname, `/base/ws/channels/${channelId}`)
        assert.deepEqual([...url.searchParams.keys()], ['key', 'dir'])
        assert.equal(url.searchParams.get('key'), accessKey)
        assert.equal(url.searchParams.get('dir'), direction)
        assert.equal(url.hash, '')
      }),
      { numRuns: 500 },
    )
  })

  it('lists the refs of a value with their paths', () => {
    assert.deepEqual(extractChannelRefs({ body: READ, parts: [1, { out: { ...WRITE, note: 'x' } }] }), [
      ['body', READ],
      ['parts.1.out', WRITE],
    ])
    assert.deepEqual(extractChannelRefs(READ), [['', READ]])
    assert.deepEqual(extractChannelRefs('text'), [])
  })
})

describe('materialisation (sdk.md §9)', () => {
  it('turns refs anywhere into lazy live ends that serialise back to their refs', () => {
    const { channels, sockets } = harness()
    const value = { a: [1, { ...READ }], b: { c: { ...WRITE, note: 'dropped' } }, d: 'keep' }
    const live = channels.materialize(value) as { a: [number, ChannelReader]; b: { c: ChannelWriter }; d: string }
    assert.ok(live.a[1] instanceof ChannelReader)
    assert.ok(live.b.c instanceof ChannelWriter)
    assert.equal(live.d, 'keep')
    assert.equal(sockets.length, 0, 'no socket until an end is used')
    assert.equal(JSON.stringify(live), JSON.stringify({ a: [1, READ], b: { c: WRITE }, d: 'keep' }))
    assert.ok(channels.materialize({ ...READ }) instanceof ChannelReader)
    assert.equal(channels.materialize(null), null)
  })

  it('replaces an own __proto__ key holding a ref as data, never touching a prototype', () => {
    const { channels } = harness()
    const value = JSON.parse(`{"__proto__": ${JSON.stringify(WRITE)}, "x": 1}`) as Record<string, unknown>
    const live = channels.materialize(value) as Record<string, unknown>
    assert.equal(Object.getPrototypeOf(live), Object.prototype)
    assert.ok(Object.getOwnPropertyDescriptor(live, '__proto__')!.value instanceof ChannelWriter)
    assert.equal(({} as Record<string, unknown>).channel_id, undefined)
  })

  it('property: only well-formed refs become ends; everything else is left as it was (fast-check)', () => {
    const { channels, sockets } = harness()
    const field = fc.oneof(fc.uuid(), fc.constantFrom('', '..', 'a/b', 'k y', 'x'.repeat(300)), fc.string({ unit: 'binary', maxLength: 12 }), fc.integer())
    const refLike = fc.record(
      { channel_id: field, access_key: field, direction: fc.oneof(fc.constantFrom('read', 'write', 'READ', ''), fc.integer()), extra: fc.jsonValue({ maxDepth: 1 }) },
      { requiredKeys: [] },
    )
    const tree = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 1 }),
        refLike,
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom('__proto__', 'constructor', 'channel_id')), tie('node'), { maxKeys: 4 }),
      ),
    })).node
    fc.assert(
      fc.property(tree, (input) => {
        const text = JSON.stringify(input)
        const decoded = JSON.parse(text) as unknown // as the codec hands it over: fresh, own __proto__ keys as data
        const expected = JSON.parse(text) as unknown
        const live = channels.materialize(decoded)
        const check = (got: unknown, want: unknown): void => {
          if (isChannelRef(want)) {
            const end = want.direction === 'read' ? ChannelReader : ChannelWriter
            assert.ok(got instanceof end, `a ${end.name} for ${JSON.stringify(want)}`)
            assert.deepEqual((got as ChannelReader).toJSON(), { channel_id: want.channel_id, access_key: want.access_key, direction: want.direction })
            return
          }
          assert.ok(!(got instanceof ChannelReader) && !(got instanceof ChannelWriter), `no end for ${JSON.stringify(want)}`)
          if (typeof want !== 'object' || want === null) {
            assert.equal(got, want)
            return
          }
          assert.equal(Array.isArray(got), Array.isArray(want))
          assert.deepEqual(Object.keys(got as object), Object.keys(want))
          assert.equal(Object.getPrototypeOf(got), Object.getPrototypeOf(want))
          for (const key of Object.keys(want)) check((got as Record<string, unknown>)[key], (want as Record<string, unknown>)[key])
        }
        check(live, expected)
      }),
      { numRuns: 500 },
    )
    assert.equal(sockets.length, 0, 'materialising opens nothing')
    assert.equal(({} as Record<string, unknown>).channel_id, undefined, 'no prototype was polluted')
  })
})

describe('ChannelWriter (sdk.md §9)', () => {
  it('connects on first use to the end URL, sends what was queued once open, in order, splitting binary into 64 KiB frames', async () => {
    const { writer, sockets } = harness()
    const w = writer()
    assert.equal(sockets.length, 0)
    const first = w.write(new Uint8Array(150 * 1024).fill(1))
    w.sendMessage('between')
    const second = w.write('héllo')
    const empty = w.write(new Uint8Array(0))
    assert.equal(sockets.length, 1)
    const socket = sockets[0]!
    assert.equal(socket.url, `ws://engine.test:4000/ws/channels/${ID}?key=${WRITE.access_key}&dir=write`)
    assert.equal(socket.sent.length, 0)
    socket.open()
    await Promise.all([first, second, empty])
    assert.deepEqual(
      socket.sent.map((f) => (typeof f === 'string' ? f : f.byteLength)),
      [65536, 65536, 22528, 'between', 6],
    )
    assert.deepEqual([...(socket.sent[4] as Uint8Array)], [...new TextEncoder().encode('héllo')])
    await assert.rejects(w.write(42 as unknown as Uint8Array), TypeError)
    assert.throws(() => w.sendMessage(Buffer.from('x') as unknown as string), TypeError)
  })

  it('waits while bufferedAmount is at the high-water mark: write resolves only when the socket has room again', async () => {
    const { writer, sockets } = harness({ writerHighWaterMark: 100, maxFrameBytes: 64, drainPollMs: 1 })
    const w = writer()
    const opened = w.write(new Uint8Array(10))
    const socket = sockets[0]!
    socket.accumulate = true
    socket.open()
    await opened
    let done = false
    const big = w.write(new Uint8Array(640)).then(() => (done = true))
    // 10 + 64 + 64 bytes are in the socket: past 100, the rest (8 frames) waits.
    assert.deepEqual(socket.binarySizes(), [10, 64, 64])
    assert.equal(w.bufferedAmount, 640 - 128 + 138)
    await tick()
    await tick()
    assert.equal(done, false)
    assert.equal(socket.sent.length, 3)
    socket.bufferedAmount = 0 // the network took it
    await waitFor(() => socket.sent.length === 5, 'two more frames once there was room', 10_000, 5)
    assert.equal(done, false)
    socket.accumulate = false
    socket.bufferedAmount = 0
    await big
    assert.deepEqual(socket.binarySizes().slice(1), Array(10).fill(64))
  })

  it('close() sends 1000 after every queued frame and resolves when the engine confirms; later calls fail', async () => {
    const { writer, sockets } = harness()
    const w = writer()
    w.sendMessage('a')
    const closed = w.close()
    assert.equal(w.close(), closed, 'idempotent')
    const socket = sockets[0]!
    socket.open()
    assert.deepEqual(socket.sent, ['a'])
    assert.deepEqual(socket.closedWith, { code: 1000, reason: undefined })
    socket.end(1000)
    await closed
    await assert.rejects(w.write('late'), channelError('CHANNEL_CLOSED', /the writer closed it/))
    assert.throws(() => w.sendMessage('late'), channelError('CHANNEL_CLOSED', /the writer closed it/))
  })

  it('an unused writer connects to close, so its reader is not left waiting', async () => {
    const { writer, sockets } = harness()
    const closed = writer().close()
    sockets[0]!.open()
    assert.equal(sockets[0]!.closedWith?.code, 1000)
    sockets[0]!.end(1000)
    await closed
  })

  it('the reader going away (1011) fails queued writes, close() and every later call with CHANNEL_CLOSED', async () => {
    const { writer, sockets } = harness({ writerHighWaterMark: 10, drainPollMs: 1 })
    const w = writer()
    const first = w.write(new Uint8Array(20))
    const socket = sockets[0]!
    socket.accumulate = true
    socket.open()
    await first
    const queued = w.write(new Uint8Array(5))
    const closed = w.close()
    socket.end(1011, 'the reader went away')
    await assert.rejects(queued, channelError('CHANNEL_CLOSED', /the reader went away/))
    await assert.rejects(closed, channelError('CHANNEL_CLOSED', /the reader went away/))
    await assert.rejects(w.write('x'), (err: ChannelError) => err.close_code === 1011 && err.direction === 'write')
    assert.throws(() => w.sendMessage('x'), ChannelError)
  })

  it('abort() closes with 4000 and fails what is queued; an unused writer connects to abort', async () => {
    const { writer, sockets } = harness({ writerHighWaterMark: 1, drainPollMs: 1 })
    const w = writer()
    const first = w.write(new Uint8Array(2))
    sockets[0]!.accumulate = true
    sockets[0]!.open()
    await first
    const queued = w.write(new Uint8Array(2))
    w.abort('upstream failed')
    await assert.rejects(queued, channelError('CHANNEL_CLOSED', /upstream failed/))
    assert.deepEqual(sockets[0]!.closedWith, { code: 4000, reason: 'upstream failed' })
    sockets[0]!.end(4000)
    await assert.rejects(w.close(), ChannelError)

    const unused = writer()
    unused.abort()
    sockets[1]!.open()
    assert.equal(sockets[1]!.closedWith?.code, 4000)
  })

  it('a refused upgrade fails the writer: NOT_FOUND for a 404, CHANNEL_CLOSED otherwise', async () => {
    const { writer, sockets } = harness()
    const a = writer().write('x')
    sockets[0]!.events.error(new Error('Unexpected server response: 404'))
    sockets[0]!.end(1006)
    await assert.rejects(a, channelError('NOT_FOUND', /Channel not found/))
    const b = writer().write('x')
    sockets[1]!.end(1006)
    await assert.rejects(b, channelError('CHANNEL_CLOSED', /could not connect \(close code 1006\)/))
  })
})

describe('ChannelReader (sdk.md §9, §13)', () => {
  it('connects on first use; next() gives Binary items in order, onMessage Text items, then undefined after a normal end', async () => {
    const { reader, sockets } = harness()
    const r = reader()
    assert.equal(sockets.length, 0)
    const texts: string[] = []
    r.onMessage((t) => texts.push(t))
    const socket = sockets[0]!
    assert.equal(socket.url, `ws://engine.test:4000/ws/channels/${ID}?key=${READ.access_key}&dir=read`)
    socket.open()
    const pending = r.next()
    socket.deliver(new Uint8Array([1]))
    socket.deliver('one')
    socket.deliver(new Uint8Array([2, 3]))
    socket.deliver('two')
    socket.end(1000)
    assert.deepEqual([...(await pending)!], [1])
    assert.deepEqual([...(await r.next())!], [2, 3])
    assert.equal(await r.next(), undefined)
    assert.equal(await r.next(), undefined)
    assert.deepEqual(texts, ['one', 'two'])
    assert.ok(r.ended)
  })

  it('drops Text items that arrive with no listener; sends Binary items to onBinary listeners instead of next()', async () => {
    const { reader, sockets } = harness()
    const r = reader()
    const pulled = r.next()
    const socket = sockets[0]!
    socket.open()
    socket.deliver('nobody listens')
    socket.deliver(new Uint8Array([1]))
    assert.deepEqual([...(await pulled)!], [1])
    const pushed: number[][] = []
    const texts: string[] = []
    r.onMessage((t) => texts.push(t))
    const off = r.onBinary((b) => pushed.push([...b]))
    socket.deliver(new Uint8Array([2]))
    socket.deliver('later')
    off()
    socket.deliver(new Uint8Array([3]))
    socket.end(1000)
    assert.deepEqual(pushed, [[2]])
    assert.deepEqual(texts, ['later'])
    assert.deepEqual([...(await r.next())!], [3])
    assert.equal(await r.next(), undefined)
  })

  it('an abnormal end gives the held items first, then CHANNEL_CLOSED; the close code says why', async () => {
    const cases: Array<[number, string, string, RegExp]> = [
      [1011, 'the writer ended abnormally', 'CHANNEL_CLOSED', /the writer ended abnormally/],
      [1011, '', 'CHANNEL_CLOSED', /the writer ended abnormally/],
      [1008, '', 'CHANNEL_CLOSED', /the read end of channel .* is claimed already/],
      [1001, 'swept', 'CHANNEL_CLOSED', /swept/],
      [1006, '', 'CHANNEL_CLOSED', /connection of its reader was lost/],
      [4321, 'odd', 'CHANNEL_CLOSED', /closed with code 4321 \(odd\)/],
    ]
    for (const [code, reason, errorCode, message] of cases) {
      const { reader, sockets } = harness()
      const r = reader()
      void r.next().catch(() => {})
      const socket = sockets[0]!
      socket.open()
      socket.deliver(new Uint8Array([9]))
      socket.deliver(new Uint8Array([8]))
      socket.end(code, reason)
      assert.deepEqual([...(await r.next())!], [8])
      await assert.rejects(r.next(), channelError(errorCode, message))
      await assert.rejects(r.readAll(), (err: ChannelError) => err.close_code === code)
    }
  })

  it('a refused upgrade rejects with NOT_FOUND for a 404', async () => {
    const { reader, sockets } = harness()
    const pending = reader().next()
    sockets[0]!.events.error(new Error('Unexpected server response: 404'))
    sockets[0]!.end(1006)
    await assert.rejects(pending, channelError('NOT_FOUND', /Channel not found/))
  })

  it('stops reading its socket at the high-water mark of held bytes and reads again below half of it', async () => {
    const { reader, sockets } = harness({ readerHighWaterMark: 10 })
    const r = reader()
    r.onMessage(() => {})
    const socket = sockets[0]!
    socket.open()
    for (let i = 0; i < 4; i++) socket.deliver(new Uint8Array(3))
    assert.equal(socket.paused, true)
    await r.next()
    assert.equal(socket.paused, true, '9 bytes held: still over half')
    await r.next()
    await r.next()
    assert.equal(socket.paused, false)
  })

  it('readAll joins the Binary items; past maxBytes it closes the reader and rejects CHANNEL_DATA_TOO_LARGE', async () => {
    const { reader, sockets } = harness()
    const r = reader()
    const all = r.readAll()
    sockets[0]!.open()
    sockets[0]!.deliver(new Uint8Array([1, 2]))
    sockets[0]!.deliver(new Uint8Array([3]))
    sockets[0]!.end(1000)
    assert.deepEqual([...(await all)], [1, 2, 3])

    const big = reader()
    const bounded = big.readAll({ maxBytes: 4 })
    sockets[1]!.open()
    sockets[1]!.deliver(new Uint8Array(3))
    sockets[1]!.deliver(new Uint8Array(3))
    await assert.rejects(bounded, channelError('CHANNEL_DATA_TOO_LARGE', /more than 4 bytes/))
    assert.equal(sockets[1]!.closedWith?.code, 1000)
    await assert.rejects(reader().readAll({ maxBytes: -1 }), RangeError)
  })

  it('is an async iterable; leaving the loop early closes the reader (1000) and later reads see the end', async () => {
    const { reader, sockets } = harness()
    const r = reader()
    const got: number[] = []
    const loop = (async () => {
      for await (const chunk of r) {
        got.push(chunk[0]!)
        if (got.length === 2) break
      }
    })()
    await waitFor(() => sockets.length === 1, 'connected', 10_000, 5)
    const socket = sockets[0]!
    socket.open()
    socket.deliver(new Uint8Array([1]))
    socket.deliver(new Uint8Array([2]))
    socket.deliver(new Uint8Array([3]))
    await loop
    assert.deepEqual(got, [1, 2])
    assert.equal(socket.closedWith?.code, 1000)
    assert.equal(await r.next(), undefined)
  })

  it('close() on an unused reader connects and closes as soon as the upgrade completes', () => {
    const { reader, sockets } = harness()
    const r = reader()
    r.close()
    r.close()
    assert.equal(sockets.length, 1)
    sockets[0]!.open()
    assert.equal(sockets[0]!.closedWith?.code, 1000)
  })

  it('reports a listener that throws and goes on', () => {
    const { reader, sockets, warnings } = harness()
    const r = reader()
    const texts: string[] = []
    r.onMessage(() => {
      throw new Error('boom')
    })
    r.onMessage((t) => texts.push(t))
    sockets[0]!.open()
    sockets[0]!.deliver('x')
    assert.deepEqual(texts, ['x'])
    assert.match(warnings[0]!, /onMessage listener threw: boom/)
    assert.throws(() => r.onBinary('nope' as unknown as () => void), TypeError)
  })
})

describe('Channels.closeAll (a client shutting down)', () => {
  it('aborts open writers and closes open readers; ends never used are left alone', () => {
    const { channels, sockets, writer, reader } = harness()
    const w = writer()
    void w.write('x').catch(() => {})
    const r = reader()
    void r.next()
    const unused = reader()
    assert.equal(channels.openEnds, 2)
    sockets[0]!.open()
    channels.closeAll()
    assert.equal(sockets[0]!.closedWith?.code, 4000)
    assert.equal(sockets[0]!.closedWith?.reason, 'the worker shut down')
    sockets[1]!.open()
    assert.equal(sockets[1]!.closedWith?.code, 1000)
    assert.ok(r.ended)
    assert.equal(unused.ended, false)
    assert.equal(sockets.length, 2)
    sockets[0]!.end(4000)
    sockets[1]!.end(1000)
    assert.equal(channels.openEnds, 0)
  })
})

describe('channels through a ClientSession (materialize hook)', () => {
  it('hands a handler live ends, a caller live ends in a result, sends an end back as its ref, and creates channels', async (t) => {
    const { channels, sockets } = harness()
    const transport = new ScriptedTransport()
    const session = new ClientSession({
      address: 'ws://engine.test:4000/?token=t',
      connector: () => transport,
      announce: { runtime: 'test' },
      log: { warn: () => {} },
      hooks: { materialize: channels.materialize },
    })
    t.after(() => session.shutdown())
    transport.open()
    let got: unknown
    session.registerFunction('sink::take', (data: { nested: { body: ChannelReader } }) => {
      got = data.nested.body
      return { echoed: data.nested.body }
    })
    transport.deliver({ type: 'invokefunction', invocation_id: 'i1', function_id: 'sink::take', data: { nested: { body: READ } } })
    await waitFor(() => transport.frames().some((f) => f.type === 'invocationresult'), 'answered', 10_000, 5)
    assert.ok(got instanceof ChannelReader)
    assert.deepEqual(transport.frames().find((f) => f.type === 'invocationresult')!.result, { echoed: READ })
    assert.equal(sockets.length, 0)

    const created = session.createChannel(8)
    const call = transport.frames().find((f) => f.function_id === 'engine::channels::create')!
    assert.deepEqual(call.data, { buffer_size: 8 })
    transport.deliver({ type: 'invocationresult', invocation_id: call.invocation_id, function_id: call.function_id, result: { writer: WRITE, reader: READ } })
    const channel = await created
    assert.ok(channel.writer instanceof ChannelWriter && channel.reader instanceof ChannelReader)
    assert.deepEqual([channel.writerRef, channel.readerRef], [WRITE, READ])

    // A session without the hook gets plain refs back: createChannel says so.
    const bareTransport = new ScriptedTransport()
    const bare = new ClientSession({ address: 'ws://engine.test:4000/', connector: () => bareTransport, announce: { runtime: 'test' }, log: { warn: () => {} } })
    t.after(() => bare.shutdown())
    bareTransport.open()
    const refused = bare.createChannel()
    const bareCall = bareTransport.frames().find((f) => f.function_id === 'engine::channels::create')!
    assert.deepEqual(bareCall.data, { buffer_size: 64 })
    bareTransport.deliver({ type: 'invocationresult', invocation_id: bareCall.invocation_id, function_id: bareCall.function_id, result: { writer: WRITE, reader: READ } })
    await assert.rejects(refused, (err: Error) => err instanceof TypeError && /answered no live ends/.test(err.message))
  })
})

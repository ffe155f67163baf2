/**
 * The transport seam (svc-protocol/transport): one behaviour suite that both implementations
 * pass — Node `ws` over a real loopback WebSocket server, and the in-memory pair — then what is
 * particular to each (upgrade headers, handshake deadline, write coalescing; the memory connector).
 */
import assert from 'node:assert/strict'
import { createServer, type IncomingMessage } from 'node:http'
import { createServer as createTcpServer, Socket, type AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import * as wsModule from 'ws'
import { WebSocketServer, type WebSocket } from 'ws'
import { SvcError } from '../src/errors.ts'
import { memoryConnector, memoryPair } from '../src/transport/memory.ts'
import type { PeerInfo, Transport } from '../src/transport/types.ts'
import { connectWebSocket, FIRST_WRITE_FRAMES, MAX_FRAMES_PER_WRITE, peerInfoOf, READ_BUDGET_BYTES, READ_BUDGET_FRAMES, setContentionProbe, textFrame, wsServerTransport } from '../src/transport/ws.ts'
import { quietPeriod, waitFor } from '../../../test/support/wait.ts'

const WAIT_MS = 5000

const nextMacrotask = () => new Promise<void>((r) => setImmediate(r))

/** Everything a transport reported, in order. */
class Recorder {
  readonly events: string[] = []
  readonly messages: Array<{ data: string | Uint8Array; isBinary: boolean }> = []
  readonly closes: Array<[number, string]> = []
  readonly errors: Error[] = []
  alive = 0
  opened = 0

  constructor(transport: Transport) {
    transport.setHandlers({
      open: () => {
        this.opened++
        this.events.push('open')
      },
      message: (data, isBinary) => {
        this.messages.push({ data, isBinary })
        this.events.push(typeof data === 'string' ? `text:${data.slice(0, 20)}` : 'binary')
      },
      close: (code, reason) => {
        this.closes.push([code, reason])
        this.events.push(`close:${code}`)
      },
      alive: () => {
        this.alive++
      },
      error: (error) => {
        this.errors.push(error)
        this.events.push('error')
      },
    })
  }

  texts(): string[] {
    return this.messages.map((m) => m.data as string)
  }
}

/** A connected pair: `a` is the client end, `b` the server end; no handlers set yet. */
interface Pair {
  a: Transport
  b: Transport
  /** Sends a binary frame from `b` to `a` (the Transport interface sends text only). */
  sendBinaryToA(bytes: Uint8Array): void
}

type PairFactory = (t: TestContext) => Promise<Pair>

// ------------------------------------------------------------------ ws over loopback

interface WsServer {
  url: string
  /** Server sides in connection order. */
  accepted: Array<{ transport: Transport; ws: WebSocket; tcp: Duplex; request: IncomingMessage }>
}

async function startWsServer(t: TestContext): Promise<WsServer> {
  const http = createServer((_req, res) => res.writeHead(404).end())
  const wss = new WebSocketServer({ noServer: true, perMessageDeflate: false })
  const server: WsServer = { url: '', accepted: [] }
  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    wss.handleUpgrade(request, socket, head, (ws) => {
      server.accepted.push({ transport: wsServerTransport(ws, socket), ws, tcp: socket, request })
    })
  })
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()))
  server.url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`
  t.after(async () => {
    for (const ws of wss.clients) ws.terminate()
    http.closeAllConnections()
    await new Promise<void>((r) => http.close(() => r()))
  })
  return server
}

/**
 * A server and a client `ws` transport, open, the client's frames recorded; with `probe`, the
 * machine's CPU contention as the transports read it (restored after the test).
 */
async function openWs(t: TestContext, probe?: { contended: boolean }) {
  if (probe !== undefined) {
    setContentionProbe(probe)
    t.after(() => setContentionProbe(undefined))
  }
  const server = await startWsServer(t)
  const a = connectWebSocket(server.url, {})
  t.after(() => a.terminate())
  const ra = new Recorder(a)
  await waitFor(() => ra.opened === 1 && server.accepted.length === 1, 'open', 5000, 2)
  return { server, a, ra, accepted: server.accepted[0]! }
}

const wsFactory: PairFactory = async (t) => {
  const server = await startWsServer(t)
  const a = connectWebSocket(server.url, {})
  t.after(() => a.terminate())
  await waitFor(() => a.isOpen && server.accepted.length === 1, 'ws pair open', 5000, 2)
  const { transport: b, ws } = server.accepted[0]!
  return { a, b, sendBinaryToA: (bytes) => ws.send(bytes, { binary: true }) }
}

const memoryFactory: PairFactory = async () => {
  const [a, b] = memoryPair()
  return { a, b, sendBinaryToA: (bytes) => b.sendBinary(bytes) }
}

// ------------------------------------------------------------------ the shared behaviour suite

function transportBehaviour(name: string, factory: PairFactory): void {
  describe(`${name}: transport behaviour`, () => {
    it('starts open on both ends', async (t) => {
      const { a, b } = await factory(t)
      assert.equal(a.isOpen, true)
      assert.equal(b.isOpen, true)
    })

    it('keeps the order of many frames, across coalesced batches and turns, both ways', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      const sent: string[] = []
      // One turn of 5 full batches and a partial one, then two more turns.
      for (let i = 0; i < MAX_FRAMES_PER_WRITE * 5 + 7; i++) sent.push(`{"n":${i}}`)
      for (const text of sent) a.send(text)
      await nextMacrotask()
      for (let i = sent.length; i < 200; i++) {
        sent.push(`{"n":${i}}`)
        a.send(sent[i]!)
      }
      await Promise.resolve()
      sent.push('{"n":"last"}')
      a.send('{"n":"last"}')
      const back = Array.from({ length: 50 }, (_, i) => `{"back":${i}}`)
      for (const text of back) b.send(text)
      await waitFor(() => rb.messages.length === sent.length && ra.messages.length === back.length, 'all frames', 5000, 2)
      assert.deepEqual(rb.texts(), sent)
      assert.deepEqual(ra.texts(), back)
      assert.ok(rb.messages.every((m) => typeof m.data === 'string' && m.isBinary === false))
    })

    it('delivers text frames as strings and binary frames as Uint8Array', async (t) => {
      const pair = await factory(t)
      const ra = new Recorder(pair.a)
      const rb = new Recorder(pair.b)
      pair.a.send('{"type":"ping","é":"ü"}')
      pair.sendBinaryToA(new Uint8Array([0x4f, 0x54, 0x4c, 0x50, 0, 255]))
      await waitFor(() => ra.messages.length === 1 && rb.messages.length === 1, 'both frames', 5000, 2)
      assert.deepEqual(rb.messages[0], { data: '{"type":"ping","é":"ü"}', isBinary: false })
      const binary = ra.messages[0]!
      assert.equal(binary.isBinary, true)
      assert.ok(binary.data instanceof Uint8Array)
      assert.deepEqual([...binary.data], [0x4f, 0x54, 0x4c, 0x50, 0, 255])
    })

    it('delivers frames asynchronously, never inside send', async (t) => {
      const { a, b } = await factory(t)
      const rb = new Recorder(b)
      a.send('x')
      await Promise.resolve()
      assert.equal(rb.messages.length, 0)
      await waitFor(() => rb.messages.length === 1, 'frame', 5000, 2)
    })

    it('sends a lone surrogate as U+FFFD, as UTF-8 encoding does', async (t) => {
      const { a, b } = await factory(t)
      const rb = new Recorder(b)
      a.send('{"s":"a\ud800b"}')
      await waitFor(() => rb.messages.length === 1, 'frame', 5000, 2)
      assert.equal(rb.messages[0]!.data, '{"s":"a\ufffdb"}')
    })

    it('holds what arrives before the handlers are set', async (t) => {
      const { a, b } = await factory(t)
      a.send('early')
      a.ping()
      await quietPeriod(20, 'the frame and ping reach the other end before it sets handlers (nothing to observe there)')
      const rb = new Recorder(b)
      await waitFor(() => rb.messages.length === 1 && rb.alive === 1, 'held frame and ping', 5000, 2)
      assert.deepEqual(rb.texts(), ['early'])
    })

    it('delivers to the handlers of the latest setHandlers call, once', async (t) => {
      const { a, b } = await factory(t)
      a.send('early')
      await quietPeriod(20, 'the frame reaches the other end before it sets handlers (nothing to observe there)')
      const first = new Recorder(b)
      const second = new Recorder(b)
      a.send('later')
      a.send('marker') // a wrong delivery to the first handlers would have happened before this one arrives
      await waitFor(() => second.messages.length === 3, 'the three frames', 5000, 2)
      assert.deepEqual(second.texts(), ['early', 'later', 'marker'])
      assert.equal(first.messages.length, 0)
    })

    it('close: frames sent before arrive first, then both ends see the code and reason, once', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      a.send('before')
      a.close(4001, 'going away')
      assert.equal(a.isOpen, false)
      await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
      assert.deepEqual(ra.closes, [[4001, 'going away']])
      assert.deepEqual(rb.closes, [[4001, 'going away']])
      assert.deepEqual(rb.events, ['text:before', 'close:4001'])
      assert.equal(b.isOpen, false)
      a.close(1000)
      a.terminate()
      b.terminate()
      await quietPeriod(20, 'no second close event after close and terminate of a closed transport')
      assert.equal(ra.closes.length + rb.closes.length, 2, 'close fires exactly once per end')
    })

    it('close from the server end reaches the client end', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      b.send('bye')
      b.close(1000, 'done')
      await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
      assert.deepEqual(ra.events.filter((e) => e !== 'open'), ['text:bye', 'close:1000'])
      assert.deepEqual(ra.closes, [[1000, 'done']])
      assert.deepEqual(rb.closes, [[1000, 'done']])
    })

    it('close without a code: both ends see 1005', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      a.close()
      await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
      assert.deepEqual([ra.closes, rb.closes], [[[1005, '']], [[1005, '']]])
    })

    it('terminate: both ends see 1006, once', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      a.terminate()
      assert.equal(a.isOpen, false)
      await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
      assert.equal(ra.closes[0]![0], 1006)
      assert.equal(rb.closes[0]![0], 1006)
      a.terminate()
      await quietPeriod(20, 'no second close event after terminate of a terminated transport')
      assert.equal(ra.closes.length, 1)
    })

    it('drops sends and pings after close', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      a.send('kept')
      a.close(1000)
      a.send('dropped')
      a.ping()
      await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
      b.send('dropped too')
      a.send('dropped again')
      await quietPeriod(20, 'nothing sent after close arrives (no frame can follow a close as a marker)')
      assert.deepEqual(rb.texts(), ['kept'])
      assert.deepEqual(ra.texts(), [])
      assert.equal(rb.alive, 0)
    })

    it('ping makes the other end report alive, and the pong this end', async (t) => {
      const { a, b } = await factory(t)
      const ra = new Recorder(a)
      const rb = new Recorder(b)
      a.ping()
      await waitFor(() => rb.alive === 1 && ra.alive === 1, 'ping and pong', 5000, 2)
      b.ping()
      await waitFor(() => rb.alive === 2 && ra.alive === 2, 'ping and pong back', 5000, 2)
      assert.equal(ra.messages.length + rb.messages.length, 0, 'pings are not messages')
    })

    it('bufferedAmount grows with sends and drains once the peer has the frames', async (t) => {
      const { a, b } = await factory(t)
      const rb = new Recorder(b)
      assert.equal(a.bufferedAmount, 0)
      const frame = 'x'.repeat(64 * 1024)
      for (let i = 0; i < 32; i++) a.send(frame)
      assert.ok(a.bufferedAmount >= 64 * 1024, `bufferedAmount ${a.bufferedAmount} after 2 MiB in one turn`)
      await waitFor(() => rb.messages.length === 32, 'all frames', 5000, 2)
      await waitFor(() => a.bufferedAmount === 0, 'drained', 5000, 2)
    })

    it('writtenBytes grows as frames leave the buffer and never goes back', async (t) => {
      const { a, b } = await factory(t)
      const rb = new Recorder(b)
      const before = a.writtenBytes!
      assert.equal(typeof before, 'number')
      const frame = 'x'.repeat(64 * 1024)
      for (let i = 0; i < 32; i++) a.send(frame)
      const sent = a.writtenBytes!
      assert.ok(sent >= before)
      await waitFor(() => rb.messages.length === 32 && a.bufferedAmount === 0, 'all frames', 5000, 2)
      // Every payload byte left (a WebSocket adds its frame headers on top).
      assert.ok(a.writtenBytes! - before >= 32 * frame.length, `writtenBytes grew by ${a.writtenBytes! - before}`)
    })

    it('refuses non-string frames and close arguments a WebSocket cannot send, staying open', async (t) => {
      const { a } = await factory(t)
      assert.throws(() => a.send(Buffer.from('x') as unknown as string), TypeError)
      assert.throws(() => a.send(undefined as unknown as string), TypeError)
      assert.throws(() => a.close(1006), TypeError)
      assert.throws(() => a.close(2000), TypeError)
      assert.throws(() => a.close(1000, 'é'.repeat(62)), RangeError)
      assert.equal(a.isOpen, true)
    })
  })
}

transportBehaviour('ws', wsFactory)
transportBehaviour('memory', memoryFactory)

// ------------------------------------------------------------------ ws only

/** Counts the write syscalls of TCP sockets (`_writeGeneric` serves both write and writev). */
function countWrites(target: object | ((socket: Socket) => boolean)): { count: number; restore(): void } {
  const counts = typeof target === 'function' ? (target as (socket: Socket) => boolean) : (socket: Socket) => socket === target
  const proto = Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown }
  const original = proto._writeGeneric
  const counter = {
    count: 0,
    restore: () => {
      proto._writeGeneric = original
    },
  }
  proto._writeGeneric = function (this: Socket, ...args: unknown[]) {
    if (counts(this)) counter.count++
    return original.apply(this, args)
  }
  return counter
}

/** TCP writes made while sending `frames` frames in one turn: the first batch, then full ones. */
function expectedWrites(frames: number): number {
  return frames <= FIRST_WRITE_FRAMES ? 0 : 1 + Math.floor((frames - FIRST_WRITE_FRAMES - 1) / MAX_FRAMES_PER_WRITE)
}

/** The bytes `ws` itself writes for a text frame (its Sender), with the zero key when masked. */
function wsFrameBytes(text: string, zeroMask: boolean): Buffer {
  // ws exports its Sender (ws/wrapper.mjs) without a type for it.
  const { Sender } = wsModule as unknown as { Sender: { frame(data: string, options: object): Array<Buffer | string> } }
  const list = Sender.frame(text, { fin: true, opcode: 1, mask: zeroMask, maskBuffer: Buffer.alloc(4), generateMask: (mask: Buffer) => mask.fill(0), readOnly: false, rsv1: false })
  return Buffer.concat(list.map((part) => (typeof part === 'string' ? Buffer.from(part) : part)))
}

/** Texts around the three length encodings (125/126, 65535/65536 bytes), multi-byte and lone surrogates included. */
const frameText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.tuple(fc.constantFrom(124, 125, 126, 127, 65534, 65535, 65536, 65537), fc.constantFrom('', 'é', '😀', '\ud800', '\u0000')).map(([bytes, tail]) => 'x'.repeat(Math.max(0, bytes - Buffer.byteLength(tail))) + tail),
)

describe('ws transport', () => {
  it('writes each text frame in one buffer, byte for byte what ws writes, unmasked or with the zero key (fast-check)', () => {
    fc.assert(
      fc.property(frameText, fc.boolean(), (text, zeroMask) => {
        assert.ok(textFrame(text, zeroMask).equals(wsFrameBytes(text, zeroMask)))
      }),
      { numRuns: 300 },
    )
  })

  it('frames of every length encoding arrive intact both ways, in order with binary frames', async (t) => {
    const { a, ra, accepted } = await openWs(t)
    const { transport: b } = accepted
    const rb = new Recorder(b)
    const texts = [0, 1, 125, 126, 127, 65535, 65536, 70000].map((n) => 'é'.repeat(n >> 1) + 'x'.repeat(n & 1))
    texts.push('😀 \ud800 end')
    for (const text of texts) {
      a.send(text)
      b.send(text)
    }
    // The text frames batched before it leave first.
    b.sendBinary!(Uint8Array.from([1, 2, 3]))
    b.send('after binary')
    const expected = texts.map((text) => text.replace('\ud800', '\ufffd'))
    await waitFor(() => ra.messages.length === texts.length + 2 && rb.messages.length === texts.length, 'all frames', 5000, 2)
    assert.deepEqual(rb.texts(), expected)
    assert.deepEqual(ra.texts().slice(0, texts.length), expected)
    assert.equal(ra.messages[texts.length]!.isBinary, true)
    assert.equal(ra.messages[texts.length + 1]!.data, 'after binary')
  })

  it('frames sent in the turn of a close() arrive before the close frame, both ways', async (t) => {
    const { a, ra, accepted } = await openWs(t)
    const { transport: b } = accepted
    const rb = new Recorder(b)
    a.send('client one')
    a.send('client two')
    a.send('client three')
    a.close(1000, 'client done')
    await waitFor(() => rb.closes.length === 1, 'the server end closed', 5000, 2)
    assert.deepEqual(rb.events, ['text:client one', 'text:client two', 'text:client three', 'close:1000'])
    const { a: c, ra: rc, accepted: other } = await openWs(t)
    other.transport.send('server one')
    other.transport.send('server two')
    other.transport.send('server three')
    other.transport.close(4000, 'server done')
    await waitFor(() => rc.closes.length === 1, 'the client end closed', 5000, 2)
    assert.deepEqual(rc.events.filter((e) => e !== 'open'), ['text:server one', 'text:server two', 'text:server three', 'close:4000'])
    void ra
    void c
  })

  it('coalesces the frames of one turn: the first 2 leave at once, then writes of at most 16 frames (server side)', async (t) => {
    // A machine with an idle CPU (whatever the one running this test is doing).
    const { ra, accepted } = await openWs(t, { contended: false })
    const { transport: b, tcp } = accepted
    const writes = countWrites(tcp)
    try {
      for (let i = 0; i < FIRST_WRITE_FRAMES; i++) b.send(`{"n":${i}}`)
      assert.equal(writes.count, 0, 'a batch waits until it is full or the turn ends')
      b.send(`{"n":${FIRST_WRITE_FRAMES}}`)
      assert.equal(writes.count, 1, 'the first frames leave as soon as the next one comes')
      for (let i = FIRST_WRITE_FRAMES + 1; i < 40; i++) {
        b.send(`{"n":${i}}`)
        assert.equal(writes.count, expectedWrites(i + 1), `after frame ${i}`)
      }
      await new Promise<void>((r) => process.nextTick(r))
      assert.equal(writes.count, expectedWrites(40) + 1, 'the rest leaves at the end of the turn')
      // Under load (the last turn filled whole batches) a turn starts with a full batch: the early
      // write would only add a syscall.
      const before = writes.count
      for (let i = 40; i < 40 + MAX_FRAMES_PER_WRITE; i++) b.send(`{"n":${i}}`)
      assert.equal(writes.count, before)
      b.send(`{"n":${40 + MAX_FRAMES_PER_WRITE}}`)
      assert.equal(writes.count, before + 1)
      await new Promise<void>((r) => process.nextTick(r))
    } finally {
      writes.restore()
    }
    const total = 41 + MAX_FRAMES_PER_WRITE
    await waitFor(() => ra.messages.length === total, 'all frames', 5000, 2)
    assert.deepEqual(ra.texts(), Array.from({ length: total }, (_, i) => `{"n":${i}}`))
  })

  it('with every CPU busy, a turn leaves in whole batches: no early write (server and client side)', async (t) => {
    const probe = { contended: true }
    const { server, a, ra, accepted } = await openWs(t, probe)
    const { transport: b, tcp } = accepted
    const rb = new Recorder(b)
    const serverWrites = countWrites(tcp)
    // The client's socket: the one connected to the server's port.
    const port = Number(new URL(server.url).port)
    const clientWrites = countWrites((socket) => socket.remotePort === port)
    // Less than a full batch, so that only the contention decides (a turn after a full one starts
    // with a full batch anyway).
    const frames = MAX_FRAMES_PER_WRITE - 1
    try {
      for (let i = 0; i < frames; i++) {
        b.send(`{"n":${i}}`)
        a.send(`{"n":${i}}`)
      }
      assert.equal(serverWrites.count, 0, 'no early write: the batch waits for the end of the turn')
      assert.equal(clientWrites.count, 0, 'no early write: the batch waits for the end of the turn')
      await new Promise<void>((r) => process.nextTick(r))
      assert.equal(serverWrites.count, 1, "the server's turn left in one write")
      assert.equal(clientWrites.count, 1, "the client's turn left in one write")
      // A CPU free again: the next turn writes its first frames early.
      probe.contended = false
      for (let i = 0; i <= FIRST_WRITE_FRAMES; i++) b.send(`{"m":${i}}`)
      assert.equal(serverWrites.count, 2, 'the first frames leave as soon as the next one comes')
      await new Promise<void>((r) => process.nextTick(r))
    } finally {
      serverWrites.restore()
      clientWrites.restore()
    }
    const toClient = [...Array.from({ length: frames }, (_, i) => `{"n":${i}}`), ...Array.from({ length: FIRST_WRITE_FRAMES + 1 }, (_, i) => `{"m":${i}}`)]
    await waitFor(() => ra.messages.length === toClient.length && rb.messages.length === frames, 'all frames', 5000, 2)
    assert.deepEqual(ra.texts(), toClient)
    assert.deepEqual(rb.texts(), Array.from({ length: frames }, (_, i) => `{"n":${i}}`))
  })

  it(`reads fairly: after ${READ_BUDGET_FRAMES} frames, or ${READ_BUDGET_BYTES} bytes, a connection's reading pauses until the next turn`, async (t) => {
    const server = await startWsServer(t)
    const a = connectWebSocket(server.url, {})
    t.after(() => a.terminate())
    new Recorder(a)
    await waitFor(() => a.isOpen && server.accepted.length === 1, 'open', 5000, 2)
    const { transport: b, ws } = server.accepted[0]!
    // Whether reading was paused when each frame arrived, and whether it was again a turn later.
    const pausedAt: boolean[] = []
    const resumed: boolean[] = []
    b.setHandlers({
      message: () => {
        pausedAt.push(ws.isPaused)
        if (ws.isPaused) setImmediate(() => resumed.push(!ws.isPaused))
      },
      close: () => {},
    })
    const frames = READ_BUDGET_FRAMES * 3
    for (let i = 0; i < frames; i++) a.send(`{"n":${i}}`)
    await waitFor(() => pausedAt.length === frames, 'every frame', 5000, 2)
    // The frame that reaches the budget is delivered with reading paused; the next turn resumes it.
    assert.equal(pausedAt[READ_BUDGET_FRAMES - 1], true)
    assert.ok(pausedAt.slice(0, READ_BUDGET_FRAMES - 1).every((p) => !p))
    await waitFor(() => resumed.length === pausedAt.filter(Boolean).length, 'resumed', 5000, 2)
    assert.ok(resumed.every(Boolean))
    // A few large frames reach the byte budget first.
    pausedAt.length = 0
    const large = 'x'.repeat(READ_BUDGET_BYTES / 2)
    for (let i = 0; i < 4; i++) a.send(large)
    await waitFor(() => pausedAt.length === 4, 'large frames', 5000, 2)
    assert.ok(pausedAt.some(Boolean))
  })

  it('coalesces on the client side too, through the upgrade response socket', async (t) => {
    const { server, a, ra } = await openWs(t, { contended: false })
    let tcp: object | undefined
    const rb = new Recorder(server.accepted[0]!.transport)
    // The client's TCP socket is the server socket's peer: find it by its local port.
    const serverTcp = server.accepted[0]!.tcp as Socket
    const proto = Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown }
    const original = proto._writeGeneric
    let count = 0
    proto._writeGeneric = function (this: Socket, ...args: unknown[]) {
      if (this !== serverTcp && this.localPort === serverTcp.remotePort) {
        tcp ??= this
        count++
      }
      return original.apply(this, args)
    }
    try {
      for (let i = 0; i < 40; i++) a.send(`{"n":${i}}`)
      assert.equal(count, expectedWrites(40))
      await new Promise<void>((r) => process.nextTick(r))
      assert.equal(count, expectedWrites(40) + 1)
    } finally {
      proto._writeGeneric = original
    }
    assert.ok(tcp !== undefined)
    await waitFor(() => rb.messages.length === 40, 'all frames', 5000, 2)
    assert.deepEqual(rb.texts(), Array.from({ length: 40 }, (_, i) => `{"n":${i}}`))
  })

  it('sends the configured headers on the upgrade; peerInfoOf reads headers, query and address', async (t) => {
    const server = await startWsServer(t)
    const a = connectWebSocket(`${server.url}/?token=abc&flag&token=d%20e`, {
      headers: { 'X-Api-Token': 'secret-1', 'x-worker': 'w1' },
    })
    t.after(() => a.terminate())
    await waitFor(() => server.accepted.length === 1, 'upgrade', 5000, 2)
    const info: PeerInfo = peerInfoOf(server.accepted[0]!.request)
    assert.equal(info.headers['x-api-token'], 'secret-1')
    assert.equal(info.headers['x-worker'], 'w1')
    assert.equal(info.headers.upgrade, 'websocket')
    assert.equal(info.headers['sec-websocket-extensions'], undefined, 'no per-message deflate offered')
    assert.deepEqual(info.query, { token: ['abc', 'd e'], flag: [''] })
    assert.match(String(info.ip), /127\.0\.0\.1$/)
  })

  it('closes with 1006 after a TIMEOUT error when the handshake does not complete in time', async (t) => {
    const sockets: Socket[] = []
    const silent = createTcpServer((s) => sockets.push(s)) // accepts TCP, never answers the upgrade
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
    t.after(() => {
      for (const s of sockets) s.destroy()
      silent.close()
    })
    const port = (silent.address() as AddressInfo).port
    const started = Date.now()
    // Credentials in the user part and the query: neither may reach the message.
    const a = connectWebSocket(`ws://user:hunter2@127.0.0.1:${port}/?token=secret`, { handshakeTimeoutMs: 50 })
    const ra = new Recorder(a)
    await waitFor(() => ra.closes.length === 1, 'closed', 5000, 2)
    assert.ok(Date.now() - started >= 45)
    assert.deepEqual(ra.events, ['error', 'close:1006'])
    const error = ra.errors[0] as SvcError
    assert.ok(error instanceof SvcError)
    assert.equal(error.code, 'TIMEOUT')
    assert.equal(error.message, `handshake with ws://127.0.0.1:${port}/ timed out after 50ms`)
    assert.equal(ra.opened, 0)
  })

  it('reports a refused connection as the socket error, then 1006', async () => {
    const probe = createTcpServer()
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()))
    const port = (probe.address() as AddressInfo).port
    await new Promise<void>((r) => probe.close(() => r()))
    const a = connectWebSocket(`ws://127.0.0.1:${port}`, { handshakeTimeoutMs: 5000 })
    const ra = new Recorder(a)
    await waitFor(() => ra.closes.length === 1, 'closed', 5000, 2)
    assert.deepEqual(ra.events, ['error', 'close:1006'])
    assert.equal((ra.errors[0] as NodeJS.ErrnoException).code, 'ECONNREFUSED')
  })

  it('closing during the handshake ends it with 1006 and no error', async (t) => {
    const sockets: Socket[] = []
    const silent = createTcpServer((s) => sockets.push(s))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()))
    t.after(() => {
      for (const s of sockets) s.destroy()
      silent.close()
    })
    const a = connectWebSocket(`ws://127.0.0.1:${(silent.address() as AddressInfo).port}`, { handshakeTimeoutMs: 5000 })
    const ra = new Recorder(a)
    await waitFor(() => sockets.length === 1, 'TCP accepted', 5000, 2)
    a.close(1000)
    await waitFor(() => ra.closes.length === 1, 'closed', 5000, 2)
    assert.deepEqual(ra.events, ['close:1006'])
  })

  it('refuses URLs that are not ws: or wss:, naming them without their credentials', () => {
    assert.throws(() => connectWebSocket('http://127.0.0.1:1', {}), TypeError)
    assert.throws(() => connectWebSocket('not a url', {}), TypeError)
    // The message once held the whole text: user, password and query token included.
    for (const connect of [connectWebSocket, memoryConnector(() => {})]) {
      assert.throws(
        () => connect('https://user:hunter2@svc.example/ws?token=s3cret#frag', {}),
        (err: Error) => err instanceof TypeError && err.message === 'not a ws:// or wss:// URL, got https: (https://svc.example/ws)',
      )
      assert.throws(
        () => connect('ws://user:hunter2@/?token=s3cret', {}),
        (err: Error) => err instanceof TypeError && err.message === 'not a URL (expected ws://host:port/ or wss://host/)',
      )
    }
  })
})

// ------------------------------------------------------------------ memory only

describe('memory transport', () => {
  it('terminate drops frames not yet delivered, both ways', async () => {
    const [a, b] = memoryPair()
    const ra = new Recorder(a)
    const rb = new Recorder(b)
    a.send('lost')
    b.send('lost too')
    assert.equal(a.bufferedAmount, 4)
    b.terminate()
    assert.equal(a.bufferedAmount, 0)
    await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
    assert.deepEqual([ra.events, rb.events], [['close:1006'], ['close:1006']])
  })

  it('counts bufferedAmount in UTF-8 bytes', () => {
    const [a] = memoryPair()
    a.send('é€')
    assert.equal(a.bufferedAmount, 5)
  })

  it('sendBinary sends a copy', async () => {
    const [a, b] = memoryPair()
    const rb = new Recorder(b)
    const bytes = new Uint8Array([1, 2, 3])
    a.sendBinary(bytes)
    bytes[0] = 9
    await waitFor(() => rb.messages.length === 1, 'frame', 5000, 2)
    assert.deepEqual([...(rb.messages[0]!.data as Uint8Array)], [1, 2, 3])
    assert.throws(() => a.sendBinary('x' as unknown as Uint8Array), TypeError)
  })

  it('both ends closing at once each see the code the other sent', async () => {
    const [a, b] = memoryPair()
    const ra = new Recorder(a)
    const rb = new Recorder(b)
    a.close(4000, 'from a')
    b.close(4001, 'from b')
    await waitFor(() => ra.closes.length === 1 && rb.closes.length === 1, 'both closed', 5000, 2)
    assert.deepEqual([ra.closes, rb.closes], [[[4001, 'from b']], [[4000, 'from a']]])
  })

  describe('memoryConnector', () => {
    it('hands the server end and the peer info to accept; the client opens asynchronously, before server frames', async () => {
      const accepted: Array<{ server: Transport; info: PeerInfo }> = []
      const connect = memoryConnector(
        (server, info) => {
          accepted.push({ server, info })
          server.send('{"type":"workerregistered"}')
        },
        { ip: '10.0.0.7', headers: { Host: 'engine.local' } },
      )
      const client = connect('ws://engine.local/?token=abc&flag&token=d%20e', {
        headers: { 'X-Api-Token': 'secret-1', host: 'second' },
        handshakeTimeoutMs: 10,
      })
      assert.equal(client.isOpen, false)
      const rc = new Recorder(client)
      assert.equal(accepted.length, 1)
      assert.deepEqual(accepted[0]!.info, {
        ip: '10.0.0.7',
        headers: { host: 'engine.local, second', 'x-api-token': 'secret-1' },
        query: { token: ['abc', 'd e'], flag: [''] },
      })
      await Promise.resolve()
      assert.equal(rc.opened, 0)
      await waitFor(() => rc.messages.length === 1, 'server frame', 5000, 2)
      assert.deepEqual(rc.events, ['open', 'text:{"type":"workerregis'])
      assert.equal(client.isOpen, true)
      const rs = new Recorder(accepted[0]!.server)
      client.send('{"type":"ping"}')
      await waitFor(() => rs.messages.length === 1, 'client frame', 5000, 2)
      client.close(1000)
      await waitFor(() => rs.closes.length === 1 && rc.closes.length === 1, 'both closed', 5000, 2)
      assert.deepEqual(rs.closes, [[1000, '']])
    })

    it('defaults: no address, no headers, no query', () => {
      let seen: PeerInfo | undefined
      memoryConnector((_server, info) => {
        seen = info
      })('ws://x', {})
      assert.deepEqual(seen, { ip: null, headers: {}, query: {} })
    })

    it('closing the client end before it opened drops the connection with 1006 on both ends', async () => {
      let server: Transport | undefined
      const client = memoryConnector((s) => {
        server = s
      })('ws://x', {})
      const rc = new Recorder(client)
      const rs = new Recorder(server!)
      client.close(1000)
      await waitFor(() => rc.closes.length === 1 && rs.closes.length === 1, 'both closed', 5000, 2)
      assert.deepEqual([rc.events, rs.events], [['close:1006'], ['close:1006']])
    })

    it('an accept that throws makes the client end report the error, then 1006', async () => {
      const client = memoryConnector(() => {
        throw new Error('engine is stopping')
      })('ws://x', {})
      const rc = new Recorder(client)
      await waitFor(() => rc.closes.length === 1, 'closed', 5000, 2)
      assert.deepEqual(rc.events, ['error', 'close:1006'])
      assert.equal(rc.errors[0]!.message, 'engine is stopping')
    })

    it('refuses URLs that are not ws: or wss:', () => {
      assert.throws(() => memoryConnector(() => {})('http://x', {}), TypeError)
    })
  })
})

/**
 * The ws client's masking key (RFC 6455 §5.3): zero to a loopback engine, random anywhere else.
 * Frames are captured on a raw TCP server that does the opening handshake itself, so the test sees
 * the key bytes as they crossed the socket. The address classification is checked with hostile
 * spellings (fast-check): IPv4-mapped IPv6, short IPv4 forms, brackets, upper case, look-alike names.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { networkInterfaces } from 'node:os'
import { describe, it, type TestContext } from 'node:test'
import fc from 'fast-check'
import { isLoopbackAddress, isLoopbackUrl } from '../src/transport/loopback.ts'
import { connectWebSocket } from '../src/transport/ws.ts'
import { waitFor } from '../../../test/support/wait.ts'

const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'

interface CapturedFrame {
  masked: boolean
  key: Buffer
  payload: string
}

/**
 * A TCP server on `host` that answers the WebSocket opening handshake by hand and records the
 * first client frame of each connection (payloads under 126 bytes), unmasking it with its key.
 */
async function captureServer(t: TestContext, host: string): Promise<{ port: number; frames: CapturedFrame[] }> {
  const frames: CapturedFrame[] = []
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    let buffer = Buffer.alloc(0)
    let upgraded = false
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk])
      if (!upgraded) {
        const end = buffer.indexOf('\r\n\r\n')
        if (end < 0) return
        const key = /sec-websocket-key: *(\S+)/i.exec(buffer.subarray(0, end).toString())![1]!
        const accept = createHash('sha1').update(key + WS_GUID).digest('base64')
        socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`)
        upgraded = true
        buffer = buffer.subarray(end + 4)
      }
      if (buffer.length < 2) return
      const masked = (buffer[1]! & 0x80) !== 0
      const length = buffer[1]! & 0x7f
      const headerLength = 2 + (masked ? 4 : 0)
      if (length >= 126 || buffer.length < headerLength + length) return
      const key = masked ? Buffer.from(buffer.subarray(2, 6)) : Buffer.alloc(0)
      const payload = Buffer.from(buffer.subarray(headerLength, headerLength + length))
      if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= key[i % 4]!
      frames.push({ masked, key, payload: payload.toString() })
      buffer = Buffer.alloc(0)
      socket.destroy()
    })
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  t.after(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port: (server.address() as AddressInfo).port, frames }
}

/** Connects to `url` with the svc client transport, sends `text` once open, and returns the frame captured. */
async function sendOne(t: TestContext, url: string, frames: CapturedFrame[], text: string): Promise<CapturedFrame> {
  const before = frames.length
  const transport = connectWebSocket(url, { handshakeTimeoutMs: 10_000 })
  t.after(() => transport.terminate())
  transport.setHandlers({ open: () => transport.send(text), message() {}, close() {}, error() {} })
  await waitFor(() => frames.length > before, `a frame from ${url}`, 10_000, 2)
  return frames[before]!
}

/** An IPv4 address of this machine that is not a loopback address, if it has one. */
function nonLoopbackIPv4(): string | undefined {
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) if (entry.family === 'IPv4' && !entry.internal && !isLoopbackAddress(entry.address)) return entry.address
  }
  return undefined
}

describe('ws client masking key', () => {
  it('is all zeros to a loopback engine (127.0.0.1, localhost), the payload readable as sent', async (t) => {
    const { port, frames } = await captureServer(t, '127.0.0.1')
    for (const url of [`ws://127.0.0.1:${port}/`, `ws://127.1:${port}/`, `ws://LOCALHOST:${port}/`]) {
      const frame = await sendOne(t, url, frames, '{"type":"ping"}')
      assert.equal(frame.masked, true, `${url}: a client frame still carries the mask bit (RFC 6455 §5.1)`)
      assert.deepEqual([...frame.key], [0, 0, 0, 0], `${url}: zero key`)
      assert.equal(frame.payload, '{"type":"ping"}')
    }
  })

  it('is all zeros to ::1', async (t) => {
    let capture: Awaited<ReturnType<typeof captureServer>>
    try {
      capture = await captureServer(t, '::1')
    } catch {
      t.skip('no IPv6 loopback on this machine')
      return
    }
    const frame = await sendOne(t, `ws://[::1]:${capture.port}/`, capture.frames, 'x')
    assert.deepEqual([...frame.key], [0, 0, 0, 0])
  })

  it('is random to a non-loopback address of this machine', async (t) => {
    const address = nonLoopbackIPv4()
    if (address === undefined) {
      t.skip('this machine has no non-loopback IPv4 address')
      return
    }
    const { port, frames } = await captureServer(t, '0.0.0.0')
    const keys: string[] = []
    // Three connections: a random key is all zeros with probability 2^-32 per frame.
    for (let i = 0; i < 3; i++) {
      const frame = await sendOne(t, `ws://${address}:${port}/`, frames, '{"type":"ping"}')
      assert.equal(frame.masked, true)
      assert.equal(frame.payload, '{"type":"ping"}')
      keys.push(frame.key.toString('hex'))
    }
    assert.ok(keys.some((key) => key !== '00000000'), `keys ${keys.join(', ')}`)
    assert.ok(new Set(keys).size > 1, `keys differ between connections: ${keys.join(', ')}`)
  })
})

describe('loopback address classification', () => {
  const octet = fc.integer({ min: 0, max: 255 })
  const ipv4 = fc.tuple(octet, octet, octet, octet)

  it('knows the loopback spellings and refuses look-alikes', () => {
    for (const url of [
      'ws://127.0.0.1:49134',
      'ws://127.1:1/',
      'ws://0x7f000001:1',
      'ws://2130706433/',
      'wss://127.255.255.254/',
      'ws://[::1]:1',
      'ws://[0:0:0:0:0:0:0:1]:1',
      'ws://[::ffff:127.0.0.1]:1',
      'ws://[::FFFF:7F00:1]:1',
      'ws://localhost:1',
      'ws://LocalHost:1/ws?token=t',
      'ws://user:pw@localhost:1',
    ]) {
      assert.equal(isLoopbackUrl(url), true, url)
    }
    for (const url of [
      'ws://localhost.evil.com:1',
      'ws://localhost.:1',
      'ws://evil.localhost:1',
      'ws://127.0.0.1.evil.com:1',
      'ws://128.0.0.1:1',
      'ws://[::2]:1',
      'ws://[::ffff:128.0.0.1]:1',
      'ws://[::127.0.0.1]:1',
      'ws://0.0.0.0:1',
      'ws://[::]:1',
      'ws://192.0.2.2:1',
      'ws://evil.com/127.0.0.1',
      'ws://evil.com#@127.0.0.1',
      'ws://127.0.0.1@evil.com:1',
      'ws://[::1',
      'ws://',
      '127.0.0.1',
      '',
    ]) {
      assert.equal(isLoopbackUrl(url), false, url)
    }
    assert.equal(isLoopbackAddress('127.1'), false, 'not an address: only URLs read short forms')
    assert.equal(isLoopbackAddress('[::1]'), false, 'brackets belong to URLs')
    assert.equal(isLoopbackAddress('::ffff:127.0.0.1'), true)
    assert.equal(isLoopbackAddress(undefined), false)
  })

  it('property: a dotted IPv4 host is loopback exactly when its first octet is 127, in every spelling', () => {
    fc.assert(
      fc.property(ipv4, fc.boolean(), ([a, b, c, d], upper) => {
        const loopback = a === 127
        const mapped = `::ffff:${a}.${b}.${c}.${d}`
        assert.equal(isLoopbackUrl(`ws://${a}.${b}.${c}.${d}:1/`), loopback)
        assert.equal(isLoopbackUrl(`ws://[${upper ? mapped.toUpperCase() : mapped}]:1/`), loopback)
        assert.equal(isLoopbackAddress(`${a}.${b}.${c}.${d}`), loopback)
        assert.equal(isLoopbackAddress(mapped), loopback)
        // Short form a.N (N the last 24 bits), which the URL parser canonicalises.
        assert.equal(isLoopbackUrl(`ws://${a}.${(b << 16) | (c << 8) | d}:1/`), loopback)
        // As a name's label it is never loopback.
        assert.equal(isLoopbackUrl(`ws://${a}.${b}.${c}.${d}.evil.com:1/`), false)
      }),
      { numRuns: 300 },
    )
  })

  it('property: only the name localhost itself (any case) is loopback; names around it are not', () => {
    const label = fc.stringMatching(/^[a-z0-9-]{1,12}$/)
    fc.assert(
      fc.property(fc.constantFrom('localhost', 'LOCALHOST', 'LocalHost'), label, fc.constantFrom('.', '-', ''), (name, extra, join) => {
        assert.equal(isLoopbackUrl(`ws://${name}:1/`), true)
        assert.equal(isLoopbackUrl(`ws://${name}${join === '' ? '.' : join}${extra}:1/`), false)
        assert.equal(isLoopbackUrl(`ws://${extra}.${name}:1/`), false)
      }),
      { numRuns: 200 },
    )
  })

  it('property: never throws, and anything it calls loopback parses to a loopback host', () => {
    const hostile = fc.oneof(
      fc.string(),
      fc.string().map((s) => `ws://${s}`),
      fc.tuple(fc.constantFrom('ws://', 'wss://', 'WS://', 'http://'), fc.constantFrom('[', '', '[::ffff:', '[::'), fc.string({ maxLength: 20 }), fc.constantFrom(']', '', ']:1', ':1')).map((parts) => parts.join('')),
      fc.anything(),
    )
    fc.assert(
      fc.property(hostile, (input) => {
        const result = isLoopbackUrl(input)
        assert.equal(typeof result, 'boolean')
        if (result) {
          const hostname = new URL(input as string).hostname
          assert.ok(hostname === 'localhost' || isLoopbackAddress(hostname.replace(/^\[|\]$/g, '')), hostname)
        }
        assert.equal(typeof isLoopbackAddress(input), 'boolean')
      }),
      { numRuns: 500 },
    )
  })
})

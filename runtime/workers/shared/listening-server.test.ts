import assert from 'node:assert/strict'
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo } from 'node:net'
import { describe, it } from 'node:test'
import { createManualClock } from './clock.ts'
import { ListeningServer, listenUrl, SERVER_TIMEOUTS, serverOptions } from './listening-server.ts'
import { gate, recordingLogger } from './test-support/fakes.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** GET over a fresh connection; resolves with status and body text. */
function get(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode!, text }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

/** A port that was free a moment ago (to force a rebind, which port 0 → port 0 is not). */
async function freePort(): Promise<number> {
  const probe = createNetServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const port = (probe.address() as AddressInfo).port
  await new Promise((resolve) => probe.close(resolve))
  return port
}

function setup(handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('ok')) {
  const { log, entries } = recordingLogger()
  const clock = createManualClock()
  const reported: string[][] = []
  const listener = new ListeningServer({
    name: 'svc-test',
    log,
    clock,
    createServer: (options) => createServer(options, handler),
    onListenUrls: (urls) => reported.push(urls),
  })
  return { listener, entries, clock, reported }
}

describe('listenUrl', () => {
  it('shows wildcard hosts as loopback and brackets IPv6', () => {
    assert.equal(listenUrl('0.0.0.0', 3111), 'http://127.0.0.1:3111')
    assert.equal(listenUrl('::', 1), 'http://[::1]:1')
    assert.equal(listenUrl('::1', 2, 'ws'), 'ws://[::1]:2')
    assert.equal(listenUrl('localhost', 3), 'http://localhost:3')
  })
})

describe('serverOptions', () => {
  it('enforces the timeouts with a connection check frequent enough to see them', () => {
    assert.deepEqual(serverOptions(), { headersTimeout: SERVER_TIMEOUTS.headersTimeoutMs, requestTimeout: SERVER_TIMEOUTS.requestTimeoutMs, keepAliveTimeout: 5000, connectionsCheckingInterval: 1000 })
    assert.equal(serverOptions({ headersTimeoutMs: 300 }).connectionsCheckingInterval, 60)
    assert.equal(serverOptions({ headersTimeoutMs: 20, requestTimeoutMs: 20 }).connectionsCheckingInterval, 10)
    assert.equal(serverOptions({ checkIntervalMs: 7 }).connectionsCheckingInterval, 7)
    assert.throws(() => serverOptions({ headersTimeoutMs: 0 }), /headersTimeoutMs must be a positive integer/)
    assert.throws(() => serverOptions({ headersTimeoutMs: 5000, requestTimeoutMs: 1000 }), /must not exceed requestTimeoutMs/)
  })
})

describe('ListeningServer (builtins.md §3.1 rebind)', () => {
  it('creates its servers with the timeouts', async () => {
    const listener = new ListeningServer({ name: 'svc-test', log: recordingLogger().log, timeouts: { headersTimeoutMs: 300, requestTimeoutMs: 900 }, createServer: (options) => createServer(options) })
    await listener.listen('127.0.0.1', 0)
    try {
      assert.equal(listener.server!.headersTimeout, 300)
      assert.equal(listener.server!.requestTimeout, 900)
    } finally {
      await listener.stop()
    }
  })

  it('binds an ephemeral port, reports and logs its URL, serves, and stops', async () => {
    const { listener, entries, reported } = setup()
    assert.equal(await listener.listen('127.0.0.1', 0), true)
    const url = listener.urls[0]!
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)
    assert.deepEqual(reported, [[url]])
    assert.equal(entries[0]!.message, `svc-test listening on ${url}`)
    assert.deepEqual(await get(url), { status: 200, text: 'ok' })
    assert.equal(await listener.listen('127.0.0.1', 0), false, 'the same requested address does not rebind')
    await listener.stop()
    assert.deepEqual(listener.urls, [])
    await assert.rejects(get(url), { code: 'ECONNREFUSED' })
  })

  it('binds the new address first, lets in-flight requests finish, and closes the old server after the grace period', async () => {
    const held = gate()
    let arrived = 0
    const { listener, clock } = setup((req, res) => {
      arrived++
      if (req.url === '/slow') void held.promise.then(() => res.end('slow done'))
      else res.end('ok')
    })
    await listener.listen('127.0.0.1', 0)
    const oldUrl = listener.urls[0]!
    const slow = get(`${oldUrl}/slow`)
    await waitFor(() => arrived === 1, 'arrived === 1')
    assert.equal(await listener.listen('127.0.0.1', await freePort()), true)
    const newUrl = listener.urls[0]!
    assert.notEqual(newUrl, oldUrl)
    assert.deepEqual(await get(newUrl), { status: 200, text: 'ok' })
    await assert.rejects(get(oldUrl), { code: 'ECONNREFUSED' }, 'the old server no longer accepts')
    assert.equal(listener.retiringCount, 1)
    held.open()
    assert.deepEqual(await slow, { status: 200, text: 'slow done' }, 'an in-flight request finishes on the old server')
    await waitFor(() => listener.retiringCount === 0, 'listener.retiringCount === 0')
    clock.advance(10_000)
    await listener.stop()
  })

  it('cuts connections still open on the old server when the grace period ends', async () => {
    let arrived = false
    const { listener, clock } = setup(() => {
      arrived = true // and never answers
    })
    await listener.listen('127.0.0.1', 0)
    const stuck = get(`${listener.urls[0]!}/never`)
    await waitFor(() => arrived, 'the request at the server')
    await listener.listen('127.0.0.1', await freePort())
    clock.advance(9_999)
    assert.equal(listener.retiringCount, 1)
    clock.advance(1)
    await assert.rejects(stuck, { code: 'ECONNRESET' })
    await listener.stop()
  })

  it('keeps the old server serving when the new address cannot be bound', async () => {
    const { listener, reported } = setup()
    await listener.listen('127.0.0.1', 0)
    const url = listener.urls[0]!
    const blocker = createNetServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const taken = (blocker.address() as AddressInfo).port
    try {
      await assert.rejects(listener.listen('127.0.0.1', taken), { code: 'EADDRINUSE' })
      assert.deepEqual(listener.urls, [url])
      assert.equal(reported.length, 1)
      assert.deepEqual(await get(url), { status: 200, text: 'ok' })
    } finally {
      blocker.close()
      await listener.stop()
    }
  })
})

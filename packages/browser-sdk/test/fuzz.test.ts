/**
 * Hostile input at svc-browser-sdk's edges (fast-check): what a page passes to `registerWorker`
 * (any address, any options), and what arrives on its WebSocket from whatever answers at that
 * address — arbitrary text and binary frames, well-formed frames with hostile fields, any close
 * code and reason. The page never sees an exception it did not cause, stays connected through
 * garbage, keeps answering the invocations it owes, and reconnects after any close. The transport
 * is the browser one over Node's WHATWG WebSocket (the same standard as a browser's).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { WebSocketServer, type WebSocket as WsSocket } from 'ws'
import { InvocationError } from 'svc-protocol/client'
import { BrowserClient } from '../src/client.ts'
import { resolveAddress, resolveOptions } from '../src/options.ts'
import { waitFor } from '../../../test/support/wait.ts'

const quiet = { warn: () => {} }

describe('registerWorker with any address and options (fast-check)', () => {
  it('returns a client, or throws the documented TypeError / INVALID_NAMESPACE, never anything else', () => {
    const anything = fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.object({ maxDepth: 1 }))
    const one = fc.oneof(
      anything,
      fc.constantFrom('ws://127.0.0.1:1/', 'wss://h/?token=a&token=b', 'ws://[::1]:1/x?t=%00', 'http://h/', 'javascript:alert(1)', 'ws://', 'ws://h/\ud800', ' ws://h/', '', 'wss://u:SECRET@h/', 'https://h/?token=SECRET'),
      fc.webUrl().map((u) => u.replace(/^https?/, 'ws')),
    )
    // Several engines of a fleet (issue 19 §3): lists of good, bad and odd entries.
    const address = fc.oneof({ weight: 3, arbitrary: one }, { weight: 2, arbitrary: fc.array(one, { maxLength: 5 }) })
    const options = fc.record(
      {
        workerName: fc.oneof(anything, fc.string({ unit: 'binary' })),
        workerDescription: anything,
        namespace: fc.oneof(anything, fc.constantFrom(' ', 'tenant-a', 'bad\u0000ns', '\udc00', 'x'.repeat(1025))),
        invocationTimeoutMs: fc.oneof(anything, fc.constantFrom(0, -1, Number.NaN, Infinity)),
        reconnectionConfig: fc.oneof(anything, fc.record({ initialDelayMs: anything, maxDelayMs: anything, jitterFactor: fc.oneof(anything, fc.double({ min: -1, max: 2 })), maxRetries: anything, ['__proto__']: anything }, { requiredKeys: [] })),
        headers: fc.oneof(anything, fc.dictionary(fc.string(), fc.string())),
      },
      { requiredKeys: [] },
    )
    fc.assert(
      fc.property(address, fc.oneof(options, anything), (addr, opts) => {
        let client: BrowserClient | undefined
        try {
          // Connects nowhere: the connector refuses at once, as a browser would for a bad host.
          client = new BrowserClient(resolveAddress(addr), resolveOptions(opts as never), {
            log: quiet,
            connector: () => {
              throw new TypeError('no network in this test')
            },
          })
        } catch (err) {
          const documented = err instanceof TypeError || (err instanceof InvocationError && err.code === 'INVALID_NAMESPACE')
          assert.ok(documented, `unexpected ${String(err)}`)
          assert.ok(!(err as Error).message.includes('SECRET'), `credentials in ${(err as Error).message}`)
          return
        }
        assert.ok(client.getAddresses().length >= 1)
        assert.ok(client.getAddresses().includes(client.getAddress()))
        for (const entry of client.getAddresses()) {
          const protocol = new URL(entry).protocol
          assert.ok(protocol === 'ws:' || protocol === 'wss:')
        }
        assert.ok(['reconnecting', 'connecting'].includes(client.getConnectionState()))
        void client.shutdown()
      }),
      { numRuns: 500 },
    )
  })
})

describe('the browser transport under hostile frames and closes (fast-check)', () => {
  let wss: WebSocketServer
  let url: string
  /** What the server does with each new connection (set per run). */
  let onConnection: (ws: WsSocket) => void = () => {}
  const uncaught: unknown[] = []
  const onUncaught = (err: unknown) => uncaught.push(err)

  before(async () => {
    wss = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    await new Promise<void>((resolve) => wss.once('listening', resolve))
    url = `ws://127.0.0.1:${(wss.address() as { port: number }).port}/?token=t`
    wss.on('connection', (ws) => onConnection(ws))
    process.on('uncaughtException', onUncaught)
  })
  after(async () => {
    process.off('uncaughtException', onUncaught)
    for (const ws of wss.clients) ws.terminate()
    await new Promise<void>((resolve) => wss.close(() => resolve()))
  })

  const json = fc.jsonValue({ maxDepth: 3 })
  const text = fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), fc.constantFrom('browser::echo', 'browser::unknown', 'stream', '__proto__', ''))
  const field = fc.oneof(json, text, fc.constant(null))
  // A `registrationrejected` with any code but FUNCTION_NAMESPACE_CONFLICT is a fatal refusal by
  // design (sdk.md §7.3), so the non-fatal one is generated apart.
  const TYPES = ['invokefunction', 'invocationresult', 'workerregistered', 'registertrigger', 'unregistertrigger', 'triggerregistrationresult', 'ping', 'pong', 'error', 'nonsense']
  const FIELDS = ['invocation_id', 'function_id', 'data', 'result', 'error', 'worker_id', 'reattach_token', 'id', 'trigger_type', 'config', 'code', 'message', 'namespace', 'traceparent']
  /** A frame from the "engine": garbage text, bytes, or a known type with hostile fields. */
  const frame = fc.oneof(
    fc.tuple(fc.constantFrom(...TYPES), fc.dictionary(fc.constantFrom(...FIELDS), field)).map(([type, fields]) => ({ text: JSON.stringify({ ...fields, type }) })),
    fc.dictionary(fc.constantFrom(...FIELDS), field).map((fields) => ({ text: JSON.stringify({ ...fields, type: 'registrationrejected', code: 'FUNCTION_NAMESPACE_CONFLICT' }) })),
    fc.string({ unit: 'binary', maxLength: 200 }).map((t) => ({ text: t })),
    fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ bytes })),
    fc.constantFrom({ text: '' }, { text: '{' }, { text: '[]' }, { text: 'null' }, { text: '{"type":"invokefunction","__proto__":{"x":1}}' }, { text: '"'.repeat(3) }),
  )

  it('never throws, stays connected, and still answers the invocations it owes', async () => {
    const client = new BrowserClient(resolveAddress(url), resolveOptions({ workerName: 'fuzzed' }), { log: quiet, random: () => 0, timings: { idleTimeoutMs: 60_000 } })
    client.registerFunction('browser::echo', (data: unknown) => ({ echoed: data }))
    let server: WsSocket | undefined
    const replies = new Map<string, unknown>()
    onConnection = (ws) => {
      server = ws
      ws.on('message', (data, isBinary) => {
        if (isBinary) return
        try {
          const msg = JSON.parse(data.toString()) as { type?: string; invocation_id?: string }
          if (msg.type === 'invocationresult' && typeof msg.invocation_id === 'string' && msg.invocation_id.startsWith('check-')) replies.set(msg.invocation_id, msg)
        } catch {
          /* not ours */
        }
      })
    }
    try {
      await waitFor(() => client.getConnectionState() === 'connected' && server !== undefined, "client.getConnectionState() === 'connected' && server !== undefined", 10_000)
      let run = 0
      await fc.assert(
        fc.asyncProperty(fc.array(frame, { maxLength: 25 }), json, async (frames, payload) => {
          const ws = server!
          for (const f of frames) {
            if ('bytes' in f) ws.send(f.bytes, { binary: true })
            else ws.send(f.text)
          }
          const id = `check-${run++}`
          ws.send(JSON.stringify({ type: 'invokefunction', invocation_id: id, function_id: 'browser::echo', data: payload }))
          await waitFor(() => replies.has(id), 'replies.has(id)', 10_000)
          assert.equal(client.getConnectionState(), 'connected')
          assert.equal(server, ws, 'the same connection all along')
          // As JSON carries it (-0 arrives as 0).
          const result = JSON.parse(JSON.stringify({ echoed: payload }))
          assert.deepEqual(replies.get(id), { type: 'invocationresult', invocation_id: id, function_id: 'browser::echo', result })
        }),
        { numRuns: 60 },
      )
      assert.deepEqual(uncaught, [])
    } finally {
      await client.shutdown()
    }
  })

  it('reconnects after the server closes with any code and reason', async () => {
    const client = new BrowserClient(resolveAddress(url), resolveOptions({ reconnectionConfig: { initialDelayMs: 0, maxDelayMs: 0 } }), { log: quiet })
    const servers: WsSocket[] = []
    onConnection = (ws) => servers.push(ws)
    const sendable = fc.oneof(fc.integer({ min: 1000, max: 1014 }).filter((c) => c !== 1004 && c !== 1005 && c !== 1006), fc.integer({ min: 3000, max: 4999 }))
    // A close reason carries at most 123 bytes of UTF-8.
    const reason = fc.string({ unit: 'grapheme', maxLength: 30 }).filter((r) => Buffer.byteLength(r) <= 123)
    try {
      await waitFor(() => client.getConnectionState() === 'connected' && servers.length === 1, "client.getConnectionState() === 'connected' && servers.length === 1", 10_000)
      await fc.assert(
        fc.asyncProperty(fc.oneof(sendable.map((code) => ({ code })), fc.constant({ code: undefined })), reason, fc.boolean(), async ({ code }, why, abrupt) => {
          const before = servers.length
          const ws = servers.at(-1)!
          if (abrupt) ws.terminate()
          else ws.close(code, code === undefined ? undefined : why)
          await waitFor(() => servers.length === before + 1 && client.getConnectionState() === 'connected', "servers.length === before + 1 && client.getConnectionState() === 'connected'", 10_000)
        }),
        { numRuns: 25 },
      )
      assert.deepEqual(uncaught, [])
    } finally {
      await client.shutdown()
    }
  })
})

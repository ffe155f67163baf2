/**
 * The client core runs where there is no Node (issue 17 part 1: "no Node import"): its entry
 * `svc-protocol/client` bundles for esbuild's `neutral` platform with nothing external and nothing
 * from outside `packages/protocol/src`, and the bundle runs a whole session in a `vm` context that
 * has only what browsers have too (timers, `crypto`, `TextDecoder`, `URL`, `console`): no
 * `process`, no `Buffer`, no `require`. Channels too (issue 17 part 2): ends over a WHATWG
 * `WebSocket` class, refs materialised in payloads and results, `createChannel`.
 */
import assert from 'node:assert/strict'
import { dirname, join, relative, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createContext, runInContext } from 'node:vm'
import { build } from 'esbuild'
import { ScriptedTransport } from './support.ts'
import { waitFor } from '../../../../test/support/wait.ts'

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src')
const ENTRY = join(SRC, 'client', 'index.ts')

/** Bundles the core's entry for a platform without Node built-ins; fails on anything it cannot resolve. */
async function bundle(format: 'esm' | 'iife') {
  return build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'neutral',
    format,
    globalName: format === 'iife' ? 'svcClient' : undefined,
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
}

describe('svc-protocol/client is platform-free', () => {
  it('bundles for a neutral platform from svc-protocol sources alone', async () => {
    const result = await bundle('esm')
    const inputs = Object.keys(result.metafile.inputs)
    assert.ok(inputs.length > 5, `bundled ${inputs.length} files`)
    for (const input of inputs) {
      const path = relative(SRC, join(process.cwd(), input))
      assert.ok(!path.startsWith('..') && !path.includes(`node_modules${sep}`), `the core imports ${input}, outside svc-protocol's sources`)
      assert.ok(!path.startsWith(`transport${sep}ws`) && !path.startsWith(`transport${sep}memory`), `the core imports the transport ${input}`)
    }
    const text = result.outputFiles[0]!.text
    assert.doesNotMatch(text, /from\s*["'](node:|[a-z@])/, 'no import is left for the platform to resolve')
    assert.doesNotMatch(text, /\brequire\(/)
  })

  it('runs a whole session in a context with only web globals', async () => {
    const code = (await bundle('iife')).outputFiles[0]!.text
    const context = createContext({ setTimeout, clearTimeout, setInterval, clearInterval, console, crypto: globalThis.crypto, TextDecoder, TextEncoder, URL })
    runInContext(code, context)
    assert.equal(runInContext('typeof process + typeof Buffer + typeof require', context), 'undefinedundefinedundefined')
    const core = context.svcClient as typeof import('../../src/client/index.ts')

    const transports: ScriptedTransport[] = []
    const session = new core.ClientSession({
      address: 'ws://engine.example/?token=t',
      connector: () => {
        const transport = new ScriptedTransport()
        transports.push(transport)
        return transport
      },
      announce: { runtime: 'browser', name: 'page' },
      log: { warn: () => {} },
    })
    session.registerFunction('page::double', (n: number) => n * 2)
    const transport = transports[0]!
    transport.open()
    transport.deliver({ type: 'workerregistered', worker_id: 'w1', reattach_token: 'r1' })
    assert.deepEqual(
      transport.sent.map((t) => JSON.parse(t).type),
      ['invokefunction', 'registerfunction'],
    )

    transport.deliver({ type: 'invokefunction', invocation_id: 'i1', function_id: 'page::double', data: 21 })
    await waitFor(() => transport.sent.length === 3, 'the handler answered', 10_000, 5)
    assert.deepEqual(JSON.parse(transport.sent[2]!), { type: 'invocationresult', invocation_id: 'i1', function_id: 'page::double', result: 42 })

    const call = session.trigger({ function_id: 'node::greet', payload: { name: 'page' } })
    const frame = JSON.parse(transport.sent[3]!)
    assert.match(frame.invocation_id, core.CALL_ID_FORMAT)
    transport.deliver({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'node::greet', result: 'hello page' })
    assert.equal(await call, 'hello page')

    const pending = assert.rejects(session.trigger({ function_id: 'never::answers', payload: 1 }), (err: Error & { code?: string }) => err.code === 'SHUTDOWN')
    await session.shutdown()
    await pending
    assert.equal(transport.closedWith, 1000)
    assert.equal(session.getConnectionState(), 'disconnected')
  })

  it('runs channel ends over a WHATWG WebSocket class with only web globals', async () => {
    const code = (await bundle('iife')).outputFiles[0]!.text
    const context = createContext({ setTimeout, clearTimeout, setInterval, clearInterval, console, crypto: globalThis.crypto, TextDecoder, TextEncoder, URL })
    runInContext(code, context)
    const core = context.svcClient as typeof import('../../src/client/index.ts')

    /** A browser-like WebSocket: `on*` handlers, `binaryType`, ArrayBuffer messages. */
    class PageWebSocket {
      static opened: PageWebSocket[] = []
      readonly url: string
      binaryType = 'blob'
      bufferedAmount = 0
      readonly sent: Array<string | number[]> = []
      closedWith: number | undefined
      onopen: ((event: unknown) => void) | null = null
      onmessage: ((event: { data: unknown }) => void) | null = null
      onclose: ((event: { code: number; reason: string }) => void) | null = null
      onerror: ((event: unknown) => void) | null = null
      constructor(url: string) {
        this.url = url
        PageWebSocket.opened.push(this)
      }
      send(data: string | Uint8Array): void {
        this.sent.push(typeof data === 'string' ? data : [...new Uint8Array(data.buffer, data.byteOffset, data.byteLength)].slice(0, 1).concat(data.byteLength))
      }
      close(code?: number): void {
        this.closedWith = code
      }
    }

    const transports: ScriptedTransport[] = []
    const channels = new core.Channels({ address: 'ws://engine.example/?token=t', socket: core.webSocketChannels(PageWebSocket), log: { warn: () => {} } })
    const session = new core.ClientSession({
      address: 'ws://engine.example/?token=t',
      connector: () => {
        const transport = new ScriptedTransport()
        transports.push(transport)
        return transport
      },
      announce: { runtime: 'browser', name: 'page' },
      log: { warn: () => {} },
      hooks: { materialize: channels.materialize },
    })
    const transport = transports[0]!
    transport.open()
    const reader = { channel_id: 'c1', access_key: 'k/1', direction: 'read' }
    const received: unknown[] = []
    session.registerFunction('page::upload', async ({ body }: { body: InstanceType<typeof core.ChannelReader> }) => {
      body.onMessage((text) => received.push(text))
      const all = await body.readAll()
      return { bytes: all.byteLength, first: all[0], last: all[all.byteLength - 1] }
    })
    transport.deliver({ type: 'invokefunction', invocation_id: 'i1', function_id: 'page::upload', data: { body: reader } })
    await waitFor(() => PageWebSocket.opened.length === 1, 'the reader connected on first use', 10_000, 5)
    const readSocket = PageWebSocket.opened[0]!
    assert.equal(readSocket.url, 'ws://engine.example/ws/channels/c1?key=k%2F1&dir=read')
    assert.equal(readSocket.binaryType, 'arraybuffer')
    readSocket.onopen!({})
    readSocket.onmessage!({ data: 'meta' })
    readSocket.onmessage!({ data: new Uint8Array([1, 2, 3]).buffer })
    readSocket.onmessage!({ data: new Uint8Array([4, 5]).buffer })
    readSocket.onclose!({ code: 1000, reason: '' })
    await waitFor(() => transport.sent.some((t) => t.includes('"i1"')), 'the handler answered', 10_000, 5)
    assert.deepEqual(JSON.parse(transport.sent.find((t) => t.includes('"i1"'))!).result, { bytes: 5, first: 1, last: 5 })
    assert.deepEqual(received, ['meta'])

    const created = session.createChannel()
    const call = JSON.parse(transport.sent.at(-1)!)
    assert.equal(call.function_id, 'engine::channels::create')
    const refs = { writer: { channel_id: 'c2', access_key: 'w', direction: 'write' }, reader: { channel_id: 'c2', access_key: 'r', direction: 'read' } }
    transport.deliver({ type: 'invocationresult', invocation_id: call.invocation_id, function_id: call.function_id, result: refs })
    const channel = await created
    assert.ok(channel.writer instanceof core.ChannelWriter)
    assert.deepEqual(JSON.parse(JSON.stringify(channel.readerRef)), refs.reader)
    const wrote = channel.writer.sendBinary(new Uint8Array(100 * 1024).fill(7))
    channel.writer.sendMessage('done')
    const closed = channel.writer.close()
    const writeSocket = PageWebSocket.opened[1]!
    assert.equal(writeSocket.url, 'ws://engine.example/ws/channels/c2?key=w&dir=write')
    writeSocket.onopen!({})
    await wrote
    assert.deepEqual(writeSocket.sent, [[7, 65536], [7, 36864], 'done'])
    assert.equal(writeSocket.closedWith, 1000)
    writeSocket.onclose!({ code: 1000, reason: '' })
    await closed
    await session.shutdown()
  })
})

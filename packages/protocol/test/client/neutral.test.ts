/**
 * The client core runs where there is no Node (issue 17 part 1: "no Node import"): its entry
 * `svc-protocol/client` bundles for esbuild's `neutral` platform with nothing external and nothing
 * from outside `packages/protocol/src`, and the bundle runs a whole session in a `vm` context that
 * has only what browsers have too (timers, `crypto`, `TextDecoder`, `URL`, `console`): no
 * `process`, no `Buffer`, no `require`.
 */
import assert from 'node:assert/strict'
import { dirname, join, relative, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createContext, runInContext } from 'node:vm'
import { build } from 'esbuild'
import { ScriptedTransport, until } from './support.ts'

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
    await until(() => transport.sent.length === 3, 'the handler answered')
    assert.deepEqual(JSON.parse(transport.sent[2]!), { type: 'invocationresult', invocation_id: 'i1', function_id: 'page::double', result: 42 })

    const call = session.trigger({ function_id: 'node::greet', payload: { name: 'page' } })
    const frame = JSON.parse(transport.sent[3]!)
    assert.match(frame.invocation_id, /^[0-9a-f-]{36}$/)
    transport.deliver({ type: 'invocationresult', invocation_id: frame.invocation_id, function_id: 'node::greet', result: 'hello page' })
    assert.equal(await call, 'hello page')

    const pending = assert.rejects(session.trigger({ function_id: 'never::answers', payload: 1 }), (err: Error & { code?: string }) => err.code === 'SHUTDOWN')
    await session.shutdown()
    await pending
    assert.equal(transport.closedWith, 1000)
    assert.equal(session.getConnectionState(), 'disconnected')
  })
})

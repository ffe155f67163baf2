/**
 * The slow-consumer rule (protocol.md §3.5, issue 16 item 5): a connection that stops reading its
 * socket, callee or caller, is dropped once bytes wait for it without any leaving for
 * `drain_timeout_ms`; the calls it was executing end with `invocation_stopped`, and the engine keeps
 * answering everyone else meanwhile. Real sockets: the stalled peer pauses its TCP socket, so the
 * kernel buffers fill and the engine's own buffer grows.
 */
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { Socket } from 'node:net'
import { after, describe, it } from 'node:test'
import WebSocket from 'ws'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { RawWorker, type Frame } from './support/raw-worker.ts'
import { waitFor } from './support/wait.ts'

const engines: TestEngine[] = []
const workers: RawWorker[] = []
const sockets: WebSocket[] = []
after(async () => {
  for (const socket of sockets) socket.terminate()
  await Promise.all(workers.map((w) => w.close()))
  await Promise.all(engines.map((e) => e.stop()))
})

/** Calls of 8 KiB: 2,000 of them (16 MiB) are more than the kernel buffers of a loopback connection hold. */
const FLOOD = 2000
const PAYLOAD = 'x'.repeat(8 * 1024)

async function engine(): Promise<TestEngine> {
  const e = await startTestEngine({ builtins: [], listener: { drain_timeout_ms: 500 }, config: { registration_namespace_grace_ms: 10 } })
  engines.push(e)
  return e
}

async function connect(url: string): Promise<RawWorker> {
  const w = await RawWorker.connect(url)
  workers.push(w)
  return w
}

/** A worker on a plain `ws` socket whose TCP socket can be paused; resolves with its worker id. */
async function pausable(url: string): Promise<{ socket: WebSocket; workerId: string; pause: () => void }> {
  const socket = new WebSocket(url, { perMessageDeflate: false })
  sockets.push(socket)
  const [first] = (await once(socket, 'message')) as [Buffer]
  const workerId = (JSON.parse(first.toString()) as Frame).worker_id as string
  return { socket, workerId, pause: () => (socket as unknown as { _socket: Socket })._socket.pause() }
}

describe('the slow-consumer rule', () => {
  it('drops a callee that stopped reading: every flooded call is answered, and an independent caller is served meanwhile', async () => {
    const e = await engine()
    const slow = await pausable(e.url)
    slow.socket.send(JSON.stringify({ type: 'registerfunction', id: 'slow::fn' }))
    const healthy = await connect(e.url)
    healthy.serve('healthy::echo', (data) => data)
    await waitFor(() => e.engine.functions.get('default', 'slow::fn') !== undefined && e.engine.functions.get('default', 'healthy::echo') !== undefined, 'the condition')
    slow.pause()

    const flood = await connect(e.url)
    const answers = new Map<string, Frame>()
    flood.onFrame((f) => {
      if (f.type === 'invocationresult') answers.set(f.invocation_id, f)
    })
    for (let i = 0; i < FLOOD; i++) flood.send(`{"type":"invokefunction","invocation_id":"f${i}","function_id":"slow::fn","data":"${PAYLOAD}"}`)

    const independent = await connect(e.url)
    for (let i = 0; i < 20; i++) assert.deepEqual((await independent.call('healthy::echo', { i })).result, { i })

    await waitFor(() => answers.size === FLOOD, 'answers.size === FLOOD', 30000)
    const codes = new Set([...answers.values()].map((f) => f.error?.code))
    // Calls the engine had sent on end with invocation_stopped; any that came after the drop find no function.
    assert.ok(codes.has('invocation_stopped'), `codes: ${[...codes].join(', ')}`)
    for (const code of codes) assert.ok(code === 'invocation_stopped' || code === 'function_not_found', `unexpected ${code}`)
    assert.equal(e.engine.functions.get('default', 'slow::fn'), undefined)
    assert.equal(e.engine.openSessions().some((s) => s.workerId === slow.workerId), false)
    assert.equal(flood.isOpen, true)
    assert.deepEqual((await independent.call('healthy::echo', 'after')).result, 'after')
  })

  it('drops a caller that stopped reading its results the same way, and frees its calls', async () => {
    const e = await engine()
    const healthy = await connect(e.url)
    healthy.serve('healthy::echo', (data) => data)
    await waitFor(() => e.engine.functions.get('default', 'healthy::echo') !== undefined, "e.engine.functions.get('default', 'healthy::echo') !== undefined")
    const caller = await pausable(e.url)
    caller.pause()
    for (let i = 0; i < FLOOD; i++) caller.socket.send(`{"type":"invokefunction","invocation_id":"c${i}","function_id":"healthy::echo","data":"${PAYLOAD}"}`)
    await waitFor(() => !e.engine.openSessions().some((s) => s.workerId === caller.workerId), '!e.engine.openSessions().some((s) => s.workerId === caller.workerId)', 30000)
    const other = await connect(e.url)
    assert.equal((await other.call('healthy::echo', 'still here')).result, 'still here')
    assert.equal(healthy.isOpen, true)
  })
})

/**
 * Channels between worker processes (issue 17 part 2, sdk.md §9): a producer process creates a
 * channel and hands the reader ref, nested in a payload, to a consumer in another process, then
 * streams text and binary items to it; and a process reads a reader ref another process returned
 * in its result. Real engine, real sockets, svc-sdk on both sides (`test/support/channel-worker.ts`).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { ROOT } from './support/processes.ts'
import { connectClient } from './support/sdk-harness.ts'
import { waitFor } from './support/wait.ts'

/** Same bytes as the worker's `pattern`: byte i is `(seed + i) % 251`. */
function pattern(size: number, seed: number): Buffer {
  const bytes = Buffer.alloc(size)
  for (let i = 0; i < size; i++) bytes[i] = (seed + i) % 251
  return bytes
}

const sha256 = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest('hex')

const children: ChildProcess[] = []

/** Starts `test/support/channel-worker.ts` as `role` and resolves once it is connected. */
async function startWorker(url: string, role: 'producer' | 'consumer'): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['test/support/channel-worker.ts', url, role], { cwd: ROOT, env: { ...process.env, OTEL_ENABLED: 'false' }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.push(child)
  const output: string[] = []
  child.stderr!.on('data', (d) => output.push(String(d)))
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"ready"')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}:\n${output.join('')}`)))
  })
  return child
}

describe('channels between worker processes (sdk.md §9)', () => {
  let e: TestEngine
  before(async () => {
    e = await startTestEngine({ builtins: [] })
    await Promise.all([startWorker(e.url, 'producer'), startWorker(e.url, 'consumer')])
    await waitFor(() => ['producer::send', 'producer::serve', 'consumer::take', 'consumer::fetch'].every((id) => e.engine.functions.resolve('default', id) !== undefined), 'the condition')
  })
  after(async () => {
    await Promise.all(children.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : (child.once('exit', resolve), child.kill('SIGTERM'))))))
    await e.stop()
  })

  it('a producer hands a reader ref in a payload to a consumer process and streams to it: text and binary items arrive in order, binary in ≤ 64 KiB items', async (t) => {
    const client = connectClient(e.engine, 'test')
    t.after(() => client.shutdown())
    const items = [{ text: 'begin' }, { size: 100 * 1024, seed: 1 }, { text: 'middle' }, { size: 10, seed: 2 }, { size: 300 * 1024, seed: 3 }, { text: 'end' }]
    const result = await client.trigger<unknown, { pid: number; consumer: { pid: number; note: string; items: Array<string | number>; runs: string[] } }>({
      function_id: 'producer::send',
      payload: { consumer: 'consumer::take', items },
      timeoutMs: 60_000,
    })
    assert.notEqual(result.pid, result.consumer.pid, 'two worker processes')
    assert.notEqual(result.pid, process.pid)
    assert.equal(result.consumer.note, 'from producer')
    assert.deepEqual(result.consumer.items, ['begin', 65536, 36864, 'middle', 10, 65536, 65536, 65536, 65536, 45056, 'end'])
    assert.deepEqual(result.consumer.runs, [sha256(), sha256(pattern(100 * 1024, 1)), sha256(pattern(10, 2), pattern(300 * 1024, 3)), sha256()])
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })

  it('a process reads a reader ref another process returned nested in its result', async (t) => {
    const client = connectClient(e.engine, 'test')
    t.after(() => client.shutdown())
    const sizes = [1, 70 * 1024, 200 * 1024]
    const result = await client.trigger<unknown, { pid: number; bytes: number; sha256: string }>({ function_id: 'consumer::fetch', payload: { sizes }, timeoutMs: 60_000 })
    assert.equal(result.bytes, sizes.reduce((a, b) => a + b, 0))
    assert.equal(result.sha256, sha256(...sizes.map((size, i) => pattern(size, i))))
    await waitFor(() => e.engine.channels.size === 0, 'e.engine.channels.size === 0')
  })
})

/**
 * Inbound `baggage` a svc-sdk worker cannot re-encode (protocol.md §10.1, W3C baggage): an entry
 * whose key or value is not well-formed text (a lone UTF-16 surrogate, which JSON frames carry as
 * `\ud800`) used to throw out of the handler span's start, inside the socket's message handler,
 * and take the worker process down with telemetry on (its default). The worker now drops such
 * entries, as the W3C propagator drops malformed ones, and answers.
 */
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { ROOT } from './support/processes.ts'
import { RawWorker } from './support/raw-worker.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'

describe('hostile inbound baggage and a worker with telemetry on', () => {
  let engine: TestEngine
  let worker: ChildProcess
  let exited: number | null | undefined
  let caller: RawWorker

  before(async () => {
    engine = await startTestEngine()
    const env: Record<string, string | undefined> = { ...process.env }
    delete env.OTEL_ENABLED
    worker = spawn(process.execPath, ['test/support/lazy-otel-worker.ts', engine.url], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    worker.stderr!.resume()
    worker.once('exit', (code) => (exited = code))
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: worker.stdout! }).on('line', (line) => {
        if (line.includes('"ready"')) resolve()
      })
      worker.once('exit', (code) => reject(new Error(`the worker exited with ${code}`)))
    })
    await waitFor(() => engine.engine.functions.resolve('default', 'lazy::echo') !== undefined, 'lazy::echo registered')
    caller = await RawWorker.connect(engine.url)
  })
  after(async () => {
    await caller.close()
    await new Promise((resolve) => (worker.exitCode !== null ? resolve(undefined) : (worker.once('exit', resolve), worker.kill('SIGTERM'))))
    await engine.stop()
  })

  for (const baggage of ['k=\ud800', 'a=1,\udc00=v', 'ok=yes,k=a\ud800b;p=\udfff']) {
    it(`answers a call whose baggage is ${JSON.stringify(baggage)} and stays up`, async () => {
      const answer = await caller.call('lazy::echo', { n: 1 }, { baggage })
      assert.equal(answer.error, undefined, JSON.stringify(answer.error))
      assert.deepEqual(answer.result, { n: 1 })
      assert.equal(exited, undefined, 'the worker process is still running')
      const again = await caller.call('lazy::echo', { n: 2 })
      assert.deepEqual(again.result, { n: 2 })
    })
  }

  it('the spans of those calls keep the well-formed entries only', async () => {
    await caller.call('lazy::modules', {}) // flushes the worker's spans
    const withOk = await waitFor(async () => {
      const spans = ((await engine.engine.inject({ function_id: 'engine::traces::list', data: { name: 'execute lazy::echo' } })) as { traces: Array<{ attributes: Record<string, unknown> }> }).traces
      return spans.find((s) => s.attributes['ok'] === 'yes')
    }, 'the span of the call with ok=yes')
    assert.equal(withOk.attributes['svc.function.id'], 'lazy::echo')
    assert.ok(!('k' in withOk.attributes), 'the entry that is not well-formed is dropped')
  })
})

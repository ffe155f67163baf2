/**
 * `engine::runs::list` names the code a failed run ended with (`error_code`, issue 21), and the
 * console's run history marks a run cancelled by that code, never by its message: a real engine,
 * an svc-sdk worker with telemetry on (its handler span records the code as the `exception` event's
 * `exception.type`), an in-process handler of a built-in peer (the engine's `execute` span records
 * `svc.error.code`), calls cancelled through `engine::invocations::cancel` and an AbortSignal, and a
 * handler whose own error merely says "Invocation cancelled".
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Run, RunsListResult } from 'svc-protocol'
import { InvocationError, registerWorker, type HandlerContext, type SvcClient } from 'svc-sdk'
import { flushOtel, otelSocketStats } from 'svc-sdk/telemetry'
import { wasCancelled } from '../packages/console/app/src/pages/functions/running.ts'
import { startTestEngine, type TestEngine } from './support/engine.ts'
import { waitFor } from './support/wait.ts'
import { rejection } from './support/sdk-harness.ts'

describe('engine::runs::list error_code (issue 21)', () => {
  let e: TestEngine
  let worker: SvcClient

  const runs = (functionId: string) => e.engine.inject({ function_id: 'engine::runs::list', data: { function_id: functionId } }) as Promise<RunsListResult>
  /** The newest finished run of `functionId`, once its span reached the store. */
  const finishedRun = async (functionId: string): Promise<Run> => {
    let run: Run | undefined
    await flushOtel()
    await waitFor(async () => (run = (await runs(functionId)).runs.find((r) => r.status !== 'unset')) !== undefined, `a finished run of ${functionId}`, 15_000)
    return run!
  }

  before(async () => {
    e = await startTestEngine()
    worker = registerWorker(e.url, { workerName: 'jobs', otel: { enabled: true, serviceName: 'jobs', fetchInstrumentationEnabled: false, metricsEnabled: false } })
    // Runs until cancelled: the handler's only way out is its signal.
    worker.registerFunction('jobs::long', (_data: unknown, _metadata: unknown, { signal }: HandlerContext) => new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason))))
    // Its own failure, worded like a cancel.
    worker.registerFunction('jobs::impostor', () => {
      throw Object.assign(new Error('Invocation cancelled: the printer is out of paper'), { code: 'PRINTER_EMPTY' })
    })
    await waitFor(() => worker.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, 'the worker and its /otel socket connected')
    await waitFor(() => e.engine.functions.get('default', 'jobs::long') !== undefined && e.engine.functions.get('default', 'jobs::impostor') !== undefined, 'jobs::long and jobs::impostor registered')
  })
  after(async () => {
    await worker.shutdown()
    await e.stop()
  })

  it('a worker call cancelled through engine::invocations::cancel is a run with error_code cancelled, shown as cancelled', async () => {
    const call = worker.trigger({ function_id: 'jobs::long', payload: { page: 1 } })
    let invocationId: string | undefined
    await waitFor(async () => {
      const listed = (await e.engine.inject({ function_id: 'engine::invocations::list', data: { function_id: 'jobs::long' } })) as { invocations: Array<{ invocation_id: string }> }
      invocationId = listed.invocations[0]?.invocation_id
      return invocationId !== undefined
    }, 'jobs::long in flight')
    assert.deepEqual(await e.engine.inject({ function_id: 'engine::invocations::cancel', data: { invocation_id: invocationId, reason: 'stuck' } }), { cancelled: true })
    assert.equal((await rejection(call)).code, 'cancelled')

    const run = await finishedRun('jobs::long')
    assert.equal(run.status, 'error')
    assert.equal(run.error_code, 'cancelled')
    assert.equal(wasCancelled(run), true)
  })

  it('a handler error that only reads like a cancel keeps its own code and is not shown as cancelled', async () => {
    const error = await rejection(worker.trigger({ function_id: 'jobs::impostor', payload: null }))
    assert.ok(error instanceof InvocationError)
    assert.equal(error.code, 'PRINTER_EMPTY')

    const run = await finishedRun('jobs::impostor')
    assert.equal(run.status, 'error')
    assert.match(run.status_message ?? '', /^Invocation cancelled: the printer/)
    assert.equal(run.error_code, 'PRINTER_EMPTY')
    assert.equal(wasCancelled(run), false)
  })

  it("an in-process handler cancelled with an AbortSignal: the engine's execute span gives the code", async () => {
    const { BuiltinPeer } = await import('../runtime/engine/builtin-peer.ts')
    const peer = new BuiltinPeer(e.engine, 'runs-test', '0')
    let started = false
    peer.registerFunction('local::wait', (_data, context) => {
      started = true
      return new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason)))
    })
    try {
      const controller = new AbortController()
      const call = e.engine.inject({ function_id: 'local::wait', data: null, signal: controller.signal })
      await waitFor(() => started, 'local::wait started')
      controller.abort('no longer needed')
      await assert.rejects(call, { code: 'cancelled' })

      const run = await finishedRun('local::wait')
      assert.equal(run.status, 'error')
      assert.equal(run.error_code, 'cancelled')
      assert.equal(wasCancelled(run), true)
      // A run that did not fail has no code.
      const ok = (await runs('engine::invocations::list')).runs.find((r) => r.status === 'ok')
      if (ok !== undefined) assert.equal(ok.error_code, null)
    } finally {
      peer.unregisterFunction('local::wait')
    }
  })
})

/**
 * svc-sdk clients on the in-process harness (`engine.connector()`), and the waits that tests of
 * built-in trigger types need.
 */
import assert from 'node:assert/strict'
import type { SvcClient } from 'svc-sdk'
import { resolveAddress, resolveOptions, WorkerClient } from 'svc-sdk/internal'
import type { Engine } from '../../runtime/engine/engine.ts'
import { waitFor } from './wait.ts'

/**
 * A svc-sdk client connected to `engine` through an in-memory transport.
 * @example const client = connectClient(test.engine, 'billing')
 */
export function connectClient(engine: Engine, workerName: string): SvcClient {
  return new WorkerClient(resolveAddress('ws://engine.local/'), resolveOptions({ workerName }), { connector: engine.connector() })
}

/** Waits (5 s at most) until every trigger id has the binding status given (the engine binds asynchronously). */
export async function bindingsSettled(engine: Engine, ids: string[], status: 'active' | 'failed' = 'active'): Promise<void> {
  await waitFor(() => ids.every((id) => engine.triggers.getBinding(id)?.status === status), `the bindings of ${ids.join(', ')} ${status}`, 5000)
}

/** Resolves with the rejection of `promise`; fails the test if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await promise
  } catch (error) {
    return error as { code: string; message: string }
  }
  assert.fail('expected the call to fail')
}

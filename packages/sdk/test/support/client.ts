/** Builds clients for tests: real sockets, collected warnings, shut down after the test. */
import type { TestContext } from 'node:test'
import { type ClientInternals, WorkerClient } from '../../src/client.ts'
import { resolveOptions } from '../../src/options.ts'
import type { ConnectionState, InitOptions } from '../../src/types.ts'

export interface TestClient {
  client: WorkerClient
  states: ConnectionState[]
  warnings: string[]
}

/** Environment variables are ignored so the host's SVC_* settings cannot leak in. */
export function makeClient(
  t: TestContext,
  url: string | readonly string[],
  options: InitOptions = {},
  internals: ClientInternals = {},
): TestClient {
  const warnings: string[] = []
  const client = new WorkerClient(url, resolveOptions({ workerName: 'test-worker', ...options }, {}), {
    log: { warn: (m) => warnings.push(m) },
    ...internals,
  })
  const states: ConnectionState[] = []
  client.addConnectionStateListener((s) => states.push(s))
  t.after(() => client.shutdown())
  return { client, states, warnings }
}

/** Reconnects almost at once so tests do not wait for the default 1 s backoff. */
export const FAST_RECONNECT = { initialDelayMs: 1, maxDelayMs: 5, jitterFactor: 0 }

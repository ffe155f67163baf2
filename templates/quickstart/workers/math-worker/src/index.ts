/**
 * math-worker: registers `math::add`, which adds two numbers.
 *
 *   svc trigger math::add a=1 b=2      # { "c": 3 }
 *
 * svc starts this file with SVC_URL, SVC_WORKER_NAME and SVC_NAMESPACE set; registerWorker reads
 * them, so the same code runs unchanged under `svc`, `svc compose` or by hand.
 */
import { registerWorker } from 'svc-sdk'

export interface AddInput {
  a: number
  b: number
}

export interface AddResult {
  c: number
}

const svc = registerWorker()

svc.registerFunction<AddInput, AddResult>(
  'math::add',
  ({ a, b }) => {
    if (typeof a !== 'number' || typeof b !== 'number') {
      // A `code` on the error reaches the caller as the invocation error code.
      throw Object.assign(new Error('a and b must be numbers'), { code: 'INVALID_ARGUMENTS' })
    }
    return { c: a + b }
  },
  { description: 'Adds a and b: {a, b} → {c}' },
)

svc.addConnectionStateListener((state) => console.log(`engine connection: ${state}`))

// svc stops workers with SIGTERM: close the connection cleanly, then exit.
const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

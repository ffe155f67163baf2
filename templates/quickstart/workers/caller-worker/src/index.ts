/**
 * caller-worker: registers `math::add_two_numbers`, which calls `math::add` (served by
 * math-worker) by its id, and binds it to the HTTP route POST /math/add-two-numbers.
 *
 *   curl -s -X POST localhost:3111/math/add-two-numbers \
 *     -H 'content-type: application/json' -d '{"a":1,"b":2}'     # {"c":3}
 *   svc trigger math::add_two_numbers a=1 b=2                     # the HTTP response descriptor
 */
import { InvocationError, registerWorker } from 'svc-sdk'
import type { HttpRequest, HttpResponse } from 'svc-sdk'

interface Numbers {
  a: number
  b: number
}

const svc = registerWorker()

type Input = HttpRequest<Partial<Numbers> | null> | Partial<Numbers>

/** Over HTTP the numbers are in the request body; `svc trigger … a=1 b=2` sends them directly. */
function numbersOf(input: Input): Partial<Numbers> {
  return 'method' in input && 'body' in input ? (input.body ?? {}) : (input as Partial<Numbers>)
}

svc.registerFunction(
  'math::add_two_numbers',
  async (input: Input): Promise<HttpResponse> => {
    const { a, b } = numbersOf(input ?? {})
    if (typeof a !== 'number' || typeof b !== 'number') {
      return { status_code: 400, body: { error: 'send a JSON body with numbers a and b, e.g. {"a":1,"b":2}' } }
    }
    try {
      // Any function of any worker is one call away, whatever language it is written in.
      const sum = await svc.trigger<Numbers, { c: number }>({ function_id: 'math::add', payload: { a, b } })
      return { status_code: 200, body: sum }
    } catch (err) {
      // function_not_found while math-worker is still starting, or math::add's own error.
      if (err instanceof InvocationError) return { status_code: 502, body: { error: err.message } }
      throw err
    }
  },
  { description: 'Adds a and b by calling math::add; bound to POST /math/add-two-numbers' },
)

svc.registerTrigger({
  type: 'http',
  function_id: 'math::add_two_numbers',
  config: { api_path: '/math/add-two-numbers', http_method: 'POST' },
})

svc.addConnectionStateListener((state) => console.log(`engine connection: ${state}`))

const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

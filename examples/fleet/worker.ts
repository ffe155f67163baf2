/**
 * The orders worker of the fleet example: two functions, each bound to an HTTP route, that keep
 * orders in the state worker (scope `orders`, which config.yaml puts in Redis, so every engine of
 * the fleet sees the same orders).
 *
 *   POST /orders      {item, quantity?}  → 201 {order, served_by}; 400 {error}
 *   GET  /orders/:id                     → 200 {order, served_by}; 404 {error}
 *
 * `served_by` is `{worker, pid, engine}`: this worker's name and process id, and the fleet name of
 * the engine it is connected to — which is how run.ts tells which engine and worker served a request.
 *
 * Environment: `SVC_URL` — one engine address or several separated by commas, the worker's own
 * engine first (the SDK moves to the next one when its engine goes away, sdk.md §2);
 * `SVC_WORKER_NAME` — the name listings show (default `orders-<pid>`).
 *
 * Run: `node examples/fleet/worker.ts` (Node ≥ 22.18 runs TypeScript as is).
 */
import { randomUUID } from 'node:crypto'
import { registerWorker, type HttpRequest, type HttpResponse } from 'svc-sdk'

/** An order as stored under `orders/<id>`. */
interface Order {
  id: string
  item: string
  quantity: number
  created_at: string
  /** Who created it. */
  created_by: ServedBy
}

/** Which worker, in which process, connected to which engine, answered. */
interface ServedBy {
  worker: string
  pid: number
  /** The engine's name in the fleet (`SVC_FLEET_ENGINE`), else its address. */
  engine: string
}

const SCOPE = 'orders'
const MAX_ITEM_LENGTH = 200
const MAX_QUANTITY = 1000
const ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const workerName = process.env.SVC_WORKER_NAME || `orders-${process.pid}`
const svc = registerWorker(undefined, { workerName })

/**
 * The name of the engine this worker is on, asked once per connection: `engine::fleet::list`
 * answers with the answering engine's own name. Calls that arrive before the answer wait for it.
 */
let engineName = deferred<string>()
svc.addConnectionStateListener((state, address) => {
  const host = new URL(address).host
  console.log(`engine connection: ${state} (${host})`)
  if (state !== 'connected') {
    if (engineName.settled) engineName = deferred<string>()
    return
  }
  const current = engineName
  svc
    .trigger({ function_id: 'engine::fleet::list', payload: {} })
    .then((fleet) => current.resolve((fleet as { engine: string | null }).engine ?? host))
    .catch(() => current.resolve(host))
})

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; settled: boolean } {
  const { promise, resolve } = Promise.withResolvers<T>()
  const d = { promise, settled: false, resolve: (value: T) => ((d.settled = true), resolve(value)) }
  return d
}

const servedBy = async (): Promise<ServedBy> => ({ worker: workerName, pid: process.pid, engine: await engineName.promise })
const error = (status_code: number, message: string): HttpResponse => ({ status_code, body: { error: message } })

/** POST /orders {item, quantity?}: stores a new order and answers 201 with it. */
async function createOrder(req: HttpRequest): Promise<HttpResponse> {
  const body = req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body) ? (req.body as Record<string, unknown>) : undefined
  if (body === undefined) return error(400, 'the body must be a JSON object {item, quantity?}')
  const { item, quantity = 1 } = body
  if (typeof item !== 'string' || item.trim() === '' || item.length > MAX_ITEM_LENGTH) return error(400, `item must be a non-empty string of at most ${MAX_ITEM_LENGTH} characters`)
  if (!Number.isSafeInteger(quantity) || (quantity as number) < 1 || (quantity as number) > MAX_QUANTITY) return error(400, `quantity must be an integer from 1 to ${MAX_QUANTITY}`)
  const by = await servedBy()
  const order: Order = { id: randomUUID(), item, quantity: quantity as number, created_at: new Date().toISOString(), created_by: by }
  await svc.trigger({ function_id: 'state::set', payload: { scope: SCOPE, key: order.id, value: order } })
  return { status_code: 201, body: { order, served_by: by } }
}

/** GET /orders/:id: the order, whichever engine's worker created it. */
async function getOrder(req: HttpRequest): Promise<HttpResponse> {
  const id = req.path_params.id ?? ''
  if (!ID_PATTERN.test(id)) return error(404, 'no such order')
  const order = (await svc.trigger({ function_id: 'state::get', payload: { scope: SCOPE, key: id } })) as Order | undefined
  if (order === undefined || order === null) return error(404, 'no such order')
  return { status_code: 200, body: { order, served_by: await servedBy() } }
}

svc.registerFunction('orders::create', createOrder, { description: 'Create an order (POST /orders)' })
svc.registerTrigger({ type: 'http', function_id: 'orders::create', config: { api_path: '/orders', http_method: 'POST' } })
svc.registerFunction('orders::get', getOrder, { description: 'Show an order (GET /orders/:id)' })
svc.registerTrigger({ type: 'http', function_id: 'orders::get', config: { api_path: '/orders/:id', http_method: 'GET' } })

// run.ts (and svc) stop workers with SIGTERM: close the connection cleanly, then exit.
const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.once('SIGTERM', stop)
process.once('SIGINT', stop)

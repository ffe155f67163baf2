/**
 * The {{worker_name}} worker. Add it to a project with `svc worker add ./<this directory>`; then
 *
 *   svc trigger {{worker_name}}::hello name=Ada      # { "message": "Hello, Ada!" }
 *
 * svc starts this file with SVC_URL, SVC_WORKER_NAME and SVC_NAMESPACE set; registerWorker reads
 * them, so the same code runs unchanged under `svc`, `svc compose` or by hand.
 */
import { registerWorker } from 'svc-sdk'

const svc = registerWorker()

svc.registerFunction<{ name?: string }, { message: string }>(
  '{{worker_name}}::hello',
  (input) => ({ message: `Hello, ${input?.name ?? 'world'}!` }),
  { description: 'Says hello: {name?} → {message}' },
)

// To serve it over HTTP too, bind it to a route (the function then receives the HTTP request
// and returns {status_code, body}):
// svc.registerTrigger({ type: 'http', function_id: '{{worker_name}}::hello', config: { api_path: '/hello', http_method: 'GET' } })

svc.addConnectionStateListener((state) => console.log(`engine connection: ${state}`))

// svc stops workers with SIGTERM: close the connection cleanly, then exit.
const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

/**
 * The link-shortener worker: registers four functions and binds them to HTTP routes.
 * Connects to SVC_URL (default ws://127.0.0.1:49134).
 */
import { registerWorker } from 'svc-sdk'
import { linkHandlers } from './links.js'

const client = registerWorker(process.env.SVC_URL, { workerName: process.env.SVC_WORKER_NAME ?? 'link-shortener' })
const links = linkHandlers(client)

const routes = [
  ['links::create', links.create, 'POST', '/links', 'Create a short link'],
  ['links::redirect', links.redirect, 'GET', '/s/:code', 'Redirect to the link target'],
  ['links::update', links.update, 'PUT', '/links/:code', 'Change the target of a link'],
  ['links::get', links.get, 'GET', '/links/:code', 'Show a link and its visit count'],
]
for (const [id, handler, http_method, api_path, description] of routes) {
  client.registerFunction(id, handler, { description })
  client.registerTrigger({ type: 'http', function_id: id, config: { api_path, http_method } })
}

client.addConnectionStateListener((state) => console.log(`link-shortener: ${state}`))

const stop = async () => {
  await client.shutdown()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)

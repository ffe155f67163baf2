/**
 * The links worker: registers four functions and binds each to an HTTP route.
 *
 *   POST /links        {url, code?}  → 201 {code, url}
 *   GET  /s/:code                    → 302 to the link's url (counts a visit)
 *   PUT  /links/:code  {url}         → 200 {code, url}
 *   GET  /links/:code                → 200 {code, url, visits, created_at}
 *
 * svc starts it with SVC_URL, SVC_WORKER_NAME and SVC_NAMESPACE set; registerWorker reads them.
 */
import { registerWorker } from 'svc-sdk'
import { linkHandlers } from './links.js'

const svc = registerWorker()
const links = linkHandlers(svc)

const routes = [
  ['links::create', links.create, 'POST', '/links', 'Create a short link'],
  ['links::redirect', links.redirect, 'GET', '/s/:code', 'Redirect to the link target'],
  ['links::update', links.update, 'PUT', '/links/:code', 'Change the target of a link'],
  ['links::get', links.get, 'GET', '/links/:code', 'Show a link and its visit count'],
]
for (const [id, handler, http_method, api_path, description] of routes) {
  svc.registerFunction(id, handler, { description })
  svc.registerTrigger({ type: 'http', function_id: id, config: { api_path, http_method } })
}

svc.addConnectionStateListener((state) => console.log(`engine connection: ${state}`))

// svc stops workers with SIGTERM: close the connection cleanly, then exit.
const stop = async () => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

/**
 * {{project_name}}: a web page that is an svc worker, and the Node worker it talks to.
 *
 *   open the address this worker prints: http://localhost:3111/?token=…
 *   curl -s 'localhost:3111/ask-browser?name=Ada'   # Node calls the open page: {"greeting":"Hello, Ada, from the browser"}
 *
 * - svc-http serves the page: GET / answers public/index.html, GET /svc-browser-sdk.js the
 *   browser SDK (one ES module, copied into public/ by `svc project init`). No other web server.
 * - The page connects to the second listener of config.yaml, which has `rbac`: `gate::auth` below
 *   sees each connection first and admits a page by the token in its address (a browser cannot
 *   send headers on a WebSocket). A page may call only `api::*`, and what it registers is stored
 *   under `browser::` (so it can never stand in for `api::hello`).
 * - `api::hello` is called by the page and counts visits in the state worker.
 * - GET /ask-browser calls `browser::greet`, which the page registered: Node → engine → page.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { registerWorker, type HttpRequest, type HttpResponse } from 'svc-sdk'

/** This worker's entry in config.yaml (`config:`), as svc passes it (placeholders expanded to text). */
interface Settings {
  http_port?: string | number
  browser_port?: string | number
  /** The token pages must carry; empty: one kept in the state worker. */
  browser_token?: string
}
const settings = JSON.parse(process.env.SVC_WORKER_CONFIG ?? '{}') as Settings
const publicDir = new URL('../public/', import.meta.url)

const svc = registerWorker(undefined, { workerName: '{{project_name}}' })

// ---------------------------------------------------------------- who may connect

let token: Promise<string> | undefined
/** BROWSER_TOKEN, else a random token made once and kept in the state worker (it survives restarts). */
function browserToken(): Promise<string> {
  token ??= (async () => {
    if (settings.browser_token) return settings.browser_token
    const stored = await svc.trigger<unknown, unknown>({ function_id: 'state::get', payload: { scope: 'browser', key: 'token' } })
    if (typeof stored === 'string') return stored
    const made = randomBytes(16).toString('hex')
    await svc.trigger({ function_id: 'state::set', payload: { scope: 'browser', key: 'token', value: made } })
    return made
  })().catch((err: unknown) => {
    token = undefined // the state worker was not ready: try again on the next connection
    throw err
  })
  return token
}

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

// The auth function of the browser listener (protocol.md §13.2): called once per connection with
// the upgrade's query parameters, headers (cookies among them) and address. Throwing refuses the
// connection (the page sees AUTH_ERROR).
svc.registerFunction(
  'gate::auth',
  async (input: { query_params: Record<string, string[]>; headers: Record<string, string> }) => {
    const given = input.query_params.token?.[0] ?? ''
    if (!sameToken(given, await browserToken())) throw new Error('invalid token')
    return {
      function_registration_prefix: 'browser', // the page's `greet` is stored as browser::greet
      allow_trigger_type_registration: false,
      context: { page: true },
    }
  },
  { description: 'Admits pages to the browser listener by the token in their address' },
)

// ---------------------------------------------------------------- what pages may call

svc.registerFunction(
  'api::hello',
  async ({ name }: { name?: string }) => {
    const counted = await svc.trigger<unknown, { new_value: { visits: number } }>({
      function_id: 'state::update',
      payload: { scope: 'counters', key: 'hello', ops: [{ type: 'increment', path: 'visits', by: 1 }] },
    })
    return { message: `Hello, ${name || 'world'}, from Node!`, visits: counted.new_value.visits }
  },
  { description: 'Greets the page and counts its visits in the state worker' },
)

// ---------------------------------------------------------------- the page, served by svc-http

async function file(name: string, contentType: string, transform: (text: string) => string = (t) => t): Promise<HttpResponse> {
  const text = await readFile(new URL(name, publicDir), 'utf8')
  return { status_code: 200, headers: { 'content-type': contentType, 'cache-control': 'no-cache' }, body: transform(text) }
}

svc.registerFunction('site::page', () =>
  // The page learns where the browser listener is from a meta tag.
  file('index.html', 'text/html; charset=utf-8', (html) => html.replace('%BROWSER_PORT%', String(settings.browser_port ?? 49135))),
)
svc.registerTrigger({ type: 'http', function_id: 'site::page', config: { api_path: '/', http_method: 'GET' } })

svc.registerFunction('site::sdk', () => file('svc-browser-sdk.js', 'text/javascript; charset=utf-8'))
svc.registerTrigger({ type: 'http', function_id: 'site::sdk', config: { api_path: '/svc-browser-sdk.js', http_method: 'GET' } })

// Node → engine → page: the open page answers (several open pages take turns).
svc.registerFunction('site::ask-browser', async (req: HttpRequest): Promise<HttpResponse> => {
  const name = req.query_params.name
  try {
    const answer = await svc.trigger({ function_id: 'browser::greet', payload: { name: Array.isArray(name) ? name[0] : (name ?? 'world') }, timeoutMs: 5000 })
    return { status_code: 200, body: answer }
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'function_not_found') return { status_code: 503, body: { error: 'no page is open: open the address this worker printed first' } }
    throw err
  }
})
svc.registerTrigger({ type: 'http', function_id: 'site::ask-browser', config: { api_path: '/ask-browser', http_method: 'GET' } })

svc.addConnectionStateListener((state) => {
  console.log(`engine connection: ${state}`)
  if (state !== 'connected') return
  browserToken().then(
    (t) => console.log(`open http://localhost:${settings.http_port ?? 3111}/?token=${t}`),
    (err: unknown) => console.error(`no browser token yet: ${String(err)}`),
  )
})

// svc stops workers with SIGTERM: close the connection cleanly, then exit.
const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)

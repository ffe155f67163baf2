/**
 * svc-browser-sdk in a real browser (sdk.md §13, issue 17 part 4): Debian's Chromium through
 * playwright-core loads the built bundle with `<script type="module">` from a plain HTTP server (no
 * bundler), and the page is a worker of a real engine, connected to a listener with `rbac` whose auth
 * function (registered by a Node svc-sdk worker on the trusted listener) admits it by a
 * query-parameter token. The page registers `browser::…` functions the Node worker invokes through
 * the engine, invokes Node functions (sync, void, enqueue), serves a custom stream and receives its
 * change events, exchanges text and bytes with the Node worker through channels both ways, is
 * refused what the listener does not expose, reconnects after the engine restarts on the same
 * ports; a page with a wrong token is refused, one with a cookie admitted.
 *
 * Fails when Chromium is not installed (`apt-get install -y chromium`); set SVC_BROWSER to use
 * another executable.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { registerWorker as registerNodeWorker, type ChannelReader as NodeChannelReader, type SvcClient as NodeClient } from 'svc-sdk'
import type { AuthInput, AuthResult } from 'svc-helpers/rbac'
import type { ListenerConfig } from '../../../runtime/engine/types.ts'
import { launchChromium } from '../../../test/support/chromium.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import type * as BrowserSdk from '../src/index.ts'
import type { StreamChangeEvent } from '../src/stream.ts'
import { waitFor } from '../../../test/support/wait.ts'

/** A sum of the bytes modulo 65521 that the page computes the same way (order-insensitive is enough: sizes are checked too). */
function checksum(data: Uint8Array): number {
  let sum = 0
  for (const byte of data) sum = (sum + byte) % 65521
  return sum
}

/** Bytes `i % 251` — not a power of two, so a lost or repeated 64 KiB frame changes the checksum. */
function pattern(size: number): Uint8Array {
  const bytes = new Uint8Array(size)
  for (let i = 0; i < size; i++) bytes[i] = i % 251
  return bytes
}

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, '..', 'dist')
const TOKEN = 'page-token-1'

/** What the test page keeps on `globalThis` (set by the page's module and by `page.evaluate`). */
interface PageGlobals {
  svc: typeof BrowserSdk
  client: BrowserSdk.SvcClient
  states: string[]
  changes: StreamChangeEvent[]
  notes: Map<string, unknown>
}

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>svc-browser-sdk test page</title>
<script type="module">
  import * as svc from '/svc-browser-sdk.js'
  import { createStream } from '/helpers.js'
  if (createStream !== svc.createStream) throw new Error('two copies of the SDK')
  globalThis.svc = svc
</script>`

/** Serves the test page and the built bundle, the way any static file server would. */
async function startPageServer(): Promise<Server> {
  const files: Record<string, [string, string]> = {
    '/': ['text/html; charset=utf-8', PAGE],
    '/svc-browser-sdk.js': ['text/javascript; charset=utf-8', readFileSync(join(dist, 'svc-browser-sdk.js'), 'utf8')],
    '/helpers.js': ['text/javascript; charset=utf-8', readFileSync(join(dist, 'helpers.js'), 'utf8')],
  }
  const server = createServer((req, res) => {
    const file = files[req.url ?? '']
    if (file === undefined) {
      res.writeHead(404).end()
      return
    }
    res.writeHead(200, { 'content-type': file[0] }).end(file[1])
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

describe('svc-browser-sdk in Chromium', () => {
  let t: TestEngine
  let node: NodeClient
  let pages: Server
  let browser: Browser
  let page: Page
  let rbacUrl: string
  const pageErrors: string[] = []
  const consoleLines: string[] = []
  const tasks: unknown[] = []
  const authCalls: AuthInput[] = []

  const rbacListener = (port = 0): Partial<ListenerConfig> => ({ port, rbac: { auth_function_id: 'gate::auth', expose_functions: ['match("node::*")'] } })
  const engineOptions = (ports?: { worker: number; rbac: number }) => ({
    settings: { queue: { queue_configs: { tasks: { type: 'standard', max_retries: 0 } } } },
    listener: { port: ports?.worker ?? 0 },
    extraListeners: [rbacListener(ports?.rbac)],
  })
  const pageUrl = () => `http://127.0.0.1:${(pages.address() as AddressInfo).port}/`
  const listed = async (id: string) => {
    const { functions } = (await node.trigger({ function_id: 'engine::functions::list', payload: {} })) as { functions: Array<{ function_id: string }> }
    return functions.some((f) => f.function_id === id)
  }

  before(async () => {
    // A missing browser is a failure, not a skip: the browser SDK's flows must run in CI.
    browser = await launchChromium()
    await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build.mjs')])
    t = await startTestEngine(engineOptions())
    rbacUrl = t.urls[1]!
    node = registerNodeWorker(t.url, { workerName: 'node-side', otel: { enabled: false }, reconnectionConfig: { initialDelayMs: 50, maxDelayMs: 300 } })
    // The auth function of the rbac listener: the page's token is a query parameter, or a cookie
    // (a browser cannot send other headers on a WebSocket upgrade). The page may bind triggers to
    // its own handler.
    node.registerFunction('gate::auth', (input: AuthInput): AuthResult => {
      authCalls.push(input)
      const byCookie = /(?:^|;\s*)svc_page=cookie-secret(?:;|$)/.test(input.headers.cookie ?? '')
      if (input.query_params.token?.[0] !== TOKEN && !byCookie) throw new Error('invalid token')
      return { allowed_functions: ['browser::on-change'], context: { page: true } }
    })
    node.registerFunction('node::greet', ({ name }: { name: string }) => ({ greeting: `Hello, ${name}, from Node` }))
    node.registerFunction('node::task', (payload: unknown) => {
      tasks.push(payload)
    })
    node.registerFunction('secret::read', () => 'not for pages')
    // Reads a channel the page writes: its text items, then all its bytes.
    node.registerFunction('node::upload', async ({ name, body }: { name: string; body: NodeChannelReader }) => {
      const messages: string[] = []
      body.onMessage((text) => messages.push(text))
      const data = await body.readAll()
      return { name, size: data.byteLength, sum: checksum(data), messages }
    })
    await waitFor(async () => node.getConnectionState() === 'connected' && (await listed('gate::auth')), "node.getConnectionState() === 'connected' && (await listed('gate::auth'))", 10_000)

    pages = await startPageServer()
    page = await browser.newPage()
    page.on('pageerror', (error) => pageErrors.push(String(error)))
    page.on('console', (message) => consoleLines.push(message.text()))
    await page.goto(pageUrl())
    await page.waitForFunction(() => (globalThis as unknown as Partial<PageGlobals>).svc !== undefined, undefined, { timeout: 10_000 })
  })

  after(async () => {
    await browser?.close()
    await node?.shutdown()
    await t?.stop()
    pages?.close()
  })

  it('loads as a module without a bundler; the page connects to the rbac listener with its token and serves functions a Node worker invokes', async () => {
    await page.evaluate((url) => {
      const g = globalThis as unknown as PageGlobals
      g.states = []
      g.client = g.svc.registerWorker(url, { workerName: 'test-page', reconnectionConfig: { initialDelayMs: 50, maxDelayMs: 300 } })
      g.client.addConnectionStateListener((state) => g.states.push(state))
      g.client.registerFunction('browser::double', (n: number) => n * 2, { description: 'doubles, in the page' })
      g.client.registerFunction('browser::title', () => ({ title: (globalThis as unknown as { document: { title: string } }).document.title, agent: navigator.userAgent }))
      g.client.registerFunction('browser::refuse', () => {
        throw Object.assign(new Error('the page says no'), { code: 'PAGE_REFUSED' })
      })
    }, `${rbacUrl}/?token=${TOKEN}`)
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).client.getConnectionState() === 'connected', undefined, { timeout: 10_000 })
    await waitFor(() => listed('browser::double'), "listed('browser::double')", 10_000)

    assert.equal(await node.trigger({ function_id: 'browser::double', payload: 21 }), 42)
    const { title, agent } = (await node.trigger({ function_id: 'browser::title', payload: {} })) as { title: string; agent: string }
    assert.equal(title, 'svc-browser-sdk test page')
    assert.match(agent, /Chrome\//)
    await assert.rejects(node.trigger({ function_id: 'browser::refuse', payload: {} }), (err: Error & { code?: string }) => err.code === 'PAGE_REFUSED' && err.message === 'PAGE_REFUSED: the page says no')

    const auth = authCalls.at(-1)!
    assert.deepEqual(auth.query_params, { token: [TOKEN] })
    assert.match(auth.headers.origin ?? '', /^http:\/\/127\.0\.0\.1:\d+$/, 'the auth function sees the page origin')
    const { workers } = (await node.trigger({ function_id: 'engine::workers::list', payload: {} })) as { workers: Array<Record<string, unknown>> }
    const me = workers.find((w) => w.name === 'test-page')!
    assert.equal(me.runtime, 'browser')
    assert.equal(me.pid, null)
    assert.match(String(me.os), /Chrome\//, 'os from the user agent')
  })

  it('the page invokes Node functions (sync, void, enqueue), and is refused what the listener does not expose', async () => {
    const results = await page.evaluate(async () => {
      const g = globalThis as unknown as PageGlobals
      const greeting = await g.client.trigger({ function_id: 'node::greet', payload: { name: 'page' } })
      const fired = await g.client.trigger({ function_id: 'node::task', payload: { via: 'void' }, action: g.svc.TriggerAction.Void() })
      const queued = await g.client.trigger({ function_id: 'node::task', payload: { via: 'queue' }, action: g.svc.TriggerAction.Enqueue({ queue: 'tasks' }) })
      let refused: unknown
      try {
        await g.client.trigger({ function_id: 'secret::read', payload: {} })
      } catch (err) {
        const e = err as InstanceType<typeof g.svc.InvocationError>
        refused = { isInvocationError: e instanceof g.svc.InvocationError, code: e.code, detail: e.detail }
      }
      return { greeting, fired: fired === undefined, queued, refused }
    })
    assert.deepEqual(results.greeting, { greeting: 'Hello, page, from Node' })
    assert.equal(results.fired, true)
    assert.match((results.queued as { messageReceiptId: string }).messageReceiptId, /\S/)
    assert.deepEqual(results.refused, { isInvocationError: true, code: 'FORBIDDEN', detail: "function 'secret::read' not allowed (add to rbac.expose_functions)" })
    await waitFor(() => tasks.length === 2, 'tasks.length === 2', 10_000)
    assert.deepEqual(new Set(tasks.map((task) => JSON.stringify(task))), new Set(['{"via":"void"}', '{"via":"queue"}']))
  })

  it('the page serves a custom stream (createStream) and receives its change events through a stream trigger', async () => {
    await page.evaluate(() => {
      const g = globalThis as unknown as PageGlobals
      g.notes = new Map()
      g.changes = []
      const key = (i: { group_id: string; item_id: string }) => `${i.group_id}/${i.item_id}`
      g.svc.createStream(g.client, 'notes', {
        get: async (input) => g.notes.get(key(input)),
        set: async (input) => {
          const old = g.notes.get(key(input)) ?? null
          g.notes.set(key(input), input.data)
          return { old_value: old as never, new_value: input.data }
        },
        delete: async (input) => {
          const old = g.notes.get(key(input))
          g.notes.delete(key(input))
          return old === undefined ? {} : { old_value: old as never }
        },
        list: async ({ group_id }) => [...g.notes].filter(([k]) => k.startsWith(`${group_id}/`)).map(([, v]) => v as never),
        listGroups: async () => [...new Set([...g.notes.keys()].map((k) => k.split('/')[0]!))],
      })
      g.client.registerFunction('browser::on-change', (event: StreamChangeEvent) => {
        g.changes.push(event)
      })
      g.client.registerTrigger({ type: 'stream', function_id: 'browser::on-change', config: { stream_name: 'notes' } })
    })
    await waitFor(async () => (await listed('stream::set(notes)')) && (await listed('browser::on-change')), "(await listed('stream::set(notes)')) && (await listed('browser::on-change'))", 10_000)
    // The binding is in place once a change reaches the page; until then the write may go unseen.
    await waitFor(async () => {
      await node.trigger({ function_id: 'stream::set', payload: { stream_name: 'notes', group_id: 'g1', item_id: 'warm-up', data: { n: 0 } } })
      return page.evaluate(() => (globalThis as unknown as PageGlobals).changes.length > 0)
    }, 'the condition', 10_000)

    const set = await node.trigger({ function_id: 'stream::set', payload: { stream_name: 'notes', group_id: 'g1', item_id: 'n1', data: { text: 'from Node' } } })
    assert.deepEqual(set, { old_value: null, new_value: { text: 'from Node' } })
    assert.deepEqual(await node.trigger({ function_id: 'stream::get', payload: { stream_name: 'notes', group_id: 'g1', item_id: 'n1' } }), { text: 'from Node' })
    assert.deepEqual(await page.evaluate(() => (globalThis as unknown as PageGlobals).notes.get('g1/n1')), { text: 'from Node' }, 'stored in the page')
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).changes.some((c) => c.id === 'n1'), undefined, { timeout: 10_000 })
    const change = await page.evaluate(() => (globalThis as unknown as PageGlobals).changes.find((c) => c.id === 'n1'))
    assert.deepEqual([change?.type, change?.streamName, change?.groupId, change?.event], ['stream', 'notes', 'g1', { type: 'create', data: { text: 'from Node' } }])
  })

  it('channels: the page streams text and bytes to a Node function, and reads a channel a Node worker writes', async () => {
    const size = 300 * 1024 + 7
    // Page → Node: the page creates the channel (an infrastructure function, allowed on the rbac
    // listener) and passes the reader ref in a payload; the Node SDK materialises it.
    const upload = await page.evaluate(async (n) => {
      const g = globalThis as unknown as PageGlobals
      const { writer, readerRef } = await g.client.createChannel(4)
      const answer = g.client.trigger({ function_id: 'node::upload', payload: { name: 'blob', body: readerRef } })
      writer.sendMessage(JSON.stringify({ type: 'meta', size: n }))
      const bytes = new Uint8Array(n)
      for (let i = 0; i < n; i++) bytes[i] = i % 251
      await writer.sendBinary(bytes)
      await writer.close()
      let sum = 0
      for (const byte of bytes) sum = (sum + byte) % 65521
      return { answer: await answer, sum }
    }, size)
    assert.deepEqual(upload.answer, { name: 'blob', size, sum: upload.sum, messages: [JSON.stringify({ type: 'meta', size })] })
    assert.equal(upload.sum, checksum(pattern(size)))

    // Node → page: a page function gets a reader ref and pulls items with next().
    await page.evaluate(() => {
      const g = globalThis as unknown as PageGlobals
      g.client.registerFunction('browser::count', async ({ body }: { body: BrowserSdk.ChannelReader }) => {
        const messages: string[] = []
        body.onMessage((text) => messages.push(text))
        let size = 0
        let sum = 0
        let items = 0
        for (let chunk = await body.next(); chunk !== undefined; chunk = await body.next()) {
          items++
          size += chunk.byteLength
          for (const byte of chunk) sum = (sum + byte) % 65521
        }
        return { size, sum, items, messages, isReader: body instanceof g.svc.ChannelReader }
      })
    })
    await waitFor(() => listed('browser::count'), "listed('browser::count')", 10_000)
    const { writer, readerRef } = await node.createChannel()
    const counted = node.trigger({ function_id: 'browser::count', payload: { body: readerRef } })
    writer.sendMessage('hello, page')
    const bytes = pattern(size)
    await writer.write(bytes)
    await writer.close()
    const result = (await counted) as { size: number; sum: number; items: number; messages: string[]; isReader: boolean }
    assert.deepEqual({ ...result, items: undefined }, { size, sum: checksum(bytes), items: undefined, messages: ['hello, page'], isReader: true })
    assert.ok(result.items >= 5, `a 300 KiB write arrives as items of at most 64 KiB (${result.items})`)
  })

  it('a page with a wrong token is refused by the auth function (AUTH_ERROR) and registers nothing', async () => {
    const outcome = await page.evaluate(async (url) => {
      const g = globalThis as unknown as PageGlobals
      const intruder = g.svc.registerWorker(url, { workerName: 'intruder', headers: { authorization: 'Bearer ignored' }, reconnectionConfig: { maxRetries: 0 } })
      intruder.registerFunction('browser::intruder', () => 'should never be callable')
      await new Promise<void>((resolve) => intruder.addConnectionStateListener((state) => state === 'failed' && resolve()))
      const error = intruder.getLastError() as (Error & { code?: string }) | undefined
      return { state: intruder.getConnectionState(), code: error?.code, message: error?.message }
    }, `${rbacUrl}/?token=wrong`)
    assert.equal(outcome.state, 'failed')
    assert.equal(outcome.code, 'AUTH_ERROR')
    assert.doesNotMatch(outcome.message ?? '', /wrong/, 'the token is not echoed')
    assert.equal(await listed('browser::intruder'), false)
    assert.ok(
      consoleLines.includes('[svc-browser-sdk] the headers option is ignored in browsers: pass credentials as query parameters in the address (wss://…/?token=…) or with cookies'),
      consoleLines.join('\n'),
    )
  })

  it('a page is admitted by a cookie for the listener\'s host, with no token in the address', async () => {
    // Cookies are per host, not per port: one set for the page's host goes to the listener too.
    await page.context().addCookies([{ name: 'svc_page', value: 'cookie-secret', domain: '127.0.0.1', path: '/' }])
    const answer = await page.evaluate(async (url) => {
      const g = globalThis as unknown as PageGlobals
      const byCookie = g.svc.registerWorker(url, { workerName: 'cookie-page' })
      try {
        return await byCookie.trigger({ function_id: 'node::greet', payload: { name: 'cookie' } })
      } finally {
        await byCookie.shutdown()
      }
    }, `${rbacUrl}/`)
    assert.deepEqual(answer, { greeting: 'Hello, cookie, from Node' })
    assert.match(authCalls.at(-1)!.headers.cookie ?? '', /svc_page=cookie-secret/)
    await page.context().clearCookies()
  })

  it('reconnects after the engine restarts on the same ports, and its functions are registered again', async () => {
    const ports = { worker: Number(new URL(t.url).port), rbac: Number(new URL(rbacUrl).port) }
    await t.stop()
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).client.getConnectionState() !== 'connected', undefined, { timeout: 10_000 })
    t = await startTestEngine(engineOptions(ports))
    assert.equal(t.urls[1], rbacUrl)
    // The Node worker comes back (and with it the auth function), then the page is admitted again.
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).client.getConnectionState() === 'connected', undefined, { timeout: 20_000 })
    await waitFor(async () => node.getConnectionState() === 'connected' && (await listed('browser::double')), "node.getConnectionState() === 'connected' && (await listed('browser::double'))", 20_000)
    assert.equal(await node.trigger({ function_id: 'browser::double', payload: 50 }), 100)
    assert.deepEqual(await page.evaluate(() => (globalThis as unknown as PageGlobals).client.trigger({ function_id: 'node::greet', payload: { name: 'again' } })), { greeting: 'Hello, again, from Node' })
    const states = await page.evaluate(() => (globalThis as unknown as PageGlobals).states)
    assert.deepEqual(states.slice(0, 2), ['connecting', 'connected'])
    assert.ok(states.includes('reconnecting'), states.join(' → '))
    assert.equal(states.at(-1), 'connected')
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page')
  })
})

/**
 * The console app in a real browser (cli.md §7): a real engine, a real svc-sdk worker and the
 * console backend; Chromium (playwright-core, /usr/bin/chromium) is let in by the access-token
 * address (and told how to get in without it), clicks through every page, invokes
 * a function from the UI and sees its result, tests an HTTP trigger, redrives and discards dead
 * letters, edits a state value and sees the state trigger fire, follows a log line’s trace link to
 * its waterfall, validates a settings edit, watches a stream live, sees a new request's trace within
 * 1 s, and sees the disconnected banner when the engine stops and the page recover when it starts
 * again. A screenshot of each page and of each flow's end state is written to
 * `packages/console/test/artifacts/` (gitignored).
 *
 * Fails when Chromium is not installed (`apt-get install -y chromium`); set SVC_CONSOLE_BROWSER to
 * use another executable.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { chromium, type Browser, type Page } from 'playwright-core'
import { registerWorker, TriggerAction, type SvcClient } from 'svc-sdk'
import { flushOtel, getLogger, otelSocketStats } from 'svc-sdk/telemetry'
import { startConsole, type RunningConsole } from 'svc-console'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'

const here = dirname(fileURLToPath(import.meta.url))
const artifacts = join(here, 'artifacts')
const chromiumPath = process.env.SVC_CONSOLE_BROWSER ?? '/usr/bin/chromium'

async function buildApp(): Promise<string> {
  const appDir = join(here, '..', 'dist', 'app')
  await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build-app.mjs')])
  assert.ok(existsSync(join(appDir, 'index.html')), 'the build wrote index.html')
  return appDir
}

describe('console app in Chromium', () => {
  let t: TestEngine
  let dataDir: string
  let worker: SvcClient
  let traced: SvcClient
  let server: RunningConsole
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []
  /** Deliveries of `demo::job` by job id; the first delivery of each job fails (max_retries 0: straight to the DLQ). */
  const jobRuns = new Map<string, number>()
  /** State trigger events `demo::on-user` received. */
  const userEvents: Array<{ key?: string; new_value?: unknown }> = []

  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })
  const nav = (label: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label, exact: true }).click()
  const engineOptions = () => ({ dataDir, settings: { queue: { queue_configs: { emails: { type: 'standard', max_retries: 1 }, jobs: { type: 'standard', max_retries: 0 } } } } })

  before(async () => {
    // A missing browser is a failure, not a skip: the console's browser flows must run in CI.
    assert.ok(existsSync(chromiumPath), `no browser at ${chromiumPath}: install Chromium (apt-get install -y chromium) or set SVC_CONSOLE_BROWSER to a Chromium executable`)
    await mkdir(artifacts, { recursive: true })
    const appDir = await buildApp()
    dataDir = await mkdtemp(join(tmpdir(), 'svc-console-browser-'))
    t = await startTestEngine(engineOptions())
    worker = registerWorker(t.url, { workerName: 'demo-worker', otel: { enabled: false } } as Parameters<typeof registerWorker>[1])
    worker.registerFunction(
      'demo::greet',
      ({ name }: { name: string }) => ({ greeting: `Hello, ${name}!` }),
      {
        description: 'Greets someone by name',
        request_format: { type: 'object', properties: { name: { type: 'string', description: 'who to greet' } }, required: ['name'] },
        response_format: { type: 'object', properties: { greeting: { type: 'string' } } },
      },
    )
    worker.registerFunction('demo::order', (req: { path_params: { id: string }; body: unknown }) => ({ status_code: 201, body: { id: req.path_params.id, got: req.body } }))
    worker.registerFunction('demo::ping', () => ({ status_code: 200, body: { pong: true } }))
    worker.registerFunction('demo::tick', () => ({ ticked: true }))
    worker.registerFunction('demo::on-event', () => undefined)
    worker.registerFunction('demo::on-user', (event: { key?: string; new_value?: unknown }) => {
      userEvents.push(event)
    })
    worker.registerFunction('demo::job', ({ job }: { job: string }) => {
      const runs = (jobRuns.get(job) ?? 0) + 1
      jobRuns.set(job, runs)
      if (runs === 1) throw new Error(`job ${job} failed on its first run`)
      return { done: job }
    })
    worker.registerTrigger({ type: 'http', function_id: 'demo::order', config: { api_path: 'orders/:id', http_method: 'POST' } })
    worker.registerTrigger({ type: 'http', function_id: 'demo::ping', config: { api_path: 'ping', http_method: 'GET' } })
    worker.registerTrigger({ type: 'cron', function_id: 'demo::tick', config: { expression: '0 0 * * * *' } })
    worker.registerTrigger({ type: 'subscribe', function_id: 'demo::on-event', config: { topic: 'events' } })
    worker.registerTrigger({ type: 'state', function_id: 'demo::on-user', config: { scope: 'users' } })
    // Telemetry on: its handler spans and log records reach the engine over /otel. The test's own
    // fetch plays an outside client, so fetch is not instrumented.
    traced = registerWorker(t.url, { workerName: 'traced-worker', otel: { enabled: true, serviceName: 'traced-worker', fetchInstrumentationEnabled: false, metricsEnabled: false } })
    traced.registerFunction('traced::checkout', async (req: { body: { cart: string } }) => {
      await traced.trigger({ function_id: 'state::set', payload: { scope: 'carts', key: req.body.cart, value: { checked_out: true } } })
      getLogger().info(`checkout of cart ${req.body.cart} accepted`, { cart: req.body.cart })
      return { status_code: 200, body: { ok: true } }
    })
    traced.registerTrigger({ type: 'http', function_id: 'traced::checkout', config: { api_path: 'checkout', http_method: 'POST' } })
    await waitFor(() => worker.getConnectionState() === 'connected' && traced.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, 'the condition', 10_000)
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u1', value: { name: 'Ada', roles: ['admin'] } } })
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u2', value: { name: 'Grace' } } })
    await worker.trigger({ function_id: 'stream::set', payload: { stream_name: 'chat', group_id: 'room-1', item_id: 'm1', data: { text: 'hi' } } })
    await worker.trigger({ function_id: 'svc::durable::publish', payload: { topic: 'nobody-listens', data: { order: 42 } } })
    await worker.trigger({ function_id: 'engine::log::warn', payload: { message: 'demo worker is ready', data: { answer: 42 }, service_name: 'demo-worker' } })
    for (const job of ['job-a', 'job-b']) await worker.trigger({ function_id: 'demo::job', payload: { job }, action: TriggerAction.Enqueue({ queue: 'jobs' }) })
    await waitFor(() => jobRuns.get('job-a') === 1 && jobRuns.get('job-b') === 1, "jobRuns.get('job-a') === 1 && jobRuns.get('job-b') === 1", 10_000)
    const checkout = await fetch(`${t.httpUrl}/checkout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cart: 'c-7' }) })
    assert.equal(checkout.status, 200)
    await flushOtel()

    // demo-worker stands in for a microVM worker: the supervisor's state files are svc's, not the console's.
    server = await startConsole({ port: 0, engineUrl: t.url, appDir, reconnect: { initialDelayMs: 100, maxDelayMs: 400 }, microvms: () => [{ name: 'demo-worker', vm_rss_bytes: 300 * 1048576 }] })
    await waitFor(() => server.connected, 'server.connected', 10_000)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    page.on('pageerror', (error) => pageErrors.push(String(error)))
    page.on('dialog', (dialog) => void dialog.accept())
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await worker?.shutdown()
    await traced?.shutdown()
    await t?.stop()
    if (dataDir) await rm(dataDir, { recursive: true, force: true })
  })

  it('without its access token the app says how to get in; the token address lets the browser in and leaves the address bar', async () => {
    await page.goto(server.url + '/functions')
    const banner = page.locator('.banner', { hasText: 'This console needs its access token' })
    await banner.waitFor({ timeout: 10_000 })
    await page.getByTestId('connection-state').getByText('access token needed').waitFor()
    await shot('access-token-needed')
    await page.goto(server.openUrl)
    await page.getByTestId('connection-state').getByText('connected').waitFor({ timeout: 10_000 })
    assert.equal(page.url(), server.url + '/', 'redirected to the address without the token')
    await banner.waitFor({ state: 'detached' })
    const cookies = await page.context().cookies()
    const cookie = cookies.find((c) => c.name === `svc_console_token_${server.port}`)
    assert.ok(cookie, JSON.stringify(cookies))
    assert.deepEqual([cookie.httpOnly, cookie.sameSite], [true, 'Strict'])
  })

  it('Workers: the start page lists the worker; its detail shows functions and triggers', async () => {
    await page.goto(server.url)
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await page.getByTestId('connection-state').getByText('connected').waitFor()
    // A microVM worker shows its isolation and the VM's host RSS (GET /api/microvms).
    const row = page.getByRole('row', { name: /demo-worker/ })
    await row.getByText('300.0 MiB host RSS').waitFor()
    await row.getByText('microvm', { exact: true }).waitFor()
    // Keyboard: the first Tab reaches the skip link, the next ones the sidebar links.
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Skip to content')
    await page.keyboard.press('Tab')
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate('document.activeElement?.textContent'), 'Workers')
    await shot('workers')
    await page.emulateMedia({ colorScheme: 'dark' })
    await shot('workers-dark')
    await page.emulateMedia({ colorScheme: 'light' })
    await page.getByRole('link', { name: 'demo-worker' }).click()
    await page.getByRole('link', { name: 'demo::greet' }).waitFor()
    await page.getByText('orders/:id').first().waitFor()
    await shot('worker-detail')
  })

  it('Functions: grouped by prefix; the invoke panel calls the function and shows the result', async () => {
    await nav('Functions')
    await page.getByRole('heading', { name: /^demo/ }).waitFor()
    await shot('functions')
    await page.getByRole('link', { name: 'demo::greet' }).click()
    const editor = page.getByLabel('Payload')
    await editor.waitFor()
    assert.deepEqual(JSON.parse(await editor.inputValue()), { name: '' }, 'pre-filled from the request schema')
    await editor.fill('{"name": "Ada"}')
    await page.getByRole('button', { name: 'Invoke', exact: true }).click()
    const result = page.getByTestId('invoke-result')
    await result.getByText('Hello, Ada!').waitFor()
    await result.getByText('ok', { exact: true }).waitFor()
    await shot('function-detail')
    assert.match(page.url(), /\/functions\/demo%3A%3Agreet$/)
  })

  it('Triggers: tabs per type; the HTTP tester sends a request through /api/http', async () => {
    await nav('Triggers')
    await page.getByRole('tab', { name: /^http \(3\)$/ }).click()
    await page.getByRole('row').filter({ hasText: 'orders/:id' }).getByRole('link', { name: 'Test' }).click()
    await page.getByLabel(':id').fill('A-17')
    await page.getByLabel('Body (JSON, empty for none)').fill('{"qty": 2}')
    await page.getByRole('button', { name: 'Send' }).click()
    const result = page.getByTestId('http-result')
    // The status badge: exactly "201" (the response's headers, shown beside it, can hold those digits in an id).
    await result.getByText('201', { exact: true }).waitFor()
    await result.getByText('"A-17"').first().waitFor()
    await shot('triggers-http')
    await page.getByRole('tab', { name: /^cron/ }).click()
    await page.getByRole('link', { name: 'Test' }).click()
    await page.getByRole('heading', { name: 'Next runs' }).waitFor()
    assert.equal(await page.locator('ol:not(.next-runs) li').count(), 5, 'five next runs in the tester')
    await page.getByRole('button', { name: 'Run now' }).click()
    await page.getByText('"ticked": true').waitFor()
    await shot('triggers-cron')
  })

  it('Queues: topics and queues, and the dead letters of a topic nobody subscribes to', async () => {
    await nav('Queues')
    await page.getByRole('link', { name: 'emails' }).waitFor()
    await shot('queues')
    await page.getByRole('tab', { name: /Dead letters/ }).click()
    await page.getByRole('link', { name: /nobody-listens/ }).click()
    await page.getByText('no_subscribers').waitFor()
    await shot('queues-dlq')
  })

  it('Queues: Redrive runs a dead letter again and it leaves the list; Discard drops another', async () => {
    await page.getByRole('list', { name: 'Dead-letter queues' }).getByRole('link', { name: /^jobs/ }).click()
    const jobA = page.getByRole('row').filter({ hasText: 'job-a' })
    const jobB = page.getByRole('row').filter({ hasText: 'job-b' })
    await jobA.waitFor()
    await jobB.waitFor()
    await jobA.getByText('job job-a failed on its first run').waitFor()
    await shot('queues-dlq-jobs')
    await jobA.getByRole('button', { name: 'Redrive' }).click()
    await jobA.waitFor({ state: 'detached' })
    await waitFor(() => jobRuns.get('job-a') === 2, "jobRuns.get('job-a') === 2", 5000)
    await jobB.getByRole('button', { name: 'Discard' }).click() // the confirm dialog is accepted
    await page.getByText('No dead letters in jobs.').waitFor()
    await page.getByRole('tab', { name: 'Dead letters (1)' }).waitFor() // only nobody-listens is left
    assert.equal(jobRuns.get('job-b'), 1, 'a discarded dead letter does not run again')
    await shot('queues-dlq-redriven')
  })

  it('Logs: filters, and a log line’s trace link opens its waterfall', async () => {
    // A checkout while the console runs: its state write also feeds the console's live `state`
    // trigger, an internal delivery the waterfall hides until asked.
    const again = await fetch(`${t.httpUrl}/checkout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ cart: 'c-8' }) })
    assert.equal(again.status, 200)
    await nav('Logs')
    await page.getByText('demo worker is ready').first().waitFor()
    await page.getByLabel('Severity').selectOption('13')
    await page.getByText('demo worker is ready').first().waitFor()
    await shot('logs')
    await page.getByLabel('Severity').selectOption('')
    const line = page.getByRole('row').filter({ hasText: 'checkout of cart c-8 accepted' })
    await line.waitFor()
    await line.getByRole('link', { name: /^[0-9a-f]{8}/ }).click()
    await page.waitForURL(/\/traces\/[0-9a-f]{32}/)
    const spans = page.getByRole('list', { name: 'Spans' }).getByRole('listitem')
    await spans.filter({ hasText: 'POST /checkout' }).waitFor()
    await spans.filter({ hasText: 'execute traced::checkout' }).waitFor() // the worker's span, over /otel
    await spans.filter({ hasText: 'state::set' }).first().waitFor()
    assert.ok((await spans.count()) >= 3, 'HTTP span → worker span → state::set')
    await page.getByText('traced-worker').first().waitFor()
    // The console's own live feed (an internal `state` trigger delivery under state::set) is hidden
    // until asked for.
    const internal = page.getByLabel(/internal spans/)
    await internal.waitFor()
    assert.equal(await spans.filter({ hasText: 'svc-console' }).count(), 0)
    await internal.check()
    await spans.filter({ hasText: 'trigger state svc-console' }).first().waitFor()
    await internal.uncheck()
    await spans.filter({ hasText: 'svc-console' }).first().waitFor({ state: 'detached' })
    await shot('logs-trace-waterfall')
    await page.emulateMedia({ colorScheme: 'dark' })
    await shot('logs-trace-waterfall-dark')
    await page.emulateMedia({ colorScheme: 'light' })
  })

  it('Traces: the list and a waterfall', async () => {
    await nav('Traces')
    const first = page.locator('table tbody tr a').first()
    await first.waitFor({ timeout: 10_000 })
    await shot('traces')
    await first.click()
    await page.getByRole('list', { name: 'Spans' }).waitFor()
    await page.locator('.wf-bar').first().waitFor()
    await page.getByRole('heading', { name: 'Attributes' }).waitFor()
    await shot('trace-detail')
  })

  it('State: scopes, keys and the editor; changes made elsewhere appear live', async () => {
    await nav('State')
    await page.getByRole('link', { name: 'users' }).click()
    await page.getByRole('link', { name: /^u1/ }).click()
    const editor = page.getByLabel('Value', { exact: true })
    await waitFor(async () => /"Ada"/.test(await editor.inputValue()), '/"Ada"/.test(await editor.inputValue())', 5000)
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u3', value: { name: 'Linus' } } })
    await page.getByRole('link', { name: /^u3/ }).waitFor()
    await shot('state')
  })

  it('State: saving an edited value fires the scope’s state trigger with the new value', async () => {
    const editor = page.getByLabel('Value', { exact: true })
    const before = userEvents.length
    await editor.fill(JSON.stringify({ name: 'Ada Lovelace', roles: ['admin', 'author'] }, null, 2))
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await waitFor(() => userEvents.slice(before).some((e) => e.key === 'u1' && (e.new_value as { name?: string } | undefined)?.name === 'Ada Lovelace'), 'the condition', 5000)
    assert.deepEqual(userEvents.at(-1)?.new_value, { name: 'Ada Lovelace', roles: ['admin', 'author'] })
    await page.getByRole('button', { name: 'Save', exact: true }).and(page.locator(':disabled')).waitFor() // saved: nothing left to save
    assert.match(await editor.inputValue(), /Ada Lovelace/, 'the editor shows the saved value, never the old one')
    assert.equal(await page.getByText('The value was changed elsewhere').count(), 0, 'our own save is not a change made elsewhere')
    await shot('state-saved')
  })

  it('Streams: groups, items and the live monitor', async () => {
    await nav('Streams')
    // The stream group table (with item counts) names them too: the lists on the left are used.
    await page.getByRole('navigation', { name: 'Streams' }).getByRole('link', { name: /^chat/ }).click()
    await page.getByRole('navigation', { name: 'Groups' }).getByRole('link', { name: /^room-1/ }).click()
    await page.getByText('joined').waitFor()
    await worker.trigger({ function_id: 'stream::set', payload: { stream_name: 'chat', group_id: 'room-1', item_id: 'm2', data: { text: 'live!' } } })
    await page.getByText('create', { exact: true }).waitFor()
    await shot('streams')
  })

  it('Configuration: values, and an edit that breaks the schema shows its violations', async () => {
    await nav('Configuration')
    await page.getByRole('link', { name: /svc-http/ }).first().click()
    await page.getByRole('button', { name: 'Edit' }).click()
    const editor = page.getByLabel('Value of svc-http')
    const value = JSON.parse(await editor.inputValue()) as Record<string, unknown>
    await editor.fill(JSON.stringify({ ...value, port: 'not a port' }, null, 2))
    await page.getByText('/port: must be integer').waitFor()
    assert.equal(await page.getByRole('button', { name: 'Save' }).isDisabled(), true)
    await shot('configuration')
    // A placeholder stands for the integer it expands to (builtins.md §2.8): no violation.
    await editor.fill(JSON.stringify({ ...value, port: '${SVC_CONSOLE_TEST_PORT:0}' }, null, 2))
    await page.getByText('/port: must be integer').waitFor({ state: 'detached' })
    assert.equal(await page.getByRole('button', { name: 'Save' }).isDisabled(), false)
  })

  it('Traces: the first trace of a new request shows within 1 s of the request', async () => {
    await nav('Traces')
    await page.locator('table tbody tr a').first().waitFor()
    const row = page.getByRole('link', { name: 'GET /ping', exact: true })
    assert.equal(await row.count(), 0, 'no request to /ping yet')
    const response = await fetch(`${t.httpUrl}/ping`)
    assert.equal(response.status, 200)
    await response.arrayBuffer()
    const sent = performance.now()
    await row.waitFor({ timeout: 1000 })
    const elapsed = performance.now() - sent
    assert.ok(elapsed < 1000, `shown after ${Math.round(elapsed)} ms`)
    // The pages' own reads (state, streams, configuration…) record no traces.
    const roots = await page.locator('table tbody tr td:first-child a').allTextContents()
    assert.deepEqual(roots.filter((name) => /^execute (state|stream|configuration)::(list|get|schema)/.test(name)), [], 'no traces of the console\'s reads')
    await shot('traces-new-request')
  })

  it('shows the disconnected banner when the engine goes away, and recovers when it starts again', async () => {
    await nav('Workers')
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await worker.shutdown()
    await traced.shutdown()
    const port = Number(new URL(t.url).port)
    await t.engine.stop()
    const banner = page.getByText('lost its connection to the engine')
    await banner.waitFor({ timeout: 10_000 })
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await shot('disconnected')

    // The same port and data directory: the console reconnects to the engine it knew.
    t = await startTestEngine({ ...engineOptions(), listener: { port } })
    worker = registerWorker(t.url, { workerName: 'revived-worker', otel: { enabled: false } } as Parameters<typeof registerWorker>[1])
    await banner.waitFor({ state: 'detached', timeout: 10_000 })
    await page.getByTestId('connection-state').getByText('connected').waitFor()
    await page.getByRole('link', { name: 'revived-worker' }).waitFor({ timeout: 5000 })
    await shot('reconnected')
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page')
  })
})

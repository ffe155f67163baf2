/**
 * The console app in a real browser (cli.md §7): a real engine, a real svc-sdk worker and the
 * console backend; Chromium (playwright-core, /usr/bin/chromium) clicks through every page, invokes
 * a function from the UI and sees its result, tests an HTTP trigger, reads dead letters, validates a
 * settings edit, watches a stream live, and sees the disconnected banner when the engine stops. A
 * screenshot of each page is written to `packages/console/test/artifacts/` (gitignored).
 *
 * Skipped when Chromium is not installed. Set SVC_CONSOLE_BROWSER to another executable to use it.
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { chromium, type Browser, type Page } from 'playwright-core'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { startConsole, type RunningConsole } from 'svc-console'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { eventually } from '../../../test/support/raw-worker.ts'

const here = dirname(fileURLToPath(import.meta.url))
const artifacts = join(here, 'artifacts')
const chromiumPath = process.env.SVC_CONSOLE_BROWSER ?? '/usr/bin/chromium'

async function buildApp(): Promise<string> {
  const appDir = join(here, '..', 'dist', 'app')
  await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build-app.mjs')])
  assert.ok(existsSync(join(appDir, 'index.html')), 'the build wrote index.html')
  return appDir
}

describe('console app in Chromium', { skip: existsSync(chromiumPath) ? false : `no browser at ${chromiumPath}` }, () => {
  let t: TestEngine
  let worker: SvcClient
  let server: RunningConsole
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []

  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })
  const nav = (label: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label, exact: true }).click()

  before(async () => {
    await mkdir(artifacts, { recursive: true })
    const appDir = await buildApp()
    t = await startTestEngine({ settings: { queue: { queue_configs: { emails: { type: 'standard', max_retries: 1 } } } } })
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
    worker.registerFunction('demo::tick', () => ({ ticked: true }))
    worker.registerFunction('demo::on-event', () => undefined)
    worker.registerFunction('demo::on-user', () => undefined)
    worker.registerTrigger({ type: 'http', function_id: 'demo::order', config: { api_path: 'orders/:id', http_method: 'POST' } })
    worker.registerTrigger({ type: 'cron', function_id: 'demo::tick', config: { expression: '0 0 * * * *' } })
    worker.registerTrigger({ type: 'subscribe', function_id: 'demo::on-event', config: { topic: 'events' } })
    worker.registerTrigger({ type: 'state', function_id: 'demo::on-user', config: { scope: 'users' } })
    await eventually(() => worker.getConnectionState() === 'connected', 10_000)
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u1', value: { name: 'Ada', roles: ['admin'] } } })
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u2', value: { name: 'Grace' } } })
    await worker.trigger({ function_id: 'stream::set', payload: { stream_name: 'chat', group_id: 'room-1', item_id: 'm1', data: { text: 'hi' } } })
    await worker.trigger({ function_id: 'svc::durable::publish', payload: { topic: 'nobody-listens', data: { order: 42 } } })
    await worker.trigger({ function_id: 'engine::log::warn', payload: { message: 'demo worker is ready', data: { answer: 42 }, service_name: 'demo-worker' } })

    server = await startConsole({ port: 0, engineUrl: t.url, appDir, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await eventually(() => server.connected, 10_000)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    page.on('pageerror', (error) => pageErrors.push(String(error)))
    page.on('dialog', (dialog) => void dialog.accept())
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await worker?.shutdown()
    await t?.stop()
  })

  it('Workers: the start page lists the worker; its detail shows functions and triggers', async () => {
    await page.goto(server.url)
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await page.getByTestId('connection-state').getByText('connected').waitFor()
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
    await page.getByRole('tab', { name: /^http \(1\)$/ }).click()
    await page.getByRole('link', { name: 'Test' }).click()
    await page.getByLabel(':id').fill('A-17')
    await page.getByLabel('Body (JSON, empty for none)').fill('{"qty": 2}')
    await page.getByRole('button', { name: 'Send' }).click()
    const result = page.getByTestId('http-result')
    await result.getByText('201').waitFor()
    await result.getByText('"A-17"').first().waitFor()
    await shot('triggers-http')
    await page.getByRole('tab', { name: /^cron/ }).click()
    await page.getByRole('link', { name: 'Test' }).click()
    await page.getByRole('heading', { name: 'Next runs' }).waitFor()
    assert.equal(await page.locator('ol li').count(), 5, 'five next runs')
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

  it('Logs: filters and a trace link', async () => {
    await nav('Logs')
    await page.getByText('demo worker is ready').first().waitFor()
    await page.getByLabel('Severity').selectOption('13')
    await page.getByText('demo worker is ready').first().waitFor()
    await shot('logs')
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
    await page.getByLabel('Value', { exact: true }).waitFor()
    assert.match(await page.getByLabel('Value', { exact: true }).inputValue(), /"Ada"/)
    await worker.trigger({ function_id: 'state::set', payload: { scope: 'users', key: 'u3', value: { name: 'Linus' } } })
    await page.getByRole('link', { name: /^u3/ }).waitFor()
    await shot('state')
  })

  it('Streams: groups, items and the live monitor', async () => {
    await nav('Streams')
    await page.getByRole('link', { name: 'chat' }).click()
    await page.getByRole('link', { name: 'room-1' }).click()
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
  })

  it('shows the disconnected banner when the engine goes away, keeping the last data', async () => {
    await nav('Workers')
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await worker.shutdown()
    await t.engine.stop()
    await page.getByText('lost its connection to the engine').waitFor({ timeout: 10_000 })
    await page.getByRole('link', { name: 'demo-worker' }).waitFor()
    await shot('disconnected')
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page')
  })
})

/**
 * The console of issue 21 ("In the console") in a real browser: a real engine, svc-sdk workers (one
 * with telemetry on) and the console backend, driven through Chromium (playwright-core). A
 * function's page lists its runs with status and payloads; a run re-run with an edited payload
 * gives a new run whose result reflects the edit and that links to the old trace; the Triggers page
 * opens on the user's HTTP triggers with the internal ones behind a switch and shows the next three
 * runs of a cron trigger; the Streams page lists every group with its item count; a `key=value`
 * log search narrows the list. Screenshots go to `packages/console/test/artifacts/` (gitignored).
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
import { flushOtel, otelSocketStats } from 'svc-sdk/telemetry'
import { startConsole, type RunningConsole } from 'svc-console'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'

const here = dirname(fileURLToPath(import.meta.url))
const artifacts = join(here, 'artifacts')
const chromiumPath = process.env.SVC_CONSOLE_BROWSER ?? '/usr/bin/chromium'

describe('console runs, re-runs, triggers, streams and log search in Chromium (issue 21)', () => {
  let t: TestEngine
  let worker: SvcClient
  let plain: SvcClient
  let server: RunningConsole
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []
  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })
  const nav = (label: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label, exact: true }).click()
  const runs = (fn: string) => t.engine.inject({ function_id: 'engine::runs::list', data: { function_id: fn } }) as Promise<{ runs: Array<{ trace_id: string; status: string }> }>

  before(async () => {
    assert.ok(existsSync(chromiumPath), `no browser at ${chromiumPath}: install Chromium (apt-get install -y chromium) or set SVC_CONSOLE_BROWSER`)
    await mkdir(artifacts, { recursive: true })
    await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build-app.mjs')])
    const appDir = join(here, '..', 'dist', 'app')
    t = await startTestEngine()
    worker = registerWorker(t.url, { workerName: 'shop', otel: { enabled: true, serviceName: 'shop', fetchInstrumentationEnabled: false, metricsEnabled: false } })
    worker.registerFunction('shop::price', ({ qty }: { qty: number }) => {
      if (qty < 0) throw new Error('qty must not be negative')
      return { total: qty * 3 }
    })
    plain = registerWorker(t.url, { workerName: 'plain', otel: { enabled: false }, enableMetricsReporting: false })
    plain.registerFunction('plain::hello', () => ({ status_code: 200, body: 'hi' }))
    plain.registerFunction('plain::tick', () => ({ ticked: true }))
    plain.registerTrigger({ type: 'http', function_id: 'plain::hello', config: { api_path: 'hello', http_method: 'GET' } })
    plain.registerTrigger({ type: 'cron', function_id: 'plain::tick', config: { expression: '0 30 9 * * *', timezone: 'UTC' } })
    await waitFor(() => worker.getConnectionState() === 'connected' && plain.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, 'the condition', 10_000)
    await worker.trigger({ function_id: 'shop::price', payload: { qty: 2 } })
    await worker.trigger({ function_id: 'shop::price', payload: { qty: -1 } }).catch(() => undefined)
    await flushOtel()
    await waitFor(async () => (await runs('shop::price')).runs.length === 2, "(await runs('shop::price')).runs.length === 2", 10_000)
    for (const [group, n] of [['eu', 3], ['us', 1]] as const) {
      for (let i = 0; i < n; i++) await plain.trigger({ function_id: 'stream::set', payload: { stream_name: 'orders', group_id: group, item_id: `o${i}`, data: { i } } })
    }
    for (const cart of ['c-7', 'c-8']) await plain.trigger({ function_id: 'engine::log::info', payload: { message: `cart ${cart} checked out`, data: { cart } } })

    server = await startConsole({ port: 0, engineUrl: t.url, appDir, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await waitFor(() => server.connected, 'server.connected', 10_000)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on('pageerror', (error) => pageErrors.push(String(error)))
    await page.goto(server.openUrl)
    await page.getByTestId('connection-state').getByText('connected').waitFor({ timeout: 10_000 })
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await worker?.shutdown()
    await plain?.shutdown()
    await t?.stop()
  })

  it('a function’s page lists its runs newest first with status, payload and result', async () => {
    await page.goto(`${server.url}/functions/shop%3A%3Aprice`)
    const table = page.getByRole('table', { name: 'Runs of shop::price' })
    const rows = table.getByTestId('run-row')
    await rows.nth(1).waitFor()
    assert.equal(await rows.count(), 2)
    await rows.nth(0).getByText('error', { exact: true }).waitFor()
    await rows.nth(0).getByText('qty must not be negative').waitFor()
    await rows.nth(1).getByText('ok', { exact: true }).waitFor()
    await rows.nth(1).getByText('{"qty":2}').waitFor()
    await rows.nth(1).getByText('{"total":6}').waitFor()
    await shot('runs-function')
  })

  it('re-run with an edited payload: a new run whose result reflects the edit, linked to the old one', async () => {
    const table = page.getByRole('table', { name: 'Runs of shop::price' })
    const old = (await runs('shop::price')).runs.find((r) => r.status === 'ok')!
    await table.getByTestId('run-row').nth(1).getByRole('button', { name: 'Show the run' }).click()
    const panel = page.getByTestId('rerun-panel')
    const editor = panel.getByLabel('Payload for shop::price')
    assert.deepEqual(JSON.parse(await editor.inputValue()), { qty: 2 }, 'the recorded payload')
    await editor.fill('{"qty": ')
    await panel.getByText(/Invalid JSON/).waitFor()
    assert.equal(await panel.getByRole('button', { name: /Re-run/ }).isDisabled(), true, 'invalid JSON cannot be sent')
    await editor.fill('{"qty": 5}')
    await panel.getByRole('button', { name: 'Re-run with this payload' }).click()
    const result = page.getByTestId('rerun-result')
    await result.getByText('"total": 15').waitFor()
    await shot('runs-rerun-result')
    // The new run arrives with its spans and goes on top, naming the old one.
    await flushOtel()
    const first = table.getByTestId('run-row').first()
    await first.getByText('{"qty":5}').waitFor({ timeout: 10_000 })
    await first.getByText('re-run', { exact: true }).waitFor()
    await first.getByRole('button', { name: 'Show the run' }).click()
    const link = page.getByTestId('rerun-of').first()
    await link.waitFor()
    await shot('runs-rerun-row')
    await link.getByRole('link').click()
    await page.waitForURL(new RegExp(`/traces/${old.trace_id}$`))
    await page.getByRole('list', { name: 'Spans' }).getByRole('listitem').filter({ hasText: 'execute shop::price' }).waitFor()
    // The new run's trace says what it re-runs, and that its parent is the console, not a span.
    const newest = (await runs('shop::price')).runs[0]!
    assert.notEqual(newest.trace_id, old.trace_id)
    await page.goto(`${server.url}/traces/${newest.trace_id}`)
    const field = page.getByTestId('rerun-of')
    await field.getByRole('link', { name: `${old.trace_id.slice(0, 12)}…` }).waitFor()
    await page.getByText('the console started this re-run').waitFor()
    await page.getByRole('button', { name: 'Re-run shop::price…' }).waitFor()
    await shot('runs-rerun-trace')
  })

  it('Triggers opens on the user’s HTTP triggers; internal ones show only behind the switch; cron shows its next three runs', async () => {
    await nav('Triggers')
    const httpTab = page.getByRole('tab', { name: /^http \(1\)$/ })
    await httpTab.waitFor()
    assert.equal(await httpTab.getAttribute('aria-selected'), 'true', 'HTTP first')
    await page.getByRole('row').filter({ hasText: 'plain::hello' }).waitFor()
    const internalTab = page.getByRole('tab', { name: /^log / })
    assert.equal(await internalTab.count(), 0, 'the console’s own log trigger is internal: hidden')
    await shot('triggers-user')
    await page.getByLabel('internal').check()
    await internalTab.waitFor()
    await page.getByLabel('internal').uncheck()
    await internalTab.waitFor({ state: 'detached' })

    await page.getByRole('tab', { name: /^cron/ }).click()
    const next = page.getByRole('list', { name: 'Next runs' })
    await next.waitFor()
    const times = await next.getByRole('listitem').allTextContents()
    assert.equal(times.length, 3, 'the next three runs')
    const expected: string[] = []
    const day = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate(), 9, 30)
    for (let d = day <= Date.now() ? 1 : 0; expected.length < 3; d++) expected.push(await page.evaluate((ms) => new Date(ms).toISOString(), day + d * 86_400_000))
    // formatTime shows local time: compare through the browser's own rendering of those instants.
    const shown = await page.evaluate((isos) => isos.map((iso) => {
      const d = new Date(iso)
      const pad = (n: number, w = 2) => String(n).padStart(w, '0')
      return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.000`
    }), expected)
    assert.deepEqual(times, shown, '09:30:00 UTC on the next three days')
    await shot('triggers-cron-next')
  })

  it('Streams lists every stream group with its item count', async () => {
    await nav('Streams')
    const table = page.getByRole('table', { name: 'Stream groups' })
    await table.waitFor()
    const eu = table.getByRole('row').filter({ hasText: 'eu' })
    await eu.getByRole('cell', { name: '3', exact: true }).waitFor()
    await table.getByRole('row').filter({ hasText: 'us' }).getByRole('cell', { name: '1', exact: true }).waitFor()
    await shot('streams-groups')
  })

  it('Logs: a key=value search keeps the records with that attribute; text searches the body', async () => {
    await nav('Logs')
    await page.getByText('cart c-8 checked out').first().waitFor()
    await page.getByText('cart c-7 checked out').first().waitFor()
    await page.getByLabel('Search').fill('cart=c-7')
    await page.getByText('cart c-8 checked out').waitFor({ state: 'detached' })
    await page.getByText('cart c-7 checked out').first().waitFor()
    await page.getByText(/have cart=c-7/).waitFor()
    await shot('logs-attribute-search')
    await page.getByLabel('Search').fill('c-8 checked')
    await page.getByText('cart c-7 checked out').waitFor({ state: 'detached' })
    await page.getByText('cart c-8 checked out').first().waitFor()
    assert.deepEqual(pageErrors, [])
  })
})

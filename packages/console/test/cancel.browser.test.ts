/**
 * The console's Cancel button (issue 21 "In the console" → Cancel) in a real browser: a real
 * engine, an svc-sdk worker whose handler waits on its `signal` (telemetry on, so its runs are
 * recorded), a second worker that calls it, the console backend, and Chromium. The Functions page
 * counts the call and links to the functions running now; the function's page
 * shows the call on top of its run history as running, with its caller; Cancel ends it — the
 * caller gets `cancelled`, the handler's signal aborts — the row leaves, and the finished run
 * appears below as an error saying it was cancelled. Screenshots go to
 * `packages/console/test/artifacts/` (gitignored).
 */
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { registerWorker, type SvcClient } from 'svc-sdk'
import { flushOtel, otelSocketStats } from 'svc-sdk/telemetry'
import { startConsole, type RunningConsole } from 'svc-console'
import { launchChromium } from '../../../test/support/chromium.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { waitFor } from '../../../test/support/wait.ts'

const here = dirname(fileURLToPath(import.meta.url))
const artifacts = join(here, 'artifacts')

describe('the console cancels a running invocation from its function’s page (issue 21)', () => {
  let t: TestEngine
  let worker: SvcClient
  let caller: SvcClient
  let server: RunningConsole
  let browser: Browser
  let page: Page
  const pageErrors: string[] = []
  /** Why each handler run's signal aborted, in order. */
  const aborted: unknown[] = []
  const started: string[] = []
  const flights = () => t.engine.inject({ function_id: 'engine::invocations::list', data: { function_id: 'jobs::long' } }) as Promise<{ invocations: Array<{ invocation_id: string }>; total: number }>
  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })

  before(async () => {
    await mkdir(artifacts, { recursive: true })
    await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build-app.mjs')])
    t = await startTestEngine()
    worker = registerWorker(t.url, { workerName: 'jobs', otel: { enabled: true, serviceName: 'jobs', fetchInstrumentationEnabled: false, metricsEnabled: false } })
    // Runs until cancelled: the handler's only way out is its signal.
    worker.registerFunction('jobs::long', (_data: unknown, _metadata, context) => {
      started.push(context.invocationId)
      return new Promise((_resolve, reject) => {
        context.signal.addEventListener('abort', () => {
          aborted.push(context.signal.reason)
          reject(context.signal.reason)
        }, { once: true })
      })
    })
    worker.registerFunction('jobs::quick', () => ({ done: true }))
    caller = registerWorker(t.url, { workerName: 'checkout', otel: { enabled: false }, enableMetricsReporting: false })
    await waitFor(() => worker.getConnectionState() === 'connected' && caller.getConnectionState() === 'connected' && otelSocketStats()?.connected === true, 'both workers connected, telemetry on')
    server = await startConsole({ port: 0, engineUrl: t.url, appDir: join(here, '..', 'dist', 'app'), reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await waitFor(() => server.connected, 'the console connected')
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.on('pageerror', (error) => pageErrors.push(String(error)))
    await page.goto(server.openUrl)
    await page.getByTestId('connection-state').getByText('connected').waitFor({ timeout: 10_000 })
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await caller?.shutdown()
    await worker?.shutdown()
    await t?.stop()
  })

  it('the running call is on top with its caller; Cancel ends it for the caller and the handler, and its run appears as cancelled', async () => {
    await page.goto(`${server.url}/functions`)
    const outcome = caller.trigger({ function_id: 'jobs::long', payload: { order: 7 } }).then(
      () => 'answered',
      (error: unknown) => error,
    )
    await waitFor(() => started.length === 1, 'the handler running')
    // The Functions page counts it, and its link narrows the list to the functions running now.
    const count = page.getByTestId('running-count')
    await count.getByText('1 running now').waitFor({ timeout: 10_000 })
    await page.getByRole('link', { name: 'jobs::quick' }).waitFor()
    await page.getByRole('row').filter({ hasText: 'jobs::long' }).getByText('1 running').waitFor()
    await count.click()
    await page.waitForURL(/\/functions\?running=1$/)
    await page.getByRole('link', { name: 'jobs::long' }).waitFor()
    await page.getByRole('link', { name: 'jobs::quick' }).waitFor({ state: 'detached' })
    await shot('cancel-functions-running')
    await page.getByRole('link', { name: 'jobs::long' }).click()
    const table = page.getByRole('table', { name: 'Runs of jobs::long' })
    const running = table.getByTestId('running-row')
    await running.first().waitFor({ timeout: 10_000 })
    assert.equal(await running.count(), 1)
    await page.getByRole('heading', { name: /· 1 running$/ }).waitFor()
    await running.getByText('running', { exact: true }).waitFor()
    await running.getByText('checkout', { exact: true }).waitFor()
    await running.getByText('on jobs').waitFor()
    // The elapsed time ticks while the call runs (read once a second).
    await running.getByText(/^\d+(\.\d)? s$/).waitFor({ timeout: 10_000 })
    await shot('cancel-running')

    await running.getByRole('button', { name: /^Cancel invocation / }).click()
    const error = await outcome
    assert.ok(error instanceof Error, `the caller got ${String(error)}`)
    assert.equal((error as Error & { code?: string }).code, 'cancelled')
    assert.match(String((error as Error).message), /cancelled from the console/)
    await waitFor(() => aborted.length === 1, 'the handler’s signal aborted')
    assert.equal((aborted[0] as { code?: string }).code, 'cancelled')
    await running.first().waitFor({ state: 'detached', timeout: 10_000 })
    assert.equal((await flights()).total, 0, 'nothing in flight any more')

    await flushOtel()
    const finished = table.getByTestId('run-row').first()
    await finished.getByText('error', { exact: true }).waitFor({ timeout: 10_000 })
    await finished.getByText('cancelled', { exact: true }).waitFor()
    await finished.getByText(/cancelled from the console/).waitFor()
    await finished.getByText('{"order":7}').waitFor()
    await shot('cancel-finished')
    assert.deepEqual(pageErrors, [])
  })

  it('an invocation cancelled elsewhere (a script, the CLI) leaves the running list on the next read', async () => {
    await page.goto(`${server.url}/functions/jobs%3A%3Along`)
    const table = page.getByRole('table', { name: 'Runs of jobs::long' })
    const outcome = caller.trigger({ function_id: 'jobs::long', payload: { order: 8 } }).then(
      () => 'answered',
      (error: unknown) => error,
    )
    await waitFor(() => started.length === 2, 'the second handler running')
    const running = table.getByTestId('running-row')
    await running.first().waitFor({ timeout: 10_000 })
    const [flight] = (await flights()).invocations
    assert.ok(flight)
    assert.deepEqual(await t.engine.inject({ function_id: 'engine::invocations::cancel', data: { invocation_id: flight.invocation_id } }), { cancelled: true })
    assert.equal(((await outcome) as { code?: string }).code, 'cancelled')
    await running.first().waitFor({ state: 'detached', timeout: 10_000 })
    assert.equal(aborted.length, 2)
    assert.deepEqual(pageErrors, [])
  })
})

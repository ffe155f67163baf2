/**
 * The console shows the fleet (issue 19 §3, §4): two engines in a fleet on a real nats-server, a
 * worker connected to the second one, and the console backend connected to the first. Through the
 * backend API (what the pages read) and in Chromium: the Fleet page lists both engines with this
 * engine marked, the NATS status and detail, and follows a worker joining the other engine live;
 * the Workers page has an Engine column and a filter by engine; the Functions page names each
 * function's engines; names another engine sent are shown as text, never run as HTML; NATS going
 * down shows as degraded; an engine alone has no Fleet entry and one plain line. Screenshots go to
 * `packages/console/test/artifacts/` (gitignored).
 *
 * Fails when Chromium or nats-server is missing (see app.browser.test.ts and test/support/nats.ts).
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
import { FLEET_DEFAULTS, type FleetConfig } from '../../../runtime/engine/config.ts'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { startTestNats, type TestNats } from '../../../test/support/nats.ts'
import { waitFor } from '../../../test/support/wait.ts'

const here = dirname(fileURLToPath(import.meta.url))
const artifacts = join(here, 'artifacts')
const chromiumPath = process.env.SVC_CONSOLE_BROWSER ?? '/usr/bin/chromium'
/** A worker name another engine passes on as it came: markup that must stay text. */
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">'

const fleetConfig = (nats: TestNats, engine: string): FleetConfig => ({
  ...FLEET_DEFAULTS,
  name: 'console-fleet',
  engine,
  nats: [nats.url],
  heartbeat_interval_ms: 200,
  heartbeat_timeout_ms: 1500,
})

/** `POST /api/invoke` as the app sends it; the result, or a thrown error with the invocation's. */
async function invoke(server: RunningConsole, functionId: string, payload: unknown = {}): Promise<any> {
  const res = await fetch(`${server.url}/api/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
    body: JSON.stringify({ function_id: functionId, payload, trace: false }),
  })
  assert.equal(res.status, 200)
  const outcome = (await res.json()) as { ok: boolean; result?: unknown; error?: { code: string; message: string } }
  if (!outcome.ok) throw new Error(`${functionId}: ${outcome.error?.code} ${outcome.error?.message}`)
  return outcome.result
}

describe('console: the fleet (issue 19 §3, §4)', () => {
  let nats: TestNats
  let alpha: TestEngine
  let bravo: TestEngine
  let lone: TestEngine
  let server: RunningConsole
  let loneServer: RunningConsole
  let browser: Browser
  let page: Page
  const workers: SvcClient[] = []
  const pageErrors: string[] = []

  const shot = (name: string) => page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true })
  const nav = (label: string) => page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label, exact: true }).click()
  const worker = (engine: TestEngine, name: string): SvcClient => {
    const client = registerWorker(engine.url, { workerName: name, otel: { enabled: false }, enableMetricsReporting: false })
    workers.push(client)
    return client
  }
  const engineRow = (name: string) => page.getByRole('table', { name: 'Engines' }).locator(`tr[data-engine="${name}"]`)

  before(async () => {
    assert.ok(existsSync(chromiumPath), `no browser at ${chromiumPath}: install Chromium (apt-get install -y chromium) or set SVC_CONSOLE_BROWSER`)
    await mkdir(artifacts, { recursive: true })
    await promisify(execFile)(process.execPath, [join(here, '..', 'scripts', 'build-app.mjs')])
    const appDir = join(here, '..', 'dist', 'app')
    nats = await startTestNats()
    const memory = { 'svc-observability': { store: 'memory' } }
    alpha = await startTestEngine({ config: { fleet: fleetConfig(nats, 'alpha') }, settings: memory })
    bravo = await startTestEngine({ config: { fleet: fleetConfig(nats, 'bravo') }, settings: memory })
    lone = await startTestEngine({ settings: memory })
    const orders = worker(bravo, 'orders')
    orders.registerFunction('orders::validate', (input: { id: number }) => ({ valid: input.id > 0 }), { description: 'Validates an order' })
    worker(bravo, HOSTILE_NAME).registerFunction('hostile::noop', () => null)
    await waitFor(() => workers.every((w) => w.getConnectionState() === 'connected'), "workers.every((w) => w.getConnectionState() === 'connected')", 10_000)
    server = await startConsole({ port: 0, engineUrl: alpha.url, appDir, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    loneServer = await startConsole({ port: 0, engineUrl: lone.url, appDir, reconnect: { initialDelayMs: 100, maxDelayMs: 400 } })
    await waitFor(() => server.connected && loneServer.connected, 'server.connected && loneServer.connected', 10_000)
    browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    page.on('pageerror', (error) => pageErrors.push(String(error)))
  })

  after(async () => {
    await browser?.close()
    await server?.close()
    await loneServer?.close()
    await Promise.all(workers.map((w) => w.shutdown()))
    await Promise.all([alpha?.stop(), bravo?.stop(), lone?.stop()])
    await nats?.close()
  })

  it('the backend reads the whole fleet: both engines, the remote worker with its engine, each function with its engines', async () => {
    let fleet: any
    await waitFor(async () => {
      fleet = await invoke(server, 'engine::fleet::list')
      return fleet.engines.length === 2 && fleet.engines[1].workers >= 2
    }, 'the condition', 10_000)
    assert.equal(fleet.fleet, 'console-fleet')
    assert.equal(fleet.engine, 'alpha')
    assert.equal(fleet.status, 'healthy')
    assert.match(fleet.detail, /2 engines/)
    assert.deepEqual(fleet.engines.map((e: { engine: string; self: boolean }) => [e.engine, e.self]), [['alpha', true], ['bravo', false]])
    const listed = (await invoke(server, 'engine::workers::list')) as { workers: Array<{ name: string; engine?: string }> }
    assert.equal(listed.workers.find((w) => w.name === 'orders')?.engine, 'bravo')
    assert.equal(listed.workers.find((w) => w.name === 'svc-state')?.engine, 'alpha')
    const functions = (await invoke(server, 'engine::functions::list')) as { functions: Array<{ function_id: string; engines?: string[] }> }
    assert.deepEqual(functions.functions.find((f) => f.function_id === 'orders::validate')?.engines, ['bravo'])
    assert.deepEqual(await invoke(server, 'orders::validate', { id: 3 }), { valid: true })
  })

  it('Fleet page: the fleet, this engine, NATS status and every engine; a worker joining the other engine shows live', async () => {
    await page.goto(server.openUrl)
    await page.getByTestId('connection-state').getByText('connected').waitFor({ timeout: 10_000 })
    await page.getByTestId('fleet-membership').getByText('engine alpha of fleet console-fleet').waitFor()
    await nav('Fleet')
    assert.equal(new URL(page.url()).pathname, '/fleet')
    await page.getByTestId('fleet-name').getByText('console-fleet').waitFor()
    await page.getByTestId('fleet-status').getByText('healthy').waitFor()
    await page.getByTestId('fleet-status').getByText(/fleet console-fleet, engine alpha: 2 engines/).waitFor()
    await engineRow('alpha').getByText('this engine').first().waitFor()
    await engineRow('bravo').getByText(bravo.url, { exact: true }).waitFor()
    assert.equal(await engineRow('bravo').getByText('this engine').count(), 0, 'only alpha is marked as this engine')
    await engineRow('bravo').getByText(/^(just now|\d+ s ago)$/).waitFor()
    const bravoWorkers = async () => Number(await engineRow('bravo').locator('td.num').first().textContent())
    const before = await bravoWorkers()
    assert.ok(before >= 2, `bravo has its two workers, got ${before}`)
    await shot('fleet')
    worker(bravo, 'late-joiner').registerFunction('late::ping', () => 'pong')
    await waitFor(async () => (await bravoWorkers()) === before + 1, '(await bravoWorkers()) === before + 1', 10_000)
    assert.deepEqual(pageErrors, [])
  })

  it('Workers page: an Engine column, and the filter by engine shows one engine\'s workers', async () => {
    await engineRow('bravo').getByRole('link', { name: 'bravo' }).click()
    assert.equal(new URL(page.url()).search, '?engine=bravo')
    await page.getByRole('link', { name: 'orders', exact: true }).waitFor()
    await page.getByRole('columnheader', { name: 'Engine' }).waitFor()
    assert.equal(await page.getByLabel('Engine').inputValue(), 'bravo')
    assert.equal(await page.getByRole('link', { name: 'svc-state' }).count(), 0, "alpha's built-ins are filtered out")
    const ordersRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'orders', exact: true }) })
    await ordersRow.getByRole('cell', { name: 'bravo', exact: true }).waitFor()
    // The name bravo passed on is text: no image element, no script run.
    await page.getByRole('link', { name: HOSTILE_NAME, exact: true }).waitFor()
    assert.equal(await page.locator('main img').count(), 0)
    assert.equal(await page.evaluate('window.__pwned'), undefined)
    await shot('fleet-workers-bravo')
    await page.getByLabel('Engine').selectOption('alpha')
    await page.getByRole('link', { name: 'svc-state' }).waitFor()
    assert.equal(await page.getByRole('link', { name: 'orders', exact: true }).count(), 0)
    await page.getByLabel('Engine').selectOption('')
    await page.getByRole('link', { name: 'orders', exact: true }).waitFor()
    await page.getByRole('link', { name: 'svc-state' }).waitFor()
    // A remote worker's detail names its engine.
    await page.getByRole('link', { name: 'orders', exact: true }).click()
    await page.locator('.field', { hasText: 'Engine' }).getByText('bravo', { exact: true }).waitFor()
  })

  it('Functions page: the engines of each function', async () => {
    await nav('Functions')
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'orders::validate' }) })
    await page.getByRole('columnheader', { name: 'Engines' }).first().waitFor()
    await row.getByRole('cell', { name: 'bravo', exact: true }).waitFor()
    await shot('fleet-functions')
    await page.getByRole('link', { name: 'orders::validate' }).click()
    await page.locator('.field', { hasText: 'Replicas' }).getByText('orders on bravo').waitFor()
  })

  it('NATS down: the Fleet page shows degraded with the detail; NATS back: healthy again', async () => {
    await nav('Fleet')
    await page.getByTestId('fleet-status').getByText('healthy').waitFor()
    await nats.stop()
    try {
      await page.getByTestId('fleet-status').getByText('degraded').waitFor({ timeout: 20_000 })
      await page.getByTestId('fleet-status').getByText(/NATS is not reachable/).waitFor()
      // The sidebar re-reads the fleet every 10 s.
      await page.getByTestId('fleet-membership').getByText(/\(degraded\)/).waitFor({ timeout: 25_000 })
      await shot('fleet-degraded')
    } finally {
      await nats.start()
    }
    await page.getByTestId('fleet-status').getByText('healthy').waitFor({ timeout: 20_000 })
    await engineRow('bravo').waitFor({ timeout: 15_000 })
  })

  it('an engine that leaves the fleet leaves the Fleet page', async () => {
    await engineRow('bravo').waitFor()
    await bravo.stop()
    await engineRow('bravo').waitFor({ state: 'detached', timeout: 15_000 })
    await page.getByTestId('fleet-status').getByText(/: 1 engine,/).waitFor({ timeout: 10_000 })
  })

  it('an engine alone: no Fleet entry, no Engine column, and /fleet says it is not part of a fleet', async () => {
    await page.goto(loneServer.openUrl)
    await page.getByTestId('connection-state').getByText('connected').waitFor({ timeout: 10_000 })
    await page.getByRole('link', { name: 'svc-state' }).waitFor()
    assert.equal(await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Fleet' }).count(), 0)
    assert.equal(await page.getByRole('columnheader', { name: 'Engine' }).count(), 0)
    assert.equal(await page.getByLabel('Engine').count(), 0)
    assert.equal(await page.getByTestId('fleet-membership').count(), 0)
    await page.goto(loneServer.url + '/fleet')
    await page.getByText('This engine is not part of a fleet.').waitFor()
    assert.equal(await page.getByRole('table', { name: 'Engines' }).count(), 0)
    await shot('fleet-alone')
    assert.deepEqual(pageErrors, [])
  })
})

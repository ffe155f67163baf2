/**
 * The fleet example (examples/fleet, issue 19 §4) end to end, started the way its README says:
 * `examples/fleet/run.sh` — nats-server, redis-server, three engines with the one config.yaml, a
 * worker on each, an HTTP load round-robin through the three engines — with a short load and
 * `--keep`, so that the test can also send the running fleet hostile requests and then stop it
 * with SIGINT as Ctrl-C would. The config.yaml itself is loaded with hostile environment values.
 */
import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { ConfigError, loadConfig } from '../runtime/config/index.ts'
import { ROOT } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const EXAMPLE = join(ROOT, 'examples', 'fleet')
const CONFIG = join(EXAMPLE, 'config.yaml')

/** The `--json` summary of run.ts (examples/fleet/run.ts `Summary`). */
interface Summary {
  fleet: string
  orders_created: number
  orders_read: number
  failed: number
  errors: string[]
  engines: Array<{ engine: string; pid: number; engine_url: string; http_url: string; requests: number; failed: number }>
  workers: Array<{ worker: string; pid: number; started_on: string; calls: number; engines: Record<string, number> }>
  pids: number[]
  dir: string
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe('examples/fleet: run.sh', () => {
  let run: ChildProcess
  let exited: Promise<number | null>
  let summary: Summary
  const output: string[] = []

  before(async () => {
    // Everything but a path: the example must find its servers and pick its ports by itself.
    run = spawn(join(EXAMPLE, 'run.sh'), ['--duration', '1.5', '--concurrency', '8', '--keep', '--json'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    exited = new Promise((resolve) => run.once('exit', (code) => resolve(code)))
    createInterface({ input: run.stderr! }).on('line', (line) => output.push(line))
    summary = await new Promise<Summary>((resolve, reject) => {
      createInterface({ input: run.stdout! }).on('line', (line) => {
        output.push(line)
        if (line.startsWith('{')) resolve(JSON.parse(line) as Summary)
      })
      void exited.then((code) => reject(new Error(`run.sh exited with ${code} before its summary:\n${output.join('\n')}`)))
    })
  })
  after(async () => {
    if (run.exitCode === null && run.signalCode === null) run.kill('SIGKILL')
    await exited
    // Should run.ts have left anything behind (the SIGINT test then fails), it does not outlive the test.
    for (const pid of summary?.pids ?? []) if (alive(pid)) process.kill(pid, 'SIGKILL')
    if (summary?.dir) await rm(summary.dir, { recursive: true, force: true })
  })

  it('serves requests through every engine and spreads the calls over every worker', () => {
    assert.equal(summary.failed, 0, `no request failed: ${summary.errors.join('; ')}`)
    assert.ok(summary.orders_created > 0)
    assert.equal(summary.orders_read, summary.orders_created, 'every order created through one engine is read back through the next')
    assert.deepEqual(summary.engines.map((e) => e.engine), ['e1', 'e2', 'e3'])
    for (const engine of summary.engines) assert.ok(engine.requests > 0, `engine ${engine.engine} served requests through its listener`)
    assert.equal(new Set(summary.engines.map((e) => e.http_url)).size, 3, 'each engine has its own HTTP port')
    assert.deepEqual(summary.workers.map((w) => [w.worker, w.started_on]), [['orders-1', 'e1'], ['orders-2', 'e2'], ['orders-3', 'e3']])
    for (const worker of summary.workers) {
      assert.ok(worker.calls > 0, `worker ${worker.worker} handled calls`)
      // The worker says which engine it is on: the one it was started on, listed first in its SVC_URL.
      assert.deepEqual(Object.keys(worker.engines), [worker.started_on])
    }
    assert.equal(
      summary.workers.reduce((n, w) => n + w.calls, 0),
      summary.engines.reduce((n, e) => n + e.requests, 0),
      'every request served was handled by one of the workers',
    )
  })

  it('answers requests from anyone else through any engine: an order created through e1 reads back through e3', async () => {
    const [e1, , e3] = summary.engines
    const created = await fetch(`${e1!.http_url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ item: 'green tea', quantity: 3 }) })
    assert.equal(created.status, 201)
    const { order } = (await created.json()) as { order: { id: string; item: string; quantity: number } }
    assert.deepEqual([order.item, order.quantity], ['green tea', 3])
    const read = await fetch(`${e3!.http_url}/orders/${order.id}`)
    assert.equal(read.status, 200)
    const body = (await read.json()) as { order: { id: string; created_by: { engine: string } }; served_by: { worker: string; engine: string } }
    assert.equal(body.order.id, order.id)
    assert.equal(body.order.created_by.engine, 'e1')
    assert.deepEqual([body.served_by.worker, body.served_by.engine], ['orders-3', 'e3'])
  })

  it('answers hostile order requests with 400 or 404 and a JSON error, never a 5xx (fast-check)', async () => {
    const urls = summary.engines.map((e) => e.http_url)
    const hostileValue = fc.oneof(
      fc.jsonValue({ maxDepth: 3 }),
      fc.string({ unit: 'binary', maxLength: 300 }),
      fc.constantFrom('', ' ', '\u0000', 'a\u0000b', '\ud800', '\udfff x', 'x'.repeat(201), 'x'.repeat(200), -1, 0, 1.5, 1001, 2 ** 53, -(2 ** 53), '3', true, null, [], {}),
    )
    const body = fc.oneof(
      // Shaped like an order, with hostile fields.
      fc.record({ item: hostileValue, quantity: hostileValue }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      // Not JSON at all.
      fc.string({ maxLength: 200 }),
      fc.constant('['.repeat(5000)),
      // A prototype key is data, not the order's quantity.
      fc.constant('{"item":"x","__proto__":{"quantity":5},"constructor":{"prototype":{"quantity":7}}}'),
    )
    /** Our worker's `{error: '…'}`, or the engine's envelope `{error: {code, message}}` for what never reaches it (malformed JSON, no route). */
    const isError = (answer: { error?: unknown } | undefined): boolean =>
      typeof answer?.error === 'string' || typeof (answer?.error as { code?: unknown } | undefined)?.code === 'string'
    await fc.assert(
      fc.asyncProperty(fc.nat(2), body, fc.string({ unit: 'grapheme', maxLength: 80 }), async (via, text, id) => {
        const created = await fetch(`${urls[via]}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text })
        const answer = (await created.json().catch(() => undefined)) as { error?: unknown; order?: { item: unknown; quantity: unknown } } | undefined
        assert.ok(created.status === 201 || created.status === 400, `POST ${JSON.stringify(text).slice(0, 200)}: ${created.status} ${JSON.stringify(answer)}`)
        if (created.status === 400) assert.ok(isError(answer), JSON.stringify(answer))
        else {
          const sent = JSON.parse(text) as { item: unknown; quantity?: unknown }
          assert.equal(answer?.order?.item, sent.item)
          assert.equal(answer?.order?.quantity, sent.quantity ?? 1)
        }
        const read = await fetch(`${urls[(via + 1) % 3]}/orders/${encodeURIComponent(id)}`)
        const readAnswer = (await read.json().catch(() => undefined)) as { error?: unknown } | undefined
        assert.equal(read.status, 404, `GET /orders/${encodeURIComponent(id)}: ${read.status} ${JSON.stringify(readAnswer)}`)
        assert.ok(isError(readAnswer), JSON.stringify(readAnswer))
      }),
      { numRuns: 80 },
    )
  })

  it('stops every process it started and removes its directory on Ctrl-C (SIGINT)', async () => {
    assert.equal(summary.pids.length, 8, 'nats-server, redis-server, three engines, three workers')
    for (const pid of summary.pids) assert.ok(alive(pid), `process ${pid} runs while the fleet is kept`)
    run.kill('SIGINT')
    assert.equal(await exited, 130)
    await waitFor(() => summary.pids.every((pid) => !alive(pid)), 'summary.pids.every((pid) => !alive(pid))', 15_000)
    assert.equal(existsSync(summary.dir), false, 'its temporary directory is gone')
  })
})

describe('examples/fleet: missing servers', () => {
  it('fails with the install command when nats-server or redis-server is not on PATH', async () => {
    const emptyPath = await mkdtemp(join(tmpdir(), 'svc-no-servers-'))
    try {
      const child = spawn(process.execPath, [join(EXAMPLE, 'run.ts')], { cwd: ROOT, env: { ...process.env, PATH: emptyPath }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stderr = ''
      child.stderr!.on('data', (d) => (stderr += String(d)))
      child.stdout!.resume()
      const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)))
      assert.equal(code, 1)
      assert.match(stderr, /nats-server is not installed.*apt-get install -y nats-server/)
      assert.match(stderr, /redis-server is not installed.*apt-get install -y redis-server/)
    } finally {
      await rm(emptyPath, { recursive: true, force: true })
    }
  })
})

describe('examples/fleet: sources', () => {
  it('type-checks run.ts and worker.ts (they run as TypeScript; tsconfig.check.json does not cover examples/)', () => {
    const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', EXAMPLE], { cwd: ROOT, encoding: 'utf8' })
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr)
  })
})

describe('examples/fleet/config.yaml', () => {
  it('gives every engine the same fleet, its own name and ports from the environment, and Redis for what the built-ins keep', () => {
    const env = { SVC_FLEET_ENGINE: 'e2', NATS_URL: 'nats://user:pw@10.0.0.5:4222', REDIS_URL: 'redis://10.0.0.6:6379', SVC_HOST: '0.0.0.0', SVC_PORT: '0', HTTP_PORT: '8080', STREAM_PORT: '8081' }
    const config = loadConfig(CONFIG, { env })
    assert.equal(config.fleet?.name, 'shop')
    assert.equal(config.fleet?.engine, 'e2')
    assert.deepEqual(config.fleet?.nats, ['nats://user:pw@10.0.0.5:4222'])
    assert.deepEqual(config.listeners.map((l) => [l.host, l.port]), [['0.0.0.0', 0]])
    assert.deepEqual(config.builtins['svc-http']?.config, { host: '0.0.0.0', port: 8080 })
    for (const name of ['svc-state', 'svc-stream', 'svc-pubsub', 'svc-cron']) {
      assert.deepEqual((config.builtins[name]?.config as { adapter: unknown }).adapter, { name: 'redis', config: { url: 'redis://10.0.0.6:6379', key_prefix: 'shop:' } }, name)
    }
    // Without the variables: one machine's defaults.
    const defaults = loadConfig(CONFIG, { env: {} })
    assert.deepEqual(defaults.fleet?.nats, ['nats://127.0.0.1:4222'])
    assert.deepEqual(defaults.listeners.map((l) => [l.host, l.port]), [['127.0.0.1', 49134]])
    assert.deepEqual(defaults.builtins['svc-http']?.config, { host: '127.0.0.1', port: 3111 })
  })

  it('loads or refuses hostile environment values with a ConfigError that never shows the NATS URL (fast-check)', () => {
    const secret = 'hunter2secret'
    const value = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.constantFrom('', ' ', '0', '-1', '65536', '1e3', '0x10', '3111 ', '${SVC_PORT}', '$${X}', '}', 'a.b', 'x'.repeat(65), '\n', 'nats://a b'),
    )
    const natsUrl = fc.oneof(value, value.map((v) => `nats://user:${secret}@${v}`), value.map((v) => `http://user:${secret}@${v}`), fc.constant(`nats://user:${secret}@host:4222 x`))
    fc.assert(
      fc.property(fc.record({ SVC_FLEET_ENGINE: value, NATS_URL: natsUrl, SVC_HOST: value, SVC_PORT: value, HTTP_PORT: value, REDIS_URL: value, REDIS_KEY_PREFIX: value }, { requiredKeys: [] }), (env) => {
        let config
        try {
          config = loadConfig(CONFIG, { env })
        } catch (error) {
          assert.ok(error instanceof ConfigError, `a ConfigError, not ${(error as Error).name}: ${(error as Error).message}`)
          assert.ok(!error.message.includes(secret), `the NATS URL's password stays out of: ${error.message}`)
          return
        }
        const port = config.listeners[0]!.port
        assert.ok(Number.isInteger(port) && port >= 0 && port <= 65535)
        if (env.SVC_PORT) assert.equal(port, Number(env.SVC_PORT))
        assert.match(config.fleet!.engine, /^[A-Za-z0-9_-]{1,64}$/)
        assert.equal(config.fleet!.nats.length, 1)
        if (env.NATS_URL) assert.equal(config.fleet!.nats[0], env.NATS_URL)
      }),
      { numRuns: 300 },
    )
  })
})

/**
 * `svc` and `svc compose` launch workers through one orchestrator (issue 21,
 * src/supervisor/orchestrator.ts): the same crash loop, run by `startEngine` (what `svc` runs) and
 * by the compose daemon's runner against that same engine, ends the same way — `crashed` after 5
 * unrequested exits (compose: `failed` with `CRASHED`) — and both count the same restarts, also the
 * ones of processes that crashed before they registered again. `svc --json` reports a console that
 * cannot start as it reports a local worker: with its error and code.
 */
import assert from 'node:assert/strict'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { startEngine } from '../src/lib/start.ts'
import type { RunningEngine } from '../src/lib/start.ts'
import { loadComposeFile } from '../src/compose/file.ts'
import { ProjectRunner } from '../src/compose/runner.ts'
import type { ContainerStatus, WorkerSummary } from '../src/compose/types.ts'
import { silentLogger } from '../runtime/engine/logger.ts'
import { ROOT, tempProject } from './support/processes.ts'
import { waitFor } from './support/wait.ts'

const SDK = pathToFileURL(join(ROOT, 'packages', 'sdk', 'dist', 'index.js')).href
const NS = 'orch-compose'

/**
 * Registers `<name>::x` and serves until `.svc/crash-now` exists, then exits with code 1; every
 * later start (its marker exists) exits with code 3 at once, before registering, printing a
 * different word each time (so the "same failure twice" rule of issue 11 does not apply).
 */
const LOOPER = `import { existsSync, writeFileSync } from 'node:fs'
import { registerWorker } from ${JSON.stringify(SDK)}
const root = process.env.SVC_PROJECT_ROOT + '/.svc'
const marker = root + '/ran-' + process.env.SVC_WORKER_NAME
if (existsSync(marker)) {
  console.error('again ' + Math.random().toString(36).replace(/[0-9.]/g, ''))
  process.exit(3)
}
writeFileSync(marker, '1')
const svc = registerWorker(undefined, { otel: { enabled: false } })
svc.registerFunction(process.env.SVC_WORKER_NAME + '::x', () => 1)
setInterval(() => { if (existsSync(root + '/crash-now')) process.exit(1) }, 50)
`

let dir = ''
let running: RunningEngine | undefined
let runner: ProjectRunner | undefined
const printed: string[] = []

before(async () => {
  dir = await tempProject('  - name: looper\n    worker_path: ./workers/looper\n    watch: false\n')
  const worker = join(dir, 'workers', 'looper')
  mkdirSync(worker, { recursive: true })
  writeFileSync(join(worker, 'svc.worker.yaml'), 'name: looper\nscripts:\n  start: node index.mjs\n')
  writeFileSync(join(worker, 'index.mjs'), LOOPER)
  writeFileSync(join(dir, 'worker-compose.yaml'), `namespace: ${NS}\ncontainers:\n  looper-c:\n    worker: path://./workers/looper\n    watch: false\n`)
  mkdirSync(join(dir, '.svc'), { recursive: true })
  const env = { ...process.env }
  delete env.SVC_URL
  running = await startEngine({ version: 'test', cwd: dir, env, workers: true, watch: false, json: true, stdout: (text) => void printed.push(text) })
})

after(async () => {
  await runner?.downAll()
  await running?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('one orchestrator for svc and svc compose (issue 21)', () => {
  it('a crash loop: crashed after 5 exits under both, with the same restart count', { timeout: 120_000 }, async () => {
    const engine = running!.engine
    const svcWorker = () => running!.workers.find((w) => w.name === 'looper')!
    await waitFor(() => svcWorker().state === 'running', () => `svc's looper running; svc printed:\n${printed.join('')}`, 60_000)

    // The compose daemon's runner, reaching the same engine as the daemon does (engine::workers::list).
    runner = new ProjectRunner({
      namespace: NS,
      cwd: dir,
      log: silentLogger,
      engine: {
        url: engine.workerUrls[0]!,
        listWorkers: async (filter = {}) => ((await engine.inject({ function_id: 'engine::workers::list', data: filter })) as { workers: WorkerSummary[] }).workers,
        configure: async () => {},
        log: () => {},
      },
    })
    const path = join(dir, 'worker-compose.yaml')
    const file = loadComposeFile(path, { label: 'worker-compose.yaml', env: {} })
    const up = await runner.up(path, file)
    assert.equal(up.status, 'ok', JSON.stringify(up))
    const container = () => runner!.status(path, file).find((c) => c.container === 'looper-c')!

    writeFileSync(join(dir, '.svc', 'crash-now'), '1')
    const story = () => `svc: ${svcWorker().state} (${svcWorker().restarts} restarts); compose: ${JSON.stringify(container())}; svc printed:\n${printed.join('')}`
    await waitFor(() => svcWorker().state === 'crashed' && container().state === 'failed', story, 90_000)

    // svc: crashed by the crash policy, after the 1 s, 2 s, 4 s and 8 s restarts.
    const worker = svcWorker()
    assert.equal(worker.failure?.code, 'CRASHED')
    assert.match(worker.failure!.message, /exited with code 3; 5 unrequested exits within 60 s/)
    assert.equal(worker.restarts, 4)
    const record = JSON.parse(readFileSync(join(dir, '.svc', 'state', 'workers', 'looper.json'), 'utf8'))
    assert.equal(record.restarts, 4)

    // compose: the same policy, the same message, and compose::status counts the same restarts
    // (before, it counted only the restarts that followed a registered process: 1).
    const status: ContainerStatus = container()
    assert.equal(status.last_error?.code, 'CRASHED')
    assert.equal(status.last_error?.message, worker.failure!.message)
    assert.equal(status.restarts, worker.restarts)
    const composeRecord = join(dir, '.svc', 'compose', NS, 'workers', 'looper-c.json')
    assert.ok(existsSync(composeRecord))
    assert.equal(JSON.parse(readFileSync(composeRecord, 'utf8')).restarts, status.restarts)
  })
})

describe('svc --json shows the console like any worker it launches', () => {
  it('a console that cannot start: its worker_state event carries the error and its code', { timeout: 120_000 }, async () => {
    // The console's port, held here: it exits the same way twice and is crashed (issue 11).
    const holder = createServer()
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
    const port = (holder.address() as AddressInfo).port
    const project = await tempProject(`  - name: console\n    config: { port: ${port}, host: 127.0.0.1 }\n`)
    const lines: string[] = []
    const env = { ...process.env }
    delete env.SVC_URL
    delete env.SVC_CONSOLE_TOKEN
    let svc: RunningEngine | undefined
    try {
      svc = await startEngine({ version: 'test', cwd: project, env, workers: true, watch: false, json: true, stdout: (text) => void lines.push(text) })
      const events = () => lines.join('').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
      const failed = await waitFor(
        () => events().find((e) => e.event === 'worker_state' && e.worker === 'console' && (e.state === 'crashed' || e.state === 'failed')),
        () => `the console to fail; svc printed:\n${lines.join('')}`,
        90_000,
      )
      assert.equal(typeof failed.error, 'string', JSON.stringify(failed))
      // The same exit twice (STARTUP_FAILED), or five different ones (CRASHED) should its output vary.
      assert.ok(failed.error_code === 'STARTUP_FAILED' || failed.error_code === 'CRASHED', JSON.stringify(failed))
    } finally {
      await svc?.stop()
      holder.close()
      rmSync(project, { recursive: true, force: true })
    }
  })
})

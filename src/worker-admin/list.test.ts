import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { startTestEngine } from '../../test/support/engine.ts'
import type { TestEngine } from '../../test/support/engine.ts'
import { EngineAccess } from './engine.ts'
import { microvmWorkers } from './state-files.ts'
import { formatTable, listWorkers } from './list.ts'
import type { ListedWorker } from './list.ts'
import { waitFor } from '../../test/support/wait.ts'

describe('svc worker list table', () => {
  it('prints the example of cli.md §4.5 byte for byte', () => {
    const rows: ListedWorker[] = [
      { name: 'svc-http', kind: 'builtin', namespace: 'default', status: 'running', pid: null, functions: [], source: 'built-in' },
      { name: 'database', kind: 'builtin', namespace: 'default', status: 'disabled', pid: null, functions: [], source: 'built-in' },
      { name: 'math-worker', kind: 'local', namespace: 'default', status: 'running', pid: 41233, functions: ['math::add'], source: './workers/math-worker' },
      { name: 'caller-worker', kind: 'local', namespace: 'default', status: 'crashed', pid: null, functions: [], source: './workers/caller-worker' },
    ]
    assert.equal(
      formatTable(rows),
      [
        'NAME           KIND     NAMESPACE  STATUS      PID    FUNCTIONS  SOURCE',
        'svc-http       builtin  default    running     -      0          built-in',
        'database       builtin  default    disabled    -      -          built-in',
        'math-worker    local    default    running     41233  1          ./workers/math-worker',
        'caller-worker  local    default    crashed     -      0          ./workers/caller-worker',
        '',
      ].join('\n'),
    )
  })

  it('widens STATUS for engine not running and shows - for its functions; external workers have no source', () => {
    const rows: ListedWorker[] = [
      { name: 'a', kind: 'local', namespace: 'default', status: 'engine not running', pid: null, functions: [], source: './a' },
      { name: 'ext', kind: 'external', namespace: 'jobs', status: 'running', pid: 7, functions: ['x::y', 'x::z'], source: null },
    ]
    assert.equal(
      formatTable(rows),
      [
        'NAME  KIND      NAMESPACE  STATUS              PID  FUNCTIONS  SOURCE',
        'a     local     default    engine not running  -    -          ./a',
        'ext   external  jobs       running             7    2          -',
        '',
      ].join('\n'),
    )
  })
})

describe('svc worker list merges config.yaml, state files and the engine', () => {
  let engine: TestEngine
  let root: string
  const clients: SvcClient[] = []

  before(async () => {
    engine = await startTestEngine()
    root = mkdtempSync(join(tmpdir(), 'svc-list-'))
    mkdirSync(join(root, '.svc', 'state', 'workers'), { recursive: true })
    writeFileSync(
      join(root, 'config.yaml'),
      [
        'workers:',
        '  - name: cron',
        '    enabled: false',
        '  - name: console',
        '  - name: math-worker',
        '    worker_path: ./workers/math-worker',
        '  - name: caller-worker',
        '    worker_path: ./workers/caller-worker',
        '  - name: old',
        '    worker_path: ./workers/old',
        '  - name: older',
        '    worker_path: ./workers/older',
        '  - name: jobs',
        '    worker_path: ./workers/jobs',
        '    namespace: ${JOBS_NS:batch}',
        '  - name: vm',
        '    worker_path: ./workers/vm',
        '    isolation: microvm',
        '',
      ].join('\n'),
    )
    const state = (name: string, fields: Record<string, unknown>) =>
      writeFileSync(
        join(root, '.svc', 'state', 'workers', `${name}.json`),
        JSON.stringify({ name, namespace: 'default', state: 'declared', pid: null, supervisor_pid: process.pid, last_error: null, updated_at: new Date().toISOString(), ...fields }),
      )
    state('math-worker', { state: 'starting', pid: 4242 })
    state('caller-worker', { state: 'crashed', last_error: 'exited with code 1 (5 times in 60 s)' })
    state('old', { state: 'running', pid: 1, supervisor_pid: 2 ** 22 + 54321 })
    state('older', { state: 'failed', updated_at: new Date(Date.now() - 3_600_000).toISOString() })
    state('console', { state: 'installing' })
    // A microVM worker: the supervisor records its VM's host pids (this test process stands in for QEMU).
    state('vm', { state: 'starting', pid: process.pid, isolation: 'microvm', vm_pids: [process.pid, 'x', -1] })
    writeFileSync(join(root, '.svc', 'state', 'workers', 'jobs.json'), '{ not json')

    const math = registerWorker(engine.url, { workerName: 'math-worker' })
    math.registerFunction('math::add', () => ({}))
    const stray = registerWorker(engine.url, { workerName: 'stray', namespace: 'elsewhere' })
    clients.push(math, stray)
  })

  after(async () => {
    for (const client of clients) await client.shutdown()
    await engine.stop()
    rmSync(root, { recursive: true, force: true })
  })

  async function listing(all: boolean) {
    const project = { configPath: join(root, 'config.yaml'), configLabel: 'config.yaml', root, cwd: root, engineUrl: engine.url }
    const access = new EngineAccess(engine.url)
    try {
      return await listWorkers({ all }, { project, env: {}, engine: access })
    } finally {
      await access.close()
    }
  }

  it("the console's source (GET /api/microvms): the live microVM workers of the state files, with their VMs' host RSS", () => {
    writeFileSync(
      join(root, '.svc', 'state', 'workers', 'gone-vm.json'),
      JSON.stringify({ name: 'gone-vm', state: 'running', isolation: 'microvm', vm_pids: [process.pid], supervisor_pid: 2 ** 22 + 54321 }),
    )
    const vms = microvmWorkers(root)
    assert.deepEqual(vms.map((v) => v.name), ['vm'], 'process workers, unreadable and stale records are left out')
    assert.ok(vms[0]!.vm_rss_bytes > 1024 * 1024, `host RSS of the VM's pids: ${vms[0]!.vm_rss_bytes}`)
    assert.deepEqual(microvmWorkers(join(root, 'no-such-project')), [])
  })

  it('takes registration from the engine and the rest of the life cycle from live supervisor records', async () => {
    // Registration is asynchronous: wait until the SDK workers are listed with their functions.
    let result = await waitFor(async () => {
      const listed = await listing(true)
      return listed.workers.some((w) => w.name === 'math-worker' && w.functions.length === 1) && listed.workers.some((w) => w.name === 'stray') && listed
    }, 'math-worker (with its function) and stray listed')
    assert.equal(result.engine_running, true)
    const row = (name: string) => result.workers.find((w) => w.name === name)
    assert.deepEqual(row('math-worker'), { name: 'math-worker', kind: 'local', namespace: 'default', status: 'running', pid: 4242, functions: ['math::add'], source: './workers/math-worker' })
    assert.deepEqual(row('caller-worker'), {
      name: 'caller-worker',
      kind: 'local',
      namespace: 'default',
      status: 'crashed',
      pid: null,
      functions: [],
      source: './workers/caller-worker',
      last_error: 'exited with code 1 (5 times in 60 s)',
    })
    assert.equal(row('old')!.status, 'declared', 'a record whose supervisor is gone is ignored')
    assert.equal(row('older')!.status, 'declared', 'a record older than the engine is ignored')
    assert.equal(row('jobs')!.status, 'declared', 'an unreadable record is ignored')
    assert.equal(row('jobs')!.namespace, 'batch', 'placeholders in namespace are expanded')
    assert.equal(row('console')!.status, 'installing')
    const vm = row('vm')!
    assert.equal(vm.isolation, 'microvm')
    assert.ok(vm.vm_rss_bytes! > 1024 * 1024, `host RSS of the VM's pids: ${vm.vm_rss_bytes}`)
    assert.match(formatTable([vm]), new RegExp(`\\./workers/vm \\(microvm, ${Math.round(vm.vm_rss_bytes! / 1048576)} MiB\\)\\n$`))
    assert.equal(row('math-worker')!.isolation, undefined, 'a process worker has no isolation field')
    assert.equal(row('svc-cron')!.status, 'disabled')
    assert.equal(row('svc-http')!.status, 'running')
    assert.equal(row('configuration')!.kind, 'builtin')
    assert.deepEqual(row('stray'), { name: 'stray', kind: 'external', namespace: 'elsewhere', status: 'running', pid: process.pid, functions: [], source: null })
    assert.deepEqual(
      result.workers.map((w) => w.name),
      ['svc-http', 'svc-state', 'svc-stream', 'svc-pubsub', 'svc-cron', 'queue', 'database', 'console', 'configuration', 'svc-observability', 'math-worker', 'caller-worker', 'old', 'older', 'jobs', 'vm', 'stray'],
    )
  })

  it('without --all hides mandatory built-ins and external workers', async () => {
    const names = (await listing(false)).workers.map((w) => w.name)
    assert.ok(!names.includes('configuration') && !names.includes('svc-observability') && !names.includes('stray'))
    assert.ok(names.includes('console'), 'console is listed when declared')
  })
})

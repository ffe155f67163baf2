import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { CliError } from '../lib/errors.ts'
import { KVM_MESSAGES } from '../supervisor/microvm/probe.ts'
import { addWorkers, classifyWorker, entryPath } from './add.ts'
import type { AddContext, AddRequest } from './add.ts'
import { EngineAccess } from './engine.ts'
import { humanOutput } from './output.ts'
import { createStepRunner } from './progress.ts'

const CONFIG = '# project\nworkers:\n  - name: svc-http   # routes\n    config:\n      port: 0\n'
let root: string
let closedUrl: string

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'svc-add-'))
  for (const [dir, manifest] of Object.entries({
    vm: 'name: vm\nisolation: microvm\nscripts:\n  start: node index.js\n',
    plain: 'name: plain\nscripts:\n  start: node index.js\n',
  })) {
    mkdirSync(join(root, 'workers', dir), { recursive: true })
    writeFileSync(join(root, 'workers', dir, 'svc.worker.yaml'), manifest)
  }
  // A port nothing listens on: the engine is "not running" for these tests.
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  closedUrl = `ws://127.0.0.1:${(server.address() as { port: number }).port}`
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

after(() => rmSync(root, { recursive: true, force: true }))

function run(request: Partial<AddRequest> & { workers: string[] }, extra: Partial<AddContext> = {}) {
  writeFileSync(join(root, 'config.yaml'), CONFIG)
  let stdout = ''
  let stderr = ''
  const context: AddContext = {
    project: { configPath: join(root, 'config.yaml'), configLabel: 'config.yaml', root, cwd: root, engineUrl: closedUrl },
    env: {},
    output: humanOutput({ stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) }),
    steps: createStepRunner('silent'),
    engine: new EngineAccess(closedUrl),
    ...extra,
  }
  const promise = addWorkers({ force: false, wait: true, timeoutMs: 1000, ...request }, context).finally(() => context.engine.close())
  return promise.then((report) => ({ report, stdout: () => stdout, stderr: () => stderr, config: readFileSync(join(root, 'config.yaml'), 'utf8') }))
}

describe('svc worker add (library)', () => {
  it('refuses microVM isolation when KVM is not accessible, before touching config.yaml', async () => {
    const denied = () => ({ ok: false as const, code: 'KVM_NOT_ACCESSIBLE' as const, message: KVM_MESSAGES.denied })
    for (const request of [{ workers: ['./workers/vm'] }, { workers: ['./workers/plain'], isolation: 'microvm' as const }]) {
      const { report, stderr, config } = await run(request, { checkKvm: denied })
      assert.equal(report.exitCode, 1)
      assert.equal(report.workers[0]!.error?.code, 'KVM_NOT_ACCESSIBLE')
      assert.equal(stderr(), `Error: ${KVM_MESSAGES.denied}\n`)
      assert.equal(config, CONFIG)
    }
  })

  it('writes isolation only when given as a flag', async () => {
    const ok = () => ({ ok: true as const, accel: 'kvm' as const })
    const fromManifest = await run({ workers: ['./workers/vm'] }, { checkKvm: ok })
    assert.equal(fromManifest.config, `${CONFIG}  - name: vm\n    worker_path: ./workers/vm\n`)
    const fromFlag = await run({ workers: ['./workers/plain'], isolation: 'microvm', namespace: 'jobs' }, { checkKvm: ok })
    assert.equal(fromFlag.config, `${CONFIG}  - name: plain\n    worker_path: ./workers/plain\n    namespace: jobs\n    isolation: microvm\n`)
    assert.equal(fromFlag.stdout(), 'Added plain; it will start with svc\n')
  })

  it('rejects --name with several workers, and names that are not worker names', async () => {
    await assert.rejects(run({ workers: ['./workers/vm', './workers/plain'], name: 'x' }), (err: unknown) => err instanceof CliError && err.exitCode === 2)
    const bad = await run({ workers: ['./workers/plain'], name: 'Bad Name' })
    assert.equal(bad.report.exitCode, 2)
    assert.match(bad.stderr(), /^Error: Invalid worker name 'Bad Name'/)
    const builtin = await run({ workers: ['./workers/plain'], name: 'http' })
    assert.equal(builtin.report.exitCode, 2)
    assert.equal(builtin.stderr(), "Error: 'http' is the name of a built-in worker; give the local worker another name with --name\n")
    assert.equal(builtin.config, CONFIG)
  })

  it('warns that local-only flags do not apply to built-ins', async () => {
    const { report, stderr } = await run({ workers: ['database'], namespace: 'x' })
    assert.equal(report.exitCode, 0)
    assert.equal(stderr(), 'Warning: --namespace applies to local workers only; ignored for database\n')
  })
})

describe('WORKER arguments', () => {
  it('reads paths, built-ins and unknown names as cli.md §4.2 says', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-classify-'))
    try {
      mkdirSync(join(dir, 'http'))
      mkdirSync(join(dir, 'mathw'))
      assert.deepEqual(classifyWorker('./x', dir), { kind: 'path', directory: join(dir, 'x') })
      assert.deepEqual(classifyWorker('workers/x', dir), { kind: 'path', directory: join(dir, 'workers', 'x') })
      assert.deepEqual(classifyWorker('/abs/x', dir), { kind: 'path', directory: '/abs/x' })
      assert.deepEqual(classifyWorker('~/w', dir), { kind: 'path', directory: join(homedir(), 'w') })
      assert.deepEqual(classifyWorker('mathw', dir), { kind: 'path', directory: join(dir, 'mathw') })
      // A built-in name wins over a directory of that name.
      assert.equal(classifyWorker('http', dir).kind, 'builtin')
      assert.equal(classifyWorker('db', dir).kind, 'builtin')
      assert.deepEqual(classifyWorker('nothing-here', dir), { kind: 'unknown' })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('writes worker_path relative to the project root', () => {
    assert.equal(entryPath('/p', '/p/workers/a'), './workers/a')
    assert.equal(entryPath('/p', '/shared/a'), '../shared/a')
    assert.equal(entryPath('/p', '/p'), '.')
  })
})

import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { registerWorker } from 'svc-sdk'
import type { SvcClient } from 'svc-sdk'
import { startTestEngine } from '../../test/support/engine.ts'
import type { TestEngine } from '../../test/support/engine.ts'
import { EngineAccess } from './engine.ts'
import { humanOutput } from './output.ts'
import { removeWorkers } from './remove.ts'
import { waitFor } from '../../test/support/wait.ts'

const CONFIG = 'workers:\n  - name: math-worker   # adds\n    worker_path: ./workers/math-worker\n  - name: idle\n    worker_path: ./workers/idle\n'

describe('svc worker remove asks before stopping a running worker (interactive runs)', () => {
  let engine: TestEngine
  let root: string
  let math: SvcClient

  before(async () => {
    engine = await startTestEngine()
    root = mkdtempSync(join(tmpdir(), 'svc-remove-'))
    math = registerWorker(engine.url, { workerName: 'math-worker' })
    const access = new EngineAccess(engine.url)
    const session = (await access.get())!
    await waitFor(async () => (await session.listWorkers()).some((w) => w.name === 'math-worker'), 'math-worker listed')
    await access.close()
  })

  after(async () => {
    await math.shutdown()
    await engine.stop()
    rmSync(root, { recursive: true, force: true })
  })

  async function remove(names: string[], answer: boolean) {
    writeFileSync(join(root, 'config.yaml'), CONFIG)
    const asked: string[] = []
    let stdout = ''
    const access = new EngineAccess(engine.url)
    try {
      const report = await removeWorkers(names, {
        project: { configPath: join(root, 'config.yaml'), configLabel: 'config.yaml', root, cwd: root, engineUrl: engine.url },
        output: humanOutput({ stdout: (t) => (stdout += t), stderr: () => undefined }),
        engine: access,
        confirm: async (message) => {
          asked.push(message)
          return answer
        },
      })
      return { report, asked, stdout, config: readFileSync(join(root, 'config.yaml'), 'utf8') }
    } finally {
      await access.close()
    }
  }

  it('keeps the worker when the answer is no', async () => {
    const { report, asked, stdout, config } = await remove(['math-worker'], false)
    assert.deepEqual(asked, ['Stop and remove math-worker?'])
    assert.equal(stdout, 'Kept math-worker\n')
    assert.equal(config, CONFIG)
    assert.deepEqual(report.workers, [{ name: 'math-worker', kind: 'local', action: 'none', changed: false, was_running: true }])
    assert.equal(report.exitCode, 0)
  })

  it('removes it when the answer is yes, and does not ask about a worker that is not running', async () => {
    const { asked, stdout, config } = await remove(['math-worker', 'idle'], true)
    assert.deepEqual(asked, ['Stop and remove math-worker?'])
    assert.equal(stdout, `Removed math-worker from config.yaml; svc stops it\nRemoved idle from config.yaml\n`)
    assert.equal(config, 'workers:\n')
  })
})

/**
 * `processAlive`, the one pid check: a live process, one that exited, and records whose pid names
 * no single process (0, negatives, fractions, text) — which a corrupt `.svc/state/engine.json`
 * would otherwise pass off as a running engine.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import { projectStateFile, runningEngineOf, runningEngines } from './engines.ts'
import { processAlive } from './processes.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-processes-'))
after(() => rmSync(root, { recursive: true, force: true }))

/** A pid that surely belongs to no running process: one that has just exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'])
  return Number(String(child.stdout))
}

describe('processAlive', () => {
  it('is true for a live process and false for one that exited', () => {
    assert.equal(processAlive(process.pid), true)
    assert.equal(processAlive(process.ppid), true)
    assert.equal(processAlive(deadPid()), false)
  })

  it('is false for anything that is not one pid (0 and -1 would ask about process groups)', () => {
    for (const pid of [0, -1, -process.pid, 1.5, Number.NaN, Infinity, 2 ** 53, '1', null, undefined]) assert.equal(processAlive(pid), false, String(pid))
    fc.assert(
      fc.property(fc.oneof(fc.integer({ max: 0 }), fc.double().filter((n) => !Number.isInteger(n)), fc.string(), fc.constant(null)), (pid) => processAlive(pid) === false),
      { numRuns: 300 },
    )
  })

  it('a recorded engine whose pid is 0 or -1 is not running (project record and registry)', () => {
    for (const pid of [0, -1]) {
      const project = join(root, `project${pid}`)
      const registry = join(root, `registry${pid}`)
      mkdirSync(join(project, '.svc', 'state'), { recursive: true })
      mkdirSync(registry, { recursive: true })
      const record = JSON.stringify({ pid, project_root: project, project_name: 'p', config_file: null, engine_urls: ['ws://127.0.0.1:1'], ports: [1], started_at_ms: 0 })
      writeFileSync(projectStateFile(project), record)
      writeFileSync(join(registry, `${pid}.json`), record)
      assert.equal(runningEngineOf(project), undefined)
      assert.deepEqual(runningEngines({ SVC_ENGINES_DIR: registry }), [])
    }
  })
})

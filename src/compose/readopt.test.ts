/**
 * A compose daemon re-adopts what a previous one recorded in `.svc/compose/<ns>/state.json`
 * (cli.md §4.7): a file of the wrong shape — hand-edited, truncated, another version's — must not
 * keep the daemon from starting, and only records it can act on are taken (`readDaemonState`).
 */
import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { silentLogger } from '../../runtime/engine/logger.ts'
import { startTestEngine } from '../../test/support/engine.ts'
import type { TestEngine } from '../../test/support/engine.ts'
import { isSignalTarget } from '../supervisor/process.ts'
import { ComposeDaemon, readDaemonState } from './daemon.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-readopt-'))
let engine: TestEngine | undefined

before(async () => {
  engine = await startTestEngine()
})

after(async () => {
  await engine?.stop()
  rmSync(scratch, { recursive: true, force: true })
})

/** State files a daemon may find. */
const HOSTILE_STATES = [
  '{"projects": 5}',
  '{"projects": [null, 3, "x"]}',
  '{"projects": [{"file": "/x/worker-compose.yaml", "containers": 5}]}',
  '{"projects": [{"file": 7, "containers": [{"container": "api", "pid": 4242, "state": "ready"}]}]}',
  '{"daemon_pid": -1, "projects": [{"file": "/x/worker-compose.yaml", "containers": [null, {"container": "api", "worker": "path://./api", "pid": 1, "state": "ready"}]}]}',
  '[1, 2]',
  'null',
  '{"projects": [{"file": "/x', // truncated
]

describe('re-adopting a previous daemon\'s state.json (cli.md §4.7)', () => {
  it('a daemon starts whatever shape its state.json has', { timeout: 60_000 }, async () => {
    for (const [i, text] of HOSTILE_STATES.entries()) {
      const cwd = join(scratch, `d${i}`)
      mkdirSync(join(cwd, '.svc', 'compose', 'readopt'), { recursive: true })
      writeFileSync(join(cwd, '.svc', 'compose', 'readopt', 'state.json'), text)
      const daemon = await ComposeDaemon.start({ namespace: 'readopt', engineUrl: engine!.url, cwd, log: silentLogger }).catch((err: Error) => {
        throw new Error(`state.json ${text}: ${err.message}`, { cause: err })
      })
      try {
        assert.deepEqual(daemon.list().projects, [], text)
      } finally {
        await daemon.stop()
      }
    }
  })

  it('readDaemonState never throws and keeps only running containers with a pid a signal may go to (fast-check)', () => {
    const value = fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 8 }), fc.constant(null), fc.boolean())
    const container = fc.record(
      {
        container: fc.oneof(fc.string({ maxLength: 8 }), value),
        worker: fc.oneof(fc.string({ maxLength: 8 }), value),
        state: fc.oneof(fc.constantFrom('ready', 'starting', 'restarting', 'failed', 'stopped'), value),
        pid: fc.oneof(fc.constantFrom(0, 1, -1, 4242), value),
        started_at: fc.oneof(fc.string({ maxLength: 30 }), value),
        restarts: value,
        kind: fc.oneof(fc.constantFrom('path', 'builtin'), value),
      },
      { requiredKeys: [] },
    )
    const state = fc.oneof(
      fc.record({ daemon_pid: value, projects: fc.oneof(value, fc.array(fc.oneof(value, fc.record({ file: fc.oneof(fc.string(), value), containers: fc.oneof(value, fc.array(fc.oneof(container, value), { maxLength: 4 })) })), { maxLength: 3 })) }, { requiredKeys: [] }),
      fc.jsonValue(),
    )
    fc.assert(
      fc.property(fc.oneof(state.map((s) => JSON.stringify(s)), fc.string({ maxLength: 40 })), (text) => {
        const read = readDaemonState(text)
        assert.ok(read.daemonPid === undefined || isSignalTarget(read.daemonPid))
        for (const { file, record } of read.records) {
          assert.equal(typeof file, 'string')
          assert.ok(isSignalTarget(record.pid))
          assert.ok(['ready', 'starting', 'restarting'].includes(record.state))
          assert.equal(typeof record.container, 'string')
          assert.ok(Number.isSafeInteger(record.restarts) && record.restarts >= 0)
        }
      }),
      { numRuns: 500 },
    )
  })
})

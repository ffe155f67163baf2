/**
 * Hostile inputs for the orchestrator's process handling and crash policy (issue 21), with
 * fast-check: pids from a compose daemon's state.json (any JSON value, 0, 1, negatives, fractions)
 * must never become a signal to svc's own process group (`kill(0)`) or to every process
 * (`kill(-1)`), and the crash window must hold its limits for any run of exits, the clock
 * included going backwards. `process.kill` is replaced by a recorder while a property runs: no
 * signal leaves this process.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { silentLogger } from '../../runtime/engine/logger.ts'
import { ProjectRunner } from '../compose/runner.ts'
import type { ContainerRecord } from '../compose/runner.ts'
import { CrashWindow } from './crash-policy.ts'
import { Orchestrator } from './orchestrator.ts'
import { isSignalTarget, signalGroup, stopPid } from './process.ts'
import { SUPERVISOR_TIMINGS, superviseWorker } from './supervisor.ts'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from '../../test/support/wait.ts'

/** Pids as a corrupt or hand-edited record may hold them. */
const hostilePid = fc.oneof(
  fc.constantFrom(0, 1, -1, -0, 1.5, Number.NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 31)),
  fc.integer({ min: -5, max: 5 }),
  fc.double(),
  fc.integer({ min: 2, max: 2 ** 22 }),
)

/** `process.kill` calls recorded while `work` runs; every target answers as gone once it got a non-zero signal. */
async function recordingKills(work: () => Promise<void> | void): Promise<Array<[number, string | number]>> {
  const calls: Array<[number, string | number]> = []
  const signalled = new Set<number>()
  const real = process.kill
  process.kill = ((pid: number, signal: string | number = 'SIGTERM') => {
    calls.push([pid, signal])
    if (signal !== 0) signalled.add(Math.abs(pid))
    else if (signalled.has(Math.abs(pid))) throw Object.assign(new Error('ESRCH'), { code: 'ESRCH' })
    return true
  }) as typeof process.kill
  try {
    await work()
  } finally {
    process.kill = real
  }
  return calls
}

/** True when a call would signal svc's own group, init or every process. */
const dangerous = ([pid, signal]: [number, string | number]) => signal !== 0 && (!Number.isSafeInteger(pid) || Math.abs(pid) <= 1)

describe('process handling of the orchestrator (fast-check)', () => {
  it('signalGroup and stopPid signal exactly the group of a valid pid, and nothing for any other value', async () => {
    await fc.assert(
      fc.asyncProperty(hostilePid, async (pid) => {
        const calls = await recordingKills(async () => {
          signalGroup(pid, 'SIGTERM')
          await stopPid(pid, 0)
        })
        assert.deepEqual(calls.filter(dangerous), [])
        if (!isSignalTarget(pid)) assert.deepEqual(calls, [])
        else assert.deepEqual(calls[0], [-pid, 'SIGTERM'])
      }),
      { numRuns: 300 },
    )
  })

  it('a compose daemon re-adopting any record, then bringing it down, never signals its own group or every process', async () => {
    const record = fc.record({
      container: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'api')),
      worker: fc.string({ maxLength: 12 }),
      state: fc.constantFrom('ready', 'starting', 'restarting', 'failed', 'stopped'),
      pid: fc.oneof(hostilePid, fc.constant(null)),
      started_at: fc.oneof(fc.constant(null), fc.string({ maxLength: 30 })),
      restarts: fc.oneof(fc.integer(), fc.double(), fc.constant(-1)),
      last_error: fc.constant(null),
      project: fc.constant('/nowhere/worker-compose.yaml'),
      kind: fc.constantFrom('path', 'builtin'),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(record, { maxLength: 4 }), async (records) => {
        const runner = new ProjectRunner({
          namespace: 'fuzz',
          cwd: '/nowhere',
          log: silentLogger,
          engine: { url: 'ws://127.0.0.1:1', listWorkers: async () => [], configure: async () => {}, log: () => {} },
        })
        const calls = await recordingKills(async () => {
          for (const r of records) runner.adopt(r.project, 'worker-compose.yaml', r as unknown as ContainerRecord)
          for (const s of runner.snapshot()) for (const c of s.containers) assert.ok(Number.isSafeInteger(c.restarts) && c.restarts >= 0)
          await runner.downAll()
        })
        assert.deepEqual(calls.filter(dangerous), [])
      }),
      { numRuns: 200 },
    )
  })

  it('Orchestrator.adopt takes only pids a signal may go to', () => {
    const orchestrator = new Orchestrator({ engine: { url: 'ws://127.0.0.1:1', isRegistered: () => false }, log: silentLogger })
    fc.assert(
      fc.property(hostilePid, (pid) => {
        if (isSignalTarget(pid)) return
        assert.throws(() => orchestrator.adopt('w', pid, { restarts: 0, onExit: () => {} }), /is not a pid svc can adopt/)
      }),
      { numRuns: 300 },
    )
  })
})

describe('crash window (fast-check)', () => {
  it('for any run of exits (times in any order, any run lengths): crashed exactly at the limit within the window, delays between the first and the largest', () => {
    const exit = fc.record({ at: fc.integer({ min: -1e9, max: 1e9 }), ran: fc.oneof(fc.nat(), fc.constantFrom(-1, Number.MAX_SAFE_INTEGER, 60_000)) })
    fc.assert(
      fc.property(fc.array(exit, { minLength: 1, maxLength: 20 }), (exits) => {
        const window = new CrashWindow(SUPERVISOR_TIMINGS)
        for (const e of exits) {
          const decision = window.record(e.at, e.ran)
          assert.ok(decision.count >= 1 && decision.count <= exits.length)
          assert.equal(decision.limit, SUPERVISOR_TIMINGS.crashLimit)
          assert.equal(decision.crashed, decision.count >= SUPERVISOR_TIMINGS.crashLimit)
          if (!decision.crashed) {
            assert.ok(decision.delayMs >= SUPERVISOR_TIMINGS.backoffStartMs && decision.delayMs <= SUPERVISOR_TIMINGS.backoffMaxMs, String(decision.delayMs))
          }
        }
      }),
      { numRuns: 300 },
    )
  })
})

/** What may happen while a worker starts: engine reports in bursts, its registration coming and going, turns passing. */
const registrationStep = fc.oneof(
  fc.record({ kind: fc.constant('events' as const), count: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constantFrom('register' as const, 'unregister' as const, 'turn' as const, 'throw' as const) }),
)

describe('registration reported by the engine (fast-check, issue 20)', () => {
  it('any run of reports, answers and failures: running only once the engine said registered, and the subscription ends with the start', async () => {
    const root = mkdtempSync(join(tmpdir(), 'svc-registration-fuzz-'))
    const dir = join(root, 'w')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'svc.worker.yaml'), 'name: w\nscripts:\n  start: node -e "setInterval(() => {}, 1000)"\n')
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(registrationStep, { maxLength: 12 }), async (steps) => {
          const listeners = new Set<() => void>()
          let registered = false
          let failing = false
          let everRegistered = false
          const worker = superviseWorker(
            {
              name: 'w',
              directory: dir,
              namespace: 'default',
              engineUrl: 'ws://127.0.0.1:1',
              projectRoot: root,
              envBase: 'engine',
              env: {},
              watch: false,
              noInstall: true,
              isRegistered: () => {
                if (failing) throw new Error('the engine cannot tell')
                return registered
              },
              watchRegistrations: (onChange) => {
                listeners.add(onChange)
                return () => void listeners.delete(onChange)
              },
            },
            // No poll within the test: only the reports can move the worker.
            { log: silentLogger, timings: { registrationPollMs: 3_600_000, registrationFallbackPollMs: 3_600_000 } },
          )
          try {
            await worker.start()
            await waitFor(() => worker.state === 'starting' && listeners.size === 1, 'the worker starting, subscribed')
            const report = () => {
              for (const listener of [...listeners]) listener()
            }
            for (const step of steps) {
              if (step.kind === 'events') for (let i = 0; i < step.count; i++) report()
              else if (step.kind === 'register') everRegistered = registered = true
              else if (step.kind === 'unregister') registered = false
              else if (step.kind === 'throw') failing = !failing
              else await new Promise((resolve) => setImmediate(resolve))
              if (worker.state === 'running') assert.ok(everRegistered, 'running before the engine said registered')
            }
            failing = false
            registered = true
            report()
            await waitFor(() => worker.state === 'running', 'running after a report while registered')
            assert.equal(listeners.size, 0, 'the subscription outlived the start')
          } finally {
            await worker.stop()
          }
          assert.equal(listeners.size, 0)
        }),
        { numRuns: 25 },
      )
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

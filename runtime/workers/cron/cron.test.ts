/**
 * svc-cron through a real engine (builtins.md §9): svc-sdk clients over the in-process harness;
 * real time with generous bounds for the seconds schedule, a manual clock where exact slots matter,
 * and a real SQLite file across an engine restart.
 */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { after, describe, it } from 'node:test'
import fc from 'fast-check'
import type { RegistrationError, SvcClient } from 'svc-sdk'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { recordingLogger } from '../../../test/support/recording-log.ts'
import { bindingsSettled, connectClient, rejection } from '../../../test/support/sdk-harness.ts'
import { createManualClock, type ManualClock } from '../shared/clock.ts'
import { FIVE_FIELD_HINT } from './expression.ts'
import type { CronRunPayload } from './triggers.ts'
import { CronWorker } from './worker.ts'
import { waitFor } from '../../../test/support/wait.ts'

const RFC3339_MS_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

interface Setup {
  test: TestEngine
  worker: CronWorker
  clock: ManualClock | undefined
  entries: ReturnType<typeof recordingLogger>['entries']
  clients: SvcClient[]
  client(name: string): SvcClient
  stop(): Promise<void>
}

async function setup(options: { clock?: ManualClock; settings?: unknown; dataDir?: string } = {}): Promise<Setup> {
  const { log, entries } = recordingLogger()
  const worker = new CronWorker(options.clock ? { clock: options.clock } : {})
  const engineOptions: Parameters<typeof startTestEngine>[0] = { builtins: [worker], settings: { 'svc-cron': options.settings ?? {} }, log }
  if (options.dataDir) engineOptions.dataDir = options.dataDir
  const test = await startTestEngine(engineOptions)
  const clients: SvcClient[] = []
  return {
    test,
    worker,
    clock: options.clock,
    entries,
    clients,
    client(name) {
      const client = connectClient(test.engine, name)
      clients.push(client)
      return client
    },
    async stop() {
      await Promise.all(clients.map((c) => c.shutdown()))
      await test.stop()
    },
  }
}

const bound = (s: Setup, ids: string[], status?: 'active' | 'failed') => bindingsSettled(s.test.engine, ids, status)

/** Runs recorded by a handler: payload and metadata. */
function recorder() {
  const runs: Array<{ payload: CronRunPayload; metadata: unknown }> = []
  return { runs, handler: (payload: CronRunPayload, metadata: unknown) => void runs.push({ payload, metadata }) }
}

/** Advances the manual clock to an ISO time, firing the timers due by then. */
async function advanceTo(clock: ManualClock, iso: string): Promise<void> {
  clock.advance(Date.parse(iso) - clock.now())
}

const T0 = Date.parse('2025-01-01T00:00:00.500Z')

describe('svc-cron with real time (builtins.md §9.3)', () => {
  it('fires a seconds schedule with the §9.3 payload', async () => {
    const s = await setup()
    try {
      const { runs, handler } = recorder()
      const client = s.client('tick')
      client.registerFunction('tick::run', handler)
      const t = client.registerTrigger({ type: 'cron', function_id: 'tick::run', config: { expression: '* * * * * *' }, metadata: { m: 1 } })
      await bound(s, [t.id])
      await waitFor(() => runs.length >= 2, 'runs.length >= 2', 10_000)
      for (const { payload, metadata } of runs) {
        assert.equal(payload.trigger, 'cron')
        assert.equal(payload.job_id, t.id)
        assert.match(payload.scheduled_time, RFC3339_MS_UTC)
        assert.match(payload.actual_time, RFC3339_MS_UTC)
        assert.ok(payload.scheduled_time.endsWith('.000Z'))
        const lag = Date.parse(payload.actual_time) - Date.parse(payload.scheduled_time)
        assert.ok(lag >= 0 && lag < 2000, `actual_time ${lag} ms after scheduled_time`)
        assert.deepEqual(metadata, { m: 1 })
      }
      assert.ok(Date.parse(runs[1]!.payload.scheduled_time) > Date.parse(runs[0]!.payload.scheduled_time))
    } finally {
      await s.stop()
    }
  })
})

describe('svc-cron on a manual clock (builtins.md §9.3)', () => {
  it('runs exactly at each slot; actual_time is when the run started', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      const { runs, handler } = recorder()
      const client = s.client('exact')
      client.registerFunction('exact::run', handler)
      const t = client.registerTrigger({ type: 'cron', function_id: 'exact::run', config: { expression: '*/10 * * * * *' } })
      await bound(s, [t.id])
      await advanceTo(clock, '2025-01-01T00:00:09.999Z')
      assert.equal(runs.length, 0)
      await advanceTo(clock, '2025-01-01T00:00:10.000Z')
      await waitFor(() => runs.length === 1 && clock.pending === 1, 'runs.length === 1 && clock.pending === 1')
      assert.deepEqual(runs[0]!.payload, {
        trigger: 'cron',
        job_id: t.id,
        scheduled_time: '2025-01-01T00:00:10.000Z',
        actual_time: '2025-01-01T00:00:10.000Z',
      })
      await advanceTo(clock, '2025-01-01T00:00:20.003Z')
      await waitFor(() => runs.length === 2, 'runs.length === 2')
      assert.equal(runs[1]!.payload.scheduled_time, '2025-01-01T00:00:20.000Z')
      // The timer fired at the slot, the run started once the clock had moved on to where advance left it.
      assert.equal(runs[1]!.payload.actual_time, '2025-01-01T00:00:20.003Z')
    } finally {
      await s.stop()
    }
  })

  it('never overlaps runs: slots that pass during a slow run are skipped', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      const scheduled: string[] = []
      let release!: () => void
      let gate = new Promise<void>((r) => (release = r))
      const client = s.client('slow')
      client.registerFunction('slow::run', async (payload: CronRunPayload) => {
        scheduled.push(payload.scheduled_time)
        await gate
      })
      const t = client.registerTrigger({ type: 'cron', function_id: 'slow::run', config: { expression: '* * * * * *' } })
      await bound(s, [t.id])
      await advanceTo(clock, '2025-01-01T00:00:01.000Z')
      await waitFor(() => scheduled.length === 1, 'scheduled.length === 1')
      assert.equal(clock.pending, 0, 'nothing is planned while a run is in progress')
      await advanceTo(clock, '2025-01-01T00:00:04.200Z')
      assert.equal(scheduled.length, 1)
      gate = Promise.resolve()
      release()
      await waitFor(() => clock.pending === 1, 'clock.pending === 1')
      await advanceTo(clock, '2025-01-01T00:00:05.000Z')
      await waitFor(() => scheduled.length === 2, 'scheduled.length === 2')
      assert.deepEqual(scheduled, ['2025-01-01T00:00:01.000Z', '2025-01-01T00:00:05.000Z'])
    } finally {
      await s.stop()
    }
  })

  it('runs replicas once per slot on behalf of the oldest live trigger', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      const { runs, handler } = recorder()
      const ids: string[] = []
      for (const name of ['r1', 'r2', 'r3']) {
        const client = s.client(name)
        client.registerFunction('report::run', handler)
        // Same schedule: whitespace differs, identity does not.
        const expression = name === 'r2' ? '0  *  * * * *' : '0 * * * * *'
        ids.push(client.registerTrigger({ type: 'cron', function_id: 'report::run', config: { expression }, metadata: { replica: name } }).id)
        await bound(s, ids)
      }
      await advanceTo(clock, '2025-01-01T00:01:00.000Z')
      await waitFor(() => runs.length === 1 && clock.pending === 1, 'runs.length === 1 && clock.pending === 1')
      await advanceTo(clock, '2025-01-01T00:02:00.000Z')
      await waitFor(() => runs.length === 2 && clock.pending === 1, 'runs.length === 2 && clock.pending === 1')
      assert.deepEqual(runs.map((r) => [r.payload.job_id, r.metadata]), [[ids[0], { replica: 'r1' }], [ids[0], { replica: 'r1' }]])

      // The oldest goes away: the next oldest takes over.
      await s.clients[0]!.shutdown()
      await waitFor(() => s.test.engine.triggers.getBinding(ids[0]!) === undefined, 's.test.engine.triggers.getBinding(ids[0]!) === undefined')
      await advanceTo(clock, '2025-01-01T00:03:00.000Z')
      await waitFor(() => runs.length === 3 && clock.pending === 1, 'runs.length === 3 && clock.pending === 1')
      assert.equal(runs[2]!.payload.job_id, ids[1])
      assert.deepEqual(runs[2]!.metadata, { replica: 'r2' })
    } finally {
      await s.stop()
    }
  })

  it('skips a slot whose condition returns false or fails (§2.2), and logs the failure', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      const { runs, handler } = recorder()
      let answer: unknown = false
      const conditionCalls: Array<{ payload: CronRunPayload; metadata: unknown }> = []
      const client = s.client('cond')
      client.registerFunction('cond::run', handler)
      client.registerFunction('cond::check', (payload: CronRunPayload, metadata: unknown) => {
        conditionCalls.push({ payload, metadata })
        if (answer === 'throw') throw Object.assign(new Error('no'), { code: 'NOPE' })
        return answer
      })
      const t = client.registerTrigger({
        type: 'cron',
        function_id: 'cond::run',
        config: { expression: '* * * * * *', condition_function_id: 'cond::check' },
        metadata: { who: 'cond' },
      })
      await bound(s, [t.id])
      await advanceTo(clock, '2025-01-01T00:00:01.000Z')
      await waitFor(() => conditionCalls.length === 1 && clock.pending === 1, 'conditionCalls.length === 1 && clock.pending === 1')
      assert.equal(runs.length, 0)
      answer = 'throw'
      await advanceTo(clock, '2025-01-01T00:00:02.000Z')
      await waitFor(() => conditionCalls.length === 2 && clock.pending === 1, 'conditionCalls.length === 2 && clock.pending === 1')
      assert.equal(runs.length, 0)
      assert.ok(s.entries.some((e) => e.level === 'error' && e.data?.trigger_id === t.id && e.data?.code === 'NOPE'))
      answer = true
      await advanceTo(clock, '2025-01-01T00:00:03.000Z')
      await waitFor(() => runs.length === 1, 'runs.length === 1')
      assert.equal(runs[0]!.payload.scheduled_time, '2025-01-01T00:00:03.000Z')
      assert.deepEqual(conditionCalls[2]!.payload, runs[0]!.payload)
      assert.deepEqual(conditionCalls[2]!.metadata, { who: 'cond' })
    } finally {
      await s.stop()
    }
  })

  it('re-plans triggers without a timezone when default_timezone changes', async () => {
    const s = await setup({ clock: createManualClock(Date.parse('2025-01-01T00:00:00Z')) })
    try {
      const clock = s.clock!
      const { runs, handler } = recorder()
      const client = s.client('tz')
      client.registerFunction('tz::run', handler)
      const plain = client.registerTrigger({ type: 'cron', function_id: 'tz::run', config: { expression: '0 0 9 * * *' } })
      const berlin = client.registerTrigger({ type: 'cron', function_id: 'tz::run', config: { expression: '0 0 9 * * *', timezone: 'Europe/Berlin' } })
      await bound(s, [plain.id, berlin.id])
      await s.worker.applySettings({ default_timezone: 'America/New_York' })
      await advanceTo(clock, '2025-01-01T08:00:00.000Z')
      await waitFor(() => runs.length === 1 && clock.pending === 2, 'runs.length === 1 && clock.pending === 2')
      assert.deepEqual([runs[0]!.payload.job_id, runs[0]!.payload.scheduled_time], [berlin.id, '2025-01-01T08:00:00.000Z'])
      await advanceTo(clock, '2025-01-01T09:00:00.000Z')
      await advanceTo(clock, '2025-01-01T14:00:00.000Z')
      await waitFor(() => runs.length === 2, 'runs.length === 2')
      assert.deepEqual([runs[1]!.payload.job_id, runs[1]!.payload.scheduled_time], [plain.id, '2025-01-01T14:00:00.000Z'])

      const error = await rejection(s.worker.applySettings({ default_timezone: 'Mars/Olympus' }))
      assert.deepEqual([error.code, error.message], ['INVALID_ARGUMENTS', "default_timezone 'Mars/Olympus' is not a known IANA time zone"])
    } finally {
      await s.stop()
    }
  })

  it('logs a failed run as one error line with the trigger, its schedule, the function and the error, bounded and escaped (issue 21)', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      let calls = 0
      const client = s.client('fails')
      client.registerFunction('report::daily', () => {
        calls++
        throw Object.assign(new Error(calls === 1 ? 'no database' : `\u001b[31mred\r\nforged line${'y'.repeat(100_000)}`), { code: 'DB_DOWN' })
      })
      const t = client.registerTrigger({ type: 'cron', function_id: 'report::daily', config: { expression: '* * * * * *' } })
      await bound(s, [t.id])
      await advanceTo(clock, '2025-01-01T00:00:01.000Z')
      await waitFor(() => s.entries.some((e) => e.message.includes('report::daily run failed')) && clock.pending === 1, "s.entries.some((e) => e.message.includes('report::daily run failed')) && clock.pending === 1")
      const first = s.entries.filter((e) => e.message.includes('report::daily run failed'))
      assert.deepEqual(
        first.map((e) => [e.level, e.message]),
        [['error', `cron trigger ${t.id} (* * * * * *): report::daily run failed: DB_DOWN: no database`]],
      )
      await advanceTo(clock, '2025-01-01T00:00:02.000Z')
      await waitFor(() => s.entries.filter((e) => e.message.includes('report::daily run failed')).length === 2, "s.entries.filter((e) => e.message.includes('report::daily run failed')).length === 2")
      const hostile = s.entries.filter((e) => e.message.includes('report::daily run failed'))[1]!.message
      // eslint-disable-next-line no-control-regex
      assert.doesNotMatch(hostile, /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/)
      assert.ok(hostile.includes('DB_DOWN: \\x1b[31mred\\r\\nforged lineyyy') && hostile.endsWith('y…'), hostile.slice(0, 200))
      assert.ok(hostile.length < 1000, `line of ${hostile.length} characters`)
    } finally {
      await s.stop()
    }
  })

  it('logs a run that exceeds timeout_ms and goes on with the next slot', async () => {
    const s = await setup({ clock: createManualClock(T0) })
    try {
      const clock = s.clock!
      const scheduled: string[] = []
      const client = s.client('hang')
      client.registerFunction('hang::run', (payload: CronRunPayload) => {
        scheduled.push(payload.scheduled_time)
        return scheduled.length === 1 ? new Promise(() => {}) : undefined
      })
      const t = client.registerTrigger({ type: 'cron', function_id: 'hang::run', config: { expression: '* * * * * *', timeout_ms: 100 } })
      await bound(s, [t.id])
      await advanceTo(clock, '2025-01-01T00:00:01.000Z')
      await waitFor(() => s.entries.some((e) => e.message.includes('run timed out after 100ms')) && clock.pending === 1, "s.entries.some((e) => e.message.includes('run timed out after 100ms')) && clock.pending === 1")
      await advanceTo(clock, '2025-01-01T00:00:02.000Z')
      await waitFor(() => scheduled.length === 2, 'scheduled.length === 2')
    } finally {
      await s.stop()
    }
  })
})

describe("svc-cron among the engine's built-ins on a manual clock (createBuiltins' clock)", () => {
  it('runs a yearly slot once the clock passes it, with no real time waited', async () => {
    const clock = createManualClock()
    const test = await startTestEngine({ clock }) // every built-in of the release, on that clock
    const client = connectClient(test.engine, 'yearly')
    try {
      const runs: CronRunPayload[] = []
      client.registerFunction('yearly::run', (payload: CronRunPayload) => void runs.push(payload))
      const t = client.registerTrigger({ type: 'cron', function_id: 'yearly::run', config: { expression: '0 0 0 1 1 *' } })
      await bindingsSettled(test.engine, [t.id])
      const start = Date.now()
      clock.advance(366 * 24 * 3600 * 1000)
      await waitFor(() => runs.length === 1, 'the run of the next 1 January')
      assert.equal(runs[0]!.scheduled_time, `${new Date(start).getUTCFullYear() + 1}-01-01T00:00:00.000Z`)
    } finally {
      await client.shutdown()
      await test.stop()
    }
  })
})

describe('svc-cron registration errors (builtins.md §9.1)', () => {
  it('refuses bad schedules with the exact messages', async () => {
    const s = await setup()
    try {
      const errors: RegistrationError[] = []
      const client = s.client('bad')
      client.addRegistrationErrorListener((e) => errors.push(e))
      client.registerFunction('bad::run', () => undefined)
      const cases: Array<[unknown, string]> = [
        [{ expression: '0 2 * * *' }, `Invalid cron expression '0 2 * * *': ${FIVE_FIELD_HINT}`],
        [{ expression: 'every day' }, "Invalid cron expression 'every day': expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got 2"],
        [{ expression: '0 0 25 * * *' }, "Invalid cron expression '0 0 25 * * *': Invalid value for hour: 25"],
        [{ expression: '0 0 2 * * *', timezone: 'Europe/Atlantis' }, "Unknown timezone 'Europe/Atlantis'"],
        [{}, 'Cron expression is required'],
      ]
      const ids = cases.map(([config]) => client.registerTrigger({ type: 'cron', function_id: 'bad::run', config }).id)
      await bound(s, ids, 'failed')
      await waitFor(() => errors.length === cases.length, 'errors.length === cases.length')
      cases.forEach(([, message], i) => {
        const error = errors.find((e) => e.id === ids[i])!
        assert.deepEqual([error.code, error.message], ['INVALID_TRIGGER_CONFIG', message])
      })
    } finally {
      await s.stop()
    }
  })

  it('random configs through the engine are active or refused with INVALID_TRIGGER_CONFIG (fast-check)', async () => {
    const s = await setup({ settings: { adapter: { name: 'memory' } } })
    try {
      const errors: RegistrationError[] = []
      const client = s.client('fuzz')
      client.addRegistrationErrorListener((e) => errors.push(e))
      client.registerFunction('fuzz::run', () => undefined)
      const field = fc.constantFrom('*', '?', '0', '7', '59', '*/5', '1-5', '1,2', 'L', '15W', '5#2', 'MON', 'jan', '2030', '99', 'x', '')
      const configs = fc.sample(
        fc.record(
          {
            expression: fc.oneof(fc.array(field, { maxLength: 8 }).map((f) => f.join(' ')), fc.string(), fc.jsonValue()),
            timezone: fc.oneof(fc.constantFrom('UTC', 'Asia/Tokyo', 'Not/AZone'), fc.jsonValue()),
            timeout_ms: fc.oneof(fc.integer(), fc.jsonValue()),
          },
          { requiredKeys: [] },
        ),
        150,
      )
      const triggers = configs.map((config) => client.registerTrigger({ type: 'cron', function_id: 'fuzz::run', config }))
      await waitFor(() => triggers.every((t) => s.test.engine.triggers.getBinding(t.id)?.status !== 'pending'), "triggers.every((t) => s.test.engine.triggers.getBinding(t.id)?.status !== 'pending')")
      for (const e of errors) assert.equal(e.code, 'INVALID_TRIGGER_CONFIG', e.message)
      for (const t of triggers) t.unregister()
      // Still serving registrations.
      const ok = client.registerTrigger({ type: 'cron', function_id: 'fuzz::run', config: { expression: '0 0 0 * * *' } })
      await bound(s, [ok.id])
    } finally {
      await s.stop()
    }
  })

  it('keeps the current store when the new one cannot be opened', async () => {
    const s = await setup({ settings: { adapter: { name: 'memory' } } })
    try {
      // The data directory itself is no SQLite file.
      const error = await rejection(s.worker.applySettings({ adapter: { name: 'builtin', config: { path: '.' } } }))
      assert.equal(error.code, 'STORAGE_ERROR')
      assert.match(error.message, /^cannot open the builtin cron store/)
      assert.equal((await rejection(s.worker.applySettings({ adapter: { name: 'memory', config: { url: 'x' } } }))).code, 'INVALID_ARGUMENTS')
      await s.worker.applySettings({ adapter: { name: 'builtin' } })
    } finally {
      await s.stop()
    }
  })
})

describe('svc-cron across an engine restart (builtins.md §9.3, §13.2)', () => {
  const dirs: string[] = []
  after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))))

  it('never runs the stored slot again, even when the restarted engine starts before it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-cron-restart-'))
    dirs.push(dataDir)
    const scheduled: string[] = []
    const start = async (at: string) => {
      const s = await setup({ clock: createManualClock(Date.parse(at)), dataDir })
      const client = s.client('restart')
      client.registerFunction('restart::run', (payload: CronRunPayload) => void scheduled.push(payload.scheduled_time))
      const t = client.registerTrigger({ type: 'cron', function_id: 'restart::run', config: { expression: '*/5 * * * * *' } })
      await bound(s, [t.id])
      return s
    }

    const first = await start('2025-01-01T00:00:03.000Z')
    await advanceTo(first.clock!, '2025-01-01T00:00:05.000Z')
    await waitFor(() => scheduled.length === 1 && first.clock!.pending === 1, 'scheduled.length === 1 && first.clock!.pending === 1')
    await first.stop()

    const db = new DatabaseSync(join(dataDir, 'cron.db'), { readOnly: true })
    const rows = db.prepare('SELECT last_slot FROM cron_slots').all() as Array<{ last_slot: number }>
    db.close()
    assert.deepEqual(rows.map((r) => new Date(Number(r.last_slot)).toISOString()), ['2025-01-01T00:00:05.000Z'])

    // The restarted engine's clock is behind: it plans the slot already run, and must skip it.
    const second = await start('2025-01-01T00:00:04.000Z')
    try {
      await advanceTo(second.clock!, '2025-01-01T00:00:05.000Z')
      await waitFor(() => second.clock!.pending === 1, 'second.clock!.pending === 1')
      await advanceTo(second.clock!, '2025-01-01T00:00:10.000Z')
      await waitFor(() => scheduled.length === 2, 'scheduled.length === 2')
      assert.deepEqual(scheduled, ['2025-01-01T00:00:05.000Z', '2025-01-01T00:00:10.000Z'])
    } finally {
      await second.stop()
    }
  })
})

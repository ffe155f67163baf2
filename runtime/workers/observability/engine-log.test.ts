/**
 * The engine's own log and the console (builtins.md §12.1 `log_level`, `logs_console_output`):
 * engine records are stored as service `svc` above the threshold, the threshold changes while
 * the engine runs, an operator's `--log-level` (Engine option `logLevel`) wins over the setting,
 * and worker records are printed on the console only while `logs_console_output` is on.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startTestEngine, type TestEngine } from '../../../test/support/engine.ts'
import { RawWorker } from '../../../test/support/raw-worker.ts'
import { Engine } from '../../engine/engine.ts'
import { silentLogger } from '../../engine/logger.ts'
import { waitFor } from '../../../test/support/wait.ts'

type Logs = { logs: Array<{ body: string; severity_text: string; service_name: string; attributes: Record<string, unknown> }> }

describe("the engine's own log", () => {
  let t: TestEngine
  const printed: string[] = []
  before(async () => {
    t = await startTestEngine({ settings: { 'svc-observability': { store: 'memory' } }, log: { ...silentLogger, debug: (m) => void printed.push(`debug ${m}`), warn: (m) => void printed.push(`warn ${m}`) } })
  })
  after(() => t.stop())

  const setObservability = async (value: Record<string, unknown>, check: () => boolean | Promise<boolean>): Promise<void> => {
    await t.engine.inject({ function_id: 'configuration::set', data: { id: 'svc-observability', value: { store: 'memory', ...value } } })
    await waitFor(check, 'check')
  }
  const engineLogs = async (search: string): Promise<Logs['logs']> =>
    ((await t.engine.inject({ function_id: 'engine::logs::list', data: { search, service_name: 'svc' } })) as Logs).logs

  it('stores engine records at or above log_level as service svc, and follows a change at runtime', async () => {
    const w = await RawWorker.connect(t.url)
    w.send('{"type":"frobnicate-1"}') // debug: ignored frame
    w.send('{"type":5}') // warn: malformed frame
    await waitFor(async () => (await engineLogs('malformed frame')).length === 1, "(await engineLogs('malformed frame')).length === 1")
    assert.equal((await engineLogs('frobnicate-1')).length, 0)
    assert.equal(printed.some((p) => p.includes('frobnicate-1')), false)
    const [warned] = await engineLogs('malformed frame')
    assert.equal(warned!.severity_text, 'WARN')
    assert.equal(warned!.attributes['log.source'], 'engine')
    assert.ok(printed.includes('warn malformed frame ignored: type must be a string'))

    await setObservability({ log_level: 'debug' }, async () => {
      w.send('{"type":"frobnicate-2"}')
      return (await engineLogs('frobnicate-2')).length > 0
    })
    assert.equal((await engineLogs('frobnicate-2'))[0]!.severity_text, 'DEBUG')
    assert.ok(printed.some((p) => p === "debug ignored frame: unknown type 'frobnicate-2'"))

    let round = 0
    await setObservability({ log_level: 'error' }, async () => {
      w.send(`{"type":"frobnicate-3-${++round}"}`)
      w.send('{"type":6}')
      await w.call('engine::workers::list', {}) // frames are handled in order: both were before this answer
      return (await engineLogs(`frobnicate-3-${round}`)).length === 0
    })
    assert.equal((await engineLogs('malformed frame')).length, 1, 'a warning under log_level: error is not kept')
    await w.close()
  })

  it('prints worker records on the console while logs_console_output is on', async () => {
    const lines: string[] = []
    t.engine.telemetry.console = (service, level, message) => void lines.push(`${service} ${level} ${message}`)
    const w = await RawWorker.connect(t.url)
    w.send({ type: 'invokefunction', function_id: 'engine::workers::register', data: { name: 'billing' }, action: { type: 'void' } })
    await waitFor(async () => {
      await w.call('engine::log::error', { message: 'card declined', data: { order: 7 } })
      return lines.length > 0
    }, 'the condition')
    assert.equal(lines[0], 'billing error card declined {"log.data.order":7}')
    // Under `svc --log-level warn` an info record reaches neither the console nor its formatting.
    t.engine.telemetry.consoleLevel = 'warn'
    try {
      await w.call('engine::log::info', { message: 'below the level' })
      await w.call('engine::log::warn', { message: 'at the level' })
      await waitFor(() => lines.some((l) => l.includes('at the level')), 'the warning printed')
      assert.equal(lines.some((l) => l.includes('below the level')), false)
    } finally {
      t.engine.telemetry.consoleLevel = 'trace'
    }
    await setObservability({ logs_console_output: false }, async () => {
      const before = lines.length
      await w.call('engine::log::error', { message: 'quiet now' })
      return lines.length === before
    })
    assert.equal(lines.some((l) => l.includes('quiet now')), false)
    // Still stored.
    assert.equal(((await t.engine.inject({ function_id: 'engine::logs::list', data: { search: 'quiet now' } })) as Logs).logs.length, 1)
    await w.close()
  })
})

describe('an operator-chosen level (svc --log-level)', () => {
  it('is kept whatever log_level says; without one, log_level decides', () => {
    const config = { listeners: [], registration_namespace_grace_ms: 250, internal_invocation_timeout_ms: 30000, data_dir: '', builtins: {}, local_workers: [] } as unknown as ConstructorParameters<typeof Engine>[0]
    const printed: string[] = []
    const log = { ...silentLogger, debug: (m: string) => void printed.push(m) }
    const fixed = new Engine(config, { log, logLevel: 'debug' })
    fixed.log.debug('fixed 1')
    fixed.telemetry.setLogLevel('error')
    fixed.log.debug('fixed 2')
    const following = new Engine(config, { log })
    following.log.debug('following 1')
    following.telemetry.setLogLevel('debug')
    following.log.debug('following 2')
    following.telemetry.setLogLevel('error')
    following.log.debug('following 3')
    assert.deepEqual(printed, ['fixed 1', 'fixed 2', 'following 2'])
  })
})

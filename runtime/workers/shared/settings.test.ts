import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SvcError } from 'svc-protocol/errors'
import { createSettingsApplier, settingsKeyOf, withSettingsKey } from './settings.ts'
import { gate, recordingLogger } from './test-support/fakes.ts'
import { nextTurn, waitFor } from '../../../test/support/wait.ts'

interface Settings {
  port: number
}

function parse(value: unknown): Settings {
  const port = (value as { port?: unknown } | undefined)?.port ?? 3111
  if (typeof port !== 'number') throw new SvcError('INVALID_ARGUMENTS', `port must be an integer, got ${JSON.stringify(port)}`)
  return { port }
}

describe('createSettingsApplier (builtins.md §2.7)', () => {
  it('runs applies one after another in call order, even when an earlier one is slow', async () => {
    const { log } = recordingLogger()
    const first = gate()
    const order: string[] = []
    const applier = createSettingsApplier<Settings>({
      worker: 'svc-test',
      log,
      parse,
      apply: async (next) => {
        order.push(`start ${next.port}`)
        if (next.port === 1) await first.promise
        order.push(`end ${next.port}`)
      },
    })
    const a = applier.apply({ port: 1 })
    const b = applier.apply({ port: 2 })
    await waitFor(() => order.length > 0, 'the first apply to start')
    await nextTurn() // applications chain by promises alone: a second one not waiting has started by now
    assert.deepEqual(order, ['start 1'], 'the second apply waits, parse included')
    first.open()
    assert.deepEqual(await a, { port: 1 })
    assert.deepEqual(await b, { port: 2 })
    assert.deepEqual(order, ['start 1', 'end 1', 'start 2', 'end 2'])
    assert.deepEqual(applier.current, { port: 2 })
  })

  it('validates before applying; an invalid value keeps the previous settings and reports the key', async () => {
    const { log, entries } = recordingLogger()
    const reported: Array<string | undefined> = []
    let applied = 0
    const applier = createSettingsApplier<Settings>({
      worker: 'svc-test',
      log,
      parse,
      apply: () => void applied++,
      onConfigError: (message) => reported.push(message),
    })
    await applier.apply({ port: 8080 })
    await assert.rejects(applier.apply({ port: 'x' }), { code: 'INVALID_ARGUMENTS' })
    assert.equal(applied, 1, 'apply was not called for an invalid value')
    assert.deepEqual(applier.current, { port: 8080 })
    assert.equal(applier.lastConfigError, 'port must be an integer, got "x"')
    const error = entries.find((e) => e.level === 'error')!
    assert.equal(error.message, 'svc-test settings not applied (port must be an integer, got "x"); the previous settings stay in effect')
    assert.deepEqual(error.data, { worker: 'svc-test', key: 'port', code: 'INVALID_ARGUMENTS', message: 'port must be an integer, got "x"' })

    await applier.apply({ port: 8081 })
    assert.equal(applier.lastConfigError, undefined, 'a successful apply clears it')
    assert.deepEqual(reported, ['port must be an integer, got "x"', undefined])
  })

  it('keeps the previous settings when apply itself fails, naming the tagged key', async () => {
    const { log } = recordingLogger()
    const applier = createSettingsApplier<Settings>({
      worker: 'svc-test',
      log,
      parse,
      apply: (next) => {
        if (next.port === 80) {
          const bind = Object.assign(new Error('listen EACCES: permission denied 127.0.0.1:80'), { code: 'EACCES' })
          throw withSettingsKey(bind, 'port')
        }
      },
    })
    await applier.apply({ port: 3000 })
    await assert.rejects(applier.apply({ port: 80 }), { code: 'EACCES', message: 'listen EACCES: permission denied 127.0.0.1:80' })
    assert.deepEqual(applier.current, { port: 3000 })
    assert.equal(applier.lastConfigError, 'port: listen EACCES: permission denied 127.0.0.1:80')
  })
})

describe('settingsKeyOf', () => {
  it('prefers a tagged key, else the key path the message starts with', () => {
    assert.equal(settingsKeyOf(withSettingsKey(new Error('anything'), 'host')), 'host')
    assert.equal(settingsKeyOf(new Error('cors.max_age_seconds must be an integer >= 0')), 'cors.max_age_seconds')
    assert.equal(settingsKeyOf(new Error('middleware[0].function_id must be a non-empty string')), 'middleware[0].function_id')
    assert.equal(settingsKeyOf(new Error('svc-http settings must be an object')), undefined)
    assert.equal(settingsKeyOf('plain'), undefined)
  })
})

/** Cron grammar (builtins.md §9.2) as croner is configured for it, and §9.1 registration messages. */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { compileCronExpression, FIVE_FIELD_HINT, parseCronTriggerConfig } from './expression.ts'

const T0 = Date.parse('2025-01-01T00:00:00Z') // a Wednesday

/** The first `n` slots after `from`, as ISO strings. */
function slots(expression: string, n: number, timezone = 'UTC', from = T0): string[] {
  const compiled = compileCronExpression(expression, timezone, from)
  const out: string[] = []
  let at = from
  for (let i = 0; i < n; i++) {
    const next = compiled.next(at)
    if (next === undefined) break
    out.push(new Date(next).toISOString())
    at = next
  }
  return out
}

function refusal(fn: () => unknown): { code: string; message: string } {
  try {
    fn()
  } catch (error) {
    return error as { code: string; message: string }
  }
  assert.fail('expected a refusal')
}

describe('cron expression grammar (builtins.md §9.2)', () => {
  it('has seconds first', () => {
    assert.deepEqual(slots('* * * * * *', 2), ['2025-01-01T00:00:01.000Z', '2025-01-01T00:00:02.000Z'])
    assert.deepEqual(slots('*/20 * * * * *', 3), ['2025-01-01T00:00:20.000Z', '2025-01-01T00:00:40.000Z', '2025-01-01T00:01:00.000Z'])
    assert.deepEqual(slots('0 30 2 * * *', 1), ['2025-01-01T02:30:00.000Z'])
  })

  it('accepts steps a/n and a-b/n, lists and ranges', () => {
    assert.deepEqual(slots('5/15 * * * * *', 4), ['2025-01-01T00:00:05.000Z', '2025-01-01T00:00:20.000Z', '2025-01-01T00:00:35.000Z', '2025-01-01T00:00:50.000Z'])
    assert.deepEqual(slots('0 0 0 2-10/4 * *', 3), ['2025-01-02T00:00:00.000Z', '2025-01-06T00:00:00.000Z', '2025-01-10T00:00:00.000Z'])
    assert.deepEqual(slots('0 0 0,12 * * *', 2), ['2025-01-01T12:00:00.000Z', '2025-01-02T00:00:00.000Z'])
  })

  it('counts weekdays the POSIX way: 0 and 7 are Sunday, names are case-insensitive', () => {
    const sundays = ['2025-01-05T00:00:00.000Z', '2025-01-12T00:00:00.000Z']
    assert.deepEqual(slots('0 0 0 * * 0', 2), sundays)
    assert.deepEqual(slots('0 0 0 * * 7', 2), sundays)
    assert.deepEqual(slots('0 0 0 * * sun', 2), sundays)
    assert.deepEqual(slots('0 0 12 * * Mon-Fri', 3), ['2025-01-01T12:00:00.000Z', '2025-01-02T12:00:00.000Z', '2025-01-03T12:00:00.000Z'])
    assert.deepEqual(slots('0 0 0 1 jan ? *', 1), ['2026-01-01T00:00:00.000Z'])
  })

  it('treats ? as *', () => {
    assert.deepEqual(slots('0 0 0 ? * ?', 2), slots('0 0 0 * * *', 2))
    assert.deepEqual(slots('? ? ? ? ? ?', 2), slots('* * * * * *', 2))
  })

  it('matches a day when either day-of-month or day-of-week matches, if both are restricted', () => {
    // The 1st of the month OR a Monday.
    assert.deepEqual(slots('0 0 0 1 * MON', 6, 'UTC', Date.parse('2025-01-25T00:00:00Z')), [
      '2025-01-27T00:00:00.000Z',
      '2025-02-01T00:00:00.000Z',
      '2025-02-03T00:00:00.000Z',
      '2025-02-10T00:00:00.000Z',
      '2025-02-17T00:00:00.000Z',
      '2025-02-24T00:00:00.000Z',
    ])
    // Only day-of-week restricted: Mondays only.
    assert.deepEqual(slots('0 0 0 * * MON', 2), ['2025-01-06T00:00:00.000Z', '2025-01-13T00:00:00.000Z'])
  })

  it('supports L, W and # (last day, nearest weekday, nth weekday, last weekday)', () => {
    assert.deepEqual(slots('0 0 0 L * *', 2), ['2025-01-31T00:00:00.000Z', '2025-02-28T00:00:00.000Z'])
    // 15 Feb 2025 is a Saturday: the nearest weekday is Friday 14th.
    assert.deepEqual(slots('0 0 0 15W * *', 2), ['2025-01-15T00:00:00.000Z', '2025-02-14T00:00:00.000Z'])
    assert.deepEqual(slots('0 0 0 * * 5#2', 2), ['2025-01-10T00:00:00.000Z', '2025-02-14T00:00:00.000Z'])
    assert.deepEqual(slots('0 0 0 * * 5L', 2), ['2025-01-31T00:00:00.000Z', '2025-02-28T00:00:00.000Z'])
  })

  it('takes an optional year as a seventh field', () => {
    assert.deepEqual(slots('0 0 0 1 1 * 2027', 2), ['2027-01-01T00:00:00.000Z'])
    assert.deepEqual(slots('0 0 0 1 1 * 2026-2028', 5), ['2026-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', '2028-01-01T00:00:00.000Z'])
  })

  it('computes slots in the schedule timezone', () => {
    assert.deepEqual(slots('0 0 9 * * *', 1, 'Europe/Berlin'), ['2025-01-01T08:00:00.000Z'])
    assert.deepEqual(slots('0 0 9 * * *', 1, 'America/New_York'), ['2025-01-01T14:00:00.000Z'])
  })

  it('normalises whitespace', () => {
    assert.equal(compileCronExpression('  0\t0   2 * *  * ', 'UTC', T0).expression, '0 0 2 * * *')
  })
})

describe('cron trigger config (builtins.md §9.1)', () => {
  it('applies the defaults: timezone from default_timezone, timeout_ms 3600000', () => {
    const { config, compiled } = parseCronTriggerConfig({ expression: '0 0 2 * * *' }, 'Europe/Paris')
    assert.deepEqual(config, { expression: '0 0 2 * * *', timeout_ms: 3_600_000 })
    assert.equal(compiled.timezone, 'Europe/Paris')
  })

  it('refuses with the exact messages of §9.1 and §9.2', () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'Cron expression is required'],
      [{ expression: '' }, 'Cron expression is required'],
      [{ expression: '   ' }, 'Cron expression is required'],
      [{ expression: '0 2 * * *' }, `Invalid cron expression '0 2 * * *': ${FIVE_FIELD_HINT}`],
      [{ expression: 'garbage' }, "Invalid cron expression 'garbage': expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got 1"],
      [{ expression: '61 * * * * *' }, "Invalid cron expression '61 * * * * *': Invalid value for second: 61"],
      [{ expression: '0 0 0 1 1 * 2020' }, "Invalid cron expression '0 0 0 1 1 * 2020': it has no slot in the future"],
      [{ expression: '* * * * * *', timezone: 'Mars/Olympus' }, "Unknown timezone 'Mars/Olympus'"],
    ]
    for (const [config, message] of cases) {
      const error = refusal(() => parseCronTriggerConfig(config, 'UTC'))
      assert.deepEqual({ code: error.code, message: error.message }, { code: 'INVALID_TRIGGER_CONFIG', message })
    }
    assert.equal(
      FIVE_FIELD_HINT,
      "expected 6 fields (second minute hour day-of-month month day-of-week); prefix a 5-field crontab expression with '0 '",
    )
  })

  it('random configs are accepted or refused with INVALID_TRIGGER_CONFIG, never crash (fast-check)', () => {
    const field = fc.oneof(
      fc.constantFrom('*', '?', '0', '7', '59', '*/5', '1-5', '1,2,3', 'L', '15W', '5#2', 'MON', 'jan', '5L', '2025', '-1', '/', '#', 'x'),
      fc.string({ maxLength: 4 }),
    )
    const expression = fc.oneof(
      fc.array(field, { minLength: 0, maxLength: 8 }).map((fields) => fields.join(' ')),
      fc.string(),
      fc.jsonValue(),
    )
    fc.assert(
      fc.property(
        fc.record(
          {
            expression,
            timezone: fc.oneof(fc.constantFrom('UTC', 'Europe/Berlin', 'Asia/Kolkata', 'Nowhere/Land', ''), fc.jsonValue()),
            timeout_ms: fc.oneof(fc.integer(), fc.jsonValue()),
            condition_function_id: fc.oneof(fc.string(), fc.jsonValue()),
          },
          { requiredKeys: [] },
        ),
        (config) => {
          try {
            const { compiled } = parseCronTriggerConfig(config, 'UTC')
            const next = compiled.next(T0)
            assert.ok(next === undefined || next > T0)
          } catch (error) {
            assert.equal((error as { code?: string }).code, 'INVALID_TRIGGER_CONFIG', String(error))
          }
        },
      ),
      { numRuns: 1000 },
    )
  })
})

/**
 * Next run times of a cron trigger (builtins.md §9.2), for the Triggers page: computed by croner
 * with the options the cron worker uses (`runtime/workers/cron/expression.ts`): six fields (seconds
 * first) or seven (with a year), POSIX weekdays, day-of-month OR day-of-week when both are
 * restricted, `a/n` steps; in the trigger's time zone. What the page shows is what the worker will do.
 */
import { Cron } from 'croner'

/**
 * The next `count` run times (Unix ms) strictly after `fromMs`; fewer when the schedule ends (a
 * past year).
 * @throws Error with croner's reason when the expression or the zone is not valid, or a
 *   five-field crontab expression (the worker refuses it too).
 * @example nextRuns('0 0 2 * * *', 'UTC', 3, Date.parse('2025-01-01T00:00:00Z')) // [2025-01-01T02:00Z, 01-02T02:00Z, 01-03T02:00Z]
 */
export function nextRuns(expression: string, timeZone = 'UTC', count = 3, fromMs = Date.now()): number[] {
  const fields = expression.trim().split(/\s+/)
  if (fields.length === 5) throw new Error("expected 6 fields (second minute hour day-of-month month day-of-week); prefix a 5-field crontab expression with '0 '")
  if (fields.length < 6 || fields.length > 7) throw new Error(`expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year]), got ${fields.length}`)
  const cron = new Cron(fields.join(' '), { paused: true, timezone: timeZone, mode: '6-or-7-parts', domAndDow: false, sloppyRanges: true })
  const runs: number[] = []
  let after = new Date(fromMs)
  while (runs.length < count) {
    const next = cron.nextRun(after)
    if (next === null) break
    runs.push(next.getTime())
    after = next
  }
  return runs
}

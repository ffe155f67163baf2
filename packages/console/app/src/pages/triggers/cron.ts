/**
 * Next run times of a cron expression (builtins.md §9.2), for the Triggers page's cron tester.
 * Supports six or seven fields with `*`, `?`, lists, ranges, steps and month/day names, evaluated
 * in the trigger's time zone. `L`, `W` and `#` are not computed here (the caller shows "unknown").
 */

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC']
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT']

function parseField(text: string, min: number, max: number, names?: string[], nameBase = 0): Set<number> | null {
  const out = new Set<number>()
  for (const part of text.split(',')) {
    if (/[LW#]/i.test(part)) return null
    const [rangeText, stepText] = part.split('/')
    const step = stepText === undefined ? 1 : Number(stepText)
    if (!Number.isInteger(step) || step < 1) throw new Error(`bad step in '${part}'`)
    const value = (v: string) => {
      const upper = v.toUpperCase()
      const named = names?.indexOf(upper) ?? -1
      if (named >= 0) return named + nameBase
      const n = Number(v)
      if (!Number.isInteger(n) || n < min || n > max) throw new Error(`'${v}' is out of range ${min}-${max}`)
      return n
    }
    let lo: number
    let hi: number
    if (rangeText === '*' || rangeText === '?') {
      lo = min
      hi = max
    } else if (rangeText!.includes('-')) {
      const [a, b] = rangeText!.split('-')
      lo = value(a!)
      hi = value(b!)
    } else {
      lo = value(rangeText!)
      hi = stepText === undefined ? lo : max
    }
    for (let v = lo; v <= hi; v += step) out.add(v)
  }
  return out
}

interface Wall {
  year: number
  month: number
  day: number
  weekday: number
  hour: number
  minute: number
  second: number
}

function wallClock(ms: number, timeZone: string): Wall {
  const parts = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', weekday: 'short', hour: 'numeric', minute: 'numeric', second: 'numeric' }).formatToParts(new Date(ms))
  const get = (type: string) => parts.find((p) => p.type === type)?.value ?? '0'
  return { year: Number(get('year')), month: Number(get('month')), day: Number(get('day')), weekday: DAYS.indexOf(get('weekday').toUpperCase()), hour: Number(get('hour')), minute: Number(get('minute')), second: Number(get('second')) }
}

/**
 * The next `count` run times (Unix ms) after `fromMs`, or null when the expression uses `L`, `W` or
 * `#`. Looks at most about five years ahead.
 * @throws Error with a reason when the expression is malformed.
 */
export function nextRuns(expression: string, timeZone = 'UTC', count = 5, fromMs = Date.now()): number[] | null {
  const fields = expression.trim().split(/\s+/)
  if (fields.length < 6 || fields.length > 7) throw new Error('expected 6 or 7 fields (second minute hour day-of-month month day-of-week [year])')
  const [sec, min, hour, dom, mon, dow, year] = fields as [string, string, string, string, string, string, string | undefined]
  const seconds = parseField(sec, 0, 59)
  const minutes = parseField(min, 0, 59)
  const hours = parseField(hour, 0, 23)
  const days = parseField(dom, 1, 31)
  const months = parseField(mon, 1, 12, MONTHS, 1)
  const weekdays = parseField(dow, 0, 7, DAYS, 0)
  const years = year === undefined ? null : parseField(year, 1970, 2199)
  if (!seconds || !minutes || !hours || !days || !months || !weekdays) return null
  if (weekdays.has(7)) weekdays.add(0)
  const domRestricted = dom !== '*' && dom !== '?'
  const dowRestricted = dow !== '*' && dow !== '?'
  const dayMatches = (w: Wall) => {
    if (domRestricted && dowRestricted) return days.has(w.day) || weekdays.has(w.weekday)
    if (domRestricted) return days.has(w.day)
    if (dowRestricted) return weekdays.has(w.weekday)
    return true
  }
  const runs: number[] = []
  let t = Math.floor(fromMs / 1000) * 1000 + 1000
  const limit = fromMs + 5 * 366 * 86_400_000
  while (runs.length < count && t < limit) {
    const w = wallClock(t, timeZone)
    if ((years && !years.has(w.year)) || !months.has(w.month) || !dayMatches(w)) {
      t += ((23 - w.hour) * 3600 + (59 - w.minute) * 60 + (60 - w.second)) * 1000
      continue
    }
    if (!hours.has(w.hour)) {
      t += ((59 - w.minute) * 60 + (60 - w.second)) * 1000
      continue
    }
    if (!minutes.has(w.minute)) {
      t += (60 - w.second) * 1000
      continue
    }
    if (!seconds.has(w.second)) {
      t += 1000
      continue
    }
    runs.push(t)
    t += 1000
  }
  return runs
}

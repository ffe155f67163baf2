/** Display helpers: times, durations, sizes, severities and service colours. */

/** `2025-01-01 12:00:00.123` in local time, from Unix ms. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—'
  const d = new Date(ms)
  const pad = (n: number, w = 2) => String(n).padStart(w, '0')
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`
}

/** Local time of day with ms (`12:00:00.123`), from Unix ms. */
export function formatClock(ms: number): string {
  return formatTime(ms).slice(11)
}

/** Unix nanoseconds (a JSON number, µs precision) to Unix ms. */
export function nanoToMs(nano: number): number {
  return nano / 1e6
}

/** A duration in ms as `850 µs`, `12.3 ms`, `4.2 s`, `3 min 5 s`. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—'
  if (ms < 1) return `${Math.round(ms * 1000)} µs`
  if (ms < 100) return `${ms.toFixed(1).replace(/\.0$/, '')} ms`
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${(ms / 1000).toFixed(1).replace(/\.0$/, '')} s`
  const s = Math.floor(ms / 1000)
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3600)} h`
}

/**
 * Time elapsed since `fromMs` at `nowMs` (Unix ms), e.g. `< 1 s`, `12 s`, `3 min 4 s`. Never
 * negative: a clock read once a second (`useNow`) can lag data read a moment ago.
 */
export function formatSince(fromMs: number, nowMs: number): string {
  const elapsed = nowMs - fromMs
  return elapsed < 1000 ? '< 1 s' : formatDuration(elapsed)
}

/** Bytes as `512 B`, `1.5 KiB`, `12.0 MiB`. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '—'
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB']
  let value = bytes
  let unit = 0
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`
}

/** Severity name of a severity number (builtins.md §12.4). */
export function severityName(n: number): string {
  if (n >= 21) return 'FATAL'
  if (n >= 17) return 'ERROR'
  if (n >= 13) return 'WARN'
  if (n >= 9) return 'INFO'
  if (n >= 5) return 'DEBUG'
  if (n >= 1) return 'TRACE'
  return 'UNSET'
}

/** A stable hue (0–359) for a service name, so a service keeps its colour across views. */
export function serviceHue(name: string): number {
  let hash = 2166136261
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 16777619)
  return (hash >>> 0) % 360
}

/** The first 8 characters of an id, for narrow columns. */
export function shortId(id: string | null | undefined, length = 8): string {
  return id ? id.slice(0, length) : '—'
}

/** JSON text of a value for previews, cut to `max` characters with `…`. */
export function preview(value: unknown, max = 120): string {
  let text: string
  try {
    text = value === undefined ? '' : JSON.stringify(value)
  } catch {
    text = String(value)
  }
  return text.length > max ? `${text.slice(0, max)}…` : text
}

/** Size in bytes of the UTF-8 JSON text of a value. */
export function jsonSize(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? '').length
}

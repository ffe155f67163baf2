/**
 * What the Fleet page shows of `engine::fleet::list` (issue 19 §3, §4), read defensively: the rows
 * of other engines were sent over NATS by those engines, so every field is checked and cut before
 * it reaches the page. Names, URLs and details are shown as text only (React escapes them); no URL
 * from another engine ever becomes a link. Pure functions, no DOM: tests import them directly.
 */

/** How many engines the table shows; the rest are counted in {@link FleetView.hidden}. */
export const MAX_FLEET_ROWS = 200
/** How many of an engine's listener URLs are shown; the rest are counted in `moreUrls`. */
export const MAX_URLS_SHOWN = 4
/** Longest text shown of a name, an instance, a URL (characters); longer ones end with `…`. */
export const MAX_TEXT = 200
/** Longest health detail shown (characters). */
export const MAX_DETAIL = 1000

/** One engine as the page shows it; a field the engine sent in the wrong shape is null. */
export interface FleetEngineRow {
  engine: string
  instance: string
  self: boolean
  urls: string[]
  /** URLs beyond {@link MAX_URLS_SHOWN}. */
  moreUrls: number
  /** Unix ms of the engine's start (its own clock). */
  startedAtMs: number | null
  /** Ms since its last heartbeat reached this engine, when the list was read; 0 for this engine. */
  lastHeardMs: number | null
  workers: number | null
  functions: number | null
}

/**
 * The fleet as the page shows it. `status` is `unknown` when the answer is not a fleet list at all
 * (an engine from before issue 19 answers `function_not_found`, which the page treats as alone).
 */
export interface FleetView {
  fleet: string | null
  engine: string | null
  status: 'healthy' | 'degraded' | 'alone' | 'unknown'
  detail: string | null
  engines: FleetEngineRow[]
  /** Engines beyond {@link MAX_FLEET_ROWS}. */
  hidden: number
}

/** `text` when it is a string, cut to `max` characters (`…` appended); else null. */
export function cutText(text: unknown, max = MAX_TEXT): string | null {
  if (typeof text !== 'string') return null
  // Counted in code points, so a cut never leaves half a surrogate pair; stops at the cut.
  let points = 0
  let units = 0
  for (const point of text) {
    if (points === max) return `${text.slice(0, units)}…`
    units += point.length
    points++
  }
  return text
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** One row of `engines[]`, or null when it has no engine name. */
function readEngine(value: unknown): FleetEngineRow | null {
  if (!isRecord(value)) return null
  const engine = cutText(value.engine)
  if (engine === null || engine === '') return null
  const urls = Array.isArray(value.urls) ? value.urls.filter((u): u is string => typeof u === 'string') : []
  const started = value.started_at_ms
  return {
    engine,
    instance: cutText(value.instance) ?? '',
    self: value.self === true,
    urls: urls.slice(0, MAX_URLS_SHOWN).map((u) => cutText(u)!),
    moreUrls: Math.max(0, urls.length - MAX_URLS_SHOWN),
    startedAtMs: typeof started === 'number' && Number.isSafeInteger(started) && started > 0 ? started : null,
    lastHeardMs: count(value.last_heard_ms),
    workers: count(value.workers),
    functions: count(value.functions),
  }
}

/**
 * Reads an `engine::fleet::list` result (any JSON) into a {@link FleetView}: never throws; rows
 * without an engine name are left out, this engine's row comes first, at most
 * {@link MAX_FLEET_ROWS} rows.
 *
 * @example readFleet({ fleet: 'shop', engine: 'a', status: 'healthy', engines: [{ engine: 'a', self: true, … }] })
 */
export function readFleet(value: unknown): FleetView {
  if (!isRecord(value)) return { fleet: null, engine: null, status: 'unknown', detail: null, engines: [], hidden: 0 }
  const status = value.status === 'healthy' || value.status === 'degraded' || value.status === 'alone' ? value.status : 'unknown'
  const rows = (Array.isArray(value.engines) ? value.engines : []).map(readEngine).filter((row): row is FleetEngineRow => row !== null)
  // Stable: the engine's own order otherwise (this one first, then by name).
  const ordered = [...rows.filter((r) => r.self), ...rows.filter((r) => !r.self)]
  return {
    fleet: cutText(value.fleet),
    engine: cutText(value.engine),
    status,
    detail: cutText(value.detail, MAX_DETAIL),
    engines: ordered.slice(0, MAX_FLEET_ROWS),
    hidden: Math.max(0, ordered.length - MAX_FLEET_ROWS),
  }
}

/** Is this a fleet to show (healthy or degraded), rather than an engine alone or no answer? */
export function inFleet(view: FleetView | undefined): boolean {
  return view !== undefined && (view.status === 'healthy' || view.status === 'degraded')
}

/**
 * "last heard" of a row `elapsedMs` after the list was read: `this engine`, `just now`, `12 s ago`,
 * `3 min ago`; `—` when the engine did not say.
 */
export function lastHeardText(row: Pick<FleetEngineRow, 'self' | 'lastHeardMs'>, elapsedMs: number): string {
  if (row.self) return 'this engine'
  if (row.lastHeardMs === null) return '—'
  const ms = row.lastHeardMs + Math.max(0, elapsedMs)
  if (ms < 1000) return 'just now'
  const s = Math.floor(ms / 1000)
  return s < 120 ? `${s} s ago` : `${Math.floor(s / 60)} min ago`
}

/**
 * The distinct engines of a worker list, sorted, for the Workers page's engine filter; empty when
 * no worker carries one (an engine alone). Names are cut like every other untrusted text.
 */
export function enginesOf(items: { engine?: unknown }[]): string[] {
  const names = new Set<string>()
  for (const item of items) {
    const name = cutText(item.engine)
    if (name !== null && name !== '') names.add(name)
  }
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

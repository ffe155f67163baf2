/**
 * What a function's run history shows of its invocations in flight (issue 21 "In the console" →
 * Cancel): the answer of `engine::invocations::list` (docs/reference/functions.md) read
 * defensively — in a fleet some rows were sent by other engines, and names come from workers — into
 * bounded rows of text, never throwing. Pure functions, no DOM: tests import them directly.
 */
import { cutText } from '../fleet/fleet.ts'

/** Invocations asked for per read of `engine::invocations::list` (its own maximum is 1000). */
export const RUNNING_LIMIT = 50
/** Re-read interval of the running invocations while the tab is visible, ms. */
export const RUNNING_POLL_MS = 1000
/** Longest invocation id kept (characters); a longer one is not a usable id, so the row is left out. */
export const MAX_INVOCATION_ID = 200

/** One invocation in flight as the run history shows it. */
export interface RunningRow {
  /** What `engine::invocations::cancel` takes. */
  invocationId: string
  /** Unix ms when the call entered the engine (the engine's clock); null when not a finite number. */
  startedAtMs: number | null
  /** Who called: the caller's worker name, else its worker id, else `engine` (HTTP routes, cron, queues). */
  caller: string
  /** The worker serving the call; null while it waits in the engine. */
  worker: string | null
  /** 32 lower-case hex digits, or null: only such an id becomes a link. */
  traceId: string | null
}

/** The running invocations of one function, oldest first, and how many more are in flight. */
export interface RunningView {
  rows: RunningRow[]
  /** In flight but not in `rows` (beyond the read's limit). */
  more: number
}

const TRACE_ID = /^[0-9a-f]{32}$/

/**
 * Reads an `engine::invocations::list {function_id}` answer into the rows of `functionId` in
 * `namespace` (the listing filters by id only), leaving out `hidden` ids (just cancelled here) and
 * rows without a usable `invocation_id`. Any JSON value is accepted; what is not a listing gives no rows.
 *
 * @example readRunning({ invocations: [{ invocation_id: 'b7…', function_id: 'orders::ship', namespace: 'default', started_at: 1764000000000, caller_name: 'shop' }], total: 1 }, 'orders::ship', 'default').rows[0].caller // 'shop'
 */
export function readRunning(answer: unknown, functionId: string, namespace: string, hidden: ReadonlySet<string> = new Set()): RunningView {
  if (!isObject(answer) || !Array.isArray(answer.invocations)) return { rows: [], more: 0 }
  const rows: RunningRow[] = []
  for (const item of answer.invocations.slice(0, 1000) as unknown[]) {
    if (!isObject(item)) continue
    const id = item.invocation_id
    if (typeof id !== 'string' || id === '' || id.length > MAX_INVOCATION_ID) continue
    if (item.function_id !== functionId || (typeof item.namespace === 'string' && item.namespace !== namespace)) continue
    if (hidden.has(id)) continue
    const started = item.started_at
    rows.push({
      invocationId: id,
      startedAtMs: typeof started === 'number' && Number.isFinite(started) ? started : null,
      caller: cutText(item.caller_name) || cutText(item.caller) || 'engine',
      worker: cutText(item.worker_name) || cutText(item.worker) || null,
      traceId: typeof item.trace_id === 'string' && TRACE_ID.test(item.trace_id) ? item.trace_id : null,
    })
  }
  // total counts every flight of the function this session may see; a read holds at most its limit.
  return { rows, more: Math.max(0, runningTotal(answer) - answer.invocations.length) }
}

/**
 * How many invocations are in flight, from an `engine::invocations::list` answer (`total`); 0 for
 * anything else.
 */
export function runningTotal(answer: unknown): number {
  if (!isObject(answer)) return 0
  const total = answer.total
  return typeof total === 'number' && Number.isSafeInteger(total) && total > 0 ? total : 0
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Was this finished run cancelled? A failed run of `engine::runs::list` carries the catalogue code
 * it ended with (`error_code`, packages/protocol/src/errors.ts): `cancelled`. The message is not
 * read: a handler's own error may say anything.
 */
export function wasCancelled(run: { status: string; error_code?: string | null | undefined }): boolean {
  // The code's literal, not svc-protocol/errors' `Codes`: that module brings the whole catalogue (46 KB) into the page.
  return run.status === 'error' && run.error_code === 'cancelled'
}

/** Invocations read per poll of the Functions page's running counts (the listing's maximum). */
export const RUNNING_COUNT_LIMIT = 1000
/** Re-read interval of the Functions page's running counts while the tab is visible, ms. */
export const RUNNING_COUNT_POLL_MS = 2000

/**
 * Invocations in flight per function, keyed `namespace/function_id`, from an
 * `engine::invocations::list` answer (the rows it holds; `total` may count more). Rows of the wrong
 * shape are skipped.
 * @example runningByFunction({ invocations: [{ function_id: 'a::b', namespace: 'default' }], total: 1 }).get('default/a::b') // 1
 */
export function runningByFunction(answer: unknown): Map<string, number> {
  const counts = new Map<string, number>()
  if (!isObject(answer) || !Array.isArray(answer.invocations)) return counts
  for (const item of answer.invocations.slice(0, RUNNING_COUNT_LIMIT) as unknown[]) {
    if (!isObject(item) || typeof item.function_id !== 'string' || typeof item.namespace !== 'string') continue
    const key = `${item.namespace}/${item.function_id}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return counts
}

/**
 * `GET /api/stream-groups` (issue 21 "In the console"): every stream group with its item count, for
 * the Streams page. The stream worker lists groups (`stream::list_all`) but counts nothing, so the
 * backend reads each group with `stream::list` (untraced, a few at a time) and keeps only the
 * length. Bounded: at most {@link MAX_STREAM_GROUPS} groups are counted, the rest listed with
 * `items: null` and `truncated: true`.
 */
import type { EngineLink } from './engine-link.ts'
import { ApiError } from './requests.ts'

/** Most groups whose items are counted per request. */
export const MAX_STREAM_GROUPS = 500
/** Groups read at the same time. */
const CONCURRENCY = 8
/** Deadline of each read, ms. */
const READ_TIMEOUT_MS = 10_000

/** One stream group and its item count (null: not counted, or its read failed — see `error`). */
export interface StreamGroupCount {
  group_id: string
  items: number | null
  error?: string
}

/** The answer of `GET /api/stream-groups`. */
export interface StreamGroups {
  streams: { stream_name: string; groups: StreamGroupCount[] }[]
  /** Groups in all. */
  group_count: number
  /** Some groups were not counted (more than {@link MAX_STREAM_GROUPS}). */
  truncated: boolean
}

/**
 * Every stream group with its item count.
 * @throws {ApiError} 503 `engine_unreachable` when `stream::list_all` cannot be read (the console
 *   is not connected, svc-stream is not running)
 * @example await streamGroups(link) // {streams: [{stream_name: 'chat', groups: [{group_id: 'room-1', items: 3}]}], group_count: 1, truncated: false}
 */
export async function streamGroups(link: EngineLink): Promise<StreamGroups> {
  const all = await link.invoke('stream::list_all', {}, undefined, READ_TIMEOUT_MS, false)
  if (!all.ok) throw new ApiError(503, 'engine_unreachable', `Could not list streams: ${all.error.code} ${all.error.message}`)
  const listed = (all.result as { streams?: unknown } | null)?.streams
  const streams: StreamGroups['streams'] = []
  const jobs: { stream: string; group: StreamGroupCount }[] = []
  for (const entry of Array.isArray(listed) ? listed : []) {
    const name = (entry as { stream_name?: unknown }).stream_name
    const groups = (entry as { groups?: unknown }).groups
    if (typeof name !== 'string') continue
    const row = { stream_name: name, groups: [] as StreamGroupCount[] }
    for (const id of Array.isArray(groups) ? groups : []) {
      if (typeof id !== 'string') continue
      const group: StreamGroupCount = { group_id: id, items: null }
      row.groups.push(group)
      jobs.push({ stream: name, group })
    }
    streams.push(row)
  }
  const counted = jobs.slice(0, MAX_STREAM_GROUPS)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < counted.length) {
      const job = counted[next++]!
      const items = await link.invoke('stream::list', { stream_name: job.stream, group_id: job.group.group_id }, undefined, READ_TIMEOUT_MS, false)
      if (items.ok && Array.isArray(items.result)) job.group.items = items.result.length
      else job.group.error = items.ok ? 'stream::list answered no list' : `${items.error.code}: ${items.error.message.slice(0, 200)}`
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, counted.length) }, worker))
  return { streams, group_count: jobs.length, truncated: jobs.length > MAX_STREAM_GROUPS }
}

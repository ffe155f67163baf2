/** Layout of a trace waterfall (cli.md §7.2): spans flattened depth-first with their offsets. */
import type { SpanNode } from '../../api/types.ts'

/** One waterfall row: the span, its depth, and its bar's start and length in ms from the trace start. */
export interface WaterfallRow {
  span: SpanNode
  depth: number
  offsetMs: number
  /** Duration in ms; for an unfinished span, the time up to `now`. */
  lengthMs: number
  unfinished: boolean
}

/**
 * Flattens `roots` (children sorted by start time, as `engine::traces::tree` returns them) into rows.
 * @returns rows, the trace start (Unix ms), and the total span of the view in ms (at least 1).
 */
export function layoutWaterfall(roots: SpanNode[], nowMs: number): { rows: WaterfallRow[]; startMs: number; totalMs: number } {
  const all: { span: SpanNode; depth: number }[] = []
  const walk = (node: SpanNode, depth: number) => {
    all.push({ span: node, depth })
    for (const child of node.children ?? []) walk(child, depth + 1)
  }
  const sortedRoots = [...roots].sort((a, b) => a.start_time_unix_nano - b.start_time_unix_nano)
  for (const root of sortedRoots) walk(root, 0)
  if (all.length === 0) return { rows: [], startMs: 0, totalMs: 1 }
  const startMs = Math.min(...all.map((r) => r.span.start_time_unix_nano / 1e6))
  let endMs = startMs
  for (const { span } of all) {
    const end = span.end_time_unix_nano === null ? nowMs : span.end_time_unix_nano / 1e6
    endMs = Math.max(endMs, end)
  }
  const totalMs = Math.max(endMs - startMs, 1)
  const rows = all.map(({ span, depth }) => {
    const unfinished = span.end_time_unix_nano === null
    const spanStart = span.start_time_unix_nano / 1e6
    const spanEnd = unfinished ? Math.max(nowMs, spanStart) : span.end_time_unix_nano! / 1e6
    return { span, depth, offsetMs: spanStart - startMs, lengthMs: Math.max(spanEnd - spanStart, 0), unfinished }
  })
  return { rows, startMs, totalMs }
}

/** Does any span of the forest lack an end time? */
export function hasUnfinished(roots: SpanNode[]): boolean {
  return roots.some((r) => r.end_time_unix_nano === null || hasUnfinished(r.children ?? []))
}

/** True for a span of an internal function (engine housekeeping, the console's own live feeds). */
export function isInternalSpan(span: SpanNode): boolean {
  return span.attributes?.['svc.function.kind'] === 'internal'
}

/**
 * The forest without internal spans: each one is replaced by its children, so what it caused stays
 * in place under its nearest shown ancestor. A trace made only of internal spans is kept whole.
 */
export function withoutInternal(roots: SpanNode[]): SpanNode[] {
  const prune = (nodes: SpanNode[]): SpanNode[] =>
    nodes.flatMap((node) => {
      const children = prune(node.children ?? [])
      return isInternalSpan(node) ? children : [{ ...node, children }]
    })
  const pruned = prune(roots).sort((a, b) => a.start_time_unix_nano - b.start_time_unix_nano)
  return pruned.length > 0 ? pruned : roots
}

/** A small inline SVG line chart for metric points (worker CPU, memory, event-loop lag). */

/** Draws `values` (oldest first) scaled to the box; shows nothing for fewer than two points. */
export function Sparkline({ values, width = 160, height = 32, label }: { values: number[]; width?: number; height?: number; label: string }) {
  if (values.length < 2) return null
  const min = Math.min(...values)
  const max = Math.max(...values)
  const span = max - min || 1
  const step = width / (values.length - 1)
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - ((v - min) / span) * (height - 4)).toFixed(1)}`).join(' ')
  return (
    <svg className="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
      <polyline points={points} fill="none" stroke="currentColor" strokeWidth="1.5" />
    </svg>
  )
}

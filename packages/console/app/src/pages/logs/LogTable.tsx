/** A table of log records (builtins.md §12.4): time, severity, source, short trace id, body; rows expand to attributes and resource. */
import { Fragment, useState } from 'react'
import type { LogRecord } from '../../api/types.ts'
import { formatClock, formatTime, nanoToMs, shortId } from '../../format/format.ts'
import { Link, pathOf, withQuery } from '../../router/router.tsx'
import { SeverityBadge } from '../../components/ui.tsx'
import { JsonView } from '../../components/json.tsx'

function keyOf(log: LogRecord, i: number): string {
  return `${log.timestamp_unix_nano}-${log.span_id ?? ''}-${i}`
}

/**
 * Log rows, newest first as given. `compact` hides the source column (worker detail, span panel);
 * `inSpan` (the span panel, 380 px wide) also hides the trace column, which would name the trace
 * on screen, and shows the time of day only.
 */
export function LogTable({ logs, compact = false, inSpan = false }: { logs: LogRecord[]; compact?: boolean; inSpan?: boolean }) {
  const [open, setOpen] = useState<Set<string>>(new Set())
  const toggle = (k: string) =>
    setOpen((prev) => {
      const next = new Set(prev)
      if (next.has(k)) next.delete(k)
      else next.add(k)
      return next
    })
  return (
    <table className="table logs">
      <thead>
        <tr>
          <th className="w-toggle">
            <span className="sr-only">Details</span>
          </th>
          <th className={inSpan ? undefined : 'w-time'}>Time</th>
          <th>Severity</th>
          {compact ? null : <th>Source</th>}
          {inSpan ? null : <th>Trace</th>}
          <th>Body</th>
        </tr>
      </thead>
      <tbody>
        {logs.map((log, i) => {
          const k = keyOf(log, i)
          const expanded = open.has(k)
          return (
            <Fragment key={k}>
              <tr className={log.severity_number >= 17 ? 'row-error' : undefined}>
                <td>
                  <button type="button" className="icon" aria-expanded={expanded} aria-label={expanded ? 'Hide attributes' : 'Show attributes'} onClick={() => toggle(k)}>
                    {expanded ? '▾' : '▸'}
                  </button>
                </td>
                <td className="mono small nowrap" title={inSpan ? formatTime(nanoToMs(log.timestamp_unix_nano)) : undefined}>
                  {inSpan ? formatClock(nanoToMs(log.timestamp_unix_nano)) : formatTime(nanoToMs(log.timestamp_unix_nano))}
                </td>
                <td>
                  <SeverityBadge n={log.severity_number} text={log.severity_text} />
                </td>
                {compact ? null : (
                  <td>
                    <Link to={withQuery('/logs', { service: log.service_name })}>{log.service_name}</Link>
                  </td>
                )}
                {inSpan ? null : (
                <td className="mono small">
                  {log.trace_id ? (
                    <Link to={withQuery(pathOf('traces', log.trace_id), { span: log.span_id ?? undefined })} title={`Open trace ${log.trace_id}`}>
                      {shortId(log.trace_id)}
                    </Link>
                  ) : (
                    '—'
                  )}
                </td>
                )}
                <td className="log-body">{log.body}</td>
              </tr>
              {expanded ? (
                <tr className="expanded">
                  <td />
                  <td colSpan={(compact ? 4 : 5) - (inSpan ? 1 : 0)}>
                    <div className={inSpan ? undefined : 'grid-2'}>
                      <div>
                        <h3>Attributes</h3>
                        <JsonView value={log.attributes} maxHeight={240} />
                      </div>
                      <div>
                        <h3>Resource</h3>
                        <JsonView value={log.resource} maxHeight={240} />
                      </div>
                    </div>
                    {log.span_id ? <p className="small muted mono">span {log.span_id}</p> : null}
                  </td>
                </tr>
              ) : null}
            </Fragment>
          )
        })}
      </tbody>
    </table>
  )
}

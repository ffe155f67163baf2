/**
 * Streams (cli.md §7.2): every stream group with its item count (`GET /api/stream-groups`), streams,
 * their groups and items, and a live monitor that joins a group over `/ws/streams` and lists
 * incoming events with time, type and size, with pause and JSON export. Reads `stream::list_all`,
 * `stream::list_groups`, `stream::list` (builtins.md §6.2).
 */
import { Fragment, useEffect, useRef, useState } from 'react'
import { ApiError, getStreamGroups } from '../../api/client.ts'
import { useCall, useVisible } from '../../api/hooks.ts'
import type { StreamGroups } from '../../api/types.ts'
import { formatBytes, formatClock, preview } from '../../format/format.ts'
import { Link, pathOf } from '../../router/router.tsx'
import { Badge, Crumb, Empty, ErrorBox, PageHeader, Panel, Updated } from '../../components/ui.tsx'
import { JsonView } from '../../components/json.tsx'
import { eventType, openMonitor, type MonitorEvent } from './monitor.ts'

const MAX_EVENTS = 2000

/** `/streams`, `/streams/:stream`, `/streams/:stream/:group`. */
export function StreamsPage({ stream, group }: { stream?: string; group?: string }) {
  const all = useCall<{ streams: { stream_name: string; groups: unknown }[]; count: number }>('stream::list_all', {}, { pollMs: 5000 })
  const groups = useCall<string[]>('stream::list_groups', { stream_name: stream }, { enabled: Boolean(stream), pollMs: 5000 })
  const groupCount = (g: unknown) => (Array.isArray(g) ? g.length : typeof g === 'number' ? g : undefined)
  const counts = useStreamGroups()
  const itemsOf = (s: string, g: string) => counts.data?.streams.find((x) => x.stream_name === s)?.groups.find((x) => x.group_id === g)?.items
  return (
    <>
      <PageHeader
        title={
          stream ? (
            <>
              <Crumb to="/streams">Streams</Crumb>
              <span className="mono">{stream}</span>
              {group ? (
                <>
                  {' '}
                  / <span className="mono">{group}</span>
                </>
              ) : null}
            </>
          ) : (
            'Streams'
          )
        }
        subtitle={
          <>
            {all.data ? `${all.data.count} ${all.data.count === 1 ? 'stream' : 'streams'}` : 'Loading…'}. <Updated at={all.updatedAt} />
          </>
        }
      />
      <ErrorBox error={all.error} title="Could not list streams" />
      <div className="columns-3">
        <nav aria-label="Streams">
          <h3>Streams</h3>
          {all.data?.streams.length ? (
            <ul className="list">
              {all.data.streams.map((s) => (
                <li key={s.stream_name}>
                  <Link to={pathOf('streams', s.stream_name)} className={s.stream_name === stream ? 'active' : undefined}>
                    <span className="mono ellipsis">{s.stream_name}</span>
                    {groupCount(s.groups) !== undefined ? <span className="muted small">{groupCount(s.groups)}</span> : null}
                  </Link>
                </li>
              ))}
            </ul>
          ) : all.data ? (
            <Empty>No streams hold items yet.</Empty>
          ) : null}
        </nav>
        <nav aria-label="Groups">
          <h3>Groups</h3>
          {stream ? (
            <>
              <ErrorBox error={groups.error} />
              {groups.data?.length ? (
                <ul className="list">
                  {groups.data.map((g) => (
                    <li key={g}>
                      <Link to={pathOf('streams', stream, g)} className={g === group ? 'active' : undefined}>
                        <span className="mono ellipsis">{g}</span>
                        {typeof itemsOf(stream, g) === 'number' ? <span className="muted small">{itemsOf(stream, g)}</span> : null}
                      </Link>
                    </li>
                  ))}
                </ul>
              ) : groups.data ? (
                <Empty>No groups.</Empty>
              ) : null}
            </>
          ) : (
            <Empty>Select a stream.</Empty>
          )}
        </nav>
        <div>{stream && group ? <GroupView key={`${stream}/${group}`} stream={stream} group={group} /> : <GroupTable data={counts.data} error={counts.error} stream={stream} />}</div>
      </div>
    </>
  )
}

/** `GET /api/stream-groups`, again every 5 s while the tab is visible. */
function useStreamGroups(): { data: StreamGroups | undefined; error: ApiError | undefined } {
  const [state, setState] = useState<{ data: StreamGroups | undefined; error: ApiError | undefined }>({ data: undefined, error: undefined })
  const visible = useVisible()
  useEffect(() => {
    if (!visible) return
    let stopped = false
    const load = () =>
      getStreamGroups().then(
        (data) => !stopped && setState({ data, error: undefined }),
        (error: unknown) => !stopped && setState((s) => ({ data: s.data, error: error instanceof ApiError ? error : new ApiError({ code: 'UNKNOWN', message: String(error) }) })),
      )
    void load()
    const id = setInterval(load, 5000)
    return () => {
      stopped = true
      clearInterval(id)
    }
  }, [visible])
  return state
}

/** Every stream group (of `stream`, when one is selected) with its item count. */
function GroupTable({ data, error, stream }: { data: StreamGroups | undefined; error: ApiError | undefined; stream: string | undefined }) {
  const rows = (data?.streams ?? []).filter((s) => !stream || s.stream_name === stream).flatMap((s) => s.groups.map((g) => ({ stream: s.stream_name, ...g })))
  return (
    <Panel title={`Stream groups (${rows.length})`}>
      <ErrorBox error={error} title="Could not count the stream groups" />
      {data?.truncated ? <p className="muted small">Item counts of the first 500 groups only.</p> : null}
      {rows.length ? (
        <table className="table" aria-label="Stream groups">
          <thead>
            <tr>
              <th>Stream</th>
              <th>Group</th>
              <th className="num">Items</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={`${r.stream}/${r.group_id}`}>
                <td className="mono">
                  <Link to={pathOf('streams', r.stream)}>{r.stream}</Link>
                </td>
                <td className="mono">
                  <Link to={pathOf('streams', r.stream, r.group_id)}>{r.group_id}</Link>
                </td>
                <td className="num" title={r.error}>{r.items ?? '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : data ? (
        <Empty>No stream groups hold items yet.</Empty>
      ) : null}
      <p className="muted small">Select a group to see its items and monitor it live.</p>
    </Panel>
  )
}

function GroupView({ stream, group }: { stream: string; group: string }) {
  const items = useCall<unknown[]>('stream::list', { stream_name: stream, group_id: group })
  return (
    <>
      <Monitor stream={stream} group={group} onChange={items.reload} />
      <Panel title={`Items (${items.data?.length ?? 0})`} actions={<Updated at={items.updatedAt} />}>
        <ErrorBox error={items.error} />
        {items.data?.length ? (
          <ol className="plain">
            {items.data.map((item, i) => (
              <li key={i}>
                <JsonView value={item} maxHeight={200} />
              </li>
            ))}
          </ol>
        ) : items.data ? (
          <Empty>The group has no items.</Empty>
        ) : null}
      </Panel>
    </>
  )
}

/** The live monitor of one group; `onChange` is called for stored changes so the item list follows. */
function Monitor({ stream, group, onChange }: { stream: string; group: string; onChange: () => void }) {
  const [events, setEvents] = useState<MonitorEvent[]>([])
  const [paused, setPaused] = useState(false)
  const [missed, setMissed] = useState(0)
  const [status, setStatus] = useState<'connecting' | 'open' | 'closed'>('connecting')
  const [attempt, setAttempt] = useState(0)
  const [open, setOpen] = useState<number | null>(null)
  const pausedRef = useRef(paused)
  pausedRef.current = paused
  const onChangeRef = useRef(onChange)
  onChangeRef.current = onChange

  useEffect(() => {
    let retry: ReturnType<typeof setTimeout> | undefined
    const close = openMonitor(
      stream,
      group,
      (event) => {
        const type = eventType(event.frame)
        if (type === 'create' || type === 'update' || type === 'delete') onChangeRef.current()
        if (pausedRef.current) {
          setMissed((n) => n + 1)
          return
        }
        setEvents((prev) => [event, ...prev].slice(0, MAX_EVENTS))
      },
      (s) => {
        setStatus(s)
        if (s === 'closed') retry = setTimeout(() => setAttempt((n) => n + 1), 2000)
      },
    )
    return () => {
      clearTimeout(retry)
      close()
    }
  }, [stream, group, attempt])

  const exportJson = () => {
    const blob = new Blob([JSON.stringify(events.map((e) => ({ received_at: new Date(e.receivedAt).toISOString(), size_bytes: e.size, frame: e.frame })), null, 2)], { type: 'application/json' })
    const url = URL.createObjectURL(blob)
    const a = document.createElement('a')
    a.href = url
    a.download = `stream-${stream}-${group}-${Date.now()}.json`
    a.click()
    setTimeout(() => URL.revokeObjectURL(url), 1000)
  }

  return (
    <Panel
      title={
        <>
          Live monitor <Badge tone={status === 'open' ? 'ok' : status === 'closed' ? 'error' : 'muted'}>{status === 'open' ? 'joined' : status}</Badge>
        </>
      }
      actions={
        <>
          <button type="button" aria-pressed={paused} onClick={() => { setPaused(!paused); if (paused) setMissed(0) }}>
            {paused ? 'Resume' : 'Pause'}
          </button>
          <button type="button" onClick={() => setEvents([])} disabled={events.length === 0}>
            Clear
          </button>
          <button type="button" onClick={exportJson} disabled={events.length === 0}>
            Export JSON
          </button>
        </>
      }
    >
      {paused ? <p className="muted small">Paused; {missed} events not shown.</p> : null}
      {events.length ? (
        <div className="monitor">
          <table className="table">
            <thead>
              <tr>
                <th>Time</th>
                <th>Type</th>
                <th>Item</th>
                <th className="num">Size</th>
                <th>Data</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e, i) => (
                <Fragment key={`${e.receivedAt}-${events.length - i}`}>
                  <tr>
                    <td className="mono small nowrap">{formatClock(e.receivedAt)}</td>
                    <td>
                      <Badge tone={eventType(e.frame) === 'delete' ? 'error' : eventType(e.frame) === 'create' ? 'ok' : 'info'}>{eventType(e.frame)}</Badge>
                    </td>
                    <td className="mono small">{e.frame.id ?? '—'}</td>
                    <td className="num small">{formatBytes(e.size)}</td>
                    <td className="mono small">
                      <button type="button" className="icon" aria-expanded={open === i} aria-label="Show the frame" onClick={() => setOpen(open === i ? null : i)}>
                        {open === i ? '▾' : '▸'}
                      </button>
                      {preview(e.frame.event?.data ?? e.frame.event?.event?.data, 60)}
                    </td>
                  </tr>
                  {open === i ? (
                    <tr className="expanded">
                      <td colSpan={5}>
                        <JsonView value={e.frame} maxHeight={260} />
                      </td>
                    </tr>
                  ) : null}
                </Fragment>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>Waiting for events in {stream} / {group}…</Empty>
      )}
    </Panel>
  )
}

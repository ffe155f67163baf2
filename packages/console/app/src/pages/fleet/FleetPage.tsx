/**
 * Fleet (issue 19 §3, §4): the fleet this engine belongs to, its NATS status with the detail, and
 * every engine with its listener URLs, workers, functions, when it was last heard from and when it
 * started. Reads `engine::fleet::list` every {@link FLEET_POLL_MS} ms while the tab is visible and
 * on `workers`/`functions` pushes (coalesced over 250 ms by {@link useCall}); an engine alone gets
 * one plain line.
 */
import { useCall } from '../../api/hooks.ts'
import { formatSince, formatTime } from '../../format/format.ts'
import { Link, withQuery } from '../../router/router.tsx'
import { Badge, Empty, ErrorBox, Fields, PageHeader, Panel, Updated, useNow } from '../../components/ui.tsx'
import { inFleet, lastHeardText, readFleet, type FleetView } from './fleet.ts'

/** How often the page re-reads the fleet while visible, ms: "last heard" moves between reads. */
export const FLEET_POLL_MS = 2000

/**
 * The fleet as the page and the sidebar read it: `engine::fleet::list` through the backend, read
 * defensively ({@link readFleet}); `function_not_found` (an engine before issue 19) reads as alone.
 */
export function useFleet(options: { pollMs?: number; live?: boolean } = {}) {
  const call = useCall<unknown>('engine::fleet::list', {}, { pollMs: options.pollMs, live: options.live ? ['workers', 'functions'] : [] })
  const view: FleetView | undefined = call.data === undefined ? undefined : readFleet(call.data)
  const missing = call.error?.code === 'function_not_found'
  return { ...call, view, error: missing ? undefined : call.error, alone: missing || (view !== undefined && !inFleet(view)) }
}

/** `/fleet`. */
export function FleetPage() {
  const { view, error, updatedAt, alone } = useFleet({ pollMs: FLEET_POLL_MS, live: true })
  const now = useNow(1000)
  const fleet = view && inFleet(view) ? view : undefined
  return (
    <>
      <PageHeader
        title="Fleet"
        subtitle={
          <>
            {fleet ? 'Engines that share this fleet over NATS and serve one project.' : 'Engines serving this project.'} <Updated at={updatedAt} />
          </>
        }
      />
      <ErrorBox error={error} title="Could not read the fleet" />
      {alone ? (
        <Empty>
          This engine is not part of a fleet. A <code>fleet</code> section in <code>config.yaml</code> (a fleet name and NATS servers) lets several engines serve
          one project.
        </Empty>
      ) : null}
      {!view && !error && !alone ? <Empty>Loading the fleet…</Empty> : null}
      {fleet ? (
        <>
          <Panel title="Membership">
            <Fields
              rows={[
                ['Fleet', <span className="mono" data-testid="fleet-name">{fleet.fleet}</span>],
                ['This engine', <span className="mono">{fleet.engine}</span>],
                [
                  'NATS',
                  <span data-testid="fleet-status">
                    <Badge tone={fleet.status === 'healthy' ? 'ok' : 'warn'}>{fleet.status}</Badge> <span className="muted">{fleet.detail}</span>
                  </span>,
                ],
                ['Engines', fleet.engines.length + fleet.hidden],
              ]}
            />
          </Panel>
          <table className="table" aria-label="Engines">
            <thead>
              <tr>
                <th>Engine</th>
                <th>Worker URLs</th>
                <th className="num">Workers</th>
                <th className="num">Functions</th>
                <th>Last heard</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {fleet.engines.map((e) => (
                <tr key={`${e.engine}/${e.instance}`} data-engine={e.engine}>
                  <td>
                    <Link className="mono" to={withQuery('/workers', { engine: e.engine })} title={`Workers on ${e.engine}`}>
                      {e.engine}
                    </Link>{' '}
                    {e.self ? <Badge tone="accent">this engine</Badge> : null}
                    {e.instance ? <div className="muted small mono" title="This run of the engine">{e.instance}</div> : null}
                  </td>
                  <td className="mono small">
                    {e.urls.length === 0 ? '—' : e.urls.map((u, i) => <div key={i} className="ellipsis" title={u}>{u}</div>)}
                    {e.moreUrls > 0 ? <div className="muted">+{e.moreUrls} more</div> : null}
                  </td>
                  <td className="num">{e.workers ?? '—'}</td>
                  <td className="num">{e.functions ?? '—'}</td>
                  <td className="nowrap">{lastHeardText(e, updatedAt ? now - updatedAt : 0)}</td>
                  <td className="nowrap">
                    {e.startedAtMs === null ? '—' : (
                      <>
                        {formatTime(e.startedAtMs)}
                        <div className="muted small">up {formatSince(e.startedAtMs, now)}</div>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {fleet.hidden > 0 ? <Empty>{fleet.hidden} more engines are not shown.</Empty> : null}
        </>
      ) : null}
    </>
  )
}

/** The app frame: sidebar navigation, connection indicator and the disconnected banner (cli.md §7.2). */
import { useEffect, useState, type ReactNode } from 'react'
import { getInfo } from '../api/client.ts'
import type { ConsoleInfo } from '../api/types.ts'
import { useConnectionState } from '../live/hooks.ts'
import type { ConnectionState } from '../live/connection.ts'
import { useFleet } from '../pages/fleet/FleetPage.tsx'
import { Link, useLocation } from '../router/router.tsx'

/** How often the sidebar re-reads the fleet's status while the engine is in one, ms. */
const SIDEBAR_FLEET_POLL_MS = 10_000

/** The Fleet entry: listed after the others, and only while the engine is in a fleet (issue 19). */
export const FLEET_NAV = { label: 'Fleet', to: '/fleet' }

/** Sidebar entries: label and the path prefix that marks them active. */
export const NAV: { label: string; to: string }[] = [
  { label: 'Workers', to: '/workers' },
  { label: 'Functions', to: '/functions' },
  { label: 'Triggers', to: '/triggers' },
  { label: 'Queues', to: '/queues' },
  { label: 'Logs', to: '/logs' },
  { label: 'Traces', to: '/traces' },
  { label: 'State', to: '/state' },
  { label: 'Streams', to: '/streams' },
  { label: 'Configuration', to: '/configuration' },
]

const STATE_TEXT: Record<ConnectionState, string> = {
  connecting: 'connecting…',
  connected: 'connected',
  'engine-down': 'engine disconnected',
  'backend-down': 'console offline',
  unauthorized: 'access token needed',
}

/** Reads `/api/info` once and again whenever the connection comes back. */
function useInfo(state: ConnectionState): ConsoleInfo | undefined {
  const [info, setInfo] = useState<ConsoleInfo>()
  useEffect(() => {
    if (state === 'backend-down' || state === 'unauthorized') return
    getInfo().then(setInfo, () => {})
  }, [state])
  return info
}

/**
 * Shown while the backend or the engine is unreachable; pages keep their last data underneath and
 * reload when the connection returns.
 */
export function DisconnectedBanner({ state }: { state: ConnectionState }) {
  if (state === 'connected' || state === 'connecting') return null
  if (state === 'unauthorized') {
    return (
      <div className="banner" role="alert">
        This console needs its access token. Open the address <code>svc console</code> printed (it ends in <code>/?token=…</code>); the browser then
        keeps the token for this session.
      </div>
    )
  }
  return (
    <div className="banner" role="status" aria-live="polite">
      {state === 'engine-down'
        ? 'The console has lost its connection to the engine. Showing the last data; retrying…'
        : 'The console server is not reachable. Showing the last data; retrying…'}
    </div>
  )
}

/** Sidebar + main area. `children` is the current page. */
export function Layout({ children }: { children: ReactNode }) {
  const { path } = useLocation()
  const state = useConnectionState()
  const info = useInfo(state)
  // Membership is configuration: an engine alone is read once per connection (useCall re-reads on
  // reconnection); in a fleet the NATS status is re-read every SIDEBAR_FLEET_POLL_MS.
  const [polled, setPolled] = useState(false)
  const fleet = useFleet({ pollMs: polled ? SIDEBAR_FLEET_POLL_MS : undefined })
  const member = fleet.view !== undefined && !fleet.alone ? fleet.view : undefined
  useEffect(() => setPolled(member !== undefined), [member !== undefined])
  const nav = member || path === FLEET_NAV.to ? [...NAV, FLEET_NAV] : NAV
  const current = path === '/' ? '/workers' : path
  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <nav className="sidebar" aria-label="Pages">
        <div className="brand">
          <Link to="/">svc</Link>
          <span className="muted small">console{info?.version ? ` ${info.version}` : ''}</span>
        </div>
        <ul>
          {nav.map((item) => {
            const active = current === item.to || current.startsWith(item.to + '/')
            return (
              <li key={item.to}>
                <Link to={item.to} className={active ? 'nav-link active' : 'nav-link'} aria-current={active ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            )
          })}
        </ul>
        <div className="sidebar-foot">
          <span className={`dot dot-${state}`} aria-hidden="true" />
          <span className="small" data-testid="connection-state">
            {STATE_TEXT[state]}
          </span>
          {info?.engine_url ? <div className="muted small mono ellipsis" title={info.engine_url}>{info.engine_url}</div> : null}
          {member ? (
            <div className="muted small fleet-line" data-testid="fleet-membership">
              engine <span className="mono">{member.engine}</span> of fleet <span className="mono">{member.fleet}</span>
              {member.status === 'degraded' ? ' (degraded)' : ''}
            </div>
          ) : null}
        </div>
      </nav>
      <div className="main-col">
        <DisconnectedBanner state={state} />
        <main id="main" className="main" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  )
}

/**
 * Routes of the console (cli.md §7.2). Every page and every detail has its own path:
 *
 * | Path | Page |
 * |---|---|
 * | `/`, `/workers`, `/workers/:id` | Workers (start page), worker detail |
 * | `/functions`, `/functions/:id?ns=` | Functions, function detail with invoke panel |
 * | `/triggers?type=`, `/triggers/:id` | Triggers by type, one trigger with its tester |
 * | `/queues?tab=dlq`, `/queues/:name`, `/queues/:name/dlq` | Queues (or Dead letters tab), one queue, its dead letters |
 * | `/logs?…filters` | Logs |
 * | `/traces?…filters`, `/traces/:traceId?span=` | Traces, waterfall |
 * | `/state`, `/state/:scope`, `/state/:scope/:key` | State |
 * | `/streams`, `/streams/:stream`, `/streams/:stream/:group` | Streams |
 * | `/configuration`, `/configuration/:id` | Configuration |
 * | `/fleet` | Fleet: the engines of this engine's fleet (issue 19; listed in the sidebar only in a fleet) |
 */
import type { ReactNode } from 'react'
import { Layout } from './components/layout.tsx'
import { Empty, PageHeader } from './components/ui.tsx'
import { Link, matchPath, useLocation } from './router/router.tsx'
import { ConfigurationPage } from './pages/configuration/ConfigurationPage.tsx'
import { FunctionDetailPage } from './pages/functions/FunctionDetailPage.tsx'
import { FleetPage } from './pages/fleet/FleetPage.tsx'
import { FunctionsPage } from './pages/functions/FunctionsPage.tsx'
import { LogsPage } from './pages/logs/LogsPage.tsx'
import { QueuesPage } from './pages/queues/QueuesPage.tsx'
import { StatePage } from './pages/state/StatePage.tsx'
import { StreamsPage } from './pages/streams/StreamsPage.tsx'
import { TraceDetailPage } from './pages/traces/TraceDetailPage.tsx'
import { TracesPage } from './pages/traces/TracesPage.tsx'
import { TriggersPage } from './pages/triggers/TriggersPage.tsx'
import { WorkerDetailPage } from './pages/workers/WorkerDetailPage.tsx'
import { WorkersPage } from './pages/workers/WorkersPage.tsx'

type Route = [pattern: string, render: (params: Record<string, string>) => ReactNode]

const ROUTES: Route[] = [
  ['/', () => <WorkersPage />],
  ['/workers', () => <WorkersPage />],
  ['/workers/:id', (p) => <WorkerDetailPage key={p.id} id={p.id!} />],
  ['/functions', () => <FunctionsPage />],
  ['/functions/:id', (p) => <FunctionDetailPage key={p.id} id={p.id!} />],
  ['/triggers', () => <TriggersPage />],
  ['/triggers/:id', (p) => <TriggersPage triggerId={p.id!} />],
  ['/queues', () => <QueuesPage />],
  ['/queues/:name', (p) => <QueuesPage name={p.name!} />],
  ['/queues/:name/dlq', (p) => <QueuesPage name={p.name!} dlq />],
  ['/logs', () => <LogsPage />],
  ['/traces', () => <TracesPage />],
  ['/traces/:traceId', (p) => <TraceDetailPage key={p.traceId} traceId={p.traceId!} />],
  ['/state', () => <StatePage />],
  ['/state/:scope', (p) => <StatePage scope={p.scope!} />],
  ['/state/:scope/:key*', (p) => <StatePage scope={p.scope!} entryKey={p.key!} />],
  ['/streams', () => <StreamsPage />],
  ['/streams/:stream', (p) => <StreamsPage stream={p.stream!} />],
  ['/streams/:stream/:group', (p) => <StreamsPage stream={p.stream!} group={p.group!} />],
  ['/configuration', () => <ConfigurationPage />],
  ['/configuration/:id', (p) => <ConfigurationPage id={p.id!} />],
  ['/fleet', () => <FleetPage />],
]

/** Picks the page for the current path; unknown paths get a "not found" page with a way back. */
export function App() {
  const { path } = useLocation()
  let page: ReactNode = null
  for (const [pattern, render] of ROUTES) {
    const params = matchPath(pattern, path)
    if (params) {
      page = render(params)
      break
    }
  }
  return (
    <Layout>
      {page ?? (
        <>
          <PageHeader title="Not found" />
          <Empty>
            Nothing lives at <code>{path}</code>. <Link to="/">Go to Workers</Link>.
          </Empty>
        </>
      )}
    </Layout>
  )
}

/**
 * One worker (cli.md §7.2): its details, functions, trigger types and registered triggers, CPU,
 * memory and event-loop lag (latest values from `engine::workers::info`, history from
 * `engine::metrics::list {worker}`), and its recent logs (`engine::logs::list {service_name}`).
 */
import type { ReactNode } from 'react'
import { useCall } from '../../api/hooks.ts'
import type { LogPage, MetricsListResult, WorkerInfo } from '../../api/types.ts'
import { formatBytes, formatDuration, formatSince, formatTime } from '../../format/format.ts'
import { Link, pathOf, withQuery } from '../../router/router.tsx'
import { Badge, Crumb, Empty, ErrorBox, Fields, PageHeader, Panel, StatusBadge, Updated, useNow } from '../../components/ui.tsx'
import { Sparkline } from '../../components/sparkline.tsx'
import { LogTable } from '../logs/LogTable.tsx'

const GAUGES: { name: string; label: string; format: (v: number) => string }[] = [
  { name: 'svc.worker.cpu.percent', label: 'CPU', format: (v) => `${v.toFixed(1)} %` },
  { name: 'svc.worker.memory.rss', label: 'Memory (RSS)', format: formatBytes },
  { name: 'svc.worker.memory.heap_used', label: 'Heap used', format: formatBytes },
  { name: 'svc.worker.event_loop.lag_ms', label: 'Event-loop lag', format: (v) => formatDuration(v) },
]

/** Worker detail for `/workers/:id`. */
export function WorkerDetailPage({ id }: { id: string }) {
  const info = useCall<WorkerInfo>('engine::workers::info', { id }, { live: ['workers', 'functions'] })
  const worker = info.data?.worker
  const name = worker?.name ?? undefined
  const now = useNow(1000)
  // Rounded to the minute so that the payload, and so the data hook's key, changes at most once a minute.
  const since = Math.floor(now / 60_000) * 60_000 - 15 * 60_000
  const metrics = useCall<MetricsListResult>('engine::metrics::list', { worker: name, start_time: since }, { enabled: Boolean(name), pollMs: 5000 })
  const logs = useCall<LogPage>('engine::logs::list', { service_name: name, limit: 50 }, { enabled: Boolean(name), live: ['logs'] })

  return (
    <>
      <PageHeader
        title={
          <>
            <Crumb to="/workers">Workers</Crumb>
            {name ?? id}
          </>
        }
        subtitle={<Updated at={info.updatedAt} />}
      />
      <ErrorBox error={info.error} title={info.error?.code === 'NOT_FOUND' ? 'Worker not connected' : 'Could not read the worker'} />
      {worker ? (
        <div className="grid-2">
          <Panel title="Worker">
            <Fields
              rows={[
                ['Id', <span className="mono">{worker.id}</span>],
                ['Namespace', worker.namespace],
                ...(typeof worker.engine === 'string' ? [['Engine', <span className="mono">{worker.engine}</span>] as [string, ReactNode]] : []),
                ['Description', worker.description],
                ['Status', <StatusBadge status={worker.status} />],
                ['Runtime', [worker.runtime, worker.version].filter(Boolean).join(' ')],
                ['OS', worker.os],
                ['Isolation', worker.isolation ? <Badge>{worker.isolation}</Badge> : null],
                ['PID', worker.pid],
                ['Address', worker.ip_address],
                ['Connected for', worker.connected_at_ms ? `${formatSince(worker.connected_at_ms, now)} (since ${formatTime(worker.connected_at_ms)})` : null],
                ['In flight', worker.active_invocations],
                ['Listening on', worker.listen_urls?.length ? worker.listen_urls.join(', ') : null],
                ['Last config error', worker.last_config_error ? <span className="text-error">{worker.last_config_error}</span> : null],
                ...(info.data && info.data.matching_ids.length > 1 ? [['Replicas', info.data.matching_ids.length] as [string, number]] : []),
              ]}
            />
          </Panel>
          <Panel title="Resources">
            {GAUGES.some((g) => worker.latest_metrics?.[g.name] !== undefined) ? (
              <div className="metrics">
                {GAUGES.map((g) => {
                  const latest = worker.latest_metrics?.[g.name]
                  const series = metrics.data?.metrics.find((m) => m.name === g.name)?.points.map((p) => p.value).filter((v): v is number => typeof v === 'number') ?? []
                  return (
                    <div className="metric" key={g.name}>
                      <div className="muted small">{g.label}</div>
                      <div className="metric-value">{latest === undefined ? '—' : g.format(latest)}</div>
                      <Sparkline values={series.slice(-60)} label={`${g.label} over the last 15 minutes`} />
                    </div>
                  )
                })}
              </div>
            ) : (
              <Empty>{worker.runtime === 'builtin' ? 'Built-in workers run inside the engine and report no process gauges.' : 'No gauges reported yet (workers send them every minute).'}</Empty>
            )}
          </Panel>
        </div>
      ) : null}
      {info.data ? (
        <>
          <Panel title={`Functions (${info.data.functions.length})`}>
            {info.data.functions.length ? (
              <table className="table">
                <thead>
                  <tr>
                    <th>Function</th>
                    <th>Namespace</th>
                    <th>Description</th>
                  </tr>
                </thead>
                <tbody>
                  {info.data.functions.map((f) => (
                    <tr key={`${f.namespace}/${f.function_id}`}>
                      <td>
                        <Link to={withQuery(pathOf('functions', f.function_id), { ns: f.namespace })} className="mono">
                          {f.function_id}
                        </Link>
                      </td>
                      <td>{f.namespace}</td>
                      <td className="muted">{f.description ?? ''}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            ) : (
              <Empty>No functions.</Empty>
            )}
          </Panel>
          <div className="grid-2">
            <Panel title={`Registered triggers (${info.data.registered_triggers.length})`}>
              {info.data.registered_triggers.length ? (
                <table className="table">
                  <thead>
                    <tr>
                      <th>Type</th>
                      <th>Function</th>
                      <th>Config</th>
                      <th>Status</th>
                    </tr>
                  </thead>
                  <tbody>
                    {info.data.registered_triggers.map((t) => (
                      <tr key={t.id}>
                        <td>
                          <Link to={pathOf('triggers', t.id)}>{t.trigger_type}</Link>
                        </td>
                        <td className="mono">{t.function_id}</td>
                        <td className="mono small ellipsis">{t.config_summary}</td>
                        <td>
                          <StatusBadge status={t.status} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : (
                <Empty>No registered triggers.</Empty>
              )}
            </Panel>
            <Panel title={`Trigger types (${info.data.trigger_types.length})`}>
              {info.data.trigger_types.length ? (
                <ul className="plain">
                  {info.data.trigger_types.map((t) => (
                    <li key={t.id}>
                      <Link to={withQuery('/triggers', { type: t.id })} className="mono">
                        {t.id}
                      </Link>{' '}
                      <span className="muted">{t.description}</span>
                    </li>
                  ))}
                </ul>
              ) : (
                <Empty>Provides no trigger types.</Empty>
              )}
            </Panel>
          </div>
          <Panel title="Recent logs" actions={name ? <Link to={withQuery('/logs', { service: name })}>All logs of {name}</Link> : null}>
            <ErrorBox error={logs.error} />
            {logs.data?.logs.length ? <LogTable logs={logs.data.logs} compact /> : <Empty>{logs.data ? 'No logs from this worker.' : 'Loading…'}</Empty>}
          </Panel>
        </>
      ) : null}
    </>
  )
}

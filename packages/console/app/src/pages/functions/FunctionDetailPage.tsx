/**
 * One function (cli.md §7.2): its recent runs first (./RunHistory.tsx), then description, request
 * and response schemas, replicas, registered triggers and the invoke panel. Reads
 * `engine::functions::info {function_id, namespace?}` and `engine::runs::list`.
 */
import { useCall } from '../../api/hooks.ts'
import type { FunctionDetail } from '../../api/types.ts'
import { Link, pathOf, useLocation } from '../../router/router.tsx'
import { Crumb, Empty, ErrorBox, Fields, PageHeader, Panel, StatusBadge } from '../../components/ui.tsx'
import { JsonView } from '../../components/json.tsx'
import { InvokePanel } from './InvokePanel.tsx'
import { RunHistory } from './RunHistory.tsx'

/** Function detail for `/functions/:id?ns=`. */
export function FunctionDetailPage({ id }: { id: string }) {
  const { query } = useLocation()
  const ns = query.get('ns') ?? undefined
  const { data, error } = useCall<FunctionDetail>('engine::functions::info', { function_id: id, namespace: ns }, { live: ['functions'] })
  return (
    <>
      <PageHeader
        title={
          <>
            <Crumb to="/functions">Functions</Crumb>
            <span className="mono">{id}</span>
          </>
        }
        subtitle={data?.description}
      />
      <ErrorBox error={error} title="Could not read the function" />
      {data ? <RunHistory functionId={data.function_id} namespace={data.namespace} /> : null}
      {data ? (
        <div className="grid-2 align-start">
          <div>
            <Panel title="Function">
              <Fields
                rows={[
                  ['Id', <span className="mono">{data.function_id}</span>],
                  ['Namespace', data.namespace],
                  ['Description', data.description],
                  ['Worker', data.worker_name],
                  ['Replicas', data.replicas.map((r) => `${r.worker_name ?? r.worker_id}${typeof r.engine === 'string' ? ` on ${r.engine}` : ''}`).join(', ') || String(data.replica_count)],
                  ...(Array.isArray(data.engines) ? [['Engines', data.engines.join(', ')] as [string, string]] : []),
                  ['Served over HTTP', data.invocation ? `${data.invocation.method ?? 'POST'} ${data.invocation.url}` : null],
                  ['Metadata', data.metadata && Object.keys(data.metadata).length ? <JsonView value={data.metadata} /> : null],
                ]}
              />
            </Panel>
            <Panel title="Request schema">{data.request_schema ? <JsonView value={data.request_schema} maxHeight={320} /> : <Empty>No request schema.</Empty>}</Panel>
            <Panel title="Response schema">{data.response_schema ? <JsonView value={data.response_schema} maxHeight={320} /> : <Empty>No response schema.</Empty>}</Panel>
            <Panel title={`Registered triggers (${data.registered_triggers.length})`}>
              {data.registered_triggers.length ? (
                <table className="table">
                  <thead>
                    <tr>
                      <th>Type</th>
                      <th>Config</th>
                      <th>Status</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.registered_triggers.map((t) => (
                      <tr key={t.id}>
                        <td>
                          <Link to={pathOf('triggers', t.id)}>{t.trigger_type}</Link>
                        </td>
                        <td className="mono small">{JSON.stringify(t.config)}</td>
                        <td>
                          <StatusBadge status={t.status} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              ) : (
                <Empty>No triggers call this function.</Empty>
              )}
            </Panel>
          </div>
          <InvokePanel functionId={data.function_id} namespace={data.namespace} requestSchema={data.request_schema} />
        </div>
      ) : null}
    </>
  )
}

/**
 * Triggers (cli.md §7.2): registered triggers in tabs per trigger type with counts — the user's
 * triggers, HTTP first; the built-ins' internal ones behind the "internal" switch (off by
 * default) —, the next three run times of cron triggers (croner, ./cron.ts), the trigger types the
 * engine knows, and a tester for the selected trigger. Reads `engine::registered-triggers::list`
 * and `engine::triggers::list`.
 */
import { useCall } from '../../api/hooks.ts'
import type { FunctionSummary, RegisteredTrigger, TriggerTypeSummary } from '../../api/types.ts'
import { Link, pathOf, setQuery, useLocation, withQuery } from '../../router/router.tsx'
import { Crumb, Empty, ErrorBox, PageHeader, Panel, StatusBadge, Tabs, Updated } from '../../components/ui.tsx'
import { TriggerTester } from './TriggerTester.tsx'
import { nextRuns } from './cron.ts'
import { formatTime } from '../../format/format.ts'

/** The triggers page; `/triggers/:id` selects one trigger; query `type`, `internal=1`. */
export function TriggersPage({ triggerId }: { triggerId?: string }) {
  const { query } = useLocation()
  const internal = query.get('internal') === '1'
  const list = useCall<{ registered_triggers: RegisteredTrigger[] }>('engine::registered-triggers::list', { include_internal: internal }, { live: ['functions', 'workers'] })
  const types = useCall<{ triggers: TriggerTypeSummary[] }>('engine::triggers::list', { include_internal: internal }, { live: ['workers'] })
  // `include_internal: false` hides only triggers of engine:: functions; the built-ins' and the
  // console's own triggers call functions registered with `metadata.internal`, hidden here too.
  const fns = useCall<{ functions: FunctionSummary[] }>('engine::functions::list', { include_internal: true }, { live: ['functions'], enabled: !internal })
  const internalFns = new Set((fns.data?.functions ?? []).filter(isInternalFunction).map((f) => `${f.namespace}/${f.function_id}`))
  const known = internal || fns.data !== undefined
  const triggers = known ? (list.data?.registered_triggers ?? []).filter((t) => internal || !internalFns.has(`${t.namespace}/${t.function_id}`)) : []
  const selected = triggerId ? triggers.find((t) => t.id === triggerId) : undefined
  const counts = new Map<string, number>()
  for (const t of triggers) counts.set(t.trigger_type, (counts.get(t.trigger_type) ?? 0) + 1)
  const typeIds = [...counts.keys()].sort(byTypeOrder)
  const activeType = query.get('type') ?? selected?.trigger_type ?? typeIds[0] ?? ''
  const shown = triggers.filter((t) => t.trigger_type === activeType)
  const keepQuery = { internal: internal ? '1' : undefined }

  return (
    <>
      <PageHeader
        title={
          selected ? (
            <>
              <Crumb to={withQuery('/triggers', { type: selected.trigger_type, ...keepQuery })}>Triggers</Crumb>
              <span className="mono">{selected.trigger_type}</span> → <span className="mono">{selected.function_id}</span>
            </>
          ) : (
            'Triggers'
          )
        }
        subtitle={
          <>
            {list.data && known ? `${triggers.length} registered ${triggers.length === 1 ? 'trigger' : 'triggers'} of ${typeIds.length} ${typeIds.length === 1 ? 'type' : 'types'}` : 'Loading…'}. <Updated at={list.updatedAt} />
          </>
        }
        actions={
          <label className="check">
            <input type="checkbox" checked={internal} onChange={(e) => setQuery({ internal: e.target.checked ? '1' : undefined })} /> internal
          </label>
        }
      />
      <ErrorBox error={list.error} title="Could not list triggers" />
      {triggerId && list.data && known && !selected ? <ErrorBox error={{ code: 'NOT_FOUND', message: `Registered trigger '${triggerId}' is not registered (any more).` }} /> : null}
      {selected ? <TriggerTester trigger={selected} /> : null}
      {typeIds.length ? (
        <Tabs
          label="Trigger types"
          tabs={typeIds.map((id) => ({ key: id, label: `${id} (${counts.get(id)})` }))}
          active={activeType}
          onSelect={(key) => setQuery({ type: key })}
        />
      ) : list.data && known ? (
        <Empty>No registered triggers.</Empty>
      ) : null}
      {shown.length ? (
        <table className="table">
          <thead>
            <tr>
              <th>Function</th>
              <th>Config</th>
              <th>Namespace</th>
              <th>Worker</th>
              {activeType === 'cron' ? <th>Next runs</th> : null}
              <th>Status</th>
              <th>
                <span className="sr-only">Test</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {shown.map((t) => (
              <tr key={t.id} className={t.id === triggerId ? 'selected' : undefined}>
                <td>
                  <Link className="mono" to={withQuery(pathOf('functions', t.function_id), { ns: t.namespace === 'default' ? undefined : t.namespace })}>
                    {t.function_id}
                  </Link>
                </td>
                <td className="mono small">{t.config_summary}</td>
                <td>{t.namespace}</td>
                <td>{t.worker_name ?? '—'}</td>
                {activeType === 'cron' ? (
                  <td>
                    <NextRuns config={t.config} />
                  </td>
                ) : null}
                <td>
                  <StatusBadge status={t.status} />
                </td>
                <td>
                  <Link to={withQuery(pathOf('triggers', t.id), { type: t.trigger_type, ...keepQuery })}>{t.id === triggerId ? 'Selected' : 'Test'}</Link>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <Panel title={`Trigger types (${types.data?.triggers.length ?? 0})`} className="mt">
        <ErrorBox error={types.error} />
        {types.data?.triggers.length ? (
          <table className="table">
            <thead>
              <tr>
                <th>Type</th>
                <th>Worker</th>
                <th className="num">Registered</th>
                <th>Description</th>
              </tr>
            </thead>
            <tbody>
              {types.data.triggers.map((t) => (
                <tr key={`${t.namespace}/${t.id}`}>
                  <td className="mono">{counts.get(t.id) ? <Link to={withQuery('/triggers', { type: t.id, ...keepQuery })}>{t.id}</Link> : t.id}</td>
                  <td>{t.worker_name ?? '—'}</td>
                  <td className="num">{counts.get(t.id) ?? 0}</td>
                  <td className="muted">{t.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : (
          <Empty>No trigger types.</Empty>
        )}
      </Panel>
    </>
  )
}

/** Trigger types the user works with most come first: HTTP, then cron, queues, pub/sub, state, streams; the rest by name. */
const TYPE_ORDER = ['http', 'cron', 'queue', 'durable:subscriber', 'subscribe', 'state', 'stream']

function byTypeOrder(a: string, b: string): number {
  const x = TYPE_ORDER.indexOf(a)
  const y = TYPE_ORDER.indexOf(b)
  if (x !== y) return (x < 0 ? TYPE_ORDER.length : x) - (y < 0 ? TYPE_ORDER.length : y)
  return a < b ? -1 : a > b ? 1 : 0
}

/** The next three runs of a cron trigger, in its time zone (UTC when it names none). */
function NextRuns({ config }: { config: Record<string, unknown> | null | undefined }) {
  const expression = typeof config?.expression === 'string' ? config.expression : ''
  const zone = typeof config?.timezone === 'string' ? config.timezone : 'UTC'
  let runs: number[]
  try {
    runs = nextRuns(expression, zone, 3)
  } catch (error) {
    return <span className="small text-error">{(error as Error).message}</span>
  }
  if (runs.length === 0) return <span className="muted small">no future runs</span>
  return (
    <ol className="next-runs small mono" aria-label="Next runs" title={zone}>
      {runs.map((t) => (
        <li key={t}>{formatTime(t)}</li>
      ))}
    </ol>
  )
}

/** A function the console counts as internal: an `engine::` id or `metadata.internal: true` (builtins.md §12.4). */
function isInternalFunction(f: FunctionSummary): boolean {
  return f.function_id.startsWith('engine::') || (f.metadata as { internal?: unknown } | undefined)?.internal === true
}

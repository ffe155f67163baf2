/**
 * Queues (cli.md §7.2): named queues, topics and subscriber queues with depth, delayed, in flight,
 * DLQ count, subscribers and settings; enqueue and publish forms; a Dead letters tab with redrive
 * one, redrive all and discard. Polled every second while visible (cli.md §7.1). Reads
 * `engine::queue::list_topics`, `topic_stats`, `dlq_topics`, `dlq_messages`; writes with
 * `svc::queue::redrive`, `redrive_message`, `discard_message`, `svc::durable::publish` and
 * `engine::queue::enqueue` (builtins.md §7.3–§7.4).
 */
import { Fragment, useState } from 'react'
import { call } from '../../api/client.ts'
import { useAction, useCall } from '../../api/hooks.ts'
import type { DlqMessage, DlqTopic, QueueTopic, TopicStats } from '../../api/types.ts'
import { formatBytes, formatTime, preview } from '../../format/format.ts'
import { Link, navigate, pathOf, useLocation, withQuery } from '../../router/router.tsx'
import { Badge, Crumb, Empty, ErrorBox, PageHeader, Panel, StatusBadge, Tabs, Updated } from '../../components/ui.tsx'
import { JsonEditor, JsonView, parseJson } from '../../components/json.tsx'
import { RerunPanel } from '../../components/RerunPanel.tsx'

/** `/queues` (`?tab=dlq` for dead letters), `/queues/:name`, `/queues/:name/dlq`. */
export function QueuesPage({ name, dlq = false }: { name?: string; dlq?: boolean }) {
  const { query } = useLocation()
  const tab = dlq || query.get('tab') === 'dlq' ? 'dlq' : 'queues'
  const topics = useCall<QueueTopic[]>('engine::queue::list_topics', {}, { pollMs: 1000 })
  const dlqTopics = useCall<DlqTopic[]>('engine::queue::dlq_topics', {}, { pollMs: 1000 })
  const dlqTotal = (dlqTopics.data ?? []).reduce((n, t) => n + t.message_count, 0)
  return (
    <>
      <PageHeader
        title={
          name ? (
            <>
              <Crumb to={tab === 'dlq' ? withQuery('/queues', { tab: 'dlq' }) : '/queues'}>Queues</Crumb>
              <span className="mono">{name}</span>
            </>
          ) : (
            'Queues'
          )
        }
        subtitle={
          <>
            Refreshed every second. <Updated at={topics.updatedAt} />
          </>
        }
      />
      <Tabs
        label="Queues view"
        tabs={[
          { key: 'queues', label: `Queues and topics (${topics.data?.length ?? 0})` },
          { key: 'dlq', label: `Dead letters (${dlqTotal})` },
        ]}
        active={tab}
        onSelect={(key) => navigate(key === 'dlq' ? (name ? `${pathOf('queues', name)}/dlq` : withQuery('/queues', { tab: 'dlq' })) : name ? pathOf('queues', name) : '/queues')}
      />
      {tab === 'queues' ? (
        <>
          <ErrorBox error={topics.error} title="Could not list queues" />
          {name ? <QueueDetail name={name} /> : null}
          {topics.data ? <TopicTable topics={topics.data} selected={name} /> : null}
          {!name ? <PublishForms /> : null}
        </>
      ) : (
        <>
          <ErrorBox error={dlqTopics.error} title="Could not list dead letters" />
          <div className="columns">
            <div>
              {dlqTopics.data?.length ? (
                <ul className="list" aria-label="Dead-letter queues">
                  {dlqTopics.data.map((t) => (
                    <li key={t.topic}>
                      <Link to={`${pathOf('queues', t.topic)}/dlq`} className={t.topic === name ? 'active' : undefined}>
                        <span className="mono ellipsis">{t.topic}</span> <Badge tone="error">{t.message_count}</Badge>
                      </Link>
                    </li>
                  ))}
                </ul>
              ) : dlqTopics.data ? (
                <Empty>No dead letters.</Empty>
              ) : null}
            </div>
            <div>{name ? <DeadLetters queue={name} /> : <Empty>Select a queue to see its dead letters.</Empty>}</div>
          </div>
        </>
      )}
    </>
  )
}

function TopicTable({ topics, selected }: { topics: QueueTopic[]; selected: string | undefined }) {
  if (topics.length === 0) return <Empty>No queues, topics or subscribers yet. Declare queues in the queue settings (Configuration page) or register a durable subscriber.</Empty>
  return (
    <table className="table">
      <thead>
        <tr>
          <th>Name</th>
          <th>Kind</th>
          <th>Broker</th>
          <th className="num">Subscribers</th>
          <th className="num">Depth</th>
          <th className="num">DLQ</th>
        </tr>
      </thead>
      <tbody>
        {topics.map((t) => (
          <tr key={`${t.kind}/${t.name}`} className={t.name === selected ? 'selected' : undefined}>
            <td>
              <Link className="mono" to={pathOf('queues', t.name)}>
                {t.name}
              </Link>
            </td>
            <td>
              <Badge tone={t.kind === 'queue' ? 'info' : t.kind === 'topic' ? 'accent' : 'muted'}>{t.kind}</Badge>
            </td>
            <td>{t.broker_type}</td>
            <td className="num">{t.kind === 'queue' ? '—' : t.subscriber_count}</td>
            <td className="num">{t.depth}</td>
            <td className="num">{t.dlq_depth ? <Link to={`${pathOf('queues', t.name)}/dlq`} className="text-error">{t.dlq_depth}</Link> : 0}</td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

function Stat({ label, value, alert = false }: { label: string; value: number | string; alert?: boolean }) {
  return (
    <div className={`stat${alert ? ' alert' : ''}`}>
      <div className="muted small">{label}</div>
      <div className="value">{value}</div>
    </div>
  )
}

/** Figures, settings and subscribers of one queue or topic, with the form that fits its kind. */
function QueueDetail({ name }: { name: string }) {
  const stats = useCall<TopicStats>('engine::queue::topic_stats', { topic: name }, { pollMs: 1000 })
  const s = stats.data
  return (
    <Panel title={<>{name} {s ? <Badge tone="muted">{s.kind}</Badge> : null}</>}>
      <ErrorBox error={stats.error} />
      {s ? (
        <>
          <div className="stats">
            <Stat label="Depth" value={s.depth} />
            <Stat label="Delayed" value={s.delayed} />
            <Stat label="In flight" value={s.in_flight} />
            <Stat label="DLQ" value={s.dlq_depth} alert={s.dlq_depth > 0} />
            <Stat label="Consumers" value={s.consumer_count} />
            <Stat label="Delivered" value={s.delivered} />
            <Stat label="Failed" value={s.failed} alert={s.failed > 0} />
          </div>
          <div className="grid-2 align-start">
            <div>
              {s.subscribers?.length ? (
                <>
                  <h3>Subscribers</h3>
                  <table className="table">
                    <thead>
                      <tr>
                        <th>Function</th>
                        <th>Queue</th>
                        <th>Online</th>
                        <th className="num">Depth</th>
                        <th className="num">In flight</th>
                        <th className="num">DLQ</th>
                      </tr>
                    </thead>
                    <tbody>
                      {s.subscribers.map((sub) => (
                        <tr key={sub.queue}>
                          <td className="mono">{sub.function_id}</td>
                          <td className="mono small">
                            <Link to={pathOf('queues', sub.queue)}>{sub.queue}</Link>
                          </td>
                          <td>
                            <StatusBadge status={sub.online ? 'online' : 'offline'} />
                          </td>
                          <td className="num">{sub.depth}</td>
                          <td className="num">{sub.in_flight}</td>
                          <td className="num">{sub.dlq_depth}</td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </>
              ) : null}
              <h3>Settings</h3>
              {s.config ? <JsonView value={s.config} maxHeight={240} /> : <Empty>Default settings.</Empty>}
            </div>
            <div>{s.kind === 'queue' ? <EnqueueForm queue={name} /> : <PublishForm topic={s.kind === 'topic' ? name : name.split('::')[0]!} />}</div>
          </div>
        </>
      ) : null}
    </Panel>
  )
}

/** Publish and enqueue forms on the list view (any topic, any named queue). */
function PublishForms() {
  return (
    <div className="grid-2 align-start" style={{ marginTop: 16 }}>
      <Panel title="Publish to a topic">
        <PublishForm topic="" />
      </Panel>
      <Panel title="Enqueue to a named queue">
        <EnqueueForm queue="" />
      </Panel>
    </div>
  )
}

/** Durable publish (`svc::durable::publish {topic, data}` → `{subscriber_count}`). */
function PublishForm({ topic: initial }: { topic: string }) {
  const [topic, setTopic] = useState(initial)
  const [text, setText] = useState('{}')
  const parsed = parseJson(text)
  const [publish, state] = useAction(() => call<{ subscriber_count: number }>('svc::durable::publish', { topic, data: parsed.ok ? parsed.value : null }))
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        void publish()
      }}
    >
      <h3>Publish</h3>
      <div className="form-grid">
        <label htmlFor={`pub-topic-${initial}`}>Topic</label>
        <input id={`pub-topic-${initial}`} value={topic} onChange={(e) => setTopic(e.target.value)} required />
      </div>
      <JsonEditor label="Data" value={text} onChange={setText} rows={5} />
      <button type="submit" className="primary" disabled={!topic || !parsed.ok || state.busy}>
        Publish
      </button>
      <ErrorBox error={state.error} />
      {state.result ? <p className="text-ok">Published to {state.result.subscriber_count} subscriber queues{state.result.subscriber_count === 0 ? ' (kept in the topic’s dead letters: no subscribers)' : ''}.</p> : null}
    </form>
  )
}

/**
 * Enqueue to a named queue. The console cannot send an invocation with the Enqueue action through
 * `/api/invoke`, so it calls the queue worker's provider function `engine::queue::enqueue` with a
 * receipt id of its own (builtins.md §7.4, steps 2–3) — the same stored message.
 */
function EnqueueForm({ queue: initial }: { queue: string }) {
  const [queue, setQueue] = useState(initial)
  const [functionId, setFunctionId] = useState('')
  const [namespace, setNamespace] = useState('default')
  const [text, setText] = useState('{}')
  const parsed = parseJson(text)
  const [enqueue, state] = useAction(() =>
    call<{ messageReceiptId: string }>('engine::queue::enqueue', {
      queue,
      function_id: functionId,
      data: parsed.ok ? parsed.value : null,
      messageReceiptId: crypto.randomUUID(),
      ...(namespace && namespace !== 'default' ? { namespace } : {}),
    }),
  )
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault()
        void enqueue()
      }}
    >
      <h3>Enqueue</h3>
      <div className="form-grid">
        <label htmlFor={`enq-queue-${initial}`}>Queue</label>
        <input id={`enq-queue-${initial}`} value={queue} onChange={(e) => setQueue(e.target.value)} required />
        <label htmlFor={`enq-fn-${initial}`}>Function</label>
        <input id={`enq-fn-${initial}`} className="mono" value={functionId} placeholder="billing::charge" onChange={(e) => setFunctionId(e.target.value)} required />
        <label htmlFor={`enq-ns-${initial}`}>Namespace</label>
        <input id={`enq-ns-${initial}`} value={namespace} onChange={(e) => setNamespace(e.target.value)} />
      </div>
      <JsonEditor label="Payload" value={text} onChange={setText} rows={5} />
      <button type="submit" className="primary" disabled={!queue || !functionId || !parsed.ok || state.busy}>
        Enqueue
      </button>
      <ErrorBox error={state.error} />
      {state.result ? <p className="text-ok">Enqueued, receipt <code>{state.result.messageReceiptId}</code>.</p> : null}
    </form>
  )
}

/** Dead-lettered messages of one queue (newest failure first) with redrive and discard. */
function DeadLetters({ queue }: { queue: string }) {
  const [limit, setLimit] = useState(50)
  const messages = useCall<DlqMessage[]>('engine::queue::dlq_messages', { topic: queue, limit }, { pollMs: 1000 })
  const [open, setOpen] = useState<string | null>(null)
  const [act, action] = useAction(async (fn: string, payload: Record<string, unknown>) => {
    const result = await call<Record<string, unknown>>(fn, payload)
    messages.reload()
    return result
  })
  const list = messages.data ?? []
  return (
    <Panel
      title={`Dead letters of ${queue}`}
      actions={
        <button
          type="button"
          disabled={list.length === 0 || action.busy}
          onClick={() => {
            if (window.confirm(`Redrive every dead letter of ${queue}?`)) void act('svc::queue::redrive', { queue })
          }}
        >
          Redrive all
        </button>
      }
    >
      <ErrorBox error={messages.error} />
      <ErrorBox error={action.error} title="Action failed" />
      {action.result ? <p className="text-ok small">Done: {preview(action.result)}</p> : null}
      {list.length === 0 && messages.data ? <Empty>No dead letters in {queue}.</Empty> : null}
      {list.length ? (
        <div className="scroll-x">
        <table className="table">
          <thead>
            <tr>
              <th>Id</th>
              <th>Failed at</th>
              <th className="num">Attempts</th>
              <th>Error</th>
              <th>Payload</th>
              <th>
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((m) => (
              <Fragment key={m.id}>
                <tr>
                  <td className="mono small nowrap">
                    <button type="button" className="icon" aria-expanded={open === m.id} aria-label="Show the message" onClick={() => setOpen(open === m.id ? null : m.id)}>
                      {open === m.id ? '▾' : '▸'}
                    </button>
                    {m.id.slice(0, 8)}
                  </td>
                  <td className="small">{formatTime(m.failed_at)}</td>
                  <td className="num">{m.attempts}</td>
                  <td className="small">
                    {m.error ? (
                      <>
                        <code className="text-error">{m.error.code}</code> {m.error.message}
                      </>
                    ) : (
                      '—'
                    )}
                  </td>
                  <td>
                    <span className="mono small ellipsis block" style={{ maxWidth: 220 }} title={preview(m.payload, 400)}>
                      {preview(m.payload, 60)}
                    </span>
                  </td>
                  <td className="nowrap">
                    <button type="button" className="small" disabled={action.busy} onClick={() => void act('svc::queue::redrive_message', { queue, message_id: m.id })}>
                      Redrive
                    </button>{' '}
                    <button
                      type="button"
                      className="small danger"
                      disabled={action.busy}
                      onClick={() => {
                        if (window.confirm(`Discard message ${m.id}? It cannot be recovered.`)) void act('svc::queue::discard_message', { queue, message_id: m.id })
                      }}
                    >
                      Discard
                    </button>
                  </td>
                </tr>
                {open === m.id ? (
                  <tr className="expanded">
                    <td colSpan={6}>
                      <p className="small">
                        Function <code>{m.function_id}</code> in {m.namespace}; queue <code>{m.queue}</code>; enqueued {formatTime(m.enqueued_at)}; {m.retries} retries; {formatBytes(m.size_bytes)}
                      </p>
                      <div className="grid-2 align-start">
                        <JsonView value={m.payload} maxHeight={260} />
                        <div>
                          <h3>Re-run {m.function_id} now</h3>
                          <RerunPanel functionId={m.function_id} namespace={m.namespace} payloadJson={JSON.stringify(m.payload ?? null)} />
                        </div>
                      </div>
                    </td>
                  </tr>
                ) : null}
              </Fragment>
            ))}
          </tbody>
        </table>
        </div>
      ) : null}
      {list.length >= limit ? (
        <button type="button" onClick={() => setLimit((l) => Math.min(l + 50, 1000))}>
          Show more
        </button>
      ) : null}
    </Panel>
  )
}

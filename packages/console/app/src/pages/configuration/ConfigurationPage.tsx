/**
 * Configuration (cli.md §7.2): every settings entry with its description; its value expanded or
 * raw; an editor validated against the entry's schema before saving, and the violations of a
 * refused save. Reads `configuration::list`, `configuration::get {id, raw?}`,
 * `configuration::schema`; writes `configuration::set` (builtins.md §11.2); live `configuration`.
 */
import { useEffect, useMemo, useState } from 'react'
import { ApiError, call } from '../../api/client.ts'
import { useAction, useCall } from '../../api/hooks.ts'
import type { ConfigurationEntry, JsonSchema } from '../../api/types.ts'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { SETTINGS_SCHEMA_OPTIONS, settingsSchemaCompiler, type SettingsValidator } from 'svc-protocol/settings-schema'
import { Link, pathOf, setQuery, useLocation } from '../../router/router.tsx'
import { Crumb, Empty, ErrorBox, PageHeader, Panel, Tabs, Updated } from '../../components/ui.tsx'
import { JsonEditor, JsonView, parseJson } from '../../components/json.tsx'

/** The configuration worker's own schema contract (svc-protocol/settings-schema) over Ajv bundled for the browser: the page shows the engine's messages before saving. */
const compileSettingsSchema = settingsSchemaCompiler(new Ajv2020({ ...SETTINGS_SCHEMA_OPTIONS }))

/** Splits a `SCHEMA_INVALID` message into its `<pointer>: <problem>` violations. */
export function violationsOf(error: ApiError | undefined): string[] {
  if (!error || error.code !== 'SCHEMA_INVALID') return []
  const list = (error.body as { violations?: unknown }).violations
  if (Array.isArray(list)) return list.map(String)
  const text = error.message.replace(/^[^:]*?invalid[^:]*:\s*/i, '')
  return text.split(/;\s*|\n/).map((s) => s.trim()).filter(Boolean)
}

/** `/configuration`, `/configuration/:id` (query `view=raw`). */
export function ConfigurationPage({ id }: { id?: string }) {
  const list = useCall<{ configurations: ConfigurationEntry[] }>('configuration::list', {}, { live: ['configuration'] })
  return (
    <>
      <PageHeader
        title={
          id ? (
            <>
              <Crumb to="/configuration">Configuration</Crumb>
              <span className="mono">{id}</span>
            </>
          ) : (
            'Configuration'
          )
        }
        subtitle={
          <>
            Settings of the built-in workers and of workers that register entries. <Updated at={list.updatedAt} />
          </>
        }
      />
      <ErrorBox error={list.error} title="Could not list settings" />
      <div className="columns">
        <nav aria-label="Settings entries">
          {list.data?.configurations.length ? (
            <ul className="list">
              {list.data.configurations.map((c) => (
                <li key={c.id}>
                  <Link to={pathOf('configuration', c.id)} className={c.id === id ? 'active' : undefined} title={c.description}>
                    <span>
                      <span className="mono">{c.id}</span>
                      <br />
                      <span className="muted small">{c.name}</span>
                    </span>
                  </Link>
                </li>
              ))}
            </ul>
          ) : list.data ? (
            <Empty>No settings entries.</Empty>
          ) : null}
        </nav>
        <div>
          {id ? (
            <EntryView key={id} id={id} entry={list.data?.configurations.find((c) => c.id === id)} />
          ) : list.data ? (
            <table className="table">
              <thead>
                <tr>
                  <th>Id</th>
                  <th>Name</th>
                  <th>Description</th>
                </tr>
              </thead>
              <tbody>
                {list.data.configurations.map((c) => (
                  <tr key={c.id}>
                    <td>
                      <Link className="mono" to={pathOf('configuration', c.id)}>
                        {c.id}
                      </Link>
                    </td>
                    <td>{c.name}</td>
                    <td className="muted">{c.description}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : null}
        </div>
      </div>
    </>
  )
}

function EntryView({ id, entry }: { id: string; entry: ConfigurationEntry | undefined }) {
  const { query } = useLocation()
  const view = query.get('view') === 'raw' ? 'raw' : query.get('view') === 'schema' ? 'schema' : 'value'
  const expanded = useCall<{ id: string; value: unknown }>('configuration::get', { id }, { live: ['configuration'] })
  const raw = useCall<{ id: string; value: unknown }>('configuration::get', { id, raw: true }, { live: ['configuration'] })
  const schema = useCall<{ schema: JsonSchema }>('configuration::schema', { id }, { live: ['configuration'] })
  const [editing, setEditing] = useState(false)
  return (
    <>
      <Panel title={entry?.name ?? id} actions={<button type="button" onClick={() => setEditing(!editing)}>{editing ? 'Close editor' : 'Edit'}</button>}>
        {entry?.description ? <p>{entry.description}</p> : null}
        <Tabs
          label="Value view"
          tabs={[
            { key: 'value', label: 'Value (expanded)' },
            { key: 'raw', label: 'Raw' },
            { key: 'schema', label: 'Schema' },
          ]}
          active={view}
          onSelect={(key) => setQuery({ view: key === 'value' ? undefined : key })}
        />
        {view === 'value' ? (
          <>
            <ErrorBox error={expanded.error} title="Could not expand the value" />
            {expanded.data ? <JsonView value={expanded.data.value} maxHeight={480} /> : null}
          </>
        ) : view === 'raw' ? (
          <>
            <ErrorBox error={raw.error} />
            {raw.data ? <JsonView value={raw.data.value} maxHeight={480} /> : null}
          </>
        ) : (
          <>
            <ErrorBox error={schema.error} />
            {schema.data ? <JsonView value={schema.data.schema} maxHeight={480} /> : null}
          </>
        )}
      </Panel>
      {editing && raw.data ? <Editor id={id} rawValue={raw.data.value} schema={schema.data?.schema ?? entry?.schema} onSaved={() => { raw.reload(); expanded.reload() }} /> : null}
    </>
  )
}

/** Editor of the raw value; validated against the schema as you type, saved with `configuration::set`. */
function Editor({ id, rawValue, schema, onSaved }: { id: string; rawValue: unknown; schema: JsonSchema | undefined; onSaved: () => void }) {
  const [text, setText] = useState(() => JSON.stringify(rawValue, null, 2))
  const [base, setBase] = useState(rawValue)
  const changedElsewhere = JSON.stringify(base) !== JSON.stringify(rawValue)
  const parsed = parseJson(text)
  // The engine's own validator (Ajv, the same messages as SCHEMA_INVALID), on the raw value: a
  // placeholder stands for the number or boolean it expands to. The engine validates again on save.
  const check = useMemo<SettingsValidator | undefined>(() => {
    try {
      return schema === undefined ? undefined : compileSettingsSchema(schema, { acceptPlaceholders: true })
    } catch {
      return undefined
    }
  }, [schema])
  const violations = parsed.ok && check !== undefined ? check(parsed.value) : []
  const [save, state] = useAction(async () => {
    const result = await call('configuration::set', { id, value: parsed.ok ? parsed.value : null })
    onSaved()
    return result ?? true
  })
  useEffect(() => {
    if (state.result) setBase(rawValue)
  }, [state.result, rawValue])
  const serverViolations = violationsOf(state.error)
  return (
    <Panel title="Edit value">
      <p className="muted small">Placeholders such as <code>{'${PORT:3111}'}</code> are kept as written and expanded when the value is read.</p>
      {changedElsewhere ? (
        <div className="error-box" role="status">
          The stored value changed since you opened the editor.{' '}
          <button type="button" className="small" onClick={() => { setText(JSON.stringify(rawValue, null, 2)); setBase(rawValue) }}>
            Load it
          </button>
        </div>
      ) : null}
      <JsonEditor label={`Value of ${id}`} value={text} onChange={setText} rows={12} errors={violations} onSubmit={() => { if (parsed.ok && violations.length === 0) void save() }} />
      <div className="row">
        <button type="button" className="primary" disabled={!parsed.ok || violations.length > 0 || state.busy} onClick={() => void save()}>
          {state.busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" onClick={() => setText(JSON.stringify(rawValue, null, 2))}>
          Revert
        </button>
        {violations.length ? <span className="text-error small">{violations.length} schema violations</span> : parsed.ok ? <span className="text-ok small">valid against the schema</span> : null}
      </div>
      {state.error ? (
        <div className="error-box" role="alert">
          <strong>Save refused:</strong> <code>{state.error.code}</code> {serverViolations.length ? null : state.error.message}
          {serverViolations.length ? (
            <ul className="violations">
              {serverViolations.map((v, i) => (
                <li key={i}>{v}</li>
              ))}
            </ul>
          ) : null}
        </div>
      ) : null}
      {state.result ? <p className="text-ok">Saved.</p> : null}
    </Panel>
  )
}

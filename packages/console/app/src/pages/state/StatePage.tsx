/**
 * State (cli.md §7.2): scopes, then a paged key list with values, then a JSON editor; add, edit and
 * delete (which fire state triggers); changes made elsewhere appear live through the `state`
 * channel. Reads `state::list_groups`, `state::list_entries`, `state::get`; writes `state::set`,
 * `state::delete` (builtins.md §4.2).
 */
import { useEffect, useRef, useState } from 'react'
import { call } from '../../api/client.ts'
import { useAction, useCall } from '../../api/hooks.ts'
import { useLive } from '../../live/hooks.ts'
import { preview } from '../../format/format.ts'
import { Link, navigate, pathOf, setQuery, useLocation } from '../../router/router.tsx'
import { Crumb, Empty, ErrorBox, PageHeader, Panel, Updated } from '../../components/ui.tsx'
import { JsonEditor, parseJson } from '../../components/json.tsx'

const PAGE = 50

/** `/state`, `/state/:scope` (query `page`, `prefix`), `/state/:scope/:key`; `?new=1` opens the add form. */
export function StatePage({ scope, entryKey }: { scope?: string; entryKey?: string }) {
  const { query } = useLocation()
  const page = Math.max(0, Number(query.get('page') ?? 0) || 0)
  const prefix = query.get('prefix') ?? ''
  const groups = useCall<{ groups: string[] }>('state::list_groups', {}, { live: ['state'] })
  const entries = useCall<{ entries: { key: string; value: unknown }[]; total: number; offset: number; limit: number }>(
    'state::list_entries',
    { scope, offset: page * PAGE, limit: PAGE, ...(prefix ? { prefix } : {}) },
    { enabled: Boolean(scope), live: ['state'] },
  )
  const adding = query.get('new') === '1'
  const scopePath = (s: string) => pathOf('state', s)
  return (
    <>
      <PageHeader
        title={
          scope ? (
            <>
              <Crumb to="/state">State</Crumb>
              <span className="mono">{scope}</span>
              {entryKey ? (
                <>
                  {' '}
                  / <span className="mono">{entryKey}</span>
                </>
              ) : null}
            </>
          ) : (
            'State'
          )
        }
        subtitle={
          <>
            Key–value state by scope; changes made elsewhere appear live. <Updated at={groups.updatedAt} />
          </>
        }
        actions={
          <button type="button" onClick={() => navigate(`${scope ? scopePath(scope) : '/state'}?new=1`)}>
            Add key
          </button>
        }
      />
      <ErrorBox error={groups.error} title="Could not list scopes" />
      <div className="columns-3">
        <nav aria-label="Scopes">
          <h3>Scopes ({groups.data?.groups.length ?? 0})</h3>
          {groups.data?.groups.length ? (
            <ul className="list">
              {groups.data.groups.map((g) => (
                <li key={g}>
                  <Link to={scopePath(g)} className={g === scope ? 'active' : undefined}>
                    <span className="mono ellipsis">{g}</span>
                  </Link>
                </li>
              ))}
            </ul>
          ) : groups.data ? (
            <Empty>No scopes hold keys yet.</Empty>
          ) : null}
        </nav>
        <div>
          <h3>Keys {entries.data ? `(${entries.data.total})` : ''}</h3>
          {scope ? (
            <>
              <input type="search" aria-label="Key prefix" placeholder="key prefix" value={prefix} onChange={(e) => setQuery({ prefix: e.target.value, page: undefined })} style={{ width: '100%', marginBottom: 6 }} />
              <ErrorBox error={entries.error} />
              {entries.data?.entries.length ? (
                <ul className="list" aria-label="Keys">
                  {entries.data.entries.map((e) => (
                    <li key={e.key}>
                      <Link to={`${scopePath(scope)}/${encodeURIComponent(e.key)}`} className={e.key === entryKey ? 'active' : undefined}>
                        <span className="mono">{e.key}</span>
                        <span className="muted small ellipsis" style={{ maxWidth: 110 }}>
                          {preview(e.value, 40)}
                        </span>
                      </Link>
                    </li>
                  ))}
                </ul>
              ) : entries.data ? (
                <Empty>No keys{prefix ? ` starting with ${prefix}` : ''}.</Empty>
              ) : null}
              {entries.data && entries.data.total > PAGE ? (
                <div className="row small">
                  <button type="button" className="small" disabled={page === 0} onClick={() => setQuery({ page: page > 1 ? String(page - 1) : undefined })}>
                    Previous
                  </button>
                  <span>
                    {page * PAGE + 1}–{Math.min((page + 1) * PAGE, entries.data.total)} of {entries.data.total}
                  </span>
                  <button type="button" className="small" disabled={(page + 1) * PAGE >= entries.data.total} onClick={() => setQuery({ page: String(page + 1) })}>
                    Next
                  </button>
                </div>
              ) : null}
            </>
          ) : (
            <Empty>Select a scope.</Empty>
          )}
        </div>
        <div>
          {adding ? (
            <AddEntry scope={scope ?? ''} />
          ) : scope && entryKey ? (
            <EntryEditor key={`${scope}/${entryKey}`} scope={scope} entryKey={entryKey} onDeleted={() => navigate(scopePath(scope))} />
          ) : (
            <Empty>Select a key to see and edit its value, or add one.</Empty>
          )}
        </div>
      </div>
    </>
  )
}

/** Form for a new key (or a replacement of an existing one) in any scope. */
function AddEntry({ scope: initialScope }: { scope: string }) {
  const [scope, setScope] = useState(initialScope)
  const [key, setKey] = useState('')
  const [text, setText] = useState('{}')
  const parsed = parseJson(text)
  const [save, state] = useAction(() => call('state::set', { scope, key, value: parsed.ok ? parsed.value : null }))
  return (
    <Panel title="Add key">
      <form
        onSubmit={async (e) => {
          e.preventDefault()
          if ((await save()) !== undefined) navigate(`${pathOf('state', scope)}/${encodeURIComponent(key)}`)
        }}
      >
        <div className="form-grid">
          <label htmlFor="state-scope">Scope</label>
          <input id="state-scope" value={scope} onChange={(e) => setScope(e.target.value)} required />
          <label htmlFor="state-key">Key</label>
          <input id="state-key" value={key} onChange={(e) => setKey(e.target.value)} required />
        </div>
        <JsonEditor label="Value" value={text} onChange={setText} rows={10} />
        <div className="row">
          <button type="submit" className="primary" disabled={!scope || !key || !parsed.ok || state.busy}>
            Save
          </button>
          <button type="button" onClick={() => setQuery({ new: undefined })}>
            Cancel
          </button>
        </div>
        <ErrorBox error={state.error} title="Save failed" />
      </form>
    </Panel>
  )
}

/** Value of one key in a JSON editor; a change made elsewhere replaces the text unless it was edited here. */
function EntryEditor({ scope, entryKey, onDeleted }: { scope: string; entryKey: string; onDeleted: () => void }) {
  const value = useCall<unknown>('state::get', { scope, key: entryKey })
  const [text, setText] = useState<string | null>(null)
  const [changedElsewhere, setChangedElsewhere] = useState(false)
  const loaded = value.updatedAt > 0
  const stored = value.data === undefined ? '' : JSON.stringify(value.data, null, 2)
  const dirty = text !== null && text !== stored
  // The text being saved, from before the write until a read returns it: the editor keeps showing
  // it (not the old value), and the state push of our own write (its new_value is this text; it
  // may arrive before the call's answer) is not taken for a change made elsewhere.
  const saving = useRef<string | null>(null)
  useEffect(() => {
    if (saving.current !== null && saving.current === stored) saving.current = null
    if (!dirty) setText(null)
  }, [stored])
  useLive(['state'], (data) => {
    const event = data as { scope?: string; key?: string; new_value?: unknown } | undefined
    if (event?.scope !== scope || event.key !== entryKey) return
    const ours = saving.current !== null && JSON.stringify(event.new_value ?? null, null, 2) === saving.current
    if (dirty && !ours && saving.current === null) setChangedElsewhere(true)
    else value.reload()
  })
  const parsed = parseJson(text ?? stored)
  const [save, saveState] = useAction(async () => {
    const next = parsed.ok ? parsed.value : null
    saving.current = JSON.stringify(next, null, 2)
    try {
      const result = await call('state::set', { scope, key: entryKey, value: next })
      setText(saving.current)
      setChangedElsewhere(false)
      value.reload()
      return result
    } catch (error) {
      saving.current = null
      throw error
    }
  })
  const [remove, removing] = useAction(async () => {
    await call('state::delete', { scope, key: entryKey })
    onDeleted()
    return true
  })
  return (
    <Panel title={<span className="mono">{entryKey}</span>} actions={<Updated at={value.updatedAt} />}>
      <ErrorBox error={value.error} />
      {loaded && value.data === undefined && !value.error ? <p className="muted">This key does not exist (any more). Saving creates it.</p> : null}
      {changedElsewhere ? (
        <div className="error-box" role="status">
          The value was changed elsewhere.{' '}
          <button
            type="button"
            className="small"
            onClick={() => {
              setText(null)
              setChangedElsewhere(false)
              value.reload()
            }}
          >
            Load the new value
          </button>
        </div>
      ) : null}
      <JsonEditor label="Value" value={text ?? stored} onChange={setText} rows={16} onSubmit={() => void save()} />
      <div className="row">
        <button type="button" className="primary" disabled={!parsed.ok || saveState.busy || (!dirty && loaded && value.data !== undefined)} onClick={() => void save()}>
          Save
        </button>
        <button type="button" disabled={!dirty} onClick={() => setText(null)}>
          Revert
        </button>
        <button
          type="button"
          className="danger"
          disabled={removing.busy || value.data === undefined}
          onClick={() => {
            if (window.confirm(`Delete ${scope} / ${entryKey}?`)) void remove()
          }}
        >
          Delete
        </button>
      </div>
      <ErrorBox error={saveState.error} title="Save failed" />
      <ErrorBox error={removing.error} title="Delete failed" />
    </Panel>
  )
}

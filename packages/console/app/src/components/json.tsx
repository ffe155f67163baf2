/** JSON display and editing: a read-only pretty view and a validating textarea editor. */
import { useId, useMemo, type ChangeEvent, type KeyboardEvent } from 'react'

/** Pretty-printed JSON in a scrollable block; `undefined` shows "no value". */
export function JsonView({ value, maxHeight }: { value: unknown; maxHeight?: number }) {
  const text = useMemo(() => (value === undefined ? '' : JSON.stringify(value, null, 2)), [value])
  if (value === undefined) return <p className="empty">no value</p>
  return (
    <pre className="json" style={maxHeight ? { maxHeight } : undefined} tabIndex={0}>
      {text}
    </pre>
  )
}

/** Result of parsing an editor's text. */
export type ParsedJson = { ok: true; value: unknown } | { ok: false; message: string }

/** Parses editor text; an empty text is an error unless `allowEmpty` (then `undefined`). */
export function parseJson(text: string, allowEmpty = false): ParsedJson {
  if (text.trim() === '') return allowEmpty ? { ok: true, value: undefined } : { ok: false, message: 'Enter a JSON value' }
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch (error) {
    return { ok: false, message: (error as Error).message }
  }
}

/**
 * A JSON text editor: a monospace textarea that shows parse errors as you type (plus any `errors`
 * given, such as schema violations), indents with Tab, and has a Format button.
 */
export function JsonEditor({ label, value, onChange, rows = 10, errors, allowEmpty = false, onSubmit }: { label: string; value: string; onChange: (text: string) => void; rows?: number; errors?: string[]; allowEmpty?: boolean; onSubmit?: () => void }) {
  const id = useId()
  const parsed = parseJson(value, allowEmpty)
  const problems = parsed.ok ? (errors ?? []) : [`Invalid JSON: ${parsed.message}`]
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && onSubmit) {
      event.preventDefault()
      onSubmit()
    }
  }
  return (
    <div className="json-editor">
      <div className="json-editor-head">
        <label htmlFor={id}>{label}</label>
        <button type="button" className="small" disabled={!parsed.ok || parsed.value === undefined} onClick={() => parsed.ok && onChange(JSON.stringify(parsed.value, null, 2))}>
          Format
        </button>
      </div>
      <textarea
        id={id}
        className={problems.length ? 'invalid' : undefined}
        value={value}
        rows={rows}
        spellCheck={false}
        aria-invalid={problems.length > 0}
        aria-describedby={problems.length ? `${id}-errors` : undefined}
        onKeyDown={onKeyDown}
        onChange={(e: ChangeEvent<HTMLTextAreaElement>) => onChange(e.target.value)}
      />
      {problems.length ? (
        <ul id={`${id}-errors`} className="violations">
          {problems.map((p, i) => (
            <li key={i}>{p}</li>
          ))}
        </ul>
      ) : null}
      {onSubmit ? <p className="muted small">Ctrl+Enter to submit</p> : null}
    </div>
  )
}

/** Small shared building blocks: badges, tabs, errors, empty states, key–value lists, timers. */
import { useEffect, useState, type ReactNode } from 'react'
import type { ApiError } from '../api/client.ts'
import { severityName } from '../format/format.ts'
import { Link } from '../router/router.tsx'

/** A coloured label; `tone` picks the colour (`ok`, `warn`, `error`, `info`, `muted`). */
export function Badge({ tone = 'muted', children, title }: { tone?: 'ok' | 'warn' | 'error' | 'info' | 'muted' | 'accent'; children: ReactNode; title?: string }) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  )
}

/** Badge of a log severity number (builtins.md §12.4). */
export function SeverityBadge({ n, text }: { n: number; text?: string }) {
  const name = severityName(n)
  const tone = n >= 17 ? 'error' : n >= 13 ? 'warn' : n >= 9 ? 'info' : 'muted'
  return <Badge tone={tone}>{text && text.toUpperCase() !== name ? text : name}</Badge>
}

/** Badge of a status word (`active`, `ok`, `error`, `failed`, `pending`, `connected`…). */
export function StatusBadge({ status }: { status: string | null | undefined }) {
  const s = status ?? 'unknown'
  const tone = ['active', 'ok', 'connected', 'available', 'online'].includes(s) ? 'ok' : ['error', 'failed', 'offline'].includes(s) ? 'error' : s === 'pending' ? 'warn' : 'muted'
  return <Badge tone={tone}>{s}</Badge>
}

/** The message of a failed call, with its code. */
export function ErrorBox({ error, title }: { error: ApiError | { code: string; message: string } | undefined | null; title?: string }) {
  if (!error) return null
  return (
    <div className="error-box" role="alert">
      {title ? <strong>{title}: </strong> : null}
      <code>{error.code}</code> {error.message}
    </div>
  )
}

/** A muted line for empty lists and loading states. */
export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>
}

/** A page heading with optional actions on the right. */
export function PageHeader({ title, subtitle, actions }: { title: ReactNode; subtitle?: ReactNode; actions?: ReactNode }) {
  return (
    <header className="page-header">
      <div>
        <h1>{title}</h1>
        {subtitle ? <p className="subtitle">{subtitle}</p> : null}
      </div>
      {actions ? <div className="actions">{actions}</div> : null}
    </header>
  )
}

/** The parent of a detail page in its title: a link back to the list, then ` / `. */
export function Crumb({ to, children }: { to: string; children: ReactNode }) {
  return (
    <>
      <Link to={to} className="crumb">
        {children}
      </Link>{' '}
      /{' '}
    </>
  )
}

/** Tabs as a row of buttons; the active one has `aria-selected`. */
export function Tabs<K extends string>({ tabs, active, onSelect, label }: { tabs: { key: K; label: ReactNode }[]; active: K; onSelect: (key: K) => void; label: string }) {
  return (
    <div className="tabs" role="tablist" aria-label={label}>
      {tabs.map((tab) => (
        <button key={tab.key} type="button" role="tab" aria-selected={tab.key === active} className={tab.key === active ? 'tab active' : 'tab'} onClick={() => onSelect(tab.key)}>
          {tab.label}
        </button>
      ))}
    </div>
  )
}

/** A definition list of label → value rows. */
export function Fields({ rows }: { rows: [ReactNode, ReactNode][] }) {
  return (
    <dl className="fields">
      {rows.map(([label, value], i) => (
        <div key={i} className="field">
          <dt>{label}</dt>
          <dd>{value === null || value === undefined || value === '' ? '—' : value}</dd>
        </div>
      ))}
    </dl>
  )
}

/** A bordered section with a title. */
export function Panel({ title, actions, children, className }: { title?: ReactNode; actions?: ReactNode; children: ReactNode; className?: string }) {
  return (
    <section className={`panel ${className ?? ''}`}>
      {title || actions ? (
        <div className="panel-head">
          {title ? <h2>{title}</h2> : <span />}
          {actions ? <div className="actions">{actions}</div> : null}
        </div>
      ) : null}
      {children}
    </section>
  )
}

/** Current time in ms, re-rendering every `everyMs` (for "connected for" and similar). */
export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now())
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), everyMs)
    return () => clearInterval(id)
  }, [everyMs])
  return now
}

/** "updated 3 s ago" style note of the last read. */
export function Updated({ at }: { at: number }) {
  const now = useNow(1000)
  if (!at) return null
  const s = Math.max(0, Math.round((now - at) / 1000))
  return <span className="muted small">updated {s < 2 ? 'just now' : `${s} s ago`}</span>
}

/**
 * History routing (the backend falls back to `index.html` for unknown paths, cli.md §7): every page
 * and detail has its own URL, filters live in the query string, so any view can be linked to.
 */
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent, type ReactNode } from 'react'

const NAVIGATE = 'svc:navigate'

function subscribe(notify: () => void): () => void {
  window.addEventListener('popstate', notify)
  window.addEventListener(NAVIGATE, notify)
  return () => {
    window.removeEventListener('popstate', notify)
    window.removeEventListener(NAVIGATE, notify)
  }
}

/** The current path (still percent-encoded; {@link matchPath} decodes segments) and query; re-renders on navigation. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const href = useSyncExternalStore(subscribe, () => window.location.pathname + window.location.search)
  const url = new URL(href, window.location.origin)
  return { path: url.pathname, query: url.searchParams }
}

/** Goes to `to` (a path with an optional query); `replace` keeps the history length (filters). */
export function navigate(to: string, options: { replace?: boolean } = {}): void {
  if (to === window.location.pathname + window.location.search) return
  if (options.replace) window.history.replaceState(null, '', to)
  else window.history.pushState(null, '', to)
  window.dispatchEvent(new Event(NAVIGATE))
}

/** Replaces the query keys given (an empty or undefined value removes the key). */
export function setQuery(values: Record<string, string | undefined | null>, options: { replace?: boolean } = { replace: true }): void {
  const params = new URLSearchParams(window.location.search)
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === null || v === '') params.delete(k)
    else params.set(k, v)
  }
  const search = params.toString()
  navigate(window.location.pathname + (search ? `?${search}` : ''), options)
}

/** Builds a path from segments, encoding each (ids hold `::`, `/` and spaces). */
export function pathOf(...segments: (string | number)[]): string {
  return '/' + segments.map((s) => encodeURIComponent(String(s))).join('/')
}

/** A path with a query string built from the defined values. */
export function withQuery(path: string, values: Record<string, string | number | boolean | undefined | null>): string {
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(values)) if (v !== undefined && v !== null && v !== '' && v !== false) params.set(k, String(v))
  const search = params.toString()
  return search ? `${path}?${search}` : path
}

/**
 * Matches `path` against a pattern such as `/functions/:id`; returns the decoded params or null.
 * A trailing `*` param (`/state/:scope/:key*`) takes the rest of the path.
 */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean)
  const have = path.split('/').filter(Boolean)
  const params: Record<string, string> = {}
  for (let i = 0; i < want.length; i++) {
    const part = want[i]!
    if (part.startsWith(':') && part.endsWith('*')) {
      if (i >= have.length) return null
      params[part.slice(1, -1)] = have.slice(i).map(decodeSegment).join('/')
      return params
    }
    if (i >= have.length) return null
    if (part.startsWith(':')) params[part.slice(1)] = decodeSegment(have[i]!)
    else if (part !== have[i]) return null
  }
  return want.length === have.length ? params : null
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** An in-app link: a real `<a href>` (keyboard, middle-click and copy work) that navigates without reloading. */
export function Link({ to, children, onClick, ...rest }: { to: string; children: ReactNode } & Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'>) {
  const handle = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event)
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    navigate(to)
  }
  return (
    <a href={to} onClick={handle} {...rest}>
      {children}
    </a>
  )
}

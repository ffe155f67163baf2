/**
 * Data hooks of the pages: read a function's result, refresh it from live pushes or by polling, and
 * keep the last data while the connection is down (cli.md §7.1, §7.2 last paragraph).
 */
import { useCallback, useEffect, useRef, useState } from 'react'
import { useConnectionState, useLive } from '../live/hooks.ts'
import { ApiError, call, getMicrovms } from './client.ts'
import type { LiveChannel } from './types.ts'

/** State of a {@link useCall}: `data` is the last successful result, kept across later errors. */
export interface CallState<T> {
  data: T | undefined
  error: ApiError | undefined
  loading: boolean
  /** When `data` was last read (ms since epoch), 0 before the first result. */
  updatedAt: number
  reload: () => void
}

export interface CallOptions {
  /** Reload (coalesced over 250 ms) on every push of these channels. */
  live?: LiveChannel[]
  /** Re-read every `pollMs` while the tab is visible (traces and queues: 1000, cli.md §7.1). */
  pollMs?: number
  /** Skip the call (for example until a selection exists). Default true. */
  enabled?: boolean
}

/** Is the tab visible? Re-renders on change; polling stops while hidden. */
export function useVisible(): boolean {
  const [visible, setVisible] = useState(() => document.visibilityState === 'visible')
  useEffect(() => {
    const onChange = () => setVisible(document.visibilityState === 'visible')
    document.addEventListener('visibilitychange', onChange)
    return () => document.removeEventListener('visibilitychange', onChange)
  }, [])
  return visible
}

/**
 * Invokes `functionId` with `payload` when mounted and whenever the payload's JSON changes, and
 * again on live pushes, polls and reconnection.
 *
 * @example const { data } = useCall<{ workers: WorkerSummary[] }>('engine::workers::list', {}, { live: ['workers'] })
 */
export function useCall<T>(functionId: string, payload: unknown, options: CallOptions = {}): CallState<T> {
  const enabled = options.enabled ?? true
  const key = JSON.stringify(payload ?? {})
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | undefined; loading: boolean; updatedAt: number; key: string }>(
    { data: undefined, error: undefined, loading: enabled, updatedAt: 0, key: '' },
  )
  const generation = useRef(0)
  const inFlight = useRef(false)

  const load = useCallback(() => {
    if (!enabled) return
    const mine = ++generation.current
    inFlight.current = true
    setState((s) => ({ ...s, loading: true }))
    // The page's own reads record no traces, so the Traces page shows the user's traffic only.
    call<T>(functionId, JSON.parse(key), { trace: false }).then(
      (data) => {
        if (mine !== generation.current) return
        inFlight.current = false
        setState({ data, error: undefined, loading: false, updatedAt: Date.now(), key })
      },
      (error: unknown) => {
        if (mine !== generation.current) return
        inFlight.current = false
        const apiError = error instanceof ApiError ? error : new ApiError({ code: 'UNKNOWN', message: String(error) })
        // Keep the last data of the same request; a different request starts empty.
        setState((s) => ({ data: s.key === key ? s.data : undefined, error: apiError, loading: false, updatedAt: s.key === key ? s.updatedAt : 0, key }))
      },
    )
  }, [functionId, key, enabled])

  useEffect(() => {
    if (!enabled) {
      generation.current++
      setState({ data: undefined, error: undefined, loading: false, updatedAt: 0, key: '' })
      return
    }
    load()
  }, [load, enabled])

  // Live pushes: coalesce bursts into one reload.
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined)
  useEffect(() => () => clearTimeout(timer.current), [])
  useLive(
    options.live ?? [],
    () => {
      if (timer.current !== undefined) return
      timer.current = setTimeout(() => {
        timer.current = undefined
        load()
      }, 250)
    },
    enabled,
  )

  // Polling while visible; a poll is skipped while the previous read is still running.
  const visible = useVisible()
  const connection = useConnectionState()
  useEffect(() => {
    if (!enabled || !options.pollMs || !visible || connection === 'backend-down' || connection === 'unauthorized') return
    const id = setInterval(() => {
      if (!inFlight.current) load()
    }, options.pollMs)
    return () => clearInterval(id)
  }, [enabled, options.pollMs, visible, load, connection])

  // Resume when the connection returns.
  const previous = useRef(connection)
  useEffect(() => {
    if (previous.current !== 'connected' && connection === 'connected' && previous.current !== 'connecting') load()
    previous.current = connection
  }, [connection, load])

  const stale = state.key !== key && state.key !== ''
  return { data: stale ? undefined : state.data, error: stale ? undefined : state.error, loading: state.loading || stale, updatedAt: state.updatedAt, reload: load }
}

/**
 * Runs a write (`action`) with busy and error state, for buttons and forms.
 * @returns `[run, {busy, error, result}]`; `run` resolves with the action's value or `undefined` when it failed.
 */
export function useAction<A extends unknown[], R>(action: (...args: A) => Promise<R>): [(...args: A) => Promise<R | undefined>, { busy: boolean; error: ApiError | undefined; result: R | undefined; clear: () => void }] {
  const [state, setState] = useState<{ busy: boolean; error: ApiError | undefined; result: R | undefined }>({ busy: false, error: undefined, result: undefined })
  const latest = useRef(action)
  latest.current = action
  const run = useCallback(async (...args: A) => {
    setState({ busy: true, error: undefined, result: undefined })
    try {
      const result = await latest.current(...args)
      setState({ busy: false, error: undefined, result })
      return result
    } catch (error) {
      setState({ busy: false, error: error instanceof ApiError ? error : new ApiError({ code: 'UNKNOWN', message: String(error) }), result: undefined })
      return undefined
    }
  }, [])
  const clear = useCallback(() => setState({ busy: false, error: undefined, result: undefined }), [])
  return [run, { ...state, clear }]
}

/**
 * The host RSS of each worker's microVM by worker name, bytes (`GET /api/microvms`, cli.md §5.7),
 * read on mount, whenever `refreshKey` changes and every 5 s while the tab is visible. Empty when
 * no worker runs in a microVM or the backend cannot say.
 */
export function useMicrovmRss(refreshKey?: unknown): ReadonlyMap<string, number> {
  const [rss, setRss] = useState<ReadonlyMap<string, number>>(() => new Map())
  const visible = useVisible()
  useEffect(() => {
    if (!visible) return
    let current = true
    const load = () =>
      getMicrovms()
        .then((r) => current && setRss(new Map((r.workers ?? []).map((w) => [w.name, w.vm_rss_bytes]))))
        .catch(() => {})
    void load()
    const timer = setInterval(load, 5000)
    return () => {
      current = false
      clearInterval(timer)
    }
  }, [visible, refreshKey])
  return rss
}

/** React bindings of the live connection (cli.md §7.1). */
import { useEffect, useRef, useSyncExternalStore } from 'react'
import type { LiveChannel } from '../api/types.ts'
import { live, type ConnectionState } from './connection.ts'

/** The current {@link ConnectionState}; re-renders on change. */
export function useConnectionState(): ConnectionState {
  return useSyncExternalStore(
    (notify) => live.onState(notify),
    () => live.state,
  )
}

/**
 * Calls `handler(data)` for every push on each of `channels` while the component is mounted (or
 * while `enabled`). The latest `handler` is always used, so it may close over fresh state.
 */
export function useLive(channels: LiveChannel[], handler: (data: unknown, channel: LiveChannel) => void, enabled = true): void {
  const latest = useRef(handler)
  latest.current = handler
  const key = channels.join(',')
  useEffect(() => {
    if (!enabled || key === '') return
    const offs = (key.split(',') as LiveChannel[]).map((channel) => live.subscribe(channel, (data) => latest.current(data, channel)))
    return () => offs.forEach((off) => off())
  }, [key, enabled])
}

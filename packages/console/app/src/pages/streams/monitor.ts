/**
 * A stream monitor connection: joins one stream group over `/ws/streams` (the backend relays it to
 * the stream listener, builtins.md §6.6) and reports every frame it receives.
 */
import { jsonParse } from 'svc-protocol/json'

/** A frame received from the stream listener, with when it arrived and its size in bytes. */
export interface MonitorEvent {
  receivedAt: number
  size: number
  frame: { type?: string; timestamp?: number; streamName?: string; groupId?: string; id?: string | null; event?: { type?: string; data?: unknown; event?: { type?: string; data?: unknown } }; subscriptionId?: string }
}

/** The event type shown in the monitor: `create`, `update`, `delete`, `sync`, or `event:<send type>`. */
export function eventType(frame: MonitorEvent['frame']): string {
  const type = frame.event?.type ?? frame.type ?? 'unknown'
  return type === 'event' && frame.event?.event?.type ? `event:${frame.event.event.type}` : type
}

/**
 * Opens the socket, joins `{streamName, groupId}` and calls `onEvent` per frame. `onStatus` says
 * `open` once the join is confirmed (the listener's `sync` frame, builtins.md §6.6: from then on no
 * change of the group is missed), `closed` when the socket closes. Returns a function that leaves
 * and closes.
 */
export function openMonitor(streamName: string, groupId: string, onEvent: (event: MonitorEvent) => void, onStatus: (status: 'connecting' | 'open' | 'closed') => void): () => void {
  const { protocol, host } = window.location
  const socket = new WebSocket(`${protocol === 'https:' ? 'wss:' : 'ws:'}//${host}/ws/streams`)
  const subscriptionId = `console-${crypto.randomUUID()}`
  let closedByUs = false
  onStatus('connecting')
  let joined = false
  socket.onopen = () => {
    socket.send(JSON.stringify({ type: 'join', data: { subscriptionId, streamName, groupId } }))
  }
  socket.onmessage = (message) => {
    const text = typeof message.data === 'string' ? message.data : ''
    if (!text) return
    let frame: MonitorEvent['frame']
    try {
      frame = jsonParse(text) as MonitorEvent['frame']
    } catch {
      return // Not JSON: not a stream frame.
    }
    if (!joined && eventType(frame) === 'sync') {
      joined = true
      onStatus('open')
    }
    onEvent({ receivedAt: Date.now(), size: new TextEncoder().encode(text).length, frame })
  }
  socket.onclose = () => {
    if (!closedByUs) onStatus('closed')
  }
  return () => {
    closedByUs = true
    if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify({ type: 'leave', data: { subscriptionId, streamName, groupId } }))
    socket.close()
  }
}

/**
 * `GET /api/live` (cli.md §7.1): pushes `{channel, data}` frames to the browser. A client chooses
 * its channels with `{subscribe: [channels]}` (and `{unsubscribe: [channels]}`); it receives
 * nothing before that. Subscribing to `connection` pushes the current connection state at once.
 */
import type { WebSocket } from 'ws'
import { jsonParse } from 'svc-protocol/json'
import { LIVE_CHANNELS, type LiveChannel } from './types.ts'

/** Unsent bytes a client may hold before it is dropped as too slow (close 1013). */
export const LIVE_MAX_BUFFERED_BYTES = 4 * 1024 * 1024
/** Largest frame a client may send, bytes (ws closes with 1009 beyond it). */
export const LIVE_MAX_INBOUND_BYTES = 64 * 1024
/** Subscription frames a client may send per second before it is dropped (close 1008). */
const MAX_CLIENT_FRAMES_PER_SECOND = 100

const CHANNELS = new Set<string>(LIVE_CHANNELS)

interface Client {
  socket: WebSocket
  channels: Set<LiveChannel>
  windowStart: number
  framesInWindow: number
}

/** The `/api/live` clients and their subscriptions. */
export class LiveHub {
  readonly #clients = new Set<Client>()
  readonly #current: (channel: LiveChannel) => unknown

  /** `current` gives the value pushed on subscription for channels that have one (`connection`). */
  constructor(current: (channel: LiveChannel) => unknown) {
    this.#current = current
  }

  get size(): number {
    return this.#clients.size
  }

  /** Takes over an upgraded socket. */
  add(socket: WebSocket): void {
    const client: Client = { socket, channels: new Set(), windowStart: Date.now(), framesInWindow: 0 }
    this.#clients.add(client)
    socket.on('message', (data, isBinary) => this.#onFrame(client, data as Buffer, isBinary))
    socket.on('close', () => this.#clients.delete(client))
    socket.on('error', () => {
      this.#clients.delete(client)
      socket.terminate()
    })
  }

  /** Sends `{channel, data}` to every client subscribed to `channel`; drops clients that fall behind. */
  publish(channel: LiveChannel, data: unknown): void {
    let text: string | undefined
    for (const client of this.#clients) {
      if (!client.channels.has(channel)) continue
      text ??= JSON.stringify({ channel, data })
      this.#send(client, text)
    }
  }

  /** Closes every client with 1001 (going away). */
  closeAll(): void {
    for (const client of this.#clients) client.socket.close(1001, 'console shutting down')
    this.#clients.clear()
  }

  #send(client: Client, text: string): void {
    if (client.socket.readyState !== client.socket.OPEN) return
    if (client.socket.bufferedAmount + text.length > LIVE_MAX_BUFFERED_BYTES) {
      // A browser tab that stopped reading must not hold the server's memory.
      this.#clients.delete(client)
      client.socket.close(1013, 'too slow: live updates were dropped; reconnect')
      setTimeout(() => client.socket.terminate(), 1000).unref()
      return
    }
    client.socket.send(text)
  }

  #reply(client: Client, code: string, message: string): void {
    this.#send(client, JSON.stringify({ error: { code, message } }))
  }

  #onFrame(client: Client, data: Buffer, isBinary: boolean): void {
    const now = Date.now()
    if (now - client.windowStart >= 1000) {
      client.windowStart = now
      client.framesInWindow = 0
    }
    if (++client.framesInWindow > MAX_CLIENT_FRAMES_PER_SECOND) {
      this.#clients.delete(client)
      client.socket.close(1008, 'too many frames')
      return
    }
    if (isBinary) return this.#reply(client, 'INVALID_REQUEST', 'binary frames are not accepted; send {"subscribe": [channels]} as text')
    let frame: unknown
    try {
      frame = jsonParse(data.toString('utf8'))
    } catch {
      return this.#reply(client, 'INVALID_BODY', 'frame is not JSON; send {"subscribe": [channels]}')
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame)) {
      return this.#reply(client, 'INVALID_REQUEST', 'frame must be an object such as {"subscribe": ["logs"]}')
    }
    const { subscribe, unsubscribe } = frame as { subscribe?: unknown; unsubscribe?: unknown }
    if (subscribe === undefined && unsubscribe === undefined) {
      return this.#reply(client, 'INVALID_REQUEST', 'frame needs subscribe or unsubscribe: a list of channels')
    }
    const added = this.#channels(client, subscribe, 'subscribe')
    const removed = this.#channels(client, unsubscribe, 'unsubscribe')
    if (added === undefined || removed === undefined) return
    for (const channel of removed) client.channels.delete(channel)
    for (const channel of added) {
      const fresh = !client.channels.has(channel)
      client.channels.add(channel)
      if (fresh && channel === 'connection') this.#send(client, JSON.stringify({ channel, data: this.#current(channel) }))
    }
  }

  /** The channels of a subscribe/unsubscribe list, or undefined after replying with the problem. */
  #channels(client: Client, list: unknown, field: string): LiveChannel[] | undefined {
    if (list === undefined) return []
    if (!Array.isArray(list) || list.length > 64) {
      this.#reply(client, 'INVALID_REQUEST', `${field} must be a list of channels: ${LIVE_CHANNELS.join(', ')}`)
      return undefined
    }
    const unknown = list.find((c) => typeof c !== 'string' || !CHANNELS.has(c))
    if (unknown !== undefined) {
      this.#reply(client, 'INVALID_REQUEST', `unknown channel ${JSON.stringify(unknown)?.slice(0, 80)}; channels: ${LIVE_CHANNELS.join(', ')}`)
      return undefined
    }
    return list as LiveChannel[]
  }
}

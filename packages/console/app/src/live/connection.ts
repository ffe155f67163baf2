/**
 * The live connection (cli.md §7.1): one reconnecting WebSocket to `/api/live`. The server pushes
 * `{channel, data}`; the client sends `{subscribe: [channels]}` whenever the set of channels its
 * pages listen to changes (the whole set each time, `connection` always included).
 *
 * Connection state combines the socket (is the backend reachable?) and the backend's own link to
 * the engine (the `connection` channel and `connected` of `/api/info`). Pages keep their last data
 * while it is not `connected` and reload when it returns.
 */
import { jsonParse } from 'svc-protocol/json'
import { getInfo } from '../api/client.ts'
import type { LiveChannel } from '../api/types.ts'

/**
 * `connecting`: first attempt; `connected`: backend and engine up; `engine-down`: backend up, engine
 * not; `backend-down`: socket closed; `unauthorized`: the backend wants its access token (the
 * browser has no valid cookie: the page was not opened from the address `svc console` printed).
 */
export type ConnectionState = 'connecting' | 'connected' | 'engine-down' | 'backend-down' | 'unauthorized'

type Handler = (data: unknown) => void

const RETRY_MIN_MS = 500
const RETRY_MAX_MS = 10_000

/** A reconnecting `/api/live` client; use the shared {@link live} instance. */
export class LiveConnection {
  #socket: WebSocket | null = null
  #handlers = new Map<LiveChannel, Set<Handler>>()
  #stateListeners = new Set<(state: ConnectionState) => void>()
  #state: ConnectionState = 'connecting'
  #socketOpen = false
  #engineConnected: boolean | null = null
  #unauthorized = false
  #retryMs = RETRY_MIN_MS
  #retryTimer: ReturnType<typeof setTimeout> | undefined
  #started = false
  readonly #url: string

  constructor(url: string) {
    this.#url = url
  }

  /** Current state; see {@link ConnectionState}. */
  get state(): ConnectionState {
    return this.#state
  }

  /** Opens the socket (idempotent); called on first subscription. */
  start(): void {
    if (this.#started) return
    this.#started = true
    this.#open()
  }

  /** Calls `handler` with the `data` of every push on `channel`; returns the unsubscribe function. */
  subscribe(channel: LiveChannel, handler: Handler): () => void {
    this.start()
    let set = this.#handlers.get(channel)
    const isNew = !set
    if (!set) this.#handlers.set(channel, (set = new Set()))
    set.add(handler)
    if (isNew) this.#sendSubscriptions()
    return () => {
      set.delete(handler)
      if (set.size === 0 && this.#handlers.get(channel) === set) {
        this.#handlers.delete(channel)
        this.#sendSubscriptions()
      }
    }
  }

  /** Calls `listener` on every state change; returns the removal function. */
  onState(listener: (state: ConnectionState) => void): () => void {
    this.start()
    this.#stateListeners.add(listener)
    return () => this.#stateListeners.delete(listener)
  }

  #open(): void {
    let socket: WebSocket
    try {
      socket = new WebSocket(this.#url)
    } catch {
      this.#scheduleRetry()
      return
    }
    this.#socket = socket
    socket.onopen = () => {
      this.#socketOpen = true
      this.#unauthorized = false
      this.#retryMs = RETRY_MIN_MS
      this.#sendSubscriptions()
      // The connection channel pushes on change only; ask once for the current engine link.
      getInfo().then(
        (info) => {
          if (this.#socket === socket) this.#setEngine(info.connected)
        },
        () => {},
      )
      this.#update()
    }
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return
      let message: { channel?: LiveChannel; data?: unknown }
      try {
        message = jsonParse(event.data) as typeof message
      } catch {
        return
      }
      if (!message || typeof message.channel !== 'string') return
      if (message.channel === 'connection') {
        const data = message.data as { connected?: unknown } | boolean | undefined
        const connected = typeof data === 'boolean' ? data : data?.connected
        if (typeof connected === 'boolean') this.#setEngine(connected)
      }
      for (const handler of this.#handlers.get(message.channel) ?? []) {
        try {
          handler(message.data)
        } catch (error) {
          console.error(`live handler for ${message.channel} failed`, error)
        }
      }
    }
    socket.onclose = () => {
      if (this.#socket !== socket) return
      const opened = this.#socketOpen
      this.#socket = null
      this.#socketOpen = false
      this.#update()
      this.#scheduleRetry()
      // A WebSocket refusal does not tell its status; the API does (401 CONSOLE_TOKEN_REQUIRED).
      if (!opened) {
        getInfo().then(
          () => this.#setUnauthorized(false),
          (error: unknown) => this.#setUnauthorized((error as { code?: unknown }).code === 'CONSOLE_TOKEN_REQUIRED'),
        )
      }
    }
    socket.onerror = () => socket.close()
  }

  #scheduleRetry(): void {
    clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => this.#open(), this.#retryMs)
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS)
  }

  #setUnauthorized(value: boolean): void {
    this.#unauthorized = value
    this.#update()
  }

  #setEngine(connected: boolean): void {
    this.#engineConnected = connected
    this.#update()
  }

  #sendSubscriptions(): void {
    if (!this.#socket || this.#socket.readyState !== WebSocket.OPEN) return
    const channels = new Set<LiveChannel>(this.#handlers.keys())
    channels.add('connection')
    this.#socket.send(JSON.stringify({ subscribe: [...channels] }))
  }

  #update(): void {
    const next: ConnectionState = !this.#socketOpen
      ? this.#unauthorized
        ? 'unauthorized'
        : this.#state === 'connecting' && this.#retryMs === RETRY_MIN_MS
        ? 'connecting'
        : 'backend-down'
      : this.#engineConnected === false
        ? 'engine-down'
        : 'connected'
    if (next === this.#state) return
    this.#state = next
    for (const listener of this.#stateListeners) listener(next)
  }
}

function liveUrl(): string {
  const { protocol, host } = window.location
  return `${protocol === 'https:' ? 'wss:' : 'ws:'}//${host}/api/live`
}

/** The app's one live connection. */
export const live = new LiveConnection(liveUrl())

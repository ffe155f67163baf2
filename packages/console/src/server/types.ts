/**
 * Shapes of the console backend (cli.md §7.1): options of {@link startConsole}, the running server,
 * and the frames of the `/api/live` WebSocket.
 */

/** Where the backend reports what happens to it; every method gets one line of text. */
export interface ConsoleLog {
  info(message: string): void
  warn(message: string): void
  error(message: string): void
}

/** Transport timeouts of the console's HTTP server, ms; defaults `CONSOLE_SERVER_TIMEOUTS`. */
export interface ConsoleTimeouts {
  /** Time to receive a complete request head. */
  headersTimeoutMs: number
  /** Time to receive a complete request, head and body; at least `headersTimeoutMs`. */
  requestTimeoutMs: number
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number
}

export interface ConsoleOptions {
  /** TCP port of the console, 0 for an ephemeral one; default 3113 (cli.md §4.8). */
  port?: number
  /**
   * Interface to bind; default `127.0.0.1`. Its name is served besides `localhost`, `127.0.0.1`
   * and `[::1]`; with a wildcard (`0.0.0.0`, `::`) the machine's interface addresses are.
   */
  host?: string
  /**
   * Further host names (or addresses) requests may name in `Host`, without port; any case. For a
   * console reached as `http://devbox:3113`, pass `['devbox']`. Default none.
   */
  allowedHosts?: readonly string[]
  /**
   * The access token the API and WebSockets require: undefined (default) draws a random one, a
   * string (16 to 512 of `A-Z a-z 0-9 . _ ~ -`) is used as given, `false` turns the check off so
   * that anyone who can name an allowed host can use the console.
   */
  token?: string | false
  /** Transport timeouts; tests shorten them. */
  timeouts?: Partial<ConsoleTimeouts>
  /** `ws://…` of the engine's worker listener; default `ws://127.0.0.1:49134`. */
  engineUrl?: string
  /** Default: silent. */
  log?: ConsoleLog
  /** Reported as `version` by `GET /api/info`; default the svc-console package version. */
  version?: string
  /**
   * Folder of the built single-page app (`index.html` plus assets); default
   * `packages/console/dist/app`. When it has no `index.html` a plain page says the app was not built.
   */
  appDir?: string
  /** Reconnection backoff towards the engine, ms; default 1000 doubling to 30000 (cli.md §4.8). */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number }
  /**
   * The project's workers that run in a microVM and their VM's host RSS (cli.md §5.7), read when
   * `GET /api/microvms` asks; `svc console` reads the supervisor's state files, as
   * `svc worker list` does. Default: none.
   */
  microvms?: () => ConsoleMicrovm[]
}

/** One worker in a microVM, as `GET /api/microvms` lists it. */
export interface ConsoleMicrovm {
  /** The worker's name (config.yaml entry). */
  name: string
  /** Host RSS of QEMU and its virtiofs daemons, bytes (0 while it boots). */
  vm_rss_bytes: number
}

/** A console server that is listening. */
export interface RunningConsole {
  /** `http://<host>:<port>` actually bound (a literal IPv6 host in brackets). */
  url: string
  /** The access token; undefined when turned off. */
  token: string | undefined
  /** The address to open in a browser: `<url>/?token=<token>`, or `url` without a token. */
  openUrl: string
  /** The bound port (useful with `port: 0`). */
  port: number
  /** True while the `svc-console` worker is connected to the engine. */
  readonly connected: boolean
  /** Closes every client socket, the HTTP server and the engine connection. Idempotent. */
  close(): Promise<void>
}

/**
 * Channels of `GET /api/live` (cli.md §7.1). `traces` is the console's addition: `{trace_ids}` of
 * traces that gained spans (the `trace` trigger, batched over 300 ms), so the Traces page shows a
 * new request's trace within a second instead of up to a poll interval plus a read later.
 */
export const LIVE_CHANNELS = ['workers', 'functions', 'logs', 'state', 'configuration', 'traces', 'connection'] as const
export type LiveChannel = (typeof LIVE_CHANNELS)[number]

/**
 * `data` of a `connection` push: the engine connection changed state. `state` is the SDK's
 * connection state (`connecting`, `connected`, `reconnecting`, `disconnected`, `failed`).
 */
export interface ConnectionData {
  connected: boolean
  state: string
  engine_url: string
  /** The last connection error, when there was one (e.g. `ECONNREFUSED`). */
  error?: string
}

/** A frame the server pushes on `/api/live`. */
export interface LiveFrame {
  channel: LiveChannel
  data: unknown
}

/** `GET /api/info` (cli.md §7.1). `http_url`/`stream_url` are null until known. */
export interface ConsoleInfo {
  version: string
  engine_url: string
  http_url: string | null
  stream_url: string | null
  connected: boolean
}

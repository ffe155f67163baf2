/**
 * The console's connection to the engine (cli.md §7.1): the `svc-console` worker in namespace
 * `default`, its internal functions and the triggers that feed `/api/live`.
 */
import { randomBytes } from 'node:crypto'
import { registerWorker } from 'svc-sdk'
import { runUnsampled, runWithTraceContext } from 'svc-sdk/internal'
import type { ConnectionState, InitOptions, SvcClient } from 'svc-sdk'
import type { ConnectionData, ConsoleLog, LiveChannel } from './types.ts'

/** A fresh W3C `traceparent` with the sampled flag off (protocol.md §10.1). */
function unsampledTraceparent(): string {
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`
}

/** Worker name and namespace of the console (cli.md §7.1). */
export const CONSOLE_WORKER_NAME = 'svc-console'
export const CONSOLE_NAMESPACE = 'default'

/** Trigger type, config and the internal function that receives it, per live channel. */
const FEEDS: { channel: LiveChannel; type: string; functionId: string; config: Record<string, unknown> }[] = [
  { channel: 'logs', type: 'log', functionId: 'svc-console::on-log', config: { level: 'all' } },
  { channel: 'state', type: 'state', functionId: 'svc-console::on-state', config: {} },
  { channel: 'configuration', type: 'configuration', functionId: 'svc-console::on-configuration', config: {} },
  { channel: 'functions', type: 'engine::functions-available', functionId: 'svc-console::on-functions', config: {} },
  { channel: 'workers', type: 'engine::workers-available', functionId: 'svc-console::on-workers', config: {} },
  { channel: 'traces', type: 'trace', functionId: 'svc-console::on-trace', config: {} },
]

/** Built-in workers whose `listen_urls` the console reports and uses. */
const HTTP_WORKER = 'svc-http'
const STREAM_WORKER = 'svc-stream'

export interface EngineLinkOptions {
  engineUrl: string
  log: ConsoleLog
  initialDelayMs: number
  maxDelayMs: number
  /** Called for every trigger delivery and connection change. */
  publish: (channel: LiveChannel, data: unknown) => void
}

/** Outcome of {@link EngineLink.invoke}; `error` is `{code, message, stacktrace?}`. */
export type InvokeOutcome =
  | { ok: true; result: unknown; duration_ms: number }
  | { ok: false; error: { code: string; message: string; stacktrace?: string }; duration_ms: number }

/** The trace context of a re-run (see {@link rerunContext}). */
export interface RerunContext {
  traceparent: string
  baggage?: string
  /** The new run's trace id. */
  trace_id: string
}

/**
 * The trace context of a re-run of the run in trace `rerunOf` (32 lower-case hex digits): a new
 * sampled trace whose first span's parent is a span id no one records (so the callee's span is the
 * trace's root), and W3C baggage `svc.rerun_of=<rerunOf>`, which SDK handler spans copy into their
 * attributes (protocol.md §10.1) and `engine::runs::list` reports as `rerun_of`; no baggage
 * without `rerunOf` (a dead letter's payload, which names no trace).
 * @example rerunContext('4bf92f3577b34da6a3ce929d0e0e4736').baggage // 'svc.rerun_of=4bf92f3577b34da6a3ce929d0e0e4736'
 */
export function rerunContext(rerunOf: string | undefined): RerunContext {
  const traceId = randomBytes(16).toString('hex')
  const context: RerunContext = { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, trace_id: traceId }
  if (rerunOf !== undefined) context.baggage = `svc.rerun_of=${rerunOf}`
  return context
}

/**
 * One long-lived SDK client that reconnects forever (initial delay doubling to the maximum, no
 * jitter so the schedule is the one cli.md §4.8 states). Registrations are re-sent by the SDK on
 * every reconnect.
 */
export class EngineLink {
  readonly engineUrl: string
  readonly #client: SvcClient
  readonly #log: ConsoleLog
  readonly #publish: EngineLinkOptions['publish']
  #state: ConnectionState = 'connecting'
  #httpUrl: string | null = null
  #streamUrl: string | null = null
  /** Resolves the listener addresses once per connection, again after worker/configuration changes. */
  #addresses: Promise<void> | undefined
  #closed = false

  /** @throws TypeError when `engineUrl` is not a `ws:`/`wss:` URL (from svc-sdk). */
  constructor(options: EngineLinkOptions) {
    this.engineUrl = options.engineUrl
    this.#log = options.log
    this.#publish = options.publish
    const init: InitOptions = {
      workerName: CONSOLE_WORKER_NAME,
      workerDescription: 'svc web console (svc console)',
      namespace: CONSOLE_NAMESPACE,
      reconnectionConfig: {
        initialDelayMs: options.initialDelayMs,
        maxDelayMs: options.maxDelayMs,
        backoffMultiplier: 2,
        jitterFactor: 0,
        maxRetries: -1,
      },
      // The console's own reads must not fill the trace store it displays.
      otel: { enabled: false },
      enableMetricsReporting: false,
    }
    this.#client = registerWorker(options.engineUrl, init)
    for (const feed of FEEDS) {
      this.#client.registerFunction(
        feed.functionId,
        (payload: unknown) => {
          if (feed.channel === 'workers' || feed.channel === 'configuration') this.#addresses = undefined
          this.#publish(feed.channel, payload)
          return null
        },
        { description: `Pushes ${feed.type} events to the console's live view`, metadata: { internal: true } },
      )
      this.#client.registerTrigger({ type: feed.type, function_id: feed.functionId, config: feed.config, metadata: { internal: true } })
    }
    this.#client.addConnectionStateListener((state) => this.#onState(state))
  }

  get connected(): boolean {
    return this.#state === 'connected'
  }

  /** The `connection` channel's current value. */
  connection(): ConnectionData {
    const data: ConnectionData = { connected: this.connected, state: this.#state, engine_url: this.engineUrl }
    const error = this.#client.getLastError()
    if (!this.connected && error !== undefined) data.error = reasonOf(error)
    return data
  }

  /** `listen_urls[0]` of svc-http and svc-stream (null when not running or not connected). */
  async addresses(): Promise<{ http_url: string | null; stream_url: string | null }> {
    if (this.connected) {
      this.#addresses ??= this.#resolveAddresses()
      await this.#addresses
    }
    return { http_url: this.#httpUrl, stream_url: this.#streamUrl }
  }

  /**
   * Invokes a function for `POST /api/invoke` (cli.md §7.1). Never rejects: a failure is
   * `{ok: false, error}`; `engine_unreachable` when the console is not connected.
   */
  async invoke(functionId: string, payload: unknown, namespace: string | undefined, timeoutMs: number | undefined, traced: boolean | RerunContext = true): Promise<InvokeOutcome> {
    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    if (!this.connected) {
      return {
        ok: false,
        error: { code: 'engine_unreachable', message: `The console is not connected to the engine at ${this.engineUrl}; it keeps retrying. Is svc running?` },
        duration_ms: 0,
      }
    }
    try {
      const request = {
        function_id: functionId,
        payload,
        ...(namespace !== undefined ? { namespace } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
      }
      // Untraced calls carry an unsampled traceparent, so the engine records no spans for them; a
      // re-run carries its own trace context (the new trace id, `svc.rerun_of` in baggage).
      const trigger = () => this.#client.trigger(request)
      const result = traced === true ? await trigger() : traced === false ? await runUnsampled(unsampledTraceparent(), trigger) : await runWithTraceContext(traced, trigger)
      return { ok: true, result: result === undefined ? null : result, duration_ms: elapsed() }
    } catch (err) {
      const e = err as { code?: unknown; detail?: unknown; message?: unknown; stacktrace?: unknown }
      const error: { code: string; message: string; stacktrace?: string } = {
        code: typeof e.code === 'string' ? e.code : 'internal_error',
        message: typeof e.detail === 'string' ? e.detail : String(e.message ?? err),
      }
      if (typeof e.stacktrace === 'string') error.stacktrace = e.stacktrace
      return { ok: false, error, duration_ms: elapsed() }
    }
  }

  /** Disconnects (close code 1000). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#client.shutdown()
  }

  #onState(state: ConnectionState): void {
    const was = this.connected
    this.#state = state
    if (this.#closed) return
    if (state === 'connected') {
      this.#addresses = undefined
      if (!was) this.#log.info(`connected to the engine at ${this.engineUrl}`)
    } else if (was) {
      this.#log.warn(`lost the engine at ${this.engineUrl}; retrying`)
    }
    this.#publish('connection', this.connection())
  }

  async #resolveAddresses(): Promise<void> {
    const [http, stream] = await Promise.all([this.#listenUrl(HTTP_WORKER), this.#listenUrl(STREAM_WORKER)])
    this.#httpUrl = http
    this.#streamUrl = stream
  }

  async #listenUrl(name: string): Promise<string | null> {
    try {
      const info = (await this.#client.trigger({ function_id: 'engine::workers::info', payload: { name }, timeoutMs: 5000 })) as {
        worker?: { listen_urls?: unknown }
      }
      const urls = info?.worker?.listen_urls
      return Array.isArray(urls) && typeof urls[0] === 'string' ? reachable(urls[0]) : null
    } catch {
      // Not running (NOT_FOUND) or the connection dropped; asked again on the next change.
      this.#addresses = undefined
      return null
    }
  }
}

/** A wildcard bind address (`0.0.0.0`, `[::]`) is reached on the loopback interface. */
function reachable(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.hostname === '0.0.0.0') parsed.hostname = '127.0.0.1'
    else if (parsed.hostname === '[::]') parsed.hostname = '[::1]'
    return parsed.toString().replace(/\/$/, '')
  } catch {
    return url
  }
}

/** `ECONNREFUSED` and the like, else the message. */
function reasonOf(error: Error): string {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') return code
  const inner = (error as { errors?: unknown[] }).errors?.[0]
  if (inner instanceof Error) return reasonOf(inner)
  return error.message
}

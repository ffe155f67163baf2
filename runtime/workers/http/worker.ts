/**
 * The built-in HTTP worker `svc-http` (builtins.md §3): serves functions as HTTP routes.
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts (parsed, validated and compiled
 * once per apply), ./triggers.ts (the `http` trigger type and its route table, ./router.ts), and
 * this file, the lifecycle: start, settings, the listener, stop. svc-http registers no functions
 * of its own; what a request goes through, up to its answer, is ./pipeline.ts (with ./request.ts,
 * ./response.ts and the channels of ./streaming.ts).
 */
import type { HttpRequest, HttpTriggerInfo } from 'svc-protocol/payloads/http'
import { Errors } from 'svc-protocol/errors'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { systemClock, type Clock } from '../shared/clock.ts'
import { ListeningServer, SERVER_TIMEOUTS, type ServerTimeouts } from '../shared/listening-server.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { RequestPipeline } from './pipeline.ts'
import { compileHttpSettings, HTTP_WORKER_NAME, parseHttpSettings, type CompiledHttpSettings, type HttpSettings } from './settings.ts'
import { HTTP_TRIGGER_TYPE, HttpTriggers } from './triggers.ts'

export { HTTP_WORKER_NAME } from './settings.ts'

/**
 * Transport timeouts of the listener, ms (the kit's {@link ServerTimeouts}). Not settings
 * (builtins.md §3.1 names none); the values are recorded in docs/decisions.md. Clients that exceed
 * them get `408` with the JSON error envelope and a closed connection; a routed request is bounded
 * by `default_timeout` as well.
 */
export type HttpServerTimeouts = ServerTimeouts

/** Defaults of {@link HttpServerTimeouts} (docs/decisions.md, HTTP worker). */
export const HTTP_SERVER_TIMEOUTS: Readonly<HttpServerTimeouts> = SERVER_TIMEOUTS

/** Construction options of {@link HttpWorker}; tests use them to shorten timeouts. */
export interface HttpWorkerOptions {
  timeouts?: Partial<HttpServerTimeouts>
  /** Default: the system clock. Drives `default_timeout` and the rebind grace period. */
  clock?: Clock
}

/** The request object and its `trigger` field (builtins.md §3.4) are defined in `svc-protocol`. */
export type { HttpRequest, HttpTriggerInfo }

/**
 * The `svc-http` built-in worker (builtins.md §3).
 *
 * Settings (§3.1) take effect only through {@link HttpWorker.applySettings}, which validates the
 * whole value first. A `host`/`port` change binds the new address before the old listener is
 * retired; if binding fails, the old listener keeps serving and the call throws.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new HttpWorker()] })
 * await engine.start()
 * engine.listenUrls('svc-http') // ['http://127.0.0.1:3111']
 */
export class HttpWorker implements BuiltinWorker {
  readonly name = HTTP_WORKER_NAME
  private context: BuiltinContext | null = null
  private pipeline: RequestPipeline | null = null
  private listener: ListeningServer | null = null
  private applier: SettingsApplier<CompiledHttpSettings> | null = null
  private stopped = false
  private readonly clock: Clock
  private readonly timeouts: Partial<HttpServerTimeouts>

  constructor(options: HttpWorkerOptions = {}) {
    this.clock = options.clock ?? systemClock
    this.timeouts = { ...options.timeouts }
  }

  /** Addresses the listener is bound to, e.g. `['http://127.0.0.1:3111']` (empty before start). */
  get listenUrls(): string[] {
    return this.listener?.urls ?? []
  }

  /**
   * `<key>: <problem>` of the last settings apply that failed, undefined once one succeeds
   * (builtins.md §2.7; shown as `last_config_error` by `engine::workers::info`).
   */
  get lastConfigError(): string | undefined {
    return this.applier?.lastConfigError
  }

  /** The effective settings (defaults applied); null before start. */
  get settings(): HttpSettings | null {
    return this.pipeline?.compiled?.settings ?? null
  }

  /**
   * Binds the listener with `settings` (the config.yaml seed, §2.7), then provides the trigger
   * type `http`. Throws when the settings are invalid or the address cannot be bound.
   */
  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.stopped = false
    const triggers = new HttpTriggers(context.worker)
    const pipeline = (this.pipeline = new RequestPipeline(context, triggers.router, this.clock))
    this.listener = new ListeningServer({
      name: HTTP_WORKER_NAME,
      log: context.log,
      clock: this.clock,
      createServer: (serverOptions) => pipeline.createServer(serverOptions),
      timeouts: this.timeouts,
      onListenUrls: (urls) => context.worker.setListenUrls(urls),
    })
    this.applier = createSettingsApplier<CompiledHttpSettings>({
      worker: HTTP_WORKER_NAME,
      log: context.log,
      parse: (value) => compileHttpSettings(parseHttpSettings(value)),
      apply: (next, previous) => this.apply(next, previous),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applySettings(settings)
    context.worker.registerTriggerType(HTTP_TRIGGER_TYPE, triggers)
  }

  /**
   * Validates and applies settings (builtins.md §3.1, §2.7); applies are serialised. Everything is
   * validated before anything changes. On a `host`/`port` change the new address is bound first,
   * the listen URLs are reported, then the old listener stops accepting and is closed after at most
   * 10 s of in-flight requests.
   *
   * @throws SvcError `INVALID_ARGUMENTS` naming the key; or the bind error (`EADDRINUSE`, …), in
   *   which case the previous settings and listener stay in effect.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier || this.stopped) throw Errors.internal('svc-http is not running')
    await this.applier.apply(settings)
  }

  /** Makes validated settings effective (called by the applier, one apply at a time). */
  private async apply(next: CompiledHttpSettings, previous: CompiledHttpSettings | undefined): Promise<void> {
    if (this.stopped) throw Errors.internal('svc-http is not running')
    const { host, port } = next.settings
    try {
      await this.listener!.listen(host, port)
    } catch (error) {
      throw withSettingsKey(error, previous && previous.settings.port === port ? 'host' : 'port')
    }
    const pipeline = this.pipeline!
    pipeline.compiled = next
    // A larger limit frees waiting requests at once.
    pipeline.drain()
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.pipeline?.stop()
    await this.listener?.stop()
  }
}

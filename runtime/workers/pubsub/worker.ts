/**
 * The built-in pub/sub worker `svc-pubsub` (builtins.md §8): best-effort fan-out of `publish`
 * to every `subscribe` trigger of the exact topic, on every worker.
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./functions.ts (`publish`),
 * ./triggers.ts (`subscribe`), and this file, the lifecycle: start, settings, adapters, stop.
 */
import { Errors } from 'svc-protocol/errors'
import {
  describePubSubAdapter,
  openPubSubAdapter,
  pubSubAdapterIdentity,
  type PubSubAdapter,
} from '../../adapters/pubsub/index.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import type { Clock } from '../shared/clock.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { parsePubSubSettings, type PubSubSettings } from './settings.ts'
import { registerPubSubFunctions } from './functions.ts'
import { SUBSCRIBE_TRIGGER_TYPE, SubscribeTriggers } from './triggers.ts'

export const PUBSUB_WORKER_NAME = 'svc-pubsub'

export interface PubSubWorkerOptions {
  /** Default: the system clock (measures delivery budgets, spaces drop warnings). */
  clock?: Clock
}

/**
 * `svc-pubsub`. Settings take effect only through {@link PubSubWorker.applySettings}; an adapter
 * change opens the new adapter and moves every subscription to it before the kit's
 * {@link AdapterSlots} retire the old one (closed once the publishes running on it are done), and
 * keeps the old one when that fails (§2.9).
 *
 * @example
 * const engine = new Engine(config, { builtins: [new PubSubWorker()] })
 * await engine.start()
 * await engine.inject({ function_id: 'publish', data: { topic: 'orders', data: { id: 1 } } })
 */
export class PubSubWorker implements BuiltinWorker {
  readonly name = PUBSUB_WORKER_NAME
  private readonly options: PubSubWorkerOptions
  private context: BuiltinContext | null = null
  private adapters: AdapterSlots<PubSubAdapter> | null = null
  private triggers: SubscribeTriggers | null = null
  private applier: SettingsApplier<PubSubSettings> | null = null

  constructor(options: PubSubWorkerOptions = {}) {
    this.options = options
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.adapters = new AdapterSlots<PubSubAdapter>(PUBSUB_WORKER_NAME, context.log)
    this.applier = createSettingsApplier<PubSubSettings>({
      worker: PUBSUB_WORKER_NAME,
      log: context.log,
      parse: parsePubSubSettings,
      apply: (next) => this.apply(next),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    this.triggers = new SubscribeTriggers({
      worker: context.worker,
      log: context.log,
      timeoutMs: context.internalInvocationTimeoutMs,
      ...(this.options.clock ? { clock: this.options.clock } : {}),
      ...(context.telemetry ? { telemetry: context.telemetry } : {}),
    })
    await this.applySettings(settings)
    registerPubSubFunctions(context.worker, this.adapters, PUBSUB_WORKER_NAME)
    context.worker.registerTriggerType(SUBSCRIBE_TRIGGER_TYPE, this.triggers)
  }

  /**
   * Validates and applies settings (§8), serialised with other applies.
   * @throws SvcError `INVALID_ARGUMENTS` for invalid settings, `ADAPTER_UNAVAILABLE` when the new
   *   adapter cannot be opened or subscribed; the previous settings stay in effect.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${PUBSUB_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.triggers?.stop()
    await this.adapters?.close()
  }

  private async apply(next: PubSubSettings): Promise<void> {
    const identity = pubSubAdapterIdentity(next.adapter)
    const adapters = this.adapters!
    if (adapters.identity === identity) return
    const triggers = this.triggers!
    let adapter: PubSubAdapter | undefined
    try {
      adapter = await openPubSubAdapter(next.adapter, {
        onMessage: (topic, data, origin) => triggers.deliver(topic, data, origin),
        log: this.context!.log,
      })
      await triggers.useAdapter(adapter)
    } catch (error) {
      await adapter?.close().catch(() => {})
      const message = `cannot open the ${next.adapter.name} pub/sub adapter: ${(error as Error).message}`
      throw withSettingsKey(Errors.adapterUnavailable(message, error), 'adapter')
    }
    // Messages the old adapter receives until it closes are delivered or lost, as §8 allows.
    adapters.install(adapter, identity)
    this.context!.log.info(`${PUBSUB_WORKER_NAME} uses the ${describePubSubAdapter(next.adapter)} adapter`)
  }
}

/**
 * The built-in state worker `svc-state` (builtins.md §4): a key-value store addressed by scope
 * and key, with the `state::*` functions and the `state` trigger type.
 *
 * The worker validates payloads and fans changes out to triggers (./triggers.ts); storage,
 * update operations (§5) and the `max_value_bytes` check happen in the adapter
 * (runtime/adapters/state/), so that a shared store applies them atomically where the data lives.
 * Change events come from the adapter's change feed rather than from the handlers, so that an
 * adapter shared by several engines (redis) reports writes made elsewhere too.
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./functions.ts (`state::*`),
 * ./triggers.ts (`state`), and this file, the lifecycle: start, settings, adapters, stop.
 */
import { describeStateAdapter, openStateAdapter, stateAdapterIdentity, type StateAdapter } from '../../adapters/state/index.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { Errors } from 'svc-protocol/errors'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { registerStateFunctions } from './functions.ts'
import { parseStateSettings, type StateSettings } from './settings.ts'
import { STATE_TRIGGER_TYPE, StateTriggers } from './triggers.ts'

export const STATE_WORKER_NAME = 'svc-state'

export { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from './functions.ts'

/**
 * `svc-state`. Settings (§4.1) take effect only through {@link StateWorker.applySettings}, which
 * validates the whole value first and either applies all of it or throws and keeps the previous
 * settings. An adapter change opens the new adapter first; operations already running finish on
 * the old one, which is closed once they have.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new StateWorker()] })
 * await engine.start()
 * await engine.inject({ function_id: 'state::set', data: { scope: 'users', key: 'u1', value: { name: 'Al' } } })
 */
export class StateWorker implements BuiltinWorker {
  readonly name = STATE_WORKER_NAME
  private context: BuiltinContext | null = null
  private settings: StateSettings | null = null
  private adapters: AdapterSlots<StateAdapter> | null = null
  private triggers: StateTriggers | null = null
  /** Applies run one after another and keep the previous settings on failure (§2.7). */
  private applier: SettingsApplier<StateSettings> | null = null

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.adapters = new AdapterSlots<StateAdapter>(STATE_WORKER_NAME, context.log)
    this.applier = createSettingsApplier<StateSettings>({
      worker: STATE_WORKER_NAME,
      log: context.log,
      parse: parseStateSettings,
      apply: (next) => this.apply(next),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    this.triggers = new StateTriggers({
      worker: context.worker,
      log: context.log,
      timeoutMs: context.internalInvocationTimeoutMs,
      ...(context.telemetry ? { telemetry: context.telemetry } : {}),
    })
    await this.applySettings(settings)
    registerStateFunctions(context.worker, { adapters: this.adapters, maxValueBytes: () => this.settings?.max_value_bytes ?? null })
    context.worker.registerTriggerType(STATE_TRIGGER_TYPE, this.triggers)
  }

  /**
   * Validates and applies settings (§4.1). Serialised with other applies.
   * @throws SvcError `INVALID_ARGUMENTS` for invalid settings, `STORAGE_ERROR` when the new
   *   adapter cannot be opened; in both cases the previous settings stay in effect. A `redis`
   *   adapter whose server is unreachable still opens (it logs a warning and answers
   *   `ADAPTER_UNAVAILABLE` until the server is back, builtins.md §13.4).
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${STATE_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.triggers?.stop()
    await this.adapters?.close()
  }

  private async apply(next: StateSettings): Promise<void> {
    const context = this.context!
    const adapterContext = { dataDir: context.dataDir, log: context.log }
    const identity = stateAdapterIdentity(next.adapter, adapterContext)

    if (this.adapters!.identity !== identity) {
      let adapter: StateAdapter
      try {
        // Opened before anything changes: on failure the old adapter stays in use (§2.9).
        adapter = await openStateAdapter(next.adapter, adapterContext)
      } catch (error) {
        throw withSettingsKey(Errors.storageError(`cannot open the ${next.adapter.name} state adapter: ${(error as Error).message}`, error), 'adapter')
      }
      const triggers = this.triggers!
      this.adapters!.install(adapter, identity, (opened) => opened.subscribe((change) => triggers.publish(change)))
      context.log.info(`${STATE_WORKER_NAME} uses the ${next.adapter.name} adapter`, {
        adapter: describeStateAdapter(next.adapter, adapterContext),
      })
    }
    this.triggers!.setEnabled(next.triggers_enabled)
    this.settings = next
  }

}

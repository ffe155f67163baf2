/**
 * The built-in cron worker `svc-cron` (builtins.md §9): the `cron` trigger type, schedules run
 * once per slot (./triggers.ts), last run slots kept in a slot store (runtime/adapters/cron/).
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts, ./triggers.ts (`cron`; it
 * serves no functions), and this file, the lifecycle: start, settings, stores, stop.
 */
import { Errors } from 'svc-protocol/errors'
import { cronAdapterIdentity, describeCronAdapter, openCronSlotStore, type CronSlotStore } from '../../adapters/cron/index.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { AdapterSlots } from '../shared/adapter-slots.ts'
import { systemClock, type Clock } from '../shared/clock.ts'
import { createSettingsApplier, withSettingsKey, type SettingsApplier } from '../shared/settings.ts'
import { CRON_TRIGGER_TYPE, CronScheduler } from './triggers.ts'
import { parseCronSettings, type CronSettings } from './settings.ts'

export const CRON_WORKER_NAME = 'svc-cron'

export interface CronWorkerOptions {
  /**
   * Timers (and run budgets) come from this clock; wall time is `epochMs + clock.now()`. Default:
   * the system clock with `Date.now()` as wall time. Tests pass a manual clock started at an epoch
   * time, e.g. `createManualClock(Date.parse('2025-01-01T00:00:00Z'))`.
   */
  clock?: Clock
  /** Added to an injected clock's reading to give epoch ms; default 0. Ignored without `clock`. */
  epochMs?: number
}

/**
 * `svc-cron`. Settings take effect only through {@link CronWorker.applySettings}: an adapter change
 * opens the new store first and keeps the old one when that fails (§2.9); the kit's
 * {@link AdapterSlots} close the old one once the runs that started on it are done; a `default_timezone`
 * change moves the triggers without a timezone of their own to the new zone's slots.
 *
 * @example
 * const engine = new Engine(config, { builtins: [new CronWorker()] })
 * await engine.start()
 * // a worker: client.registerTrigger({ type: 'cron', function_id: 'reports::daily', config: { expression: '0 0 2 * * *' } })
 */
export class CronWorker implements BuiltinWorker {
  readonly name = CRON_WORKER_NAME
  private readonly clock: Clock
  private readonly now: () => number
  private context: BuiltinContext | null = null
  private stores: AdapterSlots<CronSlotStore> | null = null
  private scheduler: CronScheduler | null = null
  private applier: SettingsApplier<CronSettings> | null = null

  constructor(options: CronWorkerOptions = {}) {
    const clock = options.clock
    this.clock = clock ?? systemClock
    const epoch = options.epochMs ?? 0
    this.now = clock ? () => epoch + clock.now() : () => Date.now()
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    this.stores = new AdapterSlots<CronSlotStore>(CRON_WORKER_NAME, context.log)
    this.applier = createSettingsApplier<CronSettings>({
      worker: CRON_WORKER_NAME,
      log: context.log,
      parse: parseCronSettings,
      apply: (next, previous) => this.apply(next, previous),
      onConfigError: (message) => context.worker.setLastConfigError(message),
    })
    await this.applySettings(settings)
    context.worker.registerTriggerType(CRON_TRIGGER_TYPE, this.scheduler!)
  }

  /**
   * Validates and applies settings (§9), serialised with other applies.
   * @throws SvcError `INVALID_ARGUMENTS` for invalid settings, `STORAGE_ERROR` when the new store
   *   cannot be opened; the previous settings stay in effect.
   */
  async applySettings(settings: unknown): Promise<void> {
    if (!this.applier) throw Errors.internal(`${CRON_WORKER_NAME}: applySettings before start`)
    await this.applier.apply(settings)
  }

  async stop(): Promise<void> {
    this.scheduler?.stop()
    await this.stores?.close()
  }

  private async apply(next: CronSettings, previous: CronSettings | undefined): Promise<void> {
    const context = this.context!
    const storeContext = { dataDir: context.dataDir }
    const identity = cronAdapterIdentity(next.adapter, storeContext)
    const stores = this.stores!
    let opened: CronSlotStore | null = null
    if (stores.identity !== identity) {
      try {
        opened = await openCronSlotStore(next.adapter, storeContext, context.log)
      } catch (error) {
        throw withSettingsKey(Errors.storageError(`cannot open the ${next.adapter.name} cron store: ${(error as Error).message}`, error), 'adapter')
      }
    }
    if (!this.scheduler) {
      this.scheduler = new CronScheduler({
        worker: context.worker,
        log: context.log,
        clock: this.clock,
        now: this.now,
        stores,
        defaultTimezone: next.default_timezone,
        ...(context.telemetry ? { telemetry: context.telemetry } : {}),
      })
    } else if (next.default_timezone !== previous?.default_timezone) {
      try {
        this.scheduler.setDefaultTimezone(next.default_timezone)
      } catch (error) {
        await opened?.close()
        throw withSettingsKey(error, 'default_timezone')
      }
    }
    if (opened) {
      stores.install(opened, identity)
      context.log.info(`${CRON_WORKER_NAME} uses the ${describeCronAdapter(next.adapter, storeContext)} store`)
    }
  }
}

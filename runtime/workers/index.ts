/**
 * The catalogue of built-in workers (builtins.md §1) that the engine starts by default.
 * Each one lives in its own folder and takes part through the LocalWorker interface.
 *
 * The configuration worker starts first; every other worker with a settings entry is wrapped by
 * the kit's {@link configured}, so that its settings come from that entry and change live.
 */
import type { BuiltinWorker, EngineConfig } from '../engine/types.ts'
import { builtinDescriptor } from './catalogue.ts'
import { ConfigurationWorker } from './configuration/worker.ts'
import { CronWorker } from './cron/worker.ts'
import { DatabaseWorker } from './database/worker.ts'
import { HttpWorker } from './http/worker.ts'
import { ObservabilityWorker } from './observability/worker.ts'
import { PubSubWorker } from './pubsub/worker.ts'
import type { Clock } from './shared/clock.ts'
import { configured } from './shared/configured.ts'
import { QueueWorker } from './queue/worker.ts'
import { StateWorker } from './state/worker.ts'
import { StreamWorker } from './stream/worker.ts'

/** What {@link createBuiltins} reads of the configuration. */
export type BuiltinsConfig = Pick<EngineConfig, 'data_dir' | 'builtins'> & {
  /** Directory the settings directory resolves against; default: the data directory. */
  project_root?: string
  /**
   * Clock of the timers of the built-ins that keep them — queue (retry backoff, delays, leases,
   * subscriber retention), cron (slots and run budgets; wall time is the clock's reading from the
   * moment the built-ins are created on), pub/sub (delivery budgets, drop warnings) and
   * observability (the retention sweep); default the
   * real one. Tests pass a manual clock and move time with `advance(ms)` instead of sleeping.
   */
  clock?: Clock
}

/** A fresh instance of every built-in worker of this release, in start order. */
export function createBuiltins(config: BuiltinsConfig): BuiltinWorker[] {
  // The observability worker starts right after the configuration worker, so that spans and logs
  // of every later built-in reach it (builtins.md §12).
  const clock = config.clock
  const workers: BuiltinWorker[] = [
    new ObservabilityWorker(clock ? { clock } : {}),
    new StateWorker(),
    new StreamWorker(),
    new HttpWorker(),
    new QueueWorker(clock ? { clock } : {}),
    new PubSubWorker(clock ? { clock } : {}),
    new CronWorker(clock ? { clock, epochMs: Date.now() - clock.now() } : {}),
    new DatabaseWorker({ root: config.project_root ?? config.data_dir }),
  ]
  const configuration = new ConfigurationWorker({ root: config.project_root ?? config.data_dir })
  return [
    configuration,
    ...workers.map((worker) => {
      const descriptor = builtinDescriptor(worker.name)
      if (!descriptor?.configurationId || !descriptor.settings || (descriptor.settingsSource !== 'seed' && descriptor.settingsSource !== 'settings-file')) return worker
      const entry = config.builtins[worker.name] as { config?: unknown; raw_config?: unknown } | undefined
      const seed: { raw?: unknown; expanded?: unknown } = {}
      const raw = entry?.raw_config !== undefined ? entry.raw_config : entry?.config
      if (raw !== undefined) seed.raw = raw
      if (entry?.config !== undefined) seed.expanded = entry.config
      return configured(
        worker,
        { id: descriptor.configurationId, title: descriptor.title, description: descriptor.description, schema: descriptor.settings },
        seed,
      )
    }),
  ]
}

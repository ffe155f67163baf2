/**
 * A built-in worker's settings, read from the configuration worker (builtins.md §2.7).
 *
 * {@link configured} wraps a {@link BuiltinWorker} so that, at start, it
 * 1. registers its entry (`configuration::register`) with its JSON Schema, title and description;
 *    the config.yaml block is the initial value when nothing is stored yet, and its hash is kept
 *    in the entry's `metadata.seed_hash`;
 * 2. applies a config.yaml block that changed since the seed last used (its hash differs) as the
 *    entry's new value (docs/decisions.md: config.yaml edits apply, at start and while svc runs);
 * 3. starts the worker with the stored value, expanded and validated (`configuration::get`);
 * 4. watches the entry with a `configuration` trigger bound to the internal function
 *    `<worker>::on-config-change`: every change is re-read and handed to `applySettings`, which
 *    the worker serialises and either applies whole or refuses, keeping its previous settings;
 *    a deleted settings file resets the entry to the seed.
 */
import { createHash } from 'node:crypto'
import { canonicalJson } from 'svc-protocol/json'
import { errorBodyOf } from 'svc-protocol/errors'
import { UNSAMPLED_TRACEPARENT } from '../../engine/telemetry.ts'
import type { BuiltinContext, BuiltinWorker, LocalInvokeRequest } from '../../engine/types.ts'
import type { JsonSchema } from '../descriptor.ts'

/** The settings entry a worker owns (its descriptor's id, title, description and schema). */
export interface SettingsEntry {
  id: string
  title: string
  description: string
  schema: JsonSchema
}

/** The config.yaml block of a worker: as written (the seed) and expanded (the fallback). */
export interface SettingsSeed {
  /** The block as written, placeholders unexpanded; undefined when config.yaml has none. */
  raw?: unknown
  /** The block expanded; used only when the stored value cannot be read at start. */
  expanded?: unknown
}

type Invoke = (request: LocalInvokeRequest) => Promise<unknown>

/**
 * A stable hash of a seed (sha256 of its JSON with sorted keys), kept as `metadata.seed_hash`.
 * @example seedHash({ port: 3111 }) === seedHash({ port: 3111 }) // true
 */
export function seedHash(raw: unknown): string {
  return createHash('sha256').update(canonicalJson(raw)).digest('hex').slice(0, 32)
}

/**
 * Stores a config.yaml block as the entry's value and records its hash (`configuration::set`).
 * Used when the block differs from the seed last used: at start and by `svc` when config.yaml
 * changes while it runs.
 * @throws SvcError of `configuration::set` (`SCHEMA_INVALID`, `EXPAND_FAILED`, `NOT_REGISTERED`, …)
 */
export async function storeSeed(invoke: Invoke, id: string, raw: unknown): Promise<void> {
  await invoke({ function_id: 'configuration::set', data: { id, value: raw ?? {}, metadata: { seed_hash: seedHash(raw ?? {}) } } })
}

/**
 * Wraps `worker` so that its settings come from the configuration worker's entry `entry.id` and
 * later changes apply without a restart. The configuration worker must start first.
 *
 * @example configured(new HttpWorker(), { id: 'svc-http', title: 'HTTP', description, schema }, { raw: entry.raw_config, expanded: entry.config })
 */
export function configured(worker: BuiltinWorker, entry: SettingsEntry, seed: SettingsSeed): BuiltinWorker {
  return new ConfiguredWorker(worker, entry, seed)
}

class ConfiguredWorker implements BuiltinWorker {
  readonly name: string
  private readonly inner: BuiltinWorker
  private readonly entry: SettingsEntry
  private readonly seed: SettingsSeed
  private context: BuiltinContext | null = null
  /** The last read-and-apply of the settings entry (they run one after another). */
  private applying: Promise<void> = Promise.resolve()
  /** True while `last_config_error` holds a read failure reported here (the worker's applier clears only its own). */
  private readError = false

  constructor(inner: BuiltinWorker, entry: SettingsEntry, seed: SettingsSeed) {
    this.name = inner.name
    this.inner = inner
    this.entry = entry
    this.seed = seed
  }

  async start(context: BuiltinContext, _settings: unknown): Promise<void> {
    this.context = context
    const invoke: Invoke = (request) => context.worker.invoke(request)
    // Start-up housekeeping records no trace (it would list one per built-in at every start).
    const startup: Invoke = (request) => context.worker.invoke({ ...request, traceparent: UNSAMPLED_TRACEPARENT })
    const { id } = this.entry
    const listed = (await startup({ function_id: 'configuration::list', data: {} })) as { configurations: Array<{ id: string; metadata?: Record<string, unknown> }> }
    const stored = listed.configurations.find((c) => c.id === id)
    await this.register(startup, stored?.metadata)
    const seedChanged = stored !== undefined && this.seed.raw !== undefined && stored.metadata?.seed_hash !== seedHash(this.seed.raw)
    if (seedChanged) {
      try {
        await storeSeed(startup, id, this.seed.raw)
        context.log.info(`config.yaml: the ${this.name} block changed since it was last applied; it is now the value of ${id}`)
      } catch (error) {
        context.log.error(`config.yaml: the ${this.name} block was not applied: ${errorBodyOf(error).message}`)
      }
    }

    let value: unknown
    try {
      value = ((await startup({ function_id: 'configuration::get', data: { id } })) as { value: unknown }).value
    } catch (error) {
      const { message } = errorBodyOf(error)
      context.log.error(`${this.name}: settings ${id} cannot be read (${message}); starting with the config.yaml block`)
      this.reportReadError(message)
      value = this.seed.expanded
    }
    await this.inner.start({ ...context, settings: { applyLatest: () => this.applyLatest(invoke) } }, value)

    const handler = `${this.name}::on-config-change`
    context.worker.registerFunction(handler, (event) => this.onChange(invoke, event), {
      description: `Applies changes of the ${id} settings entry`,
      metadata: { internal: true },
    })
    context.worker.registerTrigger({ id: `${this.name}::settings`, trigger_type: 'configuration', function_id: handler, config: { configuration_id: id } })
  }

  applySettings(settings: unknown): Promise<void> {
    return this.inner.applySettings(settings)
  }

  stop(): Promise<void> {
    return this.inner.stop()
  }

  /** `configuration::register` with the seed as initial value, keeping other metadata. */
  private async register(invoke: Invoke, metadata: Record<string, unknown> | undefined): Promise<void> {
    const { id, title, description, schema } = this.entry
    const data: Record<string, unknown> = { id, name: title, description, schema, initial_value: this.seed.raw ?? {} }
    const next = { ...(metadata ?? {}) }
    if (this.seed.raw !== undefined && metadata === undefined) next.seed_hash = seedHash(this.seed.raw)
    if (Object.keys(next).length > 0) data.metadata = next
    await invoke({ function_id: 'configuration::register', data })
  }

  private async onChange(invoke: Invoke, event: unknown): Promise<void> {
    if ((event as { event_type?: unknown } | null)?.event_type === 'configuration:deleted') {
      // §2.7 Reset: registering the seed again fires `configuration:registered`, applied below.
      await this.register(invoke, undefined)
      return
    }
    // The worker's applier logs a refusal and reports it as last_config_error.
    await this.applyLatest(invoke).catch(() => {})
  }

  private reportReadError(message: string): void {
    this.readError = true
    this.context!.worker.setLastConfigError(message)
  }

  /**
   * Reads the entry and applies it, one at a time: each read happens after the previous apply, so
   * an older value can never be applied after a newer one (see BuiltinContext.settings).
   */
  private applyLatest(invoke: Invoke): Promise<void> {
    const run = this.applying.then(async () => {
      const context = this.context!
      let value: unknown
      try {
        value = ((await invoke({ function_id: 'configuration::get', data: { id: this.entry.id } })) as { value: unknown }).value
      } catch (error) {
        const { message } = errorBodyOf(error)
        this.reportReadError(message)
        context.log.error(`${this.name} settings not applied (${message}); the previous settings stay in effect`)
        throw error
      }
      await this.inner.applySettings(value)
      if (this.readError) {
        this.readError = false
        context.worker.setLastConfigError(undefined)
      }
    })
    this.applying = run.catch(() => {})
    return run
  }
}

/**
 * The configuration worker `configuration` (builtins.md §11): settings entries by id, stored as
 * YAML files under the project's `config/` directory and watched for hand edits, validated
 * against the JSON Schema their owner registers, with the `configuration::*` functions and the
 * `configuration` trigger type.
 *
 * The standard shape of a built-in: ./descriptor.ts, ./settings.ts (its own config.yaml block),
 * ./functions.ts (`configuration::*`), ./triggers.ts (`configuration`), and this file, the
 * lifecycle: start, settings, stop. The entries and their files are ./entries.ts and ./files.ts.
 */
import { isAbsolute, resolve as resolvePath } from 'node:path'
import type { Env } from '../../config/placeholders.ts'
import type { BuiltinContext, BuiltinWorker } from '../../engine/types.ts'
import { SettingsEntries } from './entries.ts'
import { SettingsFiles } from './files.ts'
import { registerConfigurationFunctions } from './functions.ts'
import { parseConfigurationOptions } from './settings.ts'
import { CONFIGURATION_TRIGGER_TYPE, ConfigurationTriggers } from './triggers.ts'

export const CONFIGURATION_WORKER_NAME = 'configuration'

/** What the composition root gives the worker. */
export interface ConfigurationWorkerOptions {
  /** Directory relative settings directories resolve against (the project root). */
  root: string
  /** Environment placeholders expand from; default `process.env`. */
  env?: Env
}

/**
 * `configuration`. Start it before every other built-in: they register their entries with it.
 *
 * @example
 * const configuration = new ConfigurationWorker({ root: projectRoot })
 * const engine = new Engine(config, { builtins: [configuration, …] })
 * await engine.inject({ function_id: 'configuration::get', data: { id: 'svc-http' } })
 */
export class ConfigurationWorker implements BuiltinWorker {
  readonly name = CONFIGURATION_WORKER_NAME
  private readonly root: string
  private readonly env: Env
  private context: BuiltinContext | null = null
  private files: SettingsFiles | null = null
  private triggers: ConfigurationTriggers | null = null

  constructor(options: ConfigurationWorkerOptions) {
    this.root = options.root
    this.env = options.env ?? process.env
  }

  /** The settings directory in use (absolute); undefined before start. */
  get directory(): string | undefined {
    return this.files?.directory
  }

  async start(context: BuiltinContext, settings: unknown): Promise<void> {
    this.context = context
    const options = parseConfigurationOptions(settings)
    const directory = isAbsolute(options.directory) ? options.directory : resolvePath(this.root, options.directory)
    const files = (this.files = new SettingsFiles(directory))
    const loaded = await files.loadAll()
    const triggers = (this.triggers = new ConfigurationTriggers(context))
    const entries = new SettingsEntries({ files, log: context.log, env: this.env, triggers })
    entries.load(loaded)
    registerConfigurationFunctions(context.worker, entries)
    context.worker.registerTriggerType(CONFIGURATION_TRIGGER_TYPE, triggers)
    if (options.watch) {
      files.watch(options.debounce_ms, (event) => void entries.serialised(async () => (files.isCurrent(event) ? entries.onFileEvent(event) : undefined)))
      await files.ready()
    }
  }

  /** Its own block (§11.1) is read at start; a change needs a restart of the engine. */
  async applySettings(settings: unknown): Promise<void> {
    parseConfigurationOptions(settings)
    this.context?.log.warn('configuration: changes to its own config.yaml block apply at the next start')
  }

  async stop(): Promise<void> {
    this.triggers?.stop()
    await this.files?.close()
  }
}

/**
 * The configuration worker `configuration` (builtins.md §11): settings entries by id, stored as
 * YAML files under the project's `config/` directory and watched for hand edits, validated
 * against the JSON Schema their owner registers, with the `configuration::*` functions and the
 * `configuration` trigger type.
 *
 * Values are stored as written (placeholders unexpanded) and expanded from the engine's
 * environment each time they are read (§2.8); validation always runs on the expanded value.
 * Every change (register, set, update, a hand edit, a deleted file) is one committed event,
 * fanned out per §2.5 with the kit's ordered fan-out.
 */
import { isAbsolute, resolve as resolvePath } from 'node:path'
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import { expandPlaceholders, ExpandError, type Env, type SchemaHint } from '../../config/placeholders.ts'
import type { BindingInfo, BuiltinContext, BuiltinWorker, InvocationContext, LocalTriggerProvider } from '../../engine/types.ts'
import { applyUpdateOps, assertUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOpError } from '../../update-ops/types.ts'
import { OrderedFanOut, traceOriginOf, type FanOutOptions, type FanOutQueue, type TraceOrigin } from '../shared/fanout.ts'
import { CONFIGURATION_RESULTS } from './formats.ts'
import { ENTRY_ID, formatSettingsFile, SettingsFiles, UnstorableSettingsError, type SettingsFile, type SettingsFileEvent } from './files.ts'
import { compileSettingsSchema, type SettingsValidator } from './schema.ts'

export const CONFIGURATION_WORKER_NAME = 'configuration'

/** Entries the worker holds at most (registered or read from disk). */
export const MAX_ENTRIES = 1024

/** The event types of the `configuration` trigger (§11.3). */
export const CONFIGURATION_EVENT_TYPES = ['configuration:registered', 'configuration:updated', 'configuration:deleted'] as const
export type ConfigurationEventType = (typeof CONFIGURATION_EVENT_TYPES)[number]

/** The payload of a `configuration` trigger (§11.3); values expanded where they can be. */
export interface ConfigurationEvent {
  type: 'configuration'
  event_type: ConfigurationEventType
  id: string
  name: string
  description: string
  old_value: unknown
  new_value: unknown
}

/** The `configuration` entry's own keys (§11.1), read from config.yaml. */
export interface ConfigurationOptions {
  /** Settings directory; relative paths resolve against the project root. Default `config`. */
  directory: string
  /** Watch the directory for hand edits. Default true. */
  watch: boolean
  /** Quiet time after a hand edit before it is read, ms. Default 500. */
  debounce_ms: number
}

export const CONFIGURATION_DEFAULTS: Readonly<ConfigurationOptions> = Object.freeze({ directory: 'config', watch: true, debounce_ms: 500 })

/** What the composition root gives the worker. */
export interface ConfigurationWorkerOptions {
  /** Directory relative settings directories resolve against (the project root). */
  root: string
  /** Environment placeholders expand from; default `process.env`. */
  env?: Env
}

interface Entry {
  id: string
  name: string
  description: string
  metadata?: Record<string, unknown>
  /** Stored value as written; undefined while there is none (never stored, or its file was deleted). */
  value: unknown
  /** The schema registered since boot, with its compiled validator. */
  schema?: unknown
  validate?: SettingsValidator
  /**
   * Why the entry's file could not be read at start (`<path>:<line>:<column>: <problem>`): the
   * file is left as it is, `get` fails with `STORAGE_ERROR` naming it until it is fixed or a new
   * value is set, and its owner falls back to its seed.
   */
  fileError?: string
}

type Payload = Record<string, unknown>

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
  private readonly entries = new Map<string, Entry>()
  /** Files that could not be read at start, by id, until their entry is registered (see {@link Entry.fileError}). */
  private readonly unreadable = new Map<string, string>()
  private triggers: ConfigurationTriggers | null = null
  /** Mutations run one after another, so file writes and events keep the order of the calls. */
  private tail: Promise<unknown> = Promise.resolve()

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
    this.files = new SettingsFiles(directory)
    const { files, invalid } = await this.files.loadAll()
    for (const file of files) this.entries.set(file.id, entryOf(file))
    for (const { id, problem } of invalid) {
      context.log.error(`settings file not read: ${problem}; the file is kept as it is, and configuration::get of ${id} fails until it is fixed`)
      this.unreadable.set(id, problem)
    }
    this.triggers = new ConfigurationTriggers(context)
    this.registerFunctions()
    context.worker.registerTriggerType(
      {
        id: 'configuration',
        description: 'Fires when a settings entry is registered, updated or deleted',
        trigger_request_format: {
          type: 'object',
          properties: {
            configuration_id: { type: 'string', description: 'exact entry id; absent matches every entry' },
            event_types: { type: 'array', items: { type: 'string', enum: [...CONFIGURATION_EVENT_TYPES] } },
            condition_function_id: { type: 'string' },
          },
        },
        call_request_format: {
          type: 'object',
          required: ['type', 'event_type', 'id', 'name', 'description', 'old_value', 'new_value'],
          properties: {
            type: { type: 'string' },
            event_type: { type: 'string', enum: [...CONFIGURATION_EVENT_TYPES] },
            id: { type: 'string' },
            name: { type: 'string' },
            description: { type: 'string' },
            old_value: {},
            new_value: {},
          },
        },
      },
      this.triggers,
    )
    if (options.watch) {
      this.files.watch(options.debounce_ms, (event) => void this.serialised(() => this.onFileEvent(event)))
      await this.files.ready()
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

  // ---- functions (§11.2) ---------------------------------------------------------------------

  private registerFunctions(): void {
    const worker = this.context!.worker
    const id = { type: 'string', pattern: ENTRY_ID.source }
    const register = (name: string, handler: (p: Payload, ctx: InvocationContext) => unknown, description: string, properties: Record<string, unknown>, required: string[]) =>
      worker.registerFunction(name, (data, ctx) => handler(payloadOf(data), ctx), {
        description,
        request_format: { type: 'object', required, properties },
        response_format: CONFIGURATION_RESULTS[name],
      })
    register('configuration::register', (p, ctx) => this.serialised(() => this.register(p, traceOriginOf(ctx))), 'Register a settings entry with its JSON Schema; keeps a stored value', {
      id, name: { type: 'string' }, description: { type: 'string' }, schema: { type: 'object' }, initial_value: {}, metadata: { type: 'object' },
    }, ['id', 'schema'])
    register('configuration::get', (p) => this.get(p), 'Read an entry: {id, value}, expanded and validated unless raw', { id, raw: { type: 'boolean', default: false } }, ['id'])
    register('configuration::set', (p, ctx) => this.serialised(() => this.set(p, traceOriginOf(ctx))), 'Replace an entry value after validation: {old_value, new_value}', { id, value: {}, metadata: { type: 'object' } }, ['id', 'value'])
    register('configuration::update', (p, ctx) => this.serialised(() => this.update(p, traceOriginOf(ctx))), 'Apply update operations; stored only if the result validates', {
      id, ops: { type: 'array', items: { type: 'object', required: ['type'] } },
    }, ['id', 'ops'])
    register('configuration::list', () => this.list(), 'Every entry without its value: {configurations: [{id, name, description, schema, metadata?}]}', {}, [])
    register('configuration::schema', (p) => this.schema(p), 'The schema of an entry: {id, name, description, schema, metadata?}', { id }, ['id'])
  }

  private async register(p: Payload, origin?: TraceOrigin): Promise<Record<string, unknown>> {
    const id = entryId(p)
    if (p.schema === undefined || p.schema === null) throw Errors.invalidArguments('schema is required')
    const name = optionalString(p, 'name') ?? id
    const description = optionalString(p, 'description') ?? ''
    const metadata = optionalObject(p, 'metadata')
    let validate: SettingsValidator
    try {
      validate = compileSettingsSchema(p.schema)
    } catch (error) {
      throw Errors.invalidArguments((error as Error).message)
    }
    const entry = this.entries.get(id)
    if (!entry && this.entries.size >= MAX_ENTRIES) throw Errors.invalidArguments(`at most ${MAX_ENTRIES} configuration entries can be registered`)
    const fileError = entry?.fileError ?? this.unreadable.get(id)
    const isNew = entry?.value === undefined
    const oldValue = entry?.value
    const value = isNew ? (p.initial_value === undefined ? {} : p.initial_value) : entry!.value
    const next: Entry = { id, name, description, value, schema: p.schema, validate }
    if (metadata !== undefined) next.metadata = metadata
    let text: string | undefined
    if (fileError === undefined) {
      try {
        text = this.format(next)
      } catch (error) {
        // A stored value that was read from its file but would be written larger (a hand-written
        // flow list becomes a longer block list): the file stays as it is, it reads back.
        if (isNew) throw error
        this.context!.log.warn(`settings file ${this.files!.pathOf(id)} is kept as written: ${errorBodyOf(error).message}`)
      }
    }
    if (isNew) this.check(id, value, p.schema, validate)
    else if (this.violations(value, p.schema, validate).length > 0) {
      this.context!.log.warn(`settings file ${this.files!.pathOf(id)} does not match the schema its owner registered; configuration::get fails until it is fixed`)
    }
    if (fileError !== undefined) {
      // The file on disk could not be read: it stays as the user left it (the seed is not written
      // over it), and get keeps failing with its problem until it is fixed or a value is set.
      next.value = undefined
      next.fileError = fileError
      this.unreadable.delete(id)
      this.entries.set(id, next)
    } else {
      if (text !== undefined) await this.write(id, text)
      this.entries.set(id, next)
      this.emit(next, isNew ? 'configuration:registered' : 'configuration:updated', isNew ? undefined : oldValue, value, origin)
    }
    const result: Record<string, unknown> = { id, name, description, schema: next.schema, value }
    if (next.metadata !== undefined) result.metadata = next.metadata
    return result
  }

  private get(p: Payload): { id: string; value: unknown } {
    const id = entryId(p)
    const raw = p.raw === true
    if (p.raw !== undefined && p.raw !== null && typeof p.raw !== 'boolean') throw Errors.invalidArguments('raw must be a boolean')
    const entry = this.entries.get(id)
    const fileError = entry?.fileError ?? this.unreadable.get(id)
    if (fileError !== undefined) throw Errors.storageError(`settings file not read: ${fileError}; fix the file, or store a new value with configuration::set`)
    if (!entry || entry.value === undefined) throw Errors.configurationNotFound(id)
    if (raw) return { id, value: entry.value }
    if (!entry.validate) throw Errors.schemaUnavailable(id)
    return { id, value: this.check(id, entry.value, entry.schema, entry.validate) }
  }

  private async set(p: Payload, origin?: TraceOrigin): Promise<{ old_value: unknown; new_value: unknown }> {
    const id = entryId(p)
    if (!Object.hasOwn(p, 'value')) throw Errors.invalidArguments('value is required')
    const metadata = optionalObject(p, 'metadata')
    const entry = this.registered(id)
    const next = this.changed(entry, p.value, metadata)
    this.check(id, p.value, entry.schema, entry.validate!)
    const old = entry.value
    await this.replace(entry, next)
    this.emit(entry, old === undefined ? 'configuration:registered' : 'configuration:updated', old, entry.value, origin)
    return { old_value: old ?? null, new_value: entry.value }
  }

  private async update(p: Payload, origin?: TraceOrigin): Promise<{ old_value: unknown; new_value: unknown; errors?: UpdateOpError[] }> {
    const id = entryId(p)
    if (p.ops === undefined || p.ops === null) throw Errors.invalidArguments('ops is required')
    assertUpdateOps(p.ops)
    const entry = this.registered(id)
    // Operations on a value that could not be read would replace it with a guess.
    if (entry.fileError !== undefined) throw Errors.storageError(`settings file not read: ${entry.fileError}; fix the file, or store a whole new value with configuration::set`)
    const old = entry.value
    const { value, errors } = applyUpdateOps(structuredClone(old), p.ops)
    const next = this.changed(entry, value, undefined)
    this.check(id, value, entry.schema, entry.validate!)
    await this.replace(entry, next)
    this.emit(entry, old === undefined ? 'configuration:registered' : 'configuration:updated', old, value, origin)
    const result: { old_value: unknown; new_value: unknown; errors?: UpdateOpError[] } = { old_value: old ?? null, new_value: value }
    if (errors.length > 0) result.errors = errors
    return result
  }

  /**
   * `entry` with `value` (and `metadata` when given), and the text of its file: checked first, so
   * a value the file could not hold is refused before anything else is done with it.
   * @throws SvcError `VALUE_TOO_LARGE`
   */
  private changed(entry: Entry, value: unknown, metadata: Record<string, unknown> | undefined): { entry: Entry; text: string } {
    const next: Entry = { ...entry, value }
    if (metadata !== undefined) next.metadata = metadata
    delete next.fileError
    return { entry: next, text: this.format(next) }
  }

  /**
   * Writes the entry's file, then changes it in memory: nothing changes when the write fails.
   * @throws SvcError `STORAGE_ERROR`
   */
  private async replace(entry: Entry, next: { entry: Entry; text: string }): Promise<void> {
    await this.write(entry.id, next.text)
    entry.value = next.entry.value
    if (next.entry.metadata !== undefined) entry.metadata = next.entry.metadata
    delete entry.fileError
  }

  private list(): { configurations: Array<Record<string, unknown>> } {
    const configurations = [...this.entries.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((entry) => this.describe(entry))
    return { configurations }
  }

  private schema(p: Payload): Record<string, unknown> {
    const id = entryId(p)
    const entry = this.entries.get(id)
    if (!entry) throw Errors.configurationNotFound(id)
    if (!entry.validate) throw Errors.schemaUnavailable(id)
    return this.describe(entry)
  }

  private describe(entry: Entry): Record<string, unknown> {
    const out: Record<string, unknown> = { id: entry.id, name: entry.name, description: entry.description, schema: entry.schema ?? null }
    if (entry.metadata !== undefined) out.metadata = entry.metadata
    return out
  }

  // ---- hand edits ----------------------------------------------------------------------------

  private async onFileEvent(event: SettingsFileEvent): Promise<void> {
    const log = this.context!.log
    if (event.kind === 'invalid') {
      log.warn(`settings file rejected: ${event.problem}; the previous value stays in effect`)
      return
    }
    const entry = this.entries.get(event.id)
    this.unreadable.delete(event.id)
    if (event.kind === 'deleted') {
      if (!entry || (entry.value === undefined && entry.fileError === undefined)) return
      const old = entry.value
      entry.value = undefined
      delete entry.fileError
      log.info(`settings file ${event.path} deleted; ${event.id} is reset`)
      this.emit(entry, 'configuration:deleted', old, undefined)
      return
    }
    const file = event.file
    if (entry?.validate) {
      const problems = this.violations(file.value, entry.schema, entry.validate)
      if (problems.length > 0) {
        log.warn(`settings file ${event.path} rejected: ${problems.join('; ')}; the previous value stays in effect`)
        if (entry.fileError !== undefined) entry.fileError = `${event.path}: ${problems.join('; ')}`
        return
      }
    } else if (!entry && this.entries.size >= MAX_ENTRIES) {
      log.warn(`settings file ${event.path} ignored: at most ${MAX_ENTRIES} configuration entries`)
      return
    }
    const target = entry ?? { id: file.id, name: file.name, description: file.description, value: undefined }
    const old = target.value
    target.name = file.name
    target.description = file.description
    if (file.metadata !== undefined) target.metadata = file.metadata
    else delete target.metadata
    target.value = file.value
    delete target.fileError
    this.entries.set(file.id, target)
    log.info(`settings file ${event.path} changed; ${file.id} updated`)
    this.emit(target, old === undefined ? 'configuration:registered' : 'configuration:updated', old, file.value)
  }

  // ---- helpers -------------------------------------------------------------------------------

  private serialised<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.tail.then(operation)
    this.tail = result.catch(() => {})
    return result
  }

  /** The entry `set`/`update` may change: registered since boot. */
  private registered(id: string): Entry {
    const entry = this.entries.get(id)
    if (!entry) throw Errors.notRegistered(id)
    if (!entry.validate) throw Errors.schemaUnavailable(id)
    return entry
  }

  /**
   * Expands `value` and validates the result.
   * @returns the expanded value
   * @throws SvcError `EXPAND_FAILED`, `SCHEMA_INVALID`
   */
  private check(id: string, value: unknown, schema: unknown, validate: SettingsValidator): unknown {
    const expanded = this.expand(value, schema)
    const problems = validate(expanded)
    if (problems.length > 0) throw Errors.schemaInvalid(id, problems)
    return expanded
  }

  /** Violations of `value` (expansion failures included), empty when valid. */
  private violations(value: unknown, schema: unknown, validate: SettingsValidator): string[] {
    try {
      return validate(this.expand(value, schema))
    } catch (error) {
      return [errorBodyOf(error).message]
    }
  }

  private expand(value: unknown, schema: unknown): unknown {
    try {
      return expandPlaceholders(value, this.env, schema as SchemaHint)
    } catch (error) {
      if (error instanceof ExpandError) {
        const where = error.path.length > 0 ? `/${error.path.join('/')}: ` : ''
        throw Errors.expandFailed(`${where}${error.message}`)
      }
      throw error
    }
  }

  /**
   * The entry's settings file text, checked to read back (builtins.md §11.1).
   * @throws SvcError `VALUE_TOO_LARGE` naming the limit
   */
  private format(entry: Entry): string {
    const file: SettingsFile = { id: entry.id, name: entry.name, description: entry.description, value: entry.value }
    if (entry.metadata !== undefined) file.metadata = entry.metadata
    try {
      return formatSettingsFile(file)
    } catch (error) {
      if (error instanceof UnstorableSettingsError) throw Errors.configurationTooLarge(entry.id, error.message)
      throw error
    }
  }

  private async write(id: string, text: string): Promise<void> {
    try {
      await this.files!.write(id, text)
    } catch (error) {
      throw Errors.storageError(`cannot write ${this.files!.pathOf(id)}: ${(error as Error).message}`, error)
    }
  }

  /** Hands the event to the `configuration` triggers; `origin` is the writer's trace context (§2.5 rule 7), absent for hand edits. */
  private emit(entry: Entry, eventType: ConfigurationEventType, oldValue: unknown, newValue: unknown, origin?: TraceOrigin): void {
    const readable = (value: unknown) => {
      if (value === undefined) return null
      try {
        return this.expand(value, entry.schema)
      } catch {
        return value
      }
    }
    this.triggers?.publish({
      type: 'configuration',
      event_type: eventType,
      id: entry.id,
      name: entry.name,
      description: entry.description,
      old_value: readable(oldValue),
      new_value: readable(newValue),
    }, origin)
  }
}

// ---- the `configuration` trigger type (§11.3) --------------------------------------------------

interface ConfigurationTriggerConfig {
  configuration_id?: string
  event_types?: ConfigurationEventType[]
  condition_function_id?: string
}

/**
 * Validates a `configuration` trigger config (§11.3).
 * @throws SvcError `INVALID_TRIGGER_CONFIG` naming the field.
 */
export function parseConfigurationTriggerConfig(config: unknown): ConfigurationTriggerConfig {
  if (config === undefined || config === null) return {}
  if (typeof config !== 'object' || Array.isArray(config)) throw Errors.invalidTriggerConfig('config must be an object for configuration triggers')
  const source = config as Record<string, unknown>
  const result: ConfigurationTriggerConfig = {}
  const id = source.configuration_id
  if (id !== undefined && id !== null) {
    if (typeof id !== 'string') throw Errors.invalidTriggerConfig('configuration_id must be a string for configuration triggers')
    result.configuration_id = id
  }
  const types = source.event_types
  if (types !== undefined && types !== null) {
    if (!Array.isArray(types) || types.some((t) => !(CONFIGURATION_EVENT_TYPES as readonly unknown[]).includes(t))) {
      throw Errors.invalidTriggerConfig(`event_types must be an array of ${CONFIGURATION_EVENT_TYPES.join(', ')}`)
    }
    result.event_types = types as ConfigurationEventType[]
  }
  const condition = source.condition_function_id
  if (condition !== undefined && condition !== null) {
    if (typeof condition !== 'string' || condition === '') throw Errors.invalidTriggerConfig('condition_function_id must be a non-empty string for configuration triggers')
    result.condition_function_id = condition
  }
  return result
}

class ConfigurationTriggers implements LocalTriggerProvider {
  private readonly fanOut: OrderedFanOut<ConfigurationEvent>
  private readonly bindings = new Map<string, { config: ConfigurationTriggerConfig; queue: FanOutQueue<ConfigurationEvent> }>()

  constructor(context: BuiltinContext) {
    const options: FanOutOptions = { worker: context.worker, log: context.log, timeoutMs: context.internalInvocationTimeoutMs, triggerType: 'configuration', workerName: CONFIGURATION_WORKER_NAME }
    if (context.telemetry) options.telemetry = context.telemetry
    this.fanOut = new OrderedFanOut(options)
  }

  registerTrigger(binding: BindingInfo): void {
    const config = parseConfigurationTriggerConfig(binding.config)
    const queue = this.fanOut.registerBinding(binding, config.condition_function_id)
    this.bindings.set(binding.id, { config, queue })
  }

  unregisterTrigger(binding: BindingInfo): void {
    this.bindings.delete(binding.id)
    this.fanOut.unregister(binding.id)
  }

  publish(event: ConfigurationEvent, origin?: TraceOrigin): void {
    for (const { config, queue } of this.bindings.values()) {
      if (config.configuration_id !== undefined && config.configuration_id !== event.id) continue
      if (config.event_types !== undefined && !config.event_types.includes(event.event_type)) continue
      queue.push(event, origin)
    }
  }

  stop(): void {
    this.fanOut.stop()
  }
}

// ---- payload validation (§2.1) ---------------------------------------------------------------

/**
 * The `configuration` entry's own keys with defaults (§11.1).
 * @throws SvcError `INVALID_ARGUMENTS` naming the key.
 */
export function parseConfigurationOptions(value: unknown): ConfigurationOptions {
  if (value === undefined || value === null) return { ...CONFIGURATION_DEFAULTS }
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments('configuration config must be a mapping')
  const source = value as Record<string, unknown>
  const options = { ...CONFIGURATION_DEFAULTS }
  if (source.directory !== undefined) {
    if (typeof source.directory !== 'string' || source.directory === '') throw Errors.invalidArguments('directory must be a non-empty string')
    options.directory = source.directory
  }
  if (source.watch !== undefined) {
    if (typeof source.watch !== 'boolean') throw Errors.invalidArguments('watch must be a boolean')
    options.watch = source.watch
  }
  if (source.debounce_ms !== undefined) {
    if (typeof source.debounce_ms !== 'number' || !Number.isSafeInteger(source.debounce_ms) || source.debounce_ms < 0) {
      throw Errors.invalidArguments('debounce_ms must be a non-negative integer')
    }
    options.debounce_ms = source.debounce_ms
  }
  return options
}

function entryOf(file: SettingsFile): Entry {
  const entry: Entry = { id: file.id, name: file.name, description: file.description, value: file.value }
  if (file.metadata !== undefined) entry.metadata = file.metadata
  return entry
}

function payloadOf(data: unknown): Payload {
  if (data === undefined || data === null) return {}
  if (typeof data !== 'object' || Array.isArray(data)) throw Errors.invalidArguments('payload must be an object')
  return data as Payload
}

function entryId(p: Payload): string {
  const id = p.id
  if (id === undefined || id === null) throw Errors.invalidArguments('id is required')
  if (typeof id !== 'string') throw Errors.invalidArguments('id must be a string')
  if (!ENTRY_ID.test(id)) throw Errors.invalidId(id)
  return id
}

function optionalString(p: Payload, field: string): string | undefined {
  const value = p[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string') throw Errors.invalidArguments(`${field} must be a string`)
  return value
}

function optionalObject(p: Payload, field: string): Record<string, unknown> | undefined {
  const value = p[field]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidArguments(`${field} must be an object`)
  return value as Record<string, unknown>
}


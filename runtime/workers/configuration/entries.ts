/**
 * The settings entries of the configuration worker (builtins.md §11): each entry's schema (since
 * boot), name, description, metadata and value, held in memory and kept in step with its YAML
 * file under the settings directory (./files.ts), written before it changes here, and read back
 * after hand edits. The storage the `configuration::*` functions (./functions.ts) reach.
 *
 * Values are stored as written (placeholders unexpanded) and expanded from the engine's
 * environment each time they are read (§2.8); validation always runs on the expanded value.
 * Every change (register, set, update, a hand edit, a deleted file) is one committed event,
 * handed to the `configuration` triggers (./triggers.ts).
 */
import { Errors, errorBodyOf } from 'svc-protocol/errors'
import { expandPlaceholders, ExpandError, type Env, type SchemaHint } from '../../config/placeholders.ts'
import type { Logger } from '../../engine/types.ts'
import { applyUpdateOps } from '../../update-ops/index.ts'
import type { UpdateOp, UpdateOpError } from '../../update-ops/types.ts'
import type { TraceOrigin } from '../shared/fanout.ts'
import { formatSettingsFile, UnstorableSettingsError, type SettingsFile, type SettingsFileEvent, type SettingsFiles } from './files.ts'
import type { SettingsValidator } from './schema.ts'
import type { ConfigurationEventType, ConfigurationTriggers } from './triggers.ts'

/** Entries the worker holds at most (registered or read from disk). */
export const MAX_ENTRIES = 1024

/** A `configuration::register` call, its payload checked (./functions.ts). */
export interface EntryRegistration {
  id: string
  /** Default: the id. */
  name: string
  /** Default: empty. */
  description: string
  metadata?: Record<string, unknown> | undefined
  /** The JSON Schema as given, and its compiled validator. */
  schema: unknown
  validate: SettingsValidator
  /** The value of an entry that has none stored; undefined gives `{}`. */
  initial_value: unknown
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

/** What the entries need of the worker. */
export interface SettingsEntriesDeps {
  files: SettingsFiles
  log: Logger
  /** Environment placeholders expand from (§2.8). */
  env: Env
  /** Where each committed change goes. */
  triggers: ConfigurationTriggers
}

/**
 * The entries, loaded from their files at start ({@link SettingsEntries.load}). Mutations go
 * through {@link SettingsEntries.serialised}, so they run one after another.
 *
 * @example
 * const entries = new SettingsEntries({ files, log, env: process.env, triggers })
 * entries.load(await files.loadAll())
 * await entries.serialised(() => entries.set('svc-http', { port: 3111 }, undefined))
 */
export class SettingsEntries {
  private readonly files: SettingsFiles
  private readonly log: Logger
  private readonly env: Env
  private readonly triggers: ConfigurationTriggers
  private readonly entries = new Map<string, Entry>()
  /** Files that could not be read at start, by id, until their entry is registered (see {@link Entry.fileError}). */
  private readonly unreadable = new Map<string, string>()
  /** Mutations run one after another, so file writes and events keep the order of the calls. */
  private tail: Promise<unknown> = Promise.resolve()

  constructor(deps: SettingsEntriesDeps) {
    this.files = deps.files
    this.log = deps.log
    this.env = deps.env
    this.triggers = deps.triggers
  }

  /**
   * Holds the entries of the files read at start; an unreadable file is logged and kept as it is,
   * and `configuration::get` of its id fails until it is fixed.
   */
  load(loaded: { files: SettingsFile[]; invalid: Array<{ id: string; problem: string }> }): void {
    for (const file of loaded.files) this.entries.set(file.id, entryOf(file))
    for (const { id, problem } of loaded.invalid) {
      this.log.error(`settings file not read: ${problem}; the file is kept as it is, and configuration::get of ${id} fails until it is fixed`)
      this.unreadable.set(id, problem)
    }
  }

  /**
   * `configuration::register` (§11.2): records the entry's schema; a stored value is kept (checked,
   * with a warning when it does not match), a new one is `initial_value` (default `{}`), validated
   * and written. Answers `{id, name, description, schema, value, metadata?}`.
   * @throws SvcError `INVALID_ARGUMENTS` beyond {@link MAX_ENTRIES}, `EXPAND_FAILED`,
   *   `SCHEMA_INVALID`, `VALUE_TOO_LARGE`, `STORAGE_ERROR`
   */
  async register(registration: EntryRegistration, origin?: TraceOrigin): Promise<Record<string, unknown>> {
    const { id, name, description, metadata, schema, validate } = registration
    const entry = this.entries.get(id)
    if (!entry && this.entries.size >= MAX_ENTRIES) throw Errors.invalidArguments(`at most ${MAX_ENTRIES} configuration entries can be registered`)
    const fileError = entry?.fileError ?? this.unreadable.get(id)
    const isNew = entry?.value === undefined
    const oldValue = entry?.value
    const value = isNew ? (registration.initial_value === undefined ? {} : registration.initial_value) : entry!.value
    const next: Entry = { id, name, description, value, schema, validate }
    if (metadata !== undefined) next.metadata = metadata
    let text: string | undefined
    if (fileError === undefined) {
      try {
        text = this.format(next)
      } catch (error) {
        // A stored value that was read from its file but would be written larger (a hand-written
        // flow list becomes a longer block list): the file stays as it is, it reads back.
        if (isNew) throw error
        this.log.warn(`settings file ${this.files.pathOf(id)} is kept as written: ${errorBodyOf(error).message}`)
      }
    }
    if (isNew) this.check(id, value, schema, validate)
    else if (this.violations(value, schema, validate).length > 0) {
      this.log.warn(`settings file ${this.files.pathOf(id)} does not match the schema its owner registered; configuration::get fails until it is fixed`)
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

  /**
   * `configuration::get` (§11.2): the stored value as written when `raw`, else expanded and validated.
   * @throws SvcError `STORAGE_ERROR` (its file could not be read), `NOT_FOUND`,
   *   `SCHEMA_UNAVAILABLE`, `EXPAND_FAILED`, `SCHEMA_INVALID`
   */
  get(id: string, raw: boolean): { id: string; value: unknown } {
    const entry = this.entries.get(id)
    const fileError = entry?.fileError ?? this.unreadable.get(id)
    if (fileError !== undefined) throw Errors.storageError(`settings file not read: ${fileError}; fix the file, or store a new value with configuration::set`)
    if (!entry || entry.value === undefined) throw Errors.configurationNotFound(id)
    if (raw) return { id, value: entry.value }
    if (!entry.validate) throw Errors.schemaUnavailable(id)
    return { id, value: this.check(id, entry.value, entry.schema, entry.validate) }
  }

  /**
   * `configuration::set` (§11.2): validates `value`, writes the file, then holds it.
   * @throws SvcError `NOT_REGISTERED`, `SCHEMA_UNAVAILABLE`, `VALUE_TOO_LARGE`, `EXPAND_FAILED`,
   *   `SCHEMA_INVALID`, `STORAGE_ERROR`; nothing changes when it throws.
   */
  async set(id: string, value: unknown, metadata: Record<string, unknown> | undefined, origin?: TraceOrigin): Promise<{ old_value: unknown; new_value: unknown }> {
    const entry = this.registered(id)
    const next = this.changed(entry, value, metadata)
    this.check(id, value, entry.schema, entry.validate!)
    const old = entry.value
    await this.replace(entry, next)
    this.emit(entry, old === undefined ? 'configuration:registered' : 'configuration:updated', old, entry.value, origin)
    return { old_value: old ?? null, new_value: entry.value }
  }

  /**
   * `configuration::update` (§11.2, §5): applies `ops` to the stored value; stored only if the
   * result validates.
   * @throws SvcError as {@link SettingsEntries.set}, and `STORAGE_ERROR` when its file could not be read.
   */
  async update(id: string, ops: UpdateOp[], origin?: TraceOrigin): Promise<{ old_value: unknown; new_value: unknown; errors?: UpdateOpError[] }> {
    const entry = this.registered(id)
    // Operations on a value that could not be read would replace it with a guess.
    if (entry.fileError !== undefined) throw Errors.storageError(`settings file not read: ${entry.fileError}; fix the file, or store a whole new value with configuration::set`)
    const old = entry.value
    const { value, errors } = applyUpdateOps(structuredClone(old), ops)
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

  /** `configuration::list` (§11.2): every entry without its value, ordered by id. */
  list(): { configurations: Array<Record<string, unknown>> } {
    const configurations = [...this.entries.values()]
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((entry) => this.describe(entry))
    return { configurations }
  }

  /**
   * `configuration::schema` (§11.2): `{id, name, description, schema, metadata?}`.
   * @throws SvcError `NOT_FOUND`, `SCHEMA_UNAVAILABLE`
   */
  schema(id: string): Record<string, unknown> {
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

  /** Takes a hand edit of the settings directory (a changed, deleted or unreadable file) into the entries. */
  async onFileEvent(event: SettingsFileEvent): Promise<void> {
    const log = this.log
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

  /** Runs `operation` after every mutation queued before it, so file writes and events keep the order of the calls. */
  serialised<T>(operation: () => Promise<T>): Promise<T> {
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
      await this.files.write(id, text)
    } catch (error) {
      throw Errors.storageError(`cannot write ${this.files.pathOf(id)}: ${(error as Error).message}`, error)
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
    this.triggers.publish({
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

function entryOf(file: SettingsFile): Entry {
  const entry: Entry = { id: file.id, name: file.name, description: file.description, value: file.value }
  if (file.metadata !== undefined) entry.metadata = file.metadata
  return entry
}

/**
 * The settings files of the configuration worker (builtins.md §11.1): one YAML file per entry,
 * `<directory>/<id>.yaml` with `id`, `name`, `description`, `value` and optional `metadata`.
 *
 * - Writes go to a temporary file in the same directory that is then renamed over the target, so
 *   a reader (or a crash) never sees half a file.
 * - Hand edits are watched with chokidar and reported after `debounceMs` of quiet per file. The
 *   worker's own writes are recognised by their content and not reported back.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'
import { MAX_JSON_DEPTH } from 'svc-protocol/json'
import { isMap, stringify } from 'yaml'
import type { Node } from 'yaml'
import { MAX_ALIAS_NODES, MAX_YAML_BYTES, readTextFile, YamlError, YamlSource, type YamlLimits } from '../../yaml/index.ts'

/** Ids of settings entries (§11.1). */
export const ENTRY_ID = /^[a-z0-9_-]{1,64}$/

/**
 * Largest settings file, bytes of the YAML as written (1 MiB, the limit of every YAML file svc
 * reads): the most `configuration::set` stores and the most the worker reads back, one limit, so
 * an acknowledged value survives a restart.
 */
export const MAX_SETTINGS_FILE_BYTES = MAX_YAML_BYTES

/** Deepest nesting of a settings value, and of its metadata, levels: as deep as any JSON value from outside. */
export const MAX_SETTINGS_VALUE_DEPTH = MAX_JSON_DEPTH

/** What a settings file may cost to read: the value sits one level inside the file's mapping. */
export const SETTINGS_FILE_LIMITS: Readonly<YamlLimits> = Object.freeze({
  maxBytes: MAX_SETTINGS_FILE_BYTES,
  maxDepth: MAX_SETTINGS_VALUE_DEPTH + 1,
  maxAliasNodes: MAX_ALIAS_NODES,
})

/** Shortest quiet time before a changed file is read, ms (see {@link SettingsFiles.watch}). */
export const MIN_DEBOUNCE_MS = 60

/** The content of one settings file. */
export interface SettingsFile {
  id: string
  name: string
  description: string
  value: unknown
  metadata?: Record<string, unknown>
}

/** What the watcher reports; `problem` names the place, `<path>:<line>:<column>: <problem>`. */
export type SettingsFileEvent =
  | { kind: 'changed'; id: string; path: string; file: SettingsFile; /** Our writes of the id when it was read. */ writes: number }
  | { kind: 'invalid'; id: string; path: string; problem: string }
  | { kind: 'deleted'; id: string; path: string }

/** A settings file that could be written but would not read back: too large or too deep. */
export class UnstorableSettingsError extends Error {
  override readonly name = 'UnstorableSettingsError'
}

/**
 * Reads and validates the text of a settings file; `file` names it in errors.
 * @throws {YamlError} naming the place: `<file>:3:7: invalid YAML: …`, `… nests deeper than 129 levels`,
 *   `…: id 'x' differs from the file name (y.yaml); the file is ignored`, or `<file>: is <n> bytes, more than …`
 */
export function parseSettingsFile(text: string, expectedId: string, file = `${expectedId}.yaml`): SettingsFile {
  const source = new YamlSource(text, { file, limits: SETTINGS_FILE_LIMITS })
  const top = source.deref(source.doc.contents)
  if (top === null || !isMap(top)) throw source.errorAt(top, 'must be a mapping with id, name, description and value')
  const data = source.toJS(top) as Record<string, unknown>
  const at = (key: string): Node | null => {
    const node = top.get(key, true) as Node | undefined
    return node ?? top
  }
  if (data.id !== expectedId) throw source.errorAt(at('id'), `id '${String(data.id)}' differs from the file name (${expectedId}.yaml); the file is ignored`)
  for (const key of Object.keys(data)) {
    if (!['id', 'name', 'description', 'value', 'metadata'].includes(key)) {
      throw source.errorAt(at(key), `unknown key '${key}' (a settings file has id, name, description, value and metadata)`)
    }
  }
  const result: SettingsFile = {
    id: expectedId,
    name: typeof data.name === 'string' ? data.name : expectedId,
    description: typeof data.description === 'string' ? data.description : '',
    value: data.value === undefined ? {} : data.value,
  }
  if (data.metadata !== undefined && data.metadata !== null) {
    if (typeof data.metadata !== 'object' || Array.isArray(data.metadata)) throw source.errorAt(at('metadata'), 'metadata must be a mapping')
    result.metadata = data.metadata as Record<string, unknown>
  }
  return result
}

/**
 * The YAML text of a settings file, checked to read back: at most {@link MAX_SETTINGS_FILE_BYTES}
 * as written (the YAML, which can be larger than the JSON the value came in), value and metadata
 * nested at most {@link MAX_SETTINGS_VALUE_DEPTH} levels. Written without anchors and aliases.
 * @throws {UnstorableSettingsError} naming the limit
 */
export function formatSettingsFile(file: SettingsFile): string {
  for (const [what, value] of [['value', file.value], ['metadata', file.metadata]] as const) {
    const reason = unstorable(value, MAX_SETTINGS_VALUE_DEPTH, MAX_SETTINGS_FILE_BYTES)
    if (reason !== undefined) throw new UnstorableSettingsError(reason.startsWith('nests') ? `its ${what} ${reason}` : reason)
  }
  const out: Record<string, unknown> = { id: file.id, name: file.name, description: file.description, value: file.value }
  if (file.metadata !== undefined) out.metadata = file.metadata
  const text = stringify(out, { lineWidth: 0, aliasDuplicateObjects: false })
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes > MAX_SETTINGS_FILE_BYTES) {
    throw new UnstorableSettingsError(`its settings file would be ${bytes} bytes of YAML, more than the ${MAX_SETTINGS_FILE_BYTES}-byte limit`)
  }
  return text
}

/** The settings directory: read, write, delete and watch entry files. */
export class SettingsFiles {
  readonly directory: string
  /** Text last written or read per id, to tell our own writes from hand edits. */
  private readonly known = new Map<string, string>()
  /**
   * Our writes per id so far. A hand-edit check whose read started before one of our writes may
   * have read the older text: it is dropped, or it would put the older value back over ours.
   */
  private readonly writes = new Map<string, number>()
  private watcher: FSWatcher | null = null
  private watching: Promise<void> = Promise.resolve()
  private readonly timers = new Map<string, NodeJS.Timeout>()

  constructor(directory: string) {
    this.directory = directory
  }

  pathOf(id: string): string {
    return join(this.directory, `${id}.yaml`)
  }

  /**
   * Reads every `<id>.yaml` of the directory (creating it when missing). Files that cannot be read
   * are reported in `invalid` with the place of the problem (`<path>:<line>:<column>: <problem>`),
   * and left as they are on disk.
   */
  async loadAll(): Promise<{ files: SettingsFile[]; invalid: Array<{ id: string; path: string; problem: string }> }> {
    await mkdir(this.directory, { recursive: true })
    const files: SettingsFile[] = []
    const invalid: Array<{ id: string; path: string; problem: string }> = []
    for (const name of (await readdir(this.directory)).sort()) {
      const id = idOfFile(name)
      if (id === undefined) continue
      const path = this.pathOf(id)
      try {
        const text = await this.read(id)
        files.push(parseSettingsFile(text, id, path))
        this.known.set(id, text)
      } catch (error) {
        invalid.push({ id, path, problem: problemOf(error, path) })
      }
    }
    return { files, invalid }
  }

  /**
   * Writes an entry's file atomically (temporary file, then rename). `text` comes from
   * {@link formatSettingsFile}, which checks that it reads back.
   */
  async write(id: string, text: string): Promise<void> {
    if (this.known.get(id) === text) return
    await mkdir(this.directory, { recursive: true })
    const temporary = join(this.directory, `.${id}.${randomBytes(6).toString('hex')}.tmp`)
    this.known.set(id, text)
    this.writes.set(id, (this.writes.get(id) ?? 0) + 1)
    try {
      await writeFile(temporary, text, { mode: 0o644 })
      await rename(temporary, this.pathOf(id))
    } catch (error) {
      this.known.delete(id)
      await rm(temporary, { force: true })
      throw error
    }
  }

  /**
   * Watches the directory and calls `onEvent` for hand edits, `debounceMs` after the last change
   * of a file. Our own writes are not reported.
   */
  watch(debounceMs: number, onEvent: (event: SettingsFileEvent) => void): void {
    if (this.watcher) return
    // chokidar drops a file's change events that follow the previous one within 50 ms; waiting
    // longer than that before reading means the content read is the last one written.
    const quiet = Math.max(debounceMs, MIN_DEBOUNCE_MS)
    const schedule = (path: string) => {
      const id = idOfFile(basename(path))
      if (id === undefined) return
      clearTimeout(this.timers.get(id))
      this.timers.set(
        id,
        setTimeout(() => {
          this.timers.delete(id)
          void this.inspect(id).then((event) => event && onEvent(event))
        }, quiet),
      )
    }
    this.watcher = watch(this.directory, { ignoreInitial: true, depth: 0 })
    const watcher = this.watcher
    this.watching = new Promise((resolve) => watcher.once('ready', () => resolve()))
    this.watcher.on('add', schedule).on('change', schedule).on('unlink', schedule)
    this.watcher.on('error', () => {})
  }

  /**
   * Whether a hand edit still is the latest text of its file: false once one of our writes of the
   * id followed the read (the event waited behind it and would undo it).
   */
  isCurrent(event: SettingsFileEvent): boolean {
    return event.kind !== 'changed' || (this.writes.get(event.id) ?? 0) === event.writes
  }

  /** Resolves once the watcher is ready (for tests that edit right after start). */
  ready(): Promise<void> {
    return this.watching
  }

  async close(): Promise<void> {
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
    const watcher = this.watcher
    this.watcher = null
    await watcher?.close()
  }

  /** What changed in `id`'s file since we last wrote or read it; null when nothing did. */
  private async inspect(id: string): Promise<SettingsFileEvent | null> {
    const path = this.pathOf(id)
    const writes = this.writes.get(id) ?? 0
    let text: string
    try {
      text = await this.read(id)
      // One of our writes landed while reading: what was read may be older than it.
      if ((this.writes.get(id) ?? 0) !== writes) return null
    } catch (error) {
      if ((this.writes.get(id) ?? 0) !== writes) return null
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        if (!this.known.has(id)) return null
        this.known.delete(id)
        return { kind: 'deleted', id, path }
      }
      return { kind: 'invalid', id, path, problem: problemOf(error, path) }
    }
    if (this.known.get(id) === text) return null
    try {
      const file = parseSettingsFile(text, id, path)
      this.known.set(id, text)
      return { kind: 'changed', id, path, file, writes }
    } catch (error) {
      return { kind: 'invalid', id, path, problem: problemOf(error, path) }
    }
  }

  /** The text of `id`'s file, refused beyond {@link MAX_SETTINGS_FILE_BYTES} or when not UTF-8. */
  private read(id: string): Promise<string> {
    const path = this.pathOf(id)
    return readTextFile(path, { file: path, maxBytes: MAX_SETTINGS_FILE_BYTES, strictUtf8: true })
  }
}

/**
 * Why `value` cannot be part of a settings file, or undefined: nested deeper than `maxDepth`, or
 * sure to need more than `maxBytes` of YAML (each node takes at least a byte, and each string and
 * key at least its length). Stops at the first limit crossed, without recursion, so a value far
 * over the limit costs no more than one at the limit.
 */
function unstorable(value: unknown, maxDepth: number, maxBytes: number): string | undefined {
  const over = `its settings file would be more than ${maxBytes} bytes of YAML, the limit`
  let bytes = 1
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!
    if (typeof current === 'string') bytes += current.length
    else if (typeof current === 'object' && current !== null) {
      if (depth >= maxDepth) return `nests deeper than ${maxDepth} levels`
      const keys = Array.isArray(current) ? undefined : Object.keys(current)
      const children: unknown[] = keys ? keys.map((key) => (current as Record<string, unknown>)[key]) : (current as unknown[])
      bytes += children.length
      if (keys) for (const key of keys) bytes += key.length
      if (bytes > maxBytes) return over
      for (const child of children) stack.push({ value: child, depth: depth + 1 })
    }
    if (bytes > maxBytes) return over
  }
  return undefined
}

/** The entry id of a directory entry name, undefined for other files (temporaries, other extensions). */
function idOfFile(name: string): string | undefined {
  if (!name.endsWith('.yaml')) return undefined
  const id = name.slice(0, -'.yaml'.length)
  return ENTRY_ID.test(id) ? id : undefined
}

/** A read or parse failure as `<path>[:<line>:<column>]: <problem>`. */
function problemOf(error: unknown, path: string): string {
  if (error instanceof YamlError) return error.message
  return `${path}: ${(error as Error).message}`
}

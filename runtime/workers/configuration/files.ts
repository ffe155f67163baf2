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
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { watch, type FSWatcher } from 'chokidar'
import { MAX_JSON_DEPTH } from 'svc-protocol/json'
import { parseDocument, stringify } from 'yaml'

/** Ids of settings entries (§11.1). */
export const ENTRY_ID = /^[a-z0-9_-]{1,64}$/

/** Largest settings file read, bytes; a larger file is refused like one that does not parse. */
export const MAX_SETTINGS_FILE_BYTES = 4 * 1024 * 1024

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

/** What the watcher reports. */
export type SettingsFileEvent =
  | { kind: 'changed'; id: string; path: string; file: SettingsFile }
  | { kind: 'invalid'; id: string; path: string; problem: string }
  | { kind: 'deleted'; id: string; path: string }

/**
 * Reads and validates the text of a settings file.
 * @throws Error naming the problem (`not valid YAML: …`, `id 'x' differs from the file name`).
 */
export function parseSettingsFile(text: string, expectedId: string): SettingsFile {
  const document = parseDocument(text, { uniqueKeys: true })
  if (document.errors.length > 0) throw new Error(`not valid YAML: ${document.errors[0]!.message.split('\n')[0]}`)
  const data: unknown = document.toJS({ maxAliasCount: 100 })
  if (nestedDeeperThan(data, MAX_JSON_DEPTH)) throw new Error(`nests deeper than ${MAX_JSON_DEPTH} levels`)
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new Error('must be a mapping with id, name, description and value')
  const record = data as Record<string, unknown>
  if (record.id !== expectedId) throw new Error(`id '${String(record.id)}' differs from the file name (${expectedId}.yaml); the file is ignored`)
  for (const key of Object.keys(record)) {
    if (!['id', 'name', 'description', 'value', 'metadata'].includes(key)) throw new Error(`unknown key '${key}' (a settings file has id, name, description, value and metadata)`)
  }
  const file: SettingsFile = {
    id: expectedId,
    name: typeof record.name === 'string' ? record.name : expectedId,
    description: typeof record.description === 'string' ? record.description : '',
    value: record.value === undefined ? {} : record.value,
  }
  if (record.metadata !== undefined && record.metadata !== null) {
    if (typeof record.metadata !== 'object' || Array.isArray(record.metadata)) throw new Error('metadata must be a mapping')
    file.metadata = record.metadata as Record<string, unknown>
  }
  return file
}

/** The YAML text of a settings file. */
export function formatSettingsFile(file: SettingsFile): string {
  const out: Record<string, unknown> = { id: file.id, name: file.name, description: file.description, value: file.value }
  if (file.metadata !== undefined) out.metadata = file.metadata
  return stringify(out, { lineWidth: 0 })
}

/** The settings directory: read, write, delete and watch entry files. */
export class SettingsFiles {
  readonly directory: string
  /** Text last written or read per id, to tell our own writes from hand edits. */
  private readonly known = new Map<string, string>()
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
   * Reads every `<id>.yaml` of the directory (creating it when missing). Files that fail to parse
   * are reported in `invalid` and skipped.
   */
  async loadAll(): Promise<{ files: SettingsFile[]; invalid: Array<{ path: string; problem: string }> }> {
    await mkdir(this.directory, { recursive: true })
    const files: SettingsFile[] = []
    const invalid: Array<{ path: string; problem: string }> = []
    for (const name of (await readdir(this.directory)).sort()) {
      const id = idOfFile(name)
      if (id === undefined) continue
      const path = this.pathOf(id)
      try {
        const text = await readBounded(path)
        files.push(parseSettingsFile(text, id))
        this.known.set(id, text)
      } catch (error) {
        invalid.push({ path, problem: (error as Error).message })
      }
    }
    return { files, invalid }
  }

  /** Writes an entry's file atomically (temporary file, then rename). */
  async write(file: SettingsFile): Promise<void> {
    const text = formatSettingsFile(file)
    if (this.known.get(file.id) === text) return
    await mkdir(this.directory, { recursive: true })
    const temporary = join(this.directory, `.${file.id}.${randomBytes(6).toString('hex')}.tmp`)
    this.known.set(file.id, text)
    try {
      await writeFile(temporary, text, { mode: 0o644 })
      await rename(temporary, this.pathOf(file.id))
    } catch (error) {
      this.known.delete(file.id)
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
    let text: string
    try {
      text = await readBounded(path)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        if (!this.known.has(id)) return null
        this.known.delete(id)
        return { kind: 'deleted', id, path }
      }
      return { kind: 'invalid', id, path, problem: (error as Error).message }
    }
    if (this.known.get(id) === text) return null
    try {
      const file = parseSettingsFile(text, id)
      this.known.set(id, text)
      return { kind: 'changed', id, path, file }
    } catch (error) {
      return { kind: 'invalid', id, path, problem: (error as Error).message }
    }
  }
}

/** Whether `value` has arrays or objects nested more than `limit` levels deep (checked without recursion). */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }]
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop()!
    if (typeof current !== 'object' || current === null) continue
    if (depth >= limit) return true
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 })
  }
  return false
}

/** The entry id of a directory entry name, undefined for other files (temporaries, other extensions). */
function idOfFile(name: string): string | undefined {
  if (!name.endsWith('.yaml')) return undefined
  const id = name.slice(0, -'.yaml'.length)
  return ENTRY_ID.test(id) ? id : undefined
}

async function readBounded(path: string): Promise<string> {
  const buffer = await readFile(path)
  if (buffer.byteLength > MAX_SETTINGS_FILE_BYTES) throw new Error(`larger than ${MAX_SETTINGS_FILE_BYTES} bytes`)
  return new TextDecoder('utf-8', { fatal: true }).decode(buffer)
}

/**
 * config.yaml reload while `svc` runs (cli.md §2.1 Reload): the file is watched, changes are
 * debounced (300 ms), the new file is validated, and the differences are handed to the caller.
 * A file that fails to load is reported and nothing changes.
 */
import { watch, type FSWatcher } from 'chokidar'
import type { LoadedConfig, LoadedLocalWorkerEntry } from '../../runtime/index.ts'

/** Debounce of config.yaml changes, ms (cli.md §2.1). */
export const CONFIG_RELOAD_DEBOUNCE_MS = 300

/** What changed between two loads of config.yaml. */
export interface ConfigChanges {
  /** Local workers to start: new entries, or entries switched to `enabled: true`. */
  started: LoadedLocalWorkerEntry[]
  /** Names of local workers to stop: removed entries, or entries switched to `enabled: false`. */
  stopped: string[]
  /** Local workers whose entry changed (`worker_path`, `env`, `namespace`, `isolation`, `watch`, `config`). */
  restarted: LoadedLocalWorkerEntry[]
  /** Built-ins whose entry changed; applied at the next start (seed rule, builtins.md §2.7). */
  builtins: string[]
  /** True when a listener entry changed; applied at the next start. */
  listeners: boolean
}

const entryKey = (e: LoadedLocalWorkerEntry) =>
  JSON.stringify([e.worker_path, e.env, e.namespace ?? 'default', e.isolation ?? null, e.watch, e.config ?? null])

/** Compares two loads of config.yaml. */
export function diffConfig(before: LoadedConfig, after: LoadedConfig): ConfigChanges {
  const old = new Map(before.local_workers.filter((e) => e.enabled).map((e) => [e.name, e]))
  const now = new Map(after.local_workers.filter((e) => e.enabled).map((e) => [e.name, e]))
  const changes: ConfigChanges = { started: [], stopped: [], restarted: [], builtins: [], listeners: false }
  for (const [name, entry] of now) {
    const previous = old.get(name)
    if (!previous) changes.started.push(entry)
    else if (entryKey(previous) !== entryKey(entry)) changes.restarted.push(entry)
  }
  for (const name of old.keys()) if (!now.has(name)) changes.stopped.push(name)
  const names = new Set([...Object.keys(before.builtins), ...Object.keys(after.builtins)])
  for (const name of names) {
    if (JSON.stringify(before.builtins[name] ?? null) !== JSON.stringify(after.builtins[name] ?? null)) changes.builtins.push(name)
  }
  changes.listeners = JSON.stringify(before.listeners) !== JSON.stringify(after.listeners)
  return changes
}

/**
 * Watches `file`; after each burst of changes calls `load()` and then `onReload(next)`, or
 * `onError(err)` when loading fails. `close()` stops watching.
 */
export function watchConfigFile(
  file: string,
  handlers: { load: () => LoadedConfig; onReload: (next: LoadedConfig) => void | Promise<void>; onError: (err: unknown) => void },
): { close(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()
  const watcher: FSWatcher = watch(file, { ignoreInitial: true, awaitWriteFinish: false })
  const fire = () => {
    timer = undefined
    // Reloads run one after another, so a slow restart never overlaps the next reload.
    running = running.then(async () => {
      let next: LoadedConfig
      try {
        next = handlers.load()
      } catch (err) {
        handlers.onError(err)
        return
      }
      await handlers.onReload(next)
    })
  }
  watcher.on('all', () => {
    if (timer) clearTimeout(timer)
    timer = setTimeout(fire, CONFIG_RELOAD_DEBOUNCE_MS)
  })
  return {
    async close() {
      if (timer) clearTimeout(timer)
      await watcher.close()
      await running
    },
  }
}

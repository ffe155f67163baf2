/**
 * `svc worker restart <name>` asks the `svc` process that supervises the worker through a request
 * file, `.svc/state/workers/<name>.restart`, beside the state file the command already reads (no
 * engine function is needed, and only a process with write access to the project can ask).
 */
import { mkdirSync, readdirSync, rmSync, watch, writeFileSync } from 'node:fs'
import type { FSWatcher } from 'node:fs'
import { dirname, join } from 'node:path'
import { stateFilePath } from '../supervisor/state-file.ts'

/** The request file of `name`. */
export function restartRequestPath(projectRoot: string, name: string): string {
  return join(dirname(stateFilePath(projectRoot, name)), `${name}.restart`)
}

/** Writes the request (`svc worker restart`). */
export function requestRestart(projectRoot: string, name: string): void {
  const path = restartRequestPath(projectRoot, name)
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${new Date().toISOString()}\n`)
}

/**
 * Calls `onRequest(name)` for every request file that appears (and for any already there), removing
 * it first. Returns the watcher to close.
 */
export function watchRestartRequests(projectRoot: string, onRequest: (name: string) => void): FSWatcher {
  const dir = dirname(stateFilePath(projectRoot, 'x'))
  mkdirSync(dir, { recursive: true })
  const take = () => {
    let names: string[] = []
    try {
      names = readdirSync(dir).filter((n) => n.endsWith('.restart'))
    } catch {
      return
    }
    for (const file of names) {
      rmSync(join(dir, file), { force: true })
      onRequest(file.slice(0, -'.restart'.length))
    }
  }
  const watcher = watch(dir, (_event, file) => {
    if (file === null || String(file).endsWith('.restart')) take()
  })
  watcher.on('error', () => {})
  take()
  return watcher
}

/**
 * One engine per data directory (builtins.md §13.2): the engine holds `<data_dir>/.lock`, a file
 * created exclusively and holding its pid.
 */
import { mkdirSync, openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs'
import { join } from 'node:path'
import { CliError, ExitCode } from './errors.ts'
import { processAlive } from './processes.ts'

/** A held lock; `release()` removes the file if it is still ours. Idempotent. */
export interface DataDirLock {
  readonly path: string
  release(): void
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10)
    return Number.isInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

/**
 * Takes the lock of `dataDir` (created if missing). A lock left by a process that no longer exists
 * is taken over.
 *
 * @throws {CliError} exit 1, code `DATA_DIR_LOCKED`:
 *   `data directory <dir> is in use by another svc engine (pid <n>)`
 */
export function lockDataDir(dataDir: string, pid = process.pid): DataDirLock {
  mkdirSync(dataDir, { recursive: true })
  const path = join(dataDir, '.lock')
  // Two attempts: the second after removing a stale lock.
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number
    try {
      fd = openSync(path, 'wx')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      const owner = readPid(path)
      if (owner !== undefined && owner !== pid && processAlive(owner)) {
        throw new CliError({
          code: 'DATA_DIR_LOCKED',
          message: `data directory ${dataDir} is in use by another svc engine (pid ${owner})`,
          exitCode: ExitCode.Failure,
          hint: 'stop the other engine, or pass --data-dir to use another directory',
        })
      }
      try {
        unlinkSync(path)
      } catch {
        // Someone else removed it first; the next exclusive open decides.
      }
      continue
    }
    try {
      writeSync(fd, `${pid}\n`)
    } finally {
      closeSync(fd)
    }
    let released = false
    return {
      path,
      release() {
        if (released) return
        released = true
        if (readPid(path) !== pid) return
        try {
          unlinkSync(path)
        } catch {
          // Already gone.
        }
      },
    }
  }
  throw new CliError({
    code: 'DATA_DIR_LOCKED',
    message: `data directory ${dataDir} is in use by another svc engine`,
    exitCode: ExitCode.Failure,
  })
}

/**
 * The supervisor state file `.svc/state/workers/<name>.json` (cli.md §2, §5.3): install hashes that
 * survive restarts of svc, and the worker's last known state for `svc worker list`.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdir, rename, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { isDependencyManifest } from './manifest.ts'
import type { WorkerStateRecord } from './types.ts'

/** Default state file of a worker: `<projectRoot>/.svc/state/workers/<name>.json`. */
export function stateFilePath(projectRoot: string, name: string): string {
  return join(projectRoot, '.svc', 'state', 'workers', `${name}.json`)
}

/** Default log file of a worker: `<projectRoot>/.svc/logs/<name>.log`. */
export function logFilePath(projectRoot: string, name: string): string {
  return join(projectRoot, '.svc', 'logs', `${name}.log`)
}

/**
 * Reads a state file; undefined when it is missing or not valid JSON (a damaged file only costs
 * one extra install). A record whose `supervisor_pid` is not alive describes a previous run.
 */
export function readWorkerState(file: string): WorkerStateRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as unknown
    return parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as WorkerStateRecord) : undefined
  } catch {
    return undefined
  }
}

/**
 * Writes state records one after the other, each atomically (temporary file, then rename), so a
 * reader never sees half a file and the last write wins.
 */
export class StateFile {
  readonly path: string
  private chain: Promise<void> = Promise.resolve()
  private serial = 0

  constructor(path: string) {
    this.path = path
  }

  read(): WorkerStateRecord | undefined {
    return readWorkerState(this.path)
  }

  write(record: WorkerStateRecord): Promise<void> {
    const text = `${JSON.stringify(record, null, 2)}\n`
    const temp = `${this.path}.${process.pid}.${this.serial++}.tmp`
    this.chain = this.chain
      .then(async () => {
        await mkdir(dirname(this.path), { recursive: true })
        await writeFile(temp, text)
        await rename(temp, this.path)
      })
      .catch(() => {
        /* the state file is advisory; a failed write is retried with the next transition */
      })
    return this.chain
  }
}

/**
 * Hash of the dependency manifests directly in `directory` (cli.md §5.3): SHA-256 over the sorted
 * file names and contents, `sha256:<hex>`. The same value for the same files, whatever their times.
 */
export function dependencyHash(directory: string): string {
  const hash = createHash('sha256')
  let names: string[] = []
  try {
    names = readdirSync(directory, { withFileTypes: true })
      .filter((e) => e.isFile() && isDependencyManifest(e.name))
      .map((e) => e.name)
      .sort()
  } catch {
    /* a missing directory hashes as empty */
  }
  for (const name of names) {
    let content: Buffer
    try {
      content = readFileSync(join(directory, name))
    } catch {
      continue
    }
    hash.update(name).update('\0').update(String(content.length)).update('\0').update(content)
  }
  return `sha256:${hash.digest('hex')}`
}

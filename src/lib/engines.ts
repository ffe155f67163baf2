/**
 * Which engine belongs to which project (issue 11): a running `svc` records itself twice, in the
 * project (`.svc/state/engine.json`, read by the project's own commands) and in a per-user registry
 * of running engines (one file per pid, read to name the project behind an address or a port).
 * Records of processes that no longer exist are ignored (and removed when seen).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { basename, join } from 'node:path'
import { parseProjectIni, PROJECT_INI } from '../project/project-ini.ts'
import { splitAddressList } from 'svc-protocol/client'
import { LISTENER_DEFAULTS } from '../../runtime/index.ts'
import { processAlive } from './processes.ts'

/** What a running engine records about itself. */
export interface EngineRecord {
  pid: number
  /** Absolute project root (the directory of config.yaml, or the cwd without one). */
  project_root: string
  /** `project_name` of `.svc/project.ini`, else the root's base name. */
  project_name: string
  /** Absolute config.yaml, when there is one. */
  config_file: string | null
  /** `ws://…` of every engine listener, as bound. */
  engine_urls: string[]
  /**
   * `max_message_bytes` of each listener, in the order of `engine_urls` (protocol.md §2): the
   * largest message it accepts, so `svc trigger` can refuse a larger payload before sending it.
   * Absent in records of older versions.
   */
  max_message_bytes?: number[]
  /** Every TCP port the engine bound (listeners, svc-http, svc-stream). */
  ports: number[]
  /** ms since the epoch. */
  started_at_ms: number
}

/** The project's own record: `<root>/.svc/state/engine.json`. */
export function projectStateFile(projectRoot: string): string {
  return join(projectRoot, '.svc', 'state', 'engine.json')
}

/**
 * The per-user registry of running engines: `SVC_ENGINES_DIR`, else `<tmpdir>/svc-<user>/engines`
 * (one machine, one user; a temporary directory because records die with the processes anyway).
 */
export function registryDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SVC_ENGINES_DIR) return env.SVC_ENGINES_DIR
  let user: string
  try {
    user = userInfo().username
  } catch {
    user = String(process.getuid?.() ?? 'user')
  }
  return join(tmpdir(), `svc-${user}`, 'engines')
}

/** The project's name: `project_name` of `.svc/project.ini`, else the directory's base name. */
export function projectName(projectRoot: string): string {
  try {
    const name = parseProjectIni(readFileSync(join(projectRoot, PROJECT_INI), 'utf8')).project_name
    if (name) return name
  } catch {
    // No identity file: a hand-made project.
  }
  return basename(projectRoot)
}

function writeAtomically(file: string, text: string): void {
  const temp = `${file}.${process.pid}.tmp`
  writeFileSync(temp, text)
  renameSync(temp, file)
}

function readRecord(file: string): EngineRecord | undefined {
  try {
    const record = JSON.parse(readFileSync(file, 'utf8')) as EngineRecord
    return typeof record.pid === 'number' && Array.isArray(record.engine_urls) ? record : undefined
  } catch {
    return undefined
  }
}

/**
 * Records a started engine in its project and in the registry. Returns the function that removes
 * both records (only if they are still this process's). Failing to write is not fatal: the engine
 * runs, commands fall back to config.yaml.
 */
export function recordEngine(record: EngineRecord, env: NodeJS.ProcessEnv = process.env): () => void {
  const files: string[] = []
  const text = `${JSON.stringify(record, null, 2)}\n`
  for (const [dir, name] of [
    [join(record.project_root, '.svc', 'state'), 'engine.json'],
    [registryDir(env), `${record.pid}.json`],
  ] as const) {
    try {
      mkdirSync(dir, { recursive: true })
      writeAtomically(join(dir, name), text)
      files.push(join(dir, name))
    } catch {
      // A read-only project or temporary directory: the record is a convenience.
    }
  }
  let removed = false
  return () => {
    if (removed) return
    removed = true
    for (const file of files) {
      if (readRecord(file)?.pid !== record.pid) continue
      try {
        unlinkSync(file)
      } catch {
        // Already gone.
      }
    }
  }
}

/** The running engine recorded in the project, or undefined (none, or its process is gone). */
export function runningEngineOf(projectRoot: string): EngineRecord | undefined {
  const record = readRecord(projectStateFile(projectRoot))
  return record !== undefined && processAlive(record.pid) ? record : undefined
}

/** Every running engine of the registry; records of dead processes are removed. */
export function runningEngines(env: NodeJS.ProcessEnv = process.env): EngineRecord[] {
  const dir = registryDir(env)
  if (!existsSync(dir)) return []
  const records: EngineRecord[] = []
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.json')) continue
    const file = join(dir, name)
    const record = readRecord(file)
    if (record === undefined) continue
    if (processAlive(record.pid)) records.push(record)
    else {
      try {
        unlinkSync(file)
      } catch {
        // Another command cleaned it up.
      }
    }
  }
  return records
}

/** Host and port of a `ws://` URL with loopback names made equal, for comparing addresses. */
function endpoint(url: string): string | undefined {
  try {
    const parsed = new URL(url)
    let host = parsed.hostname.replace(/^\[|\]$/g, '')
    if (host === 'localhost' || host === '0.0.0.0' || host === '::' || host === '::1' || host.startsWith('127.')) host = 'loopback'
    return `${host}:${parsed.port || (parsed.protocol === 'wss:' ? '443' : '80')}`
  } catch {
    return undefined
  }
}

/** The running engine listening at `url`, according to the registry. */
export function engineAt(url: string, env: NodeJS.ProcessEnv = process.env): EngineRecord | undefined {
  const target = endpoint(url)
  if (target === undefined) return undefined
  return runningEngines(env).find((r) => r.engine_urls.some((u) => endpoint(u) === target))
}

/**
 * The largest message the engine at `url` accepts, bytes: `max_message_bytes` of that listener as
 * its running engine recorded it, else the protocol's default (64 MiB, protocol.md §2) — an engine
 * the registry does not know (another machine, an older svc) is assumed to have the default. Of a
 * comma-separated list of addresses, the smallest of their limits.
 */
export function maxMessageBytesAt(url: string, env: NodeJS.ProcessEnv = process.env): number {
  // A list (issue 19 §3): any of its engines may answer, so the payload must fit the smallest.
  const addresses = splitAddressList(url)
  if (addresses.length > 1) return Math.min(...addresses.map((address) => maxMessageBytesAt(address, env)))
  const record = engineAt(url, env)
  const target = endpoint(url)
  const index = record?.engine_urls.findIndex((u) => endpoint(u) === target) ?? -1
  const limit = index < 0 ? undefined : record?.max_message_bytes?.[index]
  return typeof limit === 'number' && Number.isSafeInteger(limit) && limit > 0 ? limit : LISTENER_DEFAULTS.max_message_bytes
}

/** The running engine (other than `exceptPid`) that bound TCP `port`, according to the registry. */
export function engineHoldingPort(port: number, env: NodeJS.ProcessEnv = process.env, exceptPid = process.pid): EngineRecord | undefined {
  return runningEngines(env).find((r) => r.pid !== exceptPid && r.ports.includes(port))
}

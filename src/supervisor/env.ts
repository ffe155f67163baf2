/**
 * The environment of a launched worker (cli.md §5.2).
 */
import { dirname, delimiter } from 'node:path'
import type { WorkerManifest, WorkerSpec } from './types.ts'

/** Variables svc sets for every worker; `env` blocks cannot override them (cli.md §5.2). */
export const RESERVED_ENV = [
  'SVC_URL',
  'SVC_WORKER_NAME',
  'SVC_NAMESPACE',
  'SVC_ISOLATION',
  'SVC_WORKER_CONFIG',
  'SVC_PROJECT_ROOT',
  'III_URL',
  'III_WORKER_NAME',
  'III_NAMESPACE',
] as const

/** What compose containers inherit from the daemon (cli.md §5.2). */
export const BASELINE_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TMPDIR', 'TZ', 'LANG', 'LC_ALL'] as const
const BASELINE_ENV_WINDOWS = ['SystemRoot', 'ComSpec', 'PATHEXT', 'APPDATA', 'LOCALAPPDATA', 'USERPROFILE'] as const

export function isReserved(name: string): boolean {
  return (RESERVED_ENV as readonly string[]).includes(process.platform === 'win32' ? name.toUpperCase() : name)
}

/** The reserved names set in `env`, in order (for `RESERVED_ENV_OVERRIDE`). */
export function reservedNamesIn(env: Record<string, string>): string[] {
  return Object.keys(env).filter(isReserved)
}

export interface WorkerEnvInput {
  spec: Pick<WorkerSpec, 'name' | 'namespace' | 'engineUrl' | 'projectRoot' | 'envBase' | 'env' | 'config'>
  manifest: (Pick<WorkerManifest, 'env'> & { runtime?: WorkerManifest['runtime'] }) | undefined
  isolation: 'process' | 'microvm'
  /** The supervising process's environment; default `process.env`. */
  parentEnv?: NodeJS.ProcessEnv
  /** Directory put first on PATH; default the directory of `process.execPath`. */
  nodeDir?: string
}

export interface WorkerEnv {
  env: Record<string, string>
  /** Reserved names found in manifest or entry `env` and ignored, as `<source> env sets <NAME>`. */
  ignored: string[]
}

/**
 * Builds a worker's environment (cli.md §5.2).
 *
 * - `engine` base: the parent environment, then manifest `env`, then `spec.env`, then the reserved
 *   variables; reserved names in either `env` are ignored (listed in `ignored` for a warning).
 * - `compose` base: the baseline variables of the parent, then `spec.env` (env_file + environment,
 *   which the caller must have checked with {@link reservedNamesIn}), then manifest `env`, then
 *   the reserved variables.
 *
 * In both, the directory of the Node running svc is put first on the inherited PATH, so `node`,
 * `npm` and `npx` in worker commands are the ones svc runs on; a PATH set in an `env` block is
 * used as written. Reserved variables the parent happens to have are dropped, so
 * `SVC_WORKER_CONFIG` is only set when the entry has a `config`. A `python` worker gets
 * `PYTHONUNBUFFERED=1` unless its environment sets it: Python buffers a piped stdout, which would
 * hold its lines back from the log until the buffer fills or the process ends.
 */
export function buildWorkerEnv(input: WorkerEnvInput): WorkerEnv {
  const parent = input.parentEnv ?? process.env
  const env: Record<string, string> = {}
  const ignored: string[] = []
  const windows = process.platform === 'win32'
  const names = input.spec.envBase === 'compose' ? [...BASELINE_ENV, ...(windows ? BASELINE_ENV_WINDOWS : [])] : undefined
  for (const [key, value] of Object.entries(parent)) {
    if (value === undefined || isReserved(key)) continue
    if (names && !names.some((n) => (windows ? n.toUpperCase() === key.toUpperCase() : n === key))) continue
    env[key] = value
  }
  const pathKey = Object.keys(env).find((k) => (windows ? k.toUpperCase() === 'PATH' : k === 'PATH')) ?? 'PATH'
  const nodeDir = input.nodeDir ?? dirname(process.execPath)
  const inherited = env[pathKey]
  const parts = inherited ? inherited.split(delimiter) : []
  if (parts[0] !== nodeDir) env[pathKey] = [nodeDir, ...parts].join(delimiter)

  if (input.manifest?.runtime?.kind === 'python' && env.PYTHONUNBUFFERED === undefined) env.PYTHONUNBUFFERED = '1'

  const layer = (source: string, block: Record<string, string>) => {
    for (const [key, value] of Object.entries(block)) {
      if (isReserved(key)) ignored.push(`${source} env sets ${key}`)
      else env[key] = value
    }
  }
  if (input.spec.envBase === 'compose') {
    layer('entry', input.spec.env)
    layer('manifest', input.manifest?.env ?? {})
  } else {
    layer('manifest', input.manifest?.env ?? {})
    layer('entry', input.spec.env)
  }

  const { spec } = input
  env.SVC_URL = spec.engineUrl
  env.SVC_WORKER_NAME = spec.name
  env.SVC_NAMESPACE = spec.namespace
  env.SVC_ISOLATION = input.isolation
  env.SVC_PROJECT_ROOT = spec.projectRoot
  if (spec.config !== undefined) env.SVC_WORKER_CONFIG = JSON.stringify(spec.config)
  env.III_URL = spec.engineUrl
  env.III_WORKER_NAME = spec.name
  env.III_NAMESPACE = spec.namespace
  return { env, ignored }
}

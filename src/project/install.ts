/**
 * Installing a new project's dependencies (cli.md §4.1): `<manager> install` in each directory the
 * template put a package.json in.
 */
import { existsSync } from 'node:fs'
import { delimiter, dirname, join, posix, relative, sep } from 'node:path'
import { loadConfig } from '../../runtime/index.ts'
import { CliError, ExitCode } from '../lib/errors.ts'
import { loadManifest } from '../supervisor/manifest.ts'
import { primeCompileCache } from '../supervisor/prime.ts'
import type { PrimeOutcome } from '../supervisor/prime.ts'
import { dependencyHash, StateFile, stateFilePath } from '../supervisor/state-file.ts'
import type { PackageManager } from './types.ts'

/**
 * Directories (relative to the project, `/`-separated, `''` for the project itself) holding a
 * package.json among `files`, the paths a template wrote. Sorted, the project first. Only the
 * template's files count, so a `--force` init never installs in directories it did not create.
 */
export function installDirectories(files: readonly string[]): string[] {
  const dirs = files.filter((f) => posix.basename(f) === 'package.json').map((f) => posix.dirname(f).replace(/^\.$/, ''))
  return [...new Set(dirs)].sort()
}

/**
 * The install command for `manager`: `<manager> install`; npm also gets `--no-audit --no-fund`,
 * which only skip the advisory requests and messages of a first install.
 */
export function installCommand(manager: PackageManager): { file: string; args: string[] } {
  return { file: manager, args: manager === 'npm' ? ['install', '--no-audit', '--no-fund'] : ['install'] }
}

/** How one install ended. */
export interface InstallOutcome {
  /** Relative directory, as in {@link installDirectories}. */
  directory: string
  ok: boolean
  /** For a failure: `npm exited with 1`, `pnpm was not found`, `npm was killed by SIGTERM`. */
  reason?: string
  /** The last lines the package manager printed (stdout and stderr interleaved). */
  output: string
}

const OUTPUT_TAIL_LINES = 30

/** Runs the install in `<project>/<directory>`; never throws for a failed install. */
export async function runInstall(project: string, directory: string, manager: PackageManager, signal?: AbortSignal): Promise<InstallOutcome> {
  const { file, args } = installCommand(manager)
  // Loaded when an install runs: not by every command that imports the project library (issue 20).
  const { execa } = await import('execa')
  const result = await execa(file, args, {
    cwd: join(project, ...directory.split('/').filter(Boolean)),
    all: true,
    reject: false,
    stdin: 'ignore',
    ...(signal ? { cancelSignal: signal, forceKillAfterDelay: 2000 } : {}),
  })
  const output = (result.all ?? '').split(/\r?\n/).slice(-OUTPUT_TAIL_LINES).join('\n')
  if (!result.failed) return { directory, ok: true, output }
  let reason: string
  if ((result as { code?: string }).code === 'ENOENT') reason = `${manager} was not found`
  else if (result.signal) reason = `${manager} was killed by ${result.signal}`
  else if (result.exitCode !== undefined) reason = `${manager} exited with ${result.exitCode}`
  else reason = `${manager} could not be run: ${result.shortMessage}`
  return { directory, ok: false, reason, output }
}

/**
 * The failure of cli.md §4.1: `Project created, but installing dependencies failed in
 * workers/caller-worker (npm exited with 1). Run npm install there.` (`INSTALL_FAILED`, exit 1),
 * with the package manager's last lines as details. `shownRoot` names the project directory when
 * the package.json is at its root.
 */
export function installFailedError(outcome: InstallOutcome, manager: PackageManager, what: 'Project' | 'Worker', shownRoot: string): CliError {
  const where = outcome.directory === '' ? shownRoot : outcome.directory
  return new CliError({
    code: 'INSTALL_FAILED',
    message: `${what} created, but installing dependencies failed in ${where} (${outcome.reason}). Run ${manager} install there.`,
    exitCode: ExitCode.Failure,
    details: outcome.output.trim() === '' ? undefined : indent(outcome.output.trim()),
  })
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n')
}

/**
 * Records an install `svc project init` ran as the supervisor records its own (cli.md §5.3: install
 * command and dependency-manifest hash in `.svc/state/workers/<name>.json`), for every local worker
 * of the new project's config.yaml whose directory is `directory` and whose install command is this
 * package manager's install: the first `svc` then starts the worker without installing it again.
 * Anything unreadable records nothing (the first start installs, as before).
 * @param directory relative to `project`, as in {@link installDirectories} (`''` for the root).
 */
export async function recordInstall(project: string, directory: string, manager: PackageManager): Promise<void> {
  const configFile = join(project, 'config.yaml')
  if (!existsSync(configFile)) return
  let workers
  try {
    workers = loadConfig(configFile, { cwd: project }).local_workers
  } catch {
    return
  }
  for (const worker of workers) {
    if (relative(project, worker.worker_path).split(sep).join('/') !== directory) continue
    let install: string | undefined
    try {
      install = loadManifest(worker.worker_path).scripts.install
    } catch {
      continue
    }
    if (install === undefined || !(install === `${manager} install` || install.startsWith(`${manager} install `))) continue
    const now = new Date().toISOString()
    await new StateFile(stateFilePath(project, worker.name)).write({
      name: worker.name,
      namespace: worker.namespace ?? 'default',
      directory: worker.worker_path,
      state: 'stopped',
      pid: null,
      supervisor_pid: process.pid,
      started_at: null,
      restarts: 0,
      last_error: null,
      last_error_code: null,
      updated_at: now,
      install_command: install,
      install_hash: dependencyHash(worker.worker_path),
      installed_at: now,
    })
  }
}


/**
 * Warms Node's compile cache for the TypeScript workers a new project's install in `directory`
 * made runnable (issue 20: their first `svc` start then loads no type stripper; see
 * `src/supervisor/prime.ts`), through the same function the supervisor calls before each start,
 * with the environment a worker gets for it: svc's own (`NODE_COMPILE_CACHE` from bin/run.js),
 * svc's Node first on PATH, the manifest's and the config.yaml entry's `env`. Anything unreadable
 * primes nothing (the first start strips the types itself, as before).
 * @param directory relative to `project`, as in {@link installDirectories} (`''` for the root)
 * @returns each primed worker's outcome, by worker name
 */
export async function primeInstalled(project: string, directory: string): Promise<Record<string, PrimeOutcome>> {
  const configFile = join(project, 'config.yaml')
  const outcomes: Record<string, PrimeOutcome> = {}
  if (!existsSync(configFile)) return outcomes
  let workers
  try {
    workers = loadConfig(configFile, { cwd: project }).local_workers
  } catch {
    return outcomes
  }
  for (const worker of workers) {
    if (relative(project, worker.worker_path).split(sep).join('/') !== directory) continue
    let manifest
    try {
      manifest = loadManifest(worker.worker_path)
    } catch {
      continue
    }
    const start = manifest.scripts.start
    if (start === undefined) continue
    const env: Record<string, string> = {}
    for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value
    Object.assign(env, manifest.env, worker.env)
    env.PATH = [dirname(process.execPath), ...(env.PATH ? [env.PATH] : [])].join(delimiter)
    outcomes[worker.name] = await primeCompileCache(start, { cwd: worker.worker_path, env })
  }
  return outcomes
}
